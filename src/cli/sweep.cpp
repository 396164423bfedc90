// The sweep graph.
//
// Discovery walks ROOT once, sequentially (sharding needs the whole sorted list before any
// work starts, and a walk costs nothing next to parsing), and plans every iteration
// directory: which rank outputs are stale, which merges are stale. The work is then one
// tbb::flow::graph:
//
//   admit -> load+parse -> compact -> write rank output -> collect -+-> admit (budget back)
//     ^                                                             |
//     +--------------------- merge + write merged output <----------+
//
// `admit` is a serial node owning the memory budget (Admission): it starts rank jobs in
// sorted order while their estimated cost fits, and every finished job or merge sends the
// bytes back to it. Independent files run concurrently on up to --jobs threads (the task
// arena's size). A rank of an iteration that will be merged is compacted without
// single-trace PP arrows (the merged file carries the PP arrows), its own output written
// first, and the compacted trace is kept for the merge, so each rank file is read and
// parsed exactly once. The last rank of an iteration to finish hands the iteration to
// `merge`; an iteration with a failed rank is not merged and its merge row says why.
//
// Every output goes to a temporary name and is renamed into place, so a killed sweep
// leaves no partial file and a rerun redoes only what is missing or stale.
#include "sweep.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/task_arena.h>
#include <set>
#include <thread>

#include "files.hpp"
#include "printable.hpp"
#include "remove_originals.hpp"  // --remove-originals
#include "tree_lock.hpp"
#include "report.hpp"
#include "tracelane/compact.hpp"
#include "tracelane/merge.hpp"
#include "tracelane/rules.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

// ---------------------------------------------------------------------------------------
// Discovery

bool is_sweep_input_name(const std::string& filename, long long* rank) {
  return !is_our_output_name(filename) && is_rank_trace_name(filename, rank);
}

std::string run_of(const std::string& rel, const std::string& root_name) {
  std::vector<std::string> parts;
  if (rel != ".") {
    size_t start = 0;
    for (;;) {
      size_t slash = rel.find('/', start);
      parts.push_back(rel.substr(start, slash - start));
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
  }
  for (size_t i = 0; i < parts.size(); ++i)
    if (parts[i] == "profile_trace") return i == 0 ? root_name : parts[i - 1];
  if (parts.size() < 3) return ".";
  std::string out = parts[0];
  for (size_t i = 1; i + 2 < parts.size(); ++i) out += "/" + parts[i];
  return out;
}

uint64_t estimate_uncompressed_bytes(int fd, uint64_t bytes_on_disk) {
  unsigned char magic[2] = {0, 0}, trailer[4] = {0, 0, 0, 0};
  bool gzip = bytes_on_disk >= 18 && ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b &&
              ::pread(fd, trailer, 4, off_t(bytes_on_disk - 4)) == 4;
  if (!gzip) return bytes_on_disk;
  uint64_t isize = uint64_t(trailer[0]) | uint64_t(trailer[1]) << 8 | uint64_t(trailer[2]) << 16 |
                   uint64_t(trailer[3]) << 24;
  // ISIZE is the size mod 2^32: JSON never compresses to more than it was, so lift it.
  while (isize < bytes_on_disk) isize += uint64_t(1) << 32;
  // Deflate cannot compress beyond ~1032:1, so a larger ISIZE is not a trailer (a
  // truncated file): assume a typical trace's ratio instead.
  if (isize / 1032 > bytes_on_disk + 1024) return bytes_on_disk * 8;
  return isize;
}

uint64_t estimate_uncompressed_bytes(const fs::path& path, uint64_t bytes_on_disk) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return bytes_on_disk;
  uint64_t estimate = estimate_uncompressed_bytes(fd, bytes_on_disk);
  ::close(fd);
  return estimate;
}

namespace {

// The walk holds one open directory per level (openat relative to its parent), so a path
// longer than PATH_MAX is no limit to it; only the number of open files is, and the soft
// limit is raised to the hard one for that. Whatever cannot be entered or examined is a
// problem row: nothing is left out silently.
struct Walker {
  Discovery& out;
  std::string root_name;
  std::map<std::pair<dev_t, ino_t>, std::string> visited;  // directory -> rel of first visit

  static std::string join(const std::string& rel, const std::string& name) {
    return rel == "." ? name : rel + "/" + name;
  }

  void problem(const std::string& rel, const std::string& reason, bool failure) {
    out.problems.push_back({rel, reason, failure});
  }

  // `fd` is the directory `dir` (ROOT/rel), open; the caller closes it.
  void walk(int fd, const fs::path& dir, const std::string& rel, std::vector<std::pair<dev_t, ino_t>>& ancestors) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      problem(rel, std::string("cannot read directory: ") + std::strerror(errno), true);
      return;
    }
    std::pair<dev_t, ino_t> key{st.st_dev, st.st_ino};
    if (auto seen = visited.find(key); seen != visited.end()) {
      bool loop = std::find(ancestors.begin(), ancestors.end(), key) != ancestors.end();
      problem(rel,
              (loop ? "symlink loop: leads back to " : "reached twice: same directory as ") + seen->second +
                  " (not entered again)",
              false);
      return;
    }
    visited.emplace(key, rel);

    std::vector<std::string> names;
    {
      // fdopendir owns the descriptor it is given: list through a second one.
      int list_fd = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      DIR* listing = list_fd >= 0 ? ::fdopendir(list_fd) : nullptr;
      if (!listing) {
        int e = errno;
        if (list_fd >= 0) ::close(list_fd);
        problem(rel, std::string("cannot list directory: ") + std::strerror(e), true);
        return;
      }
      errno = 0;
      while (struct dirent* entry = ::readdir(listing)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..") names.push_back(std::move(name));
        errno = 0;
      }
      int e = errno;
      ::closedir(listing);
      if (e != 0) {
        problem(rel, std::string("cannot list directory: ") + std::strerror(e), true);
        return;
      }
    }
    std::sort(names.begin(), names.end());

