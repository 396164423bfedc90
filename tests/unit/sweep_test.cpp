// The sweep's report: CSV quoting, the JSON round trip, the records and figures kept with
// an output for a later sweep that skips it, and the combination of shards. (Discovery,
// shards, sizes and admission have files of their own: discovery_test.cpp,
// sweep_plan_test.cpp, memory_budget_test.cpp.)
#include <gtest/gtest.h>

#include "cli/report/report.hpp"
#include "cli/sweep/sweep.hpp"
#include "tracelane/figures.hpp"
#include "tracelane/gzip.hpp"

using namespace tracelane::cli;
using tracelane::GpuFigures;
using tracelane::TimelineStrip;

namespace {

Row file_row(const std::string& dir, int64_t rank, const std::string& status) {
  Row row(RowKind::file);
  row.set(ColumnId::dir, dir)
      .set(ColumnId::file, "rank" + std::to_string(rank) + "_trace.json")
      .set(ColumnId::rank, rank);
  row.set(ColumnId::status, status).set(ColumnId::input_bytes, int64_t(100 + rank)).set(ColumnId::seconds, 0.25);
  return row;
}

}  // namespace

TEST(ReportCsv, QuotesFieldsAsRfc4180Says) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field(""), "");
}

TEST(ReportCsv, HasOneHeaderRowAndATotalsRow) {
  Report report;
  report.rows.push_back(file_row("r/it", 0, "ok"));
  report.rows.back().set(ColumnId::error, std::string("x, \"y\""));
  std::string csv = report_csv(report);
  size_t lines = 0;
  for (size_t at = csv.find("\r\n"); at != std::string::npos; at = csv.find("\r\n", at + 2)) lines++;
  EXPECT_EQ(lines, 3u);
  EXPECT_EQ(csv.rfind("kind,dir,file,", 0), 0u);
  EXPECT_NE(csv.find("\"x, \"\"y\"\"\""), std::string::npos);
  EXPECT_NE(csv.find("\r\ntotal,"), std::string::npos);
}

TEST(ReportJson, ReadsBackWhatItWrote) {
  Report report;
  report.root = "/data/outputs";
  report.shard = {1, 3};
  report.runs.push_back({Shard{1, 3}, 2.5, 4, 1 << 30});
  report.rows.push_back(file_row("r/it", 0, "ok"));
  report.rows.back().set(ColumnId::compaction_ratio, 2.5).set(ColumnId::pp_rank, int64_t(0));
  Row merge(RowKind::merge);
  merge.set(ColumnId::dir, "r/it")
      .set(ColumnId::ranks, int64_t(2))
      .set(ColumnId::pp_order, "1 0")
      .set(ColumnId::status, "failed");
  report.rows.push_back(merge);
  std::string json = report_json(report);
  Report back = parse_report_json(json, "test");
  EXPECT_EQ(back.root, report.root);
  EXPECT_EQ(back.shard, report.shard);
  ASSERT_EQ(back.rows.size(), 2u);
  EXPECT_EQ(report_json(back), json);
}

// The record stored with an output fills the row of a later sweep that skips that output.
TEST(ReportRecord, FillsASkippedRowWithTheNumbersOfTheRunThatWroteTheOutput) {
  Row written = file_row("r/it", 3, "ok");
  written.set(ColumnId::events, int64_t(1234))
      .set(ColumnId::compaction_ratio, 12.5)
      .set(ColumnId::output_bytes, int64_t(777));
  std::string record = row_record(written);
  EXPECT_EQ(record.find("seconds"), std::string::npos) << record;  // timing columns are not kept

  Row skipped(RowKind::file);
  skipped.set(ColumnId::dir, "r/it")
      .set(ColumnId::rank, int64_t(3))
      .set(ColumnId::status, "skipped")
      .set(ColumnId::output_bytes, int64_t(777));
  ASSERT_TRUE(fill_from_record(skipped, record, 777));
  EXPECT_EQ(std::get<int64_t>(skipped.get(ColumnId::events)), 1234);
  EXPECT_EQ(std::get<double>(skipped.get(ColumnId::compaction_ratio)), 12.5);
  EXPECT_EQ(std::get<std::string>(skipped.get(ColumnId::status)), "skipped");  // never from the record
  EXPECT_TRUE(std::holds_alternative<std::monostate>(skipped.get(ColumnId::seconds)));

  // An output whose size is not the recorded one was replaced since: its record is not used.
  Row other(RowKind::file);
  other.set(ColumnId::status, "skipped");
  EXPECT_FALSE(fill_from_record(other, record, 778));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(other.get(ColumnId::events)));
  // Nor is a record of another kind of row, or a text that is not a record.
  Row merge(RowKind::merge);
  EXPECT_FALSE(fill_from_record(merge, record, 777));
  EXPECT_FALSE(fill_from_record(other, "{\"kind\": \"file\", \"output_bytes\": 777, \"events\": \"many\"}", 777));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(other.get(ColumnId::events)));
  EXPECT_FALSE(fill_from_record(other, "not json", 777));
}

