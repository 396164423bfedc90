// `tracelane check`'s library function on small literal trace pairs: one compaction that
// means the same as its original, and one change of each kind the verifier must catch.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check/check.hpp"

using namespace tracelane::check;

namespace {

std::string trace(const std::vector<std::string>& events, const std::string& extra_top = "") {
  std::string s = "{\"traceEvents\":[";
  for (size_t i = 0; i < events.size(); ++i) s += (i ? ",\n" : "\n") + events[i];
  return s + "]" + extra_top + ",\"schemaVersion\":1}";
}

// Two overlapping kernels on streams 7 and 8 of GPU 0 (ts beyond a double's nanosecond
// precision), an annotation and an ac2g flow on stream 7, and CPU-side events.
const std::string kCpuOp =
    R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":10,"tid":10,"ts":100.5,"dur":20,"args":{"External id":1}})";
const std::string kProcessName = R"({"ph":"M","name":"process_name","pid":0,"args":{"name":"GPU 0"}})";

std::vector<std::string> original_events() {
  return {
      kCpuOp,
      R"({"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":1683564902133354.123,"dur":5.5,"args":{"stream":7,"correlation":1}})",
      R"({"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":8,"ts":1683564902133356,"dur":5,"args":{"stream":8,"correlation":2}})",
      R"({"ph":"X","cat":"gpu_user_annotation","name":"step","pid":0,"tid":7,"ts":1683564902133354.123,"dur":5.5,"args":{}})",
      R"({"ph":"f","cat":"ac2g","name":"ac2g","id":1,"bp":"e","pid":0,"tid":7,"ts":1683564902133354.123})",
      R"({"ph":"s","cat":"ac2g","name":"ac2g","id":1,"pid":10,"tid":10,"ts":101})",
      R"({"ph":"M","name":"thread_name","pid":0,"tid":7,"args":{"name":"stream 7"}})",
      kProcessName,
  };
}

// The same meaning, compacted: k1 on lane 1008, k2 on lane 1009, the annotation on the
// annotation track 2008, the flow moved with k1, lane labels; keys reordered and numbers
// respelled (5.50, 1.0e2) where nothing changed.
std::vector<std::string> compacted_events() {
  return {
      R"({"name":"aten::mm","ph":"X","cat":"cpu_op","pid":10,"tid":10,"ts":100.50,"dur":2.0e1,"args":{"External id":1}})",
      R"({"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":1008,"ts":1683564902133354.123,"dur":5.50,"args":{"correlation":1,"stream":1008}})",
      R"({"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":1009,"ts":1683564902133356.000,"dur":5,"args":{"stream":1009,"correlation":2}})",
      R"({"ph":"X","cat":"gpu_user_annotation","name":"step","pid":0,"tid":2008,"ts":1683564902133354.123,"dur":5.5,"args":{}})",
      R"({"ph":"f","cat":"ac2g","name":"ac2g","id":1,"bp":"e","pid":0,"tid":1008,"ts":1683564902133354.123})",
      R"({"ph":"s","cat":"ac2g","name":"ac2g","id":1,"pid":10,"tid":10,"ts":101})",
      R"({"ph":"M","name":"thread_name","pid":0,"tid":1008,"args":{"name":"Compute 1"}})",
      R"({"ph":"M","name":"thread_name","pid":0,"tid":1009,"args":{"name":"Compute 2"}})",
      kProcessName,
  };
}

const std::string kStamp = R"(,"cuda_graph_stream_compaction":{"source":"test"})";

CheckReport check_pair(const std::vector<std::string>& compacted) {
  return check_traces(trace(original_events()), trace(compacted, kStamp));
}

std::string annotation(int tid, const std::string& ts, const std::string& dur) {
  return R"({"ph":"X","cat":"gpu_user_annotation","name":"a","pid":0,"tid":)" + std::to_string(tid) + R"(,"ts":)" + ts +
         R"(,"dur":)" + dur + R"(,"args":{}})";
}

}  // namespace

TEST(Check, ACompactionWithTheSameMeaningPasses) {
  CheckReport report = check_pair(compacted_events());
  EXPECT_TRUE(report.ok()) << format_report(report);
  EXPECT_EQ(report.measured_slices, 2u);
  EXPECT_EQ(report.lane_tracks, 2u);
  EXPECT_EQ(report.annotation_tracks, 1u);
  EXPECT_EQ(report.flows_checked, 1u);
  EXPECT_EQ(report.other_events_checked, 3u);  // cpu_op, the CPU flow start, process_name
  EXPECT_EQ(report.top_level_keys_checked, 1u);
  EXPECT_EQ(format_report(report).substr(format_report(report).rfind("check:")), "check: OK\n");
}

