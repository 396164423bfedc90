// Traces over simdjson's 4 GiB document limit (SPEC 9.10) are read in chunks of whole
// events. With the limit lowered, the chunked path must give exactly the Trace, the
// compacted output and the error messages of the one-shot path.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "test_support.hpp"
#include "tracelane/gzip.hpp"

namespace tracelane::testing {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void expect_same_id(const Id& a, const Id& b, const std::string& what) {
  EXPECT_EQ(int(a.kind), int(b.kind)) << what;
  EXPECT_EQ(a.value, b.value) << what;
}

void expect_same_time(const Time& a, const Time& b, const std::string& what) {
  EXPECT_EQ(a.present, b.present) << what;
  EXPECT_EQ(a.numeric, b.numeric) << what;
  EXPECT_EQ(a.ns, b.ns) << what;
}

// Every field of every event, and the top-level keys, are equal.
void expect_same_trace(const Trace& a, const Trace& b) {
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.events_position, b.events_position);
  EXPECT_EQ(a.max_int_tid, b.max_int_tid);
  ASSERT_EQ(a.top.size(), b.top.size());
  for (size_t i = 0; i < a.top.size(); ++i) {
    EXPECT_EQ(a.top[i].key, b.top[i].key);
    EXPECT_EQ(a.top[i].key_raw, b.top[i].key_raw);
    EXPECT_EQ(a.top[i].value_raw, b.top[i].value_raw);
    EXPECT_EQ(a.top[i].replacement, b.top[i].replacement);
  }
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const Event& x = a.events[i];
    const Event& y = b.events[i];
    std::string what = "event #" + std::to_string(i);
    ASSERT_EQ(x.raw, y.raw) << what;
    EXPECT_EQ(a.byte_offset(x), b.byte_offset(y)) << what;
    EXPECT_EQ(x.ph(), y.ph()) << what;
    EXPECT_EQ(x.cat, y.cat) << what;
    EXPECT_EQ(x.name, y.name) << what;
    expect_same_id(x.pid, y.pid, what + " pid");
    expect_same_id(x.tid, y.tid, what + " tid");
    expect_same_id(x.id, y.id, what + " id");
    expect_same_id(x.stream(), y.stream(), what + " stream");
    expect_same_time(x.ts, y.ts, what + " ts");
    expect_same_time(x.dur, y.dur, what + " dur");
    std::string x_buffer, y_buffer;
    EXPECT_EQ(x.arg_name(x_buffer), y.arg_name(y_buffer)) << what;
    EXPECT_EQ(x.arg_name_raw(), y.arg_name_raw()) << what;
    EXPECT_EQ(x.has_args, y.has_args) << what;
    EXPECT_EQ(x.has_original_stream, y.has_original_stream) << what;
    for (int f = 0; f < kFieldCount; ++f) {
      EXPECT_EQ(x.span(Field(f)).offset, y.span(Field(f)).offset) << what << " field " << f;
      EXPECT_EQ(x.span(Field(f)).length, y.span(Field(f)).length) << what << " field " << f;
    }
  }
}

// Whether the trace's top-level values were read from a separate top-level document,
// which only the chunked path makes (the events always point into the input).
bool read_in_chunks(const Trace& trace, size_t document_size) {
  if (trace.events.empty() || trace.top.empty()) return false;
  const char* document = trace.document.data();
  const char* value = trace.top[0].value_raw.data();
  return value < document || value >= document + document_size;
}

// The compacted output as text, or the error message compaction gives.
std::string compacted_or_error(Trace trace) {
  try {
    return write_compacted(compact_trace(std::move(trace), {}));
  } catch (const Error& error) {
    return std::string("error: ") + error.what();
  }
}

