// Lane packing is interval-graph colouring. Visiting intervals by start time and giving
// each the lowest-numbered lane that is free at that start is optimal: a new lane opens
// only when every existing lane is busy at this start, i.e. when the overlap depth there
// exceeds the lanes open so far, so the count equals the maximum overlap depth. "Free"
// means last end <= start, so touching and zero-length slices share a lane.
//
// Two heaps keep this O(n log n): busy lanes by their last end, free lanes by number
// (pack_lanes.hpp, which a caller with intervals inside larger records uses directly).
#include "tracelane/lanes.hpp"

#include <numeric>

#include "pack_lanes.hpp"

namespace tracelane {

std::vector<uint32_t> assign_lanes(const std::vector<Interval>& intervals, uint32_t& lane_count) {
  std::vector<uint32_t> order(intervals.size());
  std::iota(order.begin(), order.end(), 0u);
  std::vector<uint32_t> lane_of(intervals.size());
  lane_count = pack_lanes(
      order, [&](uint32_t k) { return intervals[k]; }, [&](uint32_t k, uint32_t lane) { lane_of[k] = lane; });
  return lane_of;
}

}  // namespace tracelane
