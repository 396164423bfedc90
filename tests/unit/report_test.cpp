// The report as others read it: valid UTF-8 whatever the names, reversible escapes, no
// live spreadsheet formulas; and `report --combine`'s reader, which trusts nothing in a
// partial report (types, ranges, statuses, shard counts, totals) and never lists more
// than a few missing shards.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cli/report.hpp"
#include "tracelane/trace.hpp"

using namespace tracelane::cli;

namespace {

Row named_file_row(const std::string& dir, const std::string& file, const std::string& status = "ok") {
  Row row(RowKind::file);
  row.set("dir", dir).set("file", file).set("rank", int64_t(0)).set("run", std::string("run"));
  row.set("iteration", std::string("it")).set("input_bytes", int64_t(100)).set("output", file + ".out");
  row.set("status", status).set("seconds", 0.25).set("compaction_ratio", 2.5);
  return row;
}

Report partial(int index, int count, std::vector<Row> rows) {
  Report report;
  report.root = "/data/outputs";
  report.shard = {index, count};
  report.runs.push_back({std::pair{index, count}, 1.5, 2, 1 << 20});
  report.rows = std::move(rows);
  sort_rows(report.rows);
  return report;
}

// A valid partial report's JSON, one file row and one merge row, to be corrupted by the tests.
std::string valid_json() {
  Row merge(RowKind::merge);
  merge.set("dir", std::string("r/it")).set("ranks", int64_t(2)).set("status", std::string("ok"));
  Row file = named_file_row("r/it", "rank0_trace.json");
  file.set("gpu_flow_endpoints_mapped", int64_t(72)).set("gpu_annotations_mapped", int64_t(3));
  return report_json(partial(0, 2, {file, merge}));
}

// Replaces the first `from` among the rows, else the first anywhere (totals repeat some
// column names before the rows).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from, text.find("\"rows\": ["));
  if (at == std::string::npos) at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The message of the Error parse_report_json throws, or "" when it reads the text.
std::string reading_error(const std::string& json) {
  try {
    parse_report_json(json, "shard.json");
  } catch (const tracelane::Error& e) {
    return e.what();
  }
  return "";
}

// A partial report the previous release (schema 2) wrote: `tracelane sweep --shard K/2` of
// two iterations of one rank each (tests/data/report_schema2/).
std::string schema2_report(int shard) {
  std::ifstream in(std::string(TRACELANE_SOURCE_DIR) + "/tests/data/report_schema2/tracelane_report.shard-" +
                   std::to_string(shard) + "-of-2.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"schema_version\": 2"), std::string::npos);
  return text.str();
}

bool valid_utf8(const std::string& text) { return simdjson::validate_utf8(text.data(), text.size()); }

}  // namespace