TEST(Check, AnOriginalInTheJsonArrayFormatIsReadAsItsListOfEvents) {
  // SPEC 9.15: the original is a list; its compaction is an object.
  std::string original = "[";
  for (const std::string& event : original_events()) original += (original.size() > 1 ? ",\n" : "\n") + event;
  original += "]";
  CheckReport report = check_traces(original, trace(compacted_events(), kStamp));
  EXPECT_EQ(report.measured_slices, 2u);
  EXPECT_EQ(report.other_events_checked, 3u);
  // The original has no schemaVersion: the compaction's is a key the original lacks.
  EXPECT_EQ(report.top_level_keys_checked, 0u);
  CheckReport changed = check_traces(original, trace({compacted_events()[0]}, kStamp));
  EXPECT_FALSE(changed.ok());
}

TEST(Check, ATopLevelThatIsNeitherAnObjectNorAListIsNotATrace) {
  EXPECT_THROW(check_traces("42", trace(compacted_events(), kStamp)), std::exception);
}

TEST(Check, AChangedSliceDurFails) {
  auto events = compacted_events();
  events[1] =
      R"({"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":1008,"ts":1683564902133354.123,"dur":5.501,"args":{"correlation":1,"stream":1008}})";
  CheckReport report = check_pair(events);
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.count(ViolationKind::missing_slice), 1u);
  EXPECT_EQ(report.count(ViolationKind::extra_slice), 1u);
  ASSERT_FALSE(report.violations.empty());
  EXPECT_EQ(report.violations[0].index, 1);
  EXPECT_FALSE(report.violations[0].in_compacted);
  EXPECT_NE(report.violations[0].message.find("dur (5.5 -> 5.501)"), std::string::npos) << report.violations[0].message;
  EXPECT_NE(format_report(report).find("check: 2 violation(s)\n"), std::string::npos);
}

TEST(Check, ATimestampChangeOfOneNanosecondFailsEvenWhereDoublesCannotTell) {
  // 1683564902133354.123 and .124 are the same double.
  auto events = compacted_events();
  events[1] =
      R"({"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":1008,"ts":1683564902133354.124,"dur":5.5,"args":{"correlation":1,"stream":1008}})";
  CheckReport report = check_pair(events);
  EXPECT_EQ(report.count(ViolationKind::missing_slice), 1u);
  EXPECT_EQ(report.count(ViolationKind::extra_slice), 1u);
}

TEST(Check, ADroppedSliceFails) {
  auto events = compacted_events();
  events.erase(events.begin() + 2);
  CheckReport report = check_pair(events);
  EXPECT_EQ(report.count(ViolationKind::missing_slice), 1u);
  EXPECT_EQ(report.count(ViolationKind::extra_slice), 0u);
  EXPECT_EQ(report.violation_count(), 1u);
  EXPECT_EQ(report.violations[0].index, 2);
}

TEST(Check, AChangedArgOtherThanStreamFails) {
  auto events = compacted_events();
  events[2] =
      R"({"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":1009,"ts":1683564902133356,"dur":5,"args":{"stream":1009,"correlation":3}})";
  EXPECT_EQ(check_pair(events).count(ViolationKind::missing_slice), 1u);
}

TEST(Check, OverlappingSlicesOnOneLaneFail) {
  auto events = compacted_events();
  events[2] =
      R"({"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":1008,"ts":1683564902133356,"dur":5,"args":{"stream":1008,"correlation":2}})";
  CheckReport report = check_pair(events);
  EXPECT_EQ(report.count(ViolationKind::lane_overlap), 1u);
  EXPECT_EQ(report.violation_count(), 1u) << format_report(report);
}

TEST(Check, APartialOverlapOnAnAnnotationTrackFails) {
  auto events = compacted_events();
  events.push_back(annotation(2008, "1683564902133356", "10"));  // crosses "step" (ends at .623)
  CheckReport report = check_pair(events);
  EXPECT_EQ(report.count(ViolationKind::annotation_partial_overlap), 1u);
  EXPECT_EQ(report.violation_count(), 1u) << format_report(report);
  EXPECT_EQ(report.violations[0].index, int64_t(events.size() - 1));
  EXPECT_TRUE(report.violations[0].in_compacted);
}

TEST(Check, NestedAndTouchingAnnotationsPass) {
  auto events = compacted_events();
  events.push_back(annotation(2008, "1683564902133355", "1"));        // inside "step"
  events.push_back(annotation(2008, "1683564902133354.123", "5.5"));  // equal to "step"
  events.push_back(annotation(2008, "1683564902133359.623", "3"));    // touches its end
  events.push_back(annotation(2008, "1683564902133359.623", "0"));    // zero length at its end
  CheckReport report = check_pair(events);
  EXPECT_TRUE(report.ok()) << format_report(report);
}

