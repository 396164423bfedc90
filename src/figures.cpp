// GPU busy figures (docs/figures.md). Compaction has already sorted every measured slice
// into a lane of its group, so a group's busy time is the length of the union of its
// lanes' slices: the slices of a group are gathered, sorted by start, and overlapping or
// touching ones merged into disjoint pieces. Everything after that is a walk over the
// pieces in time order:
//  - busy fraction: the pieces' length clipped to the window, over the window;
//  - occupancy: the window is cut into `bins` bins with integer boundaries
//    start + floor(k * window / bins); each piece adds its overlap to the bins it spans
//    (a bin pointer that only moves forward, since pieces are disjoint and sorted);
//  - bubble: over the span of a rank's compute pieces, the part they do not cover.
// All of it is exact integer nanoseconds; only the final ratios are rounded, half up.
#include "tracelane/figures.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>

#include "parallel_ranges.hpp"
#include "tracelane/classify.hpp"
#include "tracelane/rules.hpp"

namespace tracelane {
namespace {

struct Piece {
  Ns start = 0, end = 0;
};

// Sorts pieces by start. A group's pieces are its lanes' slices, lane after lane, each
// lane's in time order: a few sorted runs, merged in linear time rather than sorted
// again. Any order of equal starts gives the same union.
void sort_by_start(std::vector<Piece>& pieces) {
  constexpr size_t kMostRunsToMerge = 16;
  const auto by_start = [](const Piece& a, const Piece& b) { return a.start < b.start; };
  std::vector<size_t> run_ends;
  for (auto it = pieces.begin(); it != pieces.end() && run_ends.size() <= kMostRunsToMerge;) {
    it = std::is_sorted_until(it, pieces.end(), by_start);
    run_ends.push_back(size_t(it - pieces.begin()));
  }
  if (run_ends.size() > kMostRunsToMerge) return std::sort(pieces.begin(), pieces.end(), by_start);
  for (size_t r = 1; r < run_ends.size(); ++r)
    std::inplace_merge(pieces.begin(), pieces.begin() + ptrdiff_t(run_ends[r - 1]),
                       pieces.begin() + ptrdiff_t(run_ends[r]), by_start);
}

// Disjoint, sorted, non-empty pieces covering exactly the union of `pieces`, made in
// place (a group's pieces are its lanes' slices: hundreds of thousands).
std::vector<Piece> union_of(std::vector<Piece> pieces) {
  sort_by_start(pieces);
  size_t kept = 0;
  for (const Piece& piece : pieces) {
    if (piece.end <= piece.start) continue;  // a zero-length slice keeps nothing busy
    if (kept > 0 && piece.start <= pieces[kept - 1].end)
      pieces[kept - 1].end = std::max(pieces[kept - 1].end, piece.end);
    else
      pieces[kept++] = piece;
  }
  pieces.resize(kept);
  return pieces;
}

Ns covered(const std::vector<Piece>& pieces, Ns from, Ns to) {
  Ns total = 0;
  for (const Piece& piece : pieces) {
    Ns start = std::max(piece.start, from), end = std::min(piece.end, to);
    if (end > start) total += end - start;
  }
  return total;
}

// round(part / whole * 10000), half up; 0 for an empty whole.
int ten_thousandths(Ns part, Ns whole) {
  if (whole <= 0) return 0;
  return int(((__int128)part * 2 * kFractionScale + whole) / ((__int128)whole * 2));
}

std::string occupancy(const std::vector<Piece>& pieces, Ns start, Ns end, int bins) {
  const Ns window = end - start;
  auto bound = [&](int k) { return start + Ns((__int128)window * k / bins); };
  std::vector<Ns> busy(size_t(bins), 0);
  int k = 0;
  for (const Piece& piece : pieces) {
    Ns from = std::max(piece.start, start), to = std::min(piece.end, end);
    if (to <= from) continue;
    while (k < bins - 1 && bound(k + 1) <= from) ++k;
    for (int j = k; j < bins && bound(j) < to; ++j) {
      Ns lo = std::max(from, bound(j)), hi = std::min(to, bound(j + 1));
      if (hi > lo) busy[size_t(j)] += hi - lo;
    }
  }
  std::string digits(size_t(bins), '0');
  for (int j = 0; j < bins; ++j) {
    Ns width = bound(j + 1) - bound(j);
    if (width > 0)
      digits[size_t(j)] = char('0' + int(((__int128)busy[size_t(j)] * 18 + width) / ((__int128)width * 2)));
  }
  return digits;
}

// A trace's slices by group id (with the group's label), and its measured window.
struct Gathered {
  std::map<std::string, std::vector<Piece>> by_group;
  std::map<std::string, std::string> labels;
  bool any_measured = false;
  Ns first_start = 0, last_end = 0;
};

// The lanes' slices are read concurrently, a lane each, then put together group by group
// in lane order.
void gather(const CompactedTrace& compacted, const Rules& rules, Gathered& out) {
  const auto& groups = rules.groups();
  struct LanePieces {
    std::vector<Piece> pieces;
    bool any_measured = false;
    Ns first_start = 0, last_end = 0;
  };
  std::vector<LanePieces> lanes(compacted.lanes.size());
  for_each_index(lanes.size(), [&](size_t l) {
    LanePieces& lane = lanes[l];
    lane.pieces.reserve(compacted.lanes[l].slices.size());
    for (uint32_t index : compacted.lanes[l].slices) {
      const Event& event = compacted.trace.events[index];
      Ns start = event.final_ts(), end = start + event.final_dur();
      lane.pieces.push_back({start, end});
      // The window is the measured slices' (SPEC 2); sync slices are clipped to it.
      if (!is_measured_cat(event.cat)) continue;
      if (!lane.any_measured || start < lane.first_start) lane.first_start = start;
      if (!lane.any_measured || end > lane.last_end) lane.last_end = end;
      lane.any_measured = true;
    }
  });
  // Each group's pieces in one vector of exactly their number, each lane's freed once copied.
  std::map<std::string, size_t> per_group;
  for (size_t l = 0; l < lanes.size(); ++l) per_group[compacted.lanes[l].group_id] += lanes[l].pieces.size();
  for (const auto& [group, count] : per_group) out.by_group[group].reserve(count);
  for (size_t l = 0; l < lanes.size(); ++l) {
    const Lane& lane = compacted.lanes[l];
    auto& pieces = out.by_group[lane.group_id];
    if (lane.group >= 0 && size_t(lane.group) < groups.size())
      out.labels.emplace(lane.group_id, groups[size_t(lane.group)].label);
    pieces.insert(pieces.end(), lanes[l].pieces.begin(), lanes[l].pieces.end());
    std::vector<Piece>().swap(lanes[l].pieces);  // freed, not only emptied
    if (!lanes[l].any_measured) continue;
    if (!out.any_measured || lanes[l].first_start < out.first_start) out.first_start = lanes[l].first_start;
    if (!out.any_measured || lanes[l].last_end > out.last_end) out.last_end = lanes[l].last_end;
    out.any_measured = true;
  }
}

double us_of(Ns ns) { return double(ns) / 1000.0; }

}  // namespace

std::string fraction_text(int value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%d.%04d", value / kFractionScale, value % kFractionScale);
  return buffer;
}

std::string real_text(double value) {
  char buffer[400];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
  return std::string(buffer, result.ptr);
}

GpuFigures trace_figures(const CompactedTrace& compacted, const Rules* rules, std::optional<int64_t> rank,
                         std::optional<int64_t> pp_rank) {
  Gathered gathered;
  gather(compacted, rules ? *rules : Rules::defaults(), gathered);
  GpuFigures figures;
  Ns start = gathered.first_start, end = gathered.last_end;
  figures.window_us = us_of(end - start);
  figures.timeline.start_us = us_of(start);
  figures.timeline.end_us = us_of(end);
  // The groups' strips are worked out concurrently, and kept in group order.
  std::vector<std::pair<const std::string, std::vector<Piece>>*> groups;
  for (auto& group : gathered.by_group) groups.push_back(&group);
  std::vector<TimelineStrip> strips(groups.size());
  for_each_index(groups.size(), [&](size_t g) {
    auto& [group, pieces] = *groups[g];
    std::vector<Piece> merged = union_of(std::move(pieces));
    TimelineStrip& strip = strips[g];
    strip.rank = rank;
    strip.pp_rank = pp_rank;
    strip.group = group;
    strip.occupancy = occupancy(merged, start, end, figures.timeline.bins);
    auto label = gathered.labels.find(group);
    strip.label = label != gathered.labels.end() ? label->second : group;
    strip.busy = ten_thousandths(covered(merged, start, end), end - start);
  });
  for (TimelineStrip& strip : strips) {
    figures.busy[strip.group] = strip.busy;
    figures.timeline.strips.push_back(std::move(strip));
  }
  return figures;
}

GpuFigures merged_figures(const std::vector<RankLanes>& ranks, const Rules* rules) {
  const Rules& used = rules ? *rules : Rules::defaults();
  std::vector<Gathered> per_rank(ranks.size());
  std::set<std::string> groups;
  std::map<std::string, std::string> labels;
  bool any = false;
  Ns start = 0, end = 0;
  for_each_index(ranks.size(), [&](size_t r) { gather(*ranks[r].compacted, used, per_rank[r]); });
  for (size_t r = 0; r < ranks.size(); ++r) {
    Gathered& g = per_rank[r];
    for (const auto& [group, pieces] : g.by_group) groups.insert(group);
    labels.insert(g.labels.begin(), g.labels.end());
    if (!g.any_measured) continue;
    start = any ? std::min(start, g.first_start) : g.first_start;
    end = any ? std::max(end, g.last_end) : g.last_end;
    any = true;
  }
  GpuFigures figures;
  figures.merged = true;
  figures.window_us = us_of(end - start);
  figures.timeline.start_us = us_of(start);
  figures.timeline.end_us = us_of(end);
  // Every rank gets a strip of every group any rank has, so ranks line up strip by strip.
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const std::string& group : groups) {
      auto found = per_rank[r].by_group.find(group);
      std::vector<Piece> slices;
      if (found != per_rank[r].by_group.end()) slices = std::move(found->second);
      if (group == "compute" && !slices.empty()) {
        // The rank's compute span: first start to last end of its compute slices.
        Ns first = slices.front().start, last = slices.front().end;
        for (const Piece& piece : slices) first = std::min(first, piece.start), last = std::max(last, piece.end);
        std::vector<Piece> compute = union_of(slices);
        figures.bubble[ranks[r].global_rank] =
            ten_thousandths((last - first) - covered(compute, first, last), last - first);
      }
      std::vector<Piece> merged = union_of(std::move(slices));
      TimelineStrip strip;
      strip.rank = ranks[r].global_rank;
      strip.pp_rank = ranks[r].pp_rank;
      strip.group = group;
      strip.occupancy = occupancy(merged, start, end, figures.timeline.bins);
      strip.label = labels.count(group) ? labels[group] : group;
      strip.busy = ten_thousandths(covered(merged, start, end), end - start);
      figures.timeline.strips.push_back(std::move(strip));
    }
  }
  return figures;
}

