// Lane packing (SPEC 4), semantic groups (SPEC 3), lane and annotation-track tids.
#include "test_support.hpp"
#include "tracelane/classify.hpp"
#include "tracelane/lanes.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

std::vector<uint32_t> lanes_of(const std::vector<Interval>& intervals, uint32_t& count) {
  return assign_lanes(intervals, count);
}

std::string group_id(std::string_view cat, std::string_view name) {
  return default_groups()[classify_slice(cat, name)].id;
}

}  // namespace

// --- assign_lanes ----------------------------------------------------------------------

TEST(AssignLanes, TouchingSlicesShareALane) {
  uint32_t count = 99;
  auto lanes = lanes_of({{0, 10}, {10, 20}, {20, 30}}, count);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(lanes, (std::vector<uint32_t>{0, 0, 0}));
}

TEST(AssignLanes, ZeroLengthSlicesShareALaneWithEachOtherAndWithTouchingSlices) {
  uint32_t count = 99;
  auto lanes = lanes_of({{5, 5}, {5, 5}, {5, 10}, {0, 5}}, count);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(lanes, (std::vector<uint32_t>{0, 0, 0, 0}));
}

TEST(AssignLanes, AZeroLengthSliceInsideABusyLaneOpensANewLane) {
  uint32_t count = 0;
  auto lanes = lanes_of({{0, 10}, {5, 5}}, count);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(lanes, (std::vector<uint32_t>{0, 1}));
}

TEST(AssignLanes, OverlappingSlicesOpenOneLaneEach) {
  uint32_t count = 0;
  auto lanes = lanes_of({{0, 10}, {5, 15}, {6, 7}}, count);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(lanes, (std::vector<uint32_t>{0, 1, 2}));
}

TEST(AssignLanes, TheLowestNumberedFreeLaneIsReused) {
  // At 5 lanes 0 (ended 3) and 2 (ended 4) are both free: the slice takes lane 0, and
  // the next one, at 6, takes lane 2 because lane 1 is still busy.
  uint32_t count = 0;
  auto lanes = lanes_of({{0, 3}, {1, 20}, {2, 4}, {5, 9}, {6, 10}}, count);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(lanes, (std::vector<uint32_t>{0, 1, 2, 0, 2}));
}

TEST(AssignLanes, SlicesAreVisitedByStartThenEndNotByInputOrder) {
  // [0,5] is visited before [0,10] although it comes second, so it gets lane 0.
  uint32_t count = 0;
  auto lanes = lanes_of({{0, 10}, {0, 5}, {7, 8}}, count);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(lanes, (std::vector<uint32_t>{1, 0, 0}));
}

TEST(AssignLanes, IdenticalSlicesKeepTheirInputOrder) {
  uint32_t count = 0;
  auto lanes = lanes_of({{3, 9}, {3, 9}, {3, 9}}, count);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(lanes, (std::vector<uint32_t>{0, 1, 2}));
}

TEST(AssignLanes, NoSlicesUseNoLanes) {
  uint32_t count = 7;
  auto lanes = lanes_of({}, count);
  EXPECT_EQ(count, 0u);
  EXPECT_TRUE(lanes.empty());
}

TEST(AssignLanes, TimesBeyondDoublePrecisionStillTouchExactly) {
  // 2^53 + 1 ns cannot be told apart from 2^53 in a double; integer ns can.
  const Ns big = (Ns(1) << 53);
  uint32_t count = 0;
  auto lanes = lanes_of({{big - 10, big + 1}, {big + 1, big + 5}, {big, big + 2}}, count);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(lanes[0], 0u);
  EXPECT_EQ(lanes[2], 1u);
  EXPECT_EQ(lanes[1], 0u);  // starts exactly where lane 0's slice ends
}

// --- classification (SPEC 3) ----------------------------------------------------------

TEST(ClassifySlice, MemcpyAndMemsetGoByCatBeforeName) {
  EXPECT_EQ(group_id("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)"), "memcpy");
  EXPECT_EQ(group_id("gpu_memset", "Memset (Device)"), "memset");
  EXPECT_EQ(group_id("gpu_memcpy", "ncclAllGather copy"), "memcpy");
  EXPECT_EQ(group_id("Memcpy", "legacy"), "memcpy");
  EXPECT_EQ(group_id("Memset", "legacy"), "memset");
}

TEST(ClassifySlice, NcclKernelsSplitByCollectiveIgnoringCase) {
  EXPECT_EQ(group_id("kernel", "ncclDevKernel_AllGather_RING_LL"), "nccl_all_gather");
  EXPECT_EQ(group_id("kernel", "ncclKernel_ReduceScatter_RING_LL_Sum_bf16"), "nccl_reduce_scatter");
  EXPECT_EQ(group_id("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"), "nccl_all_reduce");
  EXPECT_EQ(group_id("kernel", "NCCLKERNEL_ALLGATHER"), "nccl_all_gather");
  EXPECT_EQ(group_id("kernel", "ncclDevKernel_SendRecv"), "nccl_other");
  // "all_gather" with an underscore is not "allgather".
  EXPECT_EQ(group_id("kernel", "nccl_all_gather_kernel"), "nccl_other");
}

TEST(ClassifySlice, AllGatherWinsOverReduceScatterWhenANameHasBoth) {
  EXPECT_EQ(group_id("kernel", "ncclAllGatherReduceScatter"), "nccl_all_gather");
  EXPECT_EQ(group_id("kernel", "ncclReduceScatterAllReduce"), "nccl_reduce_scatter");
}

