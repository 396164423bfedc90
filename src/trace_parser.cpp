// Reads a Kineto trace with simdjson On-Demand in one pass. For each event it keeps the
// object's exact bytes and, for the handful of fields tracelane reads or rewrites, their
// values and the byte ranges of their value text; every other field is skipped unread.
//
// simdjson reads at most 4 GiB in one document (SPEC 9.10). A larger document is read in
// chunks of whole events, in place: a byte scanner finds the traceEvents list and the
// separators between its elements; each chunk is the bytes from one separator to a later
// one, with '[' and ']' written over those two bytes while simdjson reads it (and put back
// afterwards). The other top-level keys come from a small document: the trace with the
// list's contents removed.
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "tracelane/decimal_time.hpp"
#include "tracelane/trace.hpp"

namespace tracelane {
namespace {

namespace od = simdjson::ondemand;

// What a Trace's views point into. No simdjson parser is kept: its buffers grow with the
// document, and the few strings it unescapes are copied to the trace's arena.
struct Storage {
  std::string json;  // the document plus simdjson's padding
  std::string top;   // chunked path: the document without traceEvents' contents, padded
};

// The largest document simdjson reads at once, less a margin. A chunk holds at most
// kChunkBytes (or the limit, when lower) unless one event is larger by itself.
constexpr size_t kSimdjsonMaxDocument = simdjson::SIMDJSON_MAXSIZE_BYTES;
constexpr size_t kLargestDocumentBytes = kSimdjsonMaxDocument - (size_t(16) << 20);
constexpr size_t kChunkBytes = size_t(256) << 20;
// By default a document above this size is read in chunks of this size, not only above
// simdjson's limit: simdjson indexes a whole document before reading it (4 bytes per
// token), and an index of hundreds of MB costs memory and page faults. Measured on a
// 493 MB generated trace (bench/README.md): parse peak RSS 1583 -> 1229 MB, and parse
// time 2.0-3.4 s -> 1.2-1.5 s, with 64 MB chunks.
constexpr size_t kDefaultChunkedAbove = size_t(64) << 20;

// Copies unescaped strings into blocks of the trace's arena; the views stay valid because
// a block never grows past the capacity it was given.
class StringKeeper {
 public:
  explicit StringKeeper(Trace& trace) : trace_(trace) {}
  std::string_view keep(std::string_view text) {
    if (!block_ || block_->capacity() - block_->size() < text.size()) {
      trace_.arena.push_back(std::make_unique<std::string>());
      block_ = trace_.arena.back().get();
      block_->reserve(std::max(text.size(), size_t(16) << 10));
    }
    size_t at = block_->size();
    block_->append(text);
    return std::string_view(block_->data() + at, text.size());
  }

