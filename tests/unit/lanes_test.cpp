// Lane packing (SPEC 4) and the lanes of a compacted trace: their groups, labels and tids.
#include <set>

#include "test_support.hpp"
#include "tracelane/classify.hpp"
#include "tracelane/lanes.hpp"
#include "tracelane/rules.hpp"
#include "tracelane/summary.hpp"
#include "tracelane/track_tids.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

std::vector<uint32_t> lanes_of(const std::vector<Interval>& intervals, uint32_t& count) {
  return assign_lanes(intervals, count);
}

}  // namespace

// --- assign_lanes ----------------------------------------------------------------------

// One packing: the slices in input order, and the lane count and lanes assign_lanes gives.
struct PackingCase {
  const char* name;  // the test's name: a sentence
  std::vector<Interval> slices;
  uint32_t lane_count;
  std::vector<uint32_t> lanes;  // per slice, in input order
};

class AssignLanes : public ::testing::TestWithParam<PackingCase> {};

TEST_P(AssignLanes, PacksAsSpec4Says) {
  const PackingCase& c = GetParam();
  uint32_t count = 99;  // overwritten, whatever it held
  auto lanes = lanes_of(c.slices, count);
  EXPECT_EQ(count, c.lane_count);
  EXPECT_EQ(lanes, c.lanes);
}

// 2^53 + 1 ns cannot be told apart from 2^53 in a double; integer ns can.
const Ns kBig = Ns(1) << 53;

INSTANTIATE_TEST_SUITE_P(
    Spec4, AssignLanes,
    ::testing::Values(
        PackingCase{"TouchingSlicesShareALane", {{0, 10}, {10, 20}, {20, 30}}, 1, {0, 0, 0}},
        PackingCase{"ZeroLengthSlicesShareALaneWithEachOtherAndWithTouchingSlices",
                    {{5, 5}, {5, 5}, {5, 10}, {0, 5}},
                    1,
                    {0, 0, 0, 0}},
        PackingCase{"AZeroLengthSliceInsideABusyLaneOpensANewLane", {{0, 10}, {5, 5}}, 2, {0, 1}},
        PackingCase{"OverlappingSlicesOpenOneLaneEach", {{0, 10}, {5, 15}, {6, 7}}, 3, {0, 1, 2}},
        // At 5 lanes 0 (ended 3) and 2 (ended 4) are both free: the slice takes lane 0, and
        // the next one, at 6, takes lane 2 because lane 1 is still busy.
        PackingCase{
            "TheLowestNumberedFreeLaneIsReused", {{0, 3}, {1, 20}, {2, 4}, {5, 9}, {6, 10}}, 3, {0, 1, 2, 0, 2}},
        // [0,5] is visited before [0,10] although it comes second, so it gets lane 0.
        PackingCase{"SlicesAreVisitedByStartThenEndNotByInputOrder", {{0, 10}, {0, 5}, {7, 8}}, 2, {1, 0, 0}},
        PackingCase{"IdenticalSlicesKeepTheirInputOrder", {{3, 9}, {3, 9}, {3, 9}}, 3, {0, 1, 2}},
        PackingCase{"NoSlicesUseNoLanes", {}, 0, {}},
        // The second slice starts exactly where lane 0's slice ends.
        PackingCase{"TimesBeyondDoublePrecisionStillTouchExactly",
                    {{kBig - 10, kBig + 1}, {kBig + 1, kBig + 5}, {kBig, kBig + 2}},
                    2,
                    {0, 0, 1}}),
    [](const ::testing::TestParamInfo<PackingCase>& case_info) { return std::string(case_info.param.name); });

// --- lanes in a compacted trace ---------------------------------------------------------

