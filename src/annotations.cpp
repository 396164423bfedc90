// GPU annotation passes.
//
// Coalescing: CUDA-graph replay projects one user annotation onto every stream the
// region touched, so after remapping, several copies can land on one annotation track.
// Copies identical in every key but ts and dur are chained in (start, end) order while
// each next one starts before the chain so far ends; a chain collapses into its first
// member, stretched over the chain.
//
// Kernel runs: graph-captured kernels carry their annotation in args.name. Walking one
// lane in time order, consecutive kernels with the same name form a run that becomes one
// span on the lane's annotation track; an unnamed kernel ends the run.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <deque>
#include <numeric>

#include "annotations.hpp"
#include "event_writer.hpp"
#include "parallel_ranges.hpp"
#include "tracelane/decimal_time.hpp"

namespace tracelane {

uint32_t SliceSet::stream_index(const StreamKey& key) {
  auto [it, inserted] = index_.try_emplace(key, uint32_t(streams.size()));
  if (inserted) {
    OldStream stream;
    stream.pid = key.first;
    stream.tid_text = key.second;
    streams.push_back(std::move(stream));
    pids_.insert(key.first);
    // A text read as a nonzero integer is the only spelling of its value (tid_keyed_by_value).
    if (int64_t tid = 0; parse_json_int(key.second, tid) && tid != 0)
      int_index_.emplace(IntStreamKey{key.first, tid}, it->second);
  }
  return it->second;
}

void SliceSet::add(const Trace& trace, uint32_t event_index, int group, uint32_t stream) {
  const Event& event = trace.events[event_index];
  if (is_slice.size() < trace.events.size()) is_slice.resize(trace.events.size(), false);
  is_slice[event_index] = true;
  Slice slice;
  slice.event = event_index;
  slice.start = event.ts.ns;
  slice.end = event.ts.ns + event.dur.ns;
  slice.group = group;
  slice.stream = stream;
  streams[stream].slices.push_back(uint32_t(slices.size()));
  slices.push_back(slice);
}

void SliceSet::finish(const Trace& trace) {
  if (is_slice.size() < trace.events.size()) is_slice.resize(trace.events.size(), false);
  auto sort_stream = [&](size_t s) {
    OldStream& stream = streams[s];
    // Slices were added per pass (measured, then cuda_sync); restore traceEvents order
    // before the stable sort by start so ties resolve as SPEC says. Each sort is skipped
    // when its order is already there: a stream without cuda_sync slices is in event
    // order, and one whose events are listed by time (every stream of gen600) in both.
    const auto by_event = [&](uint32_t a, uint32_t b) { return slices[a].event < slices[b].event; };
    const auto by_start = [&](uint32_t a, uint32_t b) { return slices[a].start < slices[b].start; };
    if (!std::is_sorted(stream.slices.begin(), stream.slices.end(), by_event))
      std::sort(stream.slices.begin(), stream.slices.end(), by_event);
    if (!std::is_sorted(stream.slices.begin(), stream.slices.end(), by_start))
      std::stable_sort(stream.slices.begin(), stream.slices.end(), by_start);
    stream.starts.resize(stream.slices.size());
    stream.max_end.resize(stream.slices.size());
    Ns running = INT64_MIN;
    for (size_t k = 0; k < stream.slices.size(); ++k) {
      const Slice& slice = slices[stream.slices[k]];
      stream.starts[k] = slice.start;
      running = std::max(running, slice.end);
      stream.max_end[k] = running;
    }
  };
  // The streams are independent: sorted concurrently when there are enough slices.
  if (slices.size() < events_per_range) {
    for (size_t s = 0; s < streams.size(); ++s) sort_stream(s);
  } else {
    for_each_index(streams.size(), sort_stream);
  }
}

const OldStream* SliceSet::find_stream(int64_t pid, std::string_view tid_text) const {
  // Most events that ask are CPU-side, on a pid no stream has: answered without hashing
  // the tid (mi300: 4% of the compaction's user time went to that hash).
  if (!pids_.contains(pid)) return nullptr;
  auto it = index_.find({pid, tid_text});
  return it == index_.end() ? nullptr : &streams[it->second];
}

const OldStream* SliceSet::find_stream(const Event& event) const {
  if (!tid_keyed_by_value(event)) return find_stream(event.pid.value, event.id_text(kTid));
  if (!pids_.contains(event.pid.value)) return nullptr;
  auto it = int_index_.find({event.pid.value, event.tid.value});
  return it == int_index_.end() ? nullptr : &streams[it->second];
}

std::optional<uint32_t> SliceSet::slice_for_flow(const OldStream& stream, Ns ts) const {
  // p = number of slices starting at or before ts.
  size_t p = size_t(std::upper_bound(stream.starts.begin(), stream.starts.end(), ts) - stream.starts.begin());
  if (p > 0 && stream.starts[p - 1] == ts) return stream.slices[p - 1];  // latest of the exact starts
  // Containing: walk back while some earlier slice could still reach ts.
  for (size_t k = p; k-- > 0;) {
    if (stream.max_end[k] < ts) break;
    const Slice& slice = slices[stream.slices[k]];
    if (slice.start <= ts && ts <= slice.end) return stream.slices[k];
  }
  return std::nullopt;
}

uint32_t SliceSet::nearest_slice(const OldStream& stream, Ns ts) const {
  size_t p = size_t(std::lower_bound(stream.starts.begin(), stream.starts.end(), ts) - stream.starts.begin());
  size_t n = stream.slices.size();
  uint32_t best = 0;
  Ns best_distance = INT64_MAX;
  for (size_t candidate = p == 0 ? 0 : p - 1; candidate <= p + 1 && candidate < n; ++candidate) {
    const Slice& slice = slices[stream.slices[candidate]];
    Ns distance = 0;
    if (!(slice.start <= ts && ts <= slice.end))
      distance = std::min(ts > slice.start ? ts - slice.start : slice.start - ts,
                          ts > slice.end ? ts - slice.end : slice.end - ts);
    if (distance < best_distance) {
      best_distance = distance;
      best = stream.slices[candidate];
    }
  }
  return best;
}

namespace {

// An object's fields, and one list of them for each depth of nesting, reused from one
// annotation to the next (a list allocated per object, and std::stable_sort's buffer, were
// a third of coalesce_annotations' time).
using Fields = std::vector<std::pair<std::string_view, simdjson::dom::element>>;
using FieldLists = std::vector<Fields>;

// Sorts fields by key, equal keys in their order, as std::stable_sort does: an event's
// few fields by insertion, in place; a long list (a crafted object) by std::stable_sort.
void sort_by_key(Fields& fields) {
  auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (fields.size() > 32) return std::stable_sort(fields.begin(), fields.end(), by_key);
  for (size_t i = 1; i < fields.size(); ++i) {
    auto field = fields[i];
    size_t j = i;
    for (; j > 0 && by_key(field, fields[j - 1]); --j) fields[j] = fields[j - 1];
    fields[j] = field;
  }
}

// Writes a key or a string value: its length, then its bytes. Written bare, a string that
// holds `",b:"` would read as two fields, and two different events would compare equal.
void append_text(std::string& out, std::string_view text) {
  char digits[24];
  const auto [end, error] = std::to_chars(digits, digits + sizeof digits, text.size());
  out.append(digits, end);
  out.push_back('"');
  out.append(text);
}

// Writes a JSON value with object keys sorted and numbers normalised, so that two events
// that mean the same compare equal whatever their spacing or key order (1 and 1.0 are
// equal, as in the original tool's Python dict comparison), and two that differ do not.
// An object at `depth` lists its fields in lists[depth].
void append_canonical(std::string& out, simdjson::dom::element value, FieldLists& lists, size_t depth) {
  using simdjson::dom::element_type;
  switch (value.type()) {
    case element_type::OBJECT: {
      simdjson::dom::object object = value.get_object().value_unsafe();
      if (lists.size() <= depth) lists.resize(depth + 1);
      lists[depth].clear();
      for (auto field : object) lists[depth].push_back({field.key, field.value});
      sort_by_key(lists[depth]);
      out.push_back('{');
      // By index: the nested calls may grow `lists`, which moves its elements.
      for (size_t k = 0; k < lists[depth].size(); ++k) {
        const auto [key, v] = lists[depth][k];
        append_text(out, key);
        out.push_back(':');
        append_canonical(out, v, lists, depth + 1);
        out.push_back(',');
      }
      out.push_back('}');
      break;
    }
    case element_type::ARRAY: {
      out.push_back('[');
      simdjson::dom::array array = value.get_array().value_unsafe();
      for (auto item : array) {
        append_canonical(out, item, lists, depth);
        out.push_back(',');
      }
      out.push_back(']');
      break;
    }
    case element_type::INT64:
      out += std::to_string(int64_t(value));
      break;
    case element_type::UINT64:
      out += std::to_string(uint64_t(value));
      break;
    case element_type::DOUBLE: {
      double d = double(value);
      // Range first: converting a double beyond int64 is undefined behaviour.
      if (d > -9e18 && d < 9e18 && d == double(int64_t(d))) {
        out += std::to_string(int64_t(d));
      } else {
        char buffer[32];
        snprintf(buffer, sizeof buffer, "%.17g", d);
        out += buffer;
      }
      break;
    }
    case element_type::STRING:
      append_text(out, std::string_view(value));
      break;
    case element_type::BOOL:
      out += bool(value) ? "true" : "false";
      break;
    case element_type::NULL_VALUE:
      out += "null";
      break;
  }
}

// Whether coalescing considers the event: a well-formed annotation span.
bool is_annotation_span(const Event& event) {
  if (event.dropped || event.cat != "gpu_user_annotation" || event.ph() != "X") return false;
  return event.ts.numeric && event.dur.numeric && event.dur.ns >= 0;
}

// The final tid as an identity spells it: the new one, or the text read. `digits` holds
// a new one's text.
std::string_view tid_key(const Event& event, std::array<char, 24>& digits) {
  if (!((event.changed >> kTid) & 1)) return event.id_text(kTid);
  const auto [end, error] = std::to_chars(digits.data(), digits.data() + digits.size(), event.final_tid());
  return {digits.data(), size_t(end - digits.data())};
}

// An annotation span's identity for coalescing, or false when it has none (its text does
// not parse as a DOM). `parser` and `lists` are reused by the caller's thread.
bool annotation_identity(const Event& event, simdjson::dom::parser& parser, FieldLists& lists, std::string& key) {
  std::array<char, 24> digits;
  key.assign(tid_key(event, digits));
  key.push_back('\0');
  simdjson::dom::object root;
  if (parser.parse(event.raw.data(), event.raw.size()).get_object().get(root)) return false;
  if (lists.empty()) lists.resize(1);
  lists[0].clear();
  for (auto field : root)
    if (field.key != "ts" && field.key != "dur" && field.key != "tid") lists[0].push_back({field.key, field.value});
  sort_by_key(lists[0]);
  for (size_t k = 0; k < lists[0].size(); ++k) {
    const auto [name, value] = lists[0][k];
    append_text(key, name);
    key.push_back(':');
    append_canonical(key, value, lists, 1);
    key.push_back(',');
  }
  return true;
}

}  // namespace

namespace {

// The annotations are grouped by identity in this many shards (by the identity's hash),
// built and chained concurrently: a group lies in one shard, and groups touch disjoint
// events.
constexpr size_t kIdentityShards = 64;

// One group's members (in traceEvents order) chained: each member that starts before the
// chain so far ends is dropped into it, the chain's first stretched over it. Returns the
// number dropped.
size_t chain_group(Trace& trace, std::vector<uint32_t>& members) {
  if (members.size() < 2) return 0;
  // members are in traceEvents order, so a stable sort by (start, end) is (start, end, position).
  std::stable_sort(members.begin(), members.end(), [&](uint32_t a, uint32_t b) {
    const Event &x = trace.events[a], &y = trace.events[b];
    Ns xs = x.final_ts(), ys = y.final_ts();
    return xs != ys ? xs < ys : xs + x.final_dur() < ys + y.final_dur();
  });
  size_t removed = 0, k = 0;
  while (k < members.size()) {
    Event& head = trace.events[members[k]];
    Ns start = head.final_ts(), end = start + head.final_dur();
    size_t next = k + 1;
    while (next < members.size()) {
      const Event& candidate = trace.events[members[next]];
      if (candidate.final_ts() > end) break;
      end = std::max(end, candidate.final_ts() + candidate.final_dur());
      trace.events[members[next]].dropped = true;
      ++removed;
      ++next;
    }
    if (next > k + 1 && end - start != head.final_dur()) head.set_dur(end - start);
    k = next;
  }
  return removed;
}

// The annotation spans that coalescing could act on, in traceEvents order: those whose
// closed [start, end] meets another's of the same final tid and name.
//
// Two annotations of one identity have the same final tid and name, and chain_group only
// drops a member that meets an earlier one, and only stretches a head that the next member
// meets. An annotation that meets none of its (tid, name) meets none of its identity: it
// stays as it is, and left out of its group it changes no chain (the members around it
// did not meet it, so they do not chain through it). Only these few need an identity,
// which is a parse of the event: on a generated CUDA-graph PP trace, 34 of 262k
// annotations.
//
// The reader knows the name by its key as written, the identity by its key unescaped: in
// an event with a backslash anywhere in its text, a key such as "na\u006de" may be the
// name the reader did not see. Every annotation on the tid of such an event gets an
// identity.
std::vector<uint32_t> meeting_annotations(const Trace& trace, std::span<const uint32_t> candidates) {
  // Grouped by a hash of (tid, name): annotations whose hashes collide are only more to
  // check. Each range sorts its own by (group, start), concurrently; the ranges' runs are
  // then merged in pairs. Any order of equal keys will do (see below).
  struct Extent {
    uint64_t group, tid;  // hashes of (tid, name) and of the tid
    Ns start, end;
    uint32_t event;
    bool escaped;  // a backslash in the event's text
  };
  const auto before = [](const Extent& a, const Extent& b) {
    return a.group != b.group ? a.group < b.group : a.start < b.start;
  };
  const auto& events = trace.events;
  std::vector<std::vector<Extent>> runs =
      gather_ranges<std::vector<Extent>>(candidates.size(), [&](size_t begin, size_t end, std::vector<Extent>& part) {
        std::array<char, 24> digits;
        for (size_t k = begin; k < end; ++k) {
          const uint32_t i = candidates[k];
          const Event& event = events[i];
          if (!is_annotation_span(event)) continue;
          const uint64_t tid = std::hash<std::string_view>{}(tid_key(event, digits));
          const uint64_t group = tid ^ (std::hash<std::string_view>{}(event.name) * 0x9e3779b97f4a7c15ull);
          const Ns start = event.final_ts();
          const bool escaped = event.raw.view().find('\\') != std::string_view::npos;
          part.push_back({group, tid, start, start + event.final_dur(), i, escaped});
        }
        std::sort(part.begin(), part.end(), before);
      });
  while (runs.size() > 1) {
    std::vector<std::vector<Extent>> merged((runs.size() + 1) / 2);
    for (size_t k = 0; k + 1 < runs.size(); k += 2) {
      merged[k / 2].resize(runs[k].size() + runs[k + 1].size());
      std::merge(runs[k].begin(), runs[k].end(), runs[k + 1].begin(), runs[k + 1].end(), merged[k / 2].begin(), before);
    }
    if (runs.size() % 2) merged.back() = std::move(runs.back());
    runs = std::move(merged);
  }
  const std::vector<Extent> extents = runs.empty() ? std::vector<Extent>() : std::move(runs[0]);
  // By start within a group: a member meets an earlier one when it starts by the latest end
  // before it, and a later one when the next member starts by its end.
  std::vector<uint32_t> meeting;
  for (size_t first = 0; first < extents.size();) {
    size_t last = first + 1;
    while (last < extents.size() && extents[last].group == extents[first].group) ++last;
    Ns latest_end = INT64_MIN;
    for (size_t k = first; k < last; ++k) {
      const Extent& extent = extents[k];
      const bool meets_earlier = k > first && extent.start <= latest_end;
      const bool meets_later = k + 1 < last && extents[k + 1].start <= extent.end;
      if (meets_earlier || meets_later) meeting.push_back(extent.event);
      latest_end = std::max(latest_end, extent.end);
    }
    first = last;
  }
  std::vector<uint64_t> escaped_tids;
  for (const Extent& extent : extents)
    if (extent.escaped) escaped_tids.push_back(extent.tid);
  if (!escaped_tids.empty()) {
    std::sort(escaped_tids.begin(), escaped_tids.end());
    for (const Extent& extent : extents)
      if (std::binary_search(escaped_tids.begin(), escaped_tids.end(), extent.tid)) meeting.push_back(extent.event);
  }
  std::sort(meeting.begin(), meeting.end());
  meeting.erase(std::unique(meeting.begin(), meeting.end()), meeting.end());
  return meeting;
}

}  // namespace

size_t coalesce_annotations(Trace& trace) {
  std::vector<uint32_t> every(trace.events.size());
  std::iota(every.begin(), every.end(), uint32_t(0));
  return coalesce_annotations(trace, every);
}

size_t coalesce_annotations(Trace& trace, std::span<const uint32_t> candidates) {
  // Identity: the final tid, and every other key but ts, dur and tid, by meaning. Working
  // it out (a parse of the event) is done for the annotations that meet another
  // (meeting_annotations), over ranges of them concurrently, each range sorting its
  // annotations into shards by the identity's hash; each shard's groups are then filled
  // in traceEvents order (range after range) and chained, shards concurrently. An
  // identity's hash is worked out once, in its range: it picks the shard and is the
  // shard's map's hash.
  struct Identity {
    std::string text;
    size_t hash = 0;
    bool operator==(const Identity& other) const { return hash == other.hash && text == other.text; }
  };
  struct HashOf {
    size_t operator()(const Identity& identity) const { return identity.hash; }
  };
  const std::vector<uint32_t> meeting = meeting_annotations(trace, candidates);
  using Identities = std::vector<std::pair<uint32_t, Identity>>;
  using Sharded = std::vector<Identities>;
  std::vector<Sharded> identities =
      gather_ranges<Sharded>(meeting.size(), [&](size_t begin, size_t end, Sharded& part) {
        part.resize(kIdentityShards);
        simdjson::dom::parser parser;  // reused for every annotation of the range
        FieldLists lists;
        std::string key;
        for (size_t k = begin; k < end; ++k)
          if (annotation_identity(trace.events[meeting[k]], parser, lists, key)) {
            size_t hash = std::hash<std::string>{}(key);
            part[hash % kIdentityShards].push_back({meeting[k], Identity{key, hash}});
          }
      });
  std::vector<size_t> removed(kIdentityShards);
  for_each_index(kIdentityShards, [&](size_t shard) {
    std::unordered_map<Identity, std::vector<uint32_t>, HashOf> groups;
    for (Sharded& part : identities)
      for (auto& [i, identity] : part[shard]) groups[std::move(identity)].push_back(i);
    for (auto& [identity, members] : groups) removed[shard] += chain_group(trace, members);
  });
  return std::accumulate(removed.begin(), removed.end(), size_t(0));
}

namespace {

// A run of one name on a lane: the kernels from the first to the last of it.
struct KernelRun {
  std::string_view name, name_raw;
  Ns start = 0, end = 0;
};

// The runs among a lane's slices [begin, end) as a serial walk finds them, and whether
// the range's first slice starts its first run and its last slice leaves its last run
// open: what joins a run across two ranges.
struct RangeRuns {
  std::vector<KernelRun> runs;
  std::deque<std::string> unescaped;  // the names of runs whose args.name has escapes
  size_t converted = 0;
  bool starts_with_run = false, ends_open = false;
};

RangeRuns runs_in(const Trace& trace, const std::vector<uint32_t>& slices, size_t begin, size_t end) {
  RangeRuns found;
  std::string buffer;  // an args.name with escapes, unescaped
  bool open = false;
  for (size_t k = begin; k < end; ++k) {
    // A lane's slices lie all over traceEvents: each record, then its args.name's text, is
    // asked for ahead.
    if (k + 2 * kPrefetchAhead < end) {
      const Event& ahead = trace.events[slices[k + 2 * kPrefetchAhead]];
      const char* record = reinterpret_cast<const char*>(&ahead);  // up to three cache lines
      for (size_t at : {size_t(0), sizeof(Event) / 2, sizeof(Event) - 1}) __builtin_prefetch(record + at);
    }
    if (k + kPrefetchAhead < end) prefetch(trace.events[slices[k + kPrefetchAhead]].arg_name_raw());
    const Event& event = trace.events[slices[k]];
    std::string_view name = event.arg_name(buffer);
    if (name.empty()) {
      open = false;
      continue;
    }
    ++found.converted;
    Ns start = event.ts.ns, stop = start + event.dur.ns;
    if (open && name == found.runs.back().name) {
      found.runs.back().end = stop;
      continue;
    }
    if (k == begin) found.starts_with_run = true;
    if (name.data() == buffer.data()) name = found.unescaped.emplace_back(buffer);
    found.runs.push_back(KernelRun{name, event.arg_name_raw(), start, stop});
    open = true;
  }
  found.ends_open = open;
  return found;
}

// The span a run becomes on its lane's annotation track.
Event run_span(const Lane& lane, const KernelRun& run, Trace& owner) {
  EventBuilder builder;
  builder.raw("name", run.name_raw).string("cat", "gpu_user_annotation").string("ph", "X");
  builder.integer("pid", lane.pid, kPid).integer("tid", lane.annotation_tid, kTid);
  builder.time("ts", run.start, kTs).time("dur", run.end - run.start, kDur).raw("args", "{}");
  Event event = builder.finish(owner);
  // The name read lies in the run's args.name text, unless that had escapes: then it was
  // unescaped into the walk's storage, which goes before the trace does, and is copied.
  const bool in_text = run.name.data() >= run.name_raw.data() &&
                       run.name.data() + run.name.size() <= run.name_raw.data() + run.name_raw.size();
  event.name = in_text ? Text(run.name) : Text(owner.keep(run.name));
  event.cat = "gpu_user_annotation";
  event.set_ph('X');
  event.pid = Id{Id::Kind::integer, lane.pid};
  event.tid = Id{Id::Kind::integer, lane.annotation_tid};
  event.ts = Time{true, true, run.start};
  event.dur = Time{true, true, run.end - run.start};
  return event;
}

}  // namespace

KernelRunCounts annotate_kernel_runs(Trace& trace, const std::vector<Lane>& lanes) {
  // Found over ranges of each lane's slices concurrently, then joined where a run goes on
  // from one range into the next; the spans are made concurrently and appended in lane
  // and time order: what one walk over the lanes appends.
  struct LaneRange {
    size_t lane, begin, end;
  };
  std::vector<LaneRange> ranges;  // each lane's slices cut into ranges, lane after lane
  for (size_t l = 0; l < lanes.size(); ++l)
    for (size_t r = 0; r < range_count(lanes[l].slices.size()); ++r)
      ranges.push_back({l, r * events_per_range, std::min(lanes[l].slices.size(), (r + 1) * events_per_range)});
  std::vector<RangeRuns> found(ranges.size());
  for_each_index(ranges.size(), [&](size_t r) {
    found[r] = runs_in(trace, lanes[ranges[r].lane].slices, ranges[r].begin, ranges[r].end);
  });
  KernelRunCounts counts;
  std::vector<std::vector<KernelRun>> runs(lanes.size());
  for (size_t r = 0; r < ranges.size(); ++r) {
    RangeRuns& part = found[r];
    counts.converted += part.converted;
    std::vector<KernelRun>& lane_runs = runs[ranges[r].lane];
    auto next = part.runs.begin();
    bool goes_on = r > 0 && ranges[r - 1].lane == ranges[r].lane && found[r - 1].ends_open && part.starts_with_run;
    if (goes_on && next->name == lane_runs.back().name) lane_runs.back().end = (next++)->end;
    lane_runs.insert(lane_runs.end(), next, part.runs.end());
  }
  std::vector<std::pair<const Lane*, const KernelRun*>> spans;  // lane after lane
  for (size_t l = 0; l < lanes.size(); ++l)
    for (const KernelRun& run : runs[l]) spans.push_back({&lanes[l], &run});
  counts.blocks = spans.size();
  append_made_events(trace, spans.size(), 1, [&](size_t k, Trace& owner, Event* out) {
    *out = run_span(*spans[k].first, *spans[k].second, owner);
  });
  return counts;  // `found`, which the runs' unescaped names view, only now goes
}

}  // namespace tracelane
