#include "tracelane/timings.hpp"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <utility>

namespace tracelane {
namespace {

double wall_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double seconds(const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; }

double cpu_now() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// VmHWM from /proc/self/status (Linux); 0 where unavailable.
double peak_rss_mb() {
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (!status) return 0;
  char line[256];
  double kb = 0;
  while (std::fgets(line, sizeof line, status))
    if (std::sscanf(line, "VmHWM: %lf kB", &kb) == 1) break;
  std::fclose(status);
  return kb / 1024;
}

}  // namespace

Timings::Scope::Scope(Timings* timings, std::string_view name) : timings_(timings) {
  if (!timings_) return;
  index_ = timings_->phases_.size();
  timings_->phases_.push_back(Phase{std::string(name), timings_->depth_++});
  wall_start_ = wall_now();
  cpu_start_ = cpu_now();
}

void Timings::Scope::close() {
  if (!timings_) return;
  Phase& phase = timings_->phases_[index_];
  phase.wall_s = wall_now() - wall_start_;
  phase.cpu_s = cpu_now() - cpu_start_;
  phase.peak_rss_mb = peak_rss_mb();
  phase.open = false;
  timings_->depth_--;
  timings_ = nullptr;
}

void Timings::add_cpu(std::string_view name, double cpu_s) {
  Phase phase{std::string(name), depth_};
  phase.wall_s = -1;
  phase.cpu_s = cpu_s;
  phase.peak_rss_mb = peak_rss_mb();
  phase.open = false;
  phases_.push_back(std::move(phase));
}

std::string Timings::text() const {
  std::string out;
  for (const Phase& phase : phases_) {
    // Still running (an enclosing phase when text() is called): its time is not known yet.
    // A phase an exception left is closed by its Scope on unwinding and printed with its
    // time so far.
    if (phase.open) continue;
    char line[256];
    std::string name = std::string(size_t(2 * phase.depth), ' ') + phase.name;
    if (phase.wall_s < 0)
      std::snprintf(line, sizeof line, "timing: %-30s %8s   wall %8.3f s cpu   peak RSS %8.1f MB\n", name.c_str(), "-",
                    phase.cpu_s, phase.peak_rss_mb);
    else
      std::snprintf(line, sizeof line, "timing: %-30s %8.3f s wall %8.3f s cpu   peak RSS %8.1f MB\n", name.c_str(),
                    phase.wall_s, phase.cpu_s, phase.peak_rss_mb);
    out += line;
  }
  return out;
}

}  // namespace tracelane