// Parses `json` both ways and compares the traces and the compacted outputs.
void expect_same_both_ways(const std::string& json, size_t limit, bool expect_chunked = true) {
  SCOPED_TRACE("limit " + std::to_string(limit));
  Trace one_shot = parse_trace(json, "test.json");
  Trace chunked = parse_trace(json, "test.json", {.max_document_bytes = limit});
  if (expect_chunked && json.size() > limit) {
    EXPECT_TRUE(read_in_chunks(chunked, json.size())) << "the chunked path was not taken";
  }
  expect_same_trace(one_shot, chunked);
  EXPECT_EQ(compacted_or_error(std::move(one_shot)), compacted_or_error(std::move(chunked)));
}

std::string parse_error(const std::string& json, size_t limit) {
  return error_message([&] { parse_trace(json, "test.json", {.max_document_bytes = limit}); });
}

void expect_same_error(const std::string& json, const std::vector<size_t>& limits) {
  SCOPED_TRACE(json.size() > 300 ? json.substr(0, 100) + " ... " + json.substr(json.size() - 200) : json);
  std::string expected = error_message([&] { parse_trace(json, "test.json"); });
  ASSERT_FALSE(expected.empty());
  for (size_t limit : limits) EXPECT_EQ(parse_error(json, limit), expected) << "limit " << limit;
}

const std::vector<size_t> kLimits = {1, 64, 200, 333, 1024, 4096, 65536};

// A trace with escaped strings, nested args, flows and odd spacing between events.
std::string rich_trace() {
  std::vector<std::string> events;
  events.push_back(metadata("process_name", 0, 0, R"({"name": "GPU 0"})"));
  events.push_back(metadata("thread_name", 0, 7, R"({"name": "stream \"7\" \u0041\\"})"));
  for (int i = 0; i < 40; ++i) {
    std::string ts = std::to_string(1000 + i * 10) + ".5";
    events.push_back(kernel(0, 7 + i % 3, ts, "4.25", i % 5 ? "k" : "esc\\\"aped\\\\ \\u00e9",
                            R"("nested": {"a": [1, {"b": "]}[{,"}], "c": "\\"}, "correlation": )" + std::to_string(i)));
    events.push_back(flow(i % 2 ? "f" : "s", "ac2g", std::to_string(i), 1, 1, ts));
    events.push_back(slice_event("cuda_runtime", "cudaLaunchKernel", 1, 1, ts, "1"));
  }
  events.push_back("{}");
  events.push_back(R"(  {  "ph" : "i" , "name":"spaced" ,"pid":1,"tid":"str\"ing","ts":5e0, "s": "t"}   )");
  events.push_back(slice_event("cuda_sync", "Stream Sync", 0, 7, "1300", "2"));
  return trace_json(events, R"("before": {"x": [1, 2, "traceEvents"]}, "tr\u0061ce": "\"")");
}

TEST(BigTrace, ExampleTraceMatchesAtEveryLimit) {
  std::string json = read_file(std::filesystem::path(TRACELANE_SOURCE_DIR) / "tests/data/example_trace.json");
  ASSERT_FALSE(json.empty());
  for (size_t limit : kLimits) expect_same_both_ways(json, limit);
}

TEST(BigTrace, RichTraceMatchesAtEveryLimit) {
  std::string json = rich_trace();
  for (size_t limit : kLimits) expect_same_both_ways(json, limit);
  // Every chunk boundary: limits across the size of a few events.
  for (size_t limit = 100; limit < 1500; limit += 37) expect_same_both_ways(json, limit);
}

TEST(BigTrace, ArrayFormatMatchesAtEveryLimit) {
  // The JSON Array Format (SPEC 9.15): the document is the list.
  std::string object = rich_trace();
  size_t open = object.find("\"traceEvents\": [") + std::string("\"traceEvents\": ").size();
  std::string array = object.substr(open, object.rfind(']') + 1 - open);
  ASSERT_EQ(array.front(), '[');
  // Its chunked read has no top-level value to tell it by (read_in_chunks): the limits
  // below the document's size take that path.
  for (size_t limit : kLimits) expect_same_both_ways(array, limit, false);
  for (size_t limit : kLimits) expect_same_both_ways("\n [ ]\n", limit, false);
  expect_same_error(array.substr(0, array.size() - 1), kLimits);
  expect_same_error(array + ",", kLimits);
}

