#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

TEST(Compact, TwoOverlappingKernelsGetTwoComputeLanes) {
  auto result = compact_text(trace_json({kernel(0, 7, "10", "5"), kernel(0, 8, "12", "5")}));
  EXPECT_EQ(result.summary.compacted_lanes, 2u);
  EXPECT_EQ(result.lanes[0].label, "Compute 1");
  EXPECT_EQ(result.lanes[1].label, "Compute 2");
}
