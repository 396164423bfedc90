#include "tracelane/summary.hpp"

#include "tracelane/decimal_time.hpp"
#include "event_writer.hpp"

namespace tracelane {

JsonValue JsonValue::boolean(bool b) {
  JsonValue v;
  v.kind_ = Kind::boolean;
  v.text_ = b ? "true" : "false";
  return v;
}
JsonValue JsonValue::integer(int64_t value) { return raw_number(std::to_string(value)); }
JsonValue JsonValue::raw_number(std::string text) {
  JsonValue v;
  v.kind_ = Kind::number;
  v.text_ = std::move(text);
  return v;
}
JsonValue JsonValue::string(std::string s) {
  JsonValue v;
  v.kind_ = Kind::string;
  v.text_ = std::move(s);
  return v;
}
JsonValue JsonValue::array() {
  JsonValue v;
  v.kind_ = Kind::array;
  return v;
}
JsonValue JsonValue::object() {
  JsonValue v;
  v.kind_ = Kind::object;
  return v;
}
JsonValue& JsonValue::push(JsonValue v) {
  items_.push_back(std::move(v));
  return *this;
}
JsonValue& JsonValue::set(std::string key, JsonValue v) {
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == key) {
      items_[i] = std::move(v);
      return *this;
    }
  keys_.push_back(std::move(key));
  items_.push_back(std::move(v));
  return *this;
}

JsonValue& JsonValue::extend(const JsonValue& other) {
  for (size_t i = 0; i < other.keys_.size(); ++i) set(other.keys_[i], other.items_[i]);
  return *this;
}

std::string JsonValue::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

void JsonValue::dump_to(std::string& out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out.push_back('\n');
    out.append(size_t(indent * d), ' ');
  };
  switch (kind_) {
    case Kind::null: out += "null"; break;
    case Kind::boolean:
    case Kind::number: out += text_; break;
    case Kind::string: append_json_string(out, text_); break;
    case Kind::array:
    case Kind::object: {
      bool object = kind_ == Kind::object;
      out.push_back(object ? '{' : '[');
      if (items_.empty()) {
        out.push_back(object ? '}' : ']');
        break;
      }
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += indent < 0 ? ", " : ",";
        newline(depth + 1);
        if (object) {
          append_json_string(out, keys_[i]);
          out += ": ";
        }
        items_[i].dump_to(out, indent, depth + 1);
      }
      newline(depth);
      out.push_back(object ? '}' : ']');
    }
  }
}

JsonValue json_us(Ns ns) { return JsonValue::raw_number(ns_as_us(ns)); }

JsonValue compaction_summary(const CompactSummary& s, bool with_pp) {
  auto n = [](size_t v) { return JsonValue::integer(int64_t(v)); };
  JsonValue o = JsonValue::object();
  o.set("measured_slices", n(s.measured_slices));
  o.set("original_streams", n(s.original_streams));
  o.set("compacted_lanes", n(s.compacted_lanes));
  JsonValue groups = JsonValue::object();
  for (const auto& [k, v] : s.slice_groups) groups.set(k, n(v));
  o.set("slice_groups", groups);
  JsonValue lanes = JsonValue::object();
  for (const auto& [k, v] : s.lanes_by_group) lanes.set(k, n(v));
  o.set("lanes_by_group", lanes);
  o.set("gpu_flow_endpoints_mapped", n(s.gpu_flow_endpoints_mapped));
  o.set("gpu_flow_endpoints_unmapped", n(s.gpu_flow_endpoints_unmapped));
  o.set("gpu_annotations_mapped", n(s.gpu_annotations_mapped));
  o.set("gpu_annotations_coalesced", n(s.gpu_annotations_coalesced));
  o.set("kernel_annotations_converted", n(s.kernel_annotations_converted));
  o.set("kernel_annotation_blocks", n(s.kernel_annotation_blocks));
  o.set("gpu_annotations_retained", n(s.gpu_annotations_retained));
  o.set("annotation_subtracks", n(s.annotation_subtracks));
  // SPEC 9.11: only when some track could not have its aligned tid (rare; the key's
  // presence is the signal, and summaries without it stay as they were).
  if (s.lane_tids_unaligned) o.set("lane_tids_unaligned", n(s.lane_tids_unaligned));
  o.set("cuda_graph_launches", n(s.cuda_graph_launches));
  if (with_pp && s.has_pp) {
    o.set("pp_rank", JsonValue::integer(s.pp_rank));
    o.set("pp_compute_dependency_pairs", n(s.pp.compute_dependency_pairs));
    o.set("pp_compute_dependency_unmatched", n(s.pp.compute_dependency_unmatched));
    o.set("pp_unshard_compute_pairs", n(s.pp.unshard_compute_pairs));
    o.set("pp_unshard_compute_unmatched", n(s.pp.unshard_compute_unmatched));
  }
  return o;
}

JsonValue merge_summary(const MergeSummary& s) {
  auto n = [](size_t v) { return JsonValue::integer(int64_t(v)); };
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
  o.set("pp_send_recv_pairs", n(s.pp.send_recv_pairs));
  o.set("pp_send_recv_unmatched", n(s.pp.send_recv_unmatched));
  o.set("pp_compute_dependency_pairs", n(s.pp.compute_dependency_pairs));
  o.set("pp_compute_dependency_unmatched", n(s.pp.compute_dependency_unmatched));
  o.set("pp_unshard_compute_pairs", n(s.pp.unshard_compute_pairs));
  o.set("pp_unshard_compute_unmatched", n(s.pp.unshard_compute_unmatched));
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
