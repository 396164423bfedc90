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
#include "event_writer.hpp"
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

std::string where(const Trace& trace, size_t index) {
  const Event& event = trace.events[index];
  return trace.source + ": event #" + std::to_string(index) + " (byte " + std::to_string(trace.byte_offset(event)) +
         ")";
}

// Legacy Kineto (SPEC 9.4) writes GPU tids as "stream 7" with args.stream 7.
bool legacy_stream_tid(const Event& event) {
  if (event.tid.kind != Id::Kind::string || !event.stream.is_int()) return false;
  std::string expected = "\"stream " + std::to_string(event.stream.value) + "\"";
  return event.id_text(kTid) == expected;
}

// What the passes share: the trace being compacted, the rules, and what the passes build
// (the slices, the lanes and their tids, the summary), which compact_trace returns.
struct Compaction {
  Compaction(CompactedTrace& result, const CompactOptions& compact_options)
      : out(result),
        trace(result.trace),
        summary(result.summary),
        rules(compact_options.rules ? *compact_options.rules : Rules::defaults()),
        options(compact_options),
        timings(compact_options.timings) {}

  CompactedTrace& out;      // lanes, track_tids and pid_tracks are filled in by the passes
  Trace& trace;             // out.trace, compacted in place
  CompactSummary& summary;  // out.summary
  const Rules& rules;       // options.rules, or the built-in ones
  const CompactOptions& options;
  Timings* timings;  // null: no pass reads a clock
  SliceSet slices;   // the measured slices and their old streams, extract_slices to remap_related
  // A trace PyTorch's exporter laned (SPEC 9.8), and per old stream: one of its lanes kept
  // as it is (keep_pytorch_lanes), with the name it gave the lane.
  bool pytorch_laned = false;
  std::vector<char> kept;
  std::vector<std::string> kept_names;
  // What later passes need of the slices once they are freed: their count (validate) and
  // their count in each of the rules' groups (count_summary).
  size_t slice_count = 0;
  std::vector<size_t> slices_per_group;
};

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
  std::string cat(event.cat);
  if (!event.pid.present()) throw Error(where(trace, i) + ": " + cat + " slice has no pid");
  if (!event.pid.is_int()) throw Error(where(trace, i) + ": " + cat + " slice pid is not an integer");
  if (!event.tid.present()) throw Error(where(trace, i) + ": " + cat + " slice has no tid");
  if (!event.ts.present || !event.ts.numeric)
    throw Error(where(trace, i) + ": " + cat + " slice has no numeric ts" + time_range_note(event, kTs));
  if (!event.dur.present || !event.dur.numeric)
    throw Error(where(trace, i) + ": " + cat + " slice has no numeric dur" + time_range_note(event, kDur));
  if (!event.stream.present()) throw Error(where(trace, i) + ": " + cat + " slice lacks args.stream");
  bool same = event.tid.is_int() ? (event.stream.is_int() && (own_output || event.tid.value == event.stream.value))
                                 : legacy_stream_tid(event);
  if (!same)
    throw Error(where(trace, i) + ": " + cat + " slice tid " + std::string(event.id_text(kTid)) +
                " differs from args.stream " + std::string(event.id_text(kStream)));
  if (event.dur.ns < 0) throw Error(where(trace, i) + ": " + cat + " slice has negative dur");
}

// A cuda_sync slice that can sit on a measured slice's stream (SPEC 9.3), if there is one.
bool sync_slice_candidate(const Event& event) {
  if (event.cat != "cuda_sync" || event.ph != "X") return false;
  if (!event.pid.is_int() || !event.tid.is_int() || !event.stream.is_int()) return false;
  if (event.tid.value != event.stream.value) return false;
  return event.ts.numeric && event.dur.numeric && event.dur.ns >= 0;
}

// What extract_slices finds in one range of events, in event order, with the streams
// they are on numbered in the range's own order of first appearance.
struct FoundSlices {
  struct Found {
    uint32_t event;
    int group;
    uint32_t stream;  // index into `streams`
  };
  std::vector<Found> measured, syncs;
  std::vector<StreamKey> streams;
  size_t cuda_graph_launches = 0;
  size_t moved = 0;  // measured slices with args.original_stream (SPEC 9.8)
};

