// The iteration plan that the shards of one job array split: its digest (SHA-256 of the
// list) and the shards' shares of it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/iteration_plan.hpp"
#include "cli/report.hpp"
#include "cli/sha256.hpp"
#include "cli/sweep_plan.hpp"
#include "tracelane/trace.hpp"

using namespace tracelane::cli;

namespace {

std::string sha256_of(const std::string& text) {
  Sha256 sha;
  sha.update(text);
  return sha.hex_digest();
}

}  // namespace

TEST(Sha256, GivesTheFipsExampleDigests) {
  EXPECT_EQ(sha256_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a', given in pieces of 999 bytes that straddle the 64-byte blocks.
  Sha256 sha;
  const std::string piece(999, 'a');
  size_t given = 0;
  for (; given + piece.size() <= 1000000; given += piece.size()) sha.update(piece);
  sha.update(std::string(1000000 - given, 'a'));
  EXPECT_EQ(sha.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55, 56 and 64 bytes: the padding's edge cases, against one update of the same bytes.
  for (size_t n : {55, 56, 63, 64, 65}) {
    Sha256 split;
    split.update(std::string(n / 2, 'x'));
    split.update(std::string(n - n / 2, 'x'));
    EXPECT_EQ(split.hex_digest(), sha256_of(std::string(n, 'x'))) << n;
  }
}

TEST(IterationPlan, TheDigestTellsEveryListApart) {
  // Each name is preceded by its length: no way to move a boundary between names.
  EXPECT_NE(plan_digest({"ab"}), plan_digest({"a", "b"}));
  EXPECT_NE(plan_digest({"a/b", "c"}), plan_digest({"a", "b/c"}));
  EXPECT_NE(plan_digest({}), plan_digest({""}));
  EXPECT_NE(plan_digest({"a", "b"}), plan_digest({"a", "b", "c"}));
  EXPECT_EQ(plan_digest({"a", "b"}), whole_plan({"a", "b"}).digest);
  EXPECT_EQ(whole_plan({"a", "b"}).count, 2);
}

TEST(IterationPlan, AShardTakesThePositionsSweepShardTakes) {
  std::vector<std::string> names;
  for (char c = 'a'; c <= 'k'; ++c) names.push_back(std::string(1, c));
  IterationPlan whole = whole_plan(names);
  for (int count : {1, 2, 3, 5, 11, 12}) {
    size_t total = 0;
    for (int index = 0; index < count; ++index) {
      IterationPlan shard = shard_plan(whole, std::pair{index, count});
      EXPECT_EQ(shard.digest, whole.digest);
      EXPECT_EQ(shard.count, whole.count);
      EXPECT_EQ(int64_t(shard.iterations.size()), shard_share(whole.count, {index, count})) << index << "/" << count;
      for (const std::string& name : shard.iterations)
        EXPECT_TRUE(shard_takes({index, count}, size_t(name[0] - 'a'))) << name << " in " << index << "/" << count;
      EXPECT_EQ(plan_problem(shard, std::pair{index, count}), std::nullopt);
      total += shard.iterations.size();
    }
    EXPECT_EQ(total, names.size());
  }
  EXPECT_EQ(shard_plan(whole, std::nullopt).iterations, names);
}
