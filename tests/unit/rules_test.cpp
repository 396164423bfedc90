// Rules files (SPEC 9.9): classification, group order and labels, PP annotation patterns.
#include "tracelane/rules.hpp"

#include <chrono>

#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

std::string error_of(const std::string& json) {
  try {
    Rules::parse(json, "rules.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Rules, TheDefaultsAreSpec3InOrder) {
  const Rules& rules = Rules::defaults();
  std::vector<std::string> ids;
  for (const auto& g : rules.groups()) ids.push_back(g.id);
  EXPECT_EQ(ids,
            (std::vector<std::string>{"compute", "symmetric_memory_barrier", "nccl_all_gather", "nccl_reduce_scatter",
                                      "nccl_all_reduce", "nccl_other", "memcpy", "memset", "sync"}));
  auto id = [&](std::string_view cat, std::string_view name) { return rules.groups()[rules.classify(cat, name)].id; };
  EXPECT_EQ(id("gpu_memcpy", "ncclKernel_AllGather"), "memcpy");  // cat first
  EXPECT_EQ(id("kernel", "ncclDevKernel_AllGather_RING"), "nccl_all_gather");
  EXPECT_EQ(id("kernel", "NCCLREDUCESCATTER"), "nccl_reduce_scatter");
  EXPECT_EQ(id("kernel", "symmetric_memory::barrier_kernel"), "symmetric_memory_barrier");
  EXPECT_EQ(id("kernel", "sm90_gemm"), "compute");
}

TEST(Rules, PrintedDefaultsParseBackToTheSameRules) {
  Rules reparsed = Rules::parse(Rules::default_json(), "defaults.json");
  ASSERT_EQ(reparsed.groups().size(), Rules::defaults().groups().size());
  for (size_t i = 0; i < reparsed.groups().size(); ++i) {
    EXPECT_EQ(reparsed.groups()[i].id, Rules::defaults().groups()[i].id);
    EXPECT_EQ(reparsed.groups()[i].label, Rules::defaults().groups()[i].label);
  }
}

TEST(Rules, UnlistedGroupsComeAfterSortedByIdWithTitleCaseLabels) {
  Rules rules = Rules::parse(R"({"groups": [{"id": "gemm", "label": "GEMM"}],
      "classify": [{"name_regex": "^attn", "group": "flash_attention"}, {"name_contains": ["gemm"], "group": "gemm"},
                   {"cat": ["gpu_memcpy"], "group": "copy_engine"}, {"group": "compute"}]})",
                             "r.json");
  std::vector<std::pair<std::string, std::string>> groups;
  for (const auto& g : rules.groups()) groups.push_back({g.id, g.label});
  EXPECT_EQ(groups, (std::vector<std::pair<std::string, std::string>>{{"gemm", "GEMM"},
                                                                      {"compute", "Compute"},
                                                                      {"copy_engine", "Copy Engine"},
                                                                      {"flash_attention", "Flash Attention"}}));
  EXPECT_EQ(rules.groups()[rules.classify("kernel", "ATTN_fwd")].id, "flash_attention");  // regex is case-insensitive
  EXPECT_EQ(rules.groups()[rules.classify("kernel", "xGeMMx")].id, "gemm");
  EXPECT_EQ(rules.groups()[rules.classify("gpu_memcpy", "Memcpy HtoD")].id, "copy_engine");
}

TEST(Rules, ASliceNoRuleMatchesIsCompute) {
  Rules rules = Rules::parse(R"({"classify": [{"cat": ["gpu_memcpy"], "group": "memcpy"}]})", "r.json");
  EXPECT_EQ(rules.groups()[rules.classify("kernel", "anything")].id, "compute");
}