TEST(Check, AnAnnotationEndingOneNanosecondPastItsNeighboursStartFails) {
  auto events = compacted_events();
  events.push_back(annotation(2008, "1683564902133359.622", "3"));
  EXPECT_EQ(check_pair(events).count(ViolationKind::annotation_partial_overlap), 1u);
}

TEST(Check, ANewUnboundFlowFails) {
  auto events = compacted_events();
  // Moved to k2's lane, but k2 starts later than the flow.
  events[4] = R"({"ph":"f","cat":"ac2g","name":"ac2g","id":1,"bp":"e","pid":0,"tid":1009,"ts":1683564902133354.123})";
  CheckReport report = check_pair(events);
  EXPECT_EQ(report.count(ViolationKind::unbound_flow), 1u);
  EXPECT_EQ(report.violation_count(), 1u) << format_report(report);
  EXPECT_EQ(report.violations[0].index, 4);
}

TEST(Check, AFlowUnboundAlreadyInTheOriginalIsOnlyAWarning) {
  auto original = original_events();
  original.push_back(R"({"ph":"t","cat":"async","name":"x","id":9,"pid":0,"tid":7,"ts":5})");
  auto compacted = compacted_events();
  compacted.push_back(R"({"ph":"t","cat":"async","name":"x","id":9,"pid":0,"tid":7,"ts":5})");
  CheckReport report = check_traces(trace(original), trace(compacted, kStamp));
  EXPECT_TRUE(report.ok()) << format_report(report);
  EXPECT_EQ(report.flows_unbound_preexisting, 1u);
}

TEST(Check, ALostFlowFails) {
  auto events = compacted_events();
  events.erase(events.begin() + 4);
  EXPECT_EQ(check_pair(events).count(ViolationKind::missing_flow), 1u);
}

TEST(Check, AChangedCpuEventFails) {
  auto events = compacted_events();
  events[0] =
      R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":10,"tid":10,"ts":100.5,"dur":20,"args":{"External id":2}})";
  CheckReport report = check_pair(events);
  EXPECT_EQ(report.count(ViolationKind::missing_event), 1u);
  EXPECT_EQ(report.violation_count(), 1u) << format_report(report);
  EXPECT_EQ(report.violations[0].index, 0);
  EXPECT_EQ(report.other_events_added, 1u);
}

TEST(Check, ADroppedTopLevelKeyFails) {
  std::string compacted = "{\"traceEvents\":[";
  auto events = compacted_events();
  for (size_t i = 0; i < events.size(); ++i) compacted += (i ? "," : "") + events[i];
  compacted += "]}";
  CheckReport report = check_traces(trace(original_events()), compacted);
  EXPECT_EQ(report.count(ViolationKind::changed_top_level), 1u);
}

TEST(Check, InputThatIsNotATraceNamesTheFile) {
  try {
    check_traces(trace(original_events()), "{\"traceEvents\":[");
    FAIL() << "expected CheckInputError";
  } catch (const CheckInputError& e) {
    EXPECT_TRUE(e.in_compacted);
  }
  try {
    check_traces("{\"traceEvents\":{}}", trace(compacted_events()));
    FAIL() << "expected CheckInputError";
  } catch (const CheckInputError& e) {
    EXPECT_FALSE(e.in_compacted);
    EXPECT_NE(std::string(e.what()).find("traceEvents"), std::string::npos);
  }
}

// JSON allows integers beyond 64 bits and numbers beyond a double's range, simdjson's DOM
// refuses them, and compact keeps them as written (here in top-level keys, a CPU event and a
// kernel's args): check reads them from their text like every other number.
TEST(Check, NumbersBeyondA64BitIntegerOrADoubleAreReadFromTheirText) {
  auto with_big_numbers = [](std::vector<std::string> events, const std::string& big) {
    events[0] =
        R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":10,"tid":10,"ts":100.5,"dur":20,"args":{"External id":)" +
        big + R"(,"x":-1e400}})";
    events[2].replace(events[2].find(R"("correlation":2)"), 15, R"("correlation":18446744073709551616)");
    return events;
  };
  const std::string big = "123456789012345678901234567890";
  const std::string top = R"(,"bigKey":-9223372036854775809,"huge":1e400)";
  std::string original = trace(with_big_numbers(original_events(), big), top);
  CheckReport report = check_traces(original, trace(with_big_numbers(compacted_events(), big), top + kStamp));
  EXPECT_TRUE(report.ok()) << format_report(report);
  EXPECT_EQ(report.top_level_keys_checked, 3u);
  EXPECT_EQ(report.measured_slices, 2u);
  // Compared as numbers, not as their stand-ins: a change in the last digit is found.
  std::string changed = big.substr(0, big.size() - 1) + "1";
  report = check_traces(original, trace(with_big_numbers(compacted_events(), changed), top + kStamp));
  EXPECT_EQ(report.count(ViolationKind::missing_event), 1u) << format_report(report);
  // A number JSON does not allow is still refused beside them.
  EXPECT_THROW(check_traces(original, trace(compacted_events(), top + R"(,"bad":01)" + kStamp)), CheckInputError);
}

