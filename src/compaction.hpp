// What the compaction passes share (compact.cpp runs them; some live in files of their
// own: pytorch_lanes.cpp, annotation_tracks.cpp). Private to src/.
#pragma once

#include <string>
#include <vector>

#include "annotations.hpp"
#include "tracelane/rules.hpp"
#include "tracelane/summary.hpp"
#include "tracelane/timings.hpp"

namespace tracelane {

// Declared, not included: tracelane/compact.hpp and compact.cpp, which includes this file,
// are one module (tests/code/check_layering.py).
struct CompactedTrace;
struct CompactOptions;

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
  // is_related_kind in compact.cpp), every annotation among them; no pass from
  // extract_slices to coalesce_annotations, which uses them last, adds events or changes a
  // ph or cat.
  std::vector<uint32_t> related;
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

// Which lanes PyTorch's exporter made are kept as they are (SPEC 9.8; pytorch_lanes.cpp).
void keep_pytorch_lanes(Compaction& c);
// Splits each annotation track whose spans cross into sub-tracks (SPEC 9.6), and records
// the tracks PP block building reads (annotation_tracks.cpp).
void split_annotation_tracks(Compaction& c);
// thread_name and thread_sort_index for every lane and annotation track (SPEC 5;
// annotation_tracks.cpp).
void add_lane_metadata(Compaction& c);

}  // namespace tracelane
