// The compaction driver. compact_trace, at the end of this file, is the list of passes:
//   check_already_laned -> extract_slices -> keep_pytorch_lanes -> build_lanes -> remap_related ->
//   coalesce_annotations -> annotate_kernel_runs -> split_annotation_tracks ->
//   add_lane_metadata -> mark_compacted -> add_pp_flows -> count_summary -> validate
// Every pass has one shape, `void pass(Compaction& c)`, and opens with a scoped timer of
// its own name, so `--timings` shows where a compaction spends its time. The passes work
// on the parsed events in place; events keep their original bytes and only record which
// values change (see trace.hpp). The passes that walk every event do it over fixed ranges
// of events concurrently (parallel_ranges.hpp) and join what the ranges found in event
// order, so that the output, the summary and the first error are those of one walk.
#include "tracelane/compact.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "annotations.hpp"
#include "compaction.hpp"
#include "event_writer.hpp"
#include "free_pages.hpp"
#include "pack_lanes.hpp"
#include "parallel_ranges.hpp"
#include "tracelane/classify.hpp"
#include "tracelane/decimal_time.hpp"
#include "tracelane/distributed_info.hpp"
#include "tracelane/json_value.hpp"
#include "tracelane/lanes.hpp"
#include "tracelane/restore.hpp"
#include "tracelane/rules.hpp"
#include "tracelane/summary.hpp"
#include "tracelane/timings.hpp"

namespace tracelane {

Compaction::Compaction(CompactedTrace& result, const CompactOptions& compact_options)
    : out(result),
      trace(result.trace),
      summary(result.summary),
      rules(compact_options.rules ? *compact_options.rules : Rules::defaults()),
      options(compact_options),
      timings(compact_options.timings) {}

namespace {

// For a time that is a JSON number but not read as one: it is out of range.
std::string time_range_note(const Event& event, Field field) {
  const Span span = event.span(field);
  std::string_view text = event.raw.substr(span.offset, span.length);
  if (!text.empty() && text[0] == '-') text.remove_prefix(1);
  if (text.empty() || text[0] < '0' || text[0] > '9') return "";  // a string, null, NaN, ...
  return " (" + std::string(event.raw.substr(span.offset, span.length)) + " is beyond +-" +
         std::to_string(kMaxTimeNs / 1000) + " us)";
}

// Legacy Kineto (SPEC 9.4) writes GPU tids as "stream 7" with args.stream 7.
bool legacy_stream_tid(const Event& event) {
  const Id stream = event.stream();
  if (event.tid.kind != Id::Kind::string || !stream.is_int()) return false;
  std::string expected = "\"stream " + std::to_string(stream.value) + "\"";
  return event.id_text(kTid) == expected;
}

// SPEC 9.8: a trace tracelane compacted is left as it is.
bool check_already_laned(Compaction& c) {
  Timings::Scope t(c.timings, "check_already_laned");
  c.out.already_laned = already_laned_reason(c.trace);
  return !c.out.already_laned.empty();
}

// A measured slice must have what lanes are made of (SPEC 2): throws at the first thing
// event i lacks. In tracelane's own output (`own_output`: compacted again with --force), a
// slice's tid is its lane and its args.stream the stream it ran on (SPEC 9.14): its tid is
// the stream it is compacted from.
void check_measured_slice(const Trace& trace, size_t i, bool own_output) {
  const Event& event = trace.events[i];
  // The message is made only to be thrown: a string of the cat a slice cost an allocation
  // for every annotation (its cat is longer than a short string).
  auto fail = [&](const std::string& what) { throw Error(where(trace, i) + ": " + std::string(event.cat) + what); };
  if (!event.pid.present()) fail(" slice has no pid");
  if (!event.pid.is_int()) fail(" slice pid is not an integer");
  if (!event.tid.present()) fail(" slice has no tid");
  if (!event.ts.present || !event.ts.numeric) fail(" slice has no numeric ts" + time_range_note(event, kTs));
  if (!event.dur.present || !event.dur.numeric) fail(" slice has no numeric dur" + time_range_note(event, kDur));
  const Id stream = event.stream();
  if (!stream.present()) fail(" slice lacks args.stream");
  bool same = event.tid.is_int() ? (stream.is_int() && (own_output || event.tid.value == stream.value))
                                 : legacy_stream_tid(event);
  if (!same)
    fail(" slice tid " + std::string(event.id_text(kTid)) + " differs from args.stream " +
         std::string(event.id_text(kStream)));
  if (event.dur.ns < 0) fail(" slice has negative dur");
}

// A cuda_sync slice that can sit on a measured slice's stream (SPEC 9.3), if there is one.
bool sync_slice_candidate(const Event& event) {
  if (event.cat != "cuda_sync" || event.ph() != "X") return false;
  if (!event.pid.is_int() || !event.tid.is_int()) return false;
  const Id stream = event.stream();
  if (!stream.is_int() || event.tid.value != stream.value) return false;
  return event.ts.numeric && event.dur.numeric && event.dur.ns >= 0;
}

// A slice's classification key: Rules::classify reads nothing else.
using CatAndName = std::pair<std::string_view, std::string_view>;
struct CatAndNameHash {
  size_t operator()(const CatAndName& key) const {
    return std::hash<std::string_view>()(key.second) * 31 ^ std::hash<std::string_view>()(key.first);
  }
};

// What extract_slices finds in one range of events, in event order, with the streams
// they are on numbered in the range's own order of first appearance.
struct FoundSlices {
  struct Found {
    uint32_t event;
    int group;
    uint32_t stream;  // index into `streams`
  };
  std::vector<Found> measured, syncs;
  std::vector<uint32_t> related;                   // is_related_kind
  std::vector<uint32_t> annotations_and_metadata;  // Compaction::annotations_and_metadata
  std::vector<StreamKey> streams;
  size_t cuda_graph_launches = 0;
  size_t moved = 0;  // measured slices with args.original_stream (SPEC 9.8)

