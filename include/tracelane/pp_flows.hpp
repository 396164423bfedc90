// Pipeline-parallel arrows (SPEC 7): blocks from PP:<action> annotation spans, pairing by
// nearest midpoint, and the flow events between them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracelane/pp_spans.hpp"
#include "tracelane/rules.hpp"
#include "tracelane/trace.hpp"

namespace tracelane {

struct PpCounts {
  size_t send_recv_pairs = 0, send_recv_unmatched = 0;
  size_t compute_dependency_pairs = 0, compute_dependency_unmatched = 0;
  size_t unshard_compute_pairs = 0, unshard_compute_unmatched = 0;
};

struct PpFlow {
  std::string cat, name;
  int64_t id = 0;
  int64_t source_pid = 0, source_tid = 0, destination_pid = 0, destination_tid = 0;
  Ns source_ts = 0, destination_ts = 0;
  int source_pp_rank = 0, destination_pp_rank = 0;
  int64_t source_stage = 0, destination_stage = 0;
  std::string source_operation, destination_operation;
  std::optional<int64_t> microbatch;
};

struct PpResult {
  std::vector<PpFlow> flows;
  PpCounts counts;
};

// SPEC 7's pairing of repeated blocks: all (source, destination) pairs by increasing
// |difference of midpoints|, ties by source then destination order, each taken when both
// sides are free. Takes start+end (twice the midpoint) of each block; returns index pairs
// in the order taken.
std::vector<std::pair<size_t, size_t>> pair_by_nearest_midpoint(const std::vector<Ns>& source_sums,
                                                                const std::vector<Ns>& destination_sums);

// The first synthetic flow id (SPEC 7).
inline constexpr int64_t kFirstPpFlowId = 1000000000000;  // 1e12

// Builds the arrows. `cross_rank` adds send->recv arrows (merge only). `rules` says which
// annotation names are PP actions (null: SPEC 7 and 9.5's grammar). Flow ids are
// first_id, first_id + 1, ... one per pair considered. The spans are freed once their PP
// actions are read, before the blocks are made (pass them with std::move where the caller
// is done with them).
PpResult build_pp_flows(std::vector<AnnotationSpan> spans, const std::vector<PidTracks>& pids, bool cross_rank,
                        const Rules* rules = nullptr, int64_t first_id = kFirstPpFlowId);

// Appends each flow as two events (ph s and ph f) to `trace`. Flow ids that a flow event
// already in `trace` uses (as a viewer may read it: integer, number, or string read as
// decimal or hex) are skipped: the flows' ids move up, in order, to the next unused
// ones, so a synthetic arrow never shares an id with the trace's own flows.
void append_pp_flow_events(std::vector<PpFlow> flows, Trace& trace);

}  // namespace tracelane
