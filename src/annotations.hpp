// Internal: the measured slices of one trace, indexed by old stream, and the annotation
// passes that use them.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tracelane/lanes.hpp"
#include "tracelane/trace.hpp"

namespace tracelane {

struct Slice {  // 32 bytes, without padding: one is kept per measured slice
  uint32_t event = 0;
  int group = 0;
  Ns start = 0, end = 0;
  uint32_t stream = 0;  // index into SliceSet::streams, whose pid is the slice's
  uint32_t lane = 0;    // index into the lane list
};

// One (pid, tid) that held measured slices in the input.
struct OldStream {
  int64_t pid = 0;
  std::string_view tid_text;
  std::vector<uint32_t> slices;  // slice indices, sorted by start (ties: traceEvents order)
  std::vector<Ns> starts;        // starts[k] = start of slices[k]
  std::vector<Ns> max_end;       // max_end[k] = largest end among slices[0..k]
};

// An old stream's key: (pid, tid as written).
using StreamKey = std::pair<int64_t, std::string_view>;
struct StreamKeyHash {
  size_t operator()(const StreamKey& key) const {
    return std::hash<std::string_view>()(key.second) * 1000003u ^ std::hash<int64_t>()(key.first);
  }
};

// An old stream's key by value, for an event whose tid was read as a nonzero integer and
// is unchanged: its text is then the value's decimal, as the integer grammar that makes
// Id::Kind::integer (parse_json_int: no leading zero, '+', fraction or exponent) spells
// each value one way but 0, which "-0" spells too. So (pid, value) names the same stream
// as (pid, text) without reading the text, a cache miss for each of the millions of
// events remap_related asks about. (7.0 and 7e0 are numbers of another kind, by text.)
struct IntStreamKey {
  int64_t pid = 0, tid = 0;
  friend bool operator==(const IntStreamKey&, const IntStreamKey&) = default;
};
struct IntStreamKeyHash {
  size_t operator()(const IntStreamKey& key) const {
    return std::hash<int64_t>()(key.tid) * 1000003u ^ std::hash<int64_t>()(key.pid);
  }
};
// Whether the event's stream is found by IntStreamKey.
inline bool tid_keyed_by_value(const Event& event) {
  return event.tid.is_int() && event.tid.value != 0 && !((event.changed >> kTid) & 1) && !event.synthesised;
}

struct SliceSet {
  std::vector<Slice> slices;
  std::vector<OldStream> streams;
  std::vector<bool> is_slice;  // per event index

  // The stream's index, a new stream (last) when it has none yet.
  uint32_t stream_index(const StreamKey& key);
  // Adds the event as a slice on the stream (stream_index of its pid and tid).
  void add(const Trace& trace, uint32_t event_index, int group, uint32_t stream);
  void finish(const Trace& trace);  // sorts each stream's slices
  const OldStream* find_stream(int64_t pid, std::string_view tid_text) const;
  // The stream of the event's (pid, tid), as find_stream(pid, tid text) finds it.
  const OldStream* find_stream(const Event& event) const;
  // Frees the slices, the streams and their index, keeping is_slice, once no pass needs
  // more (after remap_related): ~60 bytes a slice, held otherwise through the
  // compaction's peak.
  void release_all_but_is_slice() {
    std::vector<Slice>().swap(slices);
    std::vector<OldStream>().swap(streams);
    std::unordered_map<StreamKey, uint32_t, StreamKeyHash>().swap(index_);
    std::unordered_map<IntStreamKey, uint32_t, IntStreamKeyHash>().swap(int_index_);
    std::unordered_set<int64_t>().swap(pids_);
  }

  // SPEC 5/9.2: the slice starting exactly at ts (latest in traceEvents), else the one
  // containing ts (the latest-starting such slice).
  std::optional<uint32_t> slice_for_flow(const OldStream& stream, Ns ts) const;
  // SPEC 5: the nearest slice among positions p-1, p, p+1 (p = slices starting before ts).
  uint32_t nearest_slice(const OldStream& stream, Ns ts) const;

 private:
  std::unordered_map<StreamKey, uint32_t, StreamKeyHash> index_;
  std::unordered_map<IntStreamKey, uint32_t, IntStreamKeyHash> int_index_;  // those tid_keyed_by_value finds
  std::unordered_set<int64_t> pids_;                                        // the streams' pids
};

// SPEC 5 "Coalesce annotations" among `candidates`, indices of events in traceEvents order
// that include every annotation span: returns the number of events removed.
size_t coalesce_annotations(Trace& trace, std::span<const uint32_t> candidates);
// The same among every event.
size_t coalesce_annotations(Trace& trace);

// What annotate_kernel_runs() made: the kernels whose args.name joined a run, and the
// spans the runs became (CompactSummary's kernel_annotations_converted and _blocks).
struct KernelRunCounts {
  size_t converted = 0;
  size_t blocks = 0;
};

// SPEC 5 "Per-kernel annotations": runs of args.name on each lane become spans on the
// lane's annotation track.
KernelRunCounts annotate_kernel_runs(Trace& trace, const std::vector<Lane>& lanes);

}  // namespace tracelane
