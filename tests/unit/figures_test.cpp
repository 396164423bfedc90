// GPU busy figures and timeline data (docs/figures.md) on hand-built traces whose answers
// are known exactly, and the report's handling of them (written, read back, validated,
// kept by `report --combine`).
#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "cli/report/report.hpp"
#include "test_support.hpp"
#include "tracelane/figures.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

std::string add_figures_json_text(const GpuFigures& figures) {
  JsonValue object = JsonValue::object();
  add_figures_json(object, figures);
  return object.dump(2);
}

GpuFigures figures_of(const std::vector<std::string>& events) {
  CompactedTrace compacted = compact_text(trace_json(events), {.pp_flows = false});
  return trace_figures(compacted, nullptr, int64_t(3), int64_t(1));
}

const TimelineStrip* strip_of(const GpuFigures& figures, const std::string& group, std::optional<int64_t> rank = {}) {
  for (const TimelineStrip& strip : figures.timeline.strips)
    if (strip.group == group && (!rank || strip.rank == rank)) return &strip;
  return nullptr;
}

// A rank of a merge: distributedInfo.rank, absolute timestamps (or baseTimeNanoseconds).
std::string rank_trace(int64_t rank, const std::vector<std::string>& events, std::optional<int64_t> base = {}) {
  std::string top = R"("distributedInfo": {"backend": "nccl", "rank": )" + std::to_string(rank) + "}";
  if (base) top += R"(, "baseTimeNanoseconds": )" + std::to_string(*base);
  return trace_json(events, top);
}

MergeResult merge_of(const std::vector<std::string>& traces) {
  std::vector<MergeInput> inputs;
  for (size_t r = 0; r < traces.size(); ++r) {
    std::string name = "rank" + std::to_string(r) + "_trace.json";
    inputs.push_back({name, compact_trace(parse_trace(traces[r], name), {.pp_flows = false})});
  }
  return merge_ranks(std::move(inputs));
}

TEST(GpuFigures, OverlappingSlicesOfAGroupAreCountedOnce) {
  // Compute: [0, 40] and [20, 60] on two streams (60 us together, not 80), and [80, 100].
  GpuFigures figures = figures_of({kernel(0, 7, "0", "40"), kernel(0, 8, "20", "40"), kernel(0, 7, "80", "20")});
  EXPECT_EQ(figures.window_us, 100.0);
  EXPECT_EQ(figures.busy.at("compute"), 8000);
  EXPECT_EQ(add_figures_json_text(figures).find("\"compute\": 0.8000") != std::string::npos, true);
}

TEST(GpuFigures, BusyIsTheUnionOfTheSlicesCountedMicrosecondByMicrosecond) {
  // Random kernels on random streams, short ones (a few lanes) and long ones (more lanes
  // than the sort merges as runs): the busy fraction is the share of the window's
  // microseconds some kernel covers, rounded half up.
  std::mt19937 random(7);
  for (int round = 0; round < 300; ++round) {
    const int longest = round % 2 ? 80 : 8;
    std::vector<std::string> events;
    std::vector<bool> covered(200, false);
    int first = 200, last = 0;
    for (int k = 0; k < 60; ++k) {
      const int start = int(random() % 100), dur = int(random() % longest);
      events.push_back(kernel(0, 7 + int(random() % 40), std::to_string(start), std::to_string(dur)));
      for (int us = start; us < start + dur; ++us) covered[size_t(us)] = true;
      first = std::min(first, start), last = std::max(last, start + dur);
    }
    const int64_t busy = std::count(covered.begin(), covered.end(), true), window = last - first;
    GpuFigures figures = figures_of(events);
    ASSERT_EQ(figures.window_us, double(window)) << "round " << round;
    EXPECT_EQ(figures.busy.at("compute"), window ? (busy * 20000 + window) / (window * 2) : 0) << "round " << round;
  }
}

TEST(GpuFigures, TheWindowIsTheMeasuredSlicesAndSyncSlicesAreClippedToIt) {
  // Kernels span [10, 110]; a Stream Wait Event on their stream runs [0, 30] and [100, 140]:
  // the window stays [10, 110] and sync is busy [10, 30] + [100, 110] = 30 of its 100 us.
  GpuFigures figures = figures_of({kernel(0, 7, "10", "50"), kernel(0, 7, "60", "50", "ncclDevKernel_AllGather"),
                                   slice_event("cuda_sync", "Stream Wait Event", 0, 7, "0", "30"),
                                   slice_event("cuda_sync", "Stream Wait Event", 0, 7, "100", "40")});
  EXPECT_EQ(figures.window_us, 100.0);
  EXPECT_EQ(figures.timeline.start_us, 10.0);
  EXPECT_EQ(figures.timeline.end_us, 110.0);
  EXPECT_EQ(figures.busy.at("compute"), 5000);
  EXPECT_EQ(figures.busy.at("nccl_all_gather"), 5000);
  EXPECT_EQ(figures.busy.at("sync"), 3000);
}

