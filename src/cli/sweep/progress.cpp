#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "printable.hpp"

namespace tracelane::cli {

Progress::Progress(bool quiet, size_t files_total, uint64_t bytes_total)
    : quiet_(quiet), tty_(::isatty(STDERR_FILENO)), files_total_(files_total), bytes_total_(bytes_total) {
  if (!quiet_ && files_total_ > 0) ticker_ = std::thread([this] { tick(); });
}

void Progress::error(const std::string& message) {
  std::lock_guard lock(mutex_);
  if (tty_ && drawn_) std::fputs("\r\033[K", stderr);
  std::fprintf(stderr, "%s\n", printable(message).c_str());
  drawn_ = false;
}

void Progress::stop() {
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

void Progress::tick() {
  auto period = tty_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(10000);
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) draw(false);
}

std::string Progress::human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) bytes /= 1024, unit++;
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, unit ? "%.1f %s" : "%.0f %s", bytes, units[unit]);
  return buffer;
}

void Progress::draw(bool final) {
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

}  // namespace tracelane::cli