 private:
  Trace& trace_;
  std::string* block_ = nullptr;
};

// On-Demand checks a scalar only when it converts one, and tracelane reads pid, tid, id,
// ts, dur and args.stream by their text: so that a NaN, "1.5R1" or "tru" there is an
// error (not copied into the output), check such tokens against JSON's grammar. Strings
// and containers are checked by simdjson.
bool valid_atom(std::string_view t) {
  if (t.empty() || t[0] == '"' || t[0] == '{' || t[0] == '[') return true;
  if (t == "true" || t == "false" || t == "null") return true;
  auto digit = [&](size_t i) { return i < t.size() && t[i] >= '0' && t[i] <= '9'; };
  size_t i = t[0] == '-' ? 1 : 0;
  if (!digit(i)) return false;
  if (t[i] == '0') ++i;
  else while (digit(i)) ++i;
  if (i < t.size() && t[i] == '.') {
    if (!digit(++i)) return false;
    while (digit(i)) ++i;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == t.size();
}

std::string_view trim_right(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

// simdjson's On-Demand front end skips nested values without a depth limit, but the JSON
// readers of the output do have one (simdjson's DOM in `tracelane check`, Python's json,
// Perfetto): refuse nesting deeper than simdjson's default, 1024 levels in the document.
constexpr size_t kMaxDepth = 1024;

// Whether a string token (with its quotes) has only JSON's escapes. simdjson's first stage
// checks strings' UTF-8 and control characters, not what follows a backslash.
bool valid_escapes(std::string_view t) {
  for (size_t i = t.find('\\'); i != std::string_view::npos && i + 1 < t.size(); i = t.find('\\', i)) {
    char c = t[i + 1];
    if (c == 'u') {
      if (i + 6 > t.size()) return false;
      for (size_t k = i + 2; k < i + 6; ++k)
        if (!std::isxdigit(static_cast<unsigned char>(t[k]))) return false;
      i += 6;
    } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
      i += 2;
    } else {
      return false;
    }
  }
  return true;
}

class EventReader {
 public:
  EventReader(const char* document_begin, const std::string& source, StringKeeper& strings)
      : document_begin_(document_begin), source_(source), strings_(strings) {}

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

  [[noreturn]] void fail(std::string_view what, const char* where) const {
    std::string message = source_ + ": ";
    message += what;
    if (where) message += " (byte " + std::to_string(offset(where)) + ")";
    throw Error(message);
  }

  [[noreturn]] void fail_json(simdjson::error_code error, od::document& doc, std::string_view context) {
    auto location = doc.current_location();
    fail(std::string("invalid JSON ") + std::string(context) + ": " + simdjson::error_message(error),
         location.error() ? nullptr : location.value_unsafe());
  }

  // Reads one event object. `index` is its position in traceEvents, for messages.
  //
  // On-Demand checks only what it is asked to read: a value it skips may hold "[1 2]",
  // {"a" 1}, 1.5R1 or "\x", and would be copied into the output as it was (an output no
  // JSON reader accepts). So every value of the event is walked and checked here:
  // containers through simdjson's iteration (commas, colons, brackets), scalars against
  // JSON's grammar, strings' escapes, and nesting against kMaxDepth.
  bool read(od::value value, Event& event, size_t index, od::document& doc) {
    od::object object;
    if (value.get_object().get(object)) return false;
    doc_ = &doc;
    index_ = index;
    const char* begin = nullptr;
    std::array<std::string_view, kFieldCount> tokens{};
    constexpr size_t kFieldLevel = 4;  // the document 1, traceEvents 2, the event 3
    for (auto field_result : object) {
      od::field field;
      if (auto error = std::move(field_result).get(field)) fail_json(error, doc, event_context());
      od::raw_json_string key = field.key();
      check_key(key);
      od::value v = field.value();
      if (!begin) {
        // The first key's quote is one token after '{'; step back over whitespace.
        const char* key_quote = reinterpret_cast<const char*>(key.raw()) - 1;
        begin = key_quote - 1;
        while (*begin != '{') --begin;
      }
      if (key == "ph") {
        read_string(v, event.ph, kFieldLevel);
      } else if (key == "cat") {
        read_string(v, event.cat, kFieldLevel);
      } else if (key == "name") {
        read_string(v, event.name, kFieldLevel);
      } else if (key == "pid") {
        read_id(v, event.pid, tokens[kPid], kFieldLevel);
      } else if (key == "tid") {
        read_id(v, event.tid, tokens[kTid], kFieldLevel);
      } else if (key == "id") {
        read_id(v, event.id, tokens[kId], kFieldLevel);
      } else if (key == "ts") {
        read_time(v, event.ts, tokens[kTs], kFieldLevel);
      } else if (key == "dur") {
        read_time(v, event.dur, tokens[kDur], kFieldLevel);
      } else if (key == "args") {
        od::json_type type;
        if (auto error = v.type().get(type)) fail_json(error, doc, event_context());
        if (type != od::json_type::object) {
          check_value(v, kFieldLevel);
          continue;
        }
        od::object args;
        if (auto error = v.get_object().get(args)) fail_json(error, doc, event_context());
        event.has_args = true;
        for (auto arg_result : args) {
          od::field arg;
          if (auto error = std::move(arg_result).get(arg)) fail_json(error, doc, event_context());
          od::raw_json_string arg_key = arg.key();
          check_key(arg_key);
          od::value arg_value = arg.value();
          if (arg_key == "stream") {
            read_id(arg_value, event.stream, tokens[kStream], kFieldLevel + 1);
          } else if (arg_key == "name") {
            std::string_view raw = trim_right(arg_value.raw_json_token());
            if (!raw.empty() && raw[0] == '"') tokens[kArgName] = raw;
            read_string(arg_value, event.arg_name, kFieldLevel + 1);
          } else {
            if (arg_key == "original_stream") event.has_original_stream = true;
            check_value(arg_value, kFieldLevel + 1);
          }
        }
      } else {
        check_value(v, kFieldLevel);
      }
    }
    // The object is consumed; the iterator stands on the ',' or ']' after it.
    const char* end_token = nullptr;
    if (doc.current_location().get(end_token)) fail("unexpected end of traceEvents", nullptr);
    if (!begin) {
      // An empty object "{}": find its braces around the current position.
      const char* p = end_token - 1;
      while (*p != '}') --p;
      const char* q = p - 1;
      while (*q != '{') --q;
      begin = q;
    }
    std::string_view raw(begin, size_t(end_token - begin));
    raw = trim_right(raw);
    event.raw = raw;
    event.byte_offset = offset(begin);
    for (int f = 0; f < kFieldCount; ++f) {
      if (tokens[f].data()) {
        event.spans[f].offset = uint32_t(tokens[f].data() - begin);
        event.spans[f].length = uint32_t(tokens[f].size());
      }
    }
    return true;
  }

  // Checks a top-level value (not traceEvents) and returns its exact text.
  std::string_view read_top_level(od::value& v, od::document& doc, const std::string& key) {
    doc_ = &doc;
    index_ = SIZE_MAX;
    top_key_ = &key;
    return checked_text(v, 2);
  }

 private:
  // What is being read, for messages: `event #3` or `top-level key "deviceProperties"`.
  std::string subject() const {
    return index_ == SIZE_MAX ? "top-level key \"" + *top_key_ + "\"" : "event #" + std::to_string(index_);
  }
  std::string event_context() const { return "in " + subject(); }

  [[noreturn]] void fail_value(std::string_view what, const char* where) const {
    fail("invalid JSON " + event_context() + ": " + std::string(what), where);
  }

  void check_scalar(std::string_view token) const {
    if (!valid_atom(token)) fail_value("the value '" + std::string(token.substr(0, 40)) + "' is not JSON", token.data());
  }

  void check_string(std::string_view token) const {
    if (token.find('\\') != std::string_view::npos && !valid_escapes(token))
      fail_value("a string has an escape JSON does not have", token.data());
  }

  // A key's escapes: from just after its opening quote to its closing one.
  void check_key(od::raw_json_string key) const {
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

  // Walks a value, checking it (see read()); `level` is its depth in the document.
  void check_value(od::value& v, size_t level) {
    od::json_type type;
    if (auto error = v.type().get(type)) fail_json(error, *doc_, event_context());
    switch (type) {
      case od::json_type::object: {
        if (level > kMaxDepth) fail_too_deep(v);
        od::object o;
        if (auto error = v.get_object().get(o)) fail_json(error, *doc_, event_context());
        for (auto field_result : o) {
          od::field field;
          if (auto error = std::move(field_result).get(field)) fail_json(error, *doc_, event_context());
          check_key(field.key());
          od::value child = field.value();
          check_value(child, level + 1);
        }
        return;
      }
      case od::json_type::array: {
        if (level > kMaxDepth) fail_too_deep(v);
        od::array a;
        if (auto error = v.get_array().get(a)) fail_json(error, *doc_, event_context());
        for (auto element : a) {
          od::value child;
          if (auto error = std::move(element).get(child)) fail_json(error, *doc_, event_context());
          check_value(child, level + 1);
        }
        return;
      }
      case od::json_type::string:
        check_string(trim_right(v.raw_json_token()));
        return;
      default:
        check_scalar(trim_right(v.raw_json_token()));
        return;
    }
  }

  [[noreturn]] void fail_too_deep(od::value& v) const {
    fail(subject() + " nests deeper than " + std::to_string(kMaxDepth) +
             " levels (JSON readers such as Perfetto's refuse it)",
         v.raw_json_token().data());
  }

  // Checks a value and returns its exact text: a scalar's token, or a container from its
  // first byte to the token after it.
  std::string_view checked_text(od::value& v, size_t level) {
    std::string_view token = trim_right(v.raw_json_token());
    bool container = !token.empty() && (token[0] == '{' || token[0] == '[');
    check_value(v, level);
    if (!container) return token;
    const char* end = nullptr;
    if (auto error = doc_->current_location().get(end)) fail_json(error, *doc_, event_context());
    return trim_right(std::string_view(token.data(), size_t(end - token.data())));
  }

  void read_string(od::value& v, std::string_view& out, size_t level) {
    // Most strings have no escapes: view them in place instead of unescaping a copy. The
    // others are unescaped into the parser's buffer and copied out, so the parser can go.
    std::string_view raw = trim_right(v.raw_json_token());
    if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"' &&
        raw.find('\\') == std::string_view::npos) {
      out = raw.substr(1, raw.size() - 2);
      return;
    }
    if (raw.empty() || raw[0] != '"') {
      check_value(v, level);  // not a string: the field keeps no value, but must be JSON
      return;
    }
    check_string(raw);
    std::string_view s;
    if (v.get_string().get(s) == simdjson::SUCCESS) {
      out = strings_.keep(s);
    } else {
      // Grammatical but not decodable: a lone UTF-16 surrogate such as "\ud800", which JSON
      // allows and simdjson refuses to decode. Keep the text as written (escapes and all)
      // rather than refuse the trace or read the name as empty.
      out = raw.substr(1, raw.size() - 2);
    }
  }

  void read_id(od::value& v, Id& id, std::string_view& token, size_t level) {
    id = Id{};
    od::json_type type;
    if (auto error = v.type().get(type)) fail_json(error, *doc_, event_context());
    std::string_view raw = checked_text(v, level);
    token = raw;
    if (type == od::json_type::number && parse_json_int(raw, id.value)) {
      id.kind = Id::Kind::integer;
    } else if (type == od::json_type::string) {
      id.kind = Id::Kind::string;
    } else {
      id.kind = Id::Kind::other;
    }
  }

  void read_time(od::value& v, Time& time, std::string_view& token, size_t level) {
    time = Time{};
    time.present = true;
    od::json_type type;
    if (auto error = v.type().get(type)) fail_json(error, *doc_, event_context());
    std::string_view raw = checked_text(v, level);
    token = raw;
    // Beyond kMaxTimeNs a time is not numeric: sums and differences of times stay in int64.
    if (type == od::json_type::number)
      time.numeric = parse_us_as_ns(raw, time.ns) && time.ns >= -kMaxTimeNs && time.ns <= kMaxTimeNs;
    if (type == od::json_type::object || type == od::json_type::array) token = {};  // never spliced
  }

  const char* document_begin_;
  const std::string& source_;
  StringKeeper& strings_;
  uint64_t split_ = UINT64_MAX, shift_ = 0;
  od::document* doc_ = nullptr;  // the document being read, for messages
  size_t index_ = SIZE_MAX;      // the event being read; SIZE_MAX at top level
  const std::string* top_key_ = nullptr;  // the top-level key being read
};

// The one loop that reads events, for both paths; `index` counts on across chunks.
void read_events(Trace& trace, EventReader& reader, od::document& doc, od::array& events, size_t& index) {
  for (auto element : events) {
    od::value v;
    if (auto error = std::move(element).get(v)) reader.fail_json(error, doc, "in traceEvents");
    Event& event = trace.events.emplace_back();
    const char* where = nullptr;
    if (doc.current_location().get(where)) where = nullptr;
    if (!reader.read(v, event, index, doc)) {
      reader.fail("event #" + std::to_string(index) + " is not a JSON object", where);
    }
    if (event.tid.is_int() && event.tid.value > trace.max_int_tid) trace.max_int_tid = event.tid.value;
    ++index;
  }
}

// Where the chunked path reads traceEvents: the array's brackets, and chunks of whole
// events, each the bytes from the separator before its first event (the array's '[' or a
// ',') to the separator after its last (a ',' or the array's ']'), both inclusive.
struct ChunkPlan {
  size_t array_begin = 0, array_end = 0;
  std::vector<std::pair<size_t, size_t>> chunks;
};

// Finds, without parsing values, the first top-level traceEvents list and the separators
// between its elements. It knows strings, escapes and bracket nesting, and little more:
// simdjson validates every byte afterwards, the chunks and the rest of the document.
class Scanner {
 public:
  Scanner(const char* data, size_t size) : d_(data), n_(size) {}

  // False when the document is not an object whose first traceEvents value is a
  // well-formed list; message() then says why.
  bool plan(size_t chunk_limit, ChunkPlan& out) {
    skip_ws();
    if (p_ >= n_) return truncated();
    if (d_[p_] != '{') return fail("top level is not a JSON object, not a Kineto trace", kNowhere);
    ++p_;
    skip_ws();
    if (p_ >= n_) return truncated();
    if (d_[p_] == '}') return fail("no traceEvents list, not a Kineto trace", kNowhere);
    for (;;) {
      if (d_[p_] != '"') return fail("invalid JSON at top level: expected a key", p_);
      size_t key_begin = p_;
      if (!skip_string()) return false;
      bool is_events = is_trace_events(std::string_view(d_ + key_begin, p_ - key_begin));
      skip_ws();
      if (p_ >= n_) return truncated();
      if (d_[p_] != ':') return fail("invalid JSON at top level: expected ':'", p_);
      ++p_;
      skip_ws();
      if (p_ >= n_) return truncated();
      if (is_events) {
        if (d_[p_] != '[') return fail("traceEvents is not a list, not a Kineto trace", kNowhere);
        return scan_array(chunk_limit, out);
      }
      if (!skip_value()) return false;
      skip_ws();
      if (p_ >= n_) return truncated();
      if (d_[p_] == '}') return fail("no traceEvents list, not a Kineto trace", kNowhere);
      if (d_[p_] != ',') return fail("invalid JSON at top level: expected ',' or '}'", p_);
      ++p_;
      skip_ws();
      if (p_ >= n_) return truncated();
    }
  }

  std::string message() const {
    return where_ == kNowhere ? reason_ : reason_ + " (byte " + std::to_string(where_) + ")";
  }

 private:
  static constexpr size_t kNowhere = SIZE_MAX;

  static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  bool fail(std::string reason, size_t where) {
    reason_ = std::move(reason);
    where_ = where;
    return false;
  }

  // The document ends inside a value: say it as the one-shot path does.
  bool truncated() {
    size_t last = n_;
    while (last > 0 && std::isspace(static_cast<unsigned char>(d_[last - 1]))) --last;
    if (last > 0 && d_[last - 1] != '}')
      return fail("invalid JSON: the document does not end with '}' (truncated, or trailing content)", last - 1);
    return fail("invalid JSON: the document ends inside a string or a nested value", kNowhere);
  }

  void skip_ws() {
    while (p_ < n_ && is_ws(d_[p_])) ++p_;
  }

  // At '"': moves past the closing quote, one not preceded by an odd run of backslashes.
  bool skip_string() {
    size_t p = p_ + 1;
    for (;;) {
      const void* found = p < n_ ? std::memchr(d_ + p, '"', n_ - p) : nullptr;
      if (!found) return truncated();
      size_t at = size_t(static_cast<const char*>(found) - d_);
      size_t backslashes = 0;
      while (d_[at - 1 - backslashes] == '\\') ++backslashes;  // stops at the opening quote
      p = at + 1;
      if (backslashes % 2 == 0) {
        p_ = p;
        return true;
      }
    }
  }

  // At a value's first byte: moves past the value.
  bool skip_value() {
    char c = d_[p_];
    if (c == '"') return skip_string();
    if (c == '{' || c == '[') {
      closers_.assign(1, c == '{' ? '}' : ']');
      ++p_;
      while (!closers_.empty()) {
        while (p_ < n_ && !kBracketOrQuote[static_cast<unsigned char>(d_[p_])]) ++p_;
        if (p_ >= n_) return truncated();
        c = d_[p_];
        if (c == '"') {
          if (!skip_string()) return false;
          continue;
        }
        if (c == '{' || c == '[') {
          closers_.push_back(c == '{' ? '}' : ']');
        } else if (c == closers_.back()) {
          closers_.pop_back();
        } else {
          return fail("invalid JSON: mismatched brackets", p_);
        }
        ++p_;
      }
      return true;
    }
    size_t start = p_;
    while (p_ < n_ && !is_ws(d_[p_]) && !kBracketOrQuote[static_cast<unsigned char>(d_[p_])] && d_[p_] != ',' &&
           d_[p_] != ':')
      ++p_;
    if (p_ == start) return fail("invalid JSON: expected a value", p_);
    return true;
  }

  // At traceEvents' '[': records the array's bounds and its chunks, each as long as the
  // limit allows but never without an event.
  bool scan_array(size_t chunk_limit, ChunkPlan& out) {
    out.array_begin = p_;
    out.chunks.clear();
    ++p_;
    skip_ws();
    if (p_ >= n_) return truncated();
    if (d_[p_] == ']') {
      out.array_end = p_;
      return true;
    }
    size_t chunk_begin = out.array_begin, last_separator = out.array_begin;
    for (;;) {
      if (d_[p_] == ',' || d_[p_] == ']') return fail("invalid JSON in traceEvents: expected a value", p_);
      if (!skip_value()) return false;
      skip_ws();
      if (p_ >= n_) return truncated();
      char c = d_[p_];
      if (c != ',' && c != ']') return fail("invalid JSON in traceEvents: expected ',' or ']'", p_);
      if (p_ - chunk_begin + 1 > chunk_limit && last_separator != chunk_begin) {
        out.chunks.emplace_back(chunk_begin, last_separator);
        chunk_begin = last_separator;
      }
      last_separator = p_;
      ++p_;
      if (c == ']') {
        out.chunks.emplace_back(chunk_begin, last_separator);
        out.array_end = last_separator;
        return true;
      }
      skip_ws();
      if (p_ >= n_) return truncated();
    }
  }

  // Whether a key, as written (with quotes), is "traceEvents", escapes included.
  static bool is_trace_events(std::string_view raw) {
    if (raw.find('\\') == std::string_view::npos) return raw == "\"traceEvents\"";
    std::string key;
    for (size_t i = 1; i + 1 < raw.size(); ++i) {
      char c = raw[i];
      if (c != '\\') {
        key += c;
        continue;
      }
      c = raw[++i];
      if (c == 'u' && i + 4 < raw.size()) {
        unsigned code = 0;
        for (int k = 1; k <= 4; ++k) {
          char h = raw[i + k];
          code = code * 16 + unsigned(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
        }
        key += code < 0x80 ? char(code) : '\x01';  // no non-ASCII letter spells traceEvents
        i += 4;
      } else {
        key += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'b' ? '\b' : c == 'f' ? '\f' : c;
      }
    }
    return key == "traceEvents";
  }

  static constexpr std::array<bool, 256> kBracketOrQuote = [] {
    std::array<bool, 256> table{};
    for (unsigned char c : std::string_view("\"{}[]")) table[c] = true;
    return table;
  }();

  const char* d_;
  size_t n_;
  size_t p_ = 0;
  std::string closers_;
  std::string reason_;
  size_t where_ = kNowhere;
};

// Writes '[' and ']' over a chunk's two separators while simdjson reads it.
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

// The chunked path's events: the whole document (padded to `allocated`) and its plan.
struct ChunkedEvents {
  char* document;
  size_t allocated;
  const ChunkPlan& plan;
  EventReader& reader;
  size_t checked = 0;  // chunks simdjson's first stage has accepted

  // simdjson's first stage runs over a whole document before anything is read, so the
  // one-shot path reports its errors (unclosed strings, bad UTF-8, control characters)
  // before any other. Chunks from `checked` on are checked for such an error.
  void check_remaining(const std::string& source) {
    od::parser parser;
    for (; checked < plan.chunks.size(); ++checked) {
      auto [first, last] = plan.chunks[checked];
      ChunkBrackets brackets(document, first, last);
      if (auto error = parser.iterate(document + first, last - first + 1, allocated - first).error())
        throw Error(source + ": invalid JSON: " + simdjson::error_message(error));
    }
  }

  // Reads every chunk in order, in place, with one parser for all of them.
  void read(Trace& trace, size_t& index) {
    od::parser parser;
    for (size_t k = 0; k < plan.chunks.size(); ++k) {
      size_t first_index = index, first_event = trace.events.size();
      try {
        read_chunks(trace, parser, k, k, index);
      } catch (const Error&) {
        // On a broken event simdjson may look at a few tokens after it before it gives
        // up, and where it stops is in the message. So that the message is the one-shot
        // path's, read the chunk again followed by as many events as one document holds
        // (only simdjson's first stage, run over all of them, may answer otherwise).
        size_t last = k;
        while (last + 1 < plan.chunks.size() &&
               plan.chunks[last + 1].second - plan.chunks[k].first + 1 <= kLargestDocumentBytes)
          ++last;
        if (last == k) throw;
        index = first_index;
        trace.events.resize(first_event);
        read_chunks(trace, parser, k, last, index);
        throw;  // not reached unless the longer read succeeds, which it cannot
      }
    }
  }

 private:
  // Reads chunks first..last as one document (first == last but when retrying).
  void read_chunks(Trace& trace, od::parser& parser, size_t first, size_t last, size_t& index) {
    size_t begin = plan.chunks[first].first, end = plan.chunks[last].second;
    ChunkBrackets brackets(document, begin, end);
    od::document doc;
    if (auto error = parser.iterate(document + begin, end - begin + 1, allocated - begin).get(doc))
      reader.fail(std::string("invalid JSON: ") + simdjson::error_message(error), nullptr);
    checked = std::max(checked, last + 1);
    od::array events;
    if (auto error = doc.get_array().get(events)) reader.fail_json(error, doc, "in traceEvents");
    read_events(trace, reader, doc, events, index);
  }
};

// Reads the top-level object in [begin, begin + length), padded to `allocated`. With
// `chunked`, its traceEvents value is the "[]" left where the array's contents were, and
// the events come from the chunks. `whole_length` sizes the event vector.
void parse_document(Trace& trace, const char* begin, size_t length, size_t allocated, size_t whole_length,
                    EventReader& reader, ChunkedEvents* chunked) {
  od::parser parser;  // released on return: the trace keeps nothing of it
  if (length == 0) reader.fail("empty file, not a Kineto trace", nullptr);
  od::document doc;
  if (auto error = parser.iterate(begin, length, allocated).get(doc))
    reader.fail(std::string("invalid JSON: ") + simdjson::error_message(error), nullptr);
  od::object root;
  if (auto error = doc.get_object().get(root)) {
    if (error == simdjson::INCORRECT_TYPE) reader.fail("top level is not a JSON object, not a Kineto trace", nullptr);
    size_t last = length;
    while (last > 0 && std::isspace(static_cast<unsigned char>(begin[last - 1]))) --last;
    if (last > 0 && begin[last - 1] != '}')
      reader.fail("invalid JSON: the document does not end with '}' (truncated, or trailing content)",
                  begin + last - 1);
    reader.fail(std::string("invalid JSON: ") + simdjson::error_message(error), nullptr);
  }
  bool have_events = false;
  for (auto field_result : root) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) reader.fail_json(error, doc, "at top level");
    // key() must be read before unescaped_key(), which consumes it.
    const char* key_begin = reinterpret_cast<const char*>(field.key().raw()) - 1;
    std::string_view key_unescaped;
    if (auto error = field.unescaped_key().get(key_unescaped)) reader.fail_json(error, doc, "in a top-level key");
    std::string key(key_unescaped);
    od::value value = field.value();
    if (key == "traceEvents") {
      if (have_events) reader.fail("traceEvents appears twice", nullptr);
      have_events = true;
      trace.events_position = trace.top.size();
      od::array events;
      if (value.get_array().get(events)) reader.fail("traceEvents is not a list, not a Kineto trace", nullptr);
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
    reader.fail("trailing content after the JSON document", trailing);
  if (!have_events) reader.fail("no traceEvents list, not a Kineto trace", nullptr);
}

}  // namespace

Trace parse_trace(std::string json, std::string source) { return parse_trace(std::move(json), std::move(source), {}); }

Trace parse_trace(std::string json, std::string source, const ParseOptions& options) {
  Trace trace;
  trace.source = std::move(source);
  auto storage = std::make_shared<Storage>();
  size_t length = json.size();
  storage->json = std::move(json);
  storage->json.resize(length + simdjson::SIMDJSON_PADDING, '\0');
  char* begin = storage->json.data();
  StringKeeper strings(trace);
  EventReader reader(begin, trace.source, strings);
  if (length == 0) reader.fail("empty file, not a Kineto trace", nullptr);

  size_t limit = options.max_document_bytes ? std::min(options.max_document_bytes, kSimdjsonMaxDocument)
                                            : kDefaultChunkedAbove;
  ChunkPlan plan;
  Scanner scanner(begin, length);
  if (length <= limit || !scanner.plan(std::min(limit, kChunkBytes), plan)) {
    // One document. When the scanner found no list to cut out, simdjson says what is
    // wrong, as long as it can read the document at all.
    if (length > kSimdjsonMaxDocument) reader.fail(scanner.message(), nullptr);
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
    EventReader top_reader(top.data(), trace.source, strings);
    top_reader.map_offsets(plan.array_begin, plan.array_end - plan.array_begin - 1);
    ChunkedEvents chunked{begin, storage->json.size(), plan, reader};
    try {
      parse_document(trace, top.data(), top_length, top.size(), length, top_reader, &chunked);
    } catch (const Error&) {
      chunked.check_remaining(trace.source);
      throw;
    }
  }
  trace.storage = storage;
  trace.document = std::string_view(storage->json.data(), length);
  return trace;
}

}  // namespace tracelane
