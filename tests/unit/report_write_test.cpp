// Writing the report as others read it (report_write.cpp, report_columns.cpp): valid UTF-8
// whatever the names, reversible escapes, no live spreadsheet formulas, CSV quoting, the
// JSON round trip, and the records and figures kept with an output for a later sweep that
// skips it.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report_test_rows.hpp"
#include "tracelane/figures.hpp"
#include "tracelane/gzip.hpp"

using namespace tracelane::cli;
using namespace tracelane::cli::report_test;
using tracelane::GpuFigures;
using tracelane::TimelineStrip;

namespace {
// The same row under another name, so that a self-move reads as the one a sort may do.
Row& moved_alias(Row& row) { return row; }
}  // namespace

TEST(ReportRow, HoldsTheCellsSetInAnyOrderAndReadsTheRestAsAbsent) {
  // Set out of column order, one set twice, one of another kind's column: each reads back
  // as set, the last value of each, every other column absent.
  Row row(RowKind::file);
  row.set(ColumnId::status, std::string("ok"))
      .set(ColumnId::dir, std::string("run/iteration_1"))
      .set(ColumnId::events, int64_t(7))
      .set(ColumnId::compaction_ratio, 0.5)
      .set(ColumnId::kind, std::string("file"))
      .set(ColumnId::events, int64_t(9))
      .set(ColumnId::original, std::string("removed"))
      .set(ColumnId::pp_order, std::string("0 1"));
  std::map<ColumnId, Cell> expected = {
      {ColumnId::kind, std::string("file")},   {ColumnId::dir, std::string("run/iteration_1")},
      {ColumnId::events, int64_t(9)},          {ColumnId::compaction_ratio, 0.5},
      {ColumnId::status, std::string("ok")},   {ColumnId::original, std::string("removed")},
      {ColumnId::pp_order, std::string("0 1")}};
  auto expect_cells = [&](const Row& r, const char* what) {
    for (size_t c = 0; c < kColumnCount; ++c) {
      auto it = expected.find(ColumnId(c));
      EXPECT_EQ(r.get(c), it == expected.end() ? Cell() : it->second) << what << ": " << report_columns()[c].name;
    }
  };
  expect_cells(row, "set");

  // A copy is its own: a cell set in it (more than the copy had room for) leaves the first
  // as it was.
  Row copy = row;
  copy.set(ColumnId::output_bytes, int64_t(100)).set(ColumnId::rank, int64_t(3));
  expect_cells(row, "original after the copy changed");
  EXPECT_EQ(copy.get(ColumnId::output_bytes), Cell(int64_t(100)));
  EXPECT_EQ(copy.get(ColumnId::rank), Cell(int64_t(3)));
  EXPECT_EQ(copy.get(ColumnId::status), Cell(std::string("ok")));

  // Moved into itself, a row keeps its cells; moved from, it reads as empty, and takes
  // cells again.
  Row& same = moved_alias(row);
  row = std::move(same);
  expect_cells(row, "moved into itself");
  Row moved = std::move(copy);
  EXPECT_EQ(moved.get(ColumnId::rank), Cell(int64_t(3)));
  for (size_t c = 0; c < kColumnCount; ++c) EXPECT_EQ(copy.get(c), Cell()) << report_columns()[c].name;
  copy.set(ColumnId::file, std::string("rank0_trace.json"));
  EXPECT_EQ(copy.text(ColumnId::file), "rank0_trace.json");
  EXPECT_EQ(copy.get(ColumnId::rank), Cell());
}

TEST(ReportRow, ItsFiguresAreCopiedWithItAndNoneReadAsNone) {
  Row row(RowKind::file);
  EXPECT_FALSE(row.figures.has_value());
  EXPECT_EQ(row.figures.get(), nullptr);
  GpuFigures figures;
  figures.window_us = 12.5;
  figures.busy["compute"] = 5000;
  row.figures = figures;
  Row copy = row;
  copy.figures->busy["compute"] = 1;
  ASSERT_TRUE(row.figures);
  EXPECT_EQ(row.figures->busy.at("compute"), 5000);
  EXPECT_EQ(copy.figures->window_us, 12.5);
  row.figures = std::optional<GpuFigures>();
  EXPECT_FALSE(row.figures);
  EXPECT_TRUE(copy.figures);
  Row moved = std::move(copy);
  EXPECT_EQ(moved.figures->busy.at("compute"), 1);
}