TEST(Rules, BadFilesFailNamingTheRule) {
  EXPECT_NE(error_of(R"({"classify": [{"group": "a"}, {"name_regex": "([", "group": "b"}]})")
                .find("rules.json: classify rule #2 (group \"b\"): invalid name_regex"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"classify": [{"nme_regex": "x", "group": "b"}]})")
                .find("classify rule #1 (group \"b\"): unknown key \"nme_regex\""),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"classify": [{"cat": "kernel"}]})").find("classify rule #1: needs a non-empty string \"group\""),
      std::string::npos);
  EXPECT_NE(error_of(R"({"classify": [{"cat": "kernel", "group": "g"}]})").find("\"cat\" must be a list of strings"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"groups": [{"id": "a"}, {"id": "a"}], "classify": []})")
                .find("group #2: group \"a\" is listed twice"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"clasify": []})").find("unknown key \"clasify\""), std::string::npos);
  EXPECT_NE(error_of(R"([1])").find("rules.json: not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"J({"classify": [], "pp_annotations": {"patterns": [{"regex": "(\\d+)", "op": 2}]}})J")
                .find("pp_annotations pattern #1: capture group 2 does not exist"),
            std::string::npos);
}

TEST(Rules, PpPrefixAndPatternsFeedTheSameGrammar) {
  Rules rules = Rules::parse(R"J({"classify": [{"group": "compute"}], "pp_annotations": {"prefix": "PIPE:",
      "patterns": [{"regex": "stage(\\d+)_(F|B|SEND_F)_mb(\\d+)", "stage": 1, "op": 2, "microbatch": 3}]}})J",
                             "r.json");
  auto a = rules.pp_actions("PIPE:2B7");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].stage, 2);
  EXPECT_EQ(a[0].op, "B");
  EXPECT_EQ(*a[0].microbatch, 7);
  EXPECT_TRUE(rules.pp_actions("PP:2B7").empty());  // the prefix was replaced
  auto b = rules.pp_actions("stage3_SEND_F_mb1");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].op, "SEND_F");
  EXPECT_EQ(b[0].stage, 3);
  EXPECT_TRUE(rules.pp_actions("stage3_X_mb1").empty());
}

TEST(Rules, CompactionUsesTheRulesForLanesAndArrows) {
  Rules rules = Rules::parse(R"({"groups": [{"id": "gemm", "label": "GEMM"}],
      "classify": [{"name_contains": ["gemm"], "group": "gemm"}, {"group": "compute"}],
      "pp_annotations": {"prefix": "PIPE:"}})",
                             "r.json");
  CompactOptions options;
  options.rules = &rules;
  auto json = trace_json(
      {kernel(0, 7, "0", "10", "sm90_gemm"), kernel(0, 8, "20", "10", "elementwise"),
       R"({"ph": "X", "cat": "gpu_user_annotation", "name": "PIPE:0RECV_F0", "pid": 0, "tid": 8, "ts": 20, "dur": 2, "args": {}})",
       R"({"ph": "X", "cat": "gpu_user_annotation", "name": "PIPE:0F0", "pid": 0, "tid": 8, "ts": 24, "dur": 6, "args": {}})"});
  auto result = compact_text(json, options);
  EXPECT_EQ(result.summary.lanes_by_group.at("gemm"), 1u);
  EXPECT_EQ(result.summary.lanes_by_group.at("compute"), 1u);
  ASSERT_EQ(result.lanes.size(), 2u);
  EXPECT_EQ(result.lanes[0].label, "GEMM");
  EXPECT_EQ(result.summary.pp.compute_dependency_pairs, 1u);
}

