// Annotation tracks (SPEC 5, 9.6): sub-tracks where spans cross, the lanes' and tracks'
// metadata, and the spans PP block building reads.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include "compaction.hpp"
#include "event_writer.hpp"
#include "parallel_ranges.hpp"
#include "tracelane/compact.hpp"
#include "tracelane/decimal_time.hpp"
#include "tracelane/lanes.hpp"
#include "tracelane/track_tids.hpp"

namespace tracelane {
namespace {

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
// number goes through a double. `text` is the number as it will be written: a JSON
// number, which from_chars reads as strtod does (the nearest double), without a copy.
Ns as_perfetto_reads(std::string_view text, Ns exact) {
  if (text.find_first_of(".eE") == std::string_view::npos) return exact;
  double value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return Ns(std::llround(value * 1000.0));
}

// The text a time field will have in the output: the text read, or a new value written
// into `buffer`.
std::string_view written_time(const Event& event, Field field, std::string& buffer) {
  bool changed = (event.changed >> field) & 1;
  if (!changed) return event.value_text(field);
  buffer.clear();
  append_ns_as_us(buffer, field == kTs ? event.final_ts() : event.final_dur());
  return buffer;
}

// An annotation on a lane's annotation track, and its span.
struct TrackMember {
  uint32_t event;
  TwoViews span;
};

// Which sub-track each of one track's spans goes to (0: the track itself), for `members`
// in traceEvents order; sorts them into the order they are visited.
std::vector<uint32_t> choose_subtracks(std::vector<TrackMember>& members) {
  const auto visited_before = [](const TrackMember& a, const TrackMember& b) {
    Ns a_dur = a.span.end - a.span.start, b_dur = b.span.end - b.span.start;
    return a.span.start != b.span.start ? a.span.start < b.span.start : a_dur > b_dur;
  };
  if (!std::is_sorted(members.begin(), members.end(), visited_before))
    std::stable_sort(members.begin(), members.end(), visited_before);
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

}  // namespace

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
  const AnnotationEvents listed = annotation_events(c);
  using OnTracks = std::vector<std::pair<size_t, TrackMember>>;  // (lane, member)
  std::vector<OnTracks> found = gather_ranges<OnTracks>(listed.size(), [&](size_t begin, size_t end, OnTracks& part) {
    std::string buffer;  // a new time's text
    for (size_t k = begin; k < end; ++k) {
      const uint32_t i = listed[k];
      const Event& event = events[i];
      if (event.dropped || event.ph() != "X" || event.cat != "gpu_user_annotation") continue;
      if (!((event.changed >> kTid) & 1) && !event.tid.is_int()) continue;
      if (!event.ts.numeric || !event.dur.numeric || event.dur.ns < 0) continue;
      auto it = lane_of_track.find(event.final_tid());
      if (it == lane_of_track.end()) continue;
      TwoViews span;
      span.start = event.final_ts();
      span.end = span.start + event.final_dur();
      span.seen_start = as_perfetto_reads(written_time(event, kTs, buffer), span.start);
      span.seen_end = span.seen_start + as_perfetto_reads(written_time(event, kDur, buffer), event.final_dur());
      part.push_back({it->second, {i, span}});
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
  const AnnotationEvents listed = annotation_events(c);
  using Annotated = std::vector<char>;  // per lane: its annotation track holds one
  auto find_annotated = [&](size_t begin, size_t end, Annotated& part) {
    part.resize(lanes.size());
    for (size_t k = begin; k < end; ++k) {
      const Event& event = trace.events[listed[k]];
      if (event.dropped || event.cat != "gpu_user_annotation" || !event.tid.present()) continue;
      bool is_int = ((event.changed >> kTid) & 1) || event.tid.is_int();
      if (!is_int) continue;
      auto it = lane_of_track.find(event.final_tid());
      if (it != lane_of_track.end()) part[it->second] = 1;
    }
  };
  std::vector<Annotated> found = gather_ranges<Annotated>(listed.size(), find_annotated);
  std::unordered_map<int64_t, bool> annotated;  // annotation tid -> holds an annotation
  for (const auto& lane : lanes) annotated[lane.annotation_tid] = false;
  for (const auto& part : found)
    for (size_t l = 0; l < lanes.size(); ++l)
      if (part[l]) annotated[lanes[l].annotation_tid] = true;
  // Each metadata event has a ts, as the exporter's own do (readers such as TraceLens's
  // capture merge require one; viewers ignore it): that of the pid's first metadata event,
  // else the lane's first slice's start. Each range finds its own pids' first; the
  // ranges' are then taken in order, so the earliest range's wins.
  using FirstTs = std::unordered_map<int64_t, Ns>;
  std::vector<FirstTs> firsts = gather_ranges<FirstTs>(listed.size(), [&](size_t begin, size_t end, FirstTs& part) {
    for (size_t k = begin; k < end; ++k) {
      const Event& event = trace.events[listed[k]];
      // The pid and ts read: in a merge, lanes still have the pids read, and the times
      // have moved by the rank's offset.
      if (event.ph() == "M" && event.pid.is_int() && event.ts.numeric)
        part.try_emplace(event.original_int(kPid), event.original_ns(kTs));
    }
  });
  FirstTs metadata_ts;
  for (const FirstTs& part : firsts) metadata_ts.insert(part.begin(), part.end());  // keeps a pid's earlier ts
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
    e.set_ph('M'), e.name = "thread_name", e.lane_metadata = true;
    e.pid = Id{Id::Kind::integer, lane.pid}, e.tid = Id{Id::Kind::integer, tid};
    e.ts = Time{true, true, ts};
    trace.events.push_back(e);
    EventBuilder index;
    index.string("name", "thread_sort_index").string("ph", "M").time("ts", ts, kTs);
    index.integer("pid", lane.pid, kPid).integer("tid", tid, kTid);
    index.raw("args", "{\"sort_index\": " + std::to_string(sort_index++) + "}");
    Event f = index.finish(trace);
    f.set_ph('M'), f.name = "thread_sort_index", f.lane_metadata = true;
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
    auto it = main_of.find(event.final_tid());
    if (it != main_of.end()) event.set_tid(it->second);
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

std::vector<AnnotationSpan> collect_annotation_spans(const Trace& trace) {
  return collect_annotation_spans(trace, AnnotationEvents(trace.events.size()));
}

// Picked over ranges of events concurrently, in traceEvents order (pick_in_order: a
// trace's spans are hundreds of thousands, 48 bytes each).
std::vector<AnnotationSpan> collect_annotation_spans(const Trace& trace, const AnnotationEvents& listed) {
  const auto& events = trace.events;
  auto is_span = [&](size_t k) {
    const Event& event = events[listed[k]];
    if (event.dropped || event.ph() != "X" || event.cat != "gpu_user_annotation") return false;
    bool pid_int = ((event.changed >> kPid) & 1) || event.pid.is_int();
    bool tid_int = ((event.changed >> kTid) & 1) || event.tid.is_int();
    return pid_int && tid_int && event.ts.numeric && event.dur.numeric;
  };
  return pick_in_order<AnnotationSpan>(listed.size(), is_span, [&](size_t k) {
    const Event& event = events[listed[k]];
    Ns start = event.final_ts();
    return AnnotationSpan{event.final_pid(), event.final_tid(), start, start + event.final_dur(), event.name};
  });
}

}  // namespace tracelane
