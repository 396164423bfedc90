// Reproducers of bugs found by tests/fuzz/fuzz_compact (and by the bad-input sweep of
// tests/e2e/test_bad_inputs.py), fed through the same path as the fuzzer: parse + compact +
// write, or two ranks + merge. Each must end in success with valid JSON out, or in a clean
// tracelane::Error whose message starts with the file.
#include "test_support.hpp"
#include "tracelane/gzip.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

enum class Outcome { ok, error };

// What fuzz_compact does with one document; fails the test on invalid output JSON.
Outcome run_compact(const std::string& bytes, std::string* message = nullptr) {
  try {
    std::string json = is_gzip(bytes) ? gunzip(bytes, "fuzz.json") : bytes;
    CompactedTrace compacted = compact_trace(parse_trace(json, "fuzz.json"), {});
    std::string out = write_compacted(compacted);
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    auto error = parser.parse(simdjson::padded_string(out)).get(root);
    EXPECT_FALSE(error) << "output is not valid JSON: " << simdjson::error_message(error) << "\n" << out.substr(0, 400);
    return Outcome::ok;
  } catch (const Error& e) {
    if (message) *message = e.what();
    EXPECT_EQ(std::string(e.what()).rfind("fuzz.json: ", 0), 0u) << e.what();
    return Outcome::error;
  }
}

Outcome run_merge(const std::string& a, const std::string& b, std::string* message = nullptr) {
  try {
    CompactOptions options;
    options.pp_flows = false;
    std::vector<MergeInput> inputs;
    inputs.push_back({"rank0_trace.json", compact_trace(parse_trace(a, "rank0_trace.json"), options)});
    inputs.push_back({"rank1_trace.json", compact_trace(parse_trace(b, "rank1_trace.json"), options)});
    std::string out = merge_ranks(std::move(inputs)).json;
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    auto error = parser.parse(simdjson::padded_string(out)).get(root);
    EXPECT_FALSE(error) << "merged output is not valid JSON: " << simdjson::error_message(error);
    return Outcome::ok;
  } catch (const Error& e) {
    if (message) *message = e.what();
    EXPECT_EQ(std::string(e.what()).rfind("rank", 0), 0u) << e.what();
    return Outcome::error;
  }
}

const std::string k7 = R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"stream":7}})";

std::string rank_doc(int rank, const std::string& base, const std::string& events) {
  return R"({"distributedInfo":{"rank":)" + std::to_string(rank) + R"(},"baseTimeNanoseconds":)" + base +
         R"(,"traceEvents":[)" + events + "]}";
}

}  // namespace

// A top-level key ending in an escaped backslash ran the key's end past its closing
// quote: the output repeated part of the value and was not JSON.
TEST(FuzzRegressions, TopLevelKeyEndingInEscapedBackslash) {
  EXPECT_EQ(run_compact(R"({"a\\": 1, "traceEvents": [)" + k7 + "]}"), Outcome::ok);
  EXPECT_EQ(run_compact(R"({"\\\\": {"x": "\\"}, "b\"\\": 2, "traceEvents": [)" + k7 + "]}"), Outcome::ok);
  CompactedTrace compacted = compact_text(R"({"a\\": 1, "traceEvents": [)" + k7 + "]}");
  ASSERT_NE(compacted.trace.find_top("a\\"), nullptr);
  EXPECT_EQ(compacted.trace.find_top("a\\")->key_raw, R"("a\\")");
}

// ts + dur beyond int64 nanoseconds (signed overflow, UB) was accepted.
TEST(FuzzRegressions, TimesBeyondTheRangeAreRefused) {
  std::string message;
  auto with = [](const std::string& ts, const std::string& dur) {
    return trace_json({R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":)" + ts + R"(,"dur":)" + dur +
                       R"(,"args":{"stream":7}})"});
  };
  EXPECT_EQ(run_compact(with("9223372036854775", "9223372036854775"), &message), Outcome::error);
  EXPECT_NE(message.find("event #0"), std::string::npos) << message;
  EXPECT_NE(message.find("is beyond"), std::string::npos) << message;
  EXPECT_EQ(run_compact(with("-3000000000000000", "3000000000000000")), Outcome::ok);  // the limits themselves
  EXPECT_EQ(run_compact(with("3000000000000000.001", "1"), &message), Outcome::error);
  EXPECT_EQ(run_compact(with("1", "1e300"), &message), Outcome::error);
  EXPECT_NE(message.find("1e300 is beyond"), std::string::npos) << message;
  // A non-measured event with a huge ts is kept as it is (not numeric, not moved).
  EXPECT_EQ(
      run_compact(trace_json(
          {k7, R"({"ph":"i","name":"x","pid":0,"tid":7,"ts":1e300})",
           R"({"ph":"X","cat":"gpu_user_annotation","name":"a","pid":0,"tid":7,"ts":-9e18,"dur":9e18,"args":{}})"})),
      Outcome::ok);
}