// Issue 9: std::regex recursed once per character, so one templated kernel name of ~30 kB
// overflowed the stack with an ordinary pattern and every rerun crashed again. RE2 matches
// in time linear in the name, without recursion, also for patterns that make a
// backtracking engine take exponential time.
TEST(Rules, LongKernelNamesAreClassifiedQuicklyWithAnyPattern) {
  Rules rules = Rules::parse(R"J({"classify": [
      {"name_regex": "attn.*fwd", "group": "attention"},
      {"name_regex": "(a|aa)*b", "group": "ab"},
      {"name_regex": "^(x+x+)+y", "group": "xy"},
      {"group": "compute"}]})J",
                             "rules.json");
  auto id = [&](std::string_view name) { return rules.groups()[rules.classify("kernel", name)].id; };
  auto started = std::chrono::steady_clock::now();
  for (size_t size : {size_t(30) << 10, size_t(1) << 20}) {
    std::string filler(size, 'z');
    EXPECT_EQ(id("void flash_ATTN<" + filler + ">::fwd"), "attention") << size;
    EXPECT_EQ(id("void flash_attn<" + filler + ">::rev"), "compute") << size;  // no fwd after attn
    EXPECT_EQ(id(std::string(size, 'a')), "compute") << size;                  // (a|aa)* never meets a b
    EXPECT_EQ(id(std::string(size, 'a') + "b"), "ab") << size;
    EXPECT_EQ(id(std::string(size, 'x')), "compute") << size;  // (x+x+)+ never meets a y
    EXPECT_EQ(id(std::string(size, 'x') + "y"), "xy") << size;
    // Bytes that are not UTF-8 (a name is bytes to the matcher) neither crash nor match '.'.
    EXPECT_EQ(id("attn" + std::string(size, '\xff') + "fwd"), "compute") << size;
    EXPECT_EQ(id("attn" + std::string(size, '\0') + "fwd"), "attention") << size;
  }
  // Linear: about 30 MB of names in all; a backtracking engine would not finish.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 20.0);
}

TEST(Rules, PpPatternsMatchLongNamesWithoutCrashing) {
  Rules rules = Rules::parse(R"J({"classify": [{"group": "compute"}], "pp_annotations": {
      "patterns": [{"regex": "(?:x+x+)+stage(\\d+)_(F|B)_mb(\\d+)", "stage": 1, "op": 2, "microbatch": 3},
                   {"regex": ".*stage(\\d+)_(F|B)", "stage": 1, "op": 2, "microbatch": 0}]}})J",
                             "rules.json");
  for (size_t size : {size_t(30) << 10, size_t(1) << 20}) {
    auto a = rules.pp_actions(std::string(size, 'x') + "stage2_F_mb5");
    ASSERT_EQ(a.size(), 1u) << size;
    EXPECT_EQ(a[0].stage, 2);
    EXPECT_EQ(a[0].op, "F");
    EXPECT_EQ(*a[0].microbatch, 5);
    EXPECT_TRUE(rules.pp_actions(std::string(size, 'x') + "stage2_F_mb5!").empty()) << size;  // full match only
    auto b = rules.pp_actions(std::string(size, 'q') + "stage3_B");
    ASSERT_EQ(b.size(), 1u) << size;
    EXPECT_EQ(b[0].stage, 3);
    EXPECT_FALSE(b[0].microbatch);
  }
}

TEST(Rules, PatternsRe2CannotRunAreErrorsNamingTheRule) {
  // Lookaround and backreferences need backtracking: RE2 has neither, and says so at load.
  EXPECT_NE(
      error_of(R"J({"classify": [{"group": "a"}, {"name_regex": "(?=x)", "group": "attn"}]})J")
          .find("rules.json: classify rule #2 (group \"attn\"): invalid name_regex \"(?=x)\": invalid perl operator"),
      std::string::npos);
  EXPECT_NE(error_of(R"J({"classify": [{"name_regex": "(a)\\1", "group": "a"}]})J")
                .find("classify rule #1 (group \"a\"): invalid name_regex \"(a)\\1\": invalid escape sequence"),
            std::string::npos);
  EXPECT_NE(error_of(R"J({"classify": [], "pp_annotations": {"patterns": [{"regex": "(?<=s)(\\d)(F)(\\d)"}]}})J")
                .find("rules.json: pp_annotations pattern #1: invalid regex"),
            std::string::npos);
  // A pattern too big for its memory cap is refused at load too, not at match time.
  EXPECT_NE(error_of(R"J({"classify": [{"name_regex": "\\pL{1000}", "group": "a"}]})J")
                .find("classify rule #1 (group \"a\"): invalid name_regex \"\\pL{1000}\": pattern too large - compile "
                      "failed (each of this file's 1 regexes may use 8192 KiB)"),
            std::string::npos);
  // Nested counted repetition past RE2's limit of 1000 is refused as such.
  EXPECT_NE(
      error_of(R"J({"classify": [{"name_regex": "((\\w{50}){50})", "group": "a"}]})J")
          .find("classify rule #1 (group \"a\"): invalid name_regex \"((\\w{50}){50})\": invalid repetition size"),
      std::string::npos);
}

