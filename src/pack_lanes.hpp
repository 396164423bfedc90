// Internal: the lane packing of lanes.cpp (SPEC 4) over items the caller names, so that a
// caller whose intervals are fields of larger records packs them where they are: no copy
// of the intervals, no visiting order and no lanes beside them (for a trace's compute
// slices, ~16 MiB of a 565 MB trace's peak).
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <type_traits>
#include <utility>
#include <vector>

#include "parallel_ranges.hpp"

namespace tracelane {

// Packs `items` (distinct, in the order whose ties are kept: ascending) into the fewest
// lanes: `interval_of(item)` gives an item's interval (anything with `start` and `end`, an
// Interval of lanes.hpp), and `set_lane(item, lane)` is told each one's lane. `items` is
// left in visiting order, (start, end) with ties by item. Returns the number of lanes.
template <class IntervalOf, class SetLane>
uint32_t pack_lanes(std::vector<uint32_t>& items, const IntervalOf& interval_of, const SetLane& set_lane) {
  sort_distinct(items, [&](uint32_t a, uint32_t b) {
    const auto x = interval_of(a), y = interval_of(b);
    return x.start != y.start ? x.start < y.start : x.end != y.end ? x.end < y.end : a < b;
  });
  using End = std::decay_t<decltype(interval_of(uint32_t()).end)>;
  using Busy = std::pair<End, uint32_t>;  // (last end, lane)
  std::priority_queue<Busy, std::vector<Busy>, std::greater<>> busy;
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> free_lanes;
  uint32_t lane_count = 0;
  for (uint32_t item : items) {
    const auto interval = interval_of(item);
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
    set_lane(item, lane);
    busy.emplace(interval.end, lane);
  }
  return lane_count;
}

}  // namespace tracelane
