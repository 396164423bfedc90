// The report as others read it: valid UTF-8 whatever the names, reversible escapes, no
// live spreadsheet formulas; and `report --combine`'s reader, which trusts nothing in a
// partial report (types, ranges, statuses, shard counts, totals, the plan) and never lists
// more than a few missing shards; and the combine's refusal of shards that did not split
// one plan, once.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/report/report.hpp"
#include "tracelane/trace.hpp"

using namespace tracelane::cli;

namespace {

Row named_file_row(const std::string& dir, const std::string& file, const std::string& status = "ok") {
  Row row(RowKind::file);
  row.set(ColumnId::dir, dir)
      .set(ColumnId::file, file)
      .set(ColumnId::rank, int64_t(0))
      .set(ColumnId::run, std::string("run"));
  row.set(ColumnId::iteration, std::string("it"))
      .set(ColumnId::input_bytes, int64_t(100))
      .set(ColumnId::output, file + ".out");
  row.set(ColumnId::status, status).set(ColumnId::seconds, 0.25).set(ColumnId::compaction_ratio, 2.5);
  return row;
}

// Shard index/count's report of a sweep whose iteration plan is `iterations` (sorted).
Report partial(int index, int count, std::vector<Row> rows, std::vector<std::string> iterations) {
  Report report;
  report.root = "/data/outputs";
  report.shard = {index, count};
  report.plan = shard_plan(whole_plan(std::move(iterations)), report.shard);
  report.runs.push_back({Shard{index, count}, 1.5, 2, 1 << 20});
  report.rows = std::move(rows);
  sort_rows(report.rows);
  return report;
}

// Shard index/count's report of plan `iterations`, one file row for each iteration it takes.
Report partial_with_rows(int index, int count, std::vector<std::string> iterations, const std::string& source) {
  std::vector<Row> rows;
  for (const std::string& dir : shard_plan(whole_plan(iterations), Shard{index, count}).iterations)
    rows.push_back(named_file_row(dir, "rank0_trace.json"));
  Report report = partial(index, count, std::move(rows), std::move(iterations));
  report.source = source;
  return report;
}

// A valid partial report's JSON, one file row and one merge row, to be corrupted by the tests.
std::string valid_json() {
  Row merge(RowKind::merge);
  merge.set(ColumnId::dir, std::string("r/it")).set(ColumnId::ranks, int64_t(2)).set_status(RowStatus::ok);
  Row file = named_file_row("r/it", "rank0_trace.json");
  file.set(ColumnId::gpu_flow_endpoints_mapped, int64_t(72)).set(ColumnId::gpu_annotations_mapped, int64_t(3));
  return report_json(partial(0, 2, {file, merge}, {"r/it", "r/next"}));
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
  Report report = partial(0, 1, {named_file_row(dir, file, "failed")}, {dir});
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
      {R"("input_bytes": 100)", R"("input_bytes": 9223372036854775813)",
       "rows[0].input_bytes: an integer beyond int64"},
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
      {R"("dir": "r/it")", R"("dir": "r/\\x00")", "rows[0].dir: not a directory under the report's root"},
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
      {R"("schema_version": 4)", R"("schema_version": 1)", "a report of schema_version 1, which tracelane"},
      {R"("schema_version": 4)", R"("schema_version": 5)", "a report of schema_version 5, which tracelane"},
      {R"("schema_version": 4)", R"("schema_version": "4")", "not a tracelane report (no integer schema_version)"},
      // Schema 3 and later name a column only as the summary does; schema 2 only as it did.
      {R"("gpu_annotations_mapped": 3)", R"("annotations_mapped": 3)", "rows[0].annotations_mapped: unknown key"},
      {R"("plan": {)", R"("plan_": {)", "plan_: unknown key"},
      // Schema 2 and 3 record no plan.
      {R"("schema_version": 4)", R"("schema_version": 3)", "plan: unknown key"},
      {R"("schema_version": 4)", R"("schema_version": 2)", "plan: unknown key"},
      // The plan: a SHA-256, a count, and the shard's share of the list, sorted, under ROOT.
      {R"("digest": ")", R"("digest": "x)", "plan.digest: expected 64 lower-case hex digits"},
      {R"("digest": ")", R"("digest": 7, "x": ")", "plan.x: unknown key"},
      {R"("count": 2,)", R"("count": -2,)", "plan.count: expected an integer from 0 to"},
      {R"("count": 2,)", R"("count": 3,)",
       "plan.iterations: 1 iterations, not the 2 positions of shard 0/2 in a plan of 3"},
      {R"("count": 2,)", R"("count": 2000000000000,)", "plan.count: expected an integer from 0 to 1099511627776"},
      {R"("r/it"
    ])",
       R"("r/it", "r/next"
    ])",
       "plan.iterations: 2 iterations, not the 1 positions of shard 0/2 in a plan of 2"},
      {R"("r/it"
    ])",
       R"("../r"
    ])",
       "plan.iterations[0]: not a directory under the root"},
      {R"("r/it"
    ])",
       R"("/r/it"
    ])",
       "plan.iterations[0]: not a directory under the root"},
      {R"("r/it"
    ])",
       R"(""
    ])",
       "plan.iterations[0]: not a directory under the root"},
      {R"("r/it"
    ])",
       R"("r/\\x00"
    ])",
       "plan.iterations[0]: not a directory under the root"},
      {R"("r/it"
    ])",
       R"("r\u001b"
    ])",
       "plan.iterations[0]: not text as tracelane writes it"},
      {R"("r/it"
    ])",
       R"(7
    ])",
       "plan.iterations[0]: expected a string"},
      {R"("iterations": [
      "r/it"
    ])",
       R"("iterations": "r/it")", "plan.iterations: expected an array"},
      // A row of an iteration the shard did not take.
      {R"("r/it"
    ])",
       R"("r/is"
    ])",
       "rows[0].dir: not one of the plan's iterations"},
  };
  for (const Case& c : cases) {
    std::string error = reading_error(replaced(json, c.from, c.to));
    EXPECT_EQ(error.rfind("shard.json: ", 0), 0u) << c.to << ": " << error;
    EXPECT_NE(error.find(c.where), std::string::npos) << c.from << " -> " << c.to << ": " << error;
  }
}

