// Internal: handing the heap's free pages back to the kernel between phases.
#pragma once

#include <cstdlib>  // defines __GLIBC__ under glibc, before it is tested

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace tracelane {

// Hands the heap's free pages back to the kernel (glibc's malloc_trim; elsewhere nothing).
// Between phases whose working sets are allocated on different threads: another thread's
// allocations cannot reuse this thread's free pages, and would add to them.
inline void give_back_free_pages() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace tracelane
