// SPEC 9.8: traces PyTorch's exporter laned are made whole (its clean lanes kept, the
// overlapping ones repacked, the recorded streams put back); tracelane's own outputs are
// recognised and not compacted twice.
#include "test_support.hpp"
#include "tracelane/restore.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

// A kernel PyTorch's exporter moved from hardware stream `ran_on` to lane `lane`: tid and
// args.stream name the lane, args.original_stream the stream it ran on.
std::string moved(int lane, int ran_on, const std::string& ts, const std::string& dur, const std::string& name = "k") {
  return kernel(0, lane, ts, dur, name, "\"graph node id\": 7, \"original_stream\": " + std::to_string(ran_on));
}

const std::string kFlag = R"("cudaGraphInlineAnnotated": true)";

// Eager kernels on stream 7, unannotated graphed kernels piled onto lane 7 (overlapping
// them), and SendRecv kernels moved to a lane named after the PP process group (41).
std::string pile_up_trace() {
  return trace_json(
      {metadata("thread_name", 0, 7, R"({"name": "stream 7 "})"),
       metadata("thread_sort_index", 0, 7, R"({"sort_index": 7})"), kernel(0, 7, "100", "10", "eager"),
       moved(7, 20, "105", "10", "gemm"), moved(7, 21, "130", "5", "gemm"),
       moved(41, 22, "100", "20", "ncclDevKernel_SendRecv"), moved(41, 23, "150", "10", "ncclDevKernel_SendRecv"),
       annotation(0, 7, "100", "40", "PP:0F0"), metadata("thread_name", 0, 41, R"({"name": "mesh_pp"})"),
       metadata("thread_sort_index", 0, 41, R"({"sort_index": 41})")},
      kFlag);
}

std::vector<int64_t> tids_of(const Output& out, std::string_view name) {
  std::vector<int64_t> tids;
  for (auto e : out.named(name)) tids.push_back(Output::int_of(e, "tid"));
  return tids;
}

}  // namespace

TEST(PyTorchLaned, ACleanLaneIsKeptWithItsTidAndNameAndAPileUpIsRepacked) {
  CompactedTrace result = compact_text(pile_up_trace());
  EXPECT_TRUE(result.already_laned.empty());
  EXPECT_TRUE(result.summary.pytorch_laned);
  EXPECT_EQ(result.summary.pytorch_lanes_kept, std::vector<std::string>{"mesh_pp"});
  EXPECT_EQ(result.summary.pytorch_lanes_repacked, std::vector<std::string>{"stream 7"});
  EXPECT_EQ(result.summary.streams_put_back, 4u);
  Output out(write_compacted(result));
  // The SendRecv lane keeps tid 41 and PyTorch's name; nothing else is on it.
  EXPECT_EQ(tids_of(out, "ncclDevKernel_SendRecv"), (std::vector<int64_t>{41, 41}));
  EXPECT_EQ(out.label(0, 41), "mesh_pp");
  // Lane 7 overlapped: its slices are packed into compute lanes, none left on tid 7.
  std::vector<int64_t> compute = tids_of(out, "gemm");
  compute.push_back(tids_of(out, "eager")[0]);
  for (int64_t tid : compute) EXPECT_NE(tid, 7);
  EXPECT_EQ(tids_of(out, "eager")[0], lane_tid("compute"));
  EXPECT_EQ(tids_of(out, "gemm")[0], lane_tid("compute", 1)) << "105 overlaps the eager kernel at 100-110";
  EXPECT_EQ(out.label(0, 7), "");
}

TEST(PyTorchLaned, EveryMovedSliceGetsItsRecordedStreamBackAndKeepsOriginalStream) {
  Output out(write_compacted(compact_text(pile_up_trace())));
  std::map<std::pair<std::string, double>, int64_t> ran_on = {{{"gemm", 105}, 20},
                                                              {{"gemm", 130}, 21},
                                                              {{"ncclDevKernel_SendRecv", 100}, 22},
                                                              {{"ncclDevKernel_SendRecv", 150}, 23},
                                                              {{"eager", 100}, 7}};
  size_t seen = 0;
  for (auto e : out.with_ph("X", "kernel")) {
    auto key = std::make_pair(Output::string_of(e, "name"), Output::number_of(e, "ts"));
    ASSERT_TRUE(ran_on.count(key)) << key.first;
    EXPECT_EQ(Output::int_of(e["args"], "stream"), ran_on[key]) << key.first << " at " << key.second;
    if (key.first != "eager") {
      EXPECT_EQ(Output::int_of(e["args"], "original_stream"), ran_on[key]);
    }
    ++seen;
  }
  EXPECT_EQ(seen, ran_on.size());
}

