// The trace reader's parts on their own: the byte scanner's chunk plan (trace_scanner.hpp)
// and the grammar check's positions (json_grammar.hpp).
#include <gtest/gtest.h>

#include <tbb/task_arena.h>

#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "json_grammar.hpp"
#include "test_support.hpp"
#include "trace_scanner.hpp"
#include "tracelane/timings.hpp"

using namespace tracelane;

namespace {

// The chunks of `json` as text, each from its first separator to its last, inclusive.
std::vector<std::string> chunk_texts(const std::string& json, size_t chunk_limit) {
  Scanner scanner(json.data(), json.size());
  ChunkPlan plan;
  EXPECT_TRUE(scanner.plan(chunk_limit, plan)) << scanner.message();
  std::vector<std::string> texts;
  for (auto [first, last] : plan.chunks) texts.push_back(json.substr(first, last - first + 1));
  return texts;
}

std::string scan_failure(const std::string& json) {
  Scanner scanner(json.data(), json.size());
  ChunkPlan plan;
  EXPECT_FALSE(scanner.plan(1 << 20, plan));
  return scanner.message();
}

}  // namespace

TEST(Scanner, FindsTheListAndOneChunkWhenEverythingFits) {
  std::string json = R"({"a": [1, {"b": 2}], "traceEvents": [{"x": 1}, {"x": 2}], "z": 3})";
  Scanner scanner(json.data(), json.size());
  ChunkPlan plan;
  ASSERT_TRUE(scanner.plan(1 << 20, plan));
  EXPECT_EQ(json[plan.array_begin], '[');
  EXPECT_EQ(json[plan.array_end], ']');
  EXPECT_EQ(json.substr(plan.array_begin, plan.array_end - plan.array_begin + 1), R"([{"x": 1}, {"x": 2}])");
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0], std::make_pair(plan.array_begin, plan.array_end));
}

TEST(Scanner, AnEventAcrossAChunkEdgeStaysWholeInTheNextChunk) {
  // A limit of 20 bytes ends inside the second event: the first chunk stops at the ','
  // before it, and the next chunk starts on that same ','.
  std::string json = R"({"traceEvents": [{"n": 1}, {"name": "long enough"}, {"n": 3}]})";
  EXPECT_EQ(chunk_texts(json, 20),
            (std::vector<std::string>{R"([{"n": 1},)", R"(, {"name": "long enough"},)", R"(, {"n": 3}])"}));
}

TEST(Scanner, AnEventLargerThanTheLimitIsAChunkByItself) {
  std::string json = R"({"traceEvents": [{"name": "far longer than the limit"}, {"n": 2}]})";
  EXPECT_EQ(chunk_texts(json, 8),
            (std::vector<std::string>{R"([{"name": "far longer than the limit"},)", R"(, {"n": 2}])"}));
}

TEST(Scanner, BracesCommasAndEscapedQuotesInsideStringsDoNotEndAnEvent) {
  // "}", "]" and "," inside a string, an escaped quote, and a string ending in an escaped
  // backslash: a scanner that missed any of them would cut the first event short.
  std::string first = R"({"name": "a}], \"b\" {[", "cat": "c:\\", "args": {"s": "\\\""}})";
  std::string json = "{\"traceEvents\": [" + first + R"(, {"n": 2}]})";
  EXPECT_EQ(chunk_texts(json, 4), (std::vector<std::string>{"[" + first + ",", R"(, {"n": 2}])"}));
}

TEST(Scanner, AKeyWrittenWithEscapesIsStillTraceEvents) {
  std::string json = R"({"trace\u0045vents": [{"n": 1}]})";
  EXPECT_EQ(chunk_texts(json, 1 << 20), (std::vector<std::string>{R"([{"n": 1}])"}));
}