TEST(CompactLanes, GroupsAreLaidOutInGroupOrderWhateverTheEventOrder) {
  // One slice of every group, listed in reverse group order, each on its own stream.
  auto result = compact_text(trace_json({
      slice_event("gpu_memset", "Memset (Device)", 0, 8, "80", "1"),
      slice_event("gpu_memcpy", "Memcpy DtoD", 0, 7, "70", "1"),
      kernel(0, 6, "60", "1", "ncclDevKernel_SendRecv"),
      kernel(0, 5, "50", "1", "ncclDevKernel_AllReduce_Sum"),
      kernel(0, 4, "40", "1", "ncclDevKernel_ReduceScatter"),
      kernel(0, 3, "30", "1", "ncclDevKernel_AllGather"),
      kernel(0, 2, "20", "1", "symmetric_memory::barrier"),
      kernel(0, 1, "10", "1", "gemm"),
  }));
  std::vector<std::string> labels;
  for (const auto& lane : result.lanes) labels.push_back(lane.label);
  EXPECT_EQ(labels,
            (std::vector<std::string>{"Compute", "Symmetric-memory barrier", "NCCL all-gather", "NCCL reduce-scatter",
                                      "NCCL all-reduce", "NCCL other", "GPU memcpy", "GPU memset"}));
  // Lane tids are 1'00'GG'0000'0 with GG the group's place in that order (SPEC 9.11).
  for (size_t i = 0; i < result.lanes.size(); ++i) EXPECT_EQ(result.lanes[i].tid, 1000000000 + int64_t(i) * 100000);
  EXPECT_EQ(result.summary.original_streams, 8u);
  EXPECT_EQ(result.summary.compacted_lanes, 8u);
  std::map<std::string, size_t> ones = {{"compute", 1},
                                        {"memcpy", 1},
                                        {"memset", 1},
                                        {"nccl_all_gather", 1},
                                        {"nccl_all_reduce", 1},
                                        {"nccl_other", 1},
                                        {"nccl_reduce_scatter", 1},
                                        {"symmetric_memory_barrier", 1}};
  EXPECT_EQ(result.summary.slice_groups, ones);
  EXPECT_EQ(result.summary.lanes_by_group, ones);
}

TEST(CompactLanes, SlicesFromManyStreamsPackIntoTheMinimumNumberOfLanes) {
  // Six streams, but never more than two slices at once.
  auto result = compact_text(trace_json({
      kernel(0, 11, "0", "10"),
      kernel(0, 12, "5", "10"),
      kernel(0, 13, "10", "5"),
      kernel(0, 14, "15", "5"),
      kernel(0, 15, "20", "0"),
      kernel(0, 16, "20", "3"),
  }));
  EXPECT_EQ(result.summary.measured_slices, 6u);
  EXPECT_EQ(result.summary.original_streams, 6u);
  EXPECT_EQ(result.summary.compacted_lanes, 2u);
  EXPECT_EQ(result.summary.slice_groups.at("compute"), 6u);
  EXPECT_EQ(result.summary.lanes_by_group.at("compute"), 2u);
}

TEST(CompactLanes, OneLaneInAGroupHasNoNumberInItsLabel) {
  auto out = compact_output(trace_json({
      kernel(0, 7, "10", "5", "gemm"),
      kernel(0, 8, "12", "5", "gemm"),
      kernel(0, 9, "10", "5", "ncclDevKernel_AllGather"),
  }));
  EXPECT_EQ(out.label(0, lane_tid("compute", 0)), "Compute 1");
  EXPECT_EQ(out.label(0, lane_tid("compute", 1)), "Compute 2");
  EXPECT_EQ(out.label(0, lane_tid("nccl_all_gather")), "NCCL all-gather");
}

TEST(CompactLanes, EverySliceGetsItsLaneTidAndKeepsItsRecordedStream) {
  // SPEC 9.14: tid places a slice on its lane; args.stream, which HTA and TraceLens read,
  // stays the stream it ran on.
  auto out = compact_output(trace_json({kernel(0, 7, "10", "5", "a"), kernel(0, 8, "12", "5", "b")}));
  auto a = out.one("a"), b = out.one("b");
  EXPECT_EQ(Output::int_of(a, "tid"), 1000000000);
  EXPECT_EQ(Output::int_of(a["args"], "stream"), 7);
  EXPECT_EQ(Output::int_of(b, "tid"), 1000000010);
  EXPECT_EQ(Output::int_of(b["args"], "stream"), 8);
  EXPECT_EQ(Output::int_of(a, "pid"), 0);
}