    IterationDir iteration;
    std::vector<std::string> subdirs;
    for (const std::string& name : names) {
      struct stat entry {};
      if (::fstatat(fd, name.c_str(), &entry, 0) != 0) {  // follows links, as entering does
        int e = errno;
        struct stat link {};
        if (e == ELOOP)
          problem(join(rel, name), "symlink loop (not followed)", false);
        else if (e != ENOENT)
          problem(join(rel, name), std::string("cannot examine: ") + std::strerror(e), true);
        else if (is_sweep_input_name(name, nullptr) && ::fstatat(fd, name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0)
          // A rank that names no file: said, so a merge with one rank fewer is never a surprise.
          problem(join(rel, name), "dangling symlink (not read as a rank)", false);
        continue;  // else gone since the listing
      }
      if (S_ISDIR(entry.st_mode)) {
        if (is_sweep_input_name(name, nullptr))
          problem(join(rel, name), "is a directory, not a trace file (not read as a rank)", false);
        subdirs.push_back(name);
        continue;
      }
      long long rank = 0;
      struct stat link {};
      bool through_link = !S_ISDIR(entry.st_mode) && ::fstatat(fd, name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 &&
                          S_ISLNK(link.st_mode);
      if (through_link && is_sweep_input_name(name, nullptr) && link.st_uid != ::geteuid()) {
        // Another user's link could make us read (with our rights) a file they cannot, and
        // write its compacted copy where they can read it.
        problem(join(rel, name), "symlink owned by another user (not followed)", false);
        continue;
      }
      if (!is_sweep_input_name(name, &rank)) {
        // Named like a rank file, but its number does not fit: said, never silently left out.
        if (is_sweep_input_name(name, nullptr))
          problem(join(rel, name), "rank number too large (not read as a rank)", false);
        continue;
      }
      if (!S_ISREG(entry.st_mode)) {
        problem(join(rel, name), "not a regular file (not read as a rank)", false);
        continue;
      }
      uint64_t size = uint64_t(entry.st_size);
      uint64_t estimate = size;
      // O_NONBLOCK: it was a regular file a moment ago, but a FIFO swapped in must not hang us.
      int file_fd = ::openat(fd, name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (file_fd >= 0) {
        struct stat opened {};
        if (::fstat(file_fd, &opened) == 0 && S_ISREG(opened.st_mode))
          estimate = estimate_uncompressed_bytes(file_fd, size);
        ::close(file_fd);
      }
      RankFile file{dir / name, rank, size, estimate};
      file.identity = identity_of(entry);
      file.through_link = through_link;
      iteration.ranks.push_back(std::move(file));
    }
    if (!iteration.ranks.empty()) {
      std::stable_sort(iteration.ranks.begin(), iteration.ranks.end(),
                       [](const RankFile& a, const RankFile& b) { return a.rank < b.rank; });
      iteration.dir = dir;
      iteration.rel = rel;
      iteration.run = run_of(rel, root_name);
      iteration.iteration = rel == "." ? root_name : dir.filename().string();
      out.iterations.push_back(std::move(iteration));
    }
    ancestors.push_back(key);
    for (const std::string& name : subdirs) {
      // Follows a directory symlink (once: `visited`). O_NONBLOCK is harmless on a directory
      // and keeps a FIFO swapped in since fstatat from blocking the open.
      int child = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
      if (child < 0) {
        int e = errno;
        if (e != ENOENT) problem(join(rel, name), std::string("cannot read directory: ") + std::strerror(e), true);
        continue;
      }
      walk(child, dir / name, join(rel, name), ancestors);
      ::close(child);
    }
    ancestors.pop_back();
  }
};

// One open directory per level of depth: let the walk use as many as the hard limit allows.
void raise_open_files_limit() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace

Discovery discover(const fs::path& root) {
  Discovery out;
  boost::system::error_code ec;
  fs::path absolute = fs::absolute(root, ec);
  std::string root_name = absolute.filename().string();
  if (root_name == "." || root_name.empty()) root_name = absolute.parent_path().filename().string();
  raise_open_files_limit();
  Walker walker{out, root_name, {}};
  std::vector<std::pair<dev_t, ino_t>> ancestors;
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    walker.problem(".", std::string("cannot read directory: ") + std::strerror(errno), true);
  } else {
    walker.walk(fd, root, ".", ancestors);
    ::close(fd);
  }
  std::sort(out.iterations.begin(), out.iterations.end(),
            [](const IterationDir& a, const IterationDir& b) { return a.rel < b.rel; });
  return out;
}

// ---------------------------------------------------------------------------------------
// Options

std::optional<Shard> parse_shard(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size()) return std::nullopt;
  auto number = [](std::string_view digits, long& value) {
    if (digits.empty() || digits.size() > 9) return false;
    value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    return true;
  };
  long index = 0, count = 0;
  if (!number(text.substr(0, slash), index) || !number(text.substr(slash + 1), count)) return std::nullopt;
  if (count < 1 || count > kMaxShards || index >= count) return std::nullopt;
  return Shard{int(index), int(count)};
}

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  size_t i = 0;
  bool digits = false, dot = false;
  for (; i < text.size(); ++i) {
    if (text[i] >= '0' && text[i] <= '9')
      digits = true;
    else if (text[i] == '.' && !dot)
      dot = true;
    else
      break;
  }
  if (!digits) return std::nullopt;
  std::string number(text.substr(0, i));
  std::string suffix;
  for (char c : text.substr(i)) suffix += char(std::toupper(static_cast<unsigned char>(c)));
  if (!suffix.empty() && suffix.back() == 'B') suffix.pop_back();  // "GB", "GiB", "B"
  if (suffix.size() == 2 && suffix[1] == 'I') suffix.pop_back();   // "GI"
  double scale = 1;
  if (suffix == "K")
    scale = 1024.0;
  else if (suffix == "M")
    scale = 1024.0 * 1024;
  else if (suffix == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!suffix.empty())
    return std::nullopt;
  double value = std::strtod(number.c_str(), nullptr) * scale;
  if (!(value >= 1) || value > 1.8e19) return std::nullopt;
  return uint64_t(value);
}

uint64_t memory_limit() {
  uint64_t memory = uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGE_SIZE));
  // Slurm confines a job with a cgroup; its limit, when set, is what the job may use.
  for (const char* file : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(file);
    std::string text;
    if (in >> text) {
      if (auto limit = parse_byte_size(text); limit && *limit < memory) memory = *limit;
    }
  }
  return memory;
}

uint64_t default_memory_budget() { return std::max<uint64_t>(memory_limit() / 2, 64ull << 20); }

int default_jobs() {
  if (const char* slurm = std::getenv("SLURM_CPUS_PER_TASK")) {
    int value = std::atoi(slurm);
    if (value > 0) return value;
  }
  return std::max(1, tbb::info::default_concurrency());
}

// ---------------------------------------------------------------------------------------
// Admission under the memory budget

void Admission::enqueue(const Job& job) {
  queue_.push_back(job);
  if (job.group != SIZE_MAX) {
    Group& group = groups_[job.group];
    group.jobs++;
    group.reserve = job.group_reserve;
  }
}

