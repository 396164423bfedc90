// Events tied to old streams follow their slices (SPEC 5, 9.2, 9.3, 9.4).
#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

// Stream 7 holds two overlapping kernels, so they land on two lanes: "early" [0,20] on
// Compute 1 and "late" [5,30] on Compute 2.
const int64_t kCompute1 = lane_tid("compute", 0), kCompute2 = lane_tid("compute", 1);
std::vector<std::string> two_lane_stream() {
  return {kernel(0, 7, "0", "20", "early"), kernel(0, 7, "5", "25", "late")};
}

std::vector<std::string> with(std::vector<std::string> events, const std::vector<std::string>& more) {
  events.insert(events.end(), more.begin(), more.end());
  return events;
}

int64_t tid_of_named(const Output& out, std::string_view name) { return Output::int_of(out.one(name), "tid"); }

}  // namespace

// --- flows ---------------------------------------------------------------------------

TEST(RemapFlows, AFlowEndpointFollowsTheSliceStartingExactlyAtItsTs) {
  auto out = compact_output(trace_json(with(two_lane_stream(), {flow("f", "ac2g", "1", 0, 7, "5", "to_late")})));
  EXPECT_EQ(tid_of_named(out, "late"), kCompute2);
  auto f = out.one("to_late");
  EXPECT_EQ(Output::int_of(f, "tid"), kCompute2);
  EXPECT_EQ(Output::int_of(f, "pid"), 0);
  EXPECT_EQ(Output::number_of(f, "ts"), 5);
}

TEST(RemapFlows, AnExactStartWinsOverAContainingSlice) {
  // "early" contains ts 5 too, but "late" starts exactly there.
  auto result = compact_text(trace_json(with(two_lane_stream(), {flow("s", "ac2g", "1", 0, 7, "5", "x")})));
  EXPECT_EQ(result.summary.gpu_flow_endpoints_mapped, 1u);
  Output out(write_compacted(result));
  EXPECT_EQ(tid_of_named(out, "x"), kCompute2);
}

TEST(RemapFlows, WhenSeveralSlicesStartAtTsTheLatestInTraceEventsWins) {
  // Both start at 10 on stream 7. The first listed is shorter and gets lane 1; the flow
  // must follow the second listed one, on lane 2.
  auto out = compact_output(trace_json({
      kernel(0, 7, "10", "2", "first_listed"),
      kernel(0, 7, "10", "5", "second_listed"),
      flow("f", "ac2g", "1", 0, 7, "10", "arrow"),
  }));
  EXPECT_EQ(tid_of_named(out, "first_listed"), kCompute1);
  EXPECT_EQ(tid_of_named(out, "second_listed"), kCompute2);
  EXPECT_EQ(tid_of_named(out, "arrow"), kCompute2);
}

TEST(RemapFlows, LatestInTraceEventsWinsEvenWhenItIsTheShorterSlice) {
  auto out = compact_output(trace_json({
      kernel(0, 7, "10", "5", "first_listed"),
      kernel(0, 7, "10", "2", "second_listed"),
      flow("f", "ac2g", "1", 0, 7, "10", "arrow"),
  }));
  EXPECT_EQ(tid_of_named(out, "second_listed"), kCompute1);
  EXPECT_EQ(tid_of_named(out, "first_listed"), kCompute2);
  EXPECT_EQ(tid_of_named(out, "arrow"), kCompute1);
}

TEST(RemapFlows, WithoutAnExactStartAFlowFollowsTheSliceContainingIt) {
  // ts 25 lies only inside "late" ([5,30]); "early" ended at 20.
  auto out = compact_output(trace_json(with(two_lane_stream(), {flow("t", "async", "1", 0, 7, "25", "inside")})));
  EXPECT_EQ(tid_of_named(out, "inside"), kCompute2);
}

TEST(RemapFlows, AFlowAtASliceEndCountsAsContained) {
  auto out = compact_output(trace_json(with(two_lane_stream(), {flow("f", "async", "1", 0, 7, "30", "at_end")})));
  EXPECT_EQ(tid_of_named(out, "at_end"), kCompute2);
}

