// Compaction of one trace (SPEC 2-7): measured GPU slices repacked into semantic lanes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tracelane/lanes.hpp"
#include "tracelane/pp_flows.hpp"
#include "tracelane/summary.hpp"
#include "tracelane/trace.hpp"
#include "tracelane/trace_output.hpp"
#include "tracelane/track_tids.hpp"

namespace tracelane {

class Rules;
class Timings;

struct CompactOptions {
  const Rules* rules = nullptr;  // classification and PP rules (SPEC 9.9); null: built-in
  bool pp_flows = true;          // single-trace rank-local and unshard arrows (SPEC 7)
  bool force = false;            // compact a trace that is already laned (SPEC 9.8)
  bool restore_data = true;      // write what restores the original (SPEC 9.12)
  Timings* timings = nullptr;
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
// and for a failed self-validation (SPEC 6). With options.timings, each pass is a phase
// there, at the depth compact_trace is called.
CompactedTrace compact_trace(Trace trace, const CompactOptions& options);

// Redoes the annotation sub-tracks and lane metadata after the trace's times moved
// (merge shifts ranks): where spans cross depends on the numbers Perfetto reads.
void rebuild_annotation_tracks(CompactedTrace& compacted);

// What the compacted trace's text is made of, for write_trace_text (trace_output.hpp),
// which writes it in blocks; it points into `compacted`.
TraceText compacted_text(const CompactedTrace& compacted);
// The compacted trace as JSON text (uncompressed), whole.
std::string write_compacted(const CompactedTrace& compacted);

// Gathers gpu_user_annotation X spans (output coordinates) for PP block building.
std::vector<AnnotationSpan> collect_annotation_spans(const Trace& trace);

inline constexpr const char* kMeasurementPolicy =
    "visualization only; measured GPU slices unchanged; overlapping identical GPU annotations coalesced; "
    "per-kernel CUDA graph annotations converted to lane-local spans";

}  // namespace tracelane