TEST(BigTrace, TopLevelKeysBeforeAndAfterTraceEvents) {
  std::string events = "[" + kernel(0, 7, "1", "2") + ",\n" + kernel(0, 7, "3", "2", "b") + "]";
  std::string json = R"({"schemaVersion": 1, "deviceProperties": [{"name": "GPU \"0\""}],
    "traceEvents": )" +
                     events + R"(, "baseTimeNanoseconds": 1000, "trace\u0049d": "x", "displayTimeUnit": "ms"}  )";
  for (size_t limit : kLimits) expect_same_both_ways(json, limit);
  // traceEvents first, and last.
  expect_same_both_ways("{\"traceEvents\": " + events + ", \"schemaVersion\": 1}", 100);
  expect_same_both_ways("{\"schemaVersion\": 1, \"traceEvents\":" + events + "}", 100);
  // The key written with an escape.
  expect_same_both_ways("{\"schemaVersion\": 1, \"trace\\u0045vents\": " + events + "}", 100);
}

TEST(BigTrace, EmptyAndSingleEventLists) {
  for (std::string list : std::vector<std::string>{"[]", "[ \n ]", "[" + kernel(0, 7, "1", "2") + "]"}) {
    std::string json = "{\"schemaVersion\": 1, \"traceEvents\": " + list + ", \"z\": " + std::string(300, '1') + "}";
    for (size_t limit : kLimits) expect_same_both_ways(json, limit, false);
  }
}

TEST(BigTrace, EventLargerThanTheLimitIsAChunkByItself) {
  std::string big_args = "\"blob\": \"" + std::string(5000, 'x') + "\"";
  std::string json =
      trace_json({kernel(0, 7, "1", "2"), kernel(0, 7, "3", "2", "big", big_args), kernel(0, 7, "5", "2")});
  for (size_t limit : {size_t(1), size_t(200), size_t(1024), size_t(4096)}) expect_same_both_ways(json, limit);
}

TEST(BigTrace, ErrorsMatchTheOneShotPath) {
  std::vector<std::string> events;
  for (int i = 0; i < 30; ++i) events.push_back(kernel(0, 7, std::to_string(i * 10), "5"));
  std::vector<size_t> limits = {1, 200, 1024, 4096};

  auto with = [&](size_t at, const std::string& event) {
    auto copy = events;
    copy[at] = event;
    return trace_json(copy);
  };
  // An event that is not an object, early and in a later chunk.
  expect_same_error(with(0, "5"), limits);
  expect_same_error(with(25, "[1, 2]"), limits);
  expect_same_error(with(26, "\"text\""), limits);
  // Invalid JSON inside an event in a later chunk.
  expect_same_error(with(20, R"({"ph": "X", "ts": 1,, "dur": 2})"), limits);
  expect_same_error(with(21, R"({"ph": "X" "ts": 1})"), limits);
  expect_same_error(with(22, R"({"ph": "X", "args": {"a": }})"), limits);
  expect_same_error(with(23, R"({"ph": "X", "ts": 1,})"), limits);
  // Errors simdjson finds before reading anything, in a later chunk and at the top.
  expect_same_error(with(24, "{\"ph\": \"X\", \"name\": \"tab\there\"}"), limits);
  expect_same_error(with(24, "{\"ph\": \"X\", \"name\": \"bad \xff utf8\"}"), limits);
  expect_same_error(with(3, R"({"ph": "X", "ts": 1,, "dur": 2})"), limits);
  {
    std::string json = with(3, R"({"ph": "X", "ts": 1,, "dur": 2})");
    json.insert(json.size() - 1, ", \"later\": \"\xff\"");  // stage-1 error after a stage-2 one
    expect_same_error(json, limits);
  }
  // Trailing content after the top-level object, and after a truncated end.
  expect_same_error(trace_json(events) + " x", limits);
  expect_same_error(trace_json(events) + "}", limits);
  expect_same_error(trace_json(events) + "{}", limits);
  expect_same_error(trace_json(events).substr(0, 1500), limits);
  // Malformed lists and top levels (the scanner hands them to simdjson).
  expect_same_error(with(29, "{\"ph\": \"X\"},"), limits);
  expect_same_error(with(10, "{\"ph\": \"X\"} {}"), limits);
  expect_same_error(with(10, "{\"ph\": [\"X\"}]"), limits);
  expect_same_error("[" + trace_json(events) + "] x", limits);  // a list whose one event is the trace, then junk
  expect_same_error("\"" + std::string(500, 'p') + "\"", limits);
  expect_same_error(trace_json(events, "\"traceEvents\": [{}]"), limits);
  expect_same_error(R"({"schemaVersion": 1, "traceEvents": {"a": 1}, "pad": ")" + std::string(500, 'p') + "\"}",
                    limits);
  expect_same_error(R"({"schemaVersion": 1, "pad": ")" + std::string(500, 'p') + "\"}", limits);
  // A top-level value after traceEvents with an error: its byte offset is in the whole document.
  {
    std::string json = trace_json(events);
    json.insert(json.size() - 1, ", \"after\": [1, 2");
    expect_same_error(json, limits);
  }
  {
    std::string json = trace_json(events);
    json.insert(json.size() - 1, ", \"after\": tru");  // an atom simdjson skips: checked by tracelane
    expect_same_error(json, limits);
  }
  {
    // Malformed values inside containers tracelane does not read, in a later chunk.
    expect_same_error(with(27, R"({"ph": "X", "args": {"q": [1 2]}})"), limits);
    expect_same_error(with(27, R"({"ph": "X", "args": {"q": {"a" 1}}})"), limits);
    expect_same_error(with(27, R"({"ph": "X", "args": {"q": {"a": 1]}})"), limits);
    expect_same_error(with(27, R"({"ph": "X", "other": "\x"})"), limits);
  }
  {
    std::string json = trace_json(events);
    json.insert(json.size() - 1, ", \"traceEvents\": []");
    expect_same_error(json, limits);
  }
}

