// Merging PP ranks: each rank is compacted on its own; then the merge aligns clocks on
// baseTimeNanoseconds, renumbers pids and flow ids so ranks cannot collide, labels every
// process and thread with its PP rank, and adds the arrows between stages.
#include "tracelane/merge.hpp"

#include <simdjson.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "tracelane/classify.hpp"
#include "tracelane/decimal_time.hpp"
#include "event_writer.hpp"
#include "tracelane/restore.hpp"
#include "tracelane/summary.hpp"

namespace tracelane {

int64_t MergeFlowIds::id(int pp_rank, size_t k) {
  constexpr int64_t kRankIdStride = 1000000000;  // 1e9
  static_assert(kFirstPpFlowId % kRankIdStride == 0);
  if (pp_rank >= 0 && pp_rank < kFirstPpFlowId / kRankIdStride - 1 && k < size_t(kRankIdStride))
    return int64_t(pp_rank + 1) * kRankIdStride + int64_t(k);
  return next_shared++;
}

DistributedInfo read_distributed_info(const Trace& trace) {
  DistributedInfo info;
  const TopLevelField* field = trace.find_top("distributedInfo");
  if (!field) return info;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::padded_string text(field->value_raw);
  if (parser.parse(text).get(root) || !root.is_object()) return info;
  int64_t rank;
  if (root["rank"].get_int64().get(rank) == simdjson::SUCCESS) info.rank = rank;
  simdjson::dom::element backend;
  if (root["backend"].get(backend) == simdjson::SUCCESS) info.backend_raw = simdjson::minify(backend);
  simdjson::dom::array groups;
  if (root["pg_config"].get_array().get(groups) == simdjson::SUCCESS) {
    for (simdjson::dom::element group : groups) {
      std::string_view pg_name, pg_desc;
      bool is_pp = (group["pg_name"].get_string().get(pg_name) == simdjson::SUCCESS && pg_name == "torchtitan_real_pp") ||
                   (group["pg_desc"].get_string().get(pg_desc) == simdjson::SUCCESS && pg_desc == "mesh_pp");
      simdjson::dom::array ranks;
      if (!is_pp || group["ranks"].get_array().get(ranks)) continue;
      std::vector<int64_t> members;
      for (simdjson::dom::element r : ranks) {
        int64_t v;
        if (r.get_int64().get(v) == simdjson::SUCCESS) members.push_back(v);
      }
      info.pp_groups.push_back(std::move(members));
    }
  }
  return info;
}

std::optional<int64_t> read_base_time_ns(const Trace& trace, bool& present_but_invalid) {
  present_but_invalid = false;
  const TopLevelField* field = trace.find_top("baseTimeNanoseconds");
  if (!field) return std::nullopt;
  int64_t value;
  if (parse_json_int(field->value_raw, value)) return value;
  present_but_invalid = true;
  return std::nullopt;
}

namespace {

// The largest pp_rank + 1 a merge accepts (sort indices are pp_rank * 1000 + position).
constexpr size_t kMaxPpRank = 1000000;

struct RankState {
  MergeInput* input = nullptr;
  int64_t global_rank = 0;
  int pp_rank = 0;
  Ns offset_ns = 0;
  std::string prefix;
};

}  // namespace


MergeResult merge_ranks(std::vector<MergeInput> inputs, const Rules* rules) {
  if (inputs.size() < 2) throw Error("merge needs at least two rank traces, found " + std::to_string(inputs.size()));
  MergeResult result;
  MergeSummary& summary = result.summary;
  std::vector<RankState> ranks(inputs.size());
  std::set<int64_t> seen_ranks;
  std::vector<std::string> without_base, with_base;
  std::vector<std::optional<int64_t>> bases(inputs.size());
  std::vector<DistributedInfo> infos;  // read once, used for ranks, PP order and the top level
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Trace& trace = inputs[i].compacted.trace;
    const DistributedInfo& info = infos.emplace_back(read_distributed_info(trace));
    const std::string& path = trace.source;  // messages start with the file's path
    if (!info.rank) throw Error(path + ": distributedInfo.rank is missing or not an integer");
    if (!seen_ranks.insert(*info.rank).second)
      throw Error(path + ": global rank " + std::to_string(*info.rank) + " appears in more than one input");
    ranks[i].input = &inputs[i];
    ranks[i].global_rank = *info.rank;
    bool invalid = false;
    bases[i] = read_base_time_ns(trace, invalid);
    if (invalid) throw Error(path + ": baseTimeNanoseconds is not an integer");
    (bases[i] ? with_base : without_base).push_back(path);
    summary.inputs.push_back(inputs[i].name);
  }
  if (!with_base.empty() && !without_base.empty()) {
    // A few names, then a count: a merge of thousands of ranks must not print them all.
    constexpr size_t kNamed = 5;
    std::string others;
    for (size_t k = 1; k < without_base.size() && k <= kNamed; ++k) others += ", " + without_base[k];
    if (without_base.size() > kNamed + 1) others += " and " + std::to_string(without_base.size() - kNamed - 1) + " more";
    throw Error(without_base[0] + ": baseTimeNanoseconds is missing" +
                (others.empty() ? std::string() : " (also in" + others.substr(1) + ")") +
                " but present in the other ranks; cannot align clocks");
  }
  bool absolute = with_base.empty();
  int64_t common = 0;
  if (!absolute) {
    common = INT64_MAX;
    for (const auto& b : bases) common = std::min(common, *b);
    for (size_t i = 0; i < inputs.size(); ++i) {
      // In __int128: two int64 bases can differ by more than int64 holds.
      __int128 offset = (__int128)*bases[i] - common;
      if (offset > kMaxTimeNs)
        throw Error(inputs[i].compacted.trace.source + ": baseTimeNanoseconds is " + std::to_string(int64_t(offset / 1000000000)) +
                    " s after the earliest rank's; cannot align clocks");
      ranks[i].offset_ns = Ns(offset);
    }
  }
  summary.time_alignment = absolute ? "absolute timestamps" : "baseTimeNanoseconds";