TEST(ReportNames, EveryTextCellIsValidUtf8AndReadsBackToTheRawBytes) {
  const std::string dir = "run\xff/it\x1b[31m\\x41/\xc3";
  const std::string file = "rank0_trace.json\x7f";
  Report report = partial(0, 1, {named_file_row(dir, file, RowStatus::failed)}, {dir});
  report.rows[0].set(ColumnId::error, dir + "/" + file + ": bad \xfe");
  report.root = "/root\xff\\";
  std::string json = report_json(report), csv = report_csv(report);
  EXPECT_TRUE(valid_utf8(json)) << json;
  EXPECT_TRUE(valid_utf8(csv)) << csv;
  EXPECT_EQ(csv.find('\x1b'), std::string::npos);
  // The escaped form: \xHH for what is not printable UTF-8, \\ for a backslash.
  EXPECT_NE(json.find(R"("dir": "run\\xff/it\\x1b[31m\\\\x41/\\xc3")"), std::string::npos) << json;

  Report back = parse_report_json(json, "test");
  EXPECT_EQ(std::get<std::string>(back.rows[0].get(ColumnId::dir)), dir);
  EXPECT_EQ(std::get<std::string>(back.rows[0].get(ColumnId::file)), file);
  EXPECT_EQ(back.root, report.root);
  EXPECT_EQ(report_json(back), json);
  EXPECT_EQ(report_csv(combine_reports({back}).report), csv);
}

TEST(ReportNames, NameFromReportAcceptsOnlyTheFormPrintableWrites) {
  EXPECT_EQ(name_from_report("a\\\\b\\xff"), std::optional<std::string>("a\\b\xff"));
  EXPECT_EQ(name_from_report("α/β"), std::optional<std::string>("α/β"));
  EXPECT_FALSE(name_from_report("\\x41"));  // 'A' is written as itself
  EXPECT_FALSE(name_from_report("\\xFF"));  // printable writes lower case
  EXPECT_FALSE(name_from_report("a\\q"));   // no such escape
  EXPECT_FALSE(name_from_report("a\\"));    // a lone trailing backslash
  EXPECT_FALSE(name_from_report("a\\x4"));  // a cut escape
  EXPECT_FALSE(name_from_report("a\x1b"));  // a raw control character
}

TEST(ReportCsv, PrefixesTextCellsThatASpreadsheetWouldRunAsFormulas) {
  Report report;
  for (const char* dir : {"=HYPERLINK(\"http://x\")", "+1", "-1", "@SUM(A1)", "'quoted", "a=b"})
    report.rows.push_back(named_file_row(dir, "rank0_trace.json"));
  report.rows.back().set(ColumnId::input_bytes, int64_t(0));
  std::string csv = report_csv(report);
  EXPECT_NE(csv.find("\r\nfile,\"'=HYPERLINK(\"\"http://x\"\")\",rank0_trace.json,"), std::string::npos) << csv;
  for (const char* cell :
       {"\r\nfile,'+1,", "\r\nfile,'-1,", "\r\nfile,'@SUM(A1),", "\r\nfile,''quoted,", "\r\nfile,a=b,"})
    EXPECT_NE(csv.find(cell), std::string::npos) << cell << "\n" << csv;
  EXPECT_EQ(csv.find(",'100,"), std::string::npos);  // numbers never
  EXPECT_NE(csv.find(",100,"), std::string::npos);
  // The JSON keeps the value itself.
  EXPECT_NE(report_json(report).find(R"j("dir": "=HYPERLINK(\"http://x\")")j"), std::string::npos);
}

TEST(ReportCsv, QuotesFieldsAsRfc4180Says) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field(""), "");
}

TEST(ReportCsv, HasOneHeaderRowAndATotalsRow) {
  Report report;
  report.rows.push_back(ranked_file_row("r/it", 0, RowStatus::ok));
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
  report.rows.push_back(ranked_file_row("r/it", 0, RowStatus::ok));
  report.rows.back().set(ColumnId::compaction_ratio, 2.5).set(ColumnId::pp_rank, int64_t(0));
  Row merge(RowKind::merge);
  merge.set(ColumnId::dir, "r/it")
      .set(ColumnId::ranks, int64_t(2))
      .set(ColumnId::pp_order, "1 0")
      .set_status(RowStatus::failed);
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
  Row written = ranked_file_row("r/it", 3, RowStatus::ok);
  written.set(ColumnId::events, int64_t(1234))
      .set(ColumnId::compaction_ratio, 12.5)
      .set(ColumnId::output_bytes, int64_t(777));
  std::string record = row_record(written);
  EXPECT_EQ(record.find("seconds"), std::string::npos) << record;  // timing columns are not kept

  Row skipped(RowKind::file);
  skipped.set(ColumnId::dir, "r/it")
      .set(ColumnId::rank, int64_t(3))
      .set_status(RowStatus::skipped)
      .set(ColumnId::output_bytes, int64_t(777));
  ASSERT_TRUE(fill_from_record(skipped, record, 777));
  EXPECT_EQ(std::get<int64_t>(skipped.get(ColumnId::events)), 1234);
  EXPECT_EQ(std::get<double>(skipped.get(ColumnId::compaction_ratio)), 12.5);
  EXPECT_EQ(std::get<std::string>(skipped.get(ColumnId::status)), "skipped");  // never from the record
  EXPECT_TRUE(std::holds_alternative<std::monostate>(skipped.get(ColumnId::seconds)));

  // An output whose size is not the recorded one was replaced since: its record is not used.
  Row other(RowKind::file);
  other.set_status(RowStatus::skipped);
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
  skipped.set(ColumnId::dir, "run/profile_trace/it0").set(ColumnId::rank, int64_t(0)).set_status(RowStatus::skipped);
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
      .set_status(RowStatus::ok)
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
  skipped.set_status(RowStatus::skipped);
  ASSERT_TRUE(fill_figures_from_record(skipped, record));
  skipped.set_status(RowStatus::ok);
  EXPECT_EQ(figures_json(skipped), figures_json(written));

  Row file = ranked_file_row("r/it", 0, RowStatus::skipped);
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
  Row none = ranked_file_row("r/it", 0, RowStatus::skipped);
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
  report.rows[0].set_status(RowStatus::skipped);
  std::string json = report_json(report);
  EXPECT_EQ(report_json(parse_report_json(json, "test")), json);
  report.rows[0].set_status(RowStatus::failed);
  EXPECT_THROW(parse_report_json(report_json(report), "test"), tracelane::Error);

  // A row without figures stores none.
  EXPECT_TRUE(figures_record(ranked_file_row("r/it", 1, RowStatus::ok)).empty());
}
