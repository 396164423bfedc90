// Reads a Kineto trace: the driver of the trace reader. Three parts do the work, apart
// as Perfetto's JSON importer keeps its tokenizer apart from its parser:
//
//   trace_scanner   bytes -> the traceEvents list, the boundaries of its events, chunks
//   event_reader    simdjson On-Demand values -> Event (exact bytes, a few fields)
//   json_grammar    what JSON requires and On-Demand does not check, error positions
//
// A document up to the chunking limit is read in one pass as one simdjson document. A
// larger one (simdjson reads at most 4 GiB at once, SPEC 9.10) is read in chunks of whole
// events, in place (trace_scanner.hpp); the other top-level keys come from a small
// document: the trace with the list's contents removed. When the caller's TBB arena has
// more than one thread, the chunks are read concurrently, and with four or more, smaller
// documents are chunked too (ChunkedEvents::read_concurrently says how that stays
// race-free and gives the same Trace and the same errors).
#include <simdjson.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <optional>
#include <vector>

#include "event_reader.hpp"
#include "json_grammar.hpp"
#include "prefault.hpp"
#include "trace_scanner.hpp"
#include "tracelane/timings.hpp"
#include "tracelane/trace.hpp"
#include "tsan_handoff.hpp"

namespace tracelane {
namespace {

// The tag a round's tasks take over from the calling thread (tsan_handoff.hpp): a task
// names it before it reads anything the caller wrote (its captures included).
char tsan_round_start;

namespace od = simdjson::ondemand;

// What a Trace's views point into. No simdjson parser is kept: its buffers grow with the
// document, and the few strings it unescapes are copied to the trace's arena.
struct Storage {
  TextBuffer json;  // the document plus simdjson's padding
  std::string top;  // chunked path: the document without traceEvents' contents, padded
};

// The largest document simdjson reads at once, less a margin. A chunk holds at most
// kChunkBytes (or the limit, when lower) unless one event is larger by itself.
constexpr size_t kSimdjsonMaxDocument = simdjson::SIMDJSON_MAXSIZE_BYTES;
constexpr size_t kLargestDocumentBytes = kSimdjsonMaxDocument - (size_t(16) << 20);
constexpr size_t kChunkBytes = size_t(256) << 20;
// By default a document above this size is read in chunks of this size, not only above
// simdjson's limit: simdjson indexes a whole document before reading it (4 bytes per
// token), and an index of hundreds of MB costs memory and page faults: 64 MB chunks made
// a large trace's parse faster and its peak lower, and 8 MB ones, once the scan read 64
// bytes at a time, took the 54 MB real trace's peak from 2.5x to 2.0x its size for the
// same CPU (bench/README.md, "Parse chunks").
constexpr size_t kDefaultChunkedAbove = size_t(8) << 20;

// With more than one thread, the chunks are read concurrently, about kChunksPerThread a
// thread (half of them in each of the two rounds of read_concurrently), each at least
// kSmallestConcurrentChunk: enough chunks that a slow one does not leave the other
// threads idle, and small chunks keep each thread's simdjson parser small (its index is
// ~4 bytes per token of the largest chunk it read). A document below the usual limit is
// chunked with kThreadsToChunkSmallDocuments threads or more (a trace parsed beside
// others, kThreadsToChunkSmallDocumentsBesideOthers). While the scan it needs was serial,
// two threads saved nothing on such a document; with the scan in segments they do
// (bench/README.md, "Parsing one trace's chunks concurrently", which has the figures).
// Beside other traces the scan's CPU is a cost with no idle thread to repay it.
constexpr size_t kConcurrentChunkedAbove = size_t(4) << 20;
constexpr int kThreadsToChunkSmallDocuments = 2;
constexpr int kThreadsToChunkSmallDocumentsBesideOthers = 4;
constexpr size_t kChunksPerThread = 8;
constexpr size_t kSmallestConcurrentChunk = size_t(1) << 20;
// The scan before a chunked read, with more than one thread: segments of the list scanned
// concurrently (Scanner::plan), about kSegmentsPerThread a thread, each at least
// kSmallestSegment. On one thread the whole scan runs before any chunk can be read, while
// the other threads wait (bench/README.md, "The scan in segments").
constexpr size_t kSegmentsPerThread = 4;
constexpr size_t kSmallestSegment = size_t(4) << 20;

// On one thread the list is read as it is cut, without a scan of it first: each chunk
// ends at a guessed separator (Scanner::guess_separator) about a chunk's length on, and
// only the document's last kScannedTailBytes are scanned (Scanner::plan_rest), for the
// list's end. simdjson proves each guess: a chunk starts at a separator already proven,
// so its strings and brackets are read as in the whole document, and the chunk is kept
// only when its array closes at exactly the guessed byte, every value in it walked by
// the reader (EventReader checks every value it does not read). A ',' in a string leaves
// the chunk's last string open (a first-stage error); one inside an event, or past the
// list's end, leaves the array closing elsewhere. The scan it saves was 2-3% of the CPU
// of `compact --jobs 1` (bench/README.md, "The scan at one thread").
constexpr size_t kScannedTailBytes = size_t(1) << 20;

// Reads the events of the list in `document` (padded to `allocated`) into trace.events,
// cutting chunks of at most `chunk_limit` bytes as it goes; `plan` gets the list's
// bounds. False, with the trace as it was, on anything but a list of events that reads
// whole: no guess or a wrong one, or a broken document. The scanned path then reads it
// again, and reports what is wrong as it always has.
bool read_as_cut(Trace& trace, char* document, size_t length, size_t allocated, size_t chunk_limit, ChunkPlan& plan) {
  Scanner scanner(document, length);
  size_t at = 0;  // a separator of the list: its '[' or a ',' between two events
  if (!scanner.find_list(at)) return false;
  plan.array_begin = at;
  StringKeeper::Arena arena;  // the events' unescaped strings: the trace's once all read
  StringKeeper strings(arena);
  GrammarCheck check(document, trace.source);
  EventReader reader(check, strings);
  od::parser parser;
  size_t index = 0;
  int64_t max_int_tid = INT64_MIN;
  // The events of the chunk [begin, end], both separators; whether its array closed at
  // `end` (no byte of the chunk left after it).
  auto read_chunk = [&](size_t begin, size_t end) {
    ChunkBrackets brackets(document, begin, end);
    od::document doc;
    od::array events;
    if (parser.iterate(document + begin, end - begin + 1, allocated - begin).get(doc) || doc.get_array().get(events))
      return false;
    read_events(reader, doc, events, index, max_int_tid, [&] { return &trace.events.emplace_back(); });
    const char* after = nullptr;
    return doc.current_location().get(after) != simdjson::SUCCESS;
  };
  // Room for the events, which the scanned path makes from its count. A vector grown by
  // doubling copies every event read so far while both copies live: 124 MB of 20-byte
  // events peaked at 848 MB against the scanned path's 599. So before each chunk, the
  // events of the rest of the list at the density read so far, and an eighth more for
  // those compaction adds, are reserved (only when they do not fit: at most the first
  // chunk's events are copied, unless the density grows by more than a sixteenth), and the
  // pages the chunk is expected to fill are made at once (prefault.hpp).
  trace.events.reserve(length / 128 + 16);  // as read_events_of() does
  auto make_room = [&](size_t begin, size_t end) {
    const size_t count = trace.events.size();
    if (count == 0 || begin <= plan.array_begin) return;
    const double per_byte = double(count) / double(begin - plan.array_begin);
    const size_t expected = count + size_t(per_byte * double(length - begin)) + 16;
    const size_t wanted = expected + expected / 8;
    if (trace.events.capacity() < wanted) trace.events.reserve(wanted + wanted / 16);
    const size_t filled = std::min(size_t(per_byte * double(end - begin)), trace.events.capacity() - count);
    prefault(trace.events.data() + count, filled * sizeof(Event));
  };
  const size_t tail = std::min(chunk_limit, kScannedTailBytes);
  bool whole = true;
  try {
    while (whole && length - at > tail) {
      size_t span = std::min(chunk_limit, length - at - tail);
      size_t guess = scanner.guess_separator(at + std::max(span / 2, size_t(1)), at + span);
      if (guess == SIZE_MAX) break;  // a long event, or the list's end: the scan finds it
      make_room(at, guess);
      whole = read_chunk(at, guess);
      at = guess;
    }
    ChunkPlan rest;
    whole = whole && scanner.plan_rest(at, chunk_limit, rest);
    for (size_t k = 0; whole && k < rest.chunks.size(); ++k) {
      make_room(rest.chunks[k].first, rest.chunks[k].second);
      whole = read_chunk(rest.chunks[k].first, rest.chunks[k].second);
    }
    plan.array_end = rest.array_end;
  } catch (const Error&) {
    whole = false;
  }
  if (!whole) {
    trace.events.clear();
    return false;
  }
  // Room for the events compaction adds, as the scanned path leaves (ChunkedEvents::read).
  const size_t count = trace.events.size();
  trace.events.reserve(count + count / 8);
  std::move(arena.begin(), arena.end(), std::back_inserter(trace.arena));
  trace.max_int_tid = std::max(trace.max_int_tid, max_int_tid);
  return true;
}

// The chunked path's events: the whole document (padded to `allocated`) and its plan.
struct ChunkedEvents {
  char* document;
  size_t allocated;
  const ChunkPlan& plan;
  EventReader& reader;
  const std::string& source;
  int threads;         // of the caller's TBB arena
  size_t checked = 0;  // chunks simdjson's first stage has accepted

