// SPEC 9.8: traces that newer exporters already laned are detected, not compacted twice.
#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

TEST(AlreadyLaned, TheTopLevelFlagLeavesTheTraceAlone) {
  auto result = compact_text(
      trace_json({kernel(0, 7, "0", "10"), kernel(0, 8, "5", "10")}, R"("cudaGraphInlineAnnotated": true)"));
  EXPECT_EQ(result.already_laned, "top-level cudaGraphInlineAnnotated is true");
  EXPECT_TRUE(result.lanes.empty());
  for (const Event& event : result.trace.events) EXPECT_EQ(event.changed, 0) << "nothing is rewritten";
}

TEST(AlreadyLaned, AFalseFlagIsAnOrdinaryTrace) {
  auto result = compact_text(trace_json({kernel(0, 7, "0", "10")}, R"("cudaGraphInlineAnnotated": false)"));
  EXPECT_TRUE(result.already_laned.empty());
  EXPECT_EQ(result.summary.compacted_lanes, 1u);
}

TEST(AlreadyLaned, SlicesWithOriginalStreamAreDetectedAndNamed) {
  auto result =
      compact_text(trace_json({kernel(0, 7, "0", "10"), kernel(0, 9, "0", "10", "k", R"("original_stream": 44)")}));
  EXPECT_NE(result.already_laned.find("args.original_stream"), std::string::npos);
  EXPECT_NE(result.already_laned.find("event #1"), std::string::npos);
}

TEST(AlreadyLaned, ForceCompactsAnyway) {
  CompactOptions options;
  options.force = true;
  auto result = compact_text(
      trace_json({kernel(0, 7, "0", "10"), kernel(0, 8, "5", "10")}, R"("cudaGraphInlineAnnotated": true)"), options);
  EXPECT_TRUE(result.already_laned.empty());
  EXPECT_EQ(result.summary.compacted_lanes, 2u);
}
