// The byte scanner (see trace_scanner.hpp): one pass over the document's bytes that finds
// traceEvents and plans its chunks. It never builds a value; memchr finds closing quotes.
#include "trace_scanner.hpp"

#include <array>
#include <cctype>
#include <cstring>

namespace tracelane {
namespace {

constexpr std::array<bool, 256> kBracketOrQuote = [] {
  std::array<bool, 256> table{};
  for (unsigned char c : std::string_view("\"{}[]")) table[c] = true;
  return table;
}();

}  // namespace

bool Scanner::plan(size_t chunk_limit, ChunkPlan& out) {
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

std::string Scanner::message() const {
  return where_ == kNowhere ? reason_ : reason_ + " (byte " + std::to_string(where_) + ")";
}

bool Scanner::fail(std::string reason, size_t where) {
  reason_ = std::move(reason);
  where_ = where;
  return false;
}

// The document ends inside a value: say it as the one-shot path does.
bool Scanner::truncated() {
  size_t last = n_;
  while (last > 0 && std::isspace(static_cast<unsigned char>(d_[last - 1]))) --last;
  if (last > 0 && d_[last - 1] != '}')
    return fail("invalid JSON: the document does not end with '}' (truncated, or trailing content)", last - 1);
  return fail("invalid JSON: the document ends inside a string or a nested value", kNowhere);
}

void Scanner::skip_ws() {
  while (p_ < n_ && is_ws(d_[p_])) ++p_;
}

// At '"': moves past the closing quote, one not preceded by an odd run of backslashes.
bool Scanner::skip_string() {
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
bool Scanner::skip_value() {
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
bool Scanner::scan_array(size_t chunk_limit, ChunkPlan& out) {
  out.array_begin = p_;
  out.chunks.clear();
  out.chunk_events.clear();
  ++p_;
  skip_ws();
  if (p_ >= n_) return truncated();
  if (d_[p_] == ']') {
    out.array_end = p_;
    return true;
  }
  size_t chunk_begin = out.array_begin, last_separator = out.array_begin;
  size_t events = 0;  // in the chunk being planned, the one just skipped included
  for (;;) {
    if (d_[p_] == ',' || d_[p_] == ']') return fail("invalid JSON in traceEvents: expected a value", p_);
    if (!skip_value()) return false;
    ++events;
    skip_ws();
    if (p_ >= n_) return truncated();
    char c = d_[p_];
    if (c != ',' && c != ']') return fail("invalid JSON in traceEvents: expected ',' or ']'", p_);
    if (p_ - chunk_begin + 1 > chunk_limit && last_separator != chunk_begin) {
      out.chunks.emplace_back(chunk_begin, last_separator);
      out.chunk_events.push_back(events - 1);
      chunk_begin = last_separator;
      events = 1;
    }
    last_separator = p_;
    ++p_;
    if (c == ']') {
      out.chunks.emplace_back(chunk_begin, last_separator);
      out.chunk_events.push_back(events);
      out.array_end = last_separator;
      return true;
    }
    skip_ws();
    if (p_ >= n_) return truncated();
  }
}

// Whether a key, as written (with quotes), is "traceEvents", escapes included.
bool Scanner::is_trace_events(std::string_view raw) {
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

void merge_short_chunks(ChunkPlan& plan, size_t bytes) {
  size_t kept = 0;
  for (size_t k = 0; k < plan.chunks.size(); ++k) {
    if (k > kept) {
      plan.chunks[kept] = plan.chunks[k];
      plan.chunk_events[kept] = plan.chunk_events[k];
    }
    // A short chunk absorbs the chunks after it until it is long enough.
    while (k + 1 < plan.chunks.size() && plan.chunks[kept].second - plan.chunks[kept].first <= bytes) {
      ++k;
      plan.chunks[kept].second = plan.chunks[k].second;
      plan.chunk_events[kept] += plan.chunk_events[k];
    }
    ++kept;
  }
  plan.chunks.resize(kept);
  plan.chunk_events.resize(kept);
}


}  // namespace tracelane
