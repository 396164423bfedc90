// The byte scanner (see trace_scanner.hpp): one pass over the document's bytes that finds
// traceEvents and plans its chunks. It never builds a value. A nested value (an event) is
// read 64 bytes at a time where AVX2 is built in (its quotes mark its strings, and only the
// brackets outside them are looked at one by one), else a byte at a time; memchr finds the
// end of a string that is not in one.
#include "trace_scanner.hpp"

#include <array>
#include <bit>
#include <cctype>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "parallel_ranges.hpp"

namespace tracelane {
namespace {

constexpr std::array<bool, 256> kBracketOrQuote = [] {
  std::array<bool, 256> table{};
  for (unsigned char c : std::string_view("\"{}[]")) table[c] = true;
  return table;
}();

}  // namespace

bool Scanner::plan(size_t chunk_limit, ChunkPlan& out, size_t segment_bytes) {
  size_t list = 0;
  return find_list(list) && scan_array(chunk_limit, out, segment_bytes);
}

bool Scanner::find_list(size_t& list_begin) {
  p_ = 0;
  skip_ws();
  if (p_ >= n_) return truncated();
  // The Trace Event Format's JSON Array Format: the document is the list of events.
  if (d_[p_] == '[') {
    list_begin = p_;
    return true;
  }
  if (d_[p_] != '{') return fail("top level is not a JSON object or array, not a Kineto trace", kNowhere);
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
      list_begin = p_;
      return true;
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
    return skip_nested();
  }
  size_t start = p_;
  while (p_ < n_ && !is_ws(d_[p_]) && !kBracketOrQuote[static_cast<unsigned char>(d_[p_])] && d_[p_] != ',' &&
         d_[p_] != ':')
    ++p_;
  if (p_ == start) return fail("invalid JSON: expected a value", p_);
  return true;
}

namespace {

// What a byte of a nested value does to the scan (Scanner::skip_nested).
enum class Step { more, closed, failed };

#if defined(__AVX2__)
// Bit i of each mask: byte i of the 64 at `p` is that character.
struct BlockMasks {
  uint64_t quotes, backslashes, openers, closers;
};

BlockMasks block_masks(const char* p) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  auto bits = [](__m256i a, __m256i b, char c) {
    const __m256i v = _mm256_set1_epi8(c);
    return uint64_t(uint32_t(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, v)))) |
           uint64_t(uint32_t(_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, v)))) << 32;
  };
  // '[' and '{' differ only in bit 0x20, as do ']' and '}'; no other byte ORed with 0x20
  // gives '{' or '}'.
  const __m256i case_bit = _mm256_set1_epi8(0x20);
  const __m256i lo20 = _mm256_or_si256(lo, case_bit), hi20 = _mm256_or_si256(hi, case_bit);
  return {bits(lo, hi, '"'), bits(lo, hi, '\\'), bits(lo20, hi20, '{'), bits(lo20, hi20, '}')};
}

// Bit i: the XOR of bits 0..i of `x` (set from an opening quote up to its closing one):
// a carry-less multiplication by all ones where PCLMUL is built in (one instruction for
// the twelve below).
uint64_t prefix_xor(uint64_t x) {
#if defined(__PCLMUL__)
  return uint64_t(_mm_cvtsi128_si64(_mm_clmulepi64_si128(_mm_set_epi64x(0, int64_t(x)), _mm_set1_epi8(-1), 0)));
#else
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
#endif
}
#endif

}  // namespace