namespace {

// The length of the JSON value at `offset` by the scanner's rules, a byte at a time; 0 when
// none ends there. A string ends at a quote after an even run of backslashes; in a list or
// object only quotes and brackets count outside strings (a backslash there is nothing),
// and a closing bracket must match.
size_t value_length_by_bytes(const std::string& d, size_t offset) {
  char c = d[offset];
  if (c == '"') {
    for (size_t at = offset + 1; at < d.size(); ++at) {
      if (d[at] == '\\')
        ++at;
      else if (d[at] == '"')
        return at + 1 - offset;
    }
    return 0;
  }
  if (c == '{' || c == '[') {
    std::string closers(1, c == '{' ? '}' : ']');
    bool in_string = false, escaped = false;
    for (size_t at = offset + 1; at < d.size(); ++at) {
      c = d[at];
      if (in_string) {
        if (escaped)
          escaped = false;
        else if (c == '\\')
          escaped = true;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        closers += c == '{' ? '}' : ']';
      } else if (c == '}' || c == ']') {
        if (c != closers.back()) return 0;
        closers.pop_back();
        if (closers.empty()) return at + 1 - offset;
      }
    }
    return 0;
  }
  size_t at = offset;
  while (at < d.size() && std::string_view(" \n\r\t\"{}[],:").find(d[at]) == std::string_view::npos) ++at;
  return at - offset;
}

}  // namespace

// The scanner reads nested values 64 bytes at a time, and a block with a backslash a byte
// at a time: strings, escapes and brackets placed across the blocks' edges in every way
// must give the lengths that reading a byte at a time gives, at every offset.
TEST(Scanner, ValueLengthsAreThoseOfReadingAByteAtATimeAcrossBlockEdges) {
  std::mt19937_64 random(25);
  const std::vector<std::string> pieces = {"\"", "\\",       "\\\\", "\\\"",    "{",      "}",       "[",
                                           "]",  ", ",       ": ",   "\n",      "x",      "12",      "true",
                                           "{}", "\"}, {\"", "},{",  "\"a\": ", "[1, 2]", "\"\\\\\""};
  size_t ended = 0, checked = 0;
  for (int doc = 0; doc < 1500; ++doc) {
    std::string d = doc % 2 ? "{\"name\": \"" : "[";
    size_t length = random() % 400;
    while (d.size() < length) {
      if (random() % 3 == 0)
        d += std::string(random() % 70, 'a');  // runs that carry a string over a block's edge
      else
        d += pieces[random() % pieces.size()];
    }
    d += doc % 2 ? "\"}" : "]";
    for (size_t offset = 0; offset < d.size(); ++offset) {
      size_t expected = value_length_by_bytes(d, offset);
      ASSERT_EQ(Scanner(d.data(), d.size()).value_length(offset), expected) << "offset " << offset << " of\n" << d;
      ended += expected > 64 && (d[offset] == '{' || d[offset] == '[');
      ++checked;
    }
  }
  EXPECT_GT(ended, 800u) << "too few nested values longer than a block: the test reads little of the fast path";
  EXPECT_GT(checked, 200000u);
}

TEST(Scanner, MismatchedBracketsAreReportedAtTheirByte) {
  std::string json = R"({"traceEvents": [{"args": [1, 2}}]})";
  size_t wrong = json.find("2}") + 1;
  EXPECT_EQ(scan_failure(json), "invalid JSON: mismatched brackets (byte " + std::to_string(wrong) + ")");
}

TEST(Scanner, ATruncatedDocumentSaysWhereItEnds) {
  std::string json = R"({"traceEvents": [{"n": 1}, {"n")";
  EXPECT_EQ(scan_failure(json),
            "invalid JSON: the document does not end with '}' (truncated, or trailing content) "
            "(byte " +
                std::to_string(json.size() - 1) + ")");
}

TEST(Scanner, CountsTheEventsOfEachChunk) {
  std::string json = R"({"traceEvents": [{"n": 1}, {"name": "long enough"}, {"n": 3}, 4, [5]]})";
  Scanner scanner(json.data(), json.size());
  ChunkPlan plan;
  ASSERT_TRUE(scanner.plan(20, plan));
  EXPECT_EQ(plan.chunk_events, (std::vector<size_t>{1, 1, 3}));
  Scanner again(json.data(), json.size());
  ASSERT_TRUE(again.plan(1 << 20, plan));
  EXPECT_EQ(plan.chunk_events, (std::vector<size_t>{5}));
}

