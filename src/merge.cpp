// Merging PP ranks: each rank is compacted on its own; then the merge aligns clocks on
// baseTimeNanoseconds, renumbers pids and flow ids so ranks cannot collide, labels every
// process and thread with its PP rank, and adds the arrows between stages. merge_ranks, at
// the end of this file, is the list of steps:
//   read_ranks -> align_clocks -> order_pp_ranks -> renumber_ranks -> measure_figures ->
//   add_pp_flows -> set_merged_top_level -> serialise
// Every step has one shape, `void step(Merge& m)`, and opens with a scoped timer of its
// own name. Renumbering works on the ranks concurrently where a rank's work touches only
// its own trace; the pid and flow id counters run on from one rank to the next in PP order
// (renumber_ranks). Serialisation goes in blocks of events, concurrently (trace_output.hpp).
#include "tracelane/merge.hpp"

#include <algorithm>
#include <exception>
#include <set>
#include <unordered_map>

#include "event_writer.hpp"
#include "parallel_ranges.hpp"
#include "tracelane/classify.hpp"
#include "tracelane/decimal_time.hpp"
#include "tracelane/restore.hpp"
#include "tracelane/summary.hpp"
#include "tracelane/timings.hpp"

namespace tracelane {

int64_t MergeFlowIds::id(int pp_rank, size_t k) {
  static_assert(kFirstPpFlowId % kRankIdStride == 0);
  if (own_range(pp_rank) && k < size_t(kRankIdStride)) return int64_t(pp_rank + 1) * kRankIdStride + int64_t(k);
  return next_shared++;
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

// One input rank, as the steps learn about it.
struct MergeRank {
  MergeInput* input = nullptr;
  DistributedInfo info;  // read once: for the rank, the PP order and the top level
  std::optional<int64_t> base_time_ns;
  int64_t global_rank = 0;
  int pp_rank = 0;
  Ns offset_ns = 0;                   // onto the common clock
  std::string prefix;                 // "PP rank <p> | ", put before the rank's process and thread names
  std::vector<Event> new_metadata;    // process_name and process_sort_index of the new pids
  std::vector<PidTracks> pid_tracks;  // with the new pids, for the PP arrows

  Trace& trace() const { return input->compacted.trace; }
};

// What the steps share.
struct Merge {
  Merge(std::vector<MergeInput>& merge_inputs, const Rules* rank_rules, Timings* pass_timings)
      : inputs(merge_inputs), rules(rank_rules), timings(pass_timings), summary(result.summary) {}

  std::vector<MergeInput>& inputs;
  const Rules* rules;  // which annotations are PP actions; null: built-in
  Timings* timings;    // null: no step reads a clock
  MergeResult result;
  MergeSummary& summary;            // result.summary
  std::vector<MergeRank> ranks;     // in file order
  std::vector<MergeRank*> stacked;  // in PP order: the order of the merged file
  bool absolute = false;            // no rank has baseTimeNanoseconds: times are kept
  int64_t common_base_ns = 0;       // the earliest rank's baseTimeNanoseconds
  int64_t next_pid = 1;             // the merged file's pids, counted across ranks
  MergeFlowIds flow_ids;            // one id space for the whole file; the PP arrows' ids come last
  Trace flows;                      // the PP arrows' events
};

// Each rank's global rank and baseTimeNanoseconds, checked before anything changes: a
// rank that is missing, twice, or unreadable stops the merge with the file's name.
void read_ranks(Merge& m) {
  Timings::Scope t(m.timings, "read_ranks");
  m.ranks.resize(m.inputs.size());
  std::set<int64_t> seen_ranks;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    MergeRank& rank = m.ranks[i];
    rank.input = &m.inputs[i];
    const Trace& trace = rank.trace();
    rank.info = read_distributed_info(trace);
    const std::string& path = trace.source;  // messages start with the file's path
    if (!rank.info.rank) throw Error(path + ": distributedInfo.rank is missing or not an integer");
    if (!seen_ranks.insert(*rank.info.rank).second)
      throw Error(path + ": global rank " + std::to_string(*rank.info.rank) + " appears in more than one input");
    rank.global_rank = *rank.info.rank;
    bool invalid = false;
    rank.base_time_ns = read_base_time_ns(trace, invalid);
    if (invalid) throw Error(path + ": baseTimeNanoseconds is not an integer");
    m.summary.inputs.push_back(rank.input->name);
  }
}

// Every rank onto one clock: shifted by its baseTimeNanoseconds' distance from the
// earliest rank's. Without baseTimeNanoseconds anywhere, times are taken as absolute.
void align_clocks(Merge& m) {
  Timings::Scope t(m.timings, "align_clocks");
  std::vector<std::string> without_base;
  for (const MergeRank& rank : m.ranks)
    if (!rank.base_time_ns) without_base.push_back(rank.trace().source);
  if (!without_base.empty() && without_base.size() < m.ranks.size()) {
    // A few names, then a count: a merge of thousands of ranks must not print them all.
    constexpr size_t kNamed = 5;
    std::string others;
    for (size_t k = 1; k < without_base.size() && k <= kNamed; ++k) others += ", " + without_base[k];
    if (without_base.size() > kNamed + 1)
      others += " and " + std::to_string(without_base.size() - kNamed - 1) + " more";
    throw Error(without_base[0] + ": baseTimeNanoseconds is missing" +
                (others.empty() ? std::string() : " (also in" + others.substr(1) + ")") +
                " but present in the other ranks; cannot align clocks");
  }
  m.absolute = !without_base.empty();
  if (!m.absolute) {
    m.common_base_ns = INT64_MAX;
    for (const MergeRank& rank : m.ranks) m.common_base_ns = std::min(m.common_base_ns, *rank.base_time_ns);
    for (MergeRank& rank : m.ranks) {
      // In __int128: two int64 bases can differ by more than int64 holds.
      __int128 offset = (__int128)*rank.base_time_ns - m.common_base_ns;
      if (offset > kMaxTimeNs)
        throw Error(rank.trace().source + ": baseTimeNanoseconds is " + std::to_string(int64_t(offset / 1000000000)) +
                    " s after the earliest rank's; cannot align clocks");
      rank.offset_ns = Ns(offset);
    }
  }
  m.summary.time_alignment = m.absolute ? "absolute timestamps" : "baseTimeNanoseconds";
  for (const MergeRank& rank : m.ranks) m.summary.time_offsets_ns.push_back({rank.global_rank, rank.offset_ns});
}

// PP order: the first PP group (in file order, then pg_config order) that holds every rank.
// Each group is read once against a hash of the input ranks (not searched once per
// rank: every rank file may hold long groups), and a rank's pp_rank is its first index.
void order_pp_ranks(Merge& m) {
  Timings::Scope t(m.timings, "order_pp_ranks");
  std::set<int64_t> input_ranks;
  for (const MergeRank& rank : m.ranks) input_ranks.insert(rank.global_rank);
  std::unordered_map<int64_t, size_t> first_index;  // input rank -> index in `order`
  std::vector<int64_t> order;
  for (size_t i = 0; i < m.ranks.size() && order.empty(); ++i) {
    for (const auto& group : m.ranks[i].info.pp_groups) {
      std::unordered_map<int64_t, size_t> found;
      for (size_t k = 0; k < group.size(); ++k)
        if (input_ranks.count(group[k])) found.try_emplace(group[k], k);
      if (found.size() == input_ranks.size()) {
        order = group;
        first_index = std::move(found);
        m.summary.pp_order_source = "pg_config";
        break;
      }
    }
  }
  if (order.empty()) {
    for (const MergeRank& rank : m.ranks) order.push_back(rank.global_rank);
    std::sort(order.begin(), order.end());
    for (size_t k = 0; k < order.size(); ++k) first_index[order[k]] = k;
    m.summary.pp_order_source = "sorted global ranks";
  }
  for (MergeRank& rank : m.ranks) {
    size_t index = first_index.at(rank.global_rank);
    // pp_rank is an int throughout (and * 1000 a sort index): a group that places a rank
    // beyond a million is not a pipeline, it is a corrupt or hostile file.
    if (index >= kMaxPpRank)
      throw Error(rank.trace().source + ": the PP group in distributedInfo.pg_config places global rank " +
                  std::to_string(rank.global_rank) + " at index " + std::to_string(index) + ", beyond the " +
                  std::to_string(kMaxPpRank) + " PP ranks tracelane merges");
    rank.pp_rank = int(index);
    rank.prefix = "PP rank " + std::to_string(rank.pp_rank) + " | ";
  }
  for (MergeRank& rank : m.ranks) m.stacked.push_back(&rank);
  std::sort(m.stacked.begin(), m.stacked.end(), [](auto* a, auto* b) { return a->pp_rank < b->pp_rank; });
  for (const MergeRank* rank : m.stacked) m.summary.pp_ranks.push_back({rank->pp_rank, rank->global_rank});
}

using PidMap = std::unordered_map<int64_t, int64_t>;  // the rank's pid -> the merged file's

// The rank's pids get the merged file's next numbers, its other processes before its GPU,
// each with a process_name and process_sort_index that say which rank it is.
// The pids a rank's events use: its GPU pids (those of its lanes) and the others.
struct RankPids {
  std::set<int64_t> gpu, other;
};
RankPids pids_of(const MergeRank& rank) {
  const CompactedTrace& compacted = rank.input->compacted;
  RankPids pids;
  for (const Lane& lane : compacted.lanes) pids.gpu.insert(lane.pid);
  for (const Event& event : compacted.trace.events)
    if (event.pid.is_int() && !pids.gpu.count(event.pid.value)) pids.other.insert(event.pid.value);
  return pids;
}

// New pids for a rank's pids, counting on from the ranks before it in PP order, and the
// process metadata that names them.
PidMap renumber_pids(Merge& m, MergeRank& rank, const RankPids& pids) {
  const std::set<int64_t>& gpu_pids = pids.gpu;
  const std::set<int64_t>& other_pids = pids.other;
  PidMap new_pid;
  int position = 0;
  for (const auto* group : {&other_pids, &gpu_pids}) {
    for (int64_t pid : *group) {
      int64_t next_pid = m.next_pid++;
      new_pid[pid] = next_pid;
      bool gpu = group == &gpu_pids;
      std::string label = "PP rank " + std::to_string(rank.pp_rank) + " (global rank " +
                          std::to_string(rank.global_rank) + ") | " +
                          (gpu ? std::string("GPU") : "process " + std::to_string(pid));
      EventBuilder name;
      name.string("name", "process_name").string("ph", "M").integer("pid", next_pid, kPid).integer("tid", 0, kTid);
      name.args_name(label);
      rank.new_metadata.push_back(name.finish(rank.trace()));
      EventBuilder sort;
      sort.string("name", "process_sort_index").string("ph", "M").integer("pid", next_pid, kPid);
      sort.integer("tid", 0, kTid)
          .raw("args", "{\"sort_index\": " + std::to_string(int64_t(rank.pp_rank) * 1000 + position) + "}");
      rank.new_metadata.push_back(sort.finish(rank.trace()));
      ++position;
    }
  }
  return new_pid;
}

// Every event of the rank gets its new pid, its time on the common clock and its flow id
// in the merged file's id space; names get the rank prefix when written. The rank's own
// process_sort_index and single-trace arrows give way to the merged file's.
void move_events(Merge& m, MergeRank& rank, const PidMap& new_pid) {
  Trace& trace = rank.trace();
  // A flow id's new number goes by its text, numbered in order of first appearance. An id
  // read as a nonzero integer, unchanged and not made by tracelane (whose id texts are all
  // empty), is found by its value: the integer grammar spells each such value one way
  // (annotations.hpp, tid_keyed_by_value), so the two tables never both hold a text and
  // their sizes add up to the texts seen. The text table hashed and compared every flow's
  // id text in the document: 5% of a merge's CPU.
  std::unordered_map<std::string_view, int64_t> new_id;
  std::unordered_map<int64_t, int64_t> new_id_of_value;
  auto number = [&](const Event& event) {
    const bool by_value =
        event.id.is_int() && event.id.value != 0 && !((event.changed >> kId) & 1) && !event.synthesised;
    auto number_in = [&](auto& table, const auto& key) {
      auto it = table.find(key);
      if (it == table.end())  // MergeFlowIds::id counts: asked once a text
        it = table.emplace(key, m.flow_ids.id(rank.pp_rank, new_id.size() + new_id_of_value.size())).first;
      return it->second;
    };
    return by_value ? number_in(new_id_of_value, event.id.value) : number_in(new_id, event.id_text(kId));
  };
  for (Event& event : trace.events) {
    if (event.pp_flow) event.dropped = true;
    if (event.dropped) continue;
    if (event.ph() == "M" && event.name == "process_sort_index") {
      event.dropped = true;
      continue;
    }
    if (event.ph() == "M" && (event.name == "process_name" || event.name == "thread_name") && event.has_span(kArgName))
      event.name_prefixed = true;
    if (event.pid.is_int()) event.set_pid(new_pid.at(event.original_int(kPid)));
    if (rank.offset_ns && event.ts.numeric && event.has_span(kTs)) {
      event.set_ts(event.final_ts() + rank.offset_ns);  // both within kMaxTimeNs: no overflow
      if (event.final_ts() > kMaxTimeNs)
        throw Error(trace.source + ": event #" + std::to_string(&event - trace.events.data()) +
                    ": ts moved by the clock offset beyond " + std::to_string(kMaxTimeNs / 1000) + " us");
    }
    if (event.is_flow() && event.id.present()) event.set_id(number(event));
  }
}

// Per-rank validation of what merge may change: slices keep name, cat, args, dur;
// pid moves to the renumbered one and ts by exactly this rank's offset.
void check_slices_moved_by_offset(const MergeRank& rank) {
  const std::vector<Event>& events = rank.trace().events;
  for (size_t i = 0; i < events.size(); ++i) {
    // A moved slice's original ts is read from its text, asked for ahead (for every event
    // whose ts moved): the only bytes of an event's text this pass reads, a cache miss a
    // slice (3% of a merge's CPU).
    if (i + kPrefetchAhead < events.size() && ((events[i + kPrefetchAhead].changed >> kTs) & 1))
      prefetch(events[i + kPrefetchAhead].value_text(kTs));
    const Event& event = events[i];
    if (!is_measured_cat(event.cat) || event.dropped) continue;
    if (event.final_ts() != event.original_ns(kTs) + rank.offset_ns || (event.changed & (1u << kDur)))
      throw Error(rank.input->name + ": validation: merge moved a measured slice by other than its rank offset");
  }
}

// Everything of a rank's renumbering past its pids: touches only the rank's own trace
// (and, for flow ids outside the ranks' own ranges, the shared counter: see renumber_ranks).
void move_rank(Merge& m, MergeRank& rank, const PidMap& new_pid) {
  CompactedTrace& compacted = rank.input->compacted;
  move_events(m, rank, new_pid);
  // Shifted times are new numbers for Perfetto: redo where annotations must split.
  if (rank.offset_ns) rebuild_annotation_tracks(compacted);
  for (Event& event : compacted.trace.events) {
    if (event.pid.is_int() && !((event.changed >> kPid) & 1)) {  // metadata made by the rebuild
      event.set_pid(new_pid.at(event.pid.value));
    }
    if (event.lane_metadata && event.ph() == "M" && event.name == "thread_name") event.name_prefixed = true;
  }
  check_slices_moved_by_offset(rank);
  for (PidTracks tracks : compacted.pid_tracks) {
    tracks.pid = new_pid.at(tracks.pid);
    tracks.pp_rank = rank.pp_rank;
    rank.pid_tracks.push_back(std::move(tracks));
  }
}

// Runs `work(k)` for every stacked rank k, concurrently in the caller's arena, and
// rethrows the failure of the first rank in PP order that failed, as running them one
// after another would (parallel_ranges.hpp).
template <class Work>
void for_each_rank(const Merge& m, Work&& work) {
  for_each_index(m.stacked.size(), work);
}

// Rank by rank in PP order, so that pids and flow ids count up through the stages: the
// counters run on from one rank to the next. What a rank's own events need is done for
// every rank concurrently around them: finding its pids, then moving its events.
void renumber_ranks(Merge& m) {
  Timings::Scope t(m.timings, "renumber_ranks");
  std::vector<RankPids> pids(m.stacked.size());
  for_each_rank(m, [&](size_t k) { pids[k] = pids_of(*m.stacked[k]); });
  std::vector<PidMap> new_pids;
  for (size_t k = 0; k < m.stacked.size(); ++k) new_pids.push_back(renumber_pids(m, *m.stacked[k], pids[k]));
  // A rank's flow ids are its own range ((p + 1) * 1e9 + k) for PP ranks below 999; a
  // rank beyond takes them from the shared counter, in PP order (MergeFlowIds).
  bool own_ranges = true;
  for (const MergeRank* rank : m.stacked) own_ranges = own_ranges && MergeFlowIds::own_range(rank->pp_rank);
  if (own_ranges)
    for_each_rank(m, [&](size_t k) { move_rank(m, *m.stacked[k], new_pids[k]); });
  else
    for (size_t k = 0; k < m.stacked.size(); ++k) move_rank(m, *m.stacked[k], new_pids[k]);
  // The rebuild may have changed a rank's sub-track counts: its summary is final only now.
  for (const MergeRank& rank : m.ranks) m.summary.per_rank.push_back({rank.global_rank, rank.input->compacted.summary});
}

// The GPU busy figures (docs/figures.md), with every slice at its place on the common clock.
void measure_figures(Merge& m) {
  Timings::Scope t(m.timings, "measure_figures");
  std::vector<RankLanes> rank_lanes;
  for (const MergeRank* rank : m.stacked)
    rank_lanes.push_back({&rank->input->compacted, rank->global_rank, rank->pp_rank});
  m.result.figures = merged_figures(rank_lanes, m.rules);
}

// The arrows between and within stages (SPEC 7), from every rank's renumbered tracks.
void add_pp_flows(Merge& m) {
  Timings::Scope t(m.timings, "add_pp_flows");
  std::vector<std::vector<AnnotationSpan>> rank_spans(m.stacked.size());
  for_each_rank(m, [&](size_t k) { rank_spans[k] = collect_annotation_spans(m.stacked[k]->trace()); });
  // Joined into one vector of exactly their number, each rank's freed once copied.
  size_t total = 0;
  for (const auto& part : rank_spans) total += part.size();
  std::vector<AnnotationSpan> spans;
  spans.reserve(total);
  std::vector<PidTracks> pid_tracks;
  for (size_t k = 0; k < m.stacked.size(); ++k) {
    spans.insert(spans.end(), rank_spans[k].begin(), rank_spans[k].end());
    std::vector<AnnotationSpan>().swap(rank_spans[k]);
    pid_tracks.insert(pid_tracks.end(), m.stacked[k]->pid_tracks.begin(), m.stacked[k]->pid_tracks.end());
  }
  PpResult pp = build_pp_flows(std::move(spans), pid_tracks, true, m.rules, m.flow_ids.next_shared);
  m.summary.pp = pp.counts;
  append_pp_flow_events(std::move(pp.flows), m.flows);
}

// The merged file's top level: PP rank 0's, aligned and labelled as a merge, with the
// merge summary in it.
void set_merged_top_level(Merge& m) {
  Timings::Scope t(m.timings, "set_merged_top_level");
  Trace& top = m.stacked[0]->trace();
  if (m.absolute)
    remove_top_level(top, "baseTimeNanoseconds");
  else
    set_top_level(top, "baseTimeNanoseconds", std::to_string(m.common_base_ns));
  set_top_level(top, "traceName", "\"Merged pipeline-parallel CUDA graph trace\"");
  remove_top_level(top, "cuda_graph_pp_local_flows");
  const DistributedInfo& info0 = m.stacked[0]->info;
  std::string ranks_json;
  for (const MergeRank* rank : m.stacked)
    ranks_json += (ranks_json.empty() ? "" : ", ") + std::to_string(rank->global_rank);
  set_top_level(top, "distributedInfo",
                "{\"backend\": " + (info0.backend_raw.empty() ? std::string("null") : info0.backend_raw) +
                    ", \"ranks\": [" + ranks_json + "], \"pp_rank_count\": " + std::to_string(m.ranks.size()) + "}");
  set_top_level(top, "cuda_graph_pp_merge", merge_summary(m.summary).dump(-1));
}

// The merged file: the ranks in PP order, each one's new process metadata after its
// events, then the PP arrows; each rank's original after them when every rank was
// compacted with its restore data. Written in blocks (trace_output.hpp) to `write`, or
// whole into the result.
void serialise(Merge& m, const MergeTextWriter& write) {
  Timings::Scope t(m.timings, "serialise");
  TraceText text;
  text.top = &m.stacked[0]->trace();
  text.restore_data = true;
  for (const MergeRank& rank : m.ranks) text.restore_data = text.restore_data && rank.input->compacted.restore_data;
  size_t written = 0;
  for (const MergeRank* rank : m.stacked) {
    if (text.restore_data)
      text.sources.push_back({&rank->trace(), written, rank->prefix, rank->offset_ns, rank->global_rank});
    text.runs.push_back({&rank->trace().events, rank->prefix});
    text.runs.push_back({&rank->new_metadata, {}});
    written += written_count(rank->trace().events) + written_count(rank->new_metadata);
  }
  text.runs.push_back({&m.flows.events, {}});
  if (write)
    write(text);
  else
    m.result.json = trace_text(text);
}

}  // namespace

MergeResult merge_ranks(std::vector<MergeInput> inputs, const Rules* rules, Timings* timings,
                        const MergeTextWriter& write) {
  if (inputs.size() < 2) throw Error("merge needs at least two rank traces, found " + std::to_string(inputs.size()));
  Merge m(inputs, rules, timings);
  // Every rank's identity and clock, checked before any rank is changed.
  read_ranks(m);
  align_clocks(m);
  // Which stage each rank is: the order the ranks are stacked and labelled in.
  order_pp_ranks(m);
  // New pids and flow ids so ranks cannot collide, times on the common clock, names
  // prefixed with the PP rank.
  renumber_ranks(m);
  // Every slice is now at its place on the common clock: the GPU busy figures.
  measure_figures(m);
  // Arrows between the stages, from the renumbered annotation tracks.
  add_pp_flows(m);
  // Last before writing: the top level holds the summary, arrow counts included.
  set_merged_top_level(m);
  serialise(m, write);
  return std::move(m.result);
}

}  // namespace tracelane