// Past a nested value's opening bracket (closers_ holds what closes each level open):
// moves past the bracket that closes it. Strings are skipped as skip_string skips them: a
// quote ends one unless an odd run of backslashes in the string comes before it; outside
// strings only quotes and brackets count.
bool Scanner::skip_nested() {
  bool in_string = false, escaped = false;
  // A bracket outside strings; `at` is its position.
  auto bracket = [&](size_t at) {
    const char c = d_[at];
    if (c == '{' || c == '[') {
      closers_.push_back(c == '{' ? '}' : ']');
      return Step::more;
    }
    if (c != closers_.back()) {
      fail("invalid JSON: mismatched brackets", at);
      return Step::failed;
    }
    closers_.pop_back();
    if (!closers_.empty()) return Step::more;
    p_ = at + 1;
    return Step::closed;
  };
  // Any byte, as the scan's rules say.
  auto step = [&](size_t at) {
    const char c = d_[at];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      return Step::more;
    }
    if (c == '"') in_string = true;
    return kBracketOrQuote[static_cast<unsigned char>(c)] && c != '"' ? bracket(at) : Step::more;
  };
#if defined(__AVX2__)
  // 64 bytes at a time: a block's quotes give its strings, and only the brackets outside
  // them are stepped through. A block with a backslash (rare in traces) is stepped through
  // byte by byte, so that escapes follow the rules above exactly, also outside strings.
  while (n_ - p_ >= 64) {
    if (p_ > give_up_after_) return give_up();
    const BlockMasks m = block_masks(d_ + p_);
    if (m.backslashes || escaped) {
      for (size_t at = p_, end = p_ + 64; at < end; ++at) {
        Step s = step(at);
        if (s != Step::more) return s == Step::closed;
      }
      p_ += 64;
      continue;
    }
    const uint64_t strings = prefix_xor(m.quotes) ^ (in_string ? ~uint64_t(0) : 0);
    for (uint64_t brackets = (m.openers | m.closers) & ~strings; brackets; brackets &= brackets - 1) {
      Step s = bracket(p_ + size_t(std::countr_zero(brackets)));
      if (s != Step::more) return s == Step::closed;
    }
    in_string = strings >> 63;
    p_ += 64;
  }
#endif
  for (; p_ < n_; ++p_) {
    if (p_ > give_up_after_) return give_up();
    Step s = step(p_);
    if (s != Step::more) return s == Step::closed;
  }
  return truncated();
}

// What one segment of the list found (scan_segment).
struct Scanner::Segment {
  std::vector<std::pair<size_t, size_t>> chunks;
  std::vector<size_t> chunk_events;
  size_t end = 0;       // the separator it stopped at
  bool closed = false;  // `end` is the list's ']'
  bool ok = false;
  std::string reason;  // when not ok: message()'s parts
  size_t where = kNowhere;
  bool gave_up = false;  // not ok, having gone past give_up_after_: no verdict
};

// A scan from a guessed separator that goes on far past where it should stop was most
// likely guessed wrong (inside a string, brackets and quotes read the other way round),
// and could otherwise run to the document's end from every segment: it stops, and says
// nothing of the document.
bool Scanner::give_up() {
  gave_up_ = true;
  return fail("gave up", p_);
}

// At traceEvents' '[': records the array's bounds and its chunks, each as long as the
// limit allows but never without an event.
bool Scanner::scan_array(size_t chunk_limit, ChunkPlan& out, size_t segment_bytes) {
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
  if (segment_bytes > 0 && n_ - out.array_begin > 2 * segment_bytes)
    return scan_segments(chunk_limit, out, segment_bytes);
  Segment all;
  if (!scan_segment(out.array_begin, kNowhere, chunk_limit, all)) return false;
  out.chunks = std::move(all.chunks);
  out.chunk_events = std::move(all.chunk_events);
  out.array_end = all.end;
  return true;
}

bool Scanner::plan_rest(size_t separator, size_t chunk_limit, ChunkPlan& out) {
  out.chunks.clear();
  out.chunk_events.clear();
  Segment rest;
  if (!scan_segment(separator, kNowhere, chunk_limit, rest)) return false;
  out.chunks = std::move(rest.chunks);
  out.chunk_events = std::move(rest.chunk_events);
  out.array_end = rest.end;
  return true;
}

