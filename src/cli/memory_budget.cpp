// Sizes, memory limits and admission under the sweep's memory budget.
#include "memory_budget.hpp"

#include <unistd.h>

#include <oneapi/tbb/info.h>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string>

namespace tracelane::cli {

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

int arena_threads(int jobs) { return std::clamp(jobs, 1, std::max(1, tbb::info::default_concurrency())); }

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

}  // namespace tracelane::cli
