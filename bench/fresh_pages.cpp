// What a fresh page costs on this machine: writes N MiB of freshly mapped memory on one
// thread, then the same memory again, then fresh memory that MADV_POPULATE_WRITE made on
// T threads first (src/prefault.hpp). The first against the second is the kernel's page
// zeroing (and the hypervisor's, on a VM); bench/README.md, "Fresh pages". With "huge",
// the memory is advised MADV_HUGEPAGE first, as glibc does for tracelane's large buffers
// (it runs with glibc.malloc.hugetlb=1: docs/building.md), so pages fault in 2 MiB at a time.
//
//   build/bench/fresh_pages [MiB=1000] [threads=2] [huge]
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool huge = false;

char* fresh(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  if (huge && ::madvise(p, bytes, MADV_HUGEPAGE) != 0) std::perror("madvise(MADV_HUGEPAGE)");
  return static_cast<char*>(p);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = size_t(argc > 1 ? std::atol(argv[1]) : 1000) << 20;
  const int threads = std::max(1, argc > 2 ? std::atoi(argv[2]) : 2);
  huge = argc > 3 && std::strcmp(argv[3], "huge") == 0;
  char* p = fresh(bytes);
  auto start = std::chrono::steady_clock::now();
  std::memset(p, 1, bytes);
  double first = seconds_since(start);
  start = std::chrono::steady_clock::now();
  std::memset(p, 2, bytes);
  double again = seconds_since(start);
  ::munmap(p, bytes);

  char* q = fresh(bytes);
  start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  const size_t piece = (bytes / size_t(threads) + 4095) / 4096 * 4096;
  bool populated = true;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      size_t from = std::min(bytes, size_t(t) * piece), to = std::min(bytes, from + piece);
      if (to > from && ::madvise(q + from, to - from, MADV_POPULATE_WRITE) != 0) populated = false;
    });
  for (auto& worker : workers) worker.join();
  double populate = seconds_since(start);
  start = std::chrono::steady_clock::now();
  std::memset(q, 3, bytes);
  double after_populate = seconds_since(start);
  ::munmap(q, bytes);

  std::printf(
      "%zu MiB%s: first write %.3f s, second write %.3f s; MADV_POPULATE_WRITE on %d threads %.3f s%s, "
      "then the write %.3f s\n",
      bytes >> 20, huge ? " (huge pages)" : "", first, again, threads, populate,
      populated ? "" : " (not supported: skipped)", after_populate);
}