TEST(GpuFigures, OccupancyDigitsAreTheRoundedBusyShareOfEachBin) {
  // Window [0, 100] us: 100 bins of 1 us. Busy [0, 60], then half of bin 60 (rounds half up
  // to 4.5 -> 5), a quarter of bin 70 (2.25 -> 2), then [80, 100].
  GpuFigures figures = figures_of(
      {kernel(0, 7, "0", "60"), kernel(0, 7, "60.5", "0.5"), kernel(0, 7, "70", "0.25"), kernel(0, 7, "80", "20")});
  const TimelineStrip* compute = strip_of(figures, "compute");
  ASSERT_NE(compute, nullptr);
  std::string expected =
      std::string(60, '9') + "5" + std::string(9, '0') + "2" + std::string(9, '0') + std::string(20, '9');
  EXPECT_EQ(compute->occupancy, expected);
  EXPECT_EQ(compute->rank, 3);
  EXPECT_EQ(compute->pp_rank, 1);
  EXPECT_EQ(figures.busy.at("compute"), 8075);  // 80.75 us of 100
}

TEST(GpuFigures, StripsAreOrderedByGroupName) {
  GpuFigures figures = figures_of({kernel(0, 7, "0", "10", "ncclDevKernel_ReduceScatter"), kernel(0, 7, "10", "10"),
                                   slice_event("gpu_memcpy", "Memcpy HtoD", 0, 7, "20", "10")});
  std::vector<std::string> groups;
  for (const TimelineStrip& strip : figures.timeline.strips) groups.push_back(strip.group);
  EXPECT_EQ(groups, (std::vector<std::string>{"compute", "memcpy", "nccl_reduce_scatter"}));
  EXPECT_EQ(busy_csv(figures), "compute=0.3333;memcpy=0.3333;nccl_reduce_scatter=0.3333");
}

TEST(GpuFigures, AnEmptyTraceHasAnEmptyWindowAndNoStrips) {
  GpuFigures figures = trace_figures(CompactedTrace{}, nullptr, std::nullopt, std::nullopt);
  EXPECT_EQ(figures.window_us, 0.0);
  EXPECT_TRUE(figures.busy.empty());
  EXPECT_TRUE(figures.timeline.strips.empty());
  // Zero-length slices only: a window of 0, nothing busy, and no division by zero.
  GpuFigures zero = figures_of({kernel(0, 7, "5", "0"), kernel(0, 8, "5", "0")});
  EXPECT_EQ(zero.window_us, 0.0);
  EXPECT_EQ(zero.busy.at("compute"), 0);
  EXPECT_EQ(strip_of(zero, "compute")->occupancy, std::string(100, '0'));
}

TEST(GpuFigures, TwoRanksWithAKnownQuarterBubble) {
  // Rank 0 computes [0, 15] and [25, 40]: a 10 us gap in its 40 us span, 25%. Rank 1's two
  // overlapping slices cover its whole span: 0%. Rank 2 runs no compute: no bubble figure.
  MergeResult merged = merge_of({rank_trace(0, {kernel(0, 7, "0", "15"), kernel(0, 7, "25", "15")}),
                                 rank_trace(1, {kernel(0, 7, "10", "30"), kernel(0, 8, "20", "30")}),
                                 rank_trace(2, {kernel(0, 7, "0", "60", "ncclDevKernel_SendRecv")})});
  const GpuFigures& figures = merged.figures;
  EXPECT_TRUE(figures.merged);
  EXPECT_EQ(figures.bubble, (std::map<int64_t, int>{{0, 2500}, {1, 0}}));
  EXPECT_EQ(figures.window_us, 60.0);
  // One strip per rank and group (every rank gets every group), ranks in PP order.
  ASSERT_EQ(figures.timeline.strips.size(), 6u);
  std::vector<std::pair<int64_t, std::string>> order;
  for (const TimelineStrip& strip : figures.timeline.strips) order.push_back({*strip.rank, strip.group});
  EXPECT_EQ(
      order,
      (std::vector<std::pair<int64_t, std::string>>{
          {0, "compute"}, {0, "nccl_other"}, {1, "compute"}, {1, "nccl_other"}, {2, "compute"}, {2, "nccl_other"}}));
  EXPECT_EQ(strip_of(figures, "nccl_other", 0)->occupancy, std::string(100, '0'));
}

