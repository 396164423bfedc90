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