void add_figures_json(JsonValue& object, const GpuFigures& figures, std::string (*text)(const std::string&)) {
  auto name = [&](const std::string& s) { return text ? text(s) : s; };
  object.set("gpu_window_us", JsonValue::raw_number(real_text(figures.window_us)));
  if (!figures.merged) {
    JsonValue busy = JsonValue::object();
    for (const auto& [group, value] : figures.busy) busy.set(name(group), JsonValue::raw_number(fraction_text(value)));
    object.set("gpu_busy", busy);
  } else {
    JsonValue bubble = JsonValue::object();
    for (const auto& [rank, value] : figures.bubble)
      bubble.set(std::to_string(rank), JsonValue::raw_number(fraction_text(value)));
    object.set("bubble_fraction", bubble);
  }
  const Timeline& timeline = figures.timeline;
  JsonValue t = JsonValue::object();
  t.set("start_us", JsonValue::raw_number(real_text(timeline.start_us)));
  t.set("end_us", JsonValue::raw_number(real_text(timeline.end_us)));
  t.set("bins", JsonValue::integer(timeline.bins));
  JsonValue strips = JsonValue::array();
  for (const TimelineStrip& strip : timeline.strips) {
    JsonValue s = JsonValue::object();
    s.set("rank", strip.rank ? JsonValue::integer(*strip.rank) : JsonValue::null());
    s.set("pp_rank", strip.pp_rank ? JsonValue::integer(*strip.pp_rank) : JsonValue::null());
    s.set("group", JsonValue::string(name(strip.group)));
    s.set("occupancy", JsonValue::string(strip.occupancy));
    strips.push(s);
  }
  t.set("strips", strips);
  object.set("timeline", t);
}

std::string busy_csv(const GpuFigures& figures, std::string (*text)(const std::string&)) {
  std::string out;
  for (const auto& [group, value] : figures.busy)
    out += (out.empty() ? "" : ";") + (text ? text(group) : group) + "=" + fraction_text(value);
  return out;
}

}  // namespace tracelane