// An output the previous release wrote is still up to date (the recipe names the output
// format, not the release): its record, with the column names of report schema 2, gives a
// skipped row its numbers under the names now.
TEST(ReportRecord, ARecordThePreviousReleaseStoredFillsTheRenamedColumns) {
  // getfattr -n user.tracelane.report_row of a sweep's output, tracelane 0.1.0 before schema 3.
  const std::string record =
      R"({"kind": "file", "dir": "run/profile_trace/it0", "file": "rank0_trace.json", "run": "run", )"
      R"("iteration": "it0", "rank": 0, "pp_rank": 0, "input_bytes": 32681, "output_bytes": 42562, "events": 251, )"
      R"("measured_slices": 75, "original_streams": 25, "compacted_lanes": 6, "compaction_ratio": 4.1667, )"
      R"("flows_mapped": 72, "flows_unmapped": 1, "annotations_mapped": 3, "annotations_coalesced": 2, )"
      R"("cuda_graph_launches": 3, "output": "rank0_trace_compacted.json", "status": "ok"})";
  Row skipped(RowKind::file);
  skipped.set(ColumnId::dir, "run/profile_trace/it0").set(ColumnId::rank, int64_t(0)).set(ColumnId::status, "skipped");
  ASSERT_TRUE(fill_from_record(skipped, record, 42562));
  EXPECT_EQ(std::get<int64_t>(skipped.get(ColumnId::gpu_flow_endpoints_mapped)), 72);
  EXPECT_EQ(std::get<int64_t>(skipped.get(ColumnId::gpu_flow_endpoints_unmapped)), 1);
  EXPECT_EQ(std::get<int64_t>(skipped.get(ColumnId::gpu_annotations_mapped)), 3);
  EXPECT_EQ(std::get<int64_t>(skipped.get(ColumnId::gpu_annotations_coalesced)), 2);
  EXPECT_EQ(std::get<int64_t>(skipped.get(ColumnId::events)), 251);
  // And the record this release stores names them as the summary does.
  std::string now = row_record(skipped);
  EXPECT_NE(now.find("\"gpu_flow_endpoints_mapped\": 72"), std::string::npos) << now;
  EXPECT_EQ(now.find("\"flows_mapped\""), std::string::npos) << now;
}

// A merge row's figures as a sweep computes them: 8 ranks x 9 groups x 100 bins.
static Row merge_row_with_figures() {
  Row row(RowKind::merge);
  row.set(ColumnId::dir, "r/it")
      .set(ColumnId::ranks, int64_t(8))
      .set(ColumnId::status, "ok")
      .set(ColumnId::output_bytes, int64_t(777));
  GpuFigures figures;
  figures.merged = true;
  figures.window_us = 123456.789;
  figures.timeline.start_us = 1700000000000000.5;
  figures.timeline.end_us = figures.timeline.start_us + figures.window_us;
  const char* groups[] = {"compute",
                          "memcpy",
                          "memset",
                          "nccl_all_gather",
                          "nccl_all_reduce",
                          "nccl_broadcast",
                          "nccl_reduce_scatter",
                          "nccl_send_recv",
                          "sync"};
  for (int64_t rank = 0; rank < 8; ++rank) {
    figures.bubble[rank] = int(rank * 1000 + 7);
    for (const char* group : groups) {
      TimelineStrip strip;
      strip.rank = rank;
      strip.pp_rank = rank / 2;
      strip.group = group;
      for (int bin = 0; bin < figures.timeline.bins; ++bin)
        strip.occupancy += char('0' + (bin * 7 + rank * 3 + strip.group.size()) % 10);
      figures.timeline.strips.push_back(strip);
    }
  }
  row.figures = figures;
  return row;
}

static std::string figures_json(const Row& row) {
  Report report;
  report.rows = {row};
  std::string json = report_json(report);
  return json.substr(json.find("\"rows\""));
}

