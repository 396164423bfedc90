// What PP arrows (SPEC 7) are made from: the GPU annotation spans and, per GPU pid, which
// annotation tracks hold compute and unshard blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tracelane/trace.hpp"

namespace tracelane {

// One gpu_user_annotation X span, in output coordinates (after moves and merge shifts).
struct AnnotationSpan {
  int64_t pid = 0, tid = 0;
  Ns start = 0, end = 0;
  std::string_view name;
};

// What a GPU pid's annotation tracks are, for block building.
struct PidTracks {
  int64_t pid = 0;
  int pp_rank = 0;
  std::optional<int64_t> main_compute_track;    // annotation track of the first compute lane
  std::vector<int64_t> main_compute_subtracks;  // split off it so Perfetto nests them (SPEC 9.6)
  std::vector<int64_t> unshard_tracks;          // annotation tracks (and sub-tracks) of the first two all-gather lanes
};

}  // namespace tracelane
