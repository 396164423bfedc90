// What a trace must not be (SPEC 1, 2): errors name the file and the event.
#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

// The Error message from compacting `events` as test.json.
std::string compact_error(const std::vector<std::string>& events) {
  return error_message([&] { compact_text(trace_json(events)); });
}

std::string parse_error(const std::string& json) {
  return error_message([&] { parse_trace(json, "test.json"); });
}

::testing::AssertionResult names(const std::string& message, const std::vector<std::string>& parts) {
  for (const auto& part : parts)
    if (message.find(part) == std::string::npos)
      return ::testing::AssertionFailure() << "'" << message << "' lacks '" << part << "'";
  return ::testing::AssertionSuccess();
}

const std::string cpu_op = R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 1, "dur": 1})";

}  // namespace

TEST(CompactErrors, AKernelWithoutArgsStreamNamesTheFileAndEvent) {
  auto message = compact_error(
      {cpu_op, R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {}})"});
  EXPECT_TRUE(names(message, {"test.json", "event #1", "stream"}));
}

TEST(CompactErrors, AKernelWithoutArgsAtAllIsAnError) {
  auto message = compact_error({R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1})"});
  EXPECT_TRUE(names(message, {"test.json", "event #0"}));
}

TEST(CompactErrors, ATidThatDiffersFromArgsStreamIsAnError) {
  auto message = compact_error(
      {kernel(0, 7, "0", "1"), cpu_op,
       R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"stream": 8}})"});
  EXPECT_TRUE(names(message, {"test.json", "event #2"}));
}

TEST(CompactErrors, ANegativeDurationIsAnError) {
  auto message = compact_error({kernel(0, 7, "0", "1"), kernel(0, 7, "5", "-0.001")});
  EXPECT_TRUE(names(message, {"test.json", "event #1", "dur"}));
}

TEST(CompactErrors, AMemcpyWithoutTsIsAnError) {
  auto message = compact_error(
      {R"({"ph": "X", "cat": "gpu_memcpy", "name": "m", "pid": 0, "tid": 7, "dur": 1, "args": {"stream": 7}})"});
  EXPECT_TRUE(names(message, {"test.json", "event #0", "ts"}));
}

TEST(CompactErrors, AKernelWithoutTsIsAnError) {
  auto message = compact_error(
      {cpu_op, cpu_op, cpu_op,
       R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "dur": 1, "args": {"stream": 7}})"});
  EXPECT_TRUE(names(message, {"test.json", "event #3", "ts"}));
}

TEST(CompactErrors, AKernelWithoutDurIsAnError) {
  auto message = compact_error(
      {R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "args": {"stream": 7}})"});
  EXPECT_TRUE(names(message, {"test.json", "event #0", "dur"}));
}

TEST(CompactErrors, AKernelWithoutPidOrTidIsAnError) {
  EXPECT_TRUE(
      names(compact_error(
                {R"({"ph": "X", "cat": "kernel", "name": "k", "tid": 7, "ts": 1, "dur": 1, "args": {"stream": 7}})"}),
            {"test.json", "event #0"}));
  EXPECT_TRUE(names(
      compact_error(
          {R"({"ph": "X", "cat": "gpu_memset", "name": "k", "pid": 0, "ts": 1, "dur": 1, "args": {"stream": 7}})"}),
      {"test.json", "event #0"}));
}

TEST(ParseErrors, ATopLevelThatIsNeitherAnObjectNorAListIsAnError) {
  for (const char* json : {"42", "\"traceEvents\"", "null", "true"})
    EXPECT_TRUE(names(parse_error(json), {"test.json", "not a JSON object or array"})) << json;
  EXPECT_TRUE(names(parse_error("[1, 2]"), {"test.json", "event #0 is not a JSON object"}));
}

TEST(ParseErrors, TraceEventsThatIsNotAListIsAnError) {
  EXPECT_TRUE(names(parse_error(R"({"traceEvents": {"ph": "X"}})"), {"test.json", "traceEvents"}));
}

TEST(ParseErrors, AMissingTraceEventsIsAnError) {
  EXPECT_TRUE(names(parse_error(R"({"schemaVersion": 1})"), {"test.json", "traceEvents"}));
}

TEST(ParseErrors, InvalidJsonIsAnError) {
  EXPECT_TRUE(names(parse_error(R"({"traceEvents": [{"ph": "X", "pid": }]})"), {"test.json"}));
  EXPECT_TRUE(names(parse_error(R"({"traceEvents": [{"ph": "X"})"), {"test.json"}));
  EXPECT_TRUE(names(parse_error(""), {"test.json"}));
}

TEST(ParseErrors, TrailingGarbageAfterTheDocumentIsAnError) {
  EXPECT_TRUE(names(parse_error(trace_json({kernel(0, 7, "0", "1")}) + " xyz"), {"test.json"}));
}

TEST(ParseErrors, AnEventThatIsNotAnObjectIsAnError) {
  EXPECT_TRUE(names(parse_error(R"({"traceEvents": [{"ph": "i"}, 5]})"), {"test.json", "event #1"}));
}

TEST(ParseErrors, AValidTraceParses) {
  Trace trace = parse_trace(trace_json({kernel(0, 7, "1.5", "2"), cpu_op}), "test.json");
  ASSERT_EQ(trace.events.size(), 2u);
  EXPECT_EQ(trace.source, "test.json");
  EXPECT_EQ(trace.max_int_tid, 7);
  EXPECT_EQ(trace.events[0].ts.ns, 1500);
  EXPECT_EQ(trace.events[0].dur.ns, 2000);
  EXPECT_EQ(trace.events[0].stream().value, 7);
  EXPECT_EQ(trace.events[1].cat, "cpu_op");
}