// Base times far apart overflowed `base - common` (int64) and then every shifted ts.
TEST(FuzzRegressions, MergeOfBaseTimesFarApartIsRefused) {
  std::string message;
  EXPECT_EQ(run_merge(rank_doc(0, "-9223372036854775808", k7), rank_doc(1, "9223372036854775807", k7), &message),
            Outcome::error);
  EXPECT_NE(message.find("cannot align clocks"), std::string::npos) << message;
  // Within range, but a shifted ts would leave it.
  std::string late =
      R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":2999999999999999,"dur":1,"args":{"stream":7}})";
  EXPECT_EQ(run_merge(rank_doc(0, "0", k7), rank_doc(1, "2000000000000000000", late), &message), Outcome::error);
  EXPECT_NE(message.find("event #0"), std::string::npos) << message;
  EXPECT_EQ(run_merge(rank_doc(0, "0", k7), rank_doc(1, "2000000000000000000", k7)), Outcome::ok);
}

// On-Demand skipped args nested 10,000 deep, so the output was one that `tracelane check`,
// Python and Perfetto cannot read. The document's depth limit is simdjson's 1024.
TEST(FuzzRegressions, NestingDeeperThan1024IsRefused) {
  auto nested = [](int levels) { return std::string(size_t(levels), '[') + std::string(size_t(levels), ']'); };
  auto with_args = [&](int levels) {
    return trace_json({R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1,"args":{"stream":7,"x":)" +
                       nested(levels) + "}}"});
  };
  std::string message;
  // root object 1, traceEvents 2, event 3, args 4: x may nest 1020 levels
  EXPECT_EQ(run_compact(with_args(1020)), Outcome::ok);
  EXPECT_EQ(run_compact(with_args(1021), &message), Outcome::error);
  EXPECT_NE(message.find("event #0 nests deeper than 1024"), std::string::npos) << message;
  EXPECT_EQ(run_compact(with_args(10000)), Outcome::error);
  EXPECT_EQ(run_compact(R"({"deviceProperties":)" + nested(1023) + R"(,"traceEvents":[)" + k7 + "]}"), Outcome::ok);
  EXPECT_EQ(run_compact(R"({"deviceProperties":)" + nested(1024) + R"(,"traceEvents":[)" + k7 + "]}", &message),
            Outcome::error);
  EXPECT_NE(message.find("deviceProperties"), std::string::npos) << message;
}

// Coalescing compares annotations by a canonical text of every key; a double beyond int64
// there (fuzz: "tidrank": 21E+20) was converted to int64 before its range was checked
// (undefined behaviour; UBSan: "2.1e+21 is outside the range of representable values").
TEST(FuzzRegressions, AnnotationKeyWithADoubleBeyondInt64) {
  std::string a =
      R"({"ph":"X","cat":"gpu_user_annotation","name":"a","pid":0,"tid":7,"x":21E+20,"ts":1,"dur":2,"args":{"y":-1e300}})";
  std::string b =
      R"({"ph":"X","cat":"gpu_user_annotation","name":"a","pid":0,"tid":7,"x":21E+20,"ts":2,"dur":2,"args":{"y":-1e300}})";
  EXPECT_EQ(run_compact(trace_json({k7, a, b})), Outcome::ok);
  EXPECT_EQ(compact_text(trace_json({k7, a, b})).summary.gpu_annotations_coalesced, 1u);
}

