// The sweep's plan (src/cli/sweep/sweep_plan.hpp): which iteration directories a shard
// takes, the plan of what discovery found, and the names a rank's row is reported under.
#include <gtest/gtest.h>

#include "cli/sweep/sweep_plan.hpp"

using namespace tracelane::cli;

TEST(SweepShard, ParsesKOfNAndRejectsTheRest) {
  auto shard = parse_shard("1/3");
  ASSERT_TRUE(shard);
  EXPECT_EQ(shard->index, 1);
  EXPECT_EQ(shard->count, 3);
  EXPECT_FALSE(parse_shard("3/3"));
  EXPECT_FALSE(parse_shard("0/0"));
  EXPECT_FALSE(parse_shard("-1/2"));
  EXPECT_FALSE(parse_shard("1"));
  EXPECT_FALSE(parse_shard("a/2"));
}

TEST(SweepShard, EveryPositionBelongsToExactlyOneShard) {
  for (int count = 1; count <= 5; ++count)
    for (size_t position = 0; position < 20; ++position) {
      int owners = 0;
      for (int index = 0; index < count; ++index) owners += shard_takes({index, count}, position);
      EXPECT_EQ(owners, 1);
    }
}

TEST(SweepShard, RefusesMoreShardsThanAnyJobArrayHas) {
  EXPECT_TRUE(parse_shard("99999/100000"));
  EXPECT_FALSE(parse_shard("0/100001"));
  EXPECT_FALSE(parse_shard("0/100000000"));
}

TEST(SweepShard, TheWholeTreeIsOneShardOfOne) {
  auto shard = parse_shard("0/1");
  ASSERT_TRUE(shard);
  for (size_t position = 0; position < 5; ++position) EXPECT_TRUE(shard_takes(*shard, position));
  EXPECT_TRUE(shard_takes({2, 3}, 5));
  EXPECT_FALSE(shard_takes({2, 3}, 4));
}

TEST(SweepPlan, ACopyStandingInForAGoneOriginalIsNamedAfterTheOriginal) {
  RankFile file;
  file.path = "/data/it/rank2_trace_compacted.json.gz";
  file.rank = 2;
  EXPECT_EQ(original_name(file), "rank2_trace_compacted.json.gz");
  file.from_copy = true;
  EXPECT_EQ(original_name(file), "rank2_trace.json.gz");
}

TEST(SweepPlan, TheDiscoveredPlanIsEveryIterationDirectoryInItsOrder) {
  Discovery discovery;
  for (const char* rel : {"a/profile_trace/it1", "a/profile_trace/it2", "b/it"}) {
    IterationDir dir;
    dir.rel = rel;
    discovery.iterations.push_back(dir);
  }
  IterationPlan plan = discovered_plan(discovery);
  EXPECT_EQ(plan.iterations, (std::vector<std::string>{"a/profile_trace/it1", "a/profile_trace/it2", "b/it"}));
  EXPECT_EQ(plan.count, 3);
  EXPECT_FALSE(plan.digest.empty());
}