std::vector<size_t> Admission::admit() {
  std::vector<size_t> started;
  while (!queue_.empty()) {
    const Job& job = queue_.front();
    Group* group = job.group == SIZE_MAX ? nullptr : &groups_[job.group];
    uint64_t need = job.transient + (group ? group->reserve - group->held : 0);
    bool fits = in_flight_ + need <= budget_;
    // Nothing running and no merge to wait for: waiting would never end.
    bool alone = running_ == 0 && merging_ == 0;
    if (!fits && !alone) break;
    in_flight_ += need;
    if (group) group->held = group->reserve;
    running_++;
    started_.emplace(job.id, job);
    started.push_back(job.id);
    queue_.pop_front();
  }
  return started;
}

std::optional<Admission::Job> Admission::stop(size_t id) {
  auto it = started_.find(id);
  if (it == started_.end()) return std::nullopt;
  Job job = it->second;
  started_.erase(it);
  in_flight_ -= job.transient;
  running_--;
  return job;
}

void Admission::finish_job(size_t id) {
  std::optional<Job> stopped = stop(id);
  if (!stopped) return;
  const Job& job = *stopped;
  if (job.group != SIZE_MAX) {
    Group& group = groups_[job.group];
    if (++group.finished == group.jobs) merging_++;
  }
}

void Admission::finish_group(size_t id) {
  auto it = groups_.find(id);
  if (it == groups_.end()) return;
  in_flight_ -= it->second.held;
  if (it->second.finished == it->second.jobs) merging_--;
  groups_.erase(it);
}

void Admission::requeue(size_t id, uint64_t transient, uint64_t group_reserve) {
  std::optional<Job> stopped = stop(id);
  if (!stopped) return;
  Job job = *stopped;
  job.transient = transient;
  if (job.group != SIZE_MAX) {
    Group& group = groups_[job.group];
    group.reserve = std::max(group.reserve, group_reserve);
    job.group_reserve = group.reserve;
  }
  queue_.push_front(job);  // it was started before anything still queued
}

// ---------------------------------------------------------------------------------------
// The sweep

namespace {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;
// Each requeue at least doubles a file's estimate; a file that outgrows this many is
// being written while we read it.
constexpr int kMaxRequeues = 16;

struct SweepOptions {
  fs::path root;
  fs::path report_dir;
  uint64_t memory_budget = 0;
  int jobs = 1;
  int level = 1;
  bool overwrite = false, dry_run = false, quiet = false;
  bool force = false;  // compact traces that are already laned (SPEC 9.8)
  bool restore_data = true;  // outputs carry what restores their originals (SPEC 9.12)
  std::optional<Rules> rules;  // --rules FILE, loaded before any trace is read
  std::string rules_text;      // its text, for the outputs' recipe
  std::optional<Shard> shard;
  bool remove_originals = false;  // --remove-originals (remove_originals.hpp)
};

// An output is up to date when it is a regular file (not a link someone planted) whose
// kInputsAttribute names exactly the inputs as they are now: same names, devices, inodes,
// sizes and mtimes. "Newer than every input" is not enough: a rank file renamed into
// place keeps its older mtime, and one replaced while it was read leaves an output newer
// than it yet made from the file before. With no record (a file system without user
// extended attributes, an output written by another tool) the output is redone: a
// redundant redo costs time, a kept stale output costs a wrong result for good.
std::vector<NamedIdentity> named(const std::vector<const RankFile*>& inputs) {
  std::vector<NamedIdentity> out;
  for (const RankFile* input : inputs) out.push_back({input->path.filename().string(), input->identity});
  return out;
}
bool up_to_date(const fs::path& output, const std::vector<const RankFile*>& inputs, std::string_view recipe) {
  struct stat st {};
  if (::lstat(output.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  auto recorded = read_attribute(output, kInputsAttribute);
  // Ours only: another user's file under an output's name, whatever its attributes say,
  // is never reported as our up-to-date result.
  if (st.st_uid != ::geteuid()) return false;
  return recorded && *recorded == inputs_record(named(inputs), st.st_dev, recipe);
}
int64_t size_of(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? int64_t(st.st_size) : 0;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

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
  uint64_t estimate = 0;        // uncompressed bytes admitted; raised when the read finds more
  bool requeued = false;        // the read found more than admitted: back to the budget
  int requeues = 0;
  FileIdentity read_identity;   // the file as read (recorded with the outputs made from it)
  std::optional<Trace> trace;
  std::optional<CompactedTrace> compacted;
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
// otherwise (Slurm logs), nothing with --quiet. Errors go through it so they do not
// interleave with the bar.
class Progress {
 public:
  Progress(bool quiet, size_t files_total, uint64_t bytes_total)
      : quiet_(quiet), tty_(::isatty(STDERR_FILENO)), files_total_(files_total), bytes_total_(bytes_total) {
    if (!quiet_ && files_total_ > 0) ticker_ = std::thread([this] { tick(); });
  }
  ~Progress() { stop(); }

  void file_done(uint64_t bytes, bool failed) {
    files_done_++;
    bytes_done_ += bytes;
    if (failed) failed_++;
  }
  void error(const std::string& message) {
    std::lock_guard lock(mutex_);
    if (tty_ && drawn_) std::fputs("\r\033[K", stderr);
    std::fprintf(stderr, "%s\n", printable(message).c_str());
    drawn_ = false;
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    wake_.notify_all();
    if (ticker_.joinable()) ticker_.join();
    if (!quiet_ && files_total_ > 0) {
      std::lock_guard lock(mutex_);
      draw(true);
    }
  }

 private:
  void tick() {
    auto period = tty_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(10000);
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, period, [this] { return stopping_; })) draw(false);
  }

  static std::string human(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (bytes >= 1024 && unit < 4) bytes /= 1024, unit++;
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, unit ? "%.1f %s" : "%.0f %s", bytes, units[unit]);
    return buffer;
  }

  void draw(bool final) {
    size_t files = files_done_;
    uint64_t bytes = bytes_done_;
    double elapsed = seconds_since(start_);
    std::string eta = "--:--";
    if (bytes > 0 && bytes_total_ > bytes) {
      long left = long(elapsed * double(bytes_total_ - bytes) / double(bytes));
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", left / 3600, left / 60 % 60, left % 60);
      eta = buffer;
    } else if (final || bytes >= bytes_total_) {
      eta = "0:00:00";
    }
    char line[256];
    std::snprintf(line, sizeof line, "%zu/%zu files, %s/%s, %zu failed, ETA %s", files, files_total_,
                  human(double(bytes)).c_str(), human(double(bytes_total_)).c_str(), size_t(failed_), eta.c_str());
    if (tty_) {
      int width = 30;
      int filled = bytes_total_ ? int(double(width) * double(bytes) / double(bytes_total_)) : width;
      filled = std::clamp(filled, 0, width);
      std::fprintf(stderr, "\r\033[K[%s%s] %s%s", std::string(size_t(filled), '#').c_str(),
                   std::string(size_t(width - filled), ' ').c_str(), line, final ? "\n" : "");
      drawn_ = !final;
    } else {
      std::fprintf(stderr, "tracelane sweep: %s (%.0f s)\n", line, elapsed);
    }
    std::fflush(stderr);
  }

  bool quiet_, tty_;
  size_t files_total_;
  uint64_t bytes_total_;
  std::atomic<size_t> files_done_{0}, failed_{0};
  std::atomic<uint64_t> bytes_done_{0};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false, drawn_ = false;
  std::thread ticker_;
};

void fill_summary(Row& row, const CompactSummary& summary) {
  row.set("measured_slices", int64_t(summary.measured_slices))
      .set("original_streams", int64_t(summary.original_streams))
      .set("compacted_lanes", int64_t(summary.compacted_lanes))
      .set("flows_mapped", int64_t(summary.gpu_flow_endpoints_mapped))
      .set("flows_unmapped", int64_t(summary.gpu_flow_endpoints_unmapped))
      .set("annotations_mapped", int64_t(summary.gpu_annotations_mapped))
      .set("annotations_coalesced", int64_t(summary.gpu_annotations_coalesced))
      .set("cuda_graph_launches", int64_t(summary.cuda_graph_launches));
  if (summary.compacted_lanes > 0)
    row.set("compaction_ratio", double(summary.original_streams) / double(summary.compacted_lanes));
}

std::string describe_exception() {
  try {
    throw;
  } catch (const Error& e) {
    return e.what();
  } catch (const std::bad_alloc&) {
    return "out of memory";
  } catch (const std::exception& e) {
    return e.what();
  }
}

class Sweep {
 public:
  Sweep(const SweepOptions& options, const Discovery& discovery) : options_(options), discovery_(discovery) {}