TEST(GpuFigures, AMergeIsOnTheCommonClock) {
  // Rank 1's clock starts 100 us after rank 0's: its [0, 50] is [100, 150] on the merge's.
  // Bins are 1.5 us: bins 33 and 66 are a third busy (digit 3).
  MergeResult merged = merge_of({rank_trace(0, {kernel(0, 7, "0", "50")}, int64_t(1'000'000'000)),
                                 rank_trace(1, {kernel(0, 7, "0", "50")}, int64_t(1'000'100'000))});
  const GpuFigures& figures = merged.figures;
  EXPECT_EQ(figures.timeline.start_us, 0.0);
  EXPECT_EQ(figures.timeline.end_us, 150.0);
  EXPECT_EQ(strip_of(figures, "compute", 0)->occupancy, std::string(33, '9') + "3" + std::string(66, '0'));
  EXPECT_EQ(strip_of(figures, "compute", 1)->occupancy, std::string(66, '0') + "3" + std::string(33, '9'));
}

TEST(GpuFigures, FiguresDoNotChangeTheMergedTrace) {
  // The figures are summary data: the merged file's top level says nothing of them.
  MergeResult merged = merge_of({rank_trace(0, {kernel(0, 7, "0", "50")}), rank_trace(1, {kernel(0, 7, "0", "50")})});
  EXPECT_EQ(merged.json.find("gpu_busy"), std::string::npos);
  EXPECT_EQ(merged.json.find("timeline"), std::string::npos);
}

// ---- the report

using cli::Report;
using cli::Row;
using cli::RowKind;

Row ok_row(RowKind kind, const GpuFigures& figures) {
  Row row(kind);
  row.set(cli::ColumnId::dir, std::string("run/it")).set_status(cli::RowStatus::ok);
  if (kind == RowKind::file)
    row.set(cli::ColumnId::file, std::string("rank0_trace.json")).set(cli::ColumnId::rank, int64_t(0));
  row.figures = figures;
  return row;
}

Report report_of(std::vector<Row> rows) {
  Report report;
  report.root = "/data";
  report.rows = std::move(rows);
  cli::sort_rows(report.rows);
  return report;
}

TEST(ReportFigures, AReportKeepsTheFiguresOfFileAndMergeRows) {
  GpuFigures file =
      figures_of({kernel(0, 7, "1700000000000000.001", "40"), kernel(0, 7, "1700000000000060.001", "40")});
  MergeResult merged = merge_of(
      {rank_trace(0, {kernel(0, 7, "0", "15"), kernel(0, 7, "25", "15")}), rank_trace(1, {kernel(0, 7, "10", "30")})});
  std::string json = cli::report_json(report_of({ok_row(RowKind::file, file), ok_row(RowKind::merge, merged.figures)}));
  Report back = cli::parse_report_json(json, "report.json");
  ASSERT_EQ(back.rows.size(), 2u);
  ASSERT_TRUE(back.rows[0].figures && back.rows[1].figures);
  // Written again, the report is the same text (epoch-scale times included).
  EXPECT_EQ(cli::report_json(back), json);
  EXPECT_EQ(back.rows[0].figures->busy, file.busy);
  EXPECT_EQ(back.rows[1].figures->bubble, merged.figures.bubble);
  EXPECT_NE(json.find("\"bubble_fraction\": {\n"), std::string::npos);
  EXPECT_NE(json.find("\"0\": 0.2500"), std::string::npos);
  // The CSV has the scalar figures only.
  std::string csv = cli::report_csv(back);
  EXPECT_NE(csv.find(",gpu_window_us,gpu_busy\r\n"), std::string::npos);
  EXPECT_NE(csv.find(",compute=0.8000\r\n"), std::string::npos);
  EXPECT_EQ(csv.find("occupancy"), std::string::npos);
}

TEST(ReportFigures, CombineKeepsTheFiguresAndTakesPartialReportsWithout) {
  GpuFigures file = figures_of({kernel(0, 7, "0", "40"), kernel(0, 7, "60", "40")});
  Report with = report_of({ok_row(RowKind::file, file)});
  with.shard = {0, 2};
  Row old_row = ok_row(RowKind::file, file);
  old_row.figures.reset();
  old_row.set(cli::ColumnId::dir, std::string("run/other"));
  Report without = report_of({old_row});
  without.shard = {1, 2};
  const cli::IterationPlan plan = cli::whole_plan({"run/it", "run/other"});
  with.plan = cli::shard_plan(plan, with.shard);
  without.plan = cli::shard_plan(plan, without.shard);
  std::string old_json = cli::report_json(without);
  ASSERT_EQ(old_json.find("gpu_window_us"), std::string::npos);  // as reports before the figures
  cli::Combined combined = cli::combine_reports(
      {cli::parse_report_json(cli::report_json(with), "a.json"), cli::parse_report_json(old_json, "b.json")});
  EXPECT_TRUE(combined.problems.empty());
  ASSERT_EQ(combined.report.rows.size(), 2u);
  EXPECT_TRUE(combined.report.rows[0].figures.has_value());
  EXPECT_FALSE(combined.report.rows[1].figures.has_value());
  EXPECT_EQ(combined.report.rows[0].figures->timeline.strips.at(0).occupancy, file.timeline.strips.at(0).occupancy);
}

// The message of parse_report_json on `json` with `from` replaced by `to`.
std::string reading_error(std::string json, const std::string& from, const std::string& to) {
  size_t at = json.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) json.replace(at, from.size(), to);
  try {
    cli::parse_report_json(json, "shard.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ReportFigures, EveryFigureIsValidatedWhenRead) {
  GpuFigures file = figures_of({kernel(0, 7, "0", "40"), kernel(0, 7, "60", "40")});
  std::string json = cli::report_json(report_of({ok_row(RowKind::file, file)}));
  std::string digits(100, '9');
  EXPECT_NE(reading_error(json, "\"compute\": 0.8000", "\"compute\": 1.5")
                .find("rows[0].gpu_busy.compute: expected a number from 0 to 1"),
            std::string::npos);
  EXPECT_NE(reading_error(json, "\"occupancy\": \"", "\"occupancy\": \"9")
                .find("rows[0].timeline.strips[0].occupancy: expected 100 digits"),
            std::string::npos);
  EXPECT_NE(reading_error(json, "\"occupancy\": \"9", "\"occupancy\": \"x").find("expected 100 digits"),
            std::string::npos);
  EXPECT_NE(reading_error(json, "\"bins\": 100", "\"bins\": 1000000").find("rows[0].timeline.bins"), std::string::npos);
  EXPECT_NE(reading_error(json, "\"rank\": 3,\n", "\"rank\": -1,\n").find("rows[0].timeline.strips[0].rank"),
            std::string::npos);
  EXPECT_NE(reading_error(json, "\"gpu_window_us\": 100", "\"gpu_window_us\": -1").find("rows[0].gpu_window_us"),
            std::string::npos);
  EXPECT_NE(reading_error(json, "\"gpu_busy\": {", "\"bubble_fraction\": {}, \"gpu_busy\": {")
                .find("rows[0].bubble_fraction: not a key of file rows"),
            std::string::npos);
  // Skipped rows may keep the figures stored with their output (figures_record); failed ones have none.
  EXPECT_NE(reading_error(json, "\"status\": \"ok\"", "\"status\": \"failed\"")
                .find("GPU figures on a file row with status failed"),
            std::string::npos);
  EXPECT_NE(reading_error(json, "\"end_us\": 100", "\"end_us\": -5").find("rows[0].timeline.end_us: before start_us"),
            std::string::npos);
  // One key of the set without the others is a cut report, not an old one.
  size_t from = json.find(",\n      \"gpu_busy\""), to = json.find(",\n      \"timeline\"");
  ASSERT_TRUE(from != std::string::npos && to != std::string::npos);
  EXPECT_NE(reading_error(json, json.substr(from, to - from), "").find("rows[0].gpu_busy: missing"), std::string::npos);
  EXPECT_EQ(reading_error(json, "\"compute\": 0.8000", "\"compute\": 0.8000"), "");
}

TEST(ReportFigures, TheFuzzSeedsWithFiguresReadBackToThemselves) {
  // fuzz_report's property on its seeds of real sweeps (tests/fuzz/corpus_report).
  for (const char* name : {"seed_sweep_tree_figures_shard_0", "seed_sweep_tree_figures_shard_1"}) {
    std::ifstream in(std::string(TRACELANE_SOURCE_DIR) + "/tests/fuzz/corpus_report/" + name);
    std::stringstream text;
    text << in.rdbuf();
    ASSERT_FALSE(text.str().empty()) << name;
    Report report = cli::parse_report_json(text.str(), name);
    size_t with = 0;
    for (const Row& row : report.rows) with += row.figures.has_value();
    EXPECT_GE(with, 1u) << name;
    EXPECT_EQ(cli::report_json(report), text.str()) << name;
  }
}

TEST(TimelineSvg, EscapesEveryNameIntoWellFormedXml) {
  GpuFigures figures = figures_of({kernel(0, 7, "0", "40")});
  std::string svg = timeline_svg(figures, "a<b>&\"c\x01\xff.json");
  EXPECT_NE(svg.find("a&lt;b&gt;&amp;&quot;c\xEF\xBF\xBD\xEF\xBF\xBD.json"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);
}

}  // namespace
