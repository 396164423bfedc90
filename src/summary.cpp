#include "tracelane/summary.hpp"

#include "tracelane/decimal_time.hpp"

namespace tracelane {
namespace {

JsonValue count(size_t v) { return JsonValue::integer(int64_t(v)); }

}  // namespace

std::vector<std::pair<std::string_view, size_t>> pp_count_fields(const PpCounts& counts, bool cross_rank) {
  std::vector<std::pair<std::string_view, size_t>> fields;
  if (cross_rank) {
    fields.emplace_back("pp_send_recv_pairs", counts.send_recv_pairs);
    fields.emplace_back("pp_send_recv_unmatched", counts.send_recv_unmatched);
  }
  fields.emplace_back("pp_compute_dependency_pairs", counts.compute_dependency_pairs);
  fields.emplace_back("pp_compute_dependency_unmatched", counts.compute_dependency_unmatched);
  fields.emplace_back("pp_unshard_compute_pairs", counts.unshard_compute_pairs);
  fields.emplace_back("pp_unshard_compute_unmatched", counts.unshard_compute_unmatched);
  return fields;
}

JsonValue local_pp_flows_summary(const CompactSummary& summary) {
  JsonValue o = JsonValue::object();
  o.set("pp_rank", JsonValue::integer(summary.pp_rank));
  for (const auto& [key, value] : pp_count_fields(summary.pp, false)) o.set(std::string(key), count(value));
  return o;
}

JsonValue json_us(Ns ns) { return JsonValue::raw_number(ns_as_us(ns)); }

JsonValue compaction_summary(const CompactSummary& s, bool with_pp) {
  JsonValue o = JsonValue::object();
  o.set("measured_slices", count(s.measured_slices));
  o.set("original_streams", count(s.original_streams));
  o.set("compacted_lanes", count(s.compacted_lanes));
  JsonValue groups = JsonValue::object();
  for (const auto& [k, v] : s.slice_groups) groups.set(k, count(v));
  o.set("slice_groups", groups);
  JsonValue lanes = JsonValue::object();
  for (const auto& [k, v] : s.lanes_by_group) lanes.set(k, count(v));
  o.set("lanes_by_group", lanes);
  o.set("gpu_flow_endpoints_mapped", count(s.gpu_flow_endpoints_mapped));
  o.set("gpu_flow_endpoints_unmapped", count(s.gpu_flow_endpoints_unmapped));
  o.set("gpu_annotations_mapped", count(s.gpu_annotations_mapped));
  o.set("gpu_annotations_coalesced", count(s.gpu_annotations_coalesced));
  o.set("kernel_annotations_converted", count(s.kernel_annotations_converted));
  o.set("kernel_annotation_blocks", count(s.kernel_annotation_blocks));
  o.set("gpu_annotations_retained", count(s.gpu_annotations_retained));
  o.set("annotation_subtracks", count(s.annotation_subtracks));
  // SPEC 9.11: only when some track could not have its aligned tid (rare; the key's
  // presence is the signal, and summaries without it stay as they were).
  if (s.lane_tids_unaligned) o.set("lane_tids_unaligned", count(s.lane_tids_unaligned));
  o.set("cuda_graph_launches", count(s.cuda_graph_launches));
  if (s.nothing_to_repack) o.set("nothing_to_repack", JsonValue::boolean(true));  // SPEC 9.15: only then
  if (s.pytorch_laned) {  // SPEC 9.8: only for such traces, so other summaries stay as they were
    JsonValue laned = JsonValue::object();
    JsonValue kept = JsonValue::array(), repacked = JsonValue::array();
    for (const std::string& name : s.pytorch_lanes_kept) kept.push(JsonValue::string(name));
    for (const std::string& name : s.pytorch_lanes_repacked) repacked.push(JsonValue::string(name));
    laned.set("kept", kept);
    laned.set("repacked", repacked);
    laned.set("streams_put_back", count(s.streams_put_back));
    o.set("pytorch_lanes", laned);
  }
  if (with_pp && s.has_pp) o.extend(local_pp_flows_summary(s));
  return o;
}

JsonValue merge_summary(const MergeSummary& s) {
  JsonValue o = JsonValue::object();
  o.set("time_alignment", JsonValue::string(s.time_alignment));
  JsonValue offsets = JsonValue::object();
  for (const auto& [rank, ns] : s.time_offsets_ns) offsets.set(std::to_string(rank), json_us(ns));
  o.set("time_offsets_us", offsets);
  JsonValue ranks = JsonValue::array();
  for (const auto& [pp, global] : s.pp_ranks) {
    JsonValue r = JsonValue::object();
    r.set("pp_rank", JsonValue::integer(pp));
    r.set("global_rank", JsonValue::integer(global));
    ranks.push(r);
  }
  o.set("pp_ranks", ranks);
  o.set("pp_order_source", JsonValue::string(s.pp_order_source));
  for (const auto& [key, value] : pp_count_fields(s.pp, true)) o.set(std::string(key), count(value));
  JsonValue per_rank = JsonValue::object();
  for (const auto& [rank, summary] : s.per_rank) per_rank.set(std::to_string(rank), compaction_summary(summary, false));
  o.set("per_rank_compaction", per_rank);
  return o;
}

JsonValue with_input_output(JsonValue input, std::string output, const JsonValue& body) {
  JsonValue o = JsonValue::object();
  o.set("input", std::move(input));
  o.set("output", JsonValue::string(std::move(output)));
  o.extend(body);
  return o;
}

}  // namespace tracelane
