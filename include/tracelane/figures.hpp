// GPU busy figures and the timeline picture of a compacted trace or a merged iteration
// (docs/figures.md defines each figure). They are computed from the lanes compaction has
// already built, never from the trace text again, and are small enough to keep in a report.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracelane/compact.hpp"
#include "tracelane/json_value.hpp"

namespace tracelane {

class Rules;

inline constexpr int kTimelineBins = 100;
inline constexpr int kMaxTimelineBins = 1000;  // the most a report may hold (a reader's bound)
// Fractions are held as exact integers in ten-thousandths and written with 4 decimals.
inline constexpr int kFractionScale = 10000;

// One strip of the timeline: when one lane group of one rank was busy.
struct TimelineStrip {
  std::optional<int64_t> rank, pp_rank;  // global rank and PP rank, when known
  std::string group;                     // the group id ("compute", "nccl_all_gather", ...)
  std::string occupancy;                 // `bins` digits, '0' idle .. '9' busy throughout
  // For the picture only (a report does not hold them): the group's label, and the busy
  // fraction of the whole window in ten-thousandths (-1: unknown).
  std::string label;
  int busy = -1;
};

struct Timeline {
  double start_us = 0, end_us = 0;  // the window on the trace's (or the merge's) clock
  int bins = kTimelineBins;
  std::vector<TimelineStrip> strips;
};

// What a report row and a summary hold. A file's figures have `busy`; a merge's have
// `bubble` instead.
struct GpuFigures {
  bool merged = false;
  double window_us = 0;             // gpu_window_us
  std::map<std::string, int> busy;  // group id -> ten-thousandths (files)
  std::map<int64_t, int> bubble;    // global rank -> ten-thousandths (merges)
  Timeline timeline;
};

// The figures of one compacted trace. `rank` and `pp_rank` label its strips.
GpuFigures trace_figures(const CompactedTrace& compacted, const Rules* rules, std::optional<int64_t> rank,
                         std::optional<int64_t> pp_rank);

// One rank of a merge, its times already on the merge's common clock.
struct RankLanes {
  const CompactedTrace* compacted = nullptr;
  int64_t global_rank = 0;
  int pp_rank = 0;
};
// The figures of a merged iteration; `ranks` in PP order (merge_ranks calls this).
GpuFigures merged_figures(const std::vector<RankLanes>& ranks, const Rules* rules);

// A fraction in ten-thousandths as report text: 8123 -> "0.8123".
std::string fraction_text(int ten_thousandths);
// A real number as the shortest decimal that reads back as the same double ("1234.567").
std::string real_text(double value);

// The figures' keys for a summary or report row: gpu_window_us, then gpu_busy (files) or
// bubble_fraction (merges), then timeline. `text` turns a group id into the string written.
void add_figures_json(JsonValue& object, const GpuFigures& figures, std::string (*text)(const std::string&) = nullptr);
// "compute=0.8123;nccl_all_gather=0.1000" (groups sorted by id), the CSV's gpu_busy cell.
std::string busy_csv(const GpuFigures& figures, std::string (*text)(const std::string&) = nullptr);

// The timeline as a standalone SVG document: one strip per rank and group, ranks stacked as
// given, labels and a time axis; no scripts, no external references. `title` names the trace.
std::string timeline_svg(const GpuFigures& figures, const std::string& title);

// Text for XML or HTML: markup characters escaped; bytes that are not valid UTF-8, and
// control characters XML 1.0 forbids, become U+FFFD, so any name makes a well-formed page.
std::string xml_text(std::string_view text);

}  // namespace tracelane
