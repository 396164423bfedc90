// Joining partial reports (report_combine.cpp): a bad or missing shard is a failed problem
// row, never more than a few missing shards are listed, and shards that did not split one
// plan, once, are refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report_test_rows.hpp"

using namespace tracelane::cli;
using namespace tracelane::cli::report_test;

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

TEST(ReportCombine, ShardsJoinIntoTheSingleNodeOrderAndNameMissingOnes) {
  Report single;
  single.rows = {ranked_file_row("b/it", 1, RowStatus::ok), ranked_file_row("a/it", 0, RowStatus::ok),
                 ranked_file_row("b/it", 0, RowStatus::failed)};
  sort_rows(single.rows);

  // Three shards of a plan of two iterations: shard 2 takes none.
  const IterationPlan plan = whole_plan({"a/it", "b/it"});
  Report shard0, shard1;
  shard0.shard = {0, 3};
  shard0.plan = shard_plan(plan, shard0.shard);
  shard0.rows = {ranked_file_row("a/it", 0, RowStatus::ok)};
  shard1.shard = {1, 3};
  shard1.plan = shard_plan(plan, shard1.shard);
  shard1.rows = {ranked_file_row("b/it", 0, RowStatus::failed), ranked_file_row("b/it", 1, RowStatus::ok)};
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