TEST(MergeShortChunks, AChunkNoLongerThanTheGapAbsorbsTheNextOnesButTheLastStaysShort) {
  // Chunks of one event each: 11, 14, 9, 30 and 9 bytes from first to last separator.
  std::string json = R"({"traceEvents": [{"n": 1}, {"n": 22}, {"n":3}, {"name": "twenty bytes"}, {"n":5}]})";
  Scanner scanner(json.data(), json.size());
  ChunkPlan plan;
  ASSERT_TRUE(scanner.plan(1, plan));
  ASSERT_EQ(plan.chunks.size(), 5u);
  merge_short_chunks(plan, 12);
  std::vector<std::string> texts;
  for (auto [first, last] : plan.chunks) texts.push_back(json.substr(first, last - first + 1));
  EXPECT_EQ(texts, (std::vector<std::string>{R"([{"n": 1}, {"n": 22},)", R"(, {"n":3}, {"name": "twenty bytes"},)",
                                             R"(, {"n":5}])"}));
  EXPECT_EQ(plan.chunk_events, (std::vector<size_t>{2, 2, 1}));
  for (size_t k = 0; k + 1 < plan.chunks.size(); ++k) EXPECT_GT(plan.chunks[k].second - plan.chunks[k].first, 12u);
}

TEST(ChunkBrackets, MakeAChunkAnArrayAndPutTheSeparatorsBack) {
  std::string json = R"({"traceEvents": [{"n": 1}, {"n": 2}, {"n": 3}]})";
  std::string before = json;
  size_t first = json.find(", {\"n\": 2}"), last = json.find(", {\"n\": 3}");
  {
    ChunkBrackets brackets(json.data(), first, last);
    EXPECT_EQ(json.substr(first, last - first + 1), R"([ {"n": 2}])");
  }
  EXPECT_EQ(json, before);
}

TEST(GrammarCheck, AtomsFollowJsonsNumberGrammar) {
  for (const char* good : {"0", "-1", "1.5", "1e9", "1.5E-3", "true", "false", "null", "\"s\""})
    EXPECT_TRUE(valid_atom(good)) << good;
  for (const char* bad : {"1.5R1", "NaN", "tru", "01", "1.", "-", ".5", "1e", "+1"})
    EXPECT_FALSE(valid_atom(bad)) << bad;
}

TEST(GrammarCheck, EscapesFollowJsonsStringGrammar) {
  EXPECT_TRUE(valid_escapes(R"("a\"b\\c\/\n\u00e9")"));
  EXPECT_FALSE(valid_escapes(R"("\x41")"));
  EXPECT_FALSE(valid_escapes(R"("\u00g1")"));
}

TEST(GrammarCheck, AnInvalidSkippedValueIsReportedAtItsByte) {
  // "other" is not a field tracelane reads: only the grammar check looks at its value.
  std::string json = R"({"traceEvents": [{"ph": "X", "other": [1, 1.5R1]}]})";
  size_t at = json.find("1.5R1");
  EXPECT_EQ(tracelane::testing::error_message([&] { parse_trace(json, "t.json"); }),
            "t.json: invalid JSON in event #0: the value '1.5R1' is not JSON (byte " + std::to_string(at) + ")");
}

// pid, tid, id, args.stream, ts and dur are read by parsers of their own (parse_json_int,
// parse_us_as_ns), which stand in for the check only when they read the number: one they
// do not read must still be JSON, and is read as an id or time that is not an integer.
TEST(GrammarCheck, FieldsTracelaneReadsAreCheckedAsEveryOtherValue) {
  for (const char* field : {"pid", "tid", "id", "ts", "dur", "stream"}) {
    for (const char* bad : {"01", "1.", "-", "1e", "-01.5", "1.5R1", "-x"}) {
      std::string value = std::string("\"") + field + "\": " + bad;
      std::string json = std::string(R"({"traceEvents": [{"ph": "i", )") +
                         (std::string(field) == "stream" ? "\"args\": {" + value + "}" : value) + "}]}";
      size_t at = json.find(bad, json.find(std::string("\"") + field));
      EXPECT_EQ(tracelane::testing::error_message([&] { parse_trace(json, "t.json"); }),
                "t.json: invalid JSON in event #0: the value '" + std::string(bad) + "' is not JSON (byte " +
                    std::to_string(at) + ")")
          << field << " " << bad;
    }
  }
  // JSON numbers that are no integer or exact time: kept as they are, not refused.
  Trace trace = parse_trace(
      R"({"traceEvents": [{"ph": "X", "pid": 1.5, "tid": 99999999999999999999, "ts": 1e300, "dur": -0.0000001,
                           "args": {"stream": 7e0}}]})",
      "t.json");
  const Event& event = trace.events[0];
  EXPECT_EQ(event.pid.kind, Id::Kind::other);
  EXPECT_EQ(event.tid.kind, Id::Kind::other);
  EXPECT_EQ(event.stream().kind, Id::Kind::other);
  EXPECT_EQ(event.value_text(kTid), "99999999999999999999");
  EXPECT_TRUE(event.ts.present);
  EXPECT_FALSE(event.ts.numeric);
  EXPECT_EQ(event.value_text(kTs), "1e300");
  EXPECT_EQ(event.value_text(kDur), "-0.0000001");
}

