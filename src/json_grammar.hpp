// The grammar check of the trace reader: what JSON's grammar requires and simdjson
// On-Demand does not check, and where a message about a broken document points.
//
// On-Demand checks only what it is asked to read: a value it skips may hold "[1 2]",
// {"a" 1}, 1.5R1 or "\x", and would be copied into the output as it was (an output no JSON
// reader accepts). So the reader walks every value it does not read through check_value():
// containers through simdjson's iteration (commas, colons, brackets), scalars against
// JSON's grammar (valid_atom), strings' escapes (valid_escapes), and nesting against
// kMaxDepth.
//
// The chunked path (SPEC 9.10) must report the error the one-shot path would: its
// error-replay helpers, first_stage_error() and replay_last_chunk(), say which error that
// is and which bytes to read again to find its position.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trace_scanner.hpp"
#include "tracelane/trace.hpp"

namespace tracelane {

// simdjson's On-Demand front end skips nested values without a depth limit, but the JSON
// readers of the output do have one (simdjson's DOM in `tracelane check`, Python's json,
// Perfetto): refuse nesting deeper than simdjson's default, 1024 levels in the document.
inline constexpr size_t kMaxDepth = 1024;

// On-Demand checks a scalar only when it converts one, and tracelane reads pid, tid, id,
// ts, dur and args.stream by their text: so that a NaN, "1.5R1" or "tru" there is an
// error (not copied into the output), such tokens are checked against JSON's grammar.
// Strings and containers pass (simdjson checks them).
bool valid_atom(std::string_view token);

// Whether a string token (with its quotes) has only JSON's escapes. simdjson's first stage
// checks strings' UTF-8 and control characters, not what follows a backslash.
bool valid_escapes(std::string_view token);

inline std::string_view trim_right(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

// Checks values of one document against JSON's grammar, and words every message about it:
// "<source>: <what> (byte <offset in the whole input>)". One per document being read.
// simdjson's error in words: "invalid JSON: <simdjson's message>", but for the two that do
// not mean the bytes are wrong: no memory for its index ("out of memory (...)") and a
// document above the most it reads at once ("a JSON document of more than 4 GiB ...").
std::string simdjson_failure(simdjson::error_code error);

class GrammarCheck {
 public:
  GrammarCheck(const char* document_begin, const std::string& source)
      : document_begin_(document_begin), source_(source) {}

  // For the chunked path's top-level document: offsets past `split` lie `shift` bytes
  // further on in the whole document (the list's contents were removed there).
  void map_offsets(uint64_t split, uint64_t shift) {
    split_ = split;
    shift_ = shift;
  }

  uint64_t offset(const char* where) const {
    uint64_t at = uint64_t(where - document_begin_);
    return at > split_ ? at + shift_ : at;
  }

  // What the messages name: event #index of traceEvents, or a top-level key.
  void checking_event(size_t index, simdjson::ondemand::document& doc) {
    doc_ = &doc;
    index_ = index;
  }
  void checking_top_level(const std::string& key, simdjson::ondemand::document& doc) {
    doc_ = &doc;
    index_ = SIZE_MAX;
    top_key_ = &key;
  }

  [[noreturn]] void fail(std::string_view what, const char* where) const;
  // A document simdjson did not take (parser.iterate()'s error): simdjson_failure()'s words.
  [[noreturn]] void fail_document(simdjson::error_code error) const { fail(simdjson_failure(error), nullptr); }
  // simdjson's error, at the document's current position.
  [[noreturn]] void fail_json(simdjson::error_code error, simdjson::ondemand::document& doc,
                              std::string_view context) const;
  [[noreturn]] void fail_json(simdjson::error_code error) const { fail_json(error, *doc_, event_context()); }

  // Walks a value, checking it; `level` is its depth in the document.
  void check_value(simdjson::ondemand::value& v, size_t level);
  // Checks a value and returns its exact text: a scalar's token, or a container from its
  // first byte to the token after it.
  std::string_view checked_text(simdjson::ondemand::value& v, size_t level);

  // A number or literal's token (true, false, null): an error unless it is JSON.
  void check_scalar(std::string_view token) const;

  void check_string(std::string_view token) const {
    if (token.find('\\') != std::string_view::npos && !valid_escapes(token)) fail_bad_escape(token);
  }

  // A key's escapes: from just after its opening quote to its closing one.
  void check_key(simdjson::ondemand::raw_json_string key) const {
    const char* p = reinterpret_cast<const char*>(key.raw());
    const char* q = p;
    bool escaped = false;
    while (*q != '"') {
      if (*q == '\\') {
        escaped = true;
        ++q;  // the escaped byte cannot end the key
      }
      ++q;
    }
    if (escaped) check_string(std::string_view(p - 1, size_t(q + 2 - p)));
  }

 private:
  // What is being read, for messages: `event #3` or `top-level key "deviceProperties"`.
  std::string subject() const;
  std::string event_context() const { return "in " + subject(); }
  [[noreturn]] void fail_value(std::string_view what, const char* where) const;
  [[noreturn]] void fail_bad_escape(std::string_view token) const;
  [[noreturn]] void fail_too_deep(simdjson::ondemand::value& v) const;

  const char* document_begin_;
  const std::string& source_;
  uint64_t split_ = UINT64_MAX, shift_ = 0;
  simdjson::ondemand::document* doc_ = nullptr;  // the document being read, for messages
  size_t index_ = SIZE_MAX;                      // the event being read; SIZE_MAX at top level
  const std::string* top_key_ = nullptr;         // the top-level key being read
};

// The error-replay path. simdjson's first stage runs over a whole document before
// anything is read, so the one-shot path reports its errors (unclosed strings, bad UTF-8,
// control characters) before any other: throws "<source>: invalid JSON: <error>" for the
// first such error in chunks [first, plan.chunks.size()) of `document` (padded to
// `allocated`), and returns when there is none.
void throw_first_stage_error(char* document, size_t allocated, const ChunkPlan& plan, size_t first,
                             const std::string& source);

// On a broken event simdjson may look at a few tokens after it before it gives up, and
// where it stops is in the message. So that the message is the one-shot path's, chunk k
// is read again followed by as many chunks as one document of `largest_document_bytes`
// holds: the last of them (k when no other fits).
size_t replay_last_chunk(const ChunkPlan& plan, size_t k, size_t largest_document_bytes);

}  // namespace tracelane
