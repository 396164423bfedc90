// Greedy interval partitioning (SPEC 4).
#pragma once

#include <cstdint>
#include <vector>

#include "tracelane/trace.hpp"

namespace tracelane {

struct Interval {
  Ns start = 0, end = 0;
};

// Assigns each interval a lane number (0-based) so that no two intervals on a lane
// overlap, using the fewest lanes. Intervals are visited in (start, end) order with ties
// in input order; an interval takes the lowest-numbered lane whose last end <= its start.
// Returns the lane of each interval (in input order); `lane_count` gets the number used.
std::vector<uint32_t> assign_lanes(const std::vector<Interval>& intervals, uint32_t& lane_count);

}  // namespace tracelane