TEST(CompactLanes, LaneTidsDoNotDependOnTheTraceOwnTids) {
  // Two ranks of one job: other CPU thread ids, other stream ids, another GPU pid. The
  // same lanes get the same tids (SPEC 9.11); before, they counted up from each rank's
  // largest tid (6000.. on one, 71000.. on the other).
  auto rank = [](int pid, int cpu_tid, int first_stream) {
    return compact_text(trace_json({
        R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": )" + std::to_string(cpu_tid) +
            R"(, "ts": 1, "dur": 1})",
        R"({"ph": "X", "cat": "user", "name": "span", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 1})",
        kernel(pid, first_stream, "10", "5", "gemm"),
        kernel(pid, first_stream + 1, "12", "5", "gemm"),
        kernel(pid, first_stream + 2, "12", "5", "ncclDevKernel_AllReduce"),
        annotation(pid, first_stream, "11", "1", "fwd"),
    }));
  };
  auto a = rank(0, 5000, 7), b = rank(3, 70000, 20);
  ASSERT_EQ(a.lanes.size(), 3u);
  ASSERT_EQ(b.lanes.size(), 3u);
  for (size_t i = 0; i < a.lanes.size(); ++i) {
    EXPECT_EQ(a.lanes[i].label, b.lanes[i].label) << i;
    EXPECT_EQ(a.lanes[i].tid, b.lanes[i].tid) << a.lanes[i].label;
    EXPECT_EQ(a.lanes[i].annotation_tid, b.lanes[i].annotation_tid) << a.lanes[i].label;
  }
  EXPECT_EQ(a.lanes[0].tid, lane_tid("compute", 0));
  EXPECT_EQ(a.lanes[1].tid, lane_tid("compute", 1));
  EXPECT_EQ(a.lanes[2].tid, lane_tid("nccl_all_reduce", 0));
  EXPECT_EQ(a.summary.lane_tids_unaligned, 0u);
  EXPECT_EQ(Output(write_compacted(a)).label(0, annotation_tid("compute")), "Compute 1 annotations");
}

TEST(CompactLanes, EachGpuPidOfATraceHasItsOwnDigitsAscending) {
  // pid 1 is listed first but pid 0 is the trace's first GPU.
  auto result = compact_text(trace_json({
      kernel(1, 7, "0", "10", "gemm"),
      kernel(1, 9, "0", "10", "ncclDevKernel_AllGather"),
      kernel(0, 20, "0", "10", "ncclDevKernel_AllGather"),
      kernel(0, 7, "0", "10", "gemm"),
      kernel(0, 8, "5", "10", "gemm"),
  }));
  ASSERT_EQ(result.lanes.size(), 5u);
  struct Want {
    int64_t pid, tid;
    std::string label;
  };
  std::vector<Want> want = {{0, 1000000000, "Compute 1"},
                            {0, 1000000010, "Compute 2"},
                            {0, 1000200000, "NCCL all-gather"},
                            {1, 1010000000, "Compute"},
                            {1, 1010200000, "NCCL all-gather"}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(result.lanes[i].pid, want[i].pid) << i;
    EXPECT_EQ(result.lanes[i].tid, want[i].tid) << i;
    EXPECT_EQ(result.lanes[i].label, want[i].label) << i;
  }
}

TEST(CompactLanes, AnAnnotationTrackEndsInOneAndItsSubTrackNInN) {
  // Eleven annotations on one lane, each crossing all before it: the annotation track and
  // sub-tracks (2) .. (11). Sub-tracks up to (9) have their aligned tid; (10) and (11) do
  // not fit the last digit and are counted.
  std::vector<std::string> events = {kernel(0, 7, "0", "100")};
  for (int i = 0; i < 11; ++i) events.push_back(annotation(0, 7, std::to_string(i), "20", "a" + std::to_string(i)));
  auto result = compact_text(trace_json(events));
  ASSERT_EQ(result.lanes.size(), 1u);
  const Lane& lane = result.lanes[0];
  EXPECT_EQ(lane.tid, 1000000000);
  EXPECT_EQ(lane.annotation_tid, 1000000001);
  ASSERT_EQ(lane.annotation_subtracks.size(), 10u);
  for (uint32_t n = 2; n <= 9; ++n) EXPECT_EQ(lane.annotation_subtracks[n - 2], 1000000000 + n) << n;
  EXPECT_EQ(lane.annotation_subtracks[8], TrackTids::kEnd);
  EXPECT_EQ(lane.annotation_subtracks[9], TrackTids::kEnd + 1);
  EXPECT_EQ(result.summary.lane_tids_unaligned, 2u);
  Output out(write_compacted(result));
  EXPECT_EQ(out.label(0, 1000000005), "Compute annotations (5)");
  EXPECT_EQ(out.label(0, TrackTids::kEnd + 1), "Compute annotations (11)");
}