  // After an error elsewhere: the error the one-shot path would report first, if any.
  void check_remaining() { throw_first_stage_error(document, allocated, plan, checked, source); }

  // Reads every chunk: concurrently when the arena has threads to spare, or in order.
  void read(Trace& trace, size_t& index) {
    // The scanner counted the events: their records' pages are made before either path
    // writes them (prefault.hpp), on every thread of the arena. An eighth more is room
    // for the events compaction adds (lane metadata, kernel-run spans, PP arrows) without
    // moving them all; pages never written cost no memory.
    size_t count = 0;
    for (size_t events : plan.chunk_events) count += events;
    trace.events.reserve(trace.events.size() + count + count / 8);
    prefault(trace.events.data() + trace.events.size(), count * sizeof(Event));
    if (threads > 1 && plan.chunks.size() > 1 && read_concurrently(trace, index)) return;
    read_in_order(trace, index);
  }

  // Reads every chunk in order, in place, with one parser for all of them.
  void read_in_order(Trace& trace, size_t& index) {
    od::parser parser;
    for (size_t k = 0; k < plan.chunks.size(); ++k) {
      size_t first_index = index, first_event = trace.events.size();
      try {
        read_chunks(trace, parser, k, k, index);
      } catch (const Error&) {
        // Where simdjson stops on a broken event is in its message: read the chunk again
        // with the chunks after it, as the one-shot path would (json_grammar.hpp).
        size_t last = replay_last_chunk(plan, k, kLargestDocumentBytes);
        if (last == k) throw;
        index = first_index;
        trace.events.resize(first_event);
        read_chunks(trace, parser, k, last, index);
        throw;  // not reached unless the longer read succeeds, which it cannot
      }
    }
  }