TEST(GrammarCheck, ABadEscapeInTheChunkedPathIsReportedAtItsByteInTheWholeDocument) {
  std::string json = R"({"traceEvents": [{"n": 1}, {"n": 2}, {"name": "a\qb"}], "z": 1})";
  size_t at = json.find("\"a\\q");
  std::string expected =
      "t.json: invalid JSON in event #2: a string has an escape JSON does not have (byte " + std::to_string(at) + ")";
  EXPECT_EQ(tracelane::testing::error_message([&] { parse_trace(json, "t.json"); }), expected);
  EXPECT_EQ(tracelane::testing::error_message([&] { parse_trace(json, "t.json", {.max_document_bytes = 24}); }),
            expected);
}

namespace {

std::vector<std::string> phase_names(const Timings& timings) {
  std::vector<std::string> names;
  for (const auto& phase : timings.phases()) names.push_back(std::string(phase.depth, ' ') + phase.name);
  return names;
}

}  // namespace

TEST(ParseTimings, TheOneShotPathTimesPaddingAndReading) {
  Timings timings;
  {
    Timings::Scope parse(&timings, "parse");
    parse_trace(R"({"traceEvents": [{"n": 1}]})", "t.json", {}, &timings);
  }
  EXPECT_EQ(phase_names(timings), (std::vector<std::string>{"parse", " pad", " read"}));
}

// With more than one thread the list is scanned before its chunks are read; with one it
// is cut as it is read (trace_parser.cpp, read_as_cut), and scanned first only when that
// read fails: here on an event that is not an object.
TEST(ParseTimings, TheChunkedPathAlsoTimesTheScanOrTheCutRead) {
  const std::string json = R"({"traceEvents": [{"n": 1}, {"n": 2}, {"n": 3}]})";
  const std::vector<std::pair<int, std::vector<std::string>>> cases = {{2, {"pad", "scan", "read"}},
                                                                       {1, {"pad", "cut and read"}}};
  for (const auto& [threads, phases] : cases) {
    Timings timings;
    tbb::task_arena(threads).execute([&] { parse_trace(json, "t.json", {.max_document_bytes = 16}, &timings); });
    EXPECT_EQ(phase_names(timings), phases) << threads << " threads";
  }
  Timings timings;
  EXPECT_NE(tracelane::testing::error_message([&] {
              tbb::task_arena(1).execute([&] {
                parse_trace(R"({"traceEvents": [{"n": 1}, 2, {"n": 3}]})", "t.json", {.max_document_bytes = 16},
                            &timings);
              });
            }),
            "");
  EXPECT_EQ(phase_names(timings), (std::vector<std::string>{"pad", "cut and read", "scan", "read"}));
}

