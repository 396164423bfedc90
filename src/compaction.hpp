// What the compaction passes share (compact.cpp runs them; some live in files of their
// own: pytorch_lanes.cpp, annotation_tracks.cpp, validate.cpp). Private to src/.
#pragma once

#include <string>
#include <vector>

#include "annotations.hpp"
#include "tracelane/pp_spans.hpp"
#include "tracelane/rules.hpp"
#include "tracelane/summary.hpp"
#include "tracelane/timings.hpp"

namespace tracelane {

// Declared, not included: tracelane/compact.hpp and compact.cpp, which includes this file,
// are one module (tests/code/check_layering.py).
struct CompactedTrace;
struct CompactOptions;

// The events an annotation pass walks, by their indices in traceEvents order: every event,
// or, once extract_slices has listed the annotations and metadata events read, those and
// every event added since. A pass walks the few GPU-side events rather than every one:
// a real trace's events are mostly CPU-side.
class AnnotationEvents {
 public:
  explicit AnnotationEvents(size_t count) : count_(count) {}
  // `listed` (kept by the caller), then every index from `added_from` to `count`.
  AnnotationEvents(const std::vector<uint32_t>& listed, size_t added_from, size_t count)
      : listed_(&listed), added_from_(added_from), count_(count) {}

  size_t size() const { return listed_ ? listed_->size() + (count_ - added_from_) : count_; }
  uint32_t operator[](size_t k) const {
    if (!listed_) return uint32_t(k);
    return k < listed_->size() ? (*listed_)[k] : uint32_t(added_from_ + (k - listed_->size()));
  }

 private:
  const std::vector<uint32_t>* listed_ = nullptr;
  size_t added_from_ = 0, count_;
};

// What the passes share: the trace being compacted, the rules, and what the passes build
// (the slices, the lanes and their tids, the summary), which compact_trace returns.
struct Compaction {
  Compaction(CompactedTrace& result, const CompactOptions& compact_options);  // compact.cpp

  CompactedTrace& out;      // lanes, track_tids and pid_tracks are filled in by the passes
  Trace& trace;             // out.trace, compacted in place
  CompactSummary& summary;  // out.summary
  const Rules& rules;       // options.rules, or the built-in ones
  const CompactOptions& options;
  Timings* timings;  // null: no pass reads a clock
  SliceSet slices;   // the measured slices and their old streams, extract_slices to remap_related
  // The events remap_related may move, in traceEvents order (found by extract_slices: see
  // is_related_kind in compact.cpp); no pass between the two adds events or changes a ph
  // or cat.
  std::vector<uint32_t> related;
  // Every annotation (cat gpu_user_annotation) and metadata event (ph "M") read, in
  // traceEvents order, listed by extract_slices, and how many events there were then: what
  // the annotation passes walk (annotation_events()). No pass changes a ph or cat.
  bool annotations_listed = false;
  std::vector<uint32_t> annotations_and_metadata;
  size_t events_when_listed = 0;
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

// The events the annotation passes walk: annotations and metadata events, and any event
// added after extract_slices (AnnotationEvents).
inline AnnotationEvents annotation_events(const Compaction& c) {
  if (!c.annotations_listed) return AnnotationEvents(c.trace.events.size());
  return AnnotationEvents(c.annotations_and_metadata, c.events_when_listed, c.trace.events.size());
}

// The gpu_user_annotation X spans among `events` (collect_annotation_spans).
std::vector<AnnotationSpan> collect_annotation_spans(const Trace& trace, const AnnotationEvents& events);

// Where event `index` is, for messages: the file, the event's number and its byte.
inline std::string where(const Trace& trace, size_t index) {
  return trace.source + ": event #" + std::to_string(index) + " (byte " +
         std::to_string(trace.byte_offset(trace.events[index])) + ")";
}

// Which lanes PyTorch's exporter made are kept as they are (SPEC 9.8; pytorch_lanes.cpp).
void keep_pytorch_lanes(Compaction& c);
// Splits each annotation track whose spans cross into sub-tracks (SPEC 9.6), and records
// the tracks PP block building reads (annotation_tracks.cpp).
void split_annotation_tracks(Compaction& c);
// thread_name and thread_sort_index for every lane and annotation track (SPEC 5;
// annotation_tracks.cpp).
void add_lane_metadata(Compaction& c);
// Checks the events exactly as they will be written: the same slices, changed only in
// their placement, none overlapping on a lane (SPEC 6; validate.cpp).
void validate(Compaction& c);

}  // namespace tracelane