TEST(CompactLanes, ATidTheTraceAlreadyUsesIsNeverHandedOut) {
  // A CPU thread (of another pid, even) already has Compute 2's aligned tid, and another
  // the first fallback: Compute 2 falls back to the next free tid from 2*10^9; the other
  // lanes keep theirs. The fallback is counted and shows in the summary.
  auto result = compact_text(trace_json({
      R"({"ph": "X", "cat": "cpu_op", "name": "mm", "pid": 100, "tid": 1000000010, "ts": 1, "dur": 1})",
      R"({"ph": "i", "name": "mark", "pid": 100, "tid": 2000000000, "ts": 1, "s": "t"})",
      kernel(0, 7, "10", "5", "gemm"),
      kernel(0, 8, "12", "5", "gemm"),
      kernel(0, 9, "12", "5", "ncclDevKernel_AllReduce"),
  }));
  ASSERT_EQ(result.lanes.size(), 3u);
  EXPECT_EQ(result.lanes[0].tid, lane_tid("compute", 0));
  EXPECT_EQ(result.lanes[1].tid, TrackTids::kEnd + 1);
  EXPECT_EQ(result.lanes[2].tid, lane_tid("nccl_all_reduce", 0));
  EXPECT_EQ(result.lanes[1].annotation_tid, annotation_tid("compute", 1));
  EXPECT_EQ(result.summary.lane_tids_unaligned, 1u);
  std::string summary = compaction_summary(result.summary, false).dump(-1);
  EXPECT_NE(summary.find(R"("lane_tids_unaligned": 1)"), std::string::npos) << summary;
  Output out(write_compacted(result));
  EXPECT_EQ(out.label(0, TrackTids::kEnd + 1), "Compute 2");
  EXPECT_EQ(Output::int_of(out.one("mm"), "tid"), 1000000010);
}

TEST(CompactLanes, ATraceWhoseLargestTidIsNotKnownHasItsTidsRead) {
  // compact_trace skips reading the events' tids when the parser's largest one is below
  // the first track tid. A Trace not made by parse_trace does not know it: its tids are
  // read, and Compute 2's aligned tid, which a CPU thread has, is not handed out.
  Trace trace =
      parse_trace(trace_json({
                      R"({"ph": "X", "cat": "cpu_op", "name": "mm", "pid": 100, "tid": 1000000010, "ts": 1, "dur": 1})",
                      kernel(0, 7, "10", "5", "gemm"),
                      kernel(0, 8, "12", "5", "gemm"),
                  }),
                  "made.json");
  ASSERT_EQ(trace.max_int_tid, 1000000010);
  trace.max_int_tid = Trace().max_int_tid;
  CompactedTrace result = compact_trace(std::move(trace), {});
  ASSERT_EQ(result.lanes.size(), 2u);
  EXPECT_EQ(result.lanes[0].tid, lane_tid("compute", 0));
  EXPECT_NE(result.lanes[1].tid, 1000000010);
  EXPECT_EQ(result.summary.lane_tids_unaligned, 1u);
}

TEST(CompactLanes, ASummaryWithEveryTrackAlignedHasNoUnalignedKey) {
  auto result = compact_text(trace_json({kernel(0, 7, "10", "5")}));
  EXPECT_EQ(compaction_summary(result.summary, true).dump().find("lane_tids_unaligned"), std::string::npos);
}