// From the separator at `from` (the list's '[' or a ',' between two of its elements): the
// elements up to the first separator at or after `until`, or up to the list's ']', cut
// into chunks of at most `chunk_limit` bytes as scan_array cuts them.
bool Scanner::scan_segment(size_t from, size_t until, size_t chunk_limit, Segment& out) {
  p_ = from + 1;
  skip_ws();
  if (p_ >= n_) return truncated();
  size_t chunk_begin = from, last_separator = from;
  size_t events = 0;  // in the chunk being planned, the one just skipped included
  for (;;) {
    if (d_[p_] == ',' || d_[p_] == ']') return fail("invalid JSON in traceEvents: expected a value", p_);
    if (!skip_value()) return false;
    if (p_ > give_up_after_) return give_up();
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
    if (c == ']' || last_separator >= until) {
      out.chunks.emplace_back(chunk_begin, last_separator);
      out.chunk_events.push_back(events);
      out.end = last_separator;
      out.closed = c == ']';
      out.ok = true;
      return true;
    }
    skip_ws();
    if (p_ >= n_) return truncated();
  }
}

// (trace_scanner.hpp)
size_t Scanner::guess_separator(size_t from, size_t to) const {
  for (size_t at = from; at < to;) {
    const void* found = std::memchr(d_ + at, ',', to - at);
    if (!found) break;
    size_t comma = size_t(static_cast<const char*>(found) - d_);
    size_t before = comma, after = comma + 1;
    while (before > from && is_ws(d_[before - 1])) --before;
    while (after < n_ && is_ws(d_[after])) ++after;
    if (before > from && d_[before - 1] == '}' && after < n_ && d_[after] == '{') return comma;
    at = comma + 1;
  }
  return kNowhere;
}

// scan_array's list in segments scanned concurrently from guessed
// separators, then joined in order: a segment is taken when the one before it stopped at
// its first separator, and scanned again from where that one stopped otherwise.
bool Scanner::scan_segments(size_t chunk_limit, ChunkPlan& out, size_t segment_bytes) {
  const size_t begin = out.array_begin;
  const size_t count = (n_ - begin) / segment_bytes;
  std::vector<size_t> starts{begin};
  for (size_t k = 1; k < count; ++k) {
    size_t bound = begin + k * segment_bytes;
    size_t guess = guess_separator(std::max(bound, starts.back() + 1), std::min(n_, bound + segment_bytes));
    if (guess != kNowhere) starts.push_back(guess);
  }
  auto until = [&](size_t k) { return k + 1 < starts.size() ? starts[k + 1] : kNowhere; };
  // A guessed segment gives up a segment's length past where it should stop; a verified
  // one (the first, or one scanned again) never does.
  auto scan = [&](size_t from, size_t k, Segment& segment, bool guessed) {
    Scanner scanner(d_, n_);
    if (guessed && until(k) != kNowhere) scanner.give_up_after_ = until(k) + segment_bytes;
    if (!scanner.scan_segment(from, until(k), chunk_limit, segment)) {
      segment.reason = scanner.reason_;
      segment.where = scanner.where_;
      segment.gave_up = scanner.gave_up_;
    }
  };
  std::vector<Segment> segments(starts.size());
  for_each_index(starts.size(), [&](size_t k) { scan(starts[k], k, segments[k], k > 0); });
  size_t at = begin;  // where the segments taken so far stopped: a separator of the list
  for (size_t k = 0; k < starts.size(); ++k) {
    // A wrong guess, one the scan before it went past, or one that gave up.
    if (starts[k] != at || segments[k].gave_up) {
      segments[k] = Segment();
      scan(at, k, segments[k], false);
    }
    Segment& segment = segments[k];
    if (!segment.ok) return fail(std::move(segment.reason), segment.where);
    out.chunks.insert(out.chunks.end(), segment.chunks.begin(), segment.chunks.end());
    out.chunk_events.insert(out.chunk_events.end(), segment.chunk_events.begin(), segment.chunk_events.end());
    at = segment.end;
    if (segment.closed) {
      out.array_end = at;
      return true;
    }
  }
  // The last segment stops only at the list's ']' (its `until` is nowhere).
  return fail("internal: the segments of traceEvents did not reach its end", kNowhere);
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
