// The sweep's plan: its options, which iteration directories this shard takes (its
// positions in the iteration plan, iteration_plan.hpp), and per iteration and rank what
// is stale (to compact, to merge) and what is up to date (skipped, its row filled from the
// record kept with its output). The plan's tasks then carry what the graph's stages
// (sweep_graph.hpp) leave for the next one.
#pragma once

#include <atomic>
#include <boost/filesystem.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discovery.hpp"
#include "report/report.hpp"
#include "trace_job.hpp"
#include "tracelane/compact.hpp"
#include "tracelane/rules.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

namespace fs = boost::filesystem;

// "--shard K/N": a deterministic 1/N of the iteration directories, by position in the
// sorted relative paths (position % N == K; Shard, iteration_plan.hpp).
// N is at most kMaxShards (report.hpp): real job arrays have tens to thousands of tasks
// (Slurm's MaxArraySize defaults to 1001 and cannot exceed 4000001), and `report --combine`
// must account for every shard, so a typo such as 0/100000000 is refused here instead of
// turning the combine step into a list of a hundred million missing shards.
std::optional<Shard> parse_shard(std::string_view text);
inline bool shard_takes(const Shard& shard, size_t position) {
  return position % size_t(shard.count) == size_t(shard.index);
}

struct SweepOptions {
  fs::path root;
  fs::path report_dir;
  uint64_t memory_budget = 0;
  int jobs = 1;
  bool overwrite = false, dry_run = false, quiet = false;
  std::optional<Rules> rules;  // --rules FILE, loaded before any trace is read
  // What every rank job shares: the rules (pointing at `rules`), their text, --force,
  // --no-restore-data, --level. No timings: jobs run concurrently.
  JobOptions job;
  std::optional<Shard> shard;
  // --plan FILE: the iteration list to split, read from the file (checked: its root is
  // this ROOT); else the list discovery finds.
  std::optional<IterationPlan> plan;
  fs::path write_plan;            // --write-plan FILE: write the plan of ROOT and stop
  bool remove_originals = false;  // --remove-originals (remove_originals.hpp)
};

struct IterationTask;

// One rank file: its plan, then what the graph stages leave for the next one.
struct RankTask {
  IterationTask* iteration = nullptr;
  const RankFile* file = nullptr;
  fs::path output;
  bool process = false;       // read and compact (its output is stale, or a merge needs it)
  bool write_output = false;  // its own output is stale
  bool for_merge = false;     // keep the compacted trace for the iteration's merge
  Row row{RowKind::file};

  std::chrono::steady_clock::time_point started;
  uint64_t estimate = 0;  // uncompressed bytes admitted; raised when the read finds more
  bool requeued = false;  // the read found more than admitted: back to the budget
  int requeues = 0;
  FileIdentity read_identity;  // the file as read (recorded with the outputs made from it)
  // Held apart, only while the task is in flight: a plan of a million rank files holds a
  // pointer each, not a parsed and a compacted trace's worth of empty slots (840 bytes).
  std::unique_ptr<Trace> trace;
  std::unique_ptr<CompactedTrace> compacted;
  bool failed = false;
  bool already_laned = false;  // SPEC 9.8: left as it is, not a failure
};

struct IterationTask {
  const IterationDir* dir = nullptr;
  size_t index = 0;
  std::vector<size_t> ranks;  // indices into the rank tasks
  bool merge = false;         // the merged output is stale: merge after the ranks
  bool has_merge_row = false;
  fs::path merged_output;
  Row merge_row{RowKind::merge};
  std::atomic<size_t> ranks_done{0};
};

// Prints progress on stderr: a redrawn bar on a terminal, a plain line now and then

struct SweepPlan {
  std::vector<std::unique_ptr<RankTask>> ranks;
  std::vector<std::unique_ptr<IterationTask>> iterations;
  IterationPlan recorded;  // what the report records: the plan, and the iterations this shard took
  // With --plan: an iteration of this shard's positions that discovery did not find
  // (failed), and, from shard 0 only (they belong to the whole tree), each iteration
  // directory discovery found that the plan does not hold (a warning: not swept).
  std::vector<DiscoveryProblem> plan_problems;
};

// The iteration plan of what discovery found: every iteration directory, in its order.
IterationPlan discovered_plan(const Discovery& discovery);

// Takes this shard's positions of the plan (--plan's, else discovered_plan()) and decides,
// per iteration and rank, what is stale; fills the rows of what is up to date. Iterations
// are matched by name only: the plan never leads the sweep anywhere discovery did not walk.
SweepPlan plan_sweep(const SweepOptions& options, const Discovery& discovery);

// --dry-run: what the sweep would do, a line each.
std::string plan_listing(const SweepPlan& plan);

// Every rank row and merge row of the plan, sorted, moved out of the tasks (which are done
// with them: the report holds each row once).
std::vector<Row> take_plan_rows(SweepPlan& plan);

// A killed sweep leaves its temporary files (".<output>.tmp.<pid>.<n>", never the
// output's own name) behind; removes those of our outputs in the directories this run
// owns when their writer is no longer running on this host.
void remove_stale_temporaries(const SweepPlan& plan);

// The rank file's name: the file's own, or for a copy standing in for a gone original
// (RankFile::from_copy), the original's.
std::string original_name(const RankFile& file);

// An output is up to date when it is a regular file of ours whose inputs record names
// exactly `inputs` as they are now, made with `recipe`.
bool up_to_date(const fs::path& output, const std::vector<const RankFile*>& inputs, std::string_view recipe);

}  // namespace tracelane::cli
