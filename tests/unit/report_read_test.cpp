// `report --combine`'s reader (report_read.cpp), which trusts nothing in a partial report
// (types, ranges, statuses, shard counts, totals, the plan), and reads the previous
// release's reports under the column names now.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report_test_rows.hpp"

using namespace tracelane::cli;
using namespace tracelane::cli::report_test;

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

TEST(ReportSchema2, ACorruptPreviousReleasesReportNamesTheFieldAsTheFileDoes) {
  std::string json = schema2_report(0);
  std::string totals = "\"flows_mapped\": 72,", edited = "\"flows_mapped\": 73,";
  ASSERT_NE(json.find(totals), std::string::npos);
  EXPECT_NE(reading_error(json.replace(json.find(totals), totals.size(), edited))
                .find("totals.flows_mapped: 73 does not match"),
            std::string::npos);
}
