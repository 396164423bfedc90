// The sweep's progress on stderr: a bar redrawn by a thread of its own on a terminal, a
// plain line now and then otherwise (Slurm logs), nothing with --quiet.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace tracelane::cli {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Prints progress on stderr: a redrawn bar on a terminal, a plain line now and then
// otherwise (Slurm logs), nothing with --quiet. Errors go through it so they do not
// interleave with the bar.
class Progress {
 public:
  Progress(bool quiet, size_t files_total, uint64_t bytes_total);
  ~Progress() { stop(); }

  // Called by any worker thread.
  void file_done(uint64_t bytes, bool failed) {
    files_done_++;
    bytes_done_ += bytes;
    if (failed) failed_++;
  }
  // One error line, printed between redraws of the bar.
  void error(const std::string& message);
  // Ends the ticker thread and draws the final line.
  void stop();

 private:
  void tick();
  static std::string human(double bytes);
  void draw(bool final);

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

}  // namespace tracelane::cli