TEST(ClassifySlice, SymmetricMemoryBarrierNeedsBothWords) {
  EXPECT_EQ(group_id("kernel", "c10d::symmetric_memory::barrier_kernel"), "symmetric_memory_barrier");
  EXPECT_EQ(group_id("kernel", "Symmetric_Memory_BARRIER"), "symmetric_memory_barrier");
  EXPECT_EQ(group_id("kernel", "symmetric_memory::put_signal"), "compute");
  EXPECT_EQ(group_id("kernel", "barrier_kernel"), "compute");
}

TEST(ClassifySlice, EverythingElseIsCompute) {
  EXPECT_EQ(group_id("kernel", "sm90_xmma_gemm_bf16"), "compute");
  EXPECT_EQ(group_id("Kernel", "volta_sgemm"), "compute");
}

TEST(DefaultGroups, AreInSpecOrderWithSpecLabels) {
  std::vector<std::pair<std::string, std::string>> expected = {
      {"compute", "Compute"},
      {"symmetric_memory_barrier", "Symmetric-memory barrier"},
      {"nccl_all_gather", "NCCL all-gather"},
      {"nccl_reduce_scatter", "NCCL reduce-scatter"},
      {"nccl_all_reduce", "NCCL all-reduce"},
      {"nccl_other", "NCCL other"},
      {"memcpy", "GPU memcpy"},
      {"memset", "GPU memset"},
      {"sync", "GPU sync"},
  };
  const auto& groups = default_groups();
  ASSERT_EQ(groups.size(), expected.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    EXPECT_EQ(groups[i].id, expected[i].first);
    EXPECT_EQ(groups[i].label, expected[i].second);
  }
}

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
  EXPECT_EQ(labels, (std::vector<std::string>{"Compute", "Symmetric-memory barrier", "NCCL all-gather",
                                              "NCCL reduce-scatter", "NCCL all-reduce", "NCCL other", "GPU memcpy",
                                              "GPU memset"}));
  // Lane tids count up in that order from the largest input tid (8) + 1000.
  for (size_t i = 0; i < result.lanes.size(); ++i) EXPECT_EQ(result.lanes[i].tid, 1008 + int64_t(i));
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
  EXPECT_EQ(out.label(0, 1009), "Compute 1");
  EXPECT_EQ(out.label(0, 1010), "Compute 2");
  EXPECT_EQ(out.label(0, 1011), "NCCL all-gather");
}

TEST(CompactLanes, EverySliceGetsItsLaneTidAsTidAndStream) {
  auto out = compact_output(trace_json({kernel(0, 7, "10", "5", "a"), kernel(0, 8, "12", "5", "b")}));
  auto a = out.one("a"), b = out.one("b");
  EXPECT_EQ(Output::int_of(a, "tid"), 1008);
  EXPECT_EQ(Output::int_of(a["args"], "stream"), 1008);
  EXPECT_EQ(Output::int_of(b, "tid"), 1009);
  EXPECT_EQ(Output::int_of(b["args"], "stream"), 1009);
  EXPECT_EQ(Output::int_of(a, "pid"), 0);
}

TEST(CompactLanes, LaneTidsStartAThousandAboveTheLargestIntegerTidOfAnyEvent) {
  // A CPU thread with tid 5000 and a string tid: only integer tids count.
  auto result = compact_text(trace_json({
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 5000, "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "user", "name": "span", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 1})",
      kernel(0, 7, "10", "5"),
  }));
  ASSERT_EQ(result.lanes.size(), 1u);
  EXPECT_EQ(result.lanes[0].tid, 6000);
}

TEST(CompactLanes, LaneTidsCountUpThroughPidsAscendingThenGroupsThenLanes) {
  // pid 1 is listed first but pid 0 gets the lower tids.
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
  std::vector<Want> want = {{0, 1020, "Compute 1"},
                            {0, 1021, "Compute 2"},
                            {0, 1022, "NCCL all-gather"},
                            {1, 1023, "Compute"},
                            {1, 1024, "NCCL all-gather"}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(result.lanes[i].pid, want[i].pid) << i;
    EXPECT_EQ(result.lanes[i].tid, want[i].tid) << i;
    EXPECT_EQ(result.lanes[i].label, want[i].label) << i;
  }
}

TEST(CompactLanes, AnnotationTracksStartAThousandAboveTheLastLaneTid) {
  auto result = compact_text(trace_json({
      kernel(1, 7, "0", "10"),
      kernel(0, 7, "0", "10"),
      kernel(0, 8, "5", "10"),
      slice_event("gpu_memcpy", "Memcpy HtoD", 0, 3, "0", "1"),
  }));
  ASSERT_EQ(result.lanes.size(), 4u);
  // Lanes 1008..1011; annotation tracks 2011.. in (pid, lane tid) order.
  for (size_t i = 0; i < result.lanes.size(); ++i) {
    EXPECT_EQ(result.lanes[i].tid, 1008 + int64_t(i));
    EXPECT_EQ(result.lanes[i].annotation_tid, 2011 + int64_t(i));
  }
  EXPECT_EQ(result.lanes[2].label, "GPU memcpy");
  EXPECT_EQ(result.lanes[3].pid, 1);
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
  auto result = compact_text(trace_json({kernel(0, 7, "1683564902133354.100", "0.200"),
                                         kernel(0, 8, "1683564902133354.300", "0.001")}));
  EXPECT_EQ(result.summary.compacted_lanes, 1u);
}
