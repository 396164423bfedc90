#include "tracelane/timings.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace tracelane {
namespace {

TEST(Timings, ScopesNestIntoATreeInTheOrderTheyOpened) {
  Timings timings;
  { Timings::Scope read(&timings, "read"); }
  {
    Timings::Scope compact(&timings, "compact");
    { Timings::Scope pass(&timings, "extract_slices"); }
    {
      Timings::Scope pass(&timings, "assign_lanes");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  const auto& phases = timings.phases();
  ASSERT_EQ(phases.size(), 4u);
  EXPECT_EQ(phases[0].name, "read");
  EXPECT_EQ(phases[0].depth, 0);
  EXPECT_EQ(phases[1].name, "compact");
  EXPECT_EQ(phases[1].depth, 0);
  EXPECT_EQ(phases[2].depth, 1);
  EXPECT_EQ(phases[3].name, "assign_lanes");
  EXPECT_EQ(phases[3].depth, 1);
  // A parent's wall time holds its children's; the sleep is seen.
  EXPECT_GE(phases[3].wall_s, 0.015);
  EXPECT_GE(phases[1].wall_s, phases[3].wall_s);
  EXPECT_GT(phases[3].peak_rss_mb, 0);
  std::string text = timings.text();
  EXPECT_NE(text.find("timing: compact "), std::string::npos) << text;
  EXPECT_NE(text.find("timing:   assign_lanes "), std::string::npos) << text;
}

TEST(Timings, CloseEndsAPhaseEarlyAndAnOpenPhaseIsNotPrinted) {
  Timings timings;
  Timings::Scope total(&timings, "total");
  Timings::Scope first(&timings, "first");
  first.close();
  first.close();  // a second close changes nothing
  { Timings::Scope second(&timings, "second"); }
  ASSERT_EQ(timings.phases().size(), 3u);
  EXPECT_EQ(timings.phases()[2].depth, 1);  // a sibling of "first", not its child
  std::string text = timings.text();
  EXPECT_EQ(text.find("total"), std::string::npos) << text;
  EXPECT_NE(text.find("  first"), std::string::npos) << text;
}

}  // namespace
}  // namespace tracelane