// On-Demand validates a scalar only when it converts it: a NaN or "1.5R1" as the ts of an
// event tracelane does not move was copied into the output, which was then not JSON.
TEST(FuzzRegressions, MalformedScalarsTracelaneReadsAreErrors) {
  std::string message;
  for (const char* bad : {"NaN", "-Infinity", "1.5R1", "01", "1.", "1e", "-", "tru", "nul"}) {
    std::string instant = std::string(R"({"ph":"i","name":"x","pid":1,"tid":1,"ts":)") + bad + "}";
    EXPECT_EQ(run_compact(trace_json({k7, instant}), &message), Outcome::error) << bad;
    EXPECT_NE(message.find("invalid JSON in event #1"), std::string::npos) << message;
    std::string pid = std::string(R"({"ph":"i","name":"x","pid":)") + bad + R"(,"tid":1,"ts":1})";
    EXPECT_EQ(run_compact(trace_json({k7, pid}), &message), Outcome::error) << bad;
  }
  for (const char* good : {"0", "-0", "1.5", "1e3", "1E+3", "-2.5e-1", "true", "null", "\"s\""}) {
    std::string instant = std::string(R"({"ph":"i","name":"x","pid":1,"tid":1,"ts":)") + good + "}";
    EXPECT_EQ(run_compact(trace_json({k7, instant})), Outcome::ok) << good;
  }
}

// On-Demand skips what tracelane does not read without checking its grammar: "[1 2]",
// {"a" 1} or "\x" inside args, or a number glued to a string ("ph":1.000"X"), were copied
// into the output, which no JSON reader then accepted. CI's fuzz run found it as a
// difference between the one-shot and the chunked parser on such an input (each path
// skipped different bytes). Every value of an event is now checked.
TEST(FuzzRegressions, MalformedValuesTracelaneDoesNotReadAreErrors) {
  auto with_args = [](const std::string& args) {
    return R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"stream":7,)" + args + "}}";
  };
  std::string message;
  for (const char* bad : {R"("q":[1 2])", R"("q":{"a" 1})", R"("q":{"a":1])", R"("q":"\x")", R"("q\y":1)",
                          R"("q":1.5R1)", R"("q":[[[tru]]])", R"("q":{"a":-})", R"("q":"\u12G4")"}) {
    EXPECT_EQ(run_compact(trace_json({with_args(bad)}), &message), Outcome::error) << bad;
    EXPECT_NE(message.find("invalid JSON in event #0"), std::string::npos) << message;
  }
  std::string glued =
      R"({"ph":1.000"X","cat":"kernel","name":"a","pid":0,"tid":1007,"ts":10,"dur":5,"args":{"stream":1007}})";
  EXPECT_EQ(run_compact(trace_json({k7, glued}), &message), Outcome::error);
  EXPECT_NE(message.find("event #1"), std::string::npos) << message;
  // Top-level values are checked the same way.
  EXPECT_EQ(run_compact(R"({"deviceProperties":[{"a" 1}],"traceEvents":[)" + k7 + "]}", &message), Outcome::error);
  EXPECT_NE(message.find("deviceProperties"), std::string::npos) << message;
  // Valid values of every kind still pass, escapes and nesting included.
  EXPECT_EQ(run_compact(trace_json({with_args(R"("q":[1,{"a":[true,null,-2.5e3]},"\u00e9\n\"\\\/"],"r\u0041":{})")})),
            Outcome::ok);
}

// A lone UTF-16 surrogate escape is JSON, but simdjson will not decode it: the name is
// kept as written (before the grammar check it was read as empty; refusing the whole
// trace for it would be worse).
TEST(FuzzRegressions, ALoneSurrogateInANameIsKeptAsWritten) {
  std::string kernel =
      R"({"ph":"X","cat":"kernel","name":"ncclDevKernel_AllGather_\ud800","pid":0,"tid":7,"ts":1,"dur":2,"args":{"stream":7}})";
  std::string json = trace_json({kernel});
  CompactedTrace compacted = compact_trace(parse_trace(json, "fuzz.json"), {});
  EXPECT_EQ(compacted.summary.slice_groups.count("nccl_all_gather"), 1u);
  bool found = false;
  for (const Event& event : compacted.trace.events)
    if (event.name == R"(ncclDevKernel_AllGather_\ud800)") found = true;
  EXPECT_TRUE(found);
}
