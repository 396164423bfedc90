// One trace's chunks read concurrently (trace_parser.cpp, ChunkedEvents::read_concurrently):
// in arenas of 1, 2 and 4 threads, with chunk limits low enough that small traces have
// many chunks, the Trace must be the sequential one field by field (views at the same
// offsets of the same document), and every error the sequential read's.
#include <tbb/task_arena.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "test_support.hpp"
#include "trace_scanner.hpp"
#include "tracelane/gzip.hpp"
#include "tracelane/timings.hpp"

namespace tracelane::testing {
namespace {

const std::vector<int> kThreads = {1, 2, 4};

Trace parse_in_arena(const std::string& json, int threads, size_t limit) {
  std::optional<Trace> trace;
  tbb::task_arena(threads).execute(
      [&] { trace.emplace(parse_trace(json, "test.json", {.max_document_bytes = limit})); });
  return std::move(*trace);
}

std::string error_in_arena(const std::string& json, int threads, size_t limit) {
  return error_message([&] { parse_in_arena(json, threads, limit); });
}

// Where a view points: its offset in the trace's document, or, for a string the reader
// unescaped into the arena, its text (the arena's layout may differ).
std::string where(const Trace& trace, std::string_view view) {
  const char* begin = trace.document.data();
  if (view.data() >= begin && view.data() <= begin + trace.document.size())
    return "document+" + std::to_string(view.data() - begin) + ":" + std::to_string(view.size());
  for (const auto& block : trace.arena)
    if (view.data() >= block->data() && view.data() + view.size() <= block->data() + block->size())
      return "arena:" + std::string(view);
  return view.data() ? "elsewhere:" + std::string(view) : "null";
}

std::string id(const Id& id) { return std::to_string(int(id.kind)) + "/" + std::to_string(id.value); }
std::string time(const Time& t) {
  return std::to_string(t.present) + std::to_string(t.numeric) + "/" + std::to_string(t.ns);
}

// Every field of every event as text, views as positions: two traces read from equal
// documents describe themselves alike when they are the same.
std::vector<std::string> describe(const Trace& trace) {
  std::vector<std::string> lines;
  lines.push_back("source " + trace.source + " events_position " + std::to_string(trace.events_position) +
                  " max_int_tid " + std::to_string(trace.max_int_tid) + " events " +
                  std::to_string(trace.events.size()));
  for (const TopLevelField& top : trace.top)
    lines.push_back("top " + top.key + " " + std::string(top.key_raw) + " " + std::string(top.value_raw) + " " +
                    top.replacement);
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const Event& e = trace.events[i];
    std::string line = "#" + std::to_string(i) + " raw " + where(trace, e.raw) + " at " +
                       std::to_string(trace.byte_offset(e)) + " ph " + where(trace, e.ph()) + " cat " +
                       where(trace, e.cat) + " name " + where(trace, e.name) + " pid " + id(e.pid) + " tid " +
                       id(e.tid) + " id " + id(e.id) + " stream " + id(e.stream()) + " ts " + time(e.ts) + " dur " +
                       time(e.dur) + " arg_name " + where(trace, e.arg_name_raw()) + " args " +
                       std::to_string(e.has_args) + std::to_string(e.has_original_stream) + " spans";
    for (int f = 0; f < kFieldCount; ++f) {
      const Span span = e.span(Field(f));
      line += " " + std::to_string(span.offset) + "+" + std::to_string(span.length);
    }
    lines.push_back(line);
  }
  return lines;
}

void expect_same(const std::vector<std::string>& expected, const Trace& trace, const std::string& what) {
  std::vector<std::string> actual = describe(trace);
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) ASSERT_EQ(actual[i], expected[i]) << what;
}

// Parses `json` sequentially without chunks (the reference) and at each limit in each
// arena; returns how many of those reads kept more arena blocks than the reference, which
// only a concurrent read of a trace with escaped names in several chunks does (a
// StringKeeper per chunk, each with its own block, against one for the sequential read),
// so that a test can tell that the concurrent read was not skipped.
size_t expect_same_in_every_arena(const std::string& json, const std::vector<size_t>& limits) {
  Trace reference = parse_in_arena(json, 1, 0);
  std::vector<std::string> expected = describe(reference);
  size_t concurrent = 0;
  for (size_t limit : limits) {
    for (int threads : kThreads) {
      std::string what = "limit " + std::to_string(limit) + ", " + std::to_string(threads) + " threads";
      Trace trace = parse_in_arena(json, threads, limit);
      expect_same(expected, trace, what);
      EXPECT_EQ(trace.document, json) << what << ": the document's bytes were not put back";
      if (trace.arena.size() > reference.arena.size()) ++concurrent;
    }
  }
  return concurrent;
}

