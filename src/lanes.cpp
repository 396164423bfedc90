// Lane packing is interval-graph colouring. Visiting intervals by start time and giving
// each the lowest-numbered lane that is free at that start is optimal: a new lane opens
// only when every existing lane is busy at this start, i.e. when the overlap depth there
// exceeds the lanes open so far, so the count equals the maximum overlap depth. "Free"
// means last end <= start, so touching and zero-length slices share a lane.
//
// Two heaps keep this O(n log n): busy lanes by their last end, free lanes by number.
#include "tracelane/lanes.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>

#include "parallel_ranges.hpp"

namespace tracelane {

std::vector<uint32_t> assign_lanes(const std::vector<Interval>& intervals, uint32_t& lane_count) {
  std::vector<uint32_t> order(intervals.size());
  std::iota(order.begin(), order.end(), 0u);
  sort_distinct(order, [&](uint32_t a, uint32_t b) {  // by (start, end), ties in input order
    const Interval &x = intervals[a], &y = intervals[b];
    return x.start != y.start ? x.start < y.start : x.end != y.end ? x.end < y.end : a < b;
  });
  using Busy = std::pair<Ns, uint32_t>;  // (last end, lane)
  std::priority_queue<Busy, std::vector<Busy>, std::greater<>> busy;
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> free_lanes;
  std::vector<uint32_t> lane_of(intervals.size());
  lane_count = 0;
  for (uint32_t index : order) {
    const Interval& interval = intervals[index];
    while (!busy.empty() && busy.top().first <= interval.start) {
      free_lanes.push(busy.top().second);
      busy.pop();
    }
    uint32_t lane;
    if (free_lanes.empty()) {
      lane = lane_count++;
    } else {
      lane = free_lanes.top();
      free_lanes.pop();
    }
    lane_of[index] = lane;
    busy.emplace(interval.end, lane);
  }
  return lane_of;
}

}  // namespace tracelane
