// `tracelane sweep ROOT`: every iteration directory of an outputs tree, compacted and
// merged in one task graph under a memory budget. The pieces, each in a file of its own:
//
//   discovery.hpp      the walk of ROOT: iteration directories, rank files, problems
//   memory_budget.hpp  sizes, memory limits, the cost model and Admission (src/cli/)
//   sweep_plan.hpp     options, shards, staleness: what to compact, merge or skip
//   sweep_graph.hpp    the tbb::flow::graph that does the work (trace_job.hpp's steps)
//   progress.hpp       the progress line on stderr
//   tree_lock.hpp      one sweep at a time per tree (src/cli/: every command takes
//                      its directory's lock)
//   sweep_command.cpp  the command (run_sweep, commands.hpp): options, the run, the report
//
// This header includes those that tests call (discovery, shards, sizes, admission), and
// declares the sweep as functions (configure_sweep, sweep_tree) for the command and for
// the Python module (src/python/module.cpp).
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "discovery.hpp"
#include "memory_budget.hpp"
#include "remove_originals.hpp"
#include "report/report.hpp"
#include "sweep_plan.hpp"

namespace tracelane::cli {

// The sweep's command line as given, text and flags, before configure_sweep() checks it.
struct SweepArguments {
  std::string root, report_dir, memory, shard, plan;
  std::optional<int> jobs;  // --jobs, when given
  bool force = false;
  SharedOptions shared;  // --rules, --level, --no-restore-data, --single-gzip-member
};

// Checks `arguments` and completes `options`, whose flags (--overwrite, --dry-run, --quiet,
// --remove-originals, --write-plan) are set already. What the command line refuses before
// any work (exit 2) is thrown: UsageError ("--jobs must be at least 1", the message the
// command prints after "tracelane sweep: "), or BadRules.
void configure_sweep(SweepArguments arguments, SweepOptions& options);

// Another sweep holds the tree's lock, or the lock cannot be taken (exit 2).
class TreeBusy : public UsageError {
 public:
  using UsageError::UsageError;
};

// What one sweep did.
struct SweepOutcome {
  Report report;             // its rows, as written
  fs::path written;          // tracelane_report.json, or empty when the report could not be written
  std::string report_error;  // why not (exit 1)
  std::exception_ptr report_failure;
  std::vector<OriginalVerdict> removals;  // --remove-originals
  std::string dry_run_listing;            // --dry-run: what would be done (nothing else is)
};

// The sweep of options.root (not --write-plan): lock, discover, plan, the graph's work,
// the originals removed, the report written. Discovery's problems and a lock taken only
// in part are warned of on stderr, as the progress is (not with --quiet); the summary is
// the caller's to print. Throws TreeBusy. `stop_gracefully`: the command line's signal
// handling (stop_gracefully_on_signals, files.hpp), not for a caller that has its own.
SweepOutcome sweep_tree(SweepOptions& options, bool stop_gracefully);

}  // namespace tracelane::cli
