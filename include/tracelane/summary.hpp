// What `compact` and `merge` report (SPEC 6 and 8): the summaries as structs, filled in by
// the passes, and their JSON. Below compact and merge: both fill these in, and merge
// writes its summary into the merged file.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracelane/json_value.hpp"
#include "tracelane/pp_flows.hpp"
#include "tracelane/trace.hpp"

namespace tracelane {

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
  // A trace PyTorch's exporter laned (SPEC 9.8): the lanes it made, by name, that were kept
  // as they are and that were repacked, and the slices whose args.stream was put back.
  bool pytorch_laned = false;
  std::vector<std::string> pytorch_lanes_kept, pytorch_lanes_repacked;
  size_t streams_put_back = 0;
  bool nothing_to_repack = false;  // no measured slice: the copy is the trace as it is (SPEC 9.15)
  bool has_pp = false;             // single-trace arrows were computed
  int pp_rank = 0;
  PpCounts pp;
};

struct MergeSummary {
  std::vector<std::string> inputs;  // in file order
  std::string time_alignment;
  std::vector<std::pair<int64_t, Ns>> time_offsets_ns;  // (global rank, offset), file order
  std::vector<std::pair<int, int64_t>> pp_ranks;        // (pp rank, global rank)
  std::string pp_order_source;                          // "pg_config" or "sorted global ranks"
  PpCounts pp;
  std::vector<std::pair<int64_t, CompactSummary>> per_rank;  // file order
};

// The PP arrow counts under their summary keys, in the order every summary and report row
// lists them; the send/recv pair only with `cross_rank` (a merge's arrows, SPEC 7).
std::vector<std::pair<std::string_view, size_t>> pp_count_fields(const PpCounts& counts, bool cross_rank);
// The single-trace arrows' pp_rank and counts: the top-level cuda_graph_pp_local_flows of
// a compacted file, and the tail of its summary.
JsonValue local_pp_flows_summary(const CompactSummary& summary);

// SPEC 6 keys in order; pp_* keys only when with_pp and the summary has them.
JsonValue compaction_summary(const CompactSummary& summary, bool with_pp);
// The merge summary without input/output (the cuda_graph_pp_merge top-level key).
JsonValue merge_summary(const MergeSummary& summary);
// Microseconds as a JSON number from nanoseconds ("192.088", "0").
JsonValue json_us(Ns ns);
// Puts `input` and `output` first, then the rest of `body`.
JsonValue with_input_output(JsonValue input, std::string output, const JsonValue& body);

}  // namespace tracelane
