// Lanes: greedy interval partitioning (SPEC 4), and the compacted lane it makes.
#pragma once

#include <cstdint>
#include <string>
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

// One compacted lane and its annotation track.
struct Lane {
  int64_t pid = 0;
  uint32_t gpu = 0;      // the pid's place among the trace's GPU pids (ascending)
  int group = 0;         // index into the rules' groups
  std::string group_id;  // "compute", "nccl_all_gather", ...
  uint32_t number = 0;   // 0-based within (pid, group)
  uint32_t lanes_in_group = 1;
  int64_t tid = 0;
  int64_t annotation_tid = 0;
  std::vector<int64_t> annotation_subtracks;  // "<label> annotations (2)", ... (SPEC 9.6)
  std::string label;
  std::vector<uint32_t> slices;  // event indices, in (start, end) order
};

}  // namespace tracelane