// Events with escaped names (kept in the arena; one event in `escape_every`), nested args,
// flows, odd spacing, a "{}" and events shorter than simdjson's padding.
std::string varied_trace(int events, int escape_every = 4) {
  std::vector<std::string> list;
  list.push_back(metadata("thread_name", 0, 7, R"({"name": "stream \"7\" \u0041\\"})"));
  for (int i = 0; i < events; ++i) {
    std::string ts = std::to_string(1000 + i * 10) + ".5";
    list.push_back(kernel(0, 7 + i % 3, ts, "4.25", i % escape_every ? "k" : "esc\\\"aped " + std::to_string(i),
                          R"("nested": {"a": [1, {"b": "]}[{,"}], "c": "\\"}, "correlation": )" + std::to_string(i)));
    list.push_back(flow(i % 2 ? "f" : "s", "ac2g", std::to_string(i), 1, 1, ts));
    if (i % 7 == 0) list.push_back("{}");
    if (i % 5 == 0) list.push_back(R"({"ph":"i","tid":)" + std::to_string(100 + i) + "}");
    if (i % (escape_every * 2 + 1) == 0)
      list.push_back(R"(  {  "ph" : "i" , "name":"sp\u0061ced" ,"pid":1,"tid":"str\"ing","ts":5e0}   )");
  }
  return trace_json(list, R"("before": {"x": [1, 2, "traceEvents"]}, "tr\u0061ce": "\"")") + "\n";
}

TEST(ConcurrentParse, GeneratedTracesAreTheSequentialTraceInEveryArena) {
  std::string json = varied_trace(300);
  size_t concurrent = expect_same_in_every_arena(json, {1, 100, 200, 333, 1024, 4096, 65536});
  EXPECT_GT(concurrent, 0u) << "no read was concurrent: the test compares nothing new";
}

TEST(ConcurrentParse, FewEventsAndShortChunks) {
  // Chunks shorter than simdjson's padding (merged by merge_short_chunks), one or two
  // chunks, and an event larger than the limit.
  for (int events : {0, 1, 2, 3, 5}) expect_same_in_every_arena(varied_trace(events), {1, 64, 100, 256});
  std::string big = kernel(0, 7, "3", "2", "big", "\"blob\": \"" + std::string(5000, 'x') + "\"");
  expect_same_in_every_arena(trace_json({kernel(0, 7, "1", "2"), big, "{}", kernel(0, 7, "5", "2")}), {1, 200, 4096});
}

TEST(ConcurrentParse, TraceEventsFirstLastAndEmpty) {
  std::string events = "[" + kernel(0, 7, "1", "2") + ",\n" + kernel(0, 7, "3", "2", "b\\n") + ",{}," +
                       kernel(0, 8, "5", "2", "c\\t") + "]";
  for (std::string json : {"{\"traceEvents\": " + events + ", \"schemaVersion\": 1}",
                           "{\"schemaVersion\": 1, \"trace\\u0045vents\":" + events + "}",
                           "{\"a\": 1, \"traceEvents\": [], \"z\": " + std::string(300, '1') + "}"})
    expect_same_in_every_arena(json, {1, 64, 100});
}

