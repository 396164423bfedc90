// The drivers' timer trees (what `--timings` prints): every compaction pass and every merge
// step is a phase of its own, in the order the driver runs them, so a pass that loses its
// timer, or a new pass without one, shows here.
#include "test_support.hpp"
#include "tracelane/timings.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

std::vector<std::string> names_at_depth(const Timings& timings, int depth) {
  std::vector<std::string> names;
  for (const auto& phase : timings.phases())
    if (phase.depth == depth) names.push_back(phase.name);
  return names;
}

std::string rank_trace(int64_t rank, int64_t base_ns) {
  return trace_json({kernel(0, 7, "10", "5", "k_" + std::to_string(rank)),
                     annotation(0, 7, "10", "5", "PP:" + std::to_string(rank) + "F0")},
                    R"("distributedInfo": {"rank": )" + std::to_string(rank) + R"(}, "baseTimeNanoseconds": )" +
                        std::to_string(base_ns));
}

}  // namespace

TEST(CompactionTimings, NameEveryPassInTheOrderTheDriverRunsThem) {
  Timings timings;
  CompactOptions options;
  options.timings = &timings;
  {
    Timings::Scope compact(&timings, "compact");
    compact_text(trace_json({kernel(0, 7, "0", "10"), kernel(0, 8, "5", "10", "ncclDevKernel_AllGather"),
                             annotation(0, 7, "0", "10", "PP:0F0")}),
                 options);
  }
  std::vector<std::string> want = {"check_already_laned",
                                   "extract_slices",
                                   "build_lanes",
                                   "remap_related",
                                   "coalesce_annotations",
                                   "annotate_kernel_runs",
                                   "split_annotation_tracks",
                                   "add_lane_metadata",
                                   "mark_compacted",
                                   "add_pp_flows",
                                   "count_summary",
                                   "validate"};
  EXPECT_EQ(names_at_depth(timings, 1), want);
  // The passes nest under the caller's phase and none is left open.
  EXPECT_EQ(names_at_depth(timings, 0), std::vector<std::string>{"compact"});
  for (const auto& phase : timings.phases()) EXPECT_FALSE(phase.open) << phase.name;
}

TEST(MergeTimings, NameEveryStepInTheOrderTheDriverRunsThem) {
  std::vector<MergeInput> inputs;
  for (int64_t rank : {0, 1}) {
    std::string name = "rank" + std::to_string(rank) + "_trace.json";
    inputs.push_back({name, compact_trace(parse_trace(rank_trace(rank, 1000 + rank), name), {})});
  }
  Timings timings;
  MergeResult merged = merge_ranks(std::move(inputs), nullptr, &timings);
  std::vector<std::string> want = {"read_ranks",      "align_clocks", "order_pp_ranks",       "renumber_ranks",
                                   "measure_figures", "add_pp_flows", "set_merged_top_level", "serialise"};
  EXPECT_EQ(names_at_depth(timings, 0), want);
  EXPECT_EQ(timings.phases().size(), want.size());
  EXPECT_FALSE(merged.json.empty());
}
