// TrackTids (include/tracelane/track_tids.hpp), the tids of the tracks tracelane makes
// (SPEC 9.11): aligned tids spell (gpu, group, lane, track) in decimal digits, and a tid
// the trace already uses is never handed out.
#include "tracelane/track_tids.hpp"
#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

TEST(TrackTids, AlignedTidsSpellTheKeyInDecimalDigits) {
  EXPECT_EQ(TrackTids::aligned({0, 0, 0, kLaneTrack}), 1000000000);
  EXPECT_EQ(TrackTids::aligned({12, 34, 5678, 9}), 1123456789);
  EXPECT_EQ(TrackTids::aligned({99, 99, 9999, 9}), 1999999999);
  EXPECT_EQ(TrackTids::aligned({100, 0, 0, 0}), std::nullopt);
  EXPECT_EQ(TrackTids::aligned({0, 100, 0, 0}), std::nullopt);
  EXPECT_EQ(TrackTids::aligned({0, 0, 10000, 0}), std::nullopt);
  EXPECT_EQ(TrackTids::aligned({0, 0, 0, 10}), std::nullopt);
}

TEST(TrackTids, AKeyAskedAgainGetsTheSameTidAndIsCountedOnce) {
  Trace trace = parse_trace(trace_json({R"({"ph": "i", "name": "x", "pid": 1, "tid": 1000000000, "ts": 1, "s": "t"})"}),
                            "t.json");
  TrackTids tids(trace.events);
  int64_t first = tids.tid({0, 0, 0, kLaneTrack});
  EXPECT_EQ(first, TrackTids::kEnd);
  EXPECT_EQ(tids.tid({0, 0, 0, kLaneTrack}), first);
  EXPECT_EQ(tids.tid({0, 0, 0, kAnnotationTrack}), 1000000001);
  EXPECT_EQ(tids.tid({0, 0, 0, kAnnotationTrack}), 1000000001);
  EXPECT_EQ(tids.unaligned(), 1u);
}

TEST(TrackTids, FallbacksSkipEveryTidTheTraceUsesAboveTheAlignedRange) {
  Trace trace = parse_trace(trace_json({
                                R"({"ph": "i", "name": "x", "pid": 1, "tid": 2000000000, "ts": 1, "s": "t"})",
                                R"({"ph": "i", "name": "y", "pid": 2, "tid": 2000000001, "ts": 1, "s": "t"})",
                                R"({"ph": "i", "name": "z", "pid": 2, "tid": 2000000003, "ts": 1, "s": "t"})",
                            }),
                            "t.json");
  TrackTids tids(trace.events);
  EXPECT_EQ(tids.tid({0, 0, 0, 10}), 2000000002);
  EXPECT_EQ(tids.tid({0, 0, 1, 10}), 2000000004);
  EXPECT_EQ(tids.unaligned(), 2u);
}

TEST(TrackTids, WithoutATraceEveryKeyThatFitsGetsItsAlignedTid) {
  TrackTids tids;
  EXPECT_EQ(tids.tid({1, 2, 3, kAnnotationTrack}), 1010200031);
  EXPECT_EQ(tids.tid({0, 8, 0, kLaneTrack}), 1000800000);
  EXPECT_EQ(tids.unaligned(), 0u);
  // A lane number past four digits has no aligned tid: it gets the first one past the range.
  EXPECT_EQ(tids.tid({0, 0, 10000, kLaneTrack}), TrackTids::kEnd);
  EXPECT_EQ(tids.tid({0, 0, 10001, kLaneTrack}), TrackTids::kEnd + 1);
  EXPECT_EQ(tids.unaligned(), 2u);
}

TEST(TrackTids, TidsBelowTheAlignedRangeNeverCollide) {
  Trace trace =
      parse_trace(trace_json({R"({"ph": "i", "name": "x", "pid": 1, "tid": 999999999, "ts": 1, "s": "t"})"}), "t.json");
  TrackTids tids(trace.events);
  EXPECT_EQ(tids.tid({0, 0, 0, kLaneTrack}), TrackTids::kFirst);
  EXPECT_EQ(tids.unaligned(), 0u);
}
