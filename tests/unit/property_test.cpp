// Invariants over random inputs (STYLE: property tests where an invariant exists): lanes
// never overlap, the lane count equals the maximum overlap depth, and every measured slice
// survives unchanged but for its placement.
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>

#include "test_support.hpp"
#include "tracelane/decimal_time.hpp"
#include "tracelane/lanes.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

// Two slices overlap when each starts before the other ends; touching and zero-length
// slices at a boundary do not.
bool overlap(const Interval& a, const Interval& b) { return a.start < b.end && b.start < a.end; }

// The largest set of pairwise-overlapping intervals (interval graphs are perfect, so this
// is the fewest lanes possible). Positive-length intervals share a point strictly inside
// all of them; a zero-length interval at p joins the positive ones strictly containing p,
// and two zero-length intervals never overlap.
size_t max_overlap_depth(const std::vector<Interval>& intervals) {
  std::vector<Ns> points;  // doubled coordinates: 2t and 2t+1 (half-way points)
  for (const auto& i : intervals) {
    points.push_back(2 * i.start);
    points.push_back(2 * i.start + 1);
    points.push_back(2 * i.end - 1);
  }
  size_t best = 0;
  for (Ns p : points) {
    size_t depth = 0;
    bool zero_here = false;
    for (const auto& i : intervals) {
      if (i.start == i.end) {
        if (2 * i.start == p) zero_here = true;
      } else if (2 * i.start < p && p < 2 * i.end) {
        ++depth;
      }
    }
    best = std::max(best, depth + (zero_here ? 1 : 0));
  }
  return best;
}

std::vector<Interval> random_intervals(std::mt19937& rng, size_t n, Ns horizon, Ns max_dur) {
  std::uniform_int_distribution<Ns> start(0, horizon), dur(0, max_dur);
  std::bernoulli_distribution zero(0.2);
  std::vector<Interval> out;
  for (size_t k = 0; k < n; ++k) {
    Ns s = start(rng);
    out.push_back({s, s + (zero(rng) ? 0 : dur(rng))});
  }
  return out;
}

}  // namespace

TEST(LaneProperties, MaxOverlapDepthHelperAgreesWithHandCounts) {
  EXPECT_EQ(max_overlap_depth({{0, 10}, {10, 20}}), 1u);
  EXPECT_EQ(max_overlap_depth({{0, 10}, {9, 20}}), 2u);
  EXPECT_EQ(max_overlap_depth({{0, 10}, {5, 5}, {5, 5}}), 2u);
  EXPECT_EQ(max_overlap_depth({{5, 5}, {5, 5}}), 1u);
  EXPECT_EQ(max_overlap_depth({{0, 10}, {0, 10}, {2, 3}, {20, 30}}), 3u);
}

TEST(LaneProperties, RandomIntervalsNeverOverlapOnALaneAndUseMaxDepthLanes) {
  std::mt19937 rng(20240607);
  std::uniform_int_distribution<size_t> size(0, 40);
  for (int trial = 0; trial < 500; ++trial) {
    auto intervals = random_intervals(rng, size(rng), 60, 15);
    uint32_t count = 0;
    auto lanes = assign_lanes(intervals, count);
    ASSERT_EQ(lanes.size(), intervals.size());
    ASSERT_EQ(count, max_overlap_depth(intervals)) << "trial " << trial;
    std::vector<bool> used(count, false);
    for (size_t a = 0; a < intervals.size(); ++a) {
      ASSERT_LT(lanes[a], count);
      used[lanes[a]] = true;
      for (size_t b = a + 1; b < intervals.size(); ++b) {
        if (lanes[a] != lanes[b]) continue;
        ASSERT_FALSE(overlap(intervals[a], intervals[b]))
            << "trial " << trial << ": [" << intervals[a].start << "," << intervals[a].end << ") and ["
            << intervals[b].start << "," << intervals[b].end << ") share lane " << lanes[a];
      }
    }
    for (uint32_t l = 0; l < count; ++l) EXPECT_TRUE(used[l]) << "lane " << l << " unused in trial " << trial;
  }
}

