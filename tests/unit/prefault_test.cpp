// prefault (src/prefault.hpp): the pages of a buffer are made on the arena's threads
// before the buffer is written, and what the buffer holds is left as it is.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "prefault.hpp"

using namespace tracelane;

namespace {

constexpr size_t kBytes = size_t(16) << 20;

// How many of the pages of [p, p + bytes) are resident.
size_t resident_pages(void* p, size_t bytes) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((bytes + page - 1) / page);
  if (::mincore(p, bytes, in_core.data()) != 0) ADD_FAILURE() << "mincore: " << std::strerror(errno);
  size_t resident = 0;
  for (unsigned char c : in_core) resident += c & 1;
  return resident;
}

bool kernel_populates() {
  void* probe = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  bool ok = probe != MAP_FAILED && ::madvise(probe, 4096, MADV_POPULATE_WRITE) == 0;
  if (probe != MAP_FAILED) ::munmap(probe, 4096);
  return ok;
}

TEST(Prefault, MakesEveryPageOfAFreshBufferResidentOnOneThreadOrTwo) {
  if (!kernel_populates())
    GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux < 5.14): prefault does nothing";
  for (int threads : {1, 2}) {
    void* p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    (void)::madvise(p, kBytes, MADV_NOHUGEPAGE);  // count 4 KiB pages, whatever THP's mode
    ASSERT_EQ(resident_pages(p, kBytes), 0u);
    tbb::task_arena(threads).execute([&] { prefault(p, kBytes); });
    EXPECT_EQ(resident_pages(p, kBytes), kBytes / size_t(::sysconf(_SC_PAGESIZE))) << threads << " thread(s)";
    ::munmap(p, kBytes);
  }
}

TEST(Prefault, LeavesASmallBufferToItsFirstWrite) {
  void* p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  (void)::madvise(p, kBytes, MADV_NOHUGEPAGE);
  tbb::task_arena(2).execute([&] { prefault(p, kPrefaultPieceBytes); });
  EXPECT_EQ(resident_pages(p, kBytes), 0u);
  ::munmap(p, kBytes);
}

TEST(Prefault, LeavesWhatABufferHoldsAsItIs) {
  std::string text(kBytes + 12345, '\0');
  for (size_t i = 0; i < text.size(); ++i) text[i] = char('a' + i % 23);
  const std::string before = text;
  // An unaligned start and end: only whole pages inside the buffer are advised.
  tbb::task_arena(4).execute([&] { prefault(text.data() + 7, text.size() - 7); });
  EXPECT_EQ(text, before);
}

}  // namespace
