// SPEC 9.15: what torch writes besides CUDA traces in Kineto's JSON object. A trace in the
// JSON Array Format is read as the list of its events; a trace without GPU slices (a
// CPU-only run) becomes a copy with nothing to repack. Both restore byte for byte.
#include "test_support.hpp"
#include "tracelane/restore.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

const std::string kCpuOp = R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9, "tid": 9, "ts": 5, "dur": 2})";

// The events of trace_json(events) as a JSON Array Format document.
std::string array_json(const std::vector<std::string>& events) {
  std::string out = "[\n";
  for (size_t i = 0; i < events.size(); ++i) out += (i ? ",\n" : "") + events[i];
  return out + "\n]\n";
}

}  // namespace

TEST(ArrayFormat, IsReadAsTheListOfEvents) {
  std::vector<std::string> events = {kernel(0, 7, "0", "10"), kCpuOp, kernel(0, 8, "5", "10")};
  Trace array = parse_trace(array_json(events), "a.json");
  Trace object = parse_trace(trace_json(events), "o.json");
  EXPECT_TRUE(array.array_format);
  EXPECT_FALSE(object.array_format);
  EXPECT_TRUE(array.top.empty());
  ASSERT_EQ(array.events.size(), object.events.size());
  for (size_t i = 0; i < array.events.size(); ++i) EXPECT_EQ(array.events[i].raw, object.events[i].raw);
}

TEST(ArrayFormat, CompactsAsTheObjectFormAndRestoresTheList) {
  std::vector<std::string> events = {kernel(0, 7, "0", "10"), kCpuOp, kernel(0, 8, "5", "10")};
  std::string original = array_json(events);
  CompactedTrace array = compact_text(original);
  CompactedTrace object = compact_text(trace_json(events));
  EXPECT_EQ(array.summary.compacted_lanes, object.summary.compacted_lanes);
  std::string out = write_compacted(array);
  Output parsed(out);
  EXPECT_EQ(parsed.events.size(), Output(write_compacted(object)).events.size());
  EXPECT_EQ(restore_original(out, "out.json", 0), original);
}

TEST(NothingToRepack, ACpuOnlyTraceIsItsCopyMarkedAndRestores) {
  std::string original = trace_json({kCpuOp, annotation(9, 9, "5", "1", "user"), flow("s", "ac2g", "1", 9, 9, "5")},
                                    R"("baseTimeNanoseconds": 1000)");
  CompactedTrace result = compact_text(original);
  EXPECT_TRUE(result.already_laned.empty());
  EXPECT_TRUE(result.summary.nothing_to_repack);
  EXPECT_EQ(result.summary.measured_slices, 0u);
  EXPECT_EQ(result.summary.compacted_lanes, 0u);
  EXPECT_TRUE(result.lanes.empty());
  for (const Event& event : result.trace.events) {
    EXPECT_EQ(event.changed, 0) << "nothing is rewritten";
    EXPECT_FALSE(event.dropped);
  }
  std::string out = write_compacted(result);
  EXPECT_NE(out.find("\"cuda_graph_stream_compaction\""), std::string::npos);
  EXPECT_EQ(Output(out).events.size(), 3u) << "no lane metadata, no arrows";
  EXPECT_EQ(restore_original(out, "out.json", 0), original);
  // It is tracelane's own output from then on.
  EXPECT_FALSE(compact_text(out).already_laned.empty());
}

TEST(NothingToRepack, AnEmptyListToo) {
  for (std::string original : {std::string("[]"), trace_json({})}) {
    CompactedTrace result = compact_text(original);
    EXPECT_TRUE(result.summary.nothing_to_repack) << original;
    EXPECT_EQ(restore_original(write_compacted(result), "out.json", 0), original);
  }
}

TEST(NothingToRepack, TheSummarySaysSoOnlyThen) {
  JsonValue nothing = compaction_summary(compact_text(trace_json({kCpuOp})).summary, true);
  EXPECT_NE(nothing.dump(-1).find("\"nothing_to_repack\": true"), std::string::npos) << nothing.dump(-1);
  JsonValue something = compaction_summary(compact_text(trace_json({kernel(0, 7, "0", "1")})).summary, true);
  EXPECT_EQ(something.dump(-1).find("nothing_to_repack"), std::string::npos);
}
