// `tracelane check ORIGINAL COMPACTED`: an independent verifier of a single-trace
// compaction (ours or any other tool's). It shares nothing with the compactor but the
// file reading: it parses both traces with simdjson's DOM API, takes every number and string
// from its own text (so times compare exactly, never through a double, and an integer beyond
// 64 bits or a lone surrogate escape such as \ud800 is read as JSON has it) and checks, from
// scratch:
//   - every measured slice of ORIGINAL (cat kernel, Kernel, gpu_memcpy, gpu_memset, Memcpy,
//     Memset; and every cuda_sync X event) is in COMPACTED with the same name, cat, ph,
//     pid, ts, dur and args except `stream` (a multiset: missing and extra are counted);
//   - on every GPU track of COMPACTED (a (pid, tid) holding measured, cuda_sync or
//     gpu_user_annotation X events) no two X events partially overlap (nesting and
//     touching are fine), and measured slices on one lane do not overlap at all, judged
//     as Perfetto draws them: in integer nanoseconds, ts and dur each rounded;
//   - every flow endpoint (ph s/t/f) on a GPU pid lies inside an X event of its own track
//     (those already unbound in ORIGINAL are only warned about) and none was lost;
//   - every other event of ORIGINAL (not a measured slice, gpu_user_annotation, GPU-pid
//     flow or GPU-pid thread_name/thread_sort_index) is in COMPACTED unchanged, and so is
//     every top-level key but traceEvents.
// "Unchanged" and "same" compare by value: objects with their keys sorted, numbers as exact
// decimals (1.50 == 1.5 == 15e-1), strings unescaped. Merged traces renumber pids and shift
// times, so this is for single-trace compaction only.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tracelane::check {

enum class ViolationKind {
  missing_slice,               // a measured slice of ORIGINAL with no identical one in COMPACTED
  extra_slice,                 // a measured slice of COMPACTED with no identical one in ORIGINAL
  lane_overlap,                // two measured slices overlap on one track
  lane_partial_overlap,        // another X event partially overlaps something on a lane track
  annotation_partial_overlap,  // two X events partially overlap on an annotation track
  unbound_flow,                // a flow endpoint on a GPU pid outside every X event of its track
  missing_flow,                // a flow endpoint of ORIGINAL on a GPU pid absent from COMPACTED
  missing_event,               // another event of ORIGINAL absent or changed in COMPACTED
  changed_top_level,           // a top-level key of ORIGINAL absent or changed in COMPACTED
};
inline constexpr size_t kViolationKinds = 9;
const char* kind_name(ViolationKind kind);

struct Violation {
  ViolationKind kind;
  bool in_compacted = false;  // which file `index` counts in
  int64_t index = -1;         // position in that file's traceEvents; -1 for top-level keys
  std::string message;
};

struct CheckOptions {
  size_t max_recorded = 1000;  // violations kept in CheckReport::violations (all are counted)
};

struct CheckReport {
  uint64_t original_events = 0, compacted_events = 0;
  uint64_t measured_slices = 0;   // kernel/memcpy/memset events of ORIGINAL
  uint64_t cuda_sync_events = 0;  // cuda_sync X events of ORIGINAL (compared like slices)
  uint64_t gpu_pids = 0;
  uint64_t lane_tracks = 0, annotation_tracks = 0;  // GPU tracks of COMPACTED
  uint64_t flows_checked = 0;                       // flow endpoints on GPU pids of COMPACTED
  uint64_t flows_unbound_preexisting = 0;           // also unbound in ORIGINAL: a warning
  uint64_t other_events_checked = 0;
  uint64_t other_events_added = 0;  // in COMPACTED only, not GPU ones: info
  uint64_t top_level_keys_checked = 0;
  uint64_t inexact_times = 0;  // ts/dur with digits past the nanosecond (compared rounded)
  std::array<uint64_t, kViolationKinds> by_kind{};
  std::vector<Violation> violations;  // the first CheckOptions::max_recorded, by check

  uint64_t count(ViolationKind kind) const { return by_kind[size_t(kind)]; }
  uint64_t violation_count() const;
  bool ok() const { return violation_count() == 0; }
};

// A file that is not JSON or not a trace object with a traceEvents array.
class CheckInputError : public std::runtime_error {
 public:
  CheckInputError(bool compacted, const std::string& what) : std::runtime_error(what), in_compacted(compacted) {}
  bool in_compacted;
};

// Both arguments are whole (already decompressed) JSON documents.
CheckReport check_traces(std::string_view original_json, std::string_view compacted_json,
                         const CheckOptions& options = {});

// A few lines of counts, the first `listed` violations, and "check: OK" or
// "check: N violation(s)".
std::string format_report(const CheckReport& report, size_t listed = 10);

}  // namespace tracelane::check
