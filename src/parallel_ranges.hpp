// Work split over indices or index ranges, run concurrently in the caller's TBB arena,
// with the TSan hand-offs (tsan_handoff.hpp) and the errors of a serial walk: merge's
// ranks and the compaction passes' walks over one trace's events. Private to the core.
#pragma once

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <vector>

#include "tsan_handoff.hpp"

namespace tracelane {

// Calls work(k) for every k in [0, count), concurrently in the caller's arena (isolated:
// a thread waiting here takes no other file's job). Each call's writes are the
// caller's again once this returns. When calls throw, the lowest k's exception is rethrown
// (after every call has ended): the one a serial loop over k would have thrown.
template <class Work>
void for_each_index(size_t count, const Work& work) {
  std::vector<std::exception_ptr> failures(count);
  // The task is made before the hand-off to the workers, for TSan: parallel_for calls it
  // through a reference.
  auto task = [&](size_t k) {
    tsan_acquire(&tsan_task_start);
    try {
      work(k);
    } catch (...) {
      failures[k] = std::current_exception();
    }
    tsan_release(&failures[k]);
  };
  tsan_release(&tsan_task_start);
  tbb::this_task_arena::isolate([&] { tbb::parallel_for(size_t(0), count, task); });
  for (const std::exception_ptr& failure : failures) tsan_acquire(&failure);
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

// A walk over one trace's events is split into ranges of this many: fixed, so that the
// ranges (and whatever is gathered per range) are the same for every thread count, and
// large enough that a small trace is one range, walked on the calling thread. Tests
// lower it to split small traces, or raise it to walk big ones in one range as before.
inline size_t events_per_range = size_t(64) * 1024;

inline size_t range_count(size_t count) { return count == 0 ? 0 : (count - 1) / events_per_range + 1; }

// Calls work(r, begin, end) for the r-th of range_count(count) consecutive ranges of
// [0, count), concurrently unless there is one range or one thread. A work that stops at
// its range's first bad index thus reports the lowest bad index overall, as a serial walk
// would: ranges are in index order and the lowest range's exception is the one rethrown.
template <class Work>
void for_each_range(size_t count, const Work& work) {
  const size_t ranges = range_count(count), size = events_per_range;
  auto run = [&](size_t r) { work(r, r * size, std::min(count, (r + 1) * size)); };
  if (ranges <= 1 || tbb::this_task_arena::max_concurrency() <= 1) {
    for (size_t r = 0; r < ranges; ++r) run(r);
    return;
  }
  for_each_index(ranges, run);
}

// What each of the ranges of [0, count) gathers, in range order: work(begin, end, part)
// fills its range's part (made here, and a local of the task until its range is done:
// neighbouring ranges' parts would share a cache line), concurrently as for_each_range.
template <class Part, class Work>
std::vector<Part> gather_ranges(size_t count, const Work& work) {
  std::vector<Part> parts(range_count(count));
  for_each_range(count, [&](size_t r, size_t begin, size_t end) {
    Part part{};
    work(begin, end, part);
    parts[r] = std::move(part);
  });
  return parts;
}

// Sorts `items` by `less`, which must tell any two distinct items apart (make the item's
// index the last key), so that every split gives the order of one std::sort, and of a
// stable sort by the other keys: runs of events_per_range items are sorted concurrently,
// then merged pairwise, each round's merges concurrently.
template <class T, class Less>
void sort_distinct(std::vector<T>& items, const Less& less) {
  if (range_count(items.size()) <= 1 || tbb::this_task_arena::max_concurrency() <= 1) {
    std::sort(items.begin(), items.end(), less);
    return;
  }
  for_each_range(items.size(), [&](size_t, size_t begin, size_t end) {
    std::sort(items.begin() + ptrdiff_t(begin), items.begin() + ptrdiff_t(end), less);
  });
  std::vector<T> merged(items.size());
  for (size_t width = events_per_range; width < items.size(); width *= 2) {
    const size_t pairs = (items.size() - 1) / (2 * width) + 1;
    for_each_index(pairs, [&](size_t k) {
      const size_t begin = 2 * k * width, middle = std::min(items.size(), begin + width),
                   end = std::min(items.size(), begin + 2 * width);
      const auto at = [&](size_t i) { return items.begin() + ptrdiff_t(i); };
      std::merge(at(begin), at(middle), at(middle), at(end), merged.begin() + ptrdiff_t(begin), less);
    });
    items.swap(merged);
  }
}

// One sorted vector of `parts`, each sorted by T's operator<, which must tell any two
// distinct items apart: merged pairwise, each round's merges concurrently, each part freed
// as soon as it is merged (the items are held about once, not twice).
template <class T>
std::vector<T> merge_sorted_parts(std::vector<std::vector<T>> parts) {
  while (parts.size() > 1) {
    std::vector<std::vector<T>> merged((parts.size() + 1) / 2);
    for_each_index(parts.size() / 2, [&](size_t k) {
      std::vector<T>&a = parts[2 * k], &b = parts[2 * k + 1];
      merged[k].resize(a.size() + b.size());
      std::merge(a.begin(), a.end(), b.begin(), b.end(), merged[k].begin());
      std::vector<T>().swap(a);
      std::vector<T>().swap(b);
    });
    if (parts.size() % 2 == 1) merged.back() = std::move(parts.back());
    parts = std::move(merged);
  }
  return parts.empty() ? std::vector<T>{} : std::move(parts.front());
}

}  // namespace tracelane