TEST(RemapFlows, EveryFlowCategoryMoves) {
  std::vector<std::string> events = two_lane_stream();
  const std::vector<std::string> cats = {"ac2g", "async", "async_cpu_to_gpu", "async_gpu", "critical_path"};
  for (const auto& cat : cats) {
    for (const char* ph : {"s", "t", "f"}) events.push_back(flow(ph, cat, "3", 0, 7, "5", cat + "_" + ph));
  }
  auto result = compact_text(trace_json(events));
  EXPECT_EQ(result.summary.gpu_flow_endpoints_mapped, cats.size() * 3);
  EXPECT_EQ(result.summary.gpu_flow_endpoints_unmapped, 0u);
  Output out(write_compacted(result));
  for (const auto& cat : cats)
    for (const char* ph : {"s", "t", "f"}) EXPECT_EQ(tid_of_named(out, cat + "_" + ph), kCompute2) << cat << " " << ph;
}

TEST(RemapFlows, AnUnmappableEndpointStaysWhereItWasAndIsCounted) {
  const std::string lost = flow("f", "ac2g", "9", 0, 7, "100", "lost");
  auto result = compact_text(trace_json(with(two_lane_stream(), {lost, flow("s", "ac2g", "8", 0, 7, "0", "found")})));
  EXPECT_EQ(result.summary.gpu_flow_endpoints_mapped, 1u);
  EXPECT_EQ(result.summary.gpu_flow_endpoints_unmapped, 1u);
  Output out(write_compacted(result));
  EXPECT_EQ(tid_of_named(out, "lost"), 7);
  EXPECT_TRUE(out.contains(lost)) << "an unmoved flow keeps its bytes";
  EXPECT_EQ(tid_of_named(out, "found"), kCompute1);
}

TEST(RemapFlows, AFlowBeforeEverySliceIsUnmapped) {
  auto result = compact_text(trace_json({kernel(0, 7, "10", "5"), flow("s", "ac2g", "1", 0, 7, "9.999", "early")}));
  EXPECT_EQ(result.summary.gpu_flow_endpoints_unmapped, 1u);
  EXPECT_EQ(result.summary.gpu_flow_endpoints_mapped, 0u);
}

TEST(RemapFlows, FlowsOffOldStreamsAreNeitherMovedNorCounted) {
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10"), flow("s", "ac2g", "1", 0, 300, "5", "cpu_side"),  // a CPU thread of the same pid
      flow("f", "ac2g", "1", 1, 7, "5", "other_pid"),                            // stream 7 of a pid without slices
  }));
  EXPECT_EQ(result.summary.gpu_flow_endpoints_mapped, 0u);
  EXPECT_EQ(result.summary.gpu_flow_endpoints_unmapped, 0u);
  Output out(write_compacted(result));
  EXPECT_EQ(tid_of_named(out, "cpu_side"), 300);
  EXPECT_EQ(tid_of_named(out, "other_pid"), 7);
}

// An old stream is its tid's text (SPEC 2): 7, 7.0 and "7" are three tids, and -0 is not
// 0. The passes find an integer tid's stream by its value, which only a nonzero integer's
// text spells one way; these are the spellings that must not meet.
TEST(RemapFlows, AFlowMeetsOnlyTheStreamItsTidTextNames) {
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10", "seven"),
      kernel(0, 0, "0", "10", "zero"),
      R"({"ph": "X", "cat": "kernel", "name": "minus_zero", "pid": 1, "tid": -0, "ts": 0, "dur": 10, "args": {"stream": 0}})",
      flow("f", "ac2g", "1", 0, 7, "5", "on_7"),
      R"({"ph": "f", "cat": "ac2g", "name": "on_7.0", "id": 2, "pid": 0, "tid": 7.0, "ts": 5, "bp": "e"})",
      R"({"ph": "f", "cat": "ac2g", "name": "on_string_7", "id": 3, "pid": 0, "tid": "7", "ts": 5, "bp": "e"})",
      flow("f", "ac2g", "4", 0, 0, "5", "on_0"),
      R"({"ph": "f", "cat": "ac2g", "name": "on_-0", "id": 5, "pid": 0, "tid": -0, "ts": 5, "bp": "e"})",
      flow("f", "ac2g", "6", 1, 0, "5", "pid1_on_0"),
      R"({"ph": "f", "cat": "ac2g", "name": "pid1_on_-0", "id": 7, "pid": 1, "tid": -0, "ts": 5, "bp": "e"})",
  }));
  EXPECT_EQ(result.summary.original_streams, 3u);
  EXPECT_EQ(result.summary.gpu_flow_endpoints_mapped, 3u);  // on_7, on_0, pid1_on_-0
  EXPECT_EQ(result.summary.gpu_flow_endpoints_unmapped, 0u);
  Output out(write_compacted(result));
  EXPECT_EQ(tid_of_named(out, "on_7"), tid_of_named(out, "seven"));
  EXPECT_EQ(tid_of_named(out, "on_0"), tid_of_named(out, "zero"));
  EXPECT_EQ(tid_of_named(out, "pid1_on_-0"), tid_of_named(out, "minus_zero"));
  EXPECT_EQ(Output::number_of(out.one("on_7.0"), "tid"), 7);  // stays: no stream "7.0"
  EXPECT_EQ(Output::string_of(out.one("on_string_7"), "tid"), "7");
  EXPECT_EQ(tid_of_named(out, "on_-0"), 0);      // stays: pid 0 has no stream "-0"
  EXPECT_EQ(tid_of_named(out, "pid1_on_0"), 0);  // stays: pid 1's stream is "-0"
}

