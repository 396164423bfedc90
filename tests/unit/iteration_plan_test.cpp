// The iteration plan that the shards of one job array split: its digest (SHA-256 of the
// list), the shards' shares of it, and the plan file (`sweep --write-plan`, `--plan`),
// read as strictly as a partial report, since someone else may be able to write it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/report/iteration_plan.hpp"
#include "cli/report/report.hpp"
#include "cli/report/sha256.hpp"
#include "cli/sweep/sweep_plan.hpp"
#include "tracelane/trace.hpp"

using namespace tracelane::cli;

namespace {

std::string sha256_of(const std::string& text) {
  Sha256 sha;
  sha.update(text);
  return sha.hex_digest();
}

// The message of the Error parse_plan_file throws, or "" when it reads the text.
std::string plan_error(const std::string& json) {
  try {
    parse_plan_file(json, "plan.json");
  } catch (const tracelane::Error& e) {
    return e.what();
  }
  return "";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
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
      IterationPlan shard = shard_plan(whole, Shard{index, count});
      EXPECT_EQ(shard.digest, whole.digest);
      EXPECT_EQ(shard.count, whole.count);
      EXPECT_EQ(int64_t(shard.iterations.size()), shard_share(whole.count, {index, count})) << index << "/" << count;
      for (const std::string& name : shard.iterations)
        EXPECT_TRUE(shard_takes({index, count}, size_t(name[0] - 'a'))) << name << " in " << index << "/" << count;
      EXPECT_EQ(plan_problem(shard, Shard{index, count}), std::nullopt);
      total += shard.iterations.size();
    }
    EXPECT_EQ(total, names.size());
  }
  EXPECT_EQ(shard_plan(whole, std::nullopt).iterations, names);
}

TEST(PlanFile, ReadsWhatItWrote) {
  PlanFile file{"/data/outputs\xff", whole_plan({".", "run/it\x1b", "run/it\\1"})};
  std::string json = plan_file_json(file);
  EXPECT_NE(json.find("\"run/it\\\\x1b\""), std::string::npos) << json;  // escaped as every text cell
  PlanFile back = parse_plan_file(json, "plan.json");
  EXPECT_EQ(back.root, file.root);
  EXPECT_EQ(back.plan.iterations, file.plan.iterations);
  EXPECT_EQ(back.plan.digest, file.plan.digest);
  EXPECT_EQ(back.plan.count, 3);
  EXPECT_EQ(plan_file_json(back), json);
  EXPECT_EQ(plan_error(plan_file_json(PlanFile{"/", whole_plan({})})), "");
}

// Whoever can write the plan file chooses names: none may leave ROOT, and an edited or cut
// list is refused, each naming the file and the field.
TEST(PlanFile, RefusesAnEditedOrHostileList) {
  const std::string json = plan_file_json(PlanFile{"/data/outputs", whole_plan({"a/it", "b/it"})});
  struct Case {
    std::string from, to, where;
  };
  const std::vector<Case> cases = {
      {R"("a/it")", R"("../it")", "iterations[0]: not a directory under the root"},
      {R"("a/it")", R"("a/../../it")", "iterations[0]: not a directory under the root"},
      {R"("a/it")", R"("/etc")", "iterations[0]: not a directory under the root"},
      {R"("a/it")", R"("")", "iterations[0]: not a directory under the root"},
      {R"("a/it")", R"("a//it")", "iterations[0]: not a directory under the root"},
      {R"("a/it")", R"("a/it/")", "iterations[0]: not a directory under the root"},
      {R"("a/it")", R"("a/\\x00")", "iterations[0]: not a directory under the root"},
      {R"("a/it")", R"("c/it")", "iterations[1]: not after the one before"},
      {R"("a/it")", R"("b/it")", "iterations[1]: not after the one before"},
      {R"("a/it")", R"("a/is")", "digest: not the digest of the iterations listed"},
      {R"("a/it",)", "", "iterations: 1 iterations, not the 2 of a plan of 2"},
      {R"("count": 2)", R"("count": 3)", "iterations: 2 iterations, not the 3 of a plan of 3"},
      {R"("digest": ")", R"("digest": "0)", "digest: expected 64 lower-case hex digits"},
      {R"("root": "/data/outputs")", R"("root": 7)", "root: expected a string"},
      {R"("root": )", R"("roots": )", "roots: unknown key"},
      {R"("plan_version": 1)", R"("plan_version": 2)", "not a plan file of plan_version 1"},
      {R"("plan_version": 1,)", "", "not a plan file of plan_version 1"},
  };
  for (const Case& c : cases) {
    std::string error = plan_error(replaced(json, c.from, c.to));
    EXPECT_EQ(error.rfind("plan.json: ", 0), 0u) << c.to << ": " << error;
    EXPECT_NE(error.find(c.where), std::string::npos) << c.from << " -> " << c.to << ": " << error;
  }
  EXPECT_NE(plan_error(json.substr(0, json.size() / 2)).find("plan.json: not a JSON plan file"), std::string::npos);
  // A report is not a plan file, nor a plan file a report.
  EXPECT_NE(plan_error("{\"schema_version\": 4}").find("not a plan file"), std::string::npos);
}
