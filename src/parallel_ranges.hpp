// Work split over indices or index ranges, run concurrently in the caller's TBB arena,
// with the TSan hand-offs (tsan_handoff.hpp) and the errors of a serial walk: merge's
// ranks and the compaction passes' walks over one trace's events. Private to the core.
#pragma once

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <functional>
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

// What the ranges of [0, count) pick (pick(k) true), as make(k), in index order, in a
// vector of exactly their number: each range counts its picks, then writes them at its
// place, concurrently as for_each_range. A second walk, where parts grown by doubling and
// then joined held up to three times the result at once (bench/README.md, "Event records and the memory peak").
template <class T, class Pick, class Make>
std::vector<T> pick_in_order(size_t count, const Pick& pick, const Make& make) {
  std::vector<size_t> picked = gather_ranges<size_t>(count, [&](size_t begin, size_t end, size_t& n) {
    for (size_t k = begin; k < end; ++k) n += pick(k) ? 1 : 0;
  });
  std::vector<size_t> first(picked.size() + 1, 0);
  for (size_t r = 0; r < picked.size(); ++r) first[r + 1] = first[r] + picked[r];
  std::vector<T> out(first.back());
  for_each_range(count, [&](size_t r, size_t begin, size_t end) {
    T* at = out.data() + first[r];
    for (size_t k = begin; k < end; ++k)
      if (pick(k)) *at++ = make(k);
  });
  return out;
}

// Merges sorted [a, a_end) and [b, b_end), which hold no item twice (`less` tells any two
// apart), into `out`, as pieces appended to `merges` to run concurrently: the longer input
// is cut every events_per_range items, the other where the cut's item would go, so each
// piece's items all come before the next piece's, and the pieces make one std::merge.
template <class It, class Out, class Less>
void add_merge_pieces(It a, It a_end, It b, It b_end, Out out, const Less& less,
                      std::vector<std::function<void()>>& merges) {
  if (a_end - a < b_end - b) return add_merge_pieces(b, b_end, a, a_end, out, less, merges);
  while (a != a_end) {
    It a_cut = size_t(a_end - a) > events_per_range ? a + ptrdiff_t(events_per_range) : a_end;
    It b_cut = a_cut == a_end ? b_end : std::lower_bound(b, b_end, *a_cut, less);
    merges.push_back([=, &less] { std::merge(a, a_cut, b, b_cut, out, less); });
    out += (a_cut - a) + (b_cut - b);
    a = a_cut, b = b_cut;
  }
  if (b != b_end) merges.push_back([=] { std::copy(b, b_end, out); });
}

// Runs the merges (add_merge_pieces) concurrently.
inline void run_merges(std::vector<std::function<void()>>& merges) {
  for_each_index(merges.size(), [&](size_t k) { merges[k](); });
  merges.clear();
}

// Sorts `items` by `less`, which must tell any two distinct items apart (make the item's
// index the last key), so that every split gives the order of one std::sort, and of a
// stable sort by the other keys: runs of events_per_range items are sorted concurrently,
// then merged pairwise, each round's merges in pieces, concurrently. Items already in
// order are left after one look at each pair (a trace lists most lanes' slices in time
// order: 16 of gen600's 18 lists), which a failed look leaves early.
template <class T, class Less>
void sort_distinct(std::vector<T>& items, const Less& less) {
  if (std::is_sorted(items.begin(), items.end(), less)) return;
  if (range_count(items.size()) <= 1 || tbb::this_task_arena::max_concurrency() <= 1) {
    std::sort(items.begin(), items.end(), less);
    return;
  }
  for_each_range(items.size(), [&](size_t, size_t begin, size_t end) {
    std::sort(items.begin() + ptrdiff_t(begin), items.begin() + ptrdiff_t(end), less);
  });
  std::vector<T> merged(items.size());
  std::vector<std::function<void()>> merges;
  for (size_t width = events_per_range; width < items.size(); width *= 2) {
    for (size_t begin = 0; begin < items.size(); begin += 2 * width) {
      const size_t middle = std::min(items.size(), begin + width), end = std::min(items.size(), begin + 2 * width);
      const auto at = [&](size_t i) { return items.begin() + ptrdiff_t(i); };
      add_merge_pieces(at(begin), at(middle), at(middle), at(end), merged.begin() + ptrdiff_t(begin), less, merges);
    }
    run_merges(merges);
    items.swap(merged);
  }
}

}  // namespace tracelane