TEST(RemapFlows, AMovedFlowKeepsItsIdAndTsText) {
  auto out = compact_output(trace_json({kernel(0, 7, "10.500", "5"), flow("f", "ac2g", "42", 0, 7, "10.500")}));
  auto flows = out.with_ph("f");
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(Output::int_of(flows[0], "id"), 42);
  EXPECT_TRUE(
      out.contains(R"("id": 42, "pid": 0, "tid": )" + std::to_string(kCompute1) + R"(, "ts": 10.500, "bp": "e")"))
      << out.text;
}

// --- annotations ---------------------------------------------------------------------

namespace {

// Stream 7 holds a compute kernel [0,10] and an all-gather kernel [100,110]: two lanes
// (Compute, NCCL all-gather), each with its annotation track.
const int64_t kComputeAnnotations = annotation_tid("compute"), kGatherAnnotations = annotation_tid("nccl_all_gather");
std::vector<std::string> compute_then_gather() {
  return {kernel(0, 7, "0", "10", "gemm"), kernel(0, 7, "100", "10", "ncclDevKernel_AllGather")};
}

}  // namespace

TEST(RemapAnnotations, AnAnnotationMovesToTheAnnotationTrackOfTheSliceContainingIt) {
  auto result = compact_text(trace_json(with(compute_then_gather(), {annotation(0, 7, "102", "3", "in_gather")})));
  ASSERT_EQ(result.lanes.size(), 2u);
  EXPECT_EQ(result.lanes[1].annotation_tid, kGatherAnnotations);
  EXPECT_EQ(result.summary.gpu_annotations_mapped, 1u);
  Output out(write_compacted(result));
  EXPECT_EQ(tid_of_named(out, "in_gather"), kGatherAnnotations);
  EXPECT_EQ(Output::number_of(out.one("in_gather"), "ts"), 102);
  EXPECT_EQ(Output::number_of(out.one("in_gather"), "dur"), 3);
}

TEST(RemapAnnotations, AnAnnotationInAGapMovesToTheNearestSlice) {
  auto out = compact_output(trace_json(with(compute_then_gather(), {
                                                                       annotation(0, 7, "30", "1", "near_compute"),
                                                                       annotation(0, 7, "80", "1", "near_gather"),
                                                                       annotation(0, 7, "200", "1", "after_all"),
                                                                       annotation(0, 7, "-5", "1", "before_all"),
                                                                   })));
  EXPECT_EQ(tid_of_named(out, "near_compute"), kComputeAnnotations);
  EXPECT_EQ(tid_of_named(out, "near_gather"), kGatherAnnotations);
  EXPECT_EQ(tid_of_named(out, "after_all"), kGatherAnnotations);
  EXPECT_EQ(tid_of_named(out, "before_all"), kComputeAnnotations);
}

