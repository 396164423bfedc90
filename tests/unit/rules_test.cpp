// Rules files (SPEC 9.9): classification, group order and labels, PP annotation patterns.
#include "tracelane/rules.hpp"

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
  EXPECT_EQ(ids, (std::vector<std::string>{"compute", "symmetric_memory_barrier", "nccl_all_gather",
                                           "nccl_reduce_scatter", "nccl_all_reduce", "nccl_other", "memcpy",
                                           "memset", "sync"}));
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
  EXPECT_NE(error_of(R"({"classify": [{"nme_regex": "x", "group": "b"}]})").find("classify rule #1 (group \"b\"): unknown key \"nme_regex\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"classify": [{"cat": "kernel"}]})").find("classify rule #1: needs a non-empty string \"group\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"classify": [{"cat": "kernel", "group": "g"}]})").find("\"cat\" must be a list of strings"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"groups": [{"id": "a"}, {"id": "a"}], "classify": []})").find("group #2: group \"a\" is listed twice"),
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
  auto json = trace_json({kernel(0, 7, "0", "10", "sm90_gemm"), kernel(0, 8, "20", "10", "elementwise"),
                          R"({"ph": "X", "cat": "gpu_user_annotation", "name": "PIPE:0RECV_F0", "pid": 0, "tid": 8, "ts": 20, "dur": 2, "args": {}})",
                          R"({"ph": "X", "cat": "gpu_user_annotation", "name": "PIPE:0F0", "pid": 0, "tid": 8, "ts": 24, "dur": 6, "args": {}})"});
  auto result = compact_text(json, options);
  EXPECT_EQ(result.summary.lanes_by_group.at("gemm"), 1u);
  EXPECT_EQ(result.summary.lanes_by_group.at("compute"), 1u);
  ASSERT_EQ(result.lanes.size(), 2u);
  EXPECT_EQ(result.lanes[0].label, "GEMM");
  EXPECT_EQ(result.summary.pp.compute_dependency_pairs, 1u);
}