  // The number of the event's stream in `streams`, a new one when the range has not met
  // it. Each stream is there once: a tid text read as a nonzero integer is found by its
  // value (tid_keyed_by_value), any other by its text, and no text is found both ways
  // while no tid has changed (none has before place_slices; SliceSet::stream_index
  // would still number a text once).
  uint32_t stream_of(const Event& event) {
    if (tid_keyed_by_value(event)) {
      auto [it, inserted] = by_value_.try_emplace({event.pid.value, event.tid.value}, uint32_t(streams.size()));
      if (inserted) streams.emplace_back(event.pid.value, event.id_text(kTid));
      return it->second;
    }
    StreamKey key{event.pid.value, event.id_text(kTid)};
    auto [it, inserted] = by_text_.try_emplace(key, uint32_t(streams.size()));
    if (inserted) streams.push_back(key);
    return it->second;
  }

 private:
  std::unordered_map<StreamKey, uint32_t, StreamKeyHash> by_text_;
  std::unordered_map<IntStreamKey, uint32_t, IntStreamKeyHash> by_value_;
};

// The kinds of event remap_related acts on: metadata (ph "M"), flow ends (ph "s", "t",
// "f") and GPU annotations (cat gpu_user_annotation); any other event on an old stream
// stays where it is. A real trace's events are mostly CPU-side, so remap_related walks the
// few of these rather than every event. By length first: it is asked of every event that
// is not a slice.
bool is_related_kind(const Event& event) {
  const std::string_view ph = event.ph(), cat = event.cat;
  if (ph.size() == 1 && (ph[0] == 'M' || ph[0] == 's' || ph[0] == 't' || ph[0] == 'f')) return true;
  return cat.size() == 19 && cat == "gpu_user_annotation";
}

// The kinds of event the annotation passes read (Compaction::annotations_and_metadata):
// GPU annotations, and metadata events (add_lane_metadata reads their ts).
bool is_annotation_or_metadata(const Event& event) {
  const std::string_view ph = event.ph(), cat = event.cat;
  return (ph.size() == 1 && ph[0] == 'M') || (cat.size() == 19 && cat == "gpu_user_annotation");
}

// Finds the measured slices (SPEC 2), the cuda_sync slices that sit on their streams
// (SPEC 9.3), the old streams they live on, and the events remap_related may move.
// Checking, classifying and finding the stream of every event is done over ranges of
// events concurrently; the streams are then numbered and the slices added in event order.
void extract_slices(Compaction& c) {
  Timings::Scope t(c.timings, "extract_slices");
  Trace& trace = c.trace;
  const Rules& rules = c.rules;
  SliceSet& set = c.slices;
  CompactSummary& summary = c.summary;
  const auto& events = trace.events;
  const bool own_output = trace.find_top("cuda_graph_stream_compaction") != nullptr;
  auto find_slices = [&](size_t begin, size_t end, FoundSlices& part) {
    // A CUDA graph replays the same few hundred kernels: a range classifies each (cat,
    // name) once, not each slice (classify lower-cases the name and searches it per rule).
    std::unordered_map<CatAndName, int, CatAndNameHash> group_of;
    auto group = [&](const Event& event) {
      auto [it, inserted] = group_of.try_emplace(CatAndName{event.cat, event.name}, 0);
      if (inserted) it->second = rules.classify(event.cat, event.name);
      return it->second;
    };
    for (size_t i = begin; i < end; ++i) {
      if (i + kPrefetchAhead < end) {
        const Event& ahead = events[i + kPrefetchAhead];
        prefetch(ahead.name);
        if (!tid_keyed_by_value(ahead)) prefetch(ahead.value_text(kTid));
        if (is_measured_cat(ahead.cat)) prefetch(ahead.value_text(kStream));  // check_measured_slice's
      }
      const Event& event = events[i];
      if (event.name == "cudaGraphLaunch") ++part.cuda_graph_launches;
      if (is_measured_cat(event.cat)) {
        check_measured_slice(trace, i, own_output);
        if (event.has_original_stream) ++part.moved;
        part.measured.push_back({uint32_t(i), group(event), part.stream_of(event)});
        if (is_annotation_or_metadata(event)) part.annotations_and_metadata.push_back(uint32_t(i));
      } else if (sync_slice_candidate(event)) {
        part.syncs.push_back({uint32_t(i), group(event), part.stream_of(event)});
      } else if (is_related_kind(event)) {
        part.related.push_back(uint32_t(i));
        if (is_annotation_or_metadata(event)) part.annotations_and_metadata.push_back(uint32_t(i));
      }
    }
  };
  std::vector<FoundSlices> found = gather_ranges<FoundSlices>(events.size(), find_slices);
  size_t candidates = 0, related = 0;
  for (const FoundSlices& part : found) {
    candidates += part.measured.size() + part.syncs.size();
    related += part.related.size();
  }
  set.slices.reserve(candidates);  // not grown by doubling: kept until remap_related
  c.related.reserve(related);
  for (FoundSlices& part : found) {
    c.related.insert(c.related.end(), part.related.begin(), part.related.end());
    std::vector<uint32_t>().swap(part.related);
  }
  std::vector<uint32_t>& listed = c.annotations_and_metadata;
  for (const FoundSlices& part : found)
    listed.insert(listed.end(), part.annotations_and_metadata.begin(), part.annotations_and_metadata.end());
  c.annotations_listed = true;
  c.events_when_listed = events.size();
  // Streams are numbered in order of their first measured slice, as one walk numbers them.
  std::vector<std::vector<uint32_t>> numbers(found.size());
  size_t moved = 0;
  for (size_t r = 0; r < found.size(); ++r) {
    FoundSlices& part = found[r];
    summary.cuda_graph_launches += part.cuda_graph_launches;
    moved += part.moved;
    numbers[r].assign(part.streams.size(), UINT32_MAX);
    for (const FoundSlices::Found& slice : part.measured) {
      uint32_t& number = numbers[r][slice.stream];
      if (number == UINT32_MAX) number = set.stream_index(part.streams[slice.stream]);
      set.add(trace, slice.event, slice.group, number);
    }
    summary.measured_slices += part.measured.size();
  }
  // The cuda_sync slices go after every measured one: only then are the streams known.
  for (size_t r = 0; r < found.size(); ++r)
    for (const FoundSlices::Found& slice : found[r].syncs) {
      uint32_t number = numbers[r][slice.stream];
      if (number == UINT32_MAX) {
        const OldStream* stream =
            set.find_stream(found[r].streams[slice.stream].first, found[r].streams[slice.stream].second);
        if (!stream) continue;
        number = numbers[r][slice.stream] = uint32_t(stream - set.streams.data());
      }
      set.add(trace, slice.event, slice.group, number);
    }
  set.finish(trace);
  summary.original_streams = set.streams.size();
  const TopLevelField* flag = trace.find_top("cudaGraphInlineAnnotated");
  c.pytorch_laned = !own_output && (moved > 0 || (flag && flag->value_raw == "true"));
  summary.pytorch_laned = c.pytorch_laned;
}

// The slices of one (GPU pid, group) to pack, in traceEvents order, and the lanes PyTorch
// made that are kept there (SPEC 9.8): old streams, with their slices.
struct Family {
  std::vector<uint32_t> members;
  std::vector<uint32_t> kept_streams;
};
using Families = std::map<std::pair<int64_t, int>, Family>;

// The slices by (pid, group); a kept lane joins the group most of its measured slices are
// in (ties: the group listed first). `kept_slices` gets each kept lane's slices.
Families families_of(const Compaction& c, std::vector<std::vector<uint32_t>>& kept_slices) {
  const SliceSet& set = c.slices;
  Families families;
  kept_slices.assign(c.kept.size(), {});
  for (uint32_t s = 0; s < set.slices.size(); ++s) {
    const Slice& slice = set.slices[s];
    if (!c.kept.empty() && c.kept[slice.stream] && is_measured_cat(c.trace.events[slice.event].cat))
      kept_slices[slice.stream].push_back(s);
    else
      families[{set.streams[slice.stream].pid, slice.group}].members.push_back(s);
  }
  for (uint32_t k = 0; k < kept_slices.size(); ++k) {
    if (kept_slices[k].empty()) continue;
    std::map<int, size_t> in_group;
    for (uint32_t s : kept_slices[k]) ++in_group[set.slices[s].group];
    int group = std::max_element(in_group.begin(), in_group.end(), [](const auto& a, const auto& b) {
                  return a.second < b.second;
                })->first;
    families[{set.streams[k].pid, group}].kept_streams.push_back(k);
  }
  return families;
}

// Each lane lists its slices in (start, end) order, which is also (ts, dur) order, as
// event indices; tid places a slice on its lane, and args.stream keeps the stream it ran
// on (SPEC 9.14), which is args.original_stream where PyTorch's exporter wrote the lane
// there (SPEC 9.8).
void place_slices(Compaction& c) {
  const SliceSet& set = c.slices;
  std::vector<Lane>& lanes = c.out.lanes;
  std::vector<size_t> per_lane(lanes.size(), 0);  // each lane's list in exactly its size
  for (const Slice& slice : set.slices) ++per_lane[slice.lane];
  for (size_t l = 0; l < lanes.size(); ++l) lanes[l].slices.reserve(per_lane[l]);
  for (uint32_t s = 0; s < set.slices.size(); ++s) lanes[set.slices[s].lane].slices.push_back(s);
  for (auto& lane : lanes) {
    // By (start, end), ties in slice order (the order they were added in).
    sort_distinct(lane.slices, [&](uint32_t a, uint32_t b) {
      const Slice &x = set.slices[a], &y = set.slices[b];
      return x.start != y.start ? x.start < y.start : x.end != y.end ? x.end < y.end : a < b;
    });
    for (uint32_t& s : lane.slices) s = set.slices[s].event;
  }
  std::vector<size_t> put_back = gather_ranges<size_t>(set.slices.size(), [&](size_t begin, size_t end, size_t& count) {
    for (size_t s = begin; s < end; ++s) {
      const Slice& slice = set.slices[s];
      Event& event = c.trace.events[slice.event];
      event.set_tid(lanes[slice.lane].tid);
      if (c.pytorch_laned && !event.original_stream_text().empty()) {
        event.put_back_recorded_stream();
        ++count;
      }
    }
  });
  for (size_t count : put_back) c.summary.streams_put_back += count;
}

// Packs each (GPU pid, group)'s slices into lanes (lanes.cpp), then gives tids to lanes
// and to their annotation tracks by the rule in track_tids.cpp (the same lane has the same
// tid on every rank). A kept PyTorch lane follows its group's packed lanes, with its tid
// and its name.
void build_lanes(Compaction& c) {
  Timings::Scope t(c.timings, "build_lanes");
  Trace& trace = c.trace;
  SliceSet& set = c.slices;
  c.out.track_tids = TrackTids(trace.events, trace.max_int_tid);
  TrackTids& tids = c.out.track_tids;
  const auto& groups = c.rules.groups();
  std::vector<std::vector<uint32_t>> kept_slices;
  Families families = families_of(c, kept_slices);
  std::vector<Lane>& lanes = c.out.lanes;
  uint32_t gpu = 0;
  for (auto& [key, family] : families) {
    if (!lanes.empty() && lanes.back().pid != key.first) ++gpu;
    Lane lane;
    lane.pid = key.first;
    lane.gpu = gpu;
    lane.group = key.second;
    lane.group_id = groups[key.second].id;
    // Packed where the slices are (the members are in slice order, which ties keep).
    const size_t first = lanes.size();
    uint32_t count = pack_lanes(
        family.members,
        [&](uint32_t s) {
          return Interval{set.slices[s].start, set.slices[s].end};
        },
        [&](uint32_t s, uint32_t k) { set.slices[s].lane = uint32_t(first + k); });
    for (uint32_t k = 0; k < count; ++k) {
      lane.number = k;
      lane.lanes_in_group = count;
      lane.tid = tids.tid({gpu, uint32_t(key.second), k, kLaneTrack});
      lane.label = groups[key.second].label;
      if (count > 1) lane.label += ' ' + std::to_string(k + 1);
      lanes.push_back(lane);
    }
    for (uint32_t k : family.kept_streams) {
      lane.number = count++;
      lane.lanes_in_group = 1;
      lane.tid = trace.events[set.slices[kept_slices[k].front()].event].tid.value;
      lane.label = c.kept_names[k];
      for (uint32_t s : kept_slices[k]) set.slices[s].lane = uint32_t(lanes.size());
      lanes.push_back(lane);
    }
  }
  for (auto& lane : lanes)
    lane.annotation_tid = tids.tid({lane.gpu, uint32_t(lane.group), lane.number, kAnnotationTrack});
  place_slices(c);
}

// Events tied to old streams follow their slices (SPEC 5, 9.2). Each event moves on its
// own: ranges of events are done concurrently, and their counts summed.
void remap_related(Compaction& c) {
  Timings::Scope t(c.timings, "remap_related");
  Trace& trace = c.trace;
  const SliceSet& set = c.slices;
  const std::vector<Lane>& lanes = c.out.lanes;
  struct Counts {
    size_t flows_mapped = 0, flows_unmapped = 0, annotations_mapped = 0;
  };
  // Only the events of the kinds it acts on (c.related: every other event is left as it is).
  const std::vector<uint32_t>& related = c.related;
  std::vector<Counts> counts = gather_ranges<Counts>(related.size(), [&](size_t begin, size_t end, Counts& count) {
    for (size_t k = begin; k < end; ++k) {
      const uint32_t i = related[k];
      Event& event = trace.events[i];
      if (k + kPrefetchAhead < end) {
        const Event& ahead = trace.events[related[k + kPrefetchAhead]];
        if (!tid_keyed_by_value(ahead)) prefetch(ahead.value_text(kTid));
      }
      if (!event.pid.is_int() || !event.tid.present() || set.is_slice[i]) continue;
      const OldStream* stream = set.find_stream(event);
      if (!stream) continue;
      if (event.ph() == "M") {
        if (event.name == "thread_name" || event.name == "thread_sort_index") event.dropped = true;
        continue;
      }
      if (event.is_flow()) {
        std::optional<uint32_t> slice = event.ts.numeric ? set.slice_for_flow(*stream, event.ts.ns) : std::nullopt;
        if (slice) {
          event.set_tid(lanes[set.slices[*slice].lane].tid);
          ++count.flows_mapped;
        } else {
          ++count.flows_unmapped;
        }
        continue;
      }
      if (event.cat == "gpu_user_annotation" && event.ts.numeric) {
        uint32_t slice = set.nearest_slice(*stream, event.ts.ns);
        event.set_tid(lanes[set.slices[slice].lane].annotation_tid);
        ++count.annotations_mapped;
      }
    }
  });
  for (const Counts& count : counts) {
    c.summary.gpu_flow_endpoints_mapped += count.flows_mapped;
    c.summary.gpu_flow_endpoints_unmapped += count.flows_unmapped;
    c.summary.gpu_annotations_mapped += count.annotations_mapped;
  }
  // No later pass finds events' old streams or needs the slices themselves.
  c.slice_count = c.slices.slices.size();
  c.slices_per_group.assign(c.rules.groups().size(), 0);
  for (const Slice& slice : c.slices.slices) ++c.slices_per_group[slice.group];
  c.slices.release_all_but_is_slice();
  std::vector<uint32_t>().swap(c.related);
}

// Identical annotations that overlap become one (SPEC 5; annotations.cpp).
void coalesce_annotations(Compaction& c) {
  Timings::Scope t(c.timings, "coalesce_annotations");
  c.summary.gpu_annotations_coalesced = tracelane::coalesce_annotations(c.trace, c.annotations_and_metadata);
}

// Runs of per-kernel CUDA-graph annotations become spans on their lane's annotation track
// (SPEC 5; annotations.cpp).
void annotate_kernel_runs(Compaction& c) {
  Timings::Scope t(c.timings, "annotate_kernel_runs");
  KernelRunCounts runs = tracelane::annotate_kernel_runs(c.trace, c.out.lanes);
  c.summary.kernel_annotations_converted = runs.converted;
  c.summary.kernel_annotation_blocks = runs.blocks;
}

// The top-level key that says the file is compacted, by what and under which policy.
void mark_compacted(Compaction& c) {
  Timings::Scope t(c.timings, "mark_compacted");
  JsonValue mark = JsonValue::object();
  mark.set("algorithm", JsonValue::string("semantic interval partitioning"));
  mark.set("measurement_policy", JsonValue::string(kMeasurementPolicy));
  mark.set("source", JsonValue::string("tracelane " TRACELANE_VERSION));
  set_top_level(c.trace, "cuda_graph_stream_compaction", mark.dump(-1));
}

// Rank-local and unshard arrows (SPEC 7) between this trace's own PP blocks; a merge
// replaces them with the merged file's.
void add_pp_flows(Compaction& c) {
  Timings::Scope t(c.timings, "add_pp_flows");
  CompactSummary& summary = c.summary;
  summary.has_pp = true;
  summary.pp_rank = single_trace_pp_rank(c.trace);
  for (auto& tracks : c.out.pid_tracks) tracks.pp_rank = summary.pp_rank;
  PpResult pp =
      build_pp_flows(collect_annotation_spans(c.trace, annotation_events(c)), c.out.pid_tracks, false, c.options.rules);
  summary.pp = pp.counts;
  append_pp_flow_events(std::move(pp.flows), c.trace);  // not copied: 300 bytes an arrow
  set_top_level(c.trace, "cuda_graph_pp_local_flows", local_pp_flows_summary(summary).dump(-1));
}

// The summary's counts of what the passes left (SPEC 6), rather than of what they did.
void count_summary(Compaction& c) {
  Timings::Scope t(c.timings, "count_summary");
  CompactSummary& summary = c.summary;
  const auto& groups = c.rules.groups();
  summary.compacted_lanes = c.out.lanes.size();
  // Counted by group number first (remap_related): a map lookup per slice was most of this
  // pass's time.
  const std::vector<size_t>& per_group = c.slices_per_group;
  for (size_t g = 0; g < groups.size(); ++g)
    if (per_group[g] > 0) summary.slice_groups[groups[g].id] += per_group[g];
  for (const Lane& lane : c.out.lanes) ++summary.lanes_by_group[lane.group_id];
  const auto& events = c.trace.events;
  const AnnotationEvents listed = annotation_events(c);  // every annotation among them
  std::vector<size_t> retained = gather_ranges<size_t>(listed.size(), [&](size_t begin, size_t end, size_t& count) {
    for (size_t k = begin; k < end; ++k) {
      const Event& event = events[listed[k]];
      if (!event.dropped && event.cat == "gpu_user_annotation") ++count;
    }
  });
  for (size_t count : retained) summary.gpu_annotations_retained += count;
}

}  // namespace

std::string already_laned_reason(const Trace& trace) {
  if (trace.find_top("cuda_graph_stream_compaction"))
    return "compacted by tracelane (top-level cuda_graph_stream_compaction)";
  return "";
}

CompactedTrace compact_trace(Trace trace, const CompactOptions& options) {
  CompactedTrace result;
  result.trace = std::move(trace);
  result.restore_data = options.restore_data;
  Compaction c(result, options);
  // A trace tracelane already compacted is returned as it is, unless forced (SPEC 9.8).
  if (!options.force && check_already_laned(c)) return result;
  // The measured slices, checked (SPEC 2): every later pass works from them.
  extract_slices(c);
  if (c.slices.slices.empty()) {
    // No GPU slice (a CPU-only run): the copy is the trace as it is, marked (SPEC 9.15).
    c.summary.nothing_to_repack = true;
    mark_compacted(c);
    return result;
  }
  // Which lanes PyTorch's exporter made are kept as they are (SPEC 9.8).
  if (c.pytorch_laned) keep_pytorch_lanes(c);
  // Lanes from the slices' overlaps, and the tids every track will have.
  build_lanes(c);
  // Flow endpoints and annotations on the old streams move with their slices.
  remap_related(c);
  // The copies CUDA-graph replay projected onto several streams become one; this comes
  // before annotate_kernel_runs so that the spans made from kernel runs are not coalesced.
  coalesce_annotations(c);
  annotate_kernel_runs(c);
  // Once every annotation has its track: where spans cross decides the sub-tracks.
  split_annotation_tracks(c);
  // Names and order for every track that now exists.
  add_lane_metadata(c);
  // Says in the file that it is compacted, by which version, under which policy.
  mark_compacted(c);
  // The arrows read the annotation tracks as they will be written. Their blocks are the
  // compaction's largest working set after the slices: the pages the passes before freed
  // go back to the kernel first, rather than stay under it (bench/README.md).
  give_back_free_pages();
  if (options.pp_flows) add_pp_flows(c);
  count_summary(c);
  // Last: checks the events exactly as write_compacted will write them (SPEC 6).
  validate(c);
  return result;
}

TraceText compacted_text(const CompactedTrace& compacted) {
  TraceText text;
  text.top = &compacted.trace;
  text.runs.push_back({&compacted.trace.events, {}});
  text.restore_data = compacted.restore_data;
  if (text.restore_data) {
    RestoreSource source;
    source.trace = &compacted.trace;
    text.sources.push_back(source);
  }
  return text;
}

std::string write_compacted(const CompactedTrace& compacted) { return trace_text(compacted_text(compacted)); }

}  // namespace tracelane
