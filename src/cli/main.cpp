// tracelane: compact CUDA-graph PyTorch profiler traces into semantic GPU lanes, and
// merge pipeline-parallel ranks into one timeline.
//
// This file is the dispatch: a table of the commands, and what belongs to the process
// rather than to any command (stdout's error checking, huge pages, SIGXFSZ). Each command
// is a file of its own (commands.hpp lists them); what they share is in options.hpp and
// trace_job.hpp; all trace logic is in the core (include/tracelane/).
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <streambuf>
#include <string>
#include <string_view>

#include <malloc.h>
#include <unistd.h>

#include "commands.hpp"
#include "files.hpp"
#include "options.hpp"
#include "tracelane_build_info.hpp"  // TRACELANE_GIT_COMMIT, generated (cmake/BuildInfo.cmake)

using namespace tracelane;
using namespace tracelane::cli;

namespace {

// The commands; `tracelane --help` describes each (options.cpp kUsage, which a usage
// error of compact, merge and restore prints too).
struct Command {
  std::string_view name;
  int (*run)(int argc, char** argv);
  bool huge_pages = false;  // reads whole traces: worth the re-exec (use_huge_pages)
};

const Command kCommands[] = {
    {"compact", run_compact, true}, {"merge", run_merge, true},     {"sweep", run_sweep, true},
    {"report", run_report, false},  {"restore", run_restore, true}, {"check", run_check, true},
    {"rules", run_rules, false},
};

const Command* find_command(std::string_view name) {
  for (const Command& command : kCommands)
    if (command.name == name) return &command;
  return nullptr;
}

}  // namespace

// glibc's malloc asks the kernel for transparent huge pages (2 MB) for its large blocks
// only under the tunable glibc.malloc.hugetlb=1, and tunables are read when a process
// starts. tracelane's buffers are as large as the trace, and with 4 KB pages their first
// touch is one page fault per 4 KB, a large share of a big compaction's time (measured in
// bench/README.md, "Huge pages"). So re-run this program with the tunable set, unless
// GLIBC_TUNABLES already names it (a user's glibc.malloc.hugetlb=0 stands) or
// TRACELANE_HUGE_PAGES=0. Where the kernel gives no huge pages (transparent_hugepage=never)
// the tunable does nothing.
void use_huge_pages(char** argv) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.hugetlb")) return;
  const char* wanted = std::getenv("TRACELANE_HUGE_PAGES");
  if (wanted && std::strcmp(wanted, "0") == 0) return;
  std::string saved = tunables ? tunables : "";
  std::string value = saved.empty() ? "glibc.malloc.hugetlb=1" : saved + ":glibc.malloc.hugetlb=1";
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // No /proc (or no exec): go on with small pages, the environment as it was.
  if (tunables)
    setenv("GLIBC_TUNABLES", saved.c_str(), 1);
  else
    unsetenv("GLIBC_TUNABLES");
}

namespace {

int run_command(int argc, char** argv) {
  std::string command = argv[1];
  if (command == "--version" || command == "version") {
    std::cout << "tracelane " TRACELANE_VERSION " (commit " TRACELANE_GIT_COMMIT ")\n";
    return kExitOk;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (const Command* found = find_command(command)) {
    // Each command names the file it failed on; this is the last word for what escaped it
    // (the report's own memory, say), so that it ends as a failure, not std::terminate.
    try {
      return found->run(argc - 1, argv + 1);
    } catch (const std::bad_alloc&) {
      print_error("tracelane " + command + ": out of memory");
    } catch (const std::exception& e) {
      print_error("tracelane " + command + ": " + e.what());
    }
    return kExitFailed;
  }
  print_error("tracelane: unknown command '" + command + "'");
  std::cerr << "\n" << kUsage;
  return kExitUsage;
}

// Whatever a command prints on stdout (a summary, the default rules, a report) is its
// result: if it could not be written (a full disk, /dev/full, EIO), the command failed,
// whichever command it was. std::cout writes through this buffer, which keeps the errno of
// the first failed write (stdio's and iostream's error flags do not), so the message can
// say why: "tracelane: standard output: No space left on device".
class StdoutBuffer : public std::streambuf {
 public:
  StdoutBuffer() { setp(buffer_, buffer_ + sizeof buffer_); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (drain() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain(); }

 private:
  int drain() {
    const char* p = pbase();
    while (p < pptr()) {
      ssize_t n = ::write(STDOUT_FILENO, p, size_t(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (error_ == 0) error_ = n < 0 ? errno : EIO;
        setp(buffer_, buffer_ + sizeof buffer_);  // what could not be written is dropped
        return -1;
      }
      p += n;
    }
    setp(buffer_, buffer_ + sizeof buffer_);
    return 0;
  }

  char buffer_[1 << 16];
  int error_ = 0;
};

// Flushes stdout and turns a failed write into exit status 1, unless the command had
// already failed with its own status, which stands.
int finish_stdout(int code, StdoutBuffer& buffer) {
  std::cout.flush();
  int e = buffer.error();
  if (e == 0 && (std::fflush(stdout) != 0 || std::ferror(stdout))) e = errno ? errno : EIO;  // stdio, if ever used
  if (e == 0 && std::cout.bad()) e = EIO;
  if (e == 0) return code;
  print_error(std::string("tracelane: standard output: ") + std::strerror(e));
  return code == kExitOk ? kExitFailed : code;
}

}  // namespace

int main(int argc, char** argv) {
  // Past RLIMIT_FSIZE (`ulimit -f`), write() fails with EFBIG once SIGXFSZ is ignored,
  // instead of the signal killing us with a temporary file left behind.
  std::signal(SIGXFSZ, SIG_IGN);
  // Blocks of 8 MiB or more come from the kernel and go back to it when freed. glibc
  // otherwise raises this bound to the largest block freed so far (up to 32 MiB), and the
  // passes' large temporaries then stay in the heap once freed, where the next pass's
  // rarely fit: 5 MiB more at gen600's peak (bench/README.md, "Event records and the memory
  // peak"). Smaller bounds cost system time for fresh pages each time. A bound the user set
  // (GLIBC_TUNABLES=glibc.malloc.mmap_threshold=...) is left as it is.
#ifdef __GLIBC__
  const char* tunables = std::getenv("GLIBC_TUNABLES");  // a user's own bound stands
  if (!tunables || !std::strstr(tunables, "glibc.malloc.mmap_threshold")) mallopt(M_MMAP_THRESHOLD, 8 << 20);
#endif
  remove_temporaries_on_signals();
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  if (const Command* command = find_command(argv[1]); command && command->huge_pages) use_huge_pages(argv);
  // Never destroyed, so that std::cout's flush at exit finds it even after an exit() call.
  // std::cout is written from the main thread only (workers report on stderr).
  static StdoutBuffer* stdout_buffer = new StdoutBuffer;
  std::streambuf* stdio_buffer = std::cout.rdbuf(stdout_buffer);
  int code = finish_stdout(run_command(argc, argv), *stdout_buffer);
  std::cout.rdbuf(stdio_buffer);
  return code;
}