TEST(PyTorchLaned, TheCopyRestoresByteForByte) {
  std::string original = pile_up_trace();
  std::string out = write_compacted(compact_text(original));
  EXPECT_EQ(restore_original(out, "out.json", 0), original);
}

TEST(PyTorchLaned, ATraceWithoutOverlapsKeepsEveryLaneAsItIs) {
  std::string trace =
      trace_json({metadata("thread_name", 0, 7, R"({"name": "stream 7 "})"), moved(7, 20, "100", "10", "gemm"),
                  moved(7, 21, "110", "5", "gemm"), moved(41, 22, "100", "20", "ncclDevKernel_SendRecv")},
                 kFlag);
  CompactedTrace result = compact_text(trace);
  EXPECT_EQ(result.summary.pytorch_lanes_kept, (std::vector<std::string>{"stream 7", "stream 41"}));
  EXPECT_TRUE(result.summary.pytorch_lanes_repacked.empty());
  Output out(write_compacted(result));
  EXPECT_EQ(tids_of(out, "gemm"), (std::vector<int64_t>{7, 7}));
  EXPECT_EQ(tids_of(out, "ncclDevKernel_SendRecv"), std::vector<int64_t>{41});
  EXPECT_EQ(out.label(0, 7), "stream 7 ") << "PyTorch's name, as written";
  EXPECT_EQ(out.label(0, 41), "stream 41") << "a lane without thread_name is named as the exporter names one";
}

TEST(PyTorchLaned, AnnotationsOnAKeptLaneGoToItsAnnotationTrack) {
  std::string trace =
      trace_json({moved(41, 22, "100", "20", "ncclDevKernel_SendRecv"), annotation(0, 41, "100", "20", "nccl:send"),
                  metadata("thread_name", 0, 41, R"({"name": "mesh_pp "})")},
                 kFlag);
  Output out(write_compacted(compact_text(trace)));
  int64_t track = Output::int_of(out.one("nccl:send"), "tid");
  EXPECT_NE(track, 41);
  EXPECT_EQ(out.label(0, track), "mesh_pp annotations");
}

TEST(PyTorchLaned, TheFlagAloneIsAnOrdinaryTraceSaidToBeLanedByPyTorch) {
  // graph_lanes="none": annotations baked in, nothing moved.
  CompactedTrace result = compact_text(trace_json({kernel(0, 7, "0", "10"), kernel(0, 8, "5", "10")}, kFlag));
  EXPECT_TRUE(result.already_laned.empty());
  EXPECT_TRUE(result.summary.pytorch_laned);
  EXPECT_TRUE(result.summary.pytorch_lanes_kept.empty());
  EXPECT_EQ(result.summary.compacted_lanes, 2u);
  EXPECT_EQ(result.summary.streams_put_back, 0u);
}

TEST(PyTorchLaned, AFalseFlagIsAnOrdinaryTrace) {
  auto result = compact_text(trace_json({kernel(0, 7, "0", "10")}, R"("cudaGraphInlineAnnotated": false)"));
  EXPECT_TRUE(result.already_laned.empty());
  EXPECT_FALSE(result.summary.pytorch_laned);
  EXPECT_EQ(result.summary.compacted_lanes, 1u);
}

TEST(PyTorchLaned, OriginalStreamWithoutTheFlagIsEnough) {
  auto result = compact_text(trace_json({kernel(0, 7, "0", "10"), moved(9, 44, "0", "10")}));
  EXPECT_TRUE(result.summary.pytorch_laned);
  EXPECT_EQ(result.summary.streams_put_back, 1u);
}

TEST(PyTorchLaned, AnOriginalStreamThatIsNotAnIntegerLeavesArgsStreamAsItIs) {
  std::string trace = trace_json({kernel(0, 9, "0", "10", "k", R"("original_stream": "44")")});
  auto result = compact_text(trace);
  EXPECT_EQ(result.summary.streams_put_back, 0u);
  Output out(write_compacted(result));
  EXPECT_EQ(Output::int_of(out.one("k")["args"], "stream"), 9);
  EXPECT_EQ(restore_original(write_compacted(compact_text(trace)), "out.json", 0), trace);
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

TEST(AlreadyLaned, TheOutputOfAPyTorchLanedTraceIsTracelanesOwn) {
  std::string once = write_compacted(compact_text(pile_up_trace()));
  EXPECT_EQ(compact_text(once).already_laned, "compacted by tracelane (top-level cuda_graph_stream_compaction)");
  CompactOptions options;
  options.force = true;
  auto forced = compact_text(once, options);
  EXPECT_FALSE(forced.summary.pytorch_laned) << "its lanes are tracelane's, its streams already put back";
  EXPECT_EQ(forced.summary.measured_slices, 5u);
}