  // Reads the chunks on the arena's threads, each chunk's events straight into their
  // place in trace.events (the scanner counted them), its unescaped strings into its own
  // arena, appended to the trace's in chunk order. False, with the trace and the document
  // as they were, when any chunk fails: read_in_order() then finds the error the one-shot
  // path reports first, with its message and position. A concurrent read cannot know
  // which that is: the chunk that fails first on some thread need not be the first broken
  // one, and simdjson's first-stage errors anywhere come before any other error.
  //
  // Why no two threads race on a byte: ChunkBrackets writes chunk k's first and last
  // bytes, which are also the last byte of chunk k-1 and the first of chunk k+1, and
  // simdjson reads up to SIMDJSON_PADDING bytes past a chunk's last byte, into chunk k+1.
  // So the chunks are read in two rounds, even chunks and then odd ones, with the end of
  // the first round (parallel_for returns after every task has finished, and each
  // ChunkBrackets has put its bytes back) between them. Within a round, chunk k writes
  // only its own two separators and reads only up to its last byte plus the padding;
  // chunk k+2, read in the same round, writes nothing before chunk k+1's last byte, and
  // merge_short_chunks() has made every chunk but the last span more than the padding,
  // so chunk k's reads stop inside chunk k+1. The events go to disjoint slots of the
  // vector, which is sized before the rounds and not resized during them; the top-level
  // document, which the calling thread is reading, is a copy. When a chunk fails,
  // parallel_for still waits for the chunks already started (the others are cancelled)
  // before it throws, so every separator is back in place for read_in_order().
  bool read_concurrently(Trace& trace, size_t& index) {
    const size_t chunks = plan.chunks.size();
    const size_t first_event = trace.events.size();
    std::vector<size_t> first_index(chunks + 1, index);  // chunk k's first event's index
    for (size_t k = 0; k < chunks; ++k) first_index[k + 1] = first_index[k] + plan.chunk_events[k];
    struct ChunkResult {
      StringKeeper::Arena arena;
      int64_t max_int_tid = INT64_MIN;
    };
    std::vector<ChunkResult> results(chunks);
    trace.events.resize(first_event + (first_index[chunks] - index));  // within read()'s reserve
    // One parser per thread, reused for the chunks it reads: its buffers grow to the
    // largest of them, so allocating one a chunk would cost more than the chunk's read.
    tbb::enumerable_thread_specific<od::parser> parsers;
    auto read_chunk = [&](size_t k) {
      auto [begin, end] = plan.chunks[k];
      ChunkBrackets brackets(document, begin, end);
      GrammarCheck check(document, source);
      StringKeeper strings(results[k].arena);
      EventReader chunk_reader(check, strings);
      od::document doc;
      if (auto error = parsers.local().iterate(document + begin, end - begin + 1, allocated - begin).get(doc))
        check.fail_document(error);
      od::array events;
      if (auto error = doc.get_array().get(events)) check.fail_json(error, doc, "in traceEvents");
      Event* slot = trace.events.data() + first_event + (first_index[k] - index);
      Event* slots_end = slot + plan.chunk_events[k];
      size_t event_index = first_index[k];
      read_events(chunk_reader, doc, events, event_index, results[k].max_int_tid,
                  [&]() -> Event* { return slot < slots_end ? slot++ : nullptr; });
      if (slot != slots_end) check.fail("fewer events in a chunk than the scanner counted", nullptr);
    };
    // Each task hands its chunk back through results[k] (its ChunkBrackets are gone by
    // then, and a failed one's too, unwound before its exception leaves the task).
    auto read_chunk_and_hand_back = [&](size_t k) {
      struct HandBack {
        const void* tag;
        ~HandBack() { tsan_release(tag); }
      } hand_back{&results[k]};
      read_chunk(k);
    };
    auto take_back = [&] {
      for (const ChunkResult& result : results) tsan_acquire(&result);
    };
    auto read_task = [&](size_t k) {
      tsan_acquire(&tsan_round_start);
      read_chunk_and_hand_back(k);
    };
    try {
      // Isolated: while it waits, the calling thread reads this trace's chunks only, not
      // another file's job from a sweep's graph, which would hold this trace up (and its
      // memory) for a whole file.
      tbb::this_task_arena::isolate([&] {
        for (size_t round = 0; round < 2; ++round) {
          tsan_release(&tsan_round_start);
          // Chunks round, round + 2, ...: a task each, as they take similar times.
          tbb::parallel_for(round, chunks, size_t(2), read_task, tbb::simple_partitioner());
          take_back();
        }
      });
    } catch (const Error&) {
      take_back();
      trace.events.resize(first_event);
      return false;
    }
    for (ChunkResult& result : results) {
      std::move(result.arena.begin(), result.arena.end(), std::back_inserter(trace.arena));
      trace.max_int_tid = std::max(trace.max_int_tid, result.max_int_tid);
    }
    index = first_index[chunks];
    checked = chunks;
    return true;
  }

