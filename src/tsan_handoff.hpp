// Telling ThreadSanitizer of oneTBB's hand-offs. Debian's libtbb is not built with TSan
// (tests/tsan.supp), so TSan cannot see a task handed to a worker, nor a parallel
// algorithm's wait for its tasks: it would report every byte a task touches after the
// thread that made it, or that the caller reads after the task. tsan_release(tag) in the
// thread that hands data on and tsan_acquire(tag) in the one that takes it tell it of
// exactly those hand-offs, which oneTBB makes, and no others: tasks stay unordered among
// themselves, so a race between two of them is still reported. Nothing outside TSan
// builds. Private to the core.
#pragma once

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace tracelane {

// The tag every task takes over from the thread that started it: a global, so that a task
// names it before it reads anything (a lambda's captures are the thread's writes too).
inline char tsan_task_start;

inline void tsan_release([[maybe_unused]] const void* tag) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(const_cast<void*>(tag));
#endif
}

inline void tsan_acquire([[maybe_unused]] const void* tag) {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(const_cast<void*>(tag));
#endif
}

}  // namespace tracelane