// An unsharded report holds its whole plan: its digest is checked against the list.
TEST(ReportReader, RefusesAnUnshardedPlanWhoseDigestIsNotItsList) {
  Report report = partial(0, 1, {named_file_row("r/a", "rank0_trace.json")}, {"r/a"});
  report.shard.reset();
  report.runs[0].shard.reset();
  std::string json = report_json(report);
  EXPECT_EQ(reading_error(json), "");
  std::string digest = whole_plan({"r/a"}).digest;
  EXPECT_NE(reading_error(replaced(json, digest, whole_plan({"r/b"}).digest))
                .find("plan.digest: not the digest of the iterations listed"),
            std::string::npos);
  // Not a check a shard's report can make: it holds only its share of the list.
}

TEST(ReportReader, RefusesRowsWhoseSumIsBeyondInt64) {
  Row big = named_file_row("r/a", "rank0_trace.json");
  big.set(ColumnId::input_bytes, INT64_MAX);
  Row other = named_file_row("r/b", "rank0_trace.json");
  other.set(ColumnId::input_bytes, INT64_MAX);
  Report report = partial(0, 1, {big, other}, {"r/a", "r/b"});
  std::string json = report_json(report);  // never a wrapped sum: null, and the reader refuses it
  EXPECT_NE(json.find("\"input_bytes\": null"), std::string::npos);
  EXPECT_NE(reading_error(json).find("the sum of input_bytes over the rows is beyond int64"), std::string::npos);
  // Two partial reports whose sums fit, but not together: a failed problem row, no wrap.
  Combined combined = combine_reports({partial(0, 2, {big}, {"r/a", "r/b"}), partial(1, 2, {other}, {"r/a", "r/b"})});
  ASSERT_EQ(combined.problems.size(), 1u);
  EXPECT_EQ(combined.problems[0].rfind("the sum of input_bytes over all reports is beyond int64", 0), 0u);
  EXPECT_TRUE(has_failures(combined.report.rows));
}