// A lone UTF-16 surrogate escape is JSON; simdjson's DOM will not decode it, and compact
// keeps it as written (here in a top-level value, a kernel's name, a CPU event's name and an
// args key): check reads it, compares it as what it is, and tells it from U+FFFD.
TEST(Check, LoneSurrogateEscapesAreReadAndComparedAsWritten) {
  auto with_surrogates = [](std::vector<std::string> events, const std::string& lone) {
    events[0] = R"({"ph":"X","cat":"cpu_op","name":"aten::mm)" + lone +
                R"(","pid":10,"tid":10,"ts":100.5,"dur":20,"args":{"External id":1,"k\udc00":"\ud83d\ude00"}})";
    events[1].replace(events[1].find(R"("k1")"), 4, R"("k1\udbff")");
    return events;
  };
  const std::string top = R"(,"note":["x\ud800y"])";
  std::string original = trace(with_surrogates(original_events(), R"(\ud800)"), top);
  CheckReport report = check_traces(original, trace(with_surrogates(compacted_events(), R"(\uD800)"), top + kStamp));
  EXPECT_TRUE(report.ok()) << format_report(report);
  EXPECT_EQ(report.measured_slices, 2u);
  // The same text spelled another way is the same string; U+FFFD in its place is not.
  auto respelled = with_surrogates(compacted_events(), R"(\ud800)");
  respelled[0].replace(respelled[0].find(R"("\ud83d\ude00")"), 14, "\"\xf0\x9f\x98\x80\"");
  EXPECT_TRUE(check_traces(original, trace(respelled, top + kStamp)).ok());
  report = check_traces(original, trace(with_surrogates(compacted_events(), R"(\ufffd)"), top + kStamp));
  EXPECT_EQ(report.count(ViolationKind::missing_event), 1u) << format_report(report);
  // An escape JSON does not allow is still refused beside them.
  EXPECT_THROW(check_traces(original, trace(compacted_events(), top + R"(,"bad":"\x")" + kStamp)), CheckInputError);
}

// Perfetto reads ts and dur as whole nanoseconds, each rounded (llround(us * 1000)), and
// ends an X event at their sum; compact places slices the same way (SPEC 9.1). check judges
// lanes so too: slices that overlap by a fraction of a nanosecond in their decimals touch,
// and slices that touch in their decimals but overlap once rounded overlap.
TEST(Check, LanesAreJudgedInNanosecondsRoundedAsPerfettoReadsThem) {
  auto kernel = [](const std::string& name, int tid, const std::string& ts, const std::string& dur) {
    return R"({"ph":"X","cat":"kernel","name":")" + name + R"(","pid":0,"tid":)" + std::to_string(tid) + R"(,"ts":)" +
           ts + R"(,"dur":)" + dur + R"(,"args":{"stream":)" + std::to_string(tid) + "}}";
  };
  // a ends at 1000.0000004 us, 0.4 ps after b starts: both read as 1000000 ns.
  CheckReport report = check_traces(trace({kernel("a", 7, "999", "1.0000004"), kernel("b", 8, "1000", "1")}),
                                    trace({kernel("a", 1008, "999", "1.0000004"), kernel("b", 1008, "1000", "1")}));
  EXPECT_TRUE(report.ok()) << format_report(report);
  EXPECT_EQ(report.inexact_times, 2u);
  // c spans [2000.0006, 2000.0012] us, touching d's start, but reads as [2000001, 2000002] ns
  // and d as starting at 2000001 ns: on one lane Perfetto would see them overlap.
  report = check_traces(trace({kernel("c", 7, "2000.0006", "0.0006"), kernel("d", 8, "2000.0012", "1")}),
                        trace({kernel("c", 1008, "2000.0006", "0.0006"), kernel("d", 1008, "2000.0012", "1")}));
  EXPECT_EQ(report.count(ViolationKind::lane_overlap), 1u) << format_report(report);
  EXPECT_EQ(report.violation_count(), 1u) << format_report(report);
  // A sub-nanosecond change of a slice's dur is still a changed slice.
  report = check_traces(trace({kernel("a", 7, "999", "1.0000004")}), trace({kernel("a", 1008, "999", "1.0000003")}));
  EXPECT_EQ(report.count(ViolationKind::missing_slice), 1u) << format_report(report);
}