// The figures stored with an output give a skipped row the figures of the run that wrote it,
// read as a report's are: a damaged, foreign or oversized record gives none, never a crash.
TEST(FiguresRecord, GivesASkippedRowTheFiguresOfTheRunThatWroteTheOutput) {
  Row written = merge_row_with_figures();
  std::string record = figures_record(written);
  ASSERT_FALSE(record.empty());
  EXPECT_LT(record.size(), 2048u) << "too large to sit beside the row record in ext4's 4 KiB";

  Row skipped = written;
  skipped.figures.reset();
  skipped.set(ColumnId::status, "skipped");
  ASSERT_TRUE(fill_figures_from_record(skipped, record));
  skipped.set(ColumnId::status, "ok");
  EXPECT_EQ(figures_json(skipped), figures_json(written));

  Row file = file_row("r/it", 0, "skipped");
  GpuFigures file_figures;
  file_figures.window_us = 10;
  file_figures.busy["compute"] = 8123;
  file_figures.timeline.end_us = 10;
  file_figures.timeline.strips.push_back({0, std::nullopt, "compute", std::string(100, '9'), "compute", 8123});
  Row file_written = file;
  file_written.figures = file_figures;
  std::string file_record = figures_record(file_written);
  ASSERT_TRUE(fill_figures_from_record(file, file_record));
  EXPECT_EQ(file.figures->busy, file_figures.busy);

  // A merge's record on a file row (or the reverse), a damaged byte, a truncation, a record
  // that decompresses to what a report would refuse, or one too large: no figures.
  Row none = file_row("r/it", 0, "skipped");
  EXPECT_FALSE(fill_figures_from_record(none, record));
  Row merge_none(RowKind::merge);
  EXPECT_FALSE(fill_figures_from_record(merge_none, file_record));
  // (From byte 10: the gzip header's time and OS bytes change nothing that is read.)
  for (size_t at = 10; at < record.size(); at += 7) {
    std::string damaged = record;
    damaged[at] = char(damaged[at] ^ 0x20);
    EXPECT_FALSE(fill_figures_from_record(none, damaged)) << "byte " << at;
  }
  EXPECT_FALSE(fill_figures_from_record(none, record.substr(0, record.size() / 2)));
  EXPECT_FALSE(fill_figures_from_record(none, ""));
  EXPECT_FALSE(fill_figures_from_record(none, "not gzip"));
  auto gz = [](const std::string& json) { return tracelane::gzip_compress(json, 1); };
  EXPECT_FALSE(fill_figures_from_record(none, gz("{\"gpu_window_us\": -1, \"gpu_busy\": {}, \"timeline\": "
                                                 "{\"start_us\": 0, \"end_us\": 0, \"bins\": 1, \"strips\": []}}")));
  EXPECT_FALSE(fill_figures_from_record(none, gz("{\"gpu_window_us\": 1, \"gpu_busy\": {}, \"timeline\": "
                                                 "{\"start_us\": 0, \"end_us\": 1, \"bins\": 2, \"strips\": "
                                                 "[{\"rank\": 0, \"pp_rank\": 0, \"group\": \"compute\", "
                                                 "\"occupancy\": \"9\"}]}}")));  // 1 digit for 2 bins
  EXPECT_FALSE(fill_figures_from_record(none, gz("{\"status\": \"ok\"}")));
  EXPECT_FALSE(fill_figures_from_record(none, gz(std::string(2 << 20, ' '))));  // over 1 MiB unpacked
  EXPECT_FALSE(fill_figures_from_record(none, std::string(kFiguresRecordMax + 1, 'x')));
  EXPECT_FALSE(none.figures.has_value());
  EXPECT_FALSE(merge_none.figures.has_value());

  // A report holds figures on skipped rows (read back from their outputs), never on failed ones.
  Report report;
  report.rows = {skipped};
  report.rows[0].set(ColumnId::status, "skipped");
  std::string json = report_json(report);
  EXPECT_EQ(report_json(parse_report_json(json, "test")), json);
  report.rows[0].set(ColumnId::status, "failed");
  EXPECT_THROW(parse_report_json(report_json(report), "test"), tracelane::Error);

  // A row without figures stores none.
  EXPECT_TRUE(figures_record(file_row("r/it", 1, "ok")).empty());
}

TEST(ReportCombine, ShardsJoinIntoTheSingleNodeOrderAndNameMissingOnes) {
  Report single;
  single.rows = {file_row("b/it", 1, "ok"), file_row("a/it", 0, "ok"), file_row("b/it", 0, "failed")};
  sort_rows(single.rows);

  // Three shards of a plan of two iterations: shard 2 takes none.
  const IterationPlan plan = whole_plan({"a/it", "b/it"});
  Report shard0, shard1;
  shard0.shard = {0, 3};
  shard0.plan = shard_plan(plan, shard0.shard);
  shard0.rows = {file_row("a/it", 0, "ok")};
  shard1.shard = {1, 3};
  shard1.plan = shard_plan(plan, shard1.shard);
  shard1.rows = {file_row("b/it", 0, "failed"), file_row("b/it", 1, "ok")};
  Combined combined = combine_reports({shard1, shard0});
  EXPECT_EQ(combined.missing_shards, (std::vector<int>{2}));
  EXPECT_EQ(combined.problems, (std::vector<std::string>{"missing shards: 2 (of 3)"}));
  EXPECT_TRUE(has_failures(combined.report.rows));

  Report shard2;  // a shard with no iteration directories
  shard2.shard = {2, 3};
  shard2.plan = shard_plan(plan, shard2.shard);
  combined = combine_reports({shard1, shard2, shard0});
  EXPECT_TRUE(combined.problems.empty());
  EXPECT_EQ(report_csv(combined.report), report_csv(single));
  ASSERT_TRUE(combined.report.plan.has_value());
  EXPECT_EQ(combined.report.plan->iterations, plan.iterations);
}