  // PP order: the first PP group (in file order, then pg_config order) that holds every rank.
  // Each group is read once against a hash of the input ranks (not searched once per
  // rank: every rank file may hold long groups), and a rank's pp_rank is its first index.
  std::unordered_map<int64_t, size_t> first_index;  // input rank -> index in `order`
  std::vector<int64_t> order;
  for (size_t i = 0; i < inputs.size() && order.empty(); ++i) {
    for (const auto& group : infos[i].pp_groups) {
      std::unordered_map<int64_t, size_t> found;
      for (size_t k = 0; k < group.size(); ++k)
        if (seen_ranks.count(group[k])) found.try_emplace(group[k], k);
      if (found.size() == seen_ranks.size()) {
        order = group;
        first_index = std::move(found);
        summary.pp_order_source = "pg_config";
        break;
      }
    }
  }
  if (order.empty()) {
    for (const auto& r : ranks) order.push_back(r.global_rank);
    std::sort(order.begin(), order.end());
    for (size_t k = 0; k < order.size(); ++k) first_index[order[k]] = k;
    summary.pp_order_source = "sorted global ranks";
  }
  for (auto& r : ranks) {
    size_t index = first_index.at(r.global_rank);
    // pp_rank is an int throughout (and * 1000 a sort index): a group that places a rank
    // beyond a million is not a pipeline, it is a corrupt or hostile file.
    if (index >= kMaxPpRank)
      throw Error(r.input->compacted.trace.source + ": the PP group in distributedInfo.pg_config places global rank " +
                  std::to_string(r.global_rank) + " at index " + std::to_string(index) + ", beyond the " +
                  std::to_string(kMaxPpRank) + " PP ranks tracelane merges");
    r.pp_rank = int(index);
    r.prefix = "PP rank " + std::to_string(r.pp_rank) + " | ";
  }
  std::vector<RankState*> stacked;
  for (auto& r : ranks) stacked.push_back(&r);
  std::sort(stacked.begin(), stacked.end(), [](auto* a, auto* b) { return a->pp_rank < b->pp_rank; });

