// Items made concurrently and handed on in order: the shape of the gzip members
// (gzip.cpp) and of the streamed write's blocks (trace_output.cpp). Private to the core.
#pragma once

#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "tsan_handoff.hpp"

namespace tracelane {

// Hands a stage's writes on when the stage ends, also by an exception (a make or a put
// that throws has written too: the caller frees what it wrote).
struct ReleaseOnExit {
  const void* tag;
  ~ReleaseOnExit() { tsan_release(tag); }
};

// Calls make(k) for every k in [0, items), concurrently in the caller's TBB arena, and
// put(k) for each in order of k, as soon as it and those before it are made; at most two
// items a thread are in flight. Items are numbers: what make(k) produces waits in the
// caller's own slot k until put(k) takes it, so an exception (from make or put), which
// stops the rest and is rethrown, leaves no owning object in the pipeline's buffers; the
// slots made but never put are the caller's again to free.
template <class Make, class Put>
void in_order_pipeline(size_t items, const Make& make, const Put& put) {
  // The hand-offs, for TSan (tsan_handoff.hpp): this thread -> the input stage (`next`),
  // the input stage -> item k's task -> the output stage (`handed[k]`), one output call ->
  // the next and -> this thread afterwards (`put`). The stages are made before them: the
  // pipeline runs them from its nodes.
  std::vector<char> handed(items);
  size_t next = 0;
  auto take = [&](tbb::flow_control& control) -> size_t {
    tsan_acquire(&tsan_task_start);
    tsan_acquire(&next);
    if (next == items) {
      control.stop();
      tsan_release(&next);
      return 0;
    }
    size_t k = next++;
    tsan_release(&handed[k]);
    tsan_release(&next);
    return k;
  };
  auto make_one = [&](size_t k) {
    tsan_acquire(&tsan_task_start);
    tsan_acquire(&handed[k]);
    ReleaseOnExit made{&handed[k]};
    make(k);
    return k;
  };
  auto put_one = [&](size_t k) {
    tsan_acquire(&tsan_task_start);
    tsan_acquire(&handed[k]);
    tsan_acquire(&put);
    ReleaseOnExit done{&put};
    put(k);
  };
  tbb::filter<void, void> stages = tbb::make_filter<void, size_t>(tbb::filter_mode::serial_in_order, take) &
                                   tbb::make_filter<size_t, size_t>(tbb::filter_mode::parallel, make_one) &
                                   tbb::make_filter<size_t, void>(tbb::filter_mode::serial_in_order, put_one);
  const size_t tokens = size_t(std::max(1, tbb::this_task_arena::max_concurrency())) * 2;
  tsan_release(&tsan_task_start);
  tsan_release(&next);
  tsan_release(&put);
  try {
    tbb::parallel_pipeline(tokens, stages);
  } catch (...) {
    for (const char& item : handed) tsan_acquire(&item);  // made, never put: the caller's
    tsan_acquire(&next);
    tsan_acquire(&put);  // what the put that threw wrote (a slot it moved from)
    throw;
  }
  tsan_acquire(&next);  // the input stage's last call, which stopped it
  tsan_acquire(&put);
}

}  // namespace tracelane