 private:
  // Reads chunks first..last as one document (first == last but when retrying).
  void read_chunks(Trace& trace, od::parser& parser, size_t first, size_t last, size_t& index) {
    size_t begin = plan.chunks[first].first, end = plan.chunks[last].second;
    ChunkBrackets brackets(document, begin, end);
    od::document doc;
    if (auto error = parser.iterate(document + begin, end - begin + 1, allocated - begin).get(doc))
      reader.check().fail_document(error);
    checked = std::max(checked, last + 1);
    od::array events;
    if (auto error = doc.get_array().get(events)) reader.check().fail_json(error, doc, "in traceEvents");
    read_events(trace, reader, doc, events, index);
  }
};

// Reads the events of the list `events` (the "[]" left in its place when `chunked`: the
// events then come from the chunks).
void read_events_of(Trace& trace, od::document& doc, od::array& events, size_t whole_length, EventReader& reader,
                    ChunkedEvents* chunked) {
  size_t index = 0;
  // Events average 130-400 bytes of JSON. Growing a vector of millions copies it while
  // both copies live, so reserve for small events: pages never written cost no memory.
  trace.events.reserve(whole_length / 128 + 16);
  if (chunked) {
    for (auto element : events) (void)element;  // the "[]" left in its place
    chunked->read(trace, index);
  } else {
    read_events(trace, reader, doc, events, index);
  }
}

// A document that is a list of events.
void read_event_list(Trace& trace, od::document& doc, size_t whole_length, EventReader& reader,
                     ChunkedEvents* chunked) {
  trace.events_position = 0;
  trace.array_format = true;
  od::array events;
  if (auto error = doc.get_array().get(events)) reader.check().fail_json(error, doc, "at top level");
  read_events_of(trace, doc, events, whole_length, reader, chunked);
}

// Reads the top-level object in [begin, begin + length), padded to `allocated`. With
// `chunked`, its traceEvents value is the "[]" left where the array's contents were, and
// the events come from the chunks. `whole_length` sizes the event vector.
void parse_document(Trace& trace, const char* begin, size_t length, size_t allocated, size_t whole_length,
                    EventReader& reader, ChunkedEvents* chunked) {
  GrammarCheck& check = reader.check();
  od::parser parser;  // released on return: the trace keeps nothing of it
  if (length == 0) check.fail("empty file, not a Kineto trace", nullptr);
  od::document doc;
  if (auto error = parser.iterate(begin, length, allocated).get(doc)) check.fail_document(error);
  od::json_type root_type;
  if (auto error = doc.type().get(root_type)) check.fail_document(error);
  if (root_type == od::json_type::array) {
    // The Trace Event Format's JSON Array Format (which Perfetto reads and torch's legacy
    // exporter writes): the document is the list of events, with no other key.
    read_event_list(trace, doc, whole_length, reader, chunked);
    const char* trailing = nullptr;
    if (doc.current_location().get(trailing) == simdjson::SUCCESS)
      check.fail("trailing content after the JSON document", trailing);
    return;
  }
  od::object root;
  if (auto error = doc.get_object().get(root)) {
    if (error == simdjson::INCORRECT_TYPE)
      check.fail("top level is not a JSON object or array, not a Kineto trace", nullptr);
    size_t last = length;
    while (last > 0 && std::isspace(static_cast<unsigned char>(begin[last - 1]))) --last;
    if (last > 0 && begin[last - 1] != '}')
      check.fail("invalid JSON: the document does not end with '}' (truncated, or trailing content)", begin + last - 1);
    check.fail_document(error);
  }
  bool have_events = false;
  for (auto field_result : root) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) check.fail_json(error, doc, "at top level");
    // key() must be read before unescaped_key(), which consumes it.
    const char* key_begin = reinterpret_cast<const char*>(field.key().raw()) - 1;
    std::string_view key_unescaped;
    if (auto error = field.unescaped_key().get(key_unescaped)) check.fail_json(error, doc, "in a top-level key");
    std::string key(key_unescaped);
    od::value value = field.value();
    if (key == "traceEvents") {
      if (have_events) check.fail("traceEvents appears twice", nullptr);
      have_events = true;
      trace.events_position = trace.top.size();
      od::array events;
      if (value.get_array().get(events)) check.fail("traceEvents is not a list, not a Kineto trace", nullptr);
      read_events_of(trace, doc, events, whole_length, reader, chunked);
    } else {
      TopLevelField top;
      top.key = std::move(key);
      top.value_raw = reader.read_top_level(value, doc, top.key);
      // The closing quote: skip each escape as a pair, so a key that ends in an escaped
      // backslash ends at its own quote (simdjson has validated the string).
      const char* key_end = key_begin + 1;
      while (*key_end != '"') key_end += *key_end == '\\' ? 2 : 1;
      top.key_raw = std::string_view(key_begin, size_t(key_end + 1 - key_begin));
      trace.top.push_back(std::move(top));
    }
  }
  const char* trailing = nullptr;
  if (doc.current_location().get(trailing) == simdjson::SUCCESS)
    check.fail("trailing content after the JSON document", trailing);
  if (!have_events) check.fail("no traceEvents list, not a Kineto trace", nullptr);
}

}  // namespace