TEST(ReportNames, EveryTextCellIsValidUtf8AndReadsBackToTheRawBytes) {
  const std::string dir = "run\xff/it\x1b[31m\\x41/\xc3";
  const std::string file = "rank0_trace.json\x7f";
  Report report = partial(0, 1, {named_file_row(dir, file, "failed")});
  report.rows[0].set("error", dir + "/" + file + ": bad \xfe");
  report.root = "/root\xff\\";
  std::string json = report_json(report), csv = report_csv(report);
  EXPECT_TRUE(valid_utf8(json)) << json;
  EXPECT_TRUE(valid_utf8(csv)) << csv;
  EXPECT_EQ(csv.find('\x1b'), std::string::npos);
  // The escaped form: \xHH for what is not printable UTF-8, \\ for a backslash.
  EXPECT_NE(json.find(R"("dir": "run\\xff/it\\x1b[31m\\\\x41/\\xc3")"), std::string::npos) << json;

  Report back = parse_report_json(json, "test");
  EXPECT_EQ(std::get<std::string>(back.rows[0].get("dir")), dir);
  EXPECT_EQ(std::get<std::string>(back.rows[0].get("file")), file);
  EXPECT_EQ(back.root, report.root);
  EXPECT_EQ(report_json(back), json);
  EXPECT_EQ(report_csv(combine_reports({back}).report), csv);
}

TEST(ReportNames, NameFromReportAcceptsOnlyTheFormPrintableWrites) {
  EXPECT_EQ(name_from_report("a\\\\b\\xff"), std::optional<std::string>("a\\b\xff"));
  EXPECT_EQ(name_from_report("α/β"), std::optional<std::string>("α/β"));
  EXPECT_FALSE(name_from_report("\\x41"));   // 'A' is written as itself
  EXPECT_FALSE(name_from_report("\\xFF"));   // printable writes lower case
  EXPECT_FALSE(name_from_report("a\\q"));    // no such escape
  EXPECT_FALSE(name_from_report("a\\"));     // a lone trailing backslash
  EXPECT_FALSE(name_from_report("a\\x4"));   // a cut escape
  EXPECT_FALSE(name_from_report("a\x1b"));   // a raw control character
}

TEST(ReportCsv, PrefixesTextCellsThatASpreadsheetWouldRunAsFormulas) {
  Report report;
  for (const char* dir : {"=HYPERLINK(\"http://x\")", "+1", "-1", "@SUM(A1)", "'quoted", "a=b"})
    report.rows.push_back(named_file_row(dir, "rank0_trace.json"));
  report.rows.back().set("input_bytes", int64_t(0));
  std::string csv = report_csv(report);
  EXPECT_NE(csv.find("\r\nfile,\"'=HYPERLINK(\"\"http://x\"\")\",rank0_trace.json,"), std::string::npos) << csv;
  for (const char* cell : {"\r\nfile,'+1,", "\r\nfile,'-1,", "\r\nfile,'@SUM(A1),", "\r\nfile,''quoted,", "\r\nfile,a=b,"})
    EXPECT_NE(csv.find(cell), std::string::npos) << cell << "\n" << csv;
  EXPECT_EQ(csv.find(",'100,"), std::string::npos);  // numbers never
  EXPECT_NE(csv.find(",100,"), std::string::npos);
  // The JSON keeps the value itself.
  EXPECT_NE(report_json(report).find(R"j("dir": "=HYPERLINK(\"http://x\")")j"), std::string::npos);
}

TEST(ReportReader, ReadsTheReportItWrote) { EXPECT_EQ(reading_error(valid_json()), ""); }

TEST(ReportReader, RefusesACorruptPartialReportNamingTheField) {
  const std::string json = valid_json();
  struct Case {
    std::string from, to, where;
  };
  const std::vector<Case> cases = {
      {R"("status": "ok")", R"("status": "weird")", "rows[0].status: not a status of file rows"},
      {R"("status": "ok")", R"("status": "warning")", "rows[0].status"},
      {R"("status": "ok")", R"("status": null)", "rows[0].status: missing"},
      {R"("input_bytes": 100)", R"("input_bytes": "lots")", "rows[0].input_bytes: expected an integer"},
      {R"("input_bytes": 100)", R"("input_bytes": 1e300)", "rows[0].input_bytes: expected an integer"},
      {R"("input_bytes": 100)", R"("input_bytes": 9223372036854775813)", "rows[0].input_bytes: an integer beyond int64"},
      {R"("input_bytes": 100)", R"("input_bytes": -1)", "rows[0].input_bytes: expected a non-negative integer"},
      {R"("input_bytes": 100)", R"("input_bytes": 100.5)", "rows[0].input_bytes: expected an integer"},
      {R"("compaction_ratio": 2.5000)", R"("compaction_ratio": -2.5)", "rows[0].compaction_ratio: expected a finite"},
      {R"("compaction_ratio": 2.5000)", R"("compaction_ratio": "2.5")", "rows[0].compaction_ratio: expected a number"},
      {R"("dir": "r/it")", R"("dir": 7)", "rows[0].dir: expected a string"},
      {R"("dir": "r/it")", R"("dir": "r\u001bit")", "rows[0].dir: not text as tracelane writes it"},
      {R"("dir": "r/it")", R"("dir": "r/it", "dir": "x")", "rows[0].dir: given twice"},
      // A dir is joined to ROOT and becomes a link: never one that leads out of the tree.
      {R"("dir": "r/it")", R"("dir": "../../../../etc")", "rows[0].dir: not a directory under the report's root"},
      {R"("dir": "r/it")", R"("dir": "r/../../etc")", "rows[0].dir: not a directory under the report's root"},
      {R"("dir": "r/it")", R"("dir": "/etc")", "rows[0].dir: not a directory under the report's root"},
      {R"("dir": "r/it")", R"("dir": "")", "rows[0].dir: not a directory under the report's root"},
      {R"("dir": "r/it")", R"("dir": "r//it")", "rows[0].dir: not a directory under the report's root"},
      {R"("dir": "r/it")", R"("dir": "r/it", "bytes": 1)", "rows[0].bytes: unknown key"},
      {R"("dir": "r/it")", R"("dir": "r/it", "pp_order": "0 1")", "rows[0].pp_order: not a column of file rows"},
      {R"("rank": 0,)", "", "rows[0].rank: missing"},
      {R"("kind": "file")", R"("kind": "files")", "rows[0].kind: unknown row kind"},
      {R"("index": 0)", R"("index": 2)", "shard: index 2 is not below count 2"},
      {R"("count": 2)", R"("count": 0)", "shard: index 0 is not below count 0"},
      {R"("count": 2)", R"("count": 100000000)", "shard.count: expected an integer from 0 to 100000"},
      {R"("shard": "0/2")", R"("shard": "0/100000000")", "runs[0].shard: expected null or \"K/N\""},
      {R"("shard": "0/2")", R"("shard": "-1/2")", "runs[0].shard"},
      {R"("jobs": 2)", R"("jobs": 4294967296)", "runs[0].jobs: expected an integer from 0 to 2147483647"},
      {R"("wall_seconds": 1.500)", R"("wall_seconds": -1)", "runs[0].wall_seconds"},
      // fuzz_report: 1e308 was accepted, then written as 309 digits no JSON reader takes.
      {R"("wall_seconds": 1.500)", R"("wall_seconds": 1e308)", "runs[0].wall_seconds"},
      {R"("compaction_ratio": 2.5000)", R"("compaction_ratio": 1e308)", "rows[0].compaction_ratio: expected a finite"},
      {R"("files": 1)", R"("files": 2)", "totals.files: 2 does not match the rows (1)"},
      {R"("files": 1,)", R"("files": 1, "extra": 1,)", "totals.extra: unknown key"},
      {R"("root": "/data/outputs")", R"("root": null)", "root: expected a string"},
      {R"("rows": [)", R"("rows": 5, "x": [)", "x: unknown key"},
      {R"("tool": )", R"("tol": )", "tol: unknown key"},
      {R"("schema_version": 3)", R"("schema_version": 1)", "a report of schema_version 1, which tracelane"},
      {R"("schema_version": 3)", R"("schema_version": 4)", "a report of schema_version 4, which tracelane"},
      {R"("schema_version": 3)", R"("schema_version": "3")", "not a tracelane report (no integer schema_version)"},
      // Schema 3 names a column only as the summary does; schema 2 only as it did.
      {R"("gpu_annotations_mapped": 3)", R"("annotations_mapped": 3)", "rows[0].annotations_mapped: unknown key"},
      {R"("schema_version": 3)", R"("schema_version": 2)", "rows[0].gpu_flow_endpoints_mapped: unknown key"},
  };
  for (const Case& c : cases) {
    std::string error = reading_error(replaced(json, c.from, c.to));
    EXPECT_EQ(error.rfind("shard.json: ", 0), 0u) << c.to << ": " << error;
    EXPECT_NE(error.find(c.where), std::string::npos) << c.from << " -> " << c.to << ": " << error;
  }
}

TEST(ReportReader, RefusesRowsWhoseSumIsBeyondInt64) {
  Row big = named_file_row("r/a", "rank0_trace.json");
  big.set("input_bytes", INT64_MAX);
  Row other = named_file_row("r/b", "rank0_trace.json");
  other.set("input_bytes", INT64_MAX);
  Report report = partial(0, 1, {big, other});
  std::string json = report_json(report);  // never a wrapped sum: null, and the reader refuses it
  EXPECT_NE(json.find("\"input_bytes\": null"), std::string::npos);
  EXPECT_NE(reading_error(json).find("the sum of input_bytes over the rows is beyond int64"), std::string::npos);
  // Two partial reports whose sums fit, but not together: a failed problem row, no wrap.
  Combined combined = combine_reports({partial(0, 2, {big}), partial(1, 2, {other})});
  ASSERT_EQ(combined.problems.size(), 1u);
  EXPECT_EQ(combined.problems[0].rfind("the sum of input_bytes over all reports is beyond int64", 0), 0u);
  EXPECT_TRUE(has_failures(combined.report.rows));
}

TEST(ReportCombine, ABadPartialReportIsAFailedProblemRowNotADroppedShard) {
  Combined combined = combine_reports({partial(0, 2, {named_file_row("r/a", "rank0_trace.json")})},
                                      {"shard-1.json: rows[3].status: not a status of file rows: \"weird\""});
  EXPECT_EQ(combined.missing_shards, (std::vector<int>{1}));
  ASSERT_EQ(combined.problems.size(), 2u);
  EXPECT_TRUE(has_failures(combined.report.rows));
  std::string csv = report_csv(combined.report);
  EXPECT_NE(csv.find("problem,.,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("shard-1.json: rows[3].status"), std::string::npos) << csv;
  EXPECT_NE(csv.find("missing shards: 1 (of 2)"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\r\ntotal,"), std::string::npos);
  // The total row's status, then its empty error, gpu_window_us and gpu_busy.
  EXPECT_NE(csv.find(",failed,,,\r\n", csv.find("\r\ntotal,")), std::string::npos) << csv;
}

TEST(ReportCombine, SummarisesMissingShardsOfAHugeCountWithoutListingThem) {
  Combined combined = combine_reports({partial(5, kMaxShards, {})});
  EXPECT_EQ(combined.missing_shard_count, kMaxShards - 1);
  EXPECT_EQ(combined.missing_shards, (std::vector<int>{0, 1, 2, 3, 4, 6, 7, 8, 9, 10}));
  ASSERT_EQ(combined.problems.size(), 1u);
  EXPECT_EQ(combined.problems[0], "missing shards: 0 1 2 3 4 6 7 8 9 10 ... and 99989 more (of 100000)");
  // And a count beyond the bound is not read at all.
  std::string json = report_json(partial(0, kMaxShards, {}));
  EXPECT_EQ(reading_error(json), "");
  EXPECT_NE(reading_error(replaced(json, "\"count\": 100000", "\"count\": 100001")).find("shard.count"),
            std::string::npos);
}

TEST(ReportCombine, ASecondReportOfOneShardOrOfAnotherCountIsLeftOutAndReported) {
  Report first = partial(0, 2, {named_file_row("r/a", "rank0_trace.json")});
  first.source = "a.json";
  Report again = first;
  again.source = "b.json";
  Report other = partial(1, 3, {named_file_row("r/c", "rank0_trace.json")});
  other.source = "c.json";
  Report second = partial(1, 2, {named_file_row("r/b", "rank0_trace.json")});
  Combined combined = combine_reports({first, again, other, second});
  EXPECT_EQ(combined.missing_shard_count, 0);
  ASSERT_EQ(combined.problems.size(), 2u);
  EXPECT_EQ(combined.problems[0], "b.json: shard 0/2 given twice (also a.json); left out");
  EXPECT_EQ(combined.problems[1], "c.json: shard 1/3 is not one of the 2 shards of the first report; left out");
  size_t file_rows = 0;
  for (const Row& row : combined.report.rows) file_rows += row.kind == RowKind::file;
  EXPECT_EQ(file_rows, 2u);  // r/a once, r/b; not r/c
}

// A job array whose shards were written by two releases: the previous release's schema 2
// report reads as the report this release would have written, its renamed columns under
// their names now, and combines with a schema 3 shard.
TEST(ReportSchema2, APreviousReleasesPartialReportReadsUnderTheColumnNamesNow) {
  Report old_shard = parse_report_json(schema2_report(0), "shard-0.json");
  ASSERT_EQ(old_shard.rows.size(), 1u);
  const Row& row = old_shard.rows[0];
  EXPECT_EQ(std::get<int64_t>(row.get("gpu_flow_endpoints_mapped")), 72);
  EXPECT_EQ(std::get<int64_t>(row.get("gpu_flow_endpoints_unmapped")), 0);
  EXPECT_EQ(std::get<int64_t>(row.get("gpu_annotations_mapped")), 3);
  EXPECT_EQ(std::get<int64_t>(row.get("gpu_annotations_coalesced")), 0);
  std::string rewritten = report_json(old_shard);
  EXPECT_NE(rewritten.find("\"schema_version\": 3"), std::string::npos);
  EXPECT_NE(rewritten.find("\"gpu_flow_endpoints_mapped\": 72"), std::string::npos);
  EXPECT_EQ(rewritten.find("\"flows_mapped\""), std::string::npos);
  EXPECT_EQ(reading_error(rewritten), "");

  // Shard 1 as this release writes it, beside shard 0 as the previous one did.
  Report new_shard = parse_report_json(report_json(parse_report_json(schema2_report(1), "x")), "shard-1.json");
  Combined mixed = combine_reports({old_shard, new_shard});
  EXPECT_TRUE(mixed.problems.empty()) << mixed.problems[0];
  Combined same = combine_reports({parse_report_json(rewritten, "a"), new_shard});
  EXPECT_EQ(report_json(mixed.report), report_json(same.report));
  EXPECT_EQ(report_csv(mixed.report), report_csv(same.report));
  EXPECT_NE(report_csv(mixed.report).find(",gpu_flow_endpoints_mapped,"), std::string::npos);
}

// A schema 2 report is checked as strictly as a schema 3 one, under the names it wrote:
// its totals too.
TEST(ReportSchema2, ACorruptPreviousReleasesReportNamesTheFieldAsTheFileDoes) {
  std::string json = schema2_report(0);
  std::string totals = "\"flows_mapped\": 72,", edited = "\"flows_mapped\": 73,";
  ASSERT_NE(json.find(totals), std::string::npos);
  EXPECT_NE(reading_error(json.replace(json.find(totals), totals.size(), edited)).find("totals.flows_mapped: 73 does not match"),
            std::string::npos);
}

TEST(ReportList, SummarisesAfterTheFirstFew) {
  EXPECT_EQ(summarise_list({"1", "2"}, 2), "1 2");
  EXPECT_EQ(summarise_list({"1", "2"}, 7), "1 2 ... and 5 more");
}
