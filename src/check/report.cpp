// The verifier's report: the names of the violation kinds and the text `tracelane check`
// prints (format_report).
#include <algorithm>
#include <string>

#include "check.hpp"

namespace tracelane::check {

const char* kind_name(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::missing_slice:
      return "missing_slice";
    case ViolationKind::extra_slice:
      return "extra_slice";
    case ViolationKind::lane_overlap:
      return "lane_overlap";
    case ViolationKind::lane_partial_overlap:
      return "lane_partial_overlap";
    case ViolationKind::annotation_partial_overlap:
      return "annotation_partial_overlap";
    case ViolationKind::unbound_flow:
      return "unbound_flow";
    case ViolationKind::missing_flow:
      return "missing_flow";
    case ViolationKind::missing_event:
      return "missing_event";
    case ViolationKind::changed_top_level:
      return "changed_top_level";
  }
  return "?";
}

uint64_t CheckReport::violation_count() const {
  uint64_t total = 0;
  for (uint64_t n : by_kind) total += n;
  return total;
}

std::string format_report(const CheckReport& r, size_t listed) {
  auto n = [](uint64_t v) { return std::to_string(v); };
  auto k = [&](ViolationKind kind) { return n(r.count(kind)); };
  std::string s;
  s += "events: ORIGINAL " + n(r.original_events) + ", COMPACTED " + n(r.compacted_events) + "; GPU pids " +
       n(r.gpu_pids) + "\n";
  s += "measured slices: " + n(r.measured_slices) + " kernel/memcpy/memset + " + n(r.cuda_sync_events) +
       " cuda_sync checked (name, cat, ph, pid, ts, dur, args but stream): missing " + k(ViolationKind::missing_slice) +
       ", extra " + k(ViolationKind::extra_slice) + "\n";
  s += "GPU tracks: " + n(r.lane_tracks) + " lane, " + n(r.annotation_tracks) + " annotation: overlapping slices " +
       k(ViolationKind::lane_overlap) + ", partial overlaps on lane tracks " + k(ViolationKind::lane_partial_overlap) +
       ", on annotation tracks " + k(ViolationKind::annotation_partial_overlap) + "\n";
  s += "flow endpoints on GPU pids: " + n(r.flows_checked) + " checked: unbound " + k(ViolationKind::unbound_flow) +
       " (+" + n(r.flows_unbound_preexisting) + " already unbound in ORIGINAL, a warning), missing " +
       k(ViolationKind::missing_flow) + "\n";
  s += "other events: " + n(r.other_events_checked) + " checked: missing or changed " +
       k(ViolationKind::missing_event) + " (" + n(r.other_events_added) + " new in COMPACTED)\n";
  s += "top-level keys: " + n(r.top_level_keys_checked) + " checked: missing or changed " +
       k(ViolationKind::changed_top_level) + "\n";
  if (r.inexact_times)
    s += "note: " + n(r.inexact_times) +
         " ts/dur values have digits past the nanosecond; compared rounded to the nanosecond, as Perfetto reads them\n";
  uint64_t total = r.violation_count();
  if (total) {
    s += "violations by kind:";
    for (size_t i = 0; i < kViolationKinds; ++i)
      if (r.by_kind[i]) s += std::string(" ") + kind_name(ViolationKind(i)) + "=" + n(r.by_kind[i]);
    s += "\n";
    size_t shown = std::min(listed, r.violations.size());
    for (size_t i = 0; i < shown; ++i) {
      const Violation& v = r.violations[i];
      s += std::string("  ") + kind_name(v.kind);
      if (v.index >= 0) s += std::string(v.in_compacted ? " COMPACTED #" : " ORIGINAL #") + std::to_string(v.index);
      s += ": " + v.message + "\n";
    }
    if (total > shown) s += "  ... and " + n(total - shown) + " more\n";
    s += "check: " + n(total) + " violation(s)\n";
  } else {
    s += "check: OK\n";
  }
  return s;
}

}  // namespace tracelane::check