  // Shift, renumber and label, rank by rank in PP order.
  int64_t next_pid = 1;
  std::vector<AnnotationSpan> spans;
  std::vector<PidTracks> pid_tracks;
  std::vector<std::vector<Event>> new_metadata(stacked.size());
  Trace flows_holder;
  MergeFlowIds flow_ids;  // one id space for the whole file; the PP arrows' ids come last
  for (size_t s = 0; s < stacked.size(); ++s) {
    RankState& rank = *stacked[s];
    CompactedTrace& compacted = rank.input->compacted;
    Trace& trace = compacted.trace;
    std::set<int64_t> gpu_pids, other_pids;
    for (const Lane& lane : compacted.lanes) gpu_pids.insert(lane.pid);
    for (const Event& event : trace.events)
      if (event.pid.is_int() && !gpu_pids.count(event.pid.value)) other_pids.insert(event.pid.value);
    std::unordered_map<int64_t, int64_t> new_pid;
    int position = 0;
    for (const auto* group : {&other_pids, &gpu_pids}) {
      for (int64_t pid : *group) {
        new_pid[pid] = next_pid;
        bool gpu = group == &gpu_pids;
        std::string label = "PP rank " + std::to_string(rank.pp_rank) + " (global rank " +
                            std::to_string(rank.global_rank) + ") | " +
                            (gpu ? std::string("GPU") : "process " + std::to_string(pid));
        EventBuilder name;
        name.string("name", "process_name").string("ph", "M").integer("pid", next_pid, kPid).integer("tid", 0, kTid);
        name.args_name(label);
        new_metadata[s].push_back(name.finish(trace));
        EventBuilder sort;
        sort.string("name", "process_sort_index").string("ph", "M").integer("pid", next_pid, kPid);
        sort.integer("tid", 0, kTid).raw("args", "{\"sort_index\": " + std::to_string(int64_t(rank.pp_rank) * 1000 + position) + "}");
        new_metadata[s].push_back(sort.finish(trace));
        ++position;
        ++next_pid;
      }
    }
    std::unordered_map<std::string_view, int64_t> new_id;
    for (Event& event : trace.events) {
      // A rank compacted with its single-trace arrows gets the merged file's arrows instead.
      if (event.pp_flow) event.dropped = true;
      if (event.dropped) continue;
      if (event.ph == "M" && event.name == "process_sort_index") {
        event.dropped = true;
        continue;
      }
      if (event.ph == "M" && (event.name == "process_name" || event.name == "thread_name") &&
          event.spans[kArgName].length)
        event.name_prefixed = true;
      if (event.pid.is_int()) {
        event.new_pid = new_pid.at(event.pid.value);
        event.changed |= 1u << kPid;
      }
      if (rank.offset_ns && event.ts.numeric && event.spans[kTs].length) {
        event.new_ts = event.final_ts() + rank.offset_ns;  // both within kMaxTimeNs: no overflow
        if (event.new_ts > kMaxTimeNs)
          throw Error(trace.source + ": event #" + std::to_string(&event - trace.events.data()) +
                      ": ts moved by the clock offset beyond " + std::to_string(kMaxTimeNs / 1000) + " us");
        event.changed |= 1u << kTs;
      }
      if (event.is_flow() && event.id.present()) {
        std::string_view text = event.id_text(kId);
        auto it = new_id.find(text);
        if (it == new_id.end()) it = new_id.emplace(text, flow_ids.id(rank.pp_rank, new_id.size())).first;
        event.new_id = it->second;
        event.changed |= 1u << kId;
      }
    }
    // Shifted times are new numbers for Perfetto: redo where annotations must split.
    if (rank.offset_ns) rebuild_annotation_tracks(compacted);
    for (Event& event : trace.events) {
      if (event.pid.is_int() && !((event.changed >> kPid) & 1)) {  // metadata made by the rebuild
        event.new_pid = new_pid.at(event.pid.value);
        event.changed |= 1u << kPid;
      }
      if (event.lane_metadata && event.ph == "M" && event.name == "thread_name") event.name_prefixed = true;
    }
    // Per-rank validation of what merge may change: slices keep name, cat, args, dur;
    // pid moves to the renumbered one and ts by exactly this rank's offset.
    for (const Event& event : trace.events) {
      if (!is_measured_cat(event.cat) || event.dropped) continue;
      if (event.final_ts() != event.ts.ns + rank.offset_ns || (event.changed & (1u << kDur)))
        throw Error(rank.input->name + ": validation: merge moved a measured slice by other than its rank offset");
    }
    auto rank_spans = collect_annotation_spans(trace);
    spans.insert(spans.end(), rank_spans.begin(), rank_spans.end());
    for (PidTracks tracks : compacted.pid_tracks) {
      tracks.pid = new_pid.at(tracks.pid);
      tracks.pp_rank = rank.pp_rank;
      pid_tracks.push_back(std::move(tracks));
    }
    summary.pp_ranks.push_back({rank.pp_rank, rank.global_rank});
  }
  for (const auto& r : ranks) summary.time_offsets_ns.push_back({r.global_rank, r.offset_ns});
  for (const auto& r : ranks) summary.per_rank.push_back({r.global_rank, r.input->compacted.summary});