TEST(RemapAnnotations, ATieGoesToTheEarlierCandidate) {
  // ts 55 is 45 from the compute slice's end and 45 from the all-gather's start.
  auto out = compact_output(trace_json(with(compute_then_gather(), {annotation(0, 7, "55", "1", "tie")})));
  EXPECT_EQ(tid_of_named(out, "tie"), kComputeAnnotations);
}

TEST(RemapAnnotations, OnlyTheNeighboursOfTheInsertionPointAreCandidates) {
  // A long all-reduce [0,1000] contains ts 55 but is at position 0; with p = 4 slices
  // starting before 55 the candidates are positions 3..5, so the compute slice at
  // [50,60] wins.
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "1000", "ncclDevKernel_AllReduce"),
      kernel(0, 7, "10", "10", "gemm"),
      kernel(0, 7, "30", "10", "gemm"),
      kernel(0, 7, "50", "10", "gemm"),
      annotation(0, 7, "55", "1", "probe"),
  }));
  ASSERT_EQ(result.lanes.size(), 2u);
  EXPECT_EQ(result.lanes[0].label, "Compute");
  Output out(write_compacted(result));
  EXPECT_EQ(tid_of_named(out, "probe"), result.lanes[0].annotation_tid);
}

TEST(RemapAnnotations, AnAnnotationAtASliceStartGoesToThatSlice) {
  // p counts slices starting strictly before ts: at ts 100 that is 1, and candidate
  // positions 0..2 give the all-gather distance 0.
  auto out = compact_output(trace_json(with(compute_then_gather(), {annotation(0, 7, "100", "1", "at_start")})));
  EXPECT_EQ(tid_of_named(out, "at_start"), kGatherAnnotations);
}

TEST(RemapAnnotations, AnnotationsOffOldStreamsStayAndAreNotCounted) {
  const std::string cpu = annotation(0, 300, "5", "1", "cpu_annotation");
  auto result = compact_text(trace_json(with(compute_then_gather(), {cpu})));
  EXPECT_EQ(result.summary.gpu_annotations_mapped, 0u);
  EXPECT_EQ(result.summary.gpu_annotations_retained, 1u);
  Output out(write_compacted(result));
  EXPECT_TRUE(out.contains(cpu));
}

// --- cuda_sync (SPEC 9.3) ------------------------------------------------------------

TEST(CudaSync, SyncSlicesOnAnOldStreamJoinTheGpuSyncGroup) {
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10"),
      slice_event("cuda_sync", "Stream Sync", 0, 7, "10", "5"),
      flow("f", "ac2g", "1", 0, 7, "10", "to_sync"),
  }));
  ASSERT_EQ(result.lanes.size(), 2u);
  EXPECT_EQ(result.lanes[1].label, "GPU sync");
  EXPECT_EQ(result.summary.slice_groups.at("sync"), 1u);
  EXPECT_EQ(result.summary.lanes_by_group.at("sync"), 1u);
  EXPECT_EQ(result.summary.gpu_flow_endpoints_mapped, 1u);
  EXPECT_EQ(result.summary.gpu_flow_endpoints_unmapped, 0u);
  Output out(write_compacted(result));
  EXPECT_EQ(tid_of_named(out, "Stream Sync"), result.lanes[1].tid);
  EXPECT_EQ(Output::int_of(out.one("Stream Sync")["args"], "stream"), 7);  // as recorded (SPEC 9.14)
  EXPECT_EQ(tid_of_named(out, "to_sync"), result.lanes[1].tid);
  EXPECT_EQ(out.label(0, result.lanes[1].tid), "GPU sync");
}

TEST(CudaSync, SyncEventsOffOldStreamsStayWhereTheyAre) {
  const std::string context_sync =
      R"({"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": -1, "ts": 12, "dur": 3, "args": {"stream": -1}})";
  const std::string other_stream = slice_event("cuda_sync", "Event Sync", 0, 9, "12", "1");
  auto result = compact_text(trace_json({kernel(0, 7, "0", "10"), context_sync, other_stream}));
  EXPECT_EQ(result.lanes.size(), 1u);
  EXPECT_EQ(result.summary.slice_groups.count("sync"), 0u);
  Output out(write_compacted(result));
  EXPECT_TRUE(out.contains(context_sync));
  EXPECT_TRUE(out.contains(other_stream));
}

