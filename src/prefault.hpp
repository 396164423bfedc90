// Fresh memory on every core. The first write to a fresh page makes the kernel zero it,
// and on the machines we measured that costs more than the work done in the page
// afterwards for the input text and the event records of a large trace (bench/README.md,
// "Fresh pages"), all of it on the one thread that writes first.
// prefault() has the kernel make the pages of a buffer about to be written, on every
// thread of the arena at once, without writing to them (MADV_POPULATE_WRITE, Linux 5.14):
// the buffer's contents are unchanged, so it may be called on reserved but unused memory.
// Even on one thread it is cheaper than faulting the pages in one at a time (the same
// section; bench/fresh_pages measures both).
// Where the kernel does not know the advice it does nothing, and the first write pays as
// before. Private to the core.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "parallel_ranges.hpp"

namespace tracelane {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

// Below this a buffer is not worth the tasks; pieces are this size (a huge page).
inline constexpr size_t kPrefaultPieceBytes = size_t(2) << 20;

inline void prefault(void* begin, size_t bytes) {
  if (bytes < 4 * kPrefaultPieceBytes) return;
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (uintptr_t(begin) + page - 1) / page * page;  // whole pages only
  const uintptr_t last = (uintptr_t(begin) + bytes) / page * page;
  if (last <= first) return;
  const size_t pieces = (last - first + kPrefaultPieceBytes - 1) / kPrefaultPieceBytes;
  for_each_index(pieces, [&](size_t k) {
    uintptr_t from = first + k * kPrefaultPieceBytes;
    uintptr_t to = from + kPrefaultPieceBytes < last ? from + kPrefaultPieceBytes : last;
    (void)::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
  });
}

// The opposite, for memory written once and no longer needed but still allocated (the
// tail of a buffer that grew beyond what it came to hold): its whole pages go back to the
// kernel, and read as zeros if they are ever touched again. Only for memory whose contents
// no one reads.
inline void release_pages(void* begin, size_t bytes) {
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (uintptr_t(begin) + page - 1) / page * page;
  const uintptr_t last = (uintptr_t(begin) + bytes) / page * page;
  if (last > first) (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace tracelane
