// The HTML report's writer (src/cli/report/report_html.cpp): what reaches the page from a report,
// and how. The page itself is tested in a browser by tests/e2e/test_report_html.py.
#include <gtest/gtest.h>

#include <string>

#include "cli/report/report.hpp"
#include "cli/report/report_html.hpp"
#include "tracelane/trace.hpp"

using namespace tracelane::cli;

namespace {

Row file_row(const std::string& dir, const std::string& output = "rank0_trace_compacted.json") {
  Row row(RowKind::file);
  row.set(ColumnId::dir, dir)
      .set(ColumnId::file, std::string("rank0_trace.json"))
      .set(ColumnId::rank, int64_t(0))
      .set(ColumnId::run, std::string("run"));
  row.set(ColumnId::iteration, std::string("it"))
      .set(ColumnId::input_bytes, int64_t(100))
      .set(ColumnId::output, output);
  row.set_status(RowStatus::ok).set(ColumnId::seconds, 0.25).set(ColumnId::compaction_ratio, 10.9091);
  return row;
}

std::string page_of(std::vector<Row> rows, const std::string& page_dir = "/data/tree") {
  Report report;
  report.root = "/data/tree";
  report.rows = std::move(rows);
  sort_rows(report.rows);
  return report_html(report_json(report), "r.json", page_dir);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The JSON data element of a page.
std::string data_of(const std::string& page) {
  size_t start = page.find("id=\"tracelane-data\">");
  size_t end = page.find("</script>", start);
  return page.substr(start, end - start);
}

}  // namespace

TEST(ReportHtml, NoNameFromTheReportCanEndTheDataElementOrBecomeMarkup) {
  std::string page = page_of({file_row("a</script><script>alert(1)</script><!--"), file_row("b<img onerror=x>&amp;")});
  EXPECT_EQ(count(page, "<script"), 2u);  // the data and the page's own script
  EXPECT_EQ(count(page, "</script"), 2u);
  EXPECT_EQ(count(page, "<img"), 0u);
  EXPECT_EQ(count(page, "<!--"), 0u);
  EXPECT_NE(data_of(page).find("a\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"), std::string::npos);
  EXPECT_NE(data_of(page).find("b\\u003cimg onerror=x\\u003e\\u0026amp;"), std::string::npos);
}

TEST(ReportHtml, TheTitleIsEscaped) {
  Report report;
  report.root = "/data/<b>\"tree\"";
  std::string page = report_html(report_json(report), "r.json", "/data");
  EXPECT_NE(page.find("<title>tracelane report: /data/&lt;b&gt;&quot;tree&quot;</title>"), std::string::npos);
  EXPECT_EQ(count(page, "<b>"), 0u);
}

TEST(ReportHtml, LinksAreRelativeToThePageAndPercentEncoded) {
  std::string data =
      data_of(page_of({file_row("run/it 1#x"), file_row("javascript:alert(1)", "out?put")}, "/data/tree/pages"));
  EXPECT_NE(
      data.find(
          "\"links\":{\"javascript:alert(1)\":\"../javascript%3Aalert%281%29\",\"run/it 1#x\":\"../run/it%201%23x\"}"),
      std::string::npos)
      << data;
  // A name that needs encoding is given encoded; one that does not is not repeated.
  EXPECT_NE(data.find("\"output_href\":\"out%3Fput\""), std::string::npos);
  EXPECT_EQ(count(data, "output_href"), 1u);
}

// The page reads reports tolerantly, but a dir outside the tree is never a link.
TEST(ReportHtml, ADirOutsideTheTreeIsNotLinked) {
  std::string data = data_of(page_of({file_row("../../../../etc"), file_row("/etc"), file_row("r/it")}, "/data/tree"));
  EXPECT_EQ(data.find("etc\":"), std::string::npos) << data;
  EXPECT_EQ(count(data, "\"no_link\":true"), 2u) << data;
  EXPECT_NE(data.find("\"r/it\":"), std::string::npos) << data;
}

TEST(ReportHtml, TheDataKeepsTheReportsNumbers) {
  std::string data = data_of(page_of({file_row("r/it")}));
  EXPECT_NE(data.find("10.9091"), std::string::npos);
  EXPECT_NE(data.find("0.25"), std::string::npos);
}

TEST(ReportHtml, ACorruptReportIsAnErrorNamingTheFileAndField) {
  Report report;
  report.root = "/data/tree";
  report.rows = {file_row("r/it")};
  std::string json = report_json(report);
  json.replace(json.rfind("\"input_bytes\": 100"), 18, "\"input_bytes\": \"lots\"");
  try {
    report_html(json, "r.json", "/data/tree");
    FAIL() << "no error";
  } catch (const tracelane::Error& e) {
    EXPECT_STREQ(e.what(), "r.json: rows[0].input_bytes: expected a non-negative integer");
  }
  try {
    report_html("{\"schema_version\": 1}", "old.json", "/");
    FAIL() << "no error";
  } catch (const tracelane::Error& e) {
    EXPECT_STREQ(e.what(), "old.json: a report of schema_version 1, which tracelane " TRACELANE_VERSION
                           " does not read (it reads schema_version 2 to 4)");
  }
  EXPECT_THROW(report_html("[", "r.json", "/"), tracelane::Error);
}

// The previous release's report (schema 2) draws as the report this release writes from
// the same rows: the page's data is the same, totals under the column names now.
TEST(ReportHtml, APreviousReleasesReportDrawsTheSamePage) {
  Row row = file_row("r/it");
  row.set(ColumnId::gpu_flow_endpoints_mapped, int64_t(72)).set(ColumnId::gpu_annotations_coalesced, int64_t(5));
  Report report;
  report.root = "/data/tree";
  report.rows = {row};
  std::string json = report_json(report), old = json;
  for (const RenamedColumn& renamed : kRenamedColumns)
    for (size_t at; (at = old.find("\"" + std::string(renamed.name) + "\"")) != std::string::npos;)
      old.replace(at + 1, std::string(renamed.name).size(), renamed.schema2);
  old.replace(old.find("\"schema_version\": 4"), 19, "\"schema_version\": 2");
  old.erase(old.find("  \"plan\": null,\n"), 16);  // schema 2 records no plan
  ASSERT_EQ(old.find("gpu_flow_endpoints"), std::string::npos);
  std::string page = report_html(json, "r.json", "/data/tree");
  EXPECT_EQ(report_html(old, "r.json", "/data/tree"), page);
  EXPECT_NE(data_of(page).find("\"gpu_annotations_coalesced\":5"), std::string::npos) << data_of(page);
}

TEST(ReportHtml, AFigureNotInTheContractsFormIsNamedAndLeftOut) {
  Report report;
  report.root = "/data/tree";
  report.rows = {file_row("r/it")};
  std::string json = report_json(report);
  std::string figures =
      "\"kind\": \"file\", \"gpu_busy\": {\"compute\": 1.5}, \"gpu_window_us\": 12.5, "
      "\"timeline\": {\"start_us\": 0, \"end_us\": 10, \"bins\": 3, \"strips\": "
      "[{\"rank\": 0, \"pp_rank\": null, \"group\": \"compute\", \"occupancy\": \"09\"}]},";
  json.replace(json.find("\"kind\": \"file\","), 15, figures);
  std::string data = data_of(report_html(json, "r.json", "/data/tree"));
  EXPECT_NE(data.find("rows[0].gpu_busy: expected an object of fractions from 0 to 1; not drawn"), std::string::npos)
      << data;
  EXPECT_NE(data.find("rows[0].timeline: strips[0].occupancy: expected 3 digits; not drawn"), std::string::npos)
      << data;
  EXPECT_NE(data.find("\"gpu_window_us\":12.5"), std::string::npos);
  EXPECT_EQ(data.find("\"timeline\""), std::string::npos);
}

TEST(ReportHtml, TheMergesTimelineReplacesItsFilesTimelinesInTheData) {
  Report report;
  report.root = "/data/tree";
  Row merge(RowKind::merge);
  merge.set(ColumnId::dir, std::string("r/it")).set(ColumnId::ranks, int64_t(2)).set_status(RowStatus::ok);
  report.rows = {file_row("r/it"), merge};
  std::string json = report_json(report);
  std::string timeline =
      "\"timeline\": {\"start_us\": 0, \"end_us\": 10, \"bins\": 2, \"strips\": "
      "[{\"rank\": 0, \"pp_rank\": 0, \"group\": \"compute\", \"occupancy\": \"%s\"}]}";
  auto with = [&](const std::string& digits) {
    std::string text = timeline;
    text.replace(text.find("%s"), 2, digits);
    return text;
  };
  json.replace(json.find("\"kind\": \"file\","), 15, "\"kind\": \"file\", " + with("11") + ",");
  json.replace(json.find("\"kind\": \"merge\","), 16, "\"kind\": \"merge\", " + with("99") + ",");
  std::string data = data_of(report_html(json, "r.json", "/data/tree"));
  EXPECT_NE(data.find("\"99\""), std::string::npos) << data;
  EXPECT_EQ(data.find("\"11\""), std::string::npos) << data;
  EXPECT_NE(data.find("\"groups\":[\"compute\"]"), std::string::npos) << data;
}

TEST(ReportHtml, ThePageIsNamedAfterTheReport) {
  EXPECT_EQ(html_path_for("/x/tracelane_report.json").string(), "/x/tracelane_report.html");
  EXPECT_EQ(html_path_for("tracelane_report.shard-1-of-4.json").string(), "tracelane_report.shard-1-of-4.html");
}

// A sweep draws its page from the report in memory (report_page), not from the JSON it just
// wrote: the page must be, byte for byte, the one `report --html` draws from that JSON. The
// report holds what reading changes: reals with more digits than written (seconds,
// compaction_ratio, a run's wall time), a cell of a column its row's kind does not have,
// figures of a file and of a merge (the strips' label and busy, which no report holds), a
// problem row with figures, a shard, and names to escape.
TEST(ReportHtml, ThePageOfAReportInMemoryIsThePageOfItsJson) {
  Report report;
  report.root = "/data/tree\xff";
  report.shard = Shard{1, 3};
  report.runs.push_back({report.shard, 12.345678901, 2, uint64_t(1) << 30});
  Row file = file_row("run/it <1>");
  file.set(ColumnId::seconds, 0.123456789).set(ColumnId::compaction_ratio, 10.98765).set(ColumnId::ranks, int64_t(9));
  tracelane::GpuFigures figures;
  figures.window_us = 1234.56789012345;
  figures.busy = {{"compute", 8123}, {"nccl_all\xfe", 77}};
  figures.timeline.start_us = 1700000000000000.5;
  figures.timeline.end_us = figures.timeline.start_us + figures.window_us;
  tracelane::TimelineStrip strip;
  strip.rank = 0;
  strip.group = "compute";
  strip.occupancy = std::string(size_t(figures.timeline.bins), '7');
  strip.label = "Compute";
  strip.busy = 8123;
  figures.timeline.strips.push_back(strip);
  file.figures = figures;
  Row merge(RowKind::merge);
  merge.set(ColumnId::dir, std::string("run/it <1>")).set(ColumnId::ranks, int64_t(1)).set_status(RowStatus::ok);
  merge.set(ColumnId::seconds, 2.0000004);
  tracelane::GpuFigures merged = figures;
  merged.merged = true;
  merged.busy.clear();
  merged.bubble = {{0, 1500}};
  merge.figures = merged;
  Row problem(RowKind::problem);
  problem.set(ColumnId::dir, std::string("run/x")).set_status(RowStatus::failed).set(ColumnId::error, "bad\x1b");
  problem.figures = figures;
  report.rows = {file, merge, problem};
  sort_rows(report.rows);
  std::string json = report_json(report);
  std::string from_json = report_html(json, "/data/tree/tracelane_report.json", "/data/tree");
  std::string from_memory = report_page(report, "/data/tree/tracelane_report.json", "/data/tree", json.size() / 2);
  EXPECT_TRUE(from_memory == from_json) << data_of(from_memory) << "\n---\n" << data_of(from_json);
  EXPECT_NE(data_of(from_json).find("0.123"), std::string::npos);
  EXPECT_EQ(data_of(from_json).find("0.1234"), std::string::npos);
}
