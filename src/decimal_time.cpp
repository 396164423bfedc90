#include "tracelane/decimal_time.hpp"

#include <charconv>
#include <limits>

namespace tracelane {

bool parse_json_int(std::string_view token, int64_t& value) {
  size_t i = 0;
  bool negative = false;
  if (i < token.size() && token[i] == '-') negative = true, ++i;
  if (i == token.size()) return false;
  if (token[i] == '0' && token.size() > i + 1) return false;  // JSON forbids leading zeros
  unsigned __int128 magnitude = 0;
  for (; i < token.size(); ++i) {
    char c = token[i];
    if (c < '0' || c > '9') return false;
    magnitude = magnitude * 10 + unsigned(c - '0');
    if (magnitude > (unsigned __int128)std::numeric_limits<int64_t>::max() + 1) return false;
  }
  if (!negative && magnitude > (unsigned __int128)std::numeric_limits<int64_t>::max()) return false;
  value = negative ? int64_t(-(__int128)magnitude) : int64_t(magnitude);
  return true;
}

namespace {

// The form nearly every time in a trace has, "[-]digits[.ddd]" with at most 15 digits
// before the point and 1 to 3 after it: exact in int64, read without the general path's
// 128-bit arithmetic (which gives the same nanoseconds for it). False for anything else,
// which the general path then reads or refuses.
bool parse_usual_us_as_ns(std::string_view token, int64_t& ns) {
  const size_t n = token.size(), first = n > 0 && token[0] == '-' ? 1 : 0;
  auto digit = [&](size_t at) { return at < n && unsigned(token[at] - '0') < 10; };
  size_t i = first;
  int64_t whole = 0;
  for (; digit(i) && i - first < 16; ++i) whole = whole * 10 + (token[i] - '0');
  const size_t whole_digits = i - first;
  if (whole_digits == 0 || whole_digits > 15 || (token[first] == '0' && whole_digits > 1)) return false;
  int64_t fraction = 0;
  size_t fraction_digits = 0;
  if (i < n && token[i] == '.') {
    for (++i; digit(i) && fraction_digits < 4; ++i, ++fraction_digits) fraction = fraction * 10 + (token[i] - '0');
    if (fraction_digits == 0 || fraction_digits > 3) return false;
  }
  if (i != n) return false;
  static constexpr int64_t kScale[] = {1000, 100, 10, 1};
  const int64_t magnitude = whole * 1000 + fraction * kScale[fraction_digits];
  ns = first ? -magnitude : magnitude;
  return true;
}

}  // namespace

bool parse_us_as_ns(std::string_view token, int64_t& ns) {
  if (parse_usual_us_as_ns(token, ns)) return true;
  size_t i = 0, n = token.size();
  bool negative = false;
  if (i < n && token[i] == '-') negative = true, ++i;
  if (i == n || token[i] < '0' || token[i] > '9') return false;
  if (token[i] == '0' && i + 1 < n && token[i + 1] >= '0' && token[i + 1] <= '9') return false;
  // Collect significant digits into a mantissa; beyond 36 digits only the exponent matters.
  unsigned __int128 mantissa = 0;
  int digits = 0;
  int64_t exponent10 = 0;  // value = mantissa * 10^exponent10 (in µs)
  bool dropped_nonzero = false;
  auto take = [&](char c, bool fractional) {
    if (digits < 36) {
      mantissa = mantissa * 10 + unsigned(c - '0');
      if (mantissa) ++digits;
      if (fractional) --exponent10;
    } else {
      if (!fractional) ++exponent10;
      if (c != '0') dropped_nonzero = true;
    }
  };
  for (; i < n && token[i] >= '0' && token[i] <= '9'; ++i) take(token[i], false);
  if (i < n && token[i] == '.') {
    ++i;
    if (i == n || token[i] < '0' || token[i] > '9') return false;
    for (; i < n && token[i] >= '0' && token[i] <= '9'; ++i) take(token[i], true);
  }
  if (i < n && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < n && (token[i] == '+' || token[i] == '-')) exp_negative = token[i] == '-', ++i;
    if (i == n || token[i] < '0' || token[i] > '9') return false;
    int64_t e = 0;
    for (; i < n && token[i] >= '0' && token[i] <= '9'; ++i) {
      e = e * 10 + (token[i] - '0');
      if (e > 100000) e = 100000;
    }
    exponent10 += exp_negative ? -e : e;
  }
  if (i != n) return false;
  exponent10 += 3;  // µs -> ns
  constexpr unsigned __int128 limit = (unsigned __int128)std::numeric_limits<int64_t>::max() + 1;
  if (mantissa == 0) {
    ns = 0;
    return true;
  }
  if (exponent10 >= 0) {
    for (int64_t k = 0; k < exponent10; ++k) {
      mantissa *= 10;
      if (mantissa > limit) return false;
    }
  } else {
    if (exponent10 < -40) {
      mantissa = 0;  // far below a nanosecond
    } else {
      unsigned __int128 divisor = 1;
      for (int64_t k = 0; k < -exponent10; ++k) divisor *= 10;
      unsigned __int128 quotient = mantissa / divisor, remainder = mantissa % divisor;
      // Half away from zero; a dropped nonzero digit past 36 only matters at exactly half.
      if (remainder * 2 > divisor || (remainder * 2 == divisor)) ++quotient;
      (void)dropped_nonzero;
      mantissa = quotient;
    }
  }
  if (mantissa > limit || (!negative && mantissa == limit)) return false;
  ns = negative ? int64_t(-(__int128)mantissa) : int64_t(mantissa);
  return true;
}

void append_ns_as_us(std::string& out, int64_t ns) {
  // In 64 bits (|INT64_MIN| is 2^63, which uint64 holds), written into a buffer and
  // appended once: every changed time is written this way (in a merge, every event's ts of
  // each rank with a clock offset), and 128-bit division and a string a number cost 3% of
  // the 8 x 60 MB merge's CPU.
  const uint64_t magnitude = ns < 0 ? 0 - uint64_t(ns) : uint64_t(ns);
  const uint64_t whole = magnitude / 1000, frac = magnitude % 1000;
  char text[32];  // '-', at most 16 digits (2^63 / 1000), '.', 3 digits
  char* end = text;
  if (ns < 0) *end++ = '-';
  end = std::to_chars(end, text + sizeof text, whole).ptr;
  if (frac) {
    *end++ = '.';
    *end++ = char('0' + frac / 100);
    if (frac % 100) *end++ = char('0' + frac / 10 % 10);
    if (frac % 10) *end++ = char('0' + frac % 10);
  }
  out.append(text, size_t(end - text));
}

std::string ns_as_us(int64_t ns) {
  std::string out;
  append_ns_as_us(out, ns);
  return out;
}

}  // namespace tracelane