// Finds the measured slices (SPEC 2), the cuda_sync slices that sit on their streams
// (SPEC 9.3), and the old streams they live on. Checking, classifying and finding the
// stream of every event is done over ranges of events concurrently; the streams are then
// numbered and the slices added in event order.
void extract_slices(Compaction& c) {
  Timings::Scope t(c.timings, "extract_slices");
  Trace& trace = c.trace;
  const Rules& rules = c.rules;
  SliceSet& set = c.slices;
  CompactSummary& summary = c.summary;
  const auto& events = trace.events;
  const bool own_output = trace.find_top("cuda_graph_stream_compaction") != nullptr;
  auto find_slices = [&](size_t begin, size_t end, FoundSlices& part) {
    std::unordered_map<StreamKey, uint32_t, StreamKeyHash> stream_of;
    auto stream = [&](const Event& event) {
      StreamKey key{event.pid.value, event.id_text(kTid)};
      auto [it, inserted] = stream_of.try_emplace(key, uint32_t(part.streams.size()));
      if (inserted) part.streams.push_back(key);
      return it->second;
    };
    for (size_t i = begin; i < end; ++i) {
      const Event& event = events[i];
      if (event.name == "cudaGraphLaunch") ++part.cuda_graph_launches;
      if (is_measured_cat(event.cat)) {
        check_measured_slice(trace, i, own_output);
        if (event.has_original_stream) ++part.moved;
        part.measured.push_back({uint32_t(i), rules.classify(event.cat, event.name), stream(event)});
      } else if (sync_slice_candidate(event)) {
        part.syncs.push_back({uint32_t(i), rules.classify(event.cat, event.name), stream(event)});
      }
    }
  };
  std::vector<FoundSlices> found = gather_ranges<FoundSlices>(events.size(), find_slices);
  size_t candidates = 0;
  for (const FoundSlices& part : found) candidates += part.measured.size() + part.syncs.size();
  set.slices.reserve(candidates);  // not grown by doubling: kept until remap_related
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

// The name a trace gives the track (pid, tid) in its thread_name metadata, if any.
std::unordered_map<uint32_t, std::string> thread_names(const Trace& trace, const SliceSet& set,
                                                       const std::vector<char>& wanted) {
  std::unordered_map<uint32_t, std::string> names;
  for (const Event& event : trace.events) {
    if (event.ph != "M" || event.name != "thread_name" || !event.pid.is_int() || !event.tid.present()) continue;
    const OldStream* stream = set.find_stream(event.pid.value, event.id_text(kTid));
    if (!stream) continue;
    uint32_t s = uint32_t(stream - set.streams.data());
    if (wanted[s] && event.has_span(kArgName)) names[s] = std::string(event.arg_name.view());
  }
  return names;
}

// PyTorch's lanes made whole (SPEC 9.8). The exporter moved each graphed slice onto a lane
// (tid and args.stream the lane, args.original_stream the stream it ran on). A lane it made,
// an old stream holding a moved slice, is kept as it is, tid and name, when its measured
// slices do not overlap; one whose slices overlap (everything unannotated piles onto one
// default lane) is repacked with every other old stream by the usual rules. Every moved
// slice's args.stream is put back to the stream it ran on (SPEC 9.14).
void keep_pytorch_lanes(Compaction& c) {
  Timings::Scope t(c.timings, "keep_pytorch_lanes");
  const Trace& trace = c.trace;
  const SliceSet& set = c.slices;
  c.kept.assign(set.streams.size(), 0);
  c.kept_names.assign(set.streams.size(), std::string());
  std::vector<char> made(set.streams.size(), 0);  // a lane PyTorch made
  for (const Slice& slice : set.slices)
    if (trace.events[slice.event].has_original_stream) made[slice.stream] = 1;
  std::unordered_map<uint32_t, std::string> names = thread_names(trace, set, made);
  for (uint32_t s = 0; s < set.streams.size(); ++s) {
    if (!made[s]) continue;
    const OldStream& stream = set.streams[s];
    bool clean = trace.events[set.slices[stream.slices.front()].event].tid.is_int();
    Ns last_end = INT64_MIN;
    for (uint32_t k : stream.slices) {  // by start
      const Slice& slice = set.slices[k];
      if (!is_measured_cat(trace.events[slice.event].cat)) continue;
      if (slice.start < last_end) clean = false;
      last_end = std::max(last_end, slice.end);
    }
    auto named = names.find(s);
    c.kept_names[s] = named != names.end() ? named->second : "stream " + std::string(stream.tid_text);
    c.kept[s] = clean;
    std::string listed = c.kept_names[s];
    while (!listed.empty() && listed.back() == ' ') listed.pop_back();
    (clean ? c.summary.pytorch_lanes_kept : c.summary.pytorch_lanes_repacked).push_back(listed);
  }
}

// Packs each (GPU pid, group)'s slices into lanes (lanes.cpp), then gives tids to lanes
// and to their annotation tracks by the rule in track_tids.cpp (the same lane has the same
// tid on every rank).
void build_lanes(Compaction& c) {
  Timings::Scope t(c.timings, "build_lanes");
  Trace& trace = c.trace;
  SliceSet& set = c.slices;
  c.out.track_tids = TrackTids(trace.events);
  TrackTids& tids = c.out.track_tids;
  const auto& groups = c.rules.groups();
  // (pid, group) -> the slices to pack, in traceEvents order, and the lanes PyTorch made
  // that are kept (SPEC 9.8), each with the group most of its measured slices are in.
  struct Family {
    std::vector<uint32_t> members;
    std::vector<uint32_t> kept_streams;
  };
  std::map<std::pair<int64_t, int>, Family> families;
  std::vector<std::vector<uint32_t>> kept_slices(c.kept.size());
  for (uint32_t s = 0; s < set.slices.size(); ++s) {
    const Slice& slice = set.slices[s];
    if (!c.kept.empty() && c.kept[slice.stream] && is_measured_cat(trace.events[slice.event].cat))
      kept_slices[slice.stream].push_back(s);
    else
      families[{slice.pid, slice.group}].members.push_back(s);
  }
  for (uint32_t k = 0; k < kept_slices.size(); ++k) {
    if (kept_slices[k].empty()) continue;
    std::map<int, size_t> in_group;
    for (uint32_t s : kept_slices[k]) ++in_group[set.slices[s].group];
    int group = std::max_element(in_group.begin(), in_group.end(), [](const auto& a, const auto& b) {
                  return a.second < b.second;
                })->first;  // ties: the group listed first
    families[{set.streams[k].pid, group}].kept_streams.push_back(k);
  }
  std::vector<Lane>& lanes = c.out.lanes;
  uint32_t gpu = 0;
  for (auto& [key, family] : families) {
    const std::vector<uint32_t>& members = family.members;
    if (!lanes.empty() && lanes.back().pid != key.first) ++gpu;
    std::vector<Interval> intervals;
    intervals.reserve(members.size());
    for (uint32_t s : members) intervals.push_back({set.slices[s].start, set.slices[s].end});
    uint32_t count = 0;
    std::vector<uint32_t> lane_of = assign_lanes(intervals, count);
    size_t first = lanes.size();
    for (uint32_t k = 0; k < count; ++k) {
      Lane lane;
      lane.pid = key.first;
      lane.gpu = gpu;
      lane.group = key.second;
      lane.group_id = groups[key.second].id;
      lane.number = k;
      lane.lanes_in_group = count;
      lane.tid = tids.tid({gpu, uint32_t(key.second), k, kLaneTrack});
      lane.label = groups[key.second].label + (count > 1 ? " " + std::to_string(k + 1) : "");
      lanes.push_back(std::move(lane));
    }
    for (size_t m = 0; m < members.size(); ++m) {
      uint32_t s = members[m];
      set.slices[s].lane = uint32_t(first + lane_of[m]);
    }
    // A kept lane follows its group's packed lanes, with its tid and its name.
    for (uint32_t k : family.kept_streams) {
      Lane lane;
      lane.pid = key.first;
      lane.gpu = gpu;
      lane.group = key.second;
      lane.group_id = groups[key.second].id;
      lane.number = count++;
      lane.lanes_in_group = 1;
      lane.tid = trace.events[set.slices[kept_slices[k].front()].event].tid.value;
      lane.label = c.kept_names[k];
      for (uint32_t s : kept_slices[k]) set.slices[s].lane = uint32_t(lanes.size());
      lanes.push_back(std::move(lane));
    }
  }
  for (auto& lane : lanes)
    lane.annotation_tid = tids.tid({lane.gpu, uint32_t(lane.group), lane.number, kAnnotationTrack});
  // Each lane lists its slices in (start, end) order, which is also (ts, dur) order.
  for (uint32_t s = 0; s < set.slices.size(); ++s) lanes[set.slices[s].lane].slices.push_back(s);
  for (auto& lane : lanes) {
    std::stable_sort(lane.slices.begin(), lane.slices.end(), [&](uint32_t a, uint32_t b) {
      const Slice &x = set.slices[a], &y = set.slices[b];
      return x.start != y.start ? x.start < y.start : x.end < y.end;
    });
    for (uint32_t& s : lane.slices) s = set.slices[s].event;  // from now on: event indices
  }
  // tid places a slice on its lane; args.stream keeps the stream it ran on (SPEC 9.14),
  // which is args.original_stream where PyTorch's exporter wrote the lane there (SPEC 9.8).
  for (const Slice& slice : set.slices) {
    Event& event = trace.events[slice.event];
    event.set_tid(lanes[slice.lane].tid);
    if (c.pytorch_laned && !event.original_stream_text().empty()) {
      event.put_back_recorded_stream();
      ++c.summary.streams_put_back;
    }
  }
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
  std::vector<Counts> counts = gather_ranges<Counts>(trace.events.size(), [&](size_t begin, size_t end, Counts& count) {
    for (size_t i = begin; i < end; ++i) {
      Event& event = trace.events[i];
      if (!event.pid.is_int() || !event.tid.present() || set.is_slice[i]) continue;
      const OldStream* stream = set.find_stream(event.pid.value, event.id_text(kTid));
      if (!stream) continue;
      if (event.ph == "M") {
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
}

// Identical annotations that overlap become one (SPEC 5; annotations.cpp).
void coalesce_annotations(Compaction& c) {
  Timings::Scope t(c.timings, "coalesce_annotations");
  c.summary.gpu_annotations_coalesced = tracelane::coalesce_annotations(c.trace);
}

// Runs of per-kernel CUDA-graph annotations become spans on their lane's annotation track
// (SPEC 5; annotations.cpp).
void annotate_kernel_runs(Compaction& c) {
  Timings::Scope t(c.timings, "annotate_kernel_runs");
  KernelRunCounts runs = tracelane::annotate_kernel_runs(c.trace, c.out.lanes);
  c.summary.kernel_annotations_converted = runs.converted;
  c.summary.kernel_annotation_blocks = runs.blocks;
}

// PP block building needs each GPU pid's main compute and unshard annotation tracks.
std::vector<PidTracks> pid_tracks_of(const std::vector<Lane>& lanes) {
  std::vector<PidTracks> result;
  for (const Lane& lane : lanes) {
    if (result.empty() || result.back().pid != lane.pid) {
      result.emplace_back();
      result.back().pid = lane.pid;
    }
    PidTracks& tracks = result.back();
    if (lane.group_id == "compute" && lane.number == 0) {
      tracks.main_compute_track = lane.annotation_tid;
      tracks.main_compute_subtracks = lane.annotation_subtracks;
    }
    if (lane.group_id == "nccl_all_gather" && lane.number < 2) {
      tracks.unshard_tracks.push_back(lane.annotation_tid);
      for (int64_t sub : lane.annotation_subtracks) tracks.unshard_tracks.push_back(sub);
    }
  }
  return result;
}

// Perfetto-clean annotation tracks (SPEC 9.6). Perfetto drops or spills a slice
// that partially overlaps another on its track, so each annotation track whose spans
// cross is split into sub-tracks on which spans only nest or follow each other. Spans are
// visited by (start, longest first); each goes to the first sub-track where it nests in
// the innermost open span (or where nothing is open), else to a new sub-track.
//
// Perfetto reads times as doubles (llround(µs * 1000)), so at today's epoch timestamps
// two exactly touching spans can overlap by a few hundred ns in its eyes. A span must fit
// both in exact nanoseconds and in Perfetto's reading of the same numbers.
struct TwoViews {
  Ns start, end;            // exact
  Ns seen_start, seen_end;  // as Perfetto computes them
};

// Perfetto's JSON importer: an integer token is exact (µs * 1000 in int64), any other
// number goes through a double. `text` is the number as it will be written.
Ns as_perfetto_reads(std::string_view text, Ns exact) {
  if (text.find_first_of(".eE") == std::string_view::npos) return exact;
  return Ns(std::llround(std::strtod(std::string(text).c_str(), nullptr) * 1000.0));
}

// The text a time field will have in the output.
std::string written_time(const Event& event, Field field) {
  bool changed = (event.changed >> field) & 1;
  if (!changed) return std::string(event.value_text(field));
  return ns_as_us(field == kTs ? event.new_ts : event.new_dur);
}

// An annotation on a lane's annotation track, and its span.
struct TrackMember {
  uint32_t event;
  TwoViews span;
};

// Which sub-track each of one track's spans goes to (0: the track itself), for `members`
// in traceEvents order; sorts them into the order they are visited.
std::vector<uint32_t> choose_subtracks(std::vector<TrackMember>& members) {
  std::stable_sort(members.begin(), members.end(), [](const TrackMember& a, const TrackMember& b) {
    Ns a_dur = a.span.end - a.span.start, b_dur = b.span.end - b.span.start;
    return a.span.start != b.span.start ? a.span.start < b.span.start : a_dur > b_dur;
  });
  std::vector<uint32_t> chosen_of(members.size());
  std::vector<std::vector<TwoViews>> open;  // per sub-track: open spans, innermost last
  for (size_t m = 0; m < members.size(); ++m) {
    const TwoViews& span = members[m].span;
    size_t chosen = open.size();
    for (size_t k = 0; k < open.size(); ++k) {
      auto& stack = open[k];
      while (!stack.empty() && stack.back().end <= span.start && stack.back().seen_end <= span.seen_start)
        stack.pop_back();
      const TwoViews* parent = stack.empty() ? nullptr : &stack.back();
      if (!parent || (parent->start <= span.start && span.end <= parent->end && parent->seen_start <= span.seen_start &&
                      span.seen_end <= parent->seen_end)) {
        chosen = k;
        break;
      }
    }
    if (chosen == open.size()) open.emplace_back();
    open[chosen].push_back(span);
    chosen_of[m] = uint32_t(chosen);
  }
  return chosen_of;
}

// The tracks are final afterwards: pid_tracks records them for PP block building. Finding
// each annotation's track and span is done over ranges of events concurrently, and the
// tracks are split concurrently; the sub-tracks' tids are then given in lane order, as
// TrackTids needs.
void split_annotation_tracks(Compaction& c) {
  Timings::Scope t(c.timings, "split_annotation_tracks");
  Trace& trace = c.trace;
  std::vector<Lane>& lanes = c.out.lanes;
  TrackTids& tids = c.out.track_tids;
  CompactSummary& summary = c.summary;
  std::unordered_map<int64_t, size_t> lane_of_track;
  for (size_t l = 0; l < lanes.size(); ++l) lane_of_track[lanes[l].annotation_tid] = l;
  const auto& events = trace.events;
  using OnTracks = std::vector<std::pair<size_t, TrackMember>>;  // (lane, member)
  std::vector<OnTracks> found = gather_ranges<OnTracks>(events.size(), [&](size_t begin, size_t end, OnTracks& part) {
    for (size_t i = begin; i < end; ++i) {
      const Event& event = events[i];
      if (event.dropped || event.ph != "X" || event.cat != "gpu_user_annotation") continue;
      if (!((event.changed >> kTid) & 1) && !event.tid.is_int()) continue;
      if (!event.ts.numeric || !event.dur.numeric || event.dur.ns < 0) continue;
      auto it = lane_of_track.find(event.final_tid());
      if (it == lane_of_track.end()) continue;
      TwoViews span;
      span.start = event.final_ts();
      span.end = span.start + event.final_dur();
      span.seen_start = as_perfetto_reads(written_time(event, kTs), span.start);
      span.seen_end = span.seen_start + as_perfetto_reads(written_time(event, kDur), event.final_dur());
      part.push_back({it->second, {uint32_t(i), span}});
    }
  });
  std::vector<std::vector<TrackMember>> on_track(lanes.size());
  size_t annotations = 0;
  for (const auto& part : found) {
    for (const auto& [l, member] : part) on_track[l].push_back(member);
    annotations += part.size();
  }
  std::vector<std::vector<uint32_t>> chosen(lanes.size());
  auto split = [&](size_t l) { chosen[l] = choose_subtracks(on_track[l]); };
  if (annotations < events_per_range) {
    for (size_t l = 0; l < lanes.size(); ++l) split(l);
  } else {
    for_each_index(lanes.size(), split);
  }
  for (size_t l = 0; l < lanes.size(); ++l) {
    Lane& lane = lanes[l];
    for (size_t m = 0; m < on_track[l].size(); ++m) {
      uint32_t k = chosen[l][m];
      if (k == 0) continue;
      while (lane.annotation_subtracks.size() < k) {
        // Sub-track n is "<label> annotations (n)", n from 2.
        uint32_t n = uint32_t(lane.annotation_subtracks.size()) + 2;
        lane.annotation_subtracks.push_back(tids.tid({lane.gpu, uint32_t(lane.group), lane.number, n}));
        ++summary.annotation_subtracks;
      }
      trace.events[on_track[l][m].event].set_tid(lane.annotation_subtracks[k - 1]);
    }
  }
  summary.lane_tids_unaligned = tids.unaligned();
  c.out.pid_tracks = pid_tracks_of(lanes);
}

// Lane metadata (SPEC 5): thread_name and thread_sort_index for every lane and annotation
// track. Annotation tracks that hold something sort directly above their lane.
void add_lane_metadata(Compaction& c) {
  Timings::Scope t(c.timings, "add_lane_metadata");
  Trace& trace = c.trace;
  const std::vector<Lane>& lanes = c.out.lanes;
  // Which annotation tracks hold an annotation: found over ranges of events concurrently.
  std::unordered_map<int64_t, size_t> lane_of_track;
  for (size_t l = 0; l < lanes.size(); ++l) lane_of_track[lanes[l].annotation_tid] = l;
  using Annotated = std::vector<char>;  // per lane: its annotation track holds one
  auto find_annotated = [&](size_t begin, size_t end, Annotated& part) {
    part.resize(lanes.size());
    for (size_t i = begin; i < end; ++i) {
      const Event& event = trace.events[i];
      if (event.dropped || event.cat != "gpu_user_annotation" || !event.tid.present()) continue;
      bool is_int = ((event.changed >> kTid) & 1) || event.tid.is_int();
      if (!is_int) continue;
      auto it = lane_of_track.find(event.final_tid());
      if (it != lane_of_track.end()) part[it->second] = 1;
    }
  };
  std::vector<Annotated> found = gather_ranges<Annotated>(trace.events.size(), find_annotated);
  std::unordered_map<int64_t, bool> annotated;  // annotation tid -> holds an annotation
  for (const auto& lane : lanes) annotated[lane.annotation_tid] = false;
  for (const auto& part : found)
    for (size_t l = 0; l < lanes.size(); ++l)
      if (part[l]) annotated[lanes[l].annotation_tid] = true;
  // Each metadata event has a ts, as the exporter's own do (readers such as TraceLens's
  // capture merge require one; viewers ignore it): that of the pid's first metadata event,
  // else the lane's first slice's start.
  std::unordered_map<int64_t, Ns> metadata_ts;
  for (const Event& event : trace.events)
    if (event.ph == "M" && event.pid.is_int() && event.ts.numeric)
      metadata_ts.try_emplace(event.pid.value, event.ts.ns);
  int64_t sort_index = 0;
  auto emit = [&](const Lane& lane, int64_t tid, const std::string& label) {
    auto known = metadata_ts.find(lane.pid);
    Ns ts = known != metadata_ts.end() ? known->second
            : lane.slices.empty()      ? Ns(0)
                                       : trace.events[lane.slices.front()].final_ts();
    EventBuilder name;
    name.string("name", "thread_name").string("ph", "M").time("ts", ts, kTs);
    name.integer("pid", lane.pid, kPid).integer("tid", tid, kTid).args_name(label);
    Event e = name.finish(trace);
    e.ph = "M", e.name = "thread_name", e.lane_metadata = true;
    e.pid = Id{Id::Kind::integer, lane.pid}, e.tid = Id{Id::Kind::integer, tid};
    e.ts = Time{true, true, ts};
    trace.events.push_back(e);
    EventBuilder index;
    index.string("name", "thread_sort_index").string("ph", "M").time("ts", ts, kTs);
    index.integer("pid", lane.pid, kPid).integer("tid", tid, kTid);
    index.raw("args", "{\"sort_index\": " + std::to_string(sort_index++) + "}");
    Event f = index.finish(trace);
    f.ph = "M", f.name = "thread_sort_index", f.lane_metadata = true;
    f.pid = e.pid, f.tid = e.tid, f.ts = e.ts;
    trace.events.push_back(f);
  };
  for (const auto& lane : lanes) {
    // A kept PyTorch lane's name may end in a space ("stream 7 ", as Kineto names streams).
    std::string_view base = lane.label;
    while (!base.empty() && base.back() == ' ') base.remove_suffix(1);
    std::string annotations = std::string(base) + " annotations";
    if (annotated[lane.annotation_tid]) emit(lane, lane.annotation_tid, annotations);
    for (size_t k = 0; k < lane.annotation_subtracks.size(); ++k)
      emit(lane, lane.annotation_subtracks[k], annotations + " (" + std::to_string(k + 2) + ")");
    emit(lane, lane.tid, lane.label);
  }
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
  PpResult pp = build_pp_flows(collect_annotation_spans(c.trace), c.out.pid_tracks, false, c.options.rules);
  append_pp_flow_events(pp.flows, c.trace);
  summary.pp = pp.counts;
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
  std::vector<size_t> retained = gather_ranges<size_t>(events.size(), [&](size_t begin, size_t end, size_t& count) {
    for (size_t i = begin; i < end; ++i)
      if (!events[i].dropped && events[i].cat == "gpu_user_annotation") ++count;
  });
  for (size_t count : retained) summary.gpu_annotations_retained += count;
}

// Self-validation (SPEC 6), from the events as they will be written: the same slices,
// unchanged but for tid (args.stream too stays as recorded), and no two overlapping on one lane. The events
// are checked over ranges concurrently, and the lanes each sorted concurrently; the first
// failure in event order (then in lane order) is the one reported.
void validate(Compaction& c) {
  Timings::Scope t(c.timings, "validate");
  const Trace& trace = c.trace;
  const SliceSet& set = c.slices;
  // args.stream stays as recorded (SPEC 9.14), or is put back to it (SPEC 9.8).
  constexpr uint8_t allowed_changes = uint8_t(1u << kTid);
  struct Placed {
    int64_t tid;
    Ns start, end;
  };
  using Slices = std::vector<Placed>;
  std::vector<Slices> placed = gather_ranges<Slices>(trace.events.size(), [&](size_t begin, size_t end, Slices& part) {
    for (size_t i = begin; i < end; ++i) {
      const Event& event = trace.events[i];
      bool measured = is_measured_cat(event.cat);
      if (!measured && !(i < set.is_slice.size() && set.is_slice[i])) continue;
      if (!measured && event.dropped) continue;
      if (event.dropped) throw Error(where(trace, i) + ": validation: a measured slice was dropped");
      const uint8_t stream_put_back = event.original_stream_text().empty() ? 0 : uint8_t(1u << kStream);
      if (event.changed & ~(allowed_changes | stream_put_back))
        throw Error(where(trace, i) + ": validation: a measured slice changed more than its placement");
      if (!((event.changed >> kTid) & 1))
        throw Error(where(trace, i) + ": validation: a measured slice was not placed on a lane");
      part.push_back({event.new_tid, event.final_ts(), event.final_ts() + event.final_dur()});
    }
  });
  size_t count = 0;
  for (const auto& part : placed) count += part.size();
  if (count != c.slice_count)
    throw Error(trace.source + ": validation: " + std::to_string(c.slice_count) + " slices in, " +
                std::to_string(count) + " out");
  // Lanes in the order of a map filled in event order, as the message names the first.
  std::unordered_map<int64_t, std::vector<std::pair<Ns, Ns>>> by_lane;
  for (const auto& part : placed)
    for (const Placed& slice : part) by_lane[slice.tid].push_back({slice.start, slice.end});
  std::vector<std::pair<const int64_t, std::vector<std::pair<Ns, Ns>>>*> lanes;
  for (auto& entry : by_lane) lanes.push_back(&entry);
  auto check_lane = [&](size_t k) {
    auto& [tid, intervals] = *lanes[k];
    std::sort(intervals.begin(), intervals.end());
    for (size_t j = 1; j < intervals.size(); ++j)
      if (intervals[j].first < intervals[j - 1].second)
        throw Error(trace.source + ": validation: slices overlap on lane tid " + std::to_string(tid));
  };
  if (count < events_per_range) {
    for (size_t k = 0; k < lanes.size(); ++k) check_lane(k);
  } else {
    for_each_index(lanes.size(), check_lane);
  }
}

}  // namespace

void rebuild_annotation_tracks(CompactedTrace& compacted) {
  Trace& trace = compacted.trace;
  std::unordered_map<int64_t, int64_t> main_of;  // sub-track -> its annotation track
  for (Lane& lane : compacted.lanes) {
    for (int64_t sub : lane.annotation_subtracks) main_of[sub] = lane.annotation_tid;
    lane.annotation_subtracks.clear();
  }
  for (Event& event : trace.events) {
    if (event.lane_metadata) event.dropped = true;
    if (event.dropped || !((event.changed >> kTid) & 1)) continue;
    auto it = main_of.find(event.new_tid);
    if (it != main_of.end()) event.new_tid = it->second;
  }
  std::vector<PidTracks> old_tracks = std::move(compacted.pid_tracks);
  compacted.summary.annotation_subtracks = 0;
  const CompactOptions options;  // the two passes below read no option
  Compaction c(compacted, options);
  split_annotation_tracks(c);
  add_lane_metadata(c);
  for (size_t k = 0; k < compacted.pid_tracks.size() && k < old_tracks.size(); ++k)
    compacted.pid_tracks[k].pp_rank = old_tracks[k].pp_rank;
}

// Gathered over ranges of events concurrently, then joined in traceEvents order.
std::vector<AnnotationSpan> collect_annotation_spans(const Trace& trace) {
  const auto& events = trace.events;
  using Spans = std::vector<AnnotationSpan>;
  std::vector<Spans> found = gather_ranges<Spans>(events.size(), [&](size_t begin, size_t end, Spans& part) {
    for (size_t i = begin; i < end; ++i) {
      const Event& event = events[i];
      if (event.dropped || event.ph != "X" || event.cat != "gpu_user_annotation") continue;
      bool pid_int = ((event.changed >> kPid) & 1) || event.pid.is_int();
      bool tid_int = ((event.changed >> kTid) & 1) || event.tid.is_int();
      if (!pid_int || !tid_int || !event.ts.numeric || !event.dur.numeric) continue;
      Ns start = event.final_ts();
      part.push_back({event.final_pid(), event.final_tid(), start, start + event.final_dur(), event.name});
    }
  });
  if (found.size() == 1) return std::move(found[0]);
  size_t total = 0;
  for (const auto& part : found) total += part.size();
  std::vector<AnnotationSpan> spans;
  spans.reserve(total);
  for (const auto& part : found) spans.insert(spans.end(), part.begin(), part.end());
  return spans;
}

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
  // The arrows read the annotation tracks as they will be written.
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