namespace {

// Checks the segmented scan of `json` (Scanner::plan with `segment_bytes`, on 4 threads)
// against the serial one: the same verdict and message, the same list bounds, chunks that
// cover the list from separator to separator, and the same events in them.
void expect_segments_as_serial(const std::string& json, size_t segment_bytes, size_t chunk_limit) {
  SCOPED_TRACE("segments of " + std::to_string(segment_bytes) + " bytes, chunks of " + std::to_string(chunk_limit));
  Scanner serial(json.data(), json.size());
  ChunkPlan every;  // one chunk an event: every separator of the list
  bool serial_ok = serial.plan(1, every);
  Scanner segmented(json.data(), json.size());
  ChunkPlan plan;
  bool ok = false;
  tbb::task_arena(4).execute([&] { ok = segmented.plan(chunk_limit, plan, segment_bytes); });
  ASSERT_EQ(ok, serial_ok) << segmented.message();
  if (!ok) {
    EXPECT_EQ(segmented.message(), serial.message());
    return;
  }
  EXPECT_EQ(plan.array_begin, every.array_begin);
  EXPECT_EQ(plan.array_end, every.array_end);
  std::vector<size_t> separators{every.array_begin};  // in order; the k-th ends event k
  for (auto [first, last] : every.chunks) separators.push_back(last);
  ASSERT_EQ(plan.chunks.size(), plan.chunk_events.size());
  ASSERT_FALSE(plan.chunks.empty());
  size_t event = 0;
  for (size_t k = 0; k < plan.chunks.size(); ++k) {
    auto [first, last] = plan.chunks[k];
    ASSERT_EQ(first, separators[event]) << "chunk " << k;
    event += plan.chunk_events[k];
    ASSERT_LT(event, separators.size()) << "chunk " << k;
    ASSERT_EQ(last, separators[event]) << "chunk " << k;
  }
  EXPECT_EQ(event, separators.size() - 1);
}

// A list whose events hold what a guessed separator can be fooled by: "}, {" and "},{" in
// strings, lists of objects in args, escaped quotes, an event longer than the segments,
// "}, {[" in a string, followed by more of it than a segment (read from there, quotes and
// strings swap places and the brackets after it are all in strings: the scan would run to
// the document's end but for give_up; and the scan of the segment before, right, goes a
// segment past the wrong guess and gives up too), and after the list a top-level value
// that looks like more events.
std::string tricky_trace(size_t events) {
  std::string json = R"({"schemaVersion": 1, "traceEvents": [)";
  for (size_t i = 0; i < events; ++i) {
    if (i > 0) json += i % 3 ? ",\n  " : ",";
    switch (i % 6) {
      case 0:
        json += R"({"name": "a}, {b", "args": {"s": "},{\"}, {"}})";
        break;
      case 1:
        json += R"({"args": {"list": [{"a": 1}, {"b": [2, {"c": 3}]},\n {"d": 4}]}})";
        break;
      case 2:
        json += R"({"name": ")" + std::string(i % 7 * 40, 'x') + R"(", "n": )" + std::to_string(i) + "}";
        break;
      case 3:
        json += R"([{"x": 1}, {"y": 2}])";
        break;
      case 4:
        json += R"({"e": "\\", "f": {"g": {}}, "h": "}, {"})";
        break;
      default:
        json += R"({"n": "a}, {[)" + std::string(100, 'b') + R"("})";
        break;
    }
  }
  json += R"(], "after": [{"looks": "like"}, {"an": "event"}, {"but": 1}], "z": {}})";
  return json;
}

}  // namespace

TEST(ScannerSegments, TheSegmentedScanFindsWhatTheSerialScanFinds) {
  for (size_t events : {1, 2, 7, 60, 400}) {
    std::string json = tricky_trace(events);
    for (size_t segment_bytes : {1, 7, 13, 32, 64, 100, 333, 1000, 5000})
      for (size_t chunk_limit : {1, 50, 1 << 20}) expect_segments_as_serial(json, segment_bytes, chunk_limit);
  }
}

TEST(ScannerSegments, ABadDocumentGetsTheSerialScansMessage) {
  std::string good = tricky_trace(300);
  size_t list_end = good.find(R"(], "after")");
  std::vector<std::string> bad;
  std::string mismatched = good;  // a late event's object closed by ']'
  mismatched[good.rfind('}', list_end - 1)] = ']';
  bad.push_back(mismatched);
  bad.push_back(good.substr(0, good.size() / 2));  // truncated inside the list
  bad.push_back(good.substr(0, list_end - 40));
  std::string missing_comma = good;                         // two late events with no separator between them
  size_t separator = good.rfind("},\n  {", list_end - 60);  // a raw newline: not in a string
  ASSERT_NE(separator, std::string::npos);
  missing_comma.erase(separator + 1, 1);
  bad.push_back(missing_comma);
  size_t first_event = good.find('{', 30);  // an error in the first segment, guesses after it fine
  ASSERT_NE(first_event, std::string::npos);
  bad.push_back(good.substr(0, first_event + 1) + "]" + good.substr(first_event + 1));
  for (const std::string& json : bad) {
    Scanner serial(json.data(), json.size());
    ChunkPlan plan;
    ASSERT_FALSE(serial.plan(1, plan));
    for (size_t segment_bytes : {1, 13, 100, 1000, 5000}) expect_segments_as_serial(json, segment_bytes, 64);
  }
}