TEST(ReportCombine, ABadPartialReportIsAFailedProblemRowNotADroppedShard) {
  Combined combined = combine_reports({partial(0, 2, {named_file_row("r/a", "rank0_trace.json")}, {"r/a", "r/b"})},
                                      {"shard-1.json: rows[3].status: not a status of file rows: \"weird\""});
  EXPECT_EQ(combined.missing_shards, (std::vector<int>{1}));
  ASSERT_EQ(combined.problems.size(), 2u);
  EXPECT_TRUE(has_failures(combined.report.rows));
  std::string csv = report_csv(combined.report);
  EXPECT_NE(csv.find("problem,.,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("shard-1.json: rows[3].status"), std::string::npos) << csv;
  EXPECT_NE(csv.find("missing shards: 1 (of 2); 1 of the plan's 2 iterations are in no report given"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\r\ntotal,"), std::string::npos);
  // The total row's status, then its empty error, gpu_window_us and gpu_busy.
  EXPECT_NE(csv.find(",failed,,,\r\n", csv.find("\r\ntotal,")), std::string::npos) << csv;
}

TEST(ReportCombine, SummarisesMissingShardsOfAHugeCountWithoutListingThem) {
  Combined combined = combine_reports({partial(5, kMaxShards, {}, {})});
  EXPECT_EQ(combined.missing_shard_count, kMaxShards - 1);
  EXPECT_EQ(combined.missing_shards, (std::vector<int>{0, 1, 2, 3, 4, 6, 7, 8, 9, 10}));
  ASSERT_EQ(combined.problems.size(), 1u);
  EXPECT_EQ(combined.problems[0], "missing shards: 0 1 2 3 4 6 7 8 9 10 ... and 99989 more (of 100000)");
  // And a count beyond the bound is not read at all.
  std::string json = report_json(partial(0, kMaxShards, {}, {}));
  EXPECT_EQ(reading_error(json), "");
  EXPECT_NE(reading_error(replaced(json, "\"count\": 100000", "\"count\": 100001")).find("shard.count"),
            std::string::npos);
}

TEST(ReportCombine, ASecondReportOfOneShardOrOfAnotherCountIsLeftOutAndReported) {
  const std::vector<std::string> plan = {"r/a", "r/b"};
  Report first = partial(0, 2, {named_file_row("r/a", "rank0_trace.json")}, plan);
  first.source = "a.json";
  Report again = first;
  again.source = "b.json";
  Report other = partial(1, 3, {named_file_row("r/c", "rank0_trace.json")}, plan);
  other.source = "c.json";
  Report second = partial(1, 2, {named_file_row("r/b", "rank0_trace.json")}, plan);
  Combined combined = combine_reports({first, again, other, second});
  EXPECT_EQ(combined.missing_shard_count, 0);
  ASSERT_EQ(combined.problems.size(), 2u);
  EXPECT_EQ(combined.problems[0], "b.json: shard 0/2 given twice (also a.json); left out");
  EXPECT_EQ(combined.problems[1], "c.json: shard 1/3 is not one of the 2 shards of the first report; left out");
  size_t file_rows = 0;
  for (const Row& row : combined.report.rows) file_rows += row.kind == RowKind::file;
  EXPECT_EQ(file_rows, 2u);  // r/a once, r/b; not r/c
}

// A partial report of schema 2 (two releases ago) reads as this release would have written
// it, its renamed columns under their names now; it records no plan, so the combine leaves
// it out and says why, beside a shard this release wrote.
TEST(ReportSchema2, APreviousReleasesPartialReportReadsUnderTheColumnNamesNow) {
  Report old_shard = parse_report_json(schema2_report(0), "shard-0.json");
  ASSERT_EQ(old_shard.rows.size(), 1u);
  const Row& row = old_shard.rows[0];
  EXPECT_EQ(std::get<int64_t>(row.get(ColumnId::gpu_flow_endpoints_mapped)), 72);
  EXPECT_EQ(std::get<int64_t>(row.get(ColumnId::gpu_flow_endpoints_unmapped)), 0);
  EXPECT_EQ(std::get<int64_t>(row.get(ColumnId::gpu_annotations_mapped)), 3);
  EXPECT_EQ(std::get<int64_t>(row.get(ColumnId::gpu_annotations_coalesced)), 0);
  EXPECT_FALSE(old_shard.plan.has_value());
  std::string rewritten = report_json(old_shard);
  EXPECT_NE(rewritten.find("\"schema_version\": 4"), std::string::npos);
  EXPECT_NE(rewritten.find("\"plan\": null"), std::string::npos);
  EXPECT_NE(rewritten.find("\"gpu_flow_endpoints_mapped\": 72"), std::string::npos);
  EXPECT_EQ(rewritten.find("\"flows_mapped\""), std::string::npos);
  EXPECT_EQ(reading_error(rewritten), "");

  // Shard 1 as this release writes it (with the plan its sweep split), beside shard 0 as
  // the previous release did.
  Report new_shard = parse_report_json(schema2_report(1), "x");
  std::vector<std::string> plan;
  for (const Report& shard : {old_shard, new_shard})
    plan.push_back(std::get<std::string>(shard.rows[0].get(ColumnId::dir)));
  std::sort(plan.begin(), plan.end());
  new_shard.plan = shard_plan(whole_plan(plan), new_shard.shard);
  new_shard = parse_report_json(report_json(new_shard), "shard-1.json");
  Combined mixed = combine_reports({old_shard, new_shard});
  ASSERT_EQ(mixed.problems.size(), 2u);
  EXPECT_EQ(mixed.problems[0],
            "shard-0.json: shard 0/2 records no iteration plan (a report of schema 3 or older, or a "
            "combined report that did not account for its plan), so nothing shows it split the "
            "list the others did; left out (sweep it again)");
  EXPECT_EQ(mixed.problems[1], "missing shards: 0 (of 2); 1 of the plan's 2 iterations are in no report given");
  EXPECT_TRUE(has_failures(mixed.report.rows));
  EXPECT_NE(report_csv(mixed.report).find(",gpu_flow_endpoints_mapped,"), std::string::npos);
}

// A schema 2 report is checked as strictly as a schema 3 one, under the names it wrote:
// its totals too.
TEST(ReportSchema2, ACorruptPreviousReleasesReportNamesTheFieldAsTheFileDoes) {
  std::string json = schema2_report(0);
  std::string totals = "\"flows_mapped\": 72,", edited = "\"flows_mapped\": 73,";
  ASSERT_NE(json.find(totals), std::string::npos);
  EXPECT_NE(reading_error(json.replace(json.find(totals), totals.size(), edited))
                .find("totals.flows_mapped: 73 does not match"),
            std::string::npos);
}

// The issue's array: shard 0 split the tree's four iterations; then an iteration appeared
// and shard 1 split five. Shard 1's positions 1 and 3 are "b" and "c": "c" was shard 0's,
// and "d" would be swept by no shard. The combine refuses shard 1, naming both reports.
TEST(ReportCombine, ShardsOfDifferentPlansAreRefusedNamingBoth) {
  Report shard0 = partial_with_rows(0, 2, {"a", "b", "c", "d"}, "s0.json");
  Report shard1 = partial_with_rows(1, 2, {"a", "b", "b2", "c", "d"}, "s1.json");
  Combined combined = combine_reports({shard0, shard1});
  ASSERT_EQ(combined.problems.size(), 2u);
  EXPECT_EQ(combined.problems[0],
            "s1.json: shard 1/2 worked from another plan (5 iterations, digest " + short_digest(shard1.plan->digest) +
                ") than s0.json, shard 0/2 (4 iterations, digest " + short_digest(shard0.plan->digest) +
                "); left out: the shards of one array must split one list of iterations (sweep ROOT --write-plan FILE "
                "once, then every shard with --plan FILE)");
  EXPECT_EQ(combined.problems[1], "missing shards: 1 (of 2); 2 of the plan's 4 iterations are in no report given");
  EXPECT_TRUE(has_failures(combined.report.rows));
  EXPECT_FALSE(combined.report.plan.has_value());
  // Same count, other names: another digest, refused the same way.
  Report renamed = partial_with_rows(1, 2, {"a", "b", "c", "e"}, "s1.json");
  EXPECT_NE(combine_reports({shard0, renamed}).problems.at(0).find("worked from another plan"), std::string::npos);
  // Of one plan, they combine, and the combined report records the whole plan.
  Combined agreed = combine_reports({shard0, partial_with_rows(1, 2, {"a", "b", "c", "d"}, "s1.json")});
  EXPECT_TRUE(agreed.problems.empty()) << agreed.problems[0];
  ASSERT_TRUE(agreed.report.plan.has_value());
  EXPECT_EQ(agreed.report.plan->iterations, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(agreed.report.plan->digest, shard0.plan->digest);
  EXPECT_EQ(reading_error(report_json(agreed.report)), "");
}

TEST(ReportCombine, RowsGivenTwiceAreNamedAndTheSecondLeftOut) {
  const std::vector<std::string> plan = {"a", "b"};
  Report shard0 = partial_with_rows(0, 2, plan, "s0.json");
  shard0.rows.push_back(shard0.rows[0]);
  Row merge(RowKind::merge);
  merge.set(ColumnId::dir, std::string("a")).set_status(RowStatus::ok);
  shard0.rows.push_back(merge);
  shard0.rows.push_back(merge);
  Combined combined = combine_reports({shard0, partial_with_rows(1, 2, plan, "s1.json")});
  ASSERT_EQ(combined.problems.size(), 1u);
  EXPECT_EQ(
      combined.problems[0],
      "rows given twice (the second left out): a/rank0_trace.json (s0.json, s0.json) a (merge) (s0.json, s0.json)");
  size_t rows_of_a = 0;
  for (const Row& row : combined.report.rows)
    rows_of_a += row.kind != RowKind::problem && row.get(ColumnId::dir) == Cell(std::string("a"));
  EXPECT_EQ(rows_of_a, 2u);
  EXPECT_TRUE(has_failures(combined.report.rows));

  // An unsharded report beside a shard of the same plan: every iteration and row of the
  // shard is given twice.
  Report whole = partial_with_rows(0, 1, plan, "all.json");
  whole.shard.reset();
  whole.plan = whole_plan(plan);
  combined = combine_reports({whole, partial_with_rows(1, 2, plan, "s1.json")});
  ASSERT_EQ(combined.problems.size(), 3u);
  EXPECT_EQ(combined.problems[0], "iterations taken by two reports: b (all.json, s1.json)");
  EXPECT_EQ(combined.problems[1], "rows given twice (the second left out): b/rank0_trace.json (all.json, s1.json)");
  EXPECT_EQ(combined.problems[2], "missing shards: 0 (of 2)");
}

TEST(ReportCombine, AnIterationOfThePlanWithNoRowIsNamedMissing) {
  const std::vector<std::string> plan = {"a", "b", "c", "d"};
  Report shard1 = partial_with_rows(1, 2, plan, "s1.json");
  shard1.rows.erase(shard1.rows.begin());  // b's row
  Combined combined = combine_reports({partial_with_rows(0, 2, plan, "s0.json"), shard1});
  ASSERT_EQ(combined.problems.size(), 1u);
  EXPECT_EQ(combined.problems[0], "iterations of the plan with no row (swept by no shard): b (shard 1/2)");
  EXPECT_TRUE(has_failures(combined.report.rows));
  EXPECT_FALSE(combined.report.plan.has_value());
  // A problem row of the iteration (sweep --plan: its directory is gone) is its row.
  Row gone(RowKind::problem);
  gone.set(ColumnId::dir, std::string("b")).set_status(RowStatus::failed).set(ColumnId::error, std::string("gone"));
  shard1.rows.push_back(gone);
  combined = combine_reports({partial_with_rows(0, 2, plan, "s0.json"), shard1});
  EXPECT_TRUE(combined.problems.empty()) << combined.problems[0];
  EXPECT_TRUE(has_failures(combined.report.rows));  // the problem row itself
}

// Reports that each read as a shard of the plan, but whose lists do not partition it.
TEST(ReportCombine, IterationsThatAreNotThePlanOrNotAtTheirShardsPositionsAreRefused) {
  const std::vector<std::string> plan = {"a", "b", "c", "d"};
  auto shard_taking = [&](int index, std::vector<std::string> taken) {
    Report report = partial_with_rows(index, 2, plan, "s" + std::to_string(index) + ".json");
    report.plan->iterations = taken;
    report.rows.clear();
    for (const std::string& dir : taken) report.rows.push_back(named_file_row(dir, "rank0_trace.json"));
    return report;
  };
  Combined swapped = combine_reports({shard_taking(0, {"a", "b"}), shard_taking(1, {"c", "d"})});
  ASSERT_EQ(swapped.problems.size(), 1u);
  EXPECT_EQ(swapped.problems[0],
            "iterations at a position of another shard: b (position 1, in s0.json, shard 0/2) c (position 2, in "
            "s1.json, shard 1/2)");
  Combined other = combine_reports({shard_taking(0, {"a", "c"}), shard_taking(1, {"b", "x"})});
  ASSERT_EQ(other.problems.size(), 1u);
  EXPECT_EQ(other.problems[0], "the iterations the reports took (4, digest " +
                                   short_digest(whole_plan({"a", "b", "c", "x"}).digest) +
                                   ") are not their plan (4 "
                                   "iterations, digest " +
                                   short_digest(whole_plan(plan).digest) + ")");
  // A row outside its report's share is left out, named.
  Report stray = shard_taking(0, {"a", "c"});
  stray.rows.push_back(named_file_row("b", "rank0_trace.json"));
  Combined strayed = combine_reports({stray, shard_taking(1, {"b", "d"})});
  ASSERT_EQ(strayed.problems.size(), 1u);
  EXPECT_EQ(strayed.problems[0],
            "rows of an iteration their report's plan did not take (left out): b/rank0_trace.json (s0.json)");
}

TEST(ReportList, SummarisesAfterTheFirstFew) {
  EXPECT_EQ(summarise_list({"1", "2"}, 2), "1 2");
  EXPECT_EQ(summarise_list({"1", "2"}, 7), "1 2 ... and 5 more");
}
