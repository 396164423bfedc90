// Byte-faithful output (SPEC 9.1, 1): unchanged events are written as read; changed ones
// keep the text of every number they keep.
#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

TEST(ByteFaithfulness, AnUnchangedEventIsWrittenWithItsOriginalBytes) {
  const std::string odd =
      R"({"ph":"X",   "cat" : "cpu_op","name":"aten::mm","pid":0,"tid":300,"ts":1.500,"dur":2.0e0,"args":{"x": 1.10, "y":[1 ,2]}})";
  auto out = compact_output(trace_json({odd, kernel(0, 7, "10", "5")}));
  EXPECT_TRUE(out.contains(odd)) << out.text;
}

TEST(ByteFaithfulness, UnicodeAndEscapesInUnchangedEventsSurvive) {
  const std::string escaped =
      R"({"ph": "i", "cat": "user", "name": "caf\u00e9 \"q\" é", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 3, "s": "g"})";
  auto out = compact_output(trace_json({escaped, kernel(0, 7, "10", "5")}));
  EXPECT_TRUE(out.contains(escaped)) << out.text;
}

TEST(ByteFaithfulness, AMovedSliceKeepsItsTextButForTid) {
  const std::string before =
      R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10.500, "dur": 1.000, "args": {"stream": 7, "grid": [1, 2, 3], "x": 1.50}})";
  const std::string after =
      R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 1000000000, "ts": 10.500, "dur": 1.000, "args": {"stream": 7, "grid": [1, 2, 3], "x": 1.50}})";
  auto out = compact_output(trace_json({before}));
  EXPECT_TRUE(out.contains(after)) << out.text;
  EXPECT_FALSE(out.contains(before));
}

TEST(ByteFaithfulness, AMovedSliceWithStreamBeforeTidKeepsTheStreamAndIsPatchedInPlace) {
  const std::string before =
      R"({"args":{"stream":7,"correlation":12},"dur":2.25,"ts":3.125,"tid":7,"pid":0,"name":"k","cat":"kernel","ph":"X"})";
  const std::string after =
      R"({"args":{"stream":7,"correlation":12},"dur":2.25,"ts":3.125,"tid":1000000000,"pid":0,"name":"k","cat":"kernel","ph":"X"})";
  auto out = compact_output(trace_json({before}));
  EXPECT_TRUE(out.contains(after)) << out.text;
}

TEST(ByteFaithfulness, OtherTopLevelKeysAreCarriedUnchanged) {
  const std::string device =
      R"("deviceProperties": [ {"id": 0, "name": "NVIDIA H100",  "totalGlobalMem": 85000000000} ])";
  const std::string base = R"("baseTimeNanoseconds": 1683564902133354123)";
  auto out = compact_output(trace_json({kernel(0, 7, "10", "5")}, device + ", " + base));
  EXPECT_TRUE(out.contains(device)) << out.text;
  EXPECT_TRUE(out.contains(base)) << out.text;
  EXPECT_TRUE(out.contains(R"("schemaVersion": 1)"));
}

TEST(ByteFaithfulness, EveryEventOfTheInputIsInTheOutputInOrder) {
  std::vector<std::string> cpu;
  for (int i = 0; i < 20; ++i)
    cpu.push_back(R"({"ph": "X", "cat": "cpu_op", "name": "op)" + std::to_string(i) +
                  R"(", "pid": 1, "tid": 2, "ts": )" + std::to_string(i) + R"(.)" + std::to_string(100 + i) +
                  R"(, "dur": 0.5})");
  std::vector<std::string> events = cpu;
  events.push_back(kernel(0, 7, "10", "5"));
  auto out = compact_output(trace_json(events));
  size_t last = 0;
  for (const auto& e : cpu) {
    size_t at = out.text.find(e);
    ASSERT_NE(at, std::string::npos) << e;
    EXPECT_GE(at, last);
    last = at;
  }
}

TEST(ByteFaithfulness, SummaryCountsLaunchesAndRetainedAnnotations) {
  auto result = compact_text(trace_json({
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 2, "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 2, "ts": 3, "dur": 1})",
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch_v2", "pid": 1, "tid": 2, "ts": 5, "dur": 1})",
      kernel(0, 7, "10", "5"),
      annotation(0, 7, "10", "1", "step"),
  }));
  EXPECT_EQ(result.summary.cuda_graph_launches, 2u);
  EXPECT_EQ(result.summary.gpu_annotations_retained, 1u);
  EXPECT_EQ(result.summary.measured_slices, 1u);
}
