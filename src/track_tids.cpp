// Track tids that line up across ranks (SPEC 9.11).
//
// Every rank of a job is compacted on its own, so a rule that gives the same lane the same
// tid on every rank can only depend on what identifies the lane inside its own trace: the
// rules' group, the lane's number within its group, which of the lane's tracks it is
// (slices, annotations, annotation sub-track n), and which GPU of the trace it is on (its
// pid's place among the trace's GPU pids, 0 for the usual one GPU per rank trace). Those
// numbers are written as decimal digits above 10^9, 1'PP'GG'NNNN'T, a range that Linux
// thread ids (at most 2^22) and CUDA stream ids never reach, so the lane's tid is the same
// on every rank without knowing the others. A tid the trace already uses (anywhere, not
// only in the lane's pid) is never handed out: such a track, and one whose numbers do not
// fit the digits, gets the next tid from 2*10^9 up that the trace does not use, and is
// counted (`lane_tids_unaligned` in the summary).
#include "tracelane/track_tids.hpp"

#include "parallel_ranges.hpp"

namespace tracelane {

TrackTids::TrackTids(const std::vector<Event>& events, int64_t largest_tid) {
  if (largest_tid < kFirst) return;
  using Tids = std::vector<int64_t>;  // found over ranges of events concurrently
  const std::vector<Tids> found = gather_ranges<Tids>(events.size(), [&](size_t begin, size_t end, Tids& part) {
    for (size_t i = begin; i < end; ++i)
      if (events[i].tid.is_int() && events[i].tid.value >= kFirst) part.push_back(events[i].tid.value);
  });
  for (const Tids& part : found) input_from_first_.insert(part.begin(), part.end());
}

std::optional<int64_t> TrackTids::aligned(const TrackKey& key) {
  if (key.gpu >= kGpus || key.group >= kGroups || key.number >= kNumbers || key.track >= kTracks) return std::nullopt;
  return kFirst + int64_t(key.gpu) * 10000000 + int64_t(key.group) * 100000 + int64_t(key.number) * 10 +
         int64_t(key.track);
}

int64_t TrackTids::tid(const TrackKey& key) {
  auto [it, inserted] = given_.try_emplace(key, 0);
  if (!inserted) return it->second;
  std::optional<int64_t> preferred = aligned(key);
  if (preferred && !input_from_first_.count(*preferred)) {
    it->second = *preferred;  // keys are distinct digits: no two keys share an aligned tid
    return it->second;
  }
  // Fallbacks lie above every aligned tid, so they cannot take one a later key wants.
  while (input_from_first_.count(next_fallback_)) ++next_fallback_;
  it->second = next_fallback_++;
  ++unaligned_;
  return it->second;
}

}  // namespace tracelane
