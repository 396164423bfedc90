// Self-validation (SPEC 6), the compaction's last pass (compact.cpp runs it).
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "annotations.hpp"
#include "compaction.hpp"
#include "parallel_ranges.hpp"
#include "tracelane/classify.hpp"
#include "tracelane/timings.hpp"

namespace tracelane {

// Self-validation (SPEC 6), from the events as they will be written: the same slices,
// unchanged but for tid (args.stream too stays as recorded), and no two overlapping on one lane. The events
// are checked over ranges concurrently, and the lanes each sorted concurrently; the first
// failure in event order (then in lane order) is the one reported.
void validate(Compaction& c) {
  Timings::Scope t(c.timings, "validate");
  const Trace& trace = c.trace;
  const SliceSet& set = c.slices;
  // args.stream stays as recorded (SPEC 9.14), or is put back to it (SPEC 9.8).
  constexpr uint8_t allowed_changes = uint8_t(1u << kTid);
  // The measured slices' indices and their lanes' counts, checked in one walk over ranges;
  // then each lane's intervals, in vectors of exactly their size (a trace holds hundreds of
  // thousands of slices: grown by doubling, they were 40 MB of gen600's peak; bench/README.md).
  struct Placed {
    std::vector<uint32_t> slices;                     // event indices
    std::vector<std::pair<int64_t, size_t>> lanes;    // tid and its slices, in order of first slice
    std::unordered_map<int64_t, size_t> lane_number;  // tid -> its place in lanes
  };
  std::vector<Placed> placed = gather_ranges<Placed>(trace.events.size(), [&](size_t begin, size_t end, Placed& part) {
    for (size_t i = begin; i < end; ++i) {
      const Event& event = trace.events[i];
      bool measured = is_measured_cat(event.cat);
      if (!measured && !(i < set.is_slice.size() && set.is_slice[i])) continue;
      if (!measured && event.dropped) continue;
      if (event.dropped) throw Error(where(trace, i) + ": validation: a measured slice was dropped");
      const uint8_t stream_put_back = event.original_stream_text().empty() ? 0 : uint8_t(1u << kStream);
      if (event.changed & ~(allowed_changes | stream_put_back))
        throw Error(where(trace, i) + ": validation: a measured slice changed more than its placement");
      if (!((event.changed >> kTid) & 1))
        throw Error(where(trace, i) + ": validation: a measured slice was not placed on a lane");
      part.slices.push_back(uint32_t(i));
      auto [it, first] = part.lane_number.try_emplace(event.final_tid(), part.lanes.size());
      if (first) part.lanes.push_back({event.final_tid(), 0});
      ++part.lanes[it->second].second;
    }
  });
  size_t count = 0;
  for (const auto& part : placed) count += part.slices.size();
  if (count != c.slice_count)
    throw Error(trace.source + ": validation: " + std::to_string(c.slice_count) + " slices in, " +
                std::to_string(count) + " out");
  // Lanes in the order of a map filled in event order, as the message names the first.
  std::unordered_map<int64_t, std::vector<std::pair<Ns, Ns>>> by_lane;
  std::unordered_map<int64_t, size_t> per_lane;
  for (const auto& part : placed)
    for (const auto& [tid, slices] : part.lanes) {
      by_lane.try_emplace(tid);
      per_lane[tid] += slices;
    }
  for (auto& [tid, intervals] : by_lane) intervals.reserve(per_lane[tid]);
  for (Placed& part : placed) {
    for (uint32_t i : part.slices) {
      const Event& event = trace.events[i];
      by_lane[event.final_tid()].push_back({event.final_ts(), event.final_ts() + event.final_dur()});
    }
    part = Placed();
  }
  std::vector<std::pair<const int64_t, std::vector<std::pair<Ns, Ns>>>*> lanes;
  for (auto& entry : by_lane) lanes.push_back(&entry);
  auto check_lane = [&](size_t k) {
    auto& [tid, intervals] = *lanes[k];
    if (!std::is_sorted(intervals.begin(), intervals.end())) std::sort(intervals.begin(), intervals.end());
    for (size_t j = 1; j < intervals.size(); ++j)
      if (intervals[j].first < intervals[j - 1].second)
        throw Error(trace.source + ": validation: slices overlap on lane tid " + std::to_string(tid));
  };
  if (count < events_per_range) {
    for (size_t k = 0; k < lanes.size(); ++k) check_lane(k);
  } else {
    for_each_index(lanes.size(), check_lane);
  }
}

}  // namespace tracelane