  // A killed sweep leaves its temporary files (".<output>.tmp.<pid>.<n>", never the
  // output's own name) behind; remove those of our outputs in the directories this run
  // owns when their writer is no longer running on this host. Only regular files that we
  // own are removed, by name relative to the directory we opened (unlinkat never follows a
  // link: a symlink swapped in is removed itself, never its target).
  void remove_stale_temporaries() const {
    for (const auto& iteration : iterations_) {
      std::set<std::string> outputs{kMergedName};
      for (size_t r : iteration->ranks) outputs.insert(ranks_[r]->output.filename().string());
      int fd = ::open(iteration->dir->dir.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) continue;  // its rank files cannot be read either: they get failed rows
      int list_fd = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      DIR* listing = list_fd >= 0 ? ::fdopendir(list_fd) : nullptr;
      if (!listing && list_fd >= 0) ::close(list_fd);
      std::vector<std::string> stale;
      while (listing) {
        struct dirent* entry = ::readdir(listing);
        if (!entry) break;
        std::string name = entry->d_name;
        size_t tmp = name.find(".tmp.");
        if (name.empty() || name[0] != '.' || tmp == std::string::npos) continue;
        if (!outputs.count(name.substr(1, tmp - 1))) continue;
        long pid = std::atol(name.c_str() + tmp + 5);
        if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) stale.push_back(name);
      }
      if (listing) ::closedir(listing);
      for (const std::string& name : stale) {
        struct stat st {};
        if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == ::geteuid())
          (void)::unlinkat(fd, name.c_str(), 0);
      }
      ::close(fd);
    }
  }

  // An up-to-date output's row: "skipped", with the numbers of the run that wrote it, from
  // the record stored with the output (write_atomically), when it has one that fits; and
  // its figures, stored beside that record, only when the record fitted.
  static void mark_skipped(Row& row, const fs::path& output) {
    int64_t bytes = size_of(output);
    row.set("status", std::string("skipped")).set("output_bytes", bytes);
    auto record = read_record(output);
    if (!record || !fill_from_record(row, *record, bytes)) return;
    if (auto figures = read_attribute(output, kFiguresAttribute, kFiguresRecordMax))
      fill_figures_from_record(row, *figures);
  }

  // Decides, per iteration and rank, what is stale; fills the rows of what is up to date.
  void plan() {
    for (size_t position = 0; position < discovery_.iterations.size(); ++position) {
      if (options_.shard && !shard_takes(*options_.shard, position)) continue;
      const IterationDir& dir = discovery_.iterations[position];
      auto iteration = std::make_unique<IterationTask>();
      iteration->dir = &dir;
      iteration->index = iterations_.size();
      std::vector<const RankFile*> inputs;
      for (const RankFile& file : dir.ranks) inputs.push_back(&file);
      if (dir.ranks.size() >= 2) {
        iteration->has_merge_row = true;
        iteration->merged_output = dir.dir / kMergedName;
        iteration->merge = options_.overwrite || !up_to_date(iteration->merged_output, inputs, recipe_);
        Row& row = iteration->merge_row;
        row.set("dir", dir.rel).set("run", dir.run).set("iteration", dir.iteration);
        row.set("ranks", int64_t(dir.ranks.size())).set("output", std::string(kMergedName));
        int64_t input_bytes = 0;
        for (const RankFile& file : dir.ranks) input_bytes += int64_t(file.bytes_on_disk);
        row.set("input_bytes", input_bytes);
        if (!iteration->merge) mark_skipped(row, iteration->merged_output);
        if (iteration->merge) {
          // The guard, before any rank is read for the merge (again before writing it).
          std::vector<fs::path> rank_paths;
          for (const RankFile& file : dir.ranks) rank_paths.push_back(file.path);
          try {
            guard_output(iteration->merged_output, rank_paths, true);
          } catch (const OutputRefused& e) {
            iteration->merge = false;
            row.set("status", std::string("failed")).set("error", std::string(e.what()));
          }
        }
      }
      for (const RankFile& file : dir.ranks) {
        auto task = std::make_unique<RankTask>();
        task->iteration = iteration.get();
        task->file = &file;
        task->output = default_compact_output(file.path);
        task->estimate = file.bytes_uncompressed;
        task->write_output = options_.overwrite || !up_to_date(task->output, {&file}, recipe_);
        task->for_merge = iteration->merge;
        task->process = task->write_output || task->for_merge;
        Row& row = task->row;
        row.set("dir", dir.rel).set("file", file.path.filename().string()).set("run", dir.run);
        row.set("iteration", dir.iteration).set("rank", int64_t(file.rank));
        row.set("input_bytes", int64_t(file.bytes_on_disk)).set("output", task->output.filename().string());
        if (!task->write_output) mark_skipped(row, task->output);
        iteration->ranks.push_back(ranks_.size());
        ranks_.push_back(std::move(task));
      }
      iterations_.push_back(std::move(iteration));
    }
  }

  void print_plan() const {
    // Names from the tree are bytes: printable() keeps invalid UTF-8 and terminal escapes
    // off the terminal.
    auto rel_file = [](const RankTask& task, const fs::path& path) {
      const std::string& rel = task.iteration->dir->rel;
      return printable((rel == "." ? "" : rel + "/") + path.filename().string());
    };
    for (const auto& iteration : iterations_) {
      for (size_t index : iteration->ranks) {
        const RankTask& task = *ranks_[index];
        if (task.write_output)
          std::cout << "compact " << rel_file(task, task.file->path) << " -> " << printable(task.output.filename().string())
                    << "\n";
        else if (task.process)
          std::cout << "read    " << rel_file(task, task.file->path) << " (output up to date; needed by the merge)\n";
        else
          std::cout << "skip    " << rel_file(task, task.file->path) << " (output up to date)\n";
      }
      if (iteration->has_merge_row) {
        if (iteration->merge)
          std::cout << "merge   " << printable(iteration->dir->rel) << " (" << iteration->ranks.size() << " ranks) -> "
                    << kMergedName << "\n";
        else
          std::cout << "skip    " << printable(iteration->dir->rel) << "/" << kMergedName << " (up to date)\n";
      }
    }
    // --remove-originals: what would be verified and removed once the work is done.
    if (options_.remove_originals) {
      std::vector<std::string> rel_names;
      for (const auto& iteration : iterations_)
        for (size_t index : iteration->ranks) {
          const std::string& rel = iteration->dir->rel;
          rel_names.push_back((rel == "." ? "" : rel + "/") + ranks_[index]->file->path.filename().string());
        }
      std::cout << removal_plan(original_files(), rel_names);
    }
    size_t work = 0;
    uint64_t bytes = 0;
    for (const auto& task : ranks_)
      if (task->process) work++, bytes += task->file->bytes_uncompressed;
    std::cout << work << " of " << ranks_.size() << " rank files to read (" << bytes << " bytes of JSON), "
              << iterations_.size() << " iteration directories\n";
  }

  // --remove-originals: "removed N originals, M bytes; kept K".
  std::string removal_summary() const { return cli::removal_summary(removal_verdicts_); }

  // Runs the graph; returns the rows, sorted.
  std::vector<Row> run() {
    size_t files = 0;
    uint64_t bytes = 0;
    for (const auto& task : ranks_)
      if (task->process) files++, bytes += task->file->bytes_uncompressed;
    Progress progress(options_.quiet, files, bytes);
    progress_ = &progress;

    Admission admission(options_.memory_budget);
    for (size_t i = 0; i < ranks_.size(); ++i)
      if (ranks_[i]->process) admission.enqueue(job_of(i));

    tbb::task_arena arena(options_.jobs);
    arena.execute([&] { run_graph(admission); });
    progress.stop();
    progress_ = nullptr;
    // --remove-originals: only once every output is written (remove_originals.hpp).
    if (options_.remove_originals) remove_verified_originals();

    std::vector<Row> rows;
    for (const auto& task : ranks_) rows.push_back(task->row);
    for (const auto& iteration : iterations_)
      if (iteration->has_merge_row) rows.push_back(iteration->merge_row);
    sort_rows(rows);
    return rows;
  }

 private:
  // --remove-originals (remove_originals.hpp): every rank file of this run as the sweep
  // leaves it, in plan order; those of an iteration that is not wholly done are refused.
  std::vector<OriginalFile> original_files() const {
    auto status = [](const Row& row) {
      const Cell& cell = row.get("status");
      return std::holds_alternative<std::string>(cell) ? std::get<std::string>(cell) : std::string();
    };
    std::vector<OriginalFile> files;
    for (const auto& iteration : iterations_) {
      std::vector<std::pair<std::string, std::string>> statuses;
      for (size_t r : iteration->ranks) statuses.push_back({ranks_[r]->file->path.filename().string(), status(ranks_[r]->row)});
      std::optional<std::string> merge_status;
      if (iteration->has_merge_row) merge_status = status(iteration->merge_row);
      std::optional<std::string> refusal;
      if (!options_.dry_run) refusal = iteration_not_done(statuses, merge_status);
      for (size_t r : iteration->ranks) {
        const RankTask& task = *ranks_[r];
        OriginalFile file;
        file.dir = iteration->dir->dir;
        file.name = task.file->path.filename().string();
        file.output_name = task.output.filename().string();
        // The file read; a rank not read (or not yet: --dry-run) is the one discovery
        // found, which its output's inputs record named (up_to_date).
        file.identity = task.process && !options_.dry_run ? task.read_identity : task.file->identity;
        file.through_link = task.file->through_link;
        file.estimate = std::max(task.estimate, task.file->bytes_uncompressed);
        file.iteration = iteration->index;
        file.refusal = refusal;
        files.push_back(std::move(file));
      }
    }
    return files;
  }

  void remove_verified_originals() {
    removal_verdicts_ = remove_originals(original_files(), options_.memory_budget, options_.jobs,
                                         [](const std::string& line) { print_error(line); });
    size_t i = 0;
    for (const auto& iteration : iterations_)
      for (size_t r : iteration->ranks) ranks_[r]->row.set("original", original_cell(removal_verdicts_[i++]));
  }

  // The budget's messages: start (first kick), a rank job done, an iteration's merge done,
  // a rank job that found its file larger than admitted (requeue with its new estimate).
  struct AdmitMessage {
    enum Kind { start, job_done, group_done, requeue } kind = start;
    size_t id = 0;
  };

  // A rank job's costs from the current estimates (which a requeue raises).
  Admission::Job job_of(size_t id) const {
    const RankTask& task = *ranks_[id];
    Admission::Job job;
    job.id = id;
    if (task.for_merge) {
      // The retained part of every rank and the merged text are held by the iteration.
      job.group = task.iteration->index;
      job.transient = kTransientFactor * task.estimate;
      uint64_t total = 0;
      for (size_t r : task.iteration->ranks) total += ranks_[r]->estimate;
      job.group_reserve = (kRetainedFactor + kMergeFactor) * total;
    } else {
      job.transient = (kTransientFactor + kRetainedFactor) * task.estimate;
    }
    return job;
  }

  void run_graph(Admission& admission) {
    namespace flow = tbb::flow;
    flow::graph graph;
    using AdmitNode = flow::multifunction_node<AdmitMessage, std::tuple<size_t>>;
    using CollectNode = flow::multifunction_node<size_t, std::tuple<AdmitMessage, size_t>>;

    // Serial: the only place that touches the budget.
    AdmitNode admit(graph, flow::serial, [&](const AdmitMessage& message, AdmitNode::output_ports_type& ports) {
      // The budget counts a finished job's memory as free, but glibc keeps what it freed in
      // the arena of the thread that allocated it (blocks below its dynamic mmap threshold,
      // up to 32 MB each), where the next job, on another thread, cannot reuse it: hand it
      // back before admitting more (two 16 MB traces run one after the other under 200M
      // peaked at 1.75 x one file's RSS without this, 1.0x with it).
      if (message.kind != AdmitMessage::start) ::malloc_trim(0);
      if (message.kind == AdmitMessage::job_done) admission.finish_job(message.id);
      if (message.kind == AdmitMessage::group_done) admission.finish_group(message.id);
      if (message.kind == AdmitMessage::requeue) {
        Admission::Job job = job_of(message.id);
        admission.requeue(message.id, job.transient, job.group_reserve);
      }
      for (size_t id : admission.admit()) std::get<0>(ports).try_put(id);
    });
    flow::function_node<size_t, size_t> load(graph, flow::unlimited, [&](size_t id) { return load_parse(id); });
    flow::function_node<size_t, size_t> compact(graph, flow::unlimited, [&](size_t id) { return compact_rank(id); });
    flow::function_node<size_t, size_t> write(graph, flow::unlimited, [&](size_t id) { return write_rank(id); });
    CollectNode collect(graph, flow::unlimited, [&](size_t id, CollectNode::output_ports_type& ports) {
      collect_rank(id, ports);
    });
    flow::function_node<size_t, AdmitMessage> merge(graph, flow::unlimited, [&](size_t iteration) {
      merge_iteration(iteration);
      return AdmitMessage{AdmitMessage::group_done, iteration};
    });

    flow::make_edge(flow::output_port<0>(admit), load);
    flow::make_edge(load, compact);
    flow::make_edge(compact, write);
    flow::make_edge(write, collect);
    flow::make_edge(flow::output_port<0>(collect), admit);
    flow::make_edge(flow::output_port<1>(collect), merge);
    flow::make_edge(merge, admit);

    admit.try_put(AdmitMessage{AdmitMessage::start, 0});
    graph.wait_for_all();
  }

  void fail(RankTask& task, const std::string& message) {
    task.failed = true;
    task.trace.reset();
    task.compacted.reset();
    task.row.figures.reset();
    task.row.set("status", std::string("failed")).set("error", message);
    progress_->error(message);
  }

  size_t load_parse(size_t id) {
    RankTask& task = *ranks_[id];
    task.started = std::chrono::steady_clock::now();
    task.requeued = false;
    try {
      // The guard every writing command goes through (a planted link or hard link from the
      // output's name to the input is refused, and the row says so).
      if (task.write_output) guard_output(task.output, {task.file->path}, true);
      if (task.estimate > memory_limit_)
        throw Error(task.file->path.string() + ": decompresses to about " + std::to_string(task.estimate) +
                    " bytes, more than this machine's or job's memory (" + std::to_string(memory_limit_) +
                    " bytes); not read");
      ReadOptions read;
      read.regular_only = true;
      read.no_follow = !task.file->through_link;
      read.max_bytes = task.estimate;  // what the budget admitted: never hold more
      std::string json;
      try {
        json = read_trace_bytes(task.file->path, &task.read_identity, read);
      } catch (const InputChanged&) {
        // Once more: a writer may just have finished. Still changing: failed, not kept.
        json = read_trace_bytes(task.file->path, &task.read_identity, read);
      }
      task.row.set("input_bytes", int64_t(task.read_identity.size));  // the file read
      task.trace.emplace(parse_trace(std::move(json), task.file->path.string()));
      task.row.set("events", int64_t(task.trace->events.size()));
      task.row.set("pp_rank", int64_t(single_trace_pp_rank(*task.trace)));
    } catch (const LargerThanAdmitted& e) {
      // Back to the budget with the better estimate (at least double: see Admission).
      if (++task.requeues > kMaxRequeues) {
        fail(task, std::string(e.what()) + " (still growing after " + std::to_string(kMaxRequeues) + " new estimates)");
      } else if (e.estimate > memory_limit_) {
        // A file "larger than the budget runs alone", but one that cannot fit in the
        // machine's (or the job's) memory at all (a gzip bomb) would only get the whole
        // sweep OOM-killed, report and all: fail it instead.
        fail(task, std::string(e.what()) + ": decompresses to more than this machine's or job's memory (" +
                       std::to_string(memory_limit_) + " bytes); not read");
      } else {
        task.estimate = std::max(e.estimate, task.estimate * 2);
        task.requeued = true;
      }
    } catch (...) {
      fail(task, describe_exception());
    }
    return id;
  }

  size_t compact_rank(size_t id) {
    RankTask& task = *ranks_[id];
    if (task.failed || task.requeued) return id;
    try {
      CompactOptions compact_options;
      // Every rank output gets its single-trace arrows, as `compact` writes it; the merge
      // replaces them with the merged file's own (SPEC 7, 8).
      compact_options.pp_flows = true;
      compact_options.force = options_.force;
      compact_options.restore_data = options_.restore_data;
      compact_options.rules = options_.rules ? &*options_.rules : nullptr;
      task.compacted.emplace(compact_trace(std::move(*task.trace), compact_options));
      task.trace.reset();
      if (!task.compacted->already_laned.empty()) {
        // Not a failure: the exporter laned it already; nothing to write (SPEC 9.8).
        task.already_laned = true;
        task.write_output = false;
        task.row.set("status", std::string("already laned")).set("error", task.compacted->already_laned);
        return id;
      }
      fill_summary(task.row, task.compacted->summary);
      // Only a row whose output this run writes gets figures computed (a skipped one has its
      // output's, mark_skipped).
      if (task.write_output)
        task.row.figures = trace_figures(*task.compacted, options_.rules ? &*options_.rules : nullptr,
                                         int64_t(task.file->rank), task.compacted->summary.pp_rank);
    } catch (...) {
      fail(task, describe_exception());
    }
    return id;
  }

  size_t write_rank(size_t id) {
    RankTask& task = *ranks_[id];
    if (task.failed || task.requeued) return id;
    try {
      if (task.write_output) {
        // Serialised before the merge, which renumbers the trace in place.
        std::string bytes = encode_for(task.output, write_compacted(*task.compacted), options_.level);
        Row done = task.row;  // the row only once the output is in place
        done.set("output_bytes", int64_t(bytes.size())).set("status", std::string("ok"));
        write_atomically(task.output, bytes, true, row_record(done),
                         {{task.file->path.filename().string(), task.read_identity}}, recipe_, figures_record(done));
        task.row = std::move(done);
      }
      if (!task.for_merge) task.compacted.reset();
    } catch (...) {
      fail(task, describe_exception());
    }
    task.row.set("seconds", seconds_since(task.started));
    return id;
  }

  template <typename Ports>
  void collect_rank(size_t id, Ports& ports) {
    RankTask& task = *ranks_[id];
    if (task.requeued) {
      std::get<0>(ports).try_put(AdmitMessage{AdmitMessage::requeue, id});
      return;
    }
    progress_->file_done(task.file->bytes_uncompressed, task.failed);
    std::get<0>(ports).try_put(AdmitMessage{AdmitMessage::job_done, id});
    if (!task.for_merge) return;
    IterationTask& iteration = *task.iteration;
    if (iteration.ranks_done.fetch_add(1) + 1 != iteration.ranks.size()) return;
    // The last rank of the iteration: every sibling has finished (acquire by the RMW).
    std::string failed_files, laned_files;
    for (size_t r : iteration.ranks) {
      if (ranks_[r]->failed) failed_files += (failed_files.empty() ? "" : ", ") + ranks_[r]->file->path.filename().string();
      if (ranks_[r]->already_laned)
        laned_files += (laned_files.empty() ? "" : ", ") + ranks_[r]->file->path.filename().string();
    }
    if (failed_files.empty() && laned_files.empty()) {
      std::get<1>(ports).try_put(iteration.index);
      return;
    }
    for (size_t r : iteration.ranks) ranks_[r]->compacted.reset();
    if (failed_files.empty()) {
      iteration.merge_row.set("status", std::string("already laned"))
          .set("error", iteration.dir->dir.string() + ": not merged: already laned: " + laned_files);
      std::get<0>(ports).try_put(AdmitMessage{AdmitMessage::group_done, iteration.index});
      return;
    }
    iteration.merge_row.set("status", std::string("failed"))
        .set("error", iteration.dir->dir.string() + ": not merged: failed rank files: " + failed_files);
    std::get<0>(ports).try_put(AdmitMessage{AdmitMessage::group_done, iteration.index});
  }

  void merge_iteration(size_t index) {
    IterationTask& iteration = *iterations_[index];
    auto started = std::chrono::steady_clock::now();
    Row& row = iteration.merge_row;
    try {
      Row done = row;  // the row only once the output is in place
      std::vector<MergeInput> inputs;
      std::vector<NamedIdentity> identities;  // every rank, as read
      std::vector<fs::path> rank_paths;
      for (size_t r : iteration.ranks) rank_paths.push_back(ranks_[r]->file->path);
      guard_output(iteration.merged_output, rank_paths, true);
      for (size_t r : iteration.ranks) {
        RankTask& task = *ranks_[r];
        identities.push_back({task.file->path.filename().string(), task.read_identity});
        inputs.push_back({task.file->path.filename().string(), std::move(*task.compacted)});
        task.compacted.reset();
      }
      MergeResult merged = merge_ranks(std::move(inputs), options_.rules ? &*options_.rules : nullptr);
      std::string bytes = encode_for(iteration.merged_output, std::move(merged.json), options_.level);
      const MergeSummary& summary = merged.summary;
      std::vector<std::pair<int, int64_t>> order = summary.pp_ranks;
      std::sort(order.begin(), order.end());
      std::string pp_order;
      for (const auto& [pp_rank, global_rank] : order) pp_order += (pp_order.empty() ? "" : " ") + std::to_string(global_rank);
      done.set("pp_order", pp_order).set("pp_order_source", summary.pp_order_source);
      done.set("time_alignment", summary.time_alignment);
      done.set("pp_send_recv_pairs", int64_t(summary.pp.send_recv_pairs))
          .set("pp_send_recv_unmatched", int64_t(summary.pp.send_recv_unmatched))
          .set("pp_compute_dependency_pairs", int64_t(summary.pp.compute_dependency_pairs))
          .set("pp_compute_dependency_unmatched", int64_t(summary.pp.compute_dependency_unmatched))
          .set("pp_unshard_compute_pairs", int64_t(summary.pp.unshard_compute_pairs))
          .set("pp_unshard_compute_unmatched", int64_t(summary.pp.unshard_compute_unmatched));
      done.set("output_bytes", int64_t(bytes.size())).set("status", std::string("ok"));
      done.figures = std::move(merged.figures);
      write_atomically(iteration.merged_output, bytes, true, row_record(done), identities, recipe_, figures_record(done));
      row = std::move(done);
    } catch (...) {
      std::string message = describe_exception();
      row.set("status", std::string("failed")).set("error", message);
      progress_->error(message);
    }
    for (size_t r : iteration.ranks) ranks_[r]->compacted.reset();
    row.set("seconds", seconds_since(started));
  }

  const SweepOptions& options_;
  const Discovery& discovery_;
  std::vector<std::unique_ptr<RankTask>> ranks_;
  std::vector<std::unique_ptr<IterationTask>> iterations_;
  Progress* progress_ = nullptr;
  std::vector<OriginalVerdict> removal_verdicts_;  // --remove-originals, in plan order
  const uint64_t memory_limit_ = memory_limit();
  // What decides the outputs besides their inputs: kept in each output's inputs record.
  const std::string recipe_ = output_recipe(options_.rules_text, options_.restore_data, true);
};

