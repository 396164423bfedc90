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

TEST(AlreadyLaned, TracelanesOwnOutputIsRecognisedAndWithForceCompactedFromItsLanes) {
  // Its slices keep their recorded args.stream (SPEC 9.14) on lane tids: compacting it again
  // would read a tid that is not its stream. Recognised by its top-level key; --force
  // compacts it from its lanes as they are drawn.
  std::string once = write_compacted(compact_text(trace_json({kernel(0, 7, "0", "10"), kernel(0, 8, "5", "10")})));
  auto again = compact_text(once);
  EXPECT_EQ(again.already_laned, "compacted by tracelane (top-level cuda_graph_stream_compaction)");
  CompactOptions options;
  options.force = true;
  auto forced = compact_text(once, options);
  EXPECT_TRUE(forced.already_laned.empty());
  EXPECT_EQ(forced.summary.compacted_lanes, 2u);
}