// On one thread the list is cut where a separator is guessed (a ',' between '}' and '{'),
// and a guess is kept only when its chunk reads whole up to it (trace_parser.cpp,
// read_as_cut); else the list is scanned and read again. Here such commas lie in strings,
// in lists of objects inside events, and in a top-level list after traceEvents longer
// than the part read after a scan: at every limit the trace is the one-shot read, and the
// limits give both outcomes, a cut read kept and one read again.
TEST(ConcurrentParse, GuessedSeparatorsInStringsNestedListsAndAfterTheListAreNotKept) {
  std::string objects;  // a list of objects: "},{" between every two
  for (int k = 0; k < 40; ++k) objects += std::string(k ? ", " : "") + "{\"k\": " + std::to_string(k) + "}";
  const std::vector<std::string> odd_args = {
      "\"s\": \"a},{b}, {c},\\\"{d}\\\\\"",                                       // in a string
      "\"deep\": {\"x\": [[{\"a\": 1}, {\"b\": [{}, {}]}], {\"y\": [{}, {}]}]}",  // in nested lists
      ""};                                                                        // none: the list after
  for (size_t kind = 0; kind < odd_args.size(); ++kind) {
    std::vector<std::string> list;
    for (int i = 0; i < 150; ++i)
      list.push_back(kernel(0, 7 + i % 3, std::to_string(1000 + i * 10), "4", i % 5 ? "k" : "e\\\"s",
                            i % 25 == 7 ? odd_args[kind] : "\"plain\": 1"));
    std::string json = trace_json(list);
    if (kind == 2) json.insert(json.size() - 1, ", \"after\": [" + objects + ", " + objects + ", " + objects + "]");
    std::vector<std::string> expected = describe(parse_in_arena(json, 1, 0));
    size_t kept = 0, read_again = 0;
    for (size_t limit : {300, 500, 700, 1000, 1500, 2500, 4000, 7000, 12000}) {
      std::string what = "kind " + std::to_string(kind) + ", limit " + std::to_string(limit);
      Timings timings;
      std::optional<Trace> trace;
      tbb::task_arena(1).execute(
          [&] { trace.emplace(parse_trace(json, "test.json", {.max_document_bytes = limit}, &timings)); });
      expect_same(expected, *trace, what);
      EXPECT_EQ(trace->document, json) << what << ": the document's bytes were not put back";
      bool scanned = std::any_of(timings.phases().begin(), timings.phases().end(),
                                 [](const Timings::Phase& phase) { return phase.name == "scan"; });
      ++(scanned ? read_again : kept);
    }
    EXPECT_GT(kept, 0u) << "kind " << kind << ": no cut read was kept";
    EXPECT_GT(read_again, 0u) << "kind " << kind << ": no wrong guess was made";
  }
}

// The default sizing (no limit): a document above the concurrent threshold is chunked
// from two threads on (four for one parsed beside others: trace_parser.cpp says why), and
// must still be the one-shot read.
TEST(ConcurrentParse, DefaultChunksOfALargeTrace) {
  std::string json = varied_trace(40000, 1000);
  ASSERT_GT(json.size(), size_t(6) << 20);
  EXPECT_GT(expect_same_in_every_arena(json, {0}), 0u);
}

// Whether a document is read in chunks: above 8 MB always; from 4 to 8 MB, with the default
// sizing, a trace parsed alone is from two threads on, one parsed beside others (a merge's
// ranks, a sweep's files) from four. Chunked or not, it is the one-shot read. A chunked
// read opens a "scan" phase, or on one thread a "cut and read" one (the list cut as it is
// read, with no scan first).
TEST(ConcurrentParse, ATraceAloneIsChunkedFromTwoThreadsOnOneBesideOthersFromFour) {
  const std::string small = varied_trace(25000, 1000), large = varied_trace(40000, 1000);
  ASSERT_GT(small.size(), size_t(4) << 20);
  ASSERT_LT(small.size(), size_t(8) << 20);
  ASSERT_GT(large.size(), size_t(8) << 20);
  for (const std::string* json : {&small, &large}) {
    std::vector<std::string> expected = describe(parse_in_arena(*json, 1, 0));
    for (int threads : {1, 2, 4})
      for (bool beside_others : {false, true}) {
        std::string what = std::to_string(json->size()) + " bytes, " + std::to_string(threads) + " threads" +
                           (beside_others ? ", beside others" : ", alone");
        Timings timings;
        std::optional<Trace> trace;
        tbb::task_arena(threads).execute(
            [&] { trace.emplace(parse_trace(*json, "test.json", {.beside_others = beside_others}, &timings)); });
        expect_same(expected, *trace, what);
        auto opened = [&](const std::string& name) {
          return std::any_of(timings.phases().begin(), timings.phases().end(),
                             [&](const Timings::Phase& phase) { return phase.name == name; });
        };
        const bool chunked = json == &large || threads >= (beside_others ? 4 : 2);
        EXPECT_EQ(opened("scan"), chunked && threads > 1) << what;
        EXPECT_EQ(opened("cut and read"), chunked && threads == 1) << what;
      }
  }
}

// Each broken document gives, in every arena, the message of the sequential one-shot read.
void expect_same_error(const std::string& json, const std::vector<size_t>& limits) {
  SCOPED_TRACE(json.size() > 300 ? json.substr(0, 100) + " ... " + json.substr(json.size() - 200) : json);
  std::string expected = error_in_arena(json, 1, 0);
  ASSERT_FALSE(expected.empty());
  for (size_t limit : limits)
    for (int threads : kThreads)
      EXPECT_EQ(error_in_arena(json, threads, limit), expected) << "limit " << limit << ", " << threads << " threads";
}