Trace parse_trace(std::string json, std::string source) { return parse_trace(std::move(json), std::move(source), {}); }

Trace parse_trace(std::string json, std::string source, const ParseOptions& options, Timings* timings) {
  return parse_trace(TextBuffer(std::move(json)), std::move(source), options, timings);
}

Trace parse_trace(TextBuffer json, std::string source, const ParseOptions& options, Timings* timings) {
  Trace trace;
  trace.max_int_tid = INT64_MIN;  // known from here on: none read yet
  trace.source = std::move(source);
  auto storage = std::make_shared<Storage>();
  size_t length = json.size();
  {
    // simdjson reads up to SIMDJSON_PADDING bytes past the end: this may copy the document.
    Timings::Scope t(timings, "pad");
    storage->json = std::move(json);
    storage->json.resize_zeroed(length + simdjson::SIMDJSON_PADDING);
  }
  char* begin = storage->json.data();
  StringKeeper strings(trace.arena);
  GrammarCheck check(begin, trace.source);
  EventReader reader(check, strings);
  if (length == 0) check.fail("empty file, not a Kineto trace", nullptr);

  const int threads = tbb::this_task_arena::max_concurrency();
  size_t limit =
      options.max_document_bytes ? std::min(options.max_document_bytes, kSimdjsonMaxDocument)
      : threads >= (options.beside_others ? kThreadsToChunkSmallDocumentsBesideOthers : kThreadsToChunkSmallDocuments)
          ? kConcurrentChunkedAbove
          : kDefaultChunkedAbove;
  ChunkPlan plan;
  Scanner scanner(begin, length);
  bool chunked = false;
  std::optional<Timings::Scope> read_phase;
  if (length > limit) {
    size_t chunk_limit = std::min(options.max_document_bytes ? limit : kDefaultChunkedAbove, kChunkBytes);
    if (threads == 1) {
      read_phase.emplace(timings, "cut and read");
      chunked = read_as_cut(trace, begin, length, storage->json.size(), chunk_limit, plan);
      if (!chunked) read_phase.reset();  // read again below, after a scan
    }
    if (!chunked) {
      Timings::Scope t(timings, "scan");
      if (threads > 1) {
        // Chunks of a few MB for each thread rather than 64 MB ones; only a limit set by
        // the caller (tests) makes them smaller.
        size_t share = std::max(length / (size_t(threads) * kChunksPerThread), kSmallestConcurrentChunk);
        chunk_limit = std::min(chunk_limit, share);
      }
      // With more than one thread the list is scanned in segments, a few a thread.
      size_t segment_bytes =
          threads > 1 ? std::max(length / (size_t(threads) * kSegmentsPerThread), kSmallestSegment) : 0;
      chunked = scanner.plan(chunk_limit, plan, segment_bytes);
      if (chunked && threads > 1) merge_short_chunks(plan, simdjson::SIMDJSON_PADDING);
    }
  }
  if (!read_phase) read_phase.emplace(timings, "read");
  if (!chunked) {
    // One document. When the scanner found no list to cut out, simdjson says what is
    // wrong, as long as it can read the document at all.
    if (length > kSimdjsonMaxDocument) check.fail(scanner.message(), nullptr);
    parse_document(trace, begin, length, storage->json.size(), length, reader, nullptr);
  } else {
    // The top-level document: everything but the list's contents, which become "[]".
    std::string& top = storage->top;
    top.reserve(length - (plan.array_end - plan.array_begin - 1) + simdjson::SIMDJSON_PADDING);
    top.append(begin, plan.array_begin);
    top += "[]";
    top.append(begin + plan.array_end + 1, length - plan.array_end - 1);
    size_t top_length = top.size();
    top.resize(top_length + simdjson::SIMDJSON_PADDING, '\0');
    GrammarCheck top_check(top.data(), trace.source);
    top_check.map_offsets(plan.array_begin, plan.array_end - plan.array_begin - 1);
    EventReader top_reader(top_check, strings);
    ChunkedEvents chunked_events{begin, storage->json.size(), plan, reader, trace.source, threads};
    try {
      parse_document(trace, top.data(), top_length, top.size(), length, top_reader, &chunked_events);
    } catch (const Error&) {
      chunked_events.check_remaining();
      throw;
    }
  }
  trace.storage = storage;
  trace.document = std::string_view(storage->json.data(), length);
  trace.document_crc32 = options.document_crc32;
  return trace;
}

}  // namespace tracelane
