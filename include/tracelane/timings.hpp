// Wall time, CPU time and peak RSS of named phases, nested into a tree: what `--timings`
// prints. Each phase opens with a scoped timer, as mold's passes do:
//
//   Timings::Scope t(timings, "parse");
//
// A null Timings* makes a Scope cost nothing (no clock is read). Scopes are opened and
// closed by one thread at a time (the driver of a command); CPU time is the whole
// process's, so work a phase hands to other threads is counted in it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tracelane {

class Timings {
 public:
  struct Phase {
    std::string name;
    int depth = 0;           // 0: a top-level phase; 1: inside the last depth-0 phase; ...
    double wall_s = 0;       // < 0: not known (add_cpu)
    double cpu_s = 0;        // user + system, every thread of the process
    double peak_rss_mb = 0;  // the process's high-water mark when the phase closed
    bool open = true;
  };

  class Scope {
   public:
    Scope(Timings* timings, std::string_view name);
    ~Scope() { close(); }
    // Ends the phase before the end of the block.
    void close();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Timings* timings_;
    size_t index_ = 0;
    double wall_start_ = 0, cpu_start_ = 0;
  };

  // A phase inside the one now open whose work ran spread over many threads, alongside
  // others: only its CPU time (summed over the threads) is known; its wall time prints "-".
  void add_cpu(std::string_view name, double cpu_s);

  // In the order the phases opened (a parent before its children).
  const std::vector<Phase>& phases() const { return phases_; }
  // One line a phase, indented by depth: "timing: <name> <wall> s wall <cpu> s cpu peak RSS <mb> MB";
  // names padded to 30 columns (a pass name at depth 2 fits).
  std::string text() const;

 private:
  std::vector<Phase> phases_;
  int depth_ = 0;
};

}  // namespace tracelane