const char* kSweepUsage = "usage: tracelane sweep ROOT [options]\n";

}  // namespace

int run_sweep(int argc, char** argv) {
  namespace po = boost::program_options;
  SweepOptions options;
  std::string root, report_dir, memory, shard, rules_file;
  int jobs = 0;
  bool no_restore_data = false;
  po::options_description described("sweep options");
  described.add_options()("help,h", "show this help")(
      "jobs,j", po::value(&jobs), "threads (default: SLURM_CPUS_PER_TASK, else the cores available)")(
      "memory", po::value(&memory),
      "budget for trace data in flight, e.g. 512M, 4G (default: half the memory of the machine or job)")(
      "overwrite", po::bool_switch(&options.overwrite), "redo outputs that are up to date")(
      "force", po::bool_switch(&options.force), "compact traces that are already laned (SPEC 9.8)")(
      "rules", po::value(&rules_file), "classification and PP rules (JSON; see `tracelane rules --print-defaults`)")(
      "no-restore-data", po::bool_switch(&no_restore_data),
      "leave out what `tracelane restore` needs to write the originals back")(
      "remove-originals", po::bool_switch(&options.remove_originals),
      "after the work, remove each rank file whose compacted copy, read back, restores it byte for byte")(
      "dry-run,n", po::bool_switch(&options.dry_run), "list what would be done; change nothing")(
      "quiet,q", po::bool_switch(&options.quiet), "no progress and no summary; errors only")(
      "report-dir", po::value(&report_dir), "where to write tracelane_report.json/.csv/.html (default: ROOT)")(
      "shard", po::value(&shard), "K/N: process the iteration directories at sorted positions p with p % N == K")(
      "level", po::value(&options.level)->default_value(1), "gzip level, 0 to 12 (libdeflate's scale)");
  po::options_description hidden;
  hidden.add_options()("root", po::value(&root));
  po::options_description all;
  all.add(described).add(hidden);
  po::positional_options_description positional;
  positional.add("root", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "tracelane sweep: " << printable(e.what()) << "\n" << kSweepUsage;
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << kSweepUsage << "\n" << described;
    return kExitOk;
  }
  options.restore_data = !no_restore_data;
  auto usage_error = [](const std::string& message) {
    std::cerr << "tracelane sweep: " << printable(message) << "\n" << kSweepUsage;
    return kExitUsage;
  };
  if (root.empty()) return usage_error("missing ROOT");
  // --remove-originals: a copy without restore data cannot give its original back.
  if (options.remove_originals && no_restore_data)
    return usage_error("--remove-originals needs the restore data that --no-restore-data leaves out");
  if (!rules_file.empty()) {
    try {
      options.rules_text = read_file(rules_file);
      options.rules = Rules::parse(options.rules_text, rules_file);
    } catch (const Error& e) {
      std::cerr << printable(e.what()) << "\n";
      return kExitUsage;
    }
  }
  options.root = root;
  boost::system::error_code ec;
  if (!fs::is_directory(options.root, ec)) return usage_error(root + ": not a directory");
  if (vm.count("jobs") && jobs < 1) return usage_error("--jobs must be at least 1");
  options.jobs = jobs > 0 ? jobs : default_jobs();
  if (!memory.empty()) {
    auto bytes = parse_byte_size(memory);
    if (!bytes) return usage_error("--memory: expected a size like 512M or 4G, got '" + memory + "'");
    options.memory_budget = *bytes;
  } else {
    options.memory_budget = default_memory_budget();
  }
  if (!shard.empty()) {
    options.shard = parse_shard(shard);
    if (!options.shard)
      return usage_error("--shard: expected K/N with 0 <= K < N <= " + std::to_string(kMaxShards) + ", got '" + shard +
                         "'");
  }
  if (options.level < 0 || options.level > 12) return usage_error("--level must be between 0 and 12");
  options.report_dir = report_dir.empty() ? options.root : fs::path(report_dir);
  if (!options.dry_run) {
    // The report's place is checked before any work, not after hours of it.
    boost::system::error_code made;
    fs::create_directories(options.report_dir, made);
    std::optional<std::pair<int, int>> report_shard;
    if (options.shard) report_shard = std::pair<int, int>{options.shard->index, options.shard->count};
    for (const char* extension : {".json", ".csv", ".html"}) {
      try {
        guard_output(options.report_dir / (report_base_name(report_shard) + extension), {}, true);
      } catch (const OutputRefused& e) {
        return usage_error(std::string(e.what()) + " (--report-dir)");
      }
    }
  }

  TreeLock lock;  // held until the report is written
  if (!options.dry_run) {
    std::string message;
    TreeLock::Outcome outcome = lock.take(options.root, options.shard.has_value(), message);
    if (outcome == TreeLock::Outcome::unlocked) std::cerr << "warning: " << printable(message) << "\n";
    if (outcome == TreeLock::Outcome::busy || outcome == TreeLock::Outcome::refused) {
      std::cerr << "tracelane sweep: " << printable(message) << "\n";
      return kExitUsage;
    }
  }
  auto started = std::chrono::steady_clock::now();
  Discovery discovery = discover(options.root);
  // Discovery problems belong to the whole tree: shard 0 reports them, so a combined
  // report lists each once.
  bool report_problems = !options.shard || options.shard->index == 0;
  for (const DiscoveryProblem& problem : discovery.problems)
    std::cerr << printable((fs::path(options.root) / problem.rel).string() + ": " + problem.reason) << "\n";

  Sweep sweep(options, discovery);
  sweep.plan();
  if (options.dry_run) {
    sweep.print_plan();
    return kExitOk;
  }
  sweep.remove_stale_temporaries();
  std::vector<Row> rows = sweep.run();
  if (report_problems)
    for (const DiscoveryProblem& problem : discovery.problems) {
      Row row(RowKind::problem);
      row.set("dir", problem.rel)
          .set("status", std::string(problem.failure ? "failed" : "warning"))
          .set("error", problem.reason);
      rows.push_back(std::move(row));
    }
  sort_rows(rows);

  Report report;
  report.root = fs::absolute(options.root, ec).lexically_normal().string();
  if (options.shard) report.shard = {options.shard->index, options.shard->count};
  RunInfo info;
  info.shard = report.shard;
  info.wall_seconds = seconds_since(started);
  info.jobs = options.jobs;
  info.memory_budget_bytes = options.memory_budget;
  report.runs.push_back(info);
  report.rows = std::move(rows);
  fs::path written;
  bool report_failed = false;
  try {
    fs::create_directories(options.report_dir, ec);
    written = write_report(report, options.report_dir);
  } catch (const Error& e) {
    std::cerr << printable(e.what()) << "\n";
    report_failed = true;
  }

  std::map<std::string, size_t> counts;
  for (const Row& row : report.rows) {
    const Cell& status = row.get("status");
    counts[std::string(kind_name(row.kind)) + "s " +
           (std::holds_alternative<std::string>(status) ? std::get<std::string>(status) : "?")]++;
  }
  if (!options.quiet) {
    std::cout << "tracelane sweep: ";
    bool first = true;
    for (const auto& [key, count] : counts) std::cout << (first ? "" : ", ") << count << " " << key, first = false;
    if (counts.empty()) std::cout << "no rank<N>_trace.json[.gz] files found";
    std::cout << " in " << int(info.wall_seconds * 10) / 10.0 << " s\n";
    if (!written.empty()) std::cout << "report: " << printable(written.string()) << "\n";
    // --remove-originals
    if (options.remove_originals) std::cout << "tracelane sweep: " << sweep.removal_summary() << "\n";
  }
  for (const auto& [dir, count] : unmatched_iterations(report.rows))
    std::cerr << "warning: " << printable(dir) << ": " << count
              << " PP send/recv arrows unmatched (usually a truncated capture window)\n";
  for (const Row& row : report.rows)
    if (row.kind != RowKind::problem && std::holds_alternative<std::string>(row.get("status")) &&
        std::get<std::string>(row.get("status")) == "failed" && std::holds_alternative<std::string>(row.get("error")))
      std::cerr << "failed: " << printable(std::get<std::string>(row.get("error"))) << "\n";
  return has_failures(report.rows) || report_failed ? kExitFailed : kExitOk;
}

}  // namespace tracelane::cli
