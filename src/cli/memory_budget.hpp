// The sweep's memory budget: sizes ("4G"), the machine's or job's memory, the default
// budget and thread count, the cost model of a rank, and Admission, which starts rank
// jobs in order while their estimated cost fits the budget.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tracelane::cli {

// "512M", "4G", "1.5GiB", "1073741824": bytes (K, M, G, T are powers of 1024). Empty when
// malformed or zero.
std::optional<uint64_t> parse_byte_size(std::string_view text);
// Half of the machine's memory, or of the cgroup (Slurm job) limit when that is smaller.
uint64_t default_memory_budget();
// The machine's memory, or the cgroup's (Slurm's) limit when lower.
uint64_t memory_limit();
// SLURM_CPUS_PER_TASK when set, else the cores this process may run on.
int default_jobs();
// The threads of a task arena for `--jobs` (or default_jobs()): at least 1, at most the
// cores this process may run on. oneTBB gives no arena more than that anyway, and says so
// on stderr (under --quiet too) when asked for more.
int arena_threads(int jobs);

// Cost model of one rank, in multiples of its uncompressed size: while a rank is read,
// parsed, compacted and written it holds kTransientFactor + kRetainedFactor; what merge
// needs afterwards (the parsed bytes and events) is kRetainedFactor, and the merged text
// kMergeFactor. An upper bound: the peak RSS of `compact` measured at 500 MB is 2.46x the
// JSON (bench/README.md), and the margin covers estimates made before reading (a gzip
// trailer's ISIZE) that turn out low.
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

}  // namespace tracelane::cli
