// The tids of the tracks tracelane makes: lanes, annotation tracks and their sub-tracks
// (SPEC 9.11: the same track gets the same tid on every rank of a job).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "tracelane/trace.hpp"

namespace tracelane {

// Which track of a lane: its slices, its annotation track, or annotation sub-track n
// ("<label> annotations (n)", n >= 2).
inline constexpr uint32_t kLaneTrack = 0;
inline constexpr uint32_t kAnnotationTrack = 1;

struct TrackKey {
  uint32_t gpu = 0;     // the lane's pid among the trace's GPU pids, in ascending order
  uint32_t group = 0;   // the lane's group, in the rules' group order
  uint32_t number = 0;  // the lane's 0-based number within (pid, group)
  uint32_t track = 0;   // kLaneTrack, kAnnotationTrack, or the sub-track's n
  auto operator<=>(const TrackKey&) const = default;
};

// Hands out track tids (see track_tids.cpp for the rule). One per compacted trace; a
// merge asks it again for the sub-tracks it redoes.
class TrackTids {
 public:
  // Aligned tids are 1'PP'GG'NNNN'T in decimal: PP the gpu, GG the group, NNNN the lane
  // number, T the track. Below 2^31, so viewers that keep tids in 32 bits read them too.
  static constexpr int64_t kFirst = 1000000000;
  static constexpr int64_t kEnd = 2000000000;
  static constexpr uint32_t kGpus = 100, kGroups = 100, kNumbers = 10000, kTracks = 10;

  TrackTids() = default;
  // Reads the integer tids of the trace's events: none of them is ever handed out.
  // `largest_tid` is the largest among them when known (Trace::max_int_tid): below kFirst,
  // no tid can be one a track wants, and the events are not read.
  explicit TrackTids(const std::vector<Event>& events, int64_t largest_tid = INT64_MAX);

  // The aligned tid of `key`, when its numbers fit the digits.
  static std::optional<int64_t> aligned(const TrackKey& key);
  // The tid of `key`: the same on every call; its aligned tid unless the trace already
  // uses that one (or there is none), else the next tid above every tid of the trace.
  int64_t tid(const TrackKey& key);
  // Keys that could not have their aligned tid.
  size_t unaligned() const { return unaligned_; }

 private:
  std::set<int64_t> input_from_first_;  // input tids >= kFirst (the only ones that can collide)
  int64_t next_fallback_ = kEnd;
  std::map<TrackKey, int64_t> given_;
  size_t unaligned_ = 0;
};

}  // namespace tracelane