TEST(CudaSync, ASyncSliceWhoseTidDiffersFromItsStreamIsNotAnError) {
  const std::string odd =
      R"({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7, "ts": 12, "dur": 3, "args": {"stream": 8}})";
  auto result = compact_text(trace_json({kernel(0, 7, "0", "10"), odd}));
  EXPECT_EQ(result.summary.slice_groups.count("sync"), 0u);
  EXPECT_TRUE(Output(write_compacted(result)).contains(odd));
}

TEST(CudaSync, SyncSlicesAreNotCountedAsMeasuredSlices) {
  auto result = compact_text(
      trace_json({kernel(0, 7, "0", "10"), slice_event("cuda_sync", "Stream Wait Event", 0, 7, "20", "1")}));
  EXPECT_EQ(result.summary.measured_slices, 1u);
  EXPECT_EQ(result.summary.original_streams, 1u);
  EXPECT_EQ(result.summary.compacted_lanes, 2u);
}

// --- legacy Kineto (SPEC 9.4) ----------------------------------------------------------

TEST(LegacyKineto, StreamNTidsAreOldStreamsAndTheirEventsFollow) {
  auto result = compact_text(trace_json({
      R"({"name": "thread_name", "ph": "M", "pid": 0, "tid": "stream 7", "args": {"name": "stream 7"}})",
      R"({"ph": "X", "cat": "Kernel", "name": "volta_sgemm", "pid": 0, "tid": "stream 7", "ts": 10, "dur": 5, "args": {"stream": 7}})",
      R"({"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": "stream 7", "ts": 20, "dur": 5, "args": {"stream": 7}})",
      R"({"ph": "X", "cat": "Memset", "name": "Memset", "pid": 0, "tid": "stream 7", "ts": 30, "dur": 5, "args": {"stream": 7}})",
      R"({"ph": "f", "cat": "async", "name": "launch", "id": 1, "pid": 0, "tid": "stream 7", "ts": 20, "bp": "e"})",
      R"({"ph": "X", "cat": "gpu_user_annotation", "name": "step", "pid": 0, "tid": "stream 7", "ts": 11, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 0, "tid": 40, "ts": 1, "dur": 1})",
  }));
  EXPECT_EQ(result.summary.measured_slices, 3u);
  EXPECT_EQ(result.summary.original_streams, 1u);
  ASSERT_EQ(result.lanes.size(), 3u);
  EXPECT_EQ(result.lanes[0].label, "Compute");
  EXPECT_EQ(result.lanes[1].label, "GPU memcpy");
  EXPECT_EQ(result.lanes[2].label, "GPU memset");
  EXPECT_EQ(result.lanes[0].tid, lane_tid("compute"));
  EXPECT_EQ(result.summary.gpu_flow_endpoints_mapped, 1u);
  EXPECT_EQ(result.summary.gpu_annotations_mapped, 1u);
  Output out(write_compacted(result));
  EXPECT_EQ(tid_of_named(out, "volta_sgemm"), lane_tid("compute"));
  EXPECT_EQ(Output::int_of(out.one("volta_sgemm")["args"], "stream"), 7);  // as recorded (SPEC 9.14)
  EXPECT_EQ(tid_of_named(out, "Memcpy HtoD"), lane_tid("memcpy"));
  EXPECT_EQ(tid_of_named(out, "launch"), lane_tid("memcpy"));
  EXPECT_EQ(tid_of_named(out, "step"), result.lanes[0].annotation_tid);
  // The old stream's thread_name is gone; the lanes have their own.
  for (auto e : out.named("thread_name")) EXPECT_NE(Output::string_of(e, "tid"), "stream 7");
  EXPECT_EQ(out.label(0, lane_tid("compute")), "Compute");
}

TEST(LegacyKineto, AStringTidThatIsNotItsStreamIsAnError) {
  auto message = error_message([] {
    compact_text(trace_json({
        R"({"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 8", "ts": 10, "dur": 5, "args": {"stream": 7}})",
    }));
  });
  EXPECT_NE(message.find("test.json"), std::string::npos) << message;
  EXPECT_NE(message.find("event #0"), std::string::npos) << message;
}
