// Compaction of one trace (SPEC 2-7): measured GPU slices repacked into semantic lanes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tracelane/pp_flows.hpp"
#include "tracelane/trace.hpp"
#include "tracelane/track_tids.hpp"

namespace tracelane {

class Rules;
class Timings;

struct CompactOptions {
  const Rules* rules = nullptr;  // classification and PP rules (SPEC 9.9); null: built-in
  bool pp_flows = true;  // single-trace rank-local and unshard arrows (SPEC 7)
  bool force = false;    // compact a trace that is already laned (SPEC 9.8)
  bool restore_data = true;  // write what restores the original (SPEC 9.12)
  Timings* timings = nullptr;
};

// One compacted lane and its annotation track.
struct Lane {
  int64_t pid = 0;
  uint32_t gpu = 0;       // the pid's place among the trace's GPU pids (ascending)
  int group = 0;          // index into the rules' groups
  std::string group_id;   // "compute", "nccl_all_gather", ...
  uint32_t number = 0;    // 0-based within (pid, group)
  uint32_t lanes_in_group = 1;
  int64_t tid = 0;
  int64_t annotation_tid = 0;
  std::vector<int64_t> annotation_subtracks;  // "<label> annotations (2)", ... (SPEC 9.6)
  std::string label;
  std::vector<uint32_t> slices;  // event indices, in (start, end) order
};

struct CompactSummary {
  size_t measured_slices = 0;
  size_t original_streams = 0;
  size_t compacted_lanes = 0;
  std::map<std::string, size_t> slice_groups, lanes_by_group;
  size_t gpu_flow_endpoints_mapped = 0;
  size_t gpu_flow_endpoints_unmapped = 0;  // SPEC 9.2
  size_t gpu_annotations_mapped = 0;
  size_t gpu_annotations_coalesced = 0;
  size_t kernel_annotations_converted = 0;
  size_t kernel_annotation_blocks = 0;
  size_t gpu_annotations_retained = 0;
  size_t annotation_subtracks = 0;  // extra tracks made so annotations nest (SPEC 9.6)
  size_t lane_tids_unaligned = 0;   // tracks that could not have their aligned tid (SPEC 9.11)
  size_t cuda_graph_launches = 0;
  bool has_pp = false;  // single-trace arrows were computed
  int pp_rank = 0;
  PpCounts pp;
};

struct CompactedTrace {
  // SPEC 9.8: newer exporters lane CUDA-graph kernels themselves. Such a trace is left as
  // it is (unless CompactOptions::force): `already_laned` says why nothing was done.
  std::string already_laned;
  Trace trace;
  std::vector<Lane> lanes;  // in (pid, group, number) order
  std::vector<PidTracks> pid_tracks;
  TrackTids track_tids;  // kept for the sub-tracks a merge redoes
  CompactSummary summary;
  bool restore_data = true;  // CompactOptions::restore_data, for the writers
};

// Why a trace is already laned (SPEC 9.8), or "" when it is not.
std::string already_laned_reason(const Trace& trace);

// Compacts in memory. Throws Error("<source>: event #i (byte b): ...") for SPEC 2 errors
// and for a failed self-validation (SPEC 6).
CompactedTrace compact_trace(Trace trace, const CompactOptions& options);

// Redoes the annotation sub-tracks and lane metadata after the trace's times moved
// (merge shifts ranks): where spans cross depends on the numbers Perfetto reads.
void rebuild_annotation_tracks(CompactedTrace& compacted);

// The compacted trace as JSON text (uncompressed).
std::string write_compacted(const CompactedTrace& compacted);

// The pp_rank of a trace from its own distributedInfo (SPEC 7, 0 when unusable).
int single_trace_pp_rank(const Trace& trace);

// Gathers gpu_user_annotation X spans (output coordinates) for PP block building.
std::vector<AnnotationSpan> collect_annotation_spans(const Trace& trace);

inline constexpr const char* kMeasurementPolicy =
    "visualization only; measured GPU slices unchanged; overlapping identical GPU annotations coalesced; "
    "per-kernel CUDA graph annotations converted to lane-local spans";

}  // namespace tracelane
