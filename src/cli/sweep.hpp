// `tracelane sweep ROOT`: every iteration directory of an outputs tree, compacted and
// merged in one task graph under a memory budget. This header shows the pieces that are
// plain logic (discovery, shard selection, sizes, admission under the budget) so that
// tests can call them; the graph itself is in sweep.cpp.
#pragma once

#include <boost/filesystem.hpp>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "files.hpp"
#include "report.hpp"

namespace tracelane::cli {

namespace fs = boost::filesystem;

struct RankFile {
  fs::path path;
  long long rank = 0;
  uint64_t bytes_on_disk = 0;
  uint64_t bytes_uncompressed = 0;  // estimate: the gzip trailer's ISIZE, else bytes_on_disk
  FileIdentity identity;            // as discovery saw it (stat through the name)
  bool through_link = false;        // the name is a symlink (of ours) to the file
};

// A directory holding one or more rank<N>_trace.json[.gz] files.
struct IterationDir {
  fs::path dir;
  std::string rel;  // relative to ROOT, '/'-separated; "." for ROOT itself
  std::string run;  // the component before profile_trace, else the grandparent (see run_of)
  std::string iteration;  // the directory's name
  std::vector<RankFile> ranks;  // sorted by rank number, then name
};

// Something discovery could not look into. `failure`: it may hide inputs (an unreadable
// directory), so the sweep exits 1; otherwise a warning (a symlink loop).
struct DiscoveryProblem {
  std::string rel;
  std::string reason;
  bool failure = false;
};

struct Discovery {
  std::vector<IterationDir> iterations;  // sorted by rel (byte order)
  std::vector<DiscoveryProblem> problems;
};

// A rank trace we read: rank<N>_trace.json[.gz], never one of our own outputs.
bool is_sweep_input_name(const std::string& filename, long long* rank = nullptr);

// Walks ROOT depth first through directory descriptors (openat: no PATH_MAX limit),
// following directory symlinks once (a directory reached twice, by a loop or by a second
// link, is reported and not entered again). Every directory it cannot enter or list and
// every entry it cannot examine is a problem; a rank name that is not a regular file is a
// warning.
Discovery discover(const fs::path& root);

// "run" and "iteration" of an iteration directory given its '/'-separated path relative
// to ROOT: run is the component before "profile_trace" (ROOT's own name when
// profile_trace is the first component), else the grandparent's path relative to ROOT
// ("." when that is ROOT or above it).
std::string run_of(const std::string& rel, const std::string& root_name);

// Uncompressed size estimate: ISIZE (size mod 2^32) of the last gzip member, lifted by
// multiples of 4 GiB to at least the compressed size; the file size for plain JSON.
// Only an estimate: the sweep checks it when it reads the file (read_trace_bytes's
// max_bytes) and requeues a file that is larger with a better one.
uint64_t estimate_uncompressed_bytes(const fs::path& path, uint64_t bytes_on_disk);
uint64_t estimate_uncompressed_bytes(int fd, uint64_t bytes_on_disk);

// "--shard K/N": a deterministic 1/N of the iteration directories, by position in the
// sorted relative paths (position % N == K).
struct Shard {
  int index = 0;
  int count = 1;
};
// N is at most kMaxShards (report.hpp): real job arrays have tens to thousands of tasks
// (Slurm's MaxArraySize defaults to 1001 and cannot exceed 4000001), and `report --combine`
// must account for every shard, so a typo such as 0/100000000 is refused here instead of
// turning the combine step into a list of a hundred million missing shards.
std::optional<Shard> parse_shard(std::string_view text);
inline bool shard_takes(const Shard& shard, size_t position) {
  return position % size_t(shard.count) == size_t(shard.index);
}

// "512M", "4G", "1.5GiB", "1073741824": bytes (K, M, G, T are powers of 1024). Empty when
// malformed or zero.
std::optional<uint64_t> parse_byte_size(std::string_view text);
// Half of the machine's memory, or of the cgroup (Slurm job) limit when that is smaller.
uint64_t default_memory_budget();
// The machine's memory, or the cgroup's (Slurm's) limit when lower.
uint64_t memory_limit();
// SLURM_CPUS_PER_TASK when set, else the cores this process may run on.
int default_jobs();

// Cost model of one rank, in multiples of its uncompressed size, measured on the corpus
// (peak RSS of `compact` is ~5.4x the JSON size): while a rank is read, parsed, compacted
// and written it holds kTransientFactor + kRetainedFactor; what merge needs afterwards
// (the parsed bytes and events) is kRetainedFactor, and the merged text kMergeFactor.
inline constexpr uint64_t kTransientFactor = 3, kRetainedFactor = 3, kMergeFactor = 2;

// Admission of rank jobs in queue order under a byte budget. A job costs `transient` while
// it runs; the jobs of one merge group (an iteration to merge) also share `group_reserve`,
// held from the first job's start until finish_group (after the merge). The head of the
// queue starts when it fits, or when nothing is running and no merge is in progress: so a
// job larger than the budget runs alone, and a group whose reserve fills the budget still
// makes progress one job at a time instead of deadlocking.
//
// Costs are estimates made before reading (the gzip trailer's ISIZE is only the last
// member's size). The reader holds a job to what it was admitted for and stops beyond it;
// the job then goes back to the head of the queue with its larger cost (requeue), so the
// budget bounds what is really held, not what was guessed. Each requeue at least doubles
// the estimate, so a file is read at most log2(true size / first estimate) + 1 times and
// the wasted decompression is less than the final one.
class Admission {
 public:
  struct Job {
    size_t id = 0;
    size_t group = SIZE_MAX;  // SIZE_MAX: not part of a merge group
    uint64_t transient = 0;
    uint64_t group_reserve = 0;  // same value for every job of a group
  };

  explicit Admission(uint64_t budget) : budget_(budget) {}
  void enqueue(const Job& job);
  // Starts what may start now; returns their ids in queue order.
  std::vector<size_t> admit();
  // A job is done; when it was its group's last, the group counts as merging.
  void finish_job(size_t id);
  // The group's merge is done (or will not happen): its reserve is released.
  void finish_group(size_t group);
  // A running job found it needs more: it releases what it holds and waits at the head of
  // the queue with the new costs (its group's reserve only ever grows).
  void requeue(size_t id, uint64_t transient, uint64_t group_reserve);

  uint64_t in_flight() const { return in_flight_; }
  size_t running() const { return running_; }
  bool idle() const { return queue_.empty() && running_ == 0 && merging_ == 0; }

 private:
  struct Group {
    size_t jobs = 0, finished = 0;
    uint64_t reserve = 0;  // what the group needs
    uint64_t held = 0;     // what it holds of the budget (its reserve as of its last start)
  };
  // A started job leaves the running set, its transient cost back in the budget.
  std::optional<Job> stop(size_t id);
  uint64_t budget_;
  uint64_t in_flight_ = 0;
  size_t running_ = 0, merging_ = 0;
  std::deque<Job> queue_;
  std::unordered_map<size_t, Job> started_;
  std::unordered_map<size_t, Group> groups_;
};

// The `sweep` command: options, then the graph. Returns the exit status.
int run_sweep(int argc, char** argv);

}  // namespace tracelane::cli
