// The byte scanner of the trace reader: bytes -> the traceEvents list and the boundaries of
// its events, cut into chunks that simdjson can read one at a time (SPEC 9.10).
//
// simdjson reads at most 4 GiB in one document, and indexes a whole document before reading
// it. A larger document is read in chunks of whole events, in place: the scanner finds the
// list and the separators between its elements; each chunk is the bytes from one separator
// to a later one, and ChunkBrackets writes '[' and ']' over those two bytes while simdjson
// reads it (and puts them back afterwards). The scanner knows strings, escapes and bracket
// nesting, and little more: simdjson validates every byte afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tracelane {

// Where the chunked path reads traceEvents: the array's brackets, and chunks of whole
// events, each the bytes from the separator before its first event (the array's '[' or a
// ',') to the separator after its last (a ',' or the array's ']'), both inclusive, and the
// number of events (list elements) in each: the concurrent read puts chunk k's events at
// their final place in the trace before the chunks before it are read.
struct ChunkPlan {
  size_t array_begin = 0, array_end = 0;
  std::vector<std::pair<size_t, size_t>> chunks;
  std::vector<size_t> chunk_events;
};

// Merges every chunk but the last that spans no more than `bytes` bytes past its first
// separator into the chunk after it, so that chunks read at the same time are that far
// apart (trace_parser.cpp: simdjson reads up to its padding past a chunk's end).
void merge_short_chunks(ChunkPlan& plan, size_t bytes);

// Finds, without parsing values, the first top-level traceEvents list and the separators
// between its elements.
class Scanner {
 public:
  Scanner(const char* data, size_t size) : d_(data), n_(size) {}

  // Plans chunks of at most `chunk_limit` bytes (more only when one event is larger by
  // itself). False when the document is not an object whose first traceEvents value is a
  // well-formed list; message() then says why.
  //
  // With `segment_bytes`, a list longer than two segments is scanned in segments of about
  // that many bytes concurrently (in the caller's TBB arena). Each segment but the first
  // starts at a guess of a separator between two events (a ',' between '}' and '{'), and
  // is used only if the scan of the segment before it, itself verified, stops exactly
  // there; a wrong guess is scanned again from where that scan stopped. The plan's chunks
  // may then be cut elsewhere, never at a byte that is not a separator; the events, the
  // list's bounds and, for a bad document, message() are those of the serial scan.
  bool plan(size_t chunk_limit, ChunkPlan& out, size_t segment_bytes = 0);

  // plan()'s parts, for a reader that cuts the list as it reads it (trace_parser.cpp):
  // find_list() finds the list's '[' (false, with message(), where plan() would fail
  // before the list); plan_rest() plans the list from one of its separators, known to be
  // one, to its end, as plan() plans it from its '['.
  bool find_list(size_t& list_begin);
  bool plan_rest(size_t separator, size_t chunk_limit, ChunkPlan& out);

  // The first ',' in [from, to) that lies between a '}' and a '{' (whitespace aside):
  // most likely the separator between two events of the list, though it may lie in a
  // string, in a nested list, or past the list's end. SIZE_MAX when there is none.
  size_t guess_separator(size_t from, size_t to) const;

  // "<reason>" or "<reason> (byte <offset>)", worded as the one-shot path words it.
  std::string message() const;

  // The length of the JSON value that starts at `offset`, or 0 when none does.
  size_t value_length(size_t offset) {
    p_ = offset;
    return offset < n_ && skip_value() ? p_ - offset : 0;
  }

 private:
  static constexpr size_t kNowhere = SIZE_MAX;

  static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  bool fail(std::string reason, size_t where);
  bool truncated();
  void skip_ws();
  bool skip_string();
  bool skip_value();
  bool skip_nested();
  bool scan_array(size_t chunk_limit, ChunkPlan& out, size_t segment_bytes);
  struct Segment;
  bool scan_segment(size_t from, size_t until, size_t chunk_limit, Segment& out);
  bool scan_segments(size_t chunk_limit, ChunkPlan& out, size_t segment_bytes);
  bool give_up();
  static bool is_trace_events(std::string_view raw);

  const char* d_;
  size_t n_;
  size_t p_ = 0;
  std::string closers_;
  std::string reason_;
  size_t where_ = kNowhere;
  size_t give_up_after_ = kNowhere;  // a scan from a guess stops past this byte (give_up)
  bool gave_up_ = false;
};

// Writes '[' and ']' over a chunk's two separators while simdjson reads it, so that the
// chunk is a JSON array of its events; puts the two bytes back when it goes.
class ChunkBrackets {
 public:
  ChunkBrackets(char* document, size_t first, size_t last)
      : document_(document), first_(first), last_(last), saved_first_(document[first]), saved_last_(document[last]) {
    document_[first_] = '[';
    document_[last_] = ']';
  }
  ~ChunkBrackets() {
    document_[first_] = saved_first_;
    document_[last_] = saved_last_;
  }
  ChunkBrackets(const ChunkBrackets&) = delete;
  ChunkBrackets& operator=(const ChunkBrackets&) = delete;

 private:
  char* document_;
  size_t first_, last_;
  char saved_first_, saved_last_;
};

}  // namespace tracelane