TEST(Rules, RegexMemoryIsBoundedPerFile) {
  std::string many = R"({"classify": [)";
  for (int i = 0; i < 257; ++i) many += R"({"name_regex": "k)" + std::to_string(i) + R"(", "group": "g"},)";
  many += R"({"group": "compute"}]})";
  EXPECT_NE(error_of(many).find("rules.json: 257 regexes (name_regex and pp_annotations patterns); at most 256"),
            std::string::npos);
  // 256 small ones are fine, each with its share of the memory.
  std::string fine = R"({"classify": [)";
  for (int i = 0; i < 256; ++i) fine += R"({"name_regex": "k)" + std::to_string(i) + R"(", "group": "g"},)";
  fine += R"({"group": "compute"}]})";
  Rules rules = Rules::parse(fine, "rules.json");
  EXPECT_EQ(rules.groups()[rules.classify("kernel", "xk255x")].id, "g");
  EXPECT_EQ(rules.groups()[rules.classify("kernel", "xk256x")].id, "g");  // k25 matches
  EXPECT_EQ(rules.groups()[rules.classify("kernel", "nothing")].id, "compute");
}

TEST(Rules, CaptureGroupNumbersAreCheckedAsWritten) {
  // 2^32 + 1 must not become group 1 by a cast to int.
  EXPECT_NE(error_of(R"J({"classify": [], "pp_annotations": {"patterns": [
                {"regex": "(\\d)(F)(\\d)", "stage": 4294967297, "op": 2, "microbatch": 3}]}})J")
                .find("pp_annotations pattern #1: capture group 4294967297 does not exist"),
            std::string::npos);
  EXPECT_NE(error_of(R"J({"classify": [], "pp_annotations": {"patterns": [
                {"regex": "(\\d)(F)(\\d)", "stage": -1}]}})J")
                .find("pp_annotations pattern #1: capture group -1 does not exist"),
            std::string::npos);
  EXPECT_NE(error_of(R"J({"classify": [], "pp_annotations": {"patterns": [{"regex": "(\\d)(F)(\\d)", "op": "2"}]}})J")
                .find("pp_annotations pattern #1: \"op\" must be a capture group number"),
            std::string::npos);
  EXPECT_NE(error_of(R"J({"classify": [], "pp_annotations": {"patterns": [{"regex": "(\\d)(F)(\\d)", "stgae": 1}]}})J")
                .find("pp_annotations pattern #1: unknown key \"stgae\""),
            std::string::npos);
  EXPECT_NE(error_of(R"J({"classify": [], "pp_annotations": {"patterns": ["(\\d)(F)(\\d)"]}})J")
                .find("pp_annotations pattern #1: must be an object"),
            std::string::npos);
  EXPECT_NE(error_of(R"J({"classify": [], "pp_annotations": {"patterns": {"regex": "x"}}})J")
                .find("pp_annotations: \"patterns\" must be a list"),
            std::string::npos);
  EXPECT_NE(error_of(R"J({"classify": [], "pp_annotations": {"prefix": 3}})J")
                .find("pp_annotations: \"prefix\" must be a string"),
            std::string::npos);
}