TEST(ConcurrentParse, ErrorsAreTheSequentialReadsInEveryArena) {
  std::vector<std::string> events;
  for (int i = 0; i < 60; ++i) events.push_back(kernel(0, 7, std::to_string(i * 10), "5", i % 3 ? "k" : "e\\\"s"));
  const std::vector<size_t> limits = {1, 200, 1024, 4096};
  auto with = [&](size_t at, const std::string& event) {
    auto copy = events;
    copy[at] = event;
    return trace_json(copy);
  };
  // A broken event in a middle chunk, early, and at the end.
  expect_same_error(with(30, R"({"ph": "X", "ts": 1,, "dur": 2})"), limits);
  expect_same_error(with(31, R"({"ph": "X", "args": {"q": [1 2]}})"), limits);
  expect_same_error(with(32, R"({"ph": "X", "other": "\x"})"), limits);
  expect_same_error(with(33, "[1, 2]"), limits);
  expect_same_error(with(1, R"({"ph": "X" "ts": 1})"), limits);
  expect_same_error(with(59, R"({"ph": "X", "ts": 1.5R1})"), limits);
  expect_same_error(with(59, "{\"ph\": \"X\"},"), limits);
  expect_same_error(with(34, R"({"ph": "X", "ts": 1,})"), limits);
  expect_same_error(with(35, R"({"ph": "X", "args": {"a": }})"), limits);
  // Errors in two chunks: the first in the document is reported, whichever chunk a
  // thread reads first (the second round's chunks come before the first round's).
  for (size_t first : {5, 12, 20}) {
    for (size_t second : {first + 3, first + 9, first + 30}) {
      auto copy = events;
      copy[first] = R"({"ph": "X", "ts": 1,, "dur": 2})";
      copy[second] = R"({"ph": "X", "other": "\x"})";
      expect_same_error(trace_json(copy), limits);
      copy[first] = "[1]";
      expect_same_error(trace_json(copy), limits);
    }
  }
  // Errors in two chunks: a later first-stage error (a tab in a string) comes first.
  {
    auto copy = events;
    copy[10] = R"({"ph": "X", "ts": 1,, "dur": 2})";
    copy[50] = "{\"ph\": \"X\", \"name\": \"tab\there\"}";
    expect_same_error(trace_json(copy), limits);
  }
  expect_same_error(with(50, "{\"ph\": \"X\", \"name\": \"bad \xff utf8\"}"), limits);
  // Truncated documents, trailing content, and a broken top-level value after the list.
  std::string whole = trace_json(events);
  for (size_t cut : {whole.size() - 1, whole.size() - 2, whole.size() / 2, whole.size() - 300})
    expect_same_error(whole.substr(0, cut), limits);
  expect_same_error(whole + " x", limits);
  expect_same_error(whole + "{}", limits);
  {
    std::string json = whole;
    json.insert(json.size() - 1, ", \"after\": tru");
    expect_same_error(json, limits);
  }
}

// Every trace of the shared corpus, in chunks of 64 KB and with the default sizing, in
// arenas of 2 and 4 threads: the one-shot sequential read, or its error.
TEST(ConcurrentParse, CorpusIsTheSequentialTraceInEveryArena) {
  TRACELANE_REQUIRE_SHARED(shared);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::filesystem::path(shared) / "corpus")) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && (name.ends_with(".json") || name.ends_with(".json.gz")))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  size_t concurrent = 0;
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    std::string json = is_gzip(bytes.str()) ? gunzip(bytes.str(), path.string()) : bytes.str();
    std::optional<Trace> reference;
    std::string expected_error;
    try {
      reference.emplace(parse_in_arena(json, 1, 0));
    } catch (const Error& error) {
      expected_error = error.what();
    }
    std::vector<std::string> expected = reference ? describe(*reference) : std::vector<std::string>{};
    for (size_t limit : {size_t(64) << 10, size_t(0)}) {
      for (int threads : {2, 4}) {
        std::string what = "limit " + std::to_string(limit) + ", " + std::to_string(threads) + " threads";
        if (!reference) {
          EXPECT_EQ(error_in_arena(json, threads, limit), expected_error) << what;
          continue;
        }
        Trace trace = parse_in_arena(json, threads, limit);
        expect_same(expected, trace, what);
        if (trace.arena.size() > reference->arena.size()) ++concurrent;
      }
    }
  }
  // The corpus has few escaped names, so this count says little; the generated traces'
  // tests check that the concurrent read is taken.
  std::printf("[ corpus   ] %zu files, %zu concurrent reads that kept strings per chunk\n", files.size(), concurrent);
}

}  // namespace
}  // namespace tracelane::testing