  // The figures now: every slice is at its place on the common clock.
  std::vector<RankLanes> rank_lanes;
  for (const RankState* r : stacked) rank_lanes.push_back({&r->input->compacted, r->global_rank, r->pp_rank});
  result.figures = merged_figures(rank_lanes, rules);

  PpResult pp = build_pp_flows(spans, pid_tracks, true, rules, flow_ids.next_shared);
  summary.pp = pp.counts;
  append_pp_flow_events(pp.flows, flows_holder);

  // Top level: PP rank 0's, aligned and labelled as a merge.
  Trace& top = stacked[0]->input->compacted.trace;
  if (absolute)
    remove_top_level(top, "baseTimeNanoseconds");
  else
    set_top_level(top, "baseTimeNanoseconds", std::to_string(common));
  set_top_level(top, "traceName", "\"Merged pipeline-parallel CUDA graph trace\"");
  remove_top_level(top, "cuda_graph_pp_local_flows");
  const DistributedInfo& info0 = infos[size_t(stacked[0]->input - inputs.data())];
  std::string ranks_json;
  for (auto* r : stacked) ranks_json += (ranks_json.empty() ? "" : ", ") + std::to_string(r->global_rank);
  set_top_level(top, "distributedInfo",
                "{\"backend\": " + (info0.backend_raw.empty() ? std::string("null") : info0.backend_raw) +
                    ", \"ranks\": [" + ranks_json + "], \"pp_rank_count\": " + std::to_string(ranks.size()) + "}");

  set_top_level(top, "cuda_graph_pp_merge", merge_summary(summary).dump(-1));

  std::string& out = result.json;
  size_t bound = top_level_size_bound(top);
  for (size_t s = 0; s < stacked.size(); ++s) {
    for (const Event& e : stacked[s]->input->compacted.trace.events) bound += written_size_bound(e, stacked[s]->prefix.size());
    for (const Event& e : new_metadata[s]) bound += written_size_bound(e);
  }
  for (const Event& e : flows_holder.events) bound += written_size_bound(e);
  bool restore_data = true;  // each rank's original, when every rank was compacted with it
  for (const auto& input : inputs) restore_data = restore_data && input.compacted.restore_data;
  if (restore_data) bound += bound / 16 + 4096;  // room for it (bench/README.md)
  out.reserve(bound);  // pages not written cost no memory
  WrittenEvents written;
  std::vector<RestoreSource> sources;
  write_trace_object(out, top, {}, [&](std::string& o) {
    bool first = true;
    auto put = [&](const Event& event, std::string_view prefix) {
      if (event.dropped) return;
      if (!first) o += ",\n";
      first = false;
      o += "  ";
      if (written.begin == SIZE_MAX) written.begin = o.size();
      append_event(o, event, prefix);
      written.end = o.size();
      ++written.count;
    };
    for (size_t s = 0; s < stacked.size(); ++s) {
      const RankState& rank = *stacked[s];
      sources.push_back({&rank.input->compacted.trace, written.count, rank.prefix, rank.offset_ns, rank.global_rank});
      for (const Event& event : rank.input->compacted.trace.events) put(event, rank.prefix);
      for (const Event& event : new_metadata[s]) put(event, {});
    }
    for (const Event& event : flows_holder.events) put(event, {});
  });
  if (restore_data) append_restore_data(out, written, sources);
  return result;
}

}  // namespace tracelane