// Every trace of the shared corpus, read with a 1 MB limit, compacts to the same bytes.
TEST(BigTrace, CorpusMatchesWithOneMegabyteChunks) {
  const char* env = std::getenv("TRACELANE_SHARED");
  std::filesystem::path shared = env ? env : std::filesystem::path(TRACELANE_SOURCE_DIR) / ".." / "shared";
  std::filesystem::path corpus = shared / "corpus";
  if (!std::filesystem::is_directory(corpus)) GTEST_SKIP() << "NO CORPUS at " << corpus << " (set TRACELANE_SHARED)";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(corpus)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && (name.ends_with(".json") || name.ends_with(".json.gz")))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  size_t chunked_files = 0;
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    std::string bytes = read_file(path);
    std::string json = is_gzip(bytes) ? gunzip(bytes, path.string()) : bytes;
    const size_t limit = size_t(1) << 20;
    std::string one_shot_error, chunked_error;
    std::string one_shot_out, chunked_out;
    std::optional<Trace> one_shot, chunked;
    try {
      one_shot.emplace(parse_trace(json, path.string()));
    } catch (const Error& error) {
      one_shot_error = error.what();
    }
    try {
      chunked.emplace(parse_trace(json, path.string(), {.max_document_bytes = limit}));
    } catch (const Error& error) {
      chunked_error = error.what();
    }
    if (one_shot && chunked) {
      if (json.size() > limit) {
        EXPECT_TRUE(read_in_chunks(*chunked, json.size()));
        ++chunked_files;
      }
      expect_same_trace(*one_shot, *chunked);
      one_shot_out = compacted_or_error(std::move(*one_shot));
      chunked_out = compacted_or_error(std::move(*chunked));
    }
    EXPECT_EQ(one_shot_error, chunked_error);
    EXPECT_TRUE(one_shot_out == chunked_out) << "compacted outputs differ";
  }
  std::printf("[ corpus   ] %zu files, %zu read in chunks\n", files.size(), chunked_files);
  EXPECT_GT(chunked_files, 0u);
}

}  // namespace
}  // namespace tracelane::testing
