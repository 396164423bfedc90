// PyTorch's lanes made whole (SPEC 9.8): which lanes its exporter made are kept as they are.
#include <algorithm>
#include <unordered_map>

#include "compaction.hpp"
#include "tracelane/classify.hpp"
#include "tracelane/compact.hpp"

namespace tracelane {
namespace {

// The name a trace gives the track (pid, tid) in its thread_name metadata, if any.
std::unordered_map<uint32_t, std::string> thread_names(const Trace& trace, const SliceSet& set,
                                                       const std::vector<char>& wanted) {
  std::unordered_map<uint32_t, std::string> names;
  for (const Event& event : trace.events) {
    if (event.ph() != "M" || event.name != "thread_name" || !event.pid.is_int() || !event.tid.present()) continue;
    const OldStream* stream = set.find_stream(event);
    if (!stream) continue;
    uint32_t s = uint32_t(stream - set.streams.data());
    std::string buffer;
    if (wanted[s] && event.has_span(kArgName)) names[s] = std::string(event.arg_name(buffer));
  }
  return names;
}

}  // namespace

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

}  // namespace tracelane