TEST(CompactLanes, ManyLanesAreAlignedUpToTenThousandInAGroup) {
  // 10001 kernels at once on one stream: 10001 compute lanes. Numbers 0..9999 fit four
  // digits; the last lane (and its annotation track) fall back, collision-free.
  std::vector<std::string> events;
  for (int i = 0; i < 10001; ++i) events.push_back(kernel(0, 7, "0", "10", "k" + std::to_string(i)));
  auto result = compact_text(trace_json(events));
  ASSERT_EQ(result.lanes.size(), 10001u);
  for (uint32_t k = 0; k < 10000; ++k) {
    ASSERT_EQ(result.lanes[k].tid, 1000000000 + int64_t(k) * 10) << k;
    ASSERT_EQ(result.lanes[k].annotation_tid, 1000000001 + int64_t(k) * 10) << k;
  }
  std::set<int64_t> tids;
  for (const Lane& lane : result.lanes) {
    tids.insert(lane.tid);
    tids.insert(lane.annotation_tid);
  }
  EXPECT_EQ(tids.size(), 2 * 10001u);
  EXPECT_GE(result.lanes[10000].tid, TrackTids::kEnd);
  EXPECT_GE(result.lanes[10000].annotation_tid, TrackTids::kEnd);
  EXPECT_EQ(result.summary.lane_tids_unaligned, 2u);
}

TEST(CompactLanes, GroupsFromARulesFileNumberTheirDigitsInTheFileOrder) {
  // With --rules the group digits follow the rules' group order: the same rules on every
  // rank give the same tids.
  Rules rules =
      Rules::parse(R"({"groups": [{"id": "attention", "label": "Attention"}, {"id": "compute", "label": "Compute"}],
                                  "classify": [{"name_regex": "attn", "group": "attention"}, {"group": "compute"}]})",
                   "rules.json");
  CompactOptions options;
  options.rules = &rules;
  auto result = compact_text(trace_json({kernel(0, 7, "0", "10", "gemm"), kernel(0, 8, "0", "10", "flash_attn_fwd"),
                                         kernel(0, 9, "5", "10", "flash_attn_bwd")}),
                             options);
  ASSERT_EQ(result.lanes.size(), 3u);
  EXPECT_EQ(result.lanes[0].label, "Attention 1");
  EXPECT_EQ(result.lanes[0].tid, *TrackTids::aligned({0, 0, 0, kLaneTrack}));
  EXPECT_EQ(result.lanes[1].tid, *TrackTids::aligned({0, 0, 1, kLaneTrack}));
  EXPECT_EQ(result.lanes[2].label, "Compute");
  EXPECT_EQ(result.lanes[2].tid, *TrackTids::aligned({0, 1, 0, kLaneTrack}));
  EXPECT_EQ(result.lanes[2].tid, 1000100000);
}

TEST(CompactLanes, MainComputeAndUnshardTracksAreTheFirstComputeAndFirstTwoAllGatherLanes) {
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10", "gemm"),
      kernel(0, 8, "1", "10", "gemm"),
      kernel(0, 20, "0", "10", "ncclDevKernel_AllGather"),
      kernel(0, 21, "1", "10", "ncclDevKernel_AllGather"),
      kernel(0, 22, "2", "10", "ncclDevKernel_AllGather"),
  }));
  ASSERT_EQ(result.pid_tracks.size(), 1u);
  ASSERT_EQ(result.lanes.size(), 5u);
  const auto& tracks = result.pid_tracks[0];
  EXPECT_EQ(tracks.pid, 0);
  ASSERT_TRUE(tracks.main_compute_track.has_value());
  EXPECT_EQ(*tracks.main_compute_track, result.lanes[0].annotation_tid);
  EXPECT_EQ(tracks.unshard_tracks,
            (std::vector<int64_t>{result.lanes[2].annotation_tid, result.lanes[3].annotation_tid}));
}

TEST(CompactLanes, GpuPidsAreLaidOutSeparately) {
  // The same times on two GPUs do not overlap each other.
  auto result = compact_text(trace_json({kernel(0, 7, "0", "10"), kernel(1, 7, "0", "10")}));
  ASSERT_EQ(result.lanes.size(), 2u);
  EXPECT_EQ(result.lanes[0].label, "Compute");
  EXPECT_EQ(result.lanes[1].label, "Compute");
  EXPECT_EQ(result.summary.lanes_by_group.at("compute"), 2u);
  EXPECT_EQ(result.summary.original_streams, 2u);
}

TEST(CompactLanes, ExactlyTouchingSlicesWithDecimalTimesShareALane) {
  // 0.1 + 0.2 != 0.3 in floating point; in exact nanoseconds they touch.
  auto result = compact_text(
      trace_json({kernel(0, 7, "1683564902133354.100", "0.200"), kernel(0, 8, "1683564902133354.300", "0.001")}));
  EXPECT_EQ(result.summary.compacted_lanes, 1u);
}