TEST(LaneProperties, RandomTracesCompactIntoMaxDepthLanesWithEverySliceUnchanged) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> stream(7, 12), size(1, 30), whole(1000, 1060), frac(0, 999), dur_us(0, 12);
  std::bernoulli_distribution nccl(0.3), zero(0.15), short_text(0.3);
  for (int trial = 0; trial < 60; ++trial) {
    struct Made {
      std::string name, text;
      int stream;
      bool gather;
      Interval interval;
    };
    std::vector<Made> made;
    int n = size(rng);
    for (int k = 0; k < n; ++k) {
      Made m;
      m.name = "k" + std::to_string(k);
      m.stream = stream(rng);
      m.gather = nccl(rng);
      // Number text in the forms Kineto writes: "1023", "1023.5", "1023.500".
      int w = whole(rng), f = frac(rng);
      std::string ts = std::to_string(w);
      if (!short_text(rng)) {
        char buf[8];
        std::snprintf(buf, sizeof buf, ".%03d", f);
        ts += buf;
      }
      int d = zero(rng) ? 0 : dur_us(rng);
      std::string dur = std::to_string(d) + (d ? ".250" : "");
      ASSERT_TRUE(parse_us_as_ns(ts, m.interval.start));
      Ns dur_ns = 0;
      ASSERT_TRUE(parse_us_as_ns(dur, dur_ns));
      m.interval.end = m.interval.start + dur_ns;
      m.text = kernel(0, m.stream, ts, dur, m.gather ? "ncclDevKernel_AllGather_" + m.name : m.name);
      made.push_back(m);
    }
    std::vector<std::string> events;
    for (const auto& m : made) events.push_back(m.text);
    auto result = compact_text(trace_json(events));
    ASSERT_EQ(result.summary.measured_slices, made.size());

    std::vector<Interval> compute, gather;
    for (const auto& m : made) (m.gather ? gather : compute).push_back(m.interval);
    size_t want_compute = max_overlap_depth(compute), want_gather = max_overlap_depth(gather);
    auto lanes_of = [&](const char* group) {
      auto it = result.summary.lanes_by_group.find(group);
      return it == result.summary.lanes_by_group.end() ? size_t(0) : it->second;
    };
    EXPECT_EQ(lanes_of("compute"), want_compute) << "trial " << trial;
    EXPECT_EQ(lanes_of("nccl_all_gather"), want_gather) << "trial " << trial;
    EXPECT_EQ(result.summary.compacted_lanes, want_compute + want_gather);

    Output out(write_compacted(result));
    int max_stream = 0;
    for (const auto& m : made) max_stream = std::max(max_stream, m.stream);
    std::map<int64_t, std::vector<Interval>> by_lane;
    for (const auto& m : made) {
      std::string name = m.gather ? "ncclDevKernel_AllGather_" + m.name : m.name;
      auto e = out.one(name);
      int64_t tid = Output::int_of(e, "tid");
      EXPECT_EQ(Output::int_of(e["args"], "stream"), m.stream);  // as recorded (SPEC 9.14)
      EXPECT_GE(tid, max_stream + 1000);
      // Byte for byte the input, but for tid.
      std::string expected = m.text;
      const std::string from_tid = "\"tid\": " + std::to_string(m.stream) + ",";
      expected.replace(expected.find(from_tid), from_tid.size(), "\"tid\": " + std::to_string(tid) + ",");
      EXPECT_TRUE(out.contains(expected)) << expected;
      by_lane[tid].push_back(m.interval);
    }
    for (auto& [tid, intervals] : by_lane)
      for (size_t a = 0; a < intervals.size(); ++a)
        for (size_t b = a + 1; b < intervals.size(); ++b)
          EXPECT_FALSE(overlap(intervals[a], intervals[b])) << "trial " << trial << " lane " << tid;
    EXPECT_EQ(by_lane.size(), want_compute + want_gather);
  }
}
