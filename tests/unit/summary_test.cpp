// The JSON summaries (SPEC 6, 8): key order and number formatting.
#include "tracelane/summary.hpp"
#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

std::vector<std::string> keys_of(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::object object = parser.parse(json).get_object();
  std::vector<std::string> keys;
  for (auto field : object) keys.emplace_back(field.key);
  return keys;
}

}  // namespace

TEST(CompactionSummary, ListsTheSpecKeysInOrder) {
  auto result = compact_text(trace_json({kernel(0, 7, "0", "10"), kernel(0, 8, "5", "10", "ncclDevKernel_AllGather")}));
  std::string json = compaction_summary(result.summary, true).dump();
  std::vector<std::string> want = {"measured_slices",
                                   "original_streams",
                                   "compacted_lanes",
                                   "slice_groups",
                                   "lanes_by_group",
                                   "gpu_flow_endpoints_mapped",
                                   "gpu_flow_endpoints_unmapped",
                                   "gpu_annotations_mapped",
                                   "gpu_annotations_coalesced",
                                   "kernel_annotations_converted",
                                   "kernel_annotation_blocks",
                                   "gpu_annotations_retained",
                                   "annotation_subtracks",
                                   "cuda_graph_launches",
                                   "pp_rank",
                                   "pp_compute_dependency_pairs",
                                   "pp_compute_dependency_unmatched",
                                   "pp_unshard_compute_pairs",
                                   "pp_unshard_compute_unmatched"};
  EXPECT_EQ(keys_of(json), want);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(json);
  EXPECT_EQ(Output::int_of(root, "measured_slices"), 2);
  EXPECT_EQ(Output::int_of(root["slice_groups"], "nccl_all_gather"), 1);
  // Group keys are sorted.
  std::string groups = simdjson::minify(root["slice_groups"]);
  EXPECT_EQ(groups, R"({"compute":1,"nccl_all_gather":1})");
}

TEST(CompactionSummary, LeavesOutPpKeysWhenAsked) {
  auto result = compact_text(trace_json({kernel(0, 7, "0", "10")}));
  auto keys = keys_of(compaction_summary(result.summary, false).dump());
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "pp_rank"), 0);
  EXPECT_EQ(keys.back(), "cuda_graph_launches");
}

TEST(CompactionSummary, IsIndentedByTwoLikePython) {
  JsonValue o = JsonValue::object();
  o.set("a", JsonValue::integer(1));
  JsonValue inner = JsonValue::object();
  inner.set("b", JsonValue::string("x"));
  o.set("c", inner);
  o.set("d", JsonValue::array());
  EXPECT_EQ(o.dump(), "{\n  \"a\": 1,\n  \"c\": {\n    \"b\": \"x\"\n  },\n  \"d\": []\n}");
  EXPECT_EQ(o.dump(-1), R"({"a": 1, "c": {"b": "x"}, "d": []})");
}

TEST(CompactionSummary, InputAndOutputComeFirst) {
  JsonValue body = JsonValue::object();
  body.set("measured_slices", JsonValue::integer(3));
  auto json = with_input_output(JsonValue::string("in.json"), "out.json.gz", body).dump();
  EXPECT_EQ(keys_of(json), (std::vector<std::string>{"input", "output", "measured_slices"}));
}

TEST(JsonUs, WritesMicrosecondsExactly) {
  EXPECT_EQ(json_us(192088).dump(), "192.088");
  EXPECT_EQ(json_us(0).dump(), "0");
  EXPECT_EQ(json_us(-3500).dump(), "-3.5");
}
