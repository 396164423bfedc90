// The verifier's reading of ORIGINAL and COMPACTED (document.hpp says what it gives the
// checks).
//
// Reading. simdjson's DOM parses and validates each document, but does not hold every value
// as JSON has it: a DOM number is a double or a 64-bit integer, which cannot hold a Kineto
// timestamp such as 1683564902133354.123 to the nanosecond (nor an integer beyond 64 bits),
// and it will not decode a lone UTF-16 surrogate escape such as \ud800. So every number,
// key and string is taken from its own text instead: the DOM walk visits them in document
// order, and a small scanner over the same bytes yields their tokens in that same order. A
// document whose numbers or escapes the DOM refuses (1e400, \ud800: JSON, and kept by
// compact) is parsed again with stand-ins for them; its DOM then gives only the structure
// and the kinds of values. Each event becomes a *canonical text* (object keys sorted,
// numbers as normalised exact decimals, strings re-escaped one way), which is what "same"
// and "unchanged" compare.
//
// Time. ts and dur also become integer nanoseconds, each rounded from its exact decimal
// half away from zero, and an X event spans [ts, ts + dur] in those. That is how Perfetto
// reads them (llround(us * 1000) for each of ts and dur, the slice ending at their sum) and
// how compact places slices (SPEC 9.1), so two slices that overlap by a fraction of a
// nanosecond only in their decimals touch on a lane, as they do on Perfetto's screen, and two
// that touch in their decimals but overlap once rounded do not share one.
#include "document.hpp"

#include <simdjson.h>

#include <algorithm>
#include <stdexcept>

#include "check.hpp"

namespace tracelane::check {

namespace {

namespace dom = simdjson::dom;
constexpr int64_t kUnitDecimals = 3;
constexpr int64_t kUnitsPerMicrosecond = 1'000;

// ---- Exact decimals ---------------------------------------------------------------------

// value = (negative ? -1 : 1) * digits * 10^exponent; digits has no leading or trailing
// zeros and is empty for zero, so each value has exactly one Decimal.
struct Decimal {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool parse_decimal(std::string_view text, Decimal& out) {
  out = {};
  size_t i = 0, n = text.size();
  if (i < n && text[i] == '-') {
    out.negative = true;
    ++i;
  }
  size_t start = i;
  while (i < n && is_digit(text[i])) ++i;
  if (i == start) return false;
  std::string digits(text.substr(start, i - start));
  int64_t exponent = 0;
  if (i < n && text[i] == '.') {
    size_t fraction = ++i;
    while (i < n && is_digit(text[i])) ++i;
    if (i == fraction) return false;
    digits.append(text.substr(fraction, i - fraction));
    exponent -= int64_t(i - fraction);
  }
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < n && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
    size_t first = i;
    int64_t value = 0;
    for (; i < n && is_digit(text[i]); ++i)
      if (value < 1'000'000'000'000) value = value * 10 + (text[i] - '0');
    if (i == first) return false;
    exponent += negative ? -value : value;
  }
  if (i != n) return false;
  size_t lead = digits.find_first_not_of('0');
  if (lead == std::string::npos) {
    out.negative = false;
    return true;
  }
  size_t last = digits.find_last_not_of('0');
  exponent += int64_t(digits.size() - 1 - last);
  out.digits = digits.substr(lead, last + 1 - lead);
  out.exponent = exponent;
  return true;
}

// One text per value: plain decimal notation within a sane range, else digits "e" exponent.
std::string decimal_text(const Decimal& d) {
  if (d.digits.empty()) return "0";
  std::string s = d.negative ? "-" : "";
  int64_t n = int64_t(d.digits.size()), e = d.exponent;
  if (e >= 0 && n + e <= 40) {
    s += d.digits;
    s.append(size_t(e), '0');
  } else if (e < 0 && n + e > 0) {
    s += d.digits.substr(0, size_t(n + e));
    s += '.';
    s += d.digits.substr(size_t(n + e));
  } else if (e < 0 && -(n + e) <= 20) {
    s += "0.";
    s.append(size_t(-(n + e)), '0');
    s += d.digits;
  } else {
    s += d.digits;
    s += 'e';
    s += std::to_string(e);
  }
  return s;
}

// Whole nanoseconds; a value with more decimals is rounded half away from zero and counted.
std::optional<Units> to_units(const Decimal& d, uint64_t& inexact) {
  if (d.digits.empty()) return Units(0);
  int64_t shift = d.exponent + kUnitDecimals;
  std::string_view digits = d.digits;
  bool round_up = false;
  if (shift < 0) {
    ++inexact;
    int64_t kept = int64_t(digits.size()) + shift;
    if (kept < 0) return Units(0);
    round_up = digits[size_t(kept)] >= '5';
    digits = digits.substr(0, size_t(kept));
    shift = 0;
  }
  if (int64_t(digits.size()) + shift > 36) return std::nullopt;  // beyond __int128
  Units v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  for (int64_t k = 0; k < shift; ++k) v *= 10;
  if (round_up) ++v;
  return d.negative ? -v : v;
}

}  // namespace

std::string units_text(Units v) {
  std::string s;
  bool negative = v < 0;
  if (negative) v = -v;
  Units whole = v / kUnitsPerMicrosecond;
  int64_t fraction = int64_t(v % kUnitsPerMicrosecond);
  do {
    s.insert(s.begin(), char('0' + int(whole % 10)));
    whole /= 10;
  } while (whole > 0);
  if (fraction) {
    std::string f = std::to_string(fraction);
    f.insert(0, size_t(kUnitDecimals) - f.size(), '0');
    f.erase(f.find_last_not_of('0') + 1);
    s += '.' + f;
  }
  return negative ? "-" + s : s;
}

namespace {

// ---- Canonical text -----------------------------------------------------------------------

// The string and number tokens of a JSON text in order (strings with their quotes). Outside
// strings, true, false, null and structure hold no quote, digit or '-', so in a document the
// DOM has validated these are exactly its keys, strings and numbers. Text that is not JSON
// gives some tokens and never a read past its end.
class Tokens {
 public:
  explicit Tokens(std::string_view json) : json_(json) {}
  std::string_view next() {
    size_t n = json_.size();
    while (at_ < n && json_[at_] != '"' && json_[at_] != '-' && !is_digit(json_[at_])) ++at_;
    size_t start = at_;
    if (at_ == n) return {};
    if (json_[at_] == '"') {
      for (++at_; at_ < n && json_[at_] != '"'; ++at_)
        if (json_[at_] == '\\') ++at_;
      at_ = std::min(at_ + 1, n);
    } else {
      while (at_ < n && (is_digit(json_[at_]) || json_[at_] == '-' || json_[at_] == '+' || json_[at_] == '.' ||
                         json_[at_] == 'e' || json_[at_] == 'E'))
        ++at_;
    }
    return json_.substr(start, at_ - start);
  }

 private:
  std::string_view json_;
  size_t at_ = 0;
};

bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

uint32_t hex_value(std::string_view four) {
  uint32_t v = 0;
  for (char c : four) v = v * 16 + uint32_t(is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
  return v;
}

bool surrogate(uint32_t code) { return code >= 0xd800 && code <= 0xdfff; }

// UTF-8, generalised to surrogates (WTF-8): a lone one is three bytes like any code point.
void append_utf8(uint32_t code, std::string& out) {
  if (code < 0x80) {
    out += char(code);
  } else if (code < 0x800) {
    out += char(0xc0 | (code >> 6));
    out += char(0x80 | (code & 0x3f));
  } else if (code < 0x10000) {
    out += char(0xe0 | (code >> 12));
    out += char(0x80 | ((code >> 6) & 0x3f));
    out += char(0x80 | (code & 0x3f));
  } else {
    out += char(0xf0 | (code >> 18));
    out += char(0x80 | ((code >> 12) & 0x3f));
    out += char(0x80 | ((code >> 6) & 0x3f));
    out += char(0x80 | (code & 0x3f));
  }
}

// The string a JSON string token (quotes included, valid JSON) stands for. A lone UTF-16
// surrogate escape such as \ud800, which JSON allows, compact keeps and simdjson will not
// decode, becomes its WTF-8 bytes, so it compares as what it is and never as \ufffd.
std::string unescape(std::string_view token) {
  std::string_view raw = token.substr(1, token.size() - 2);
  if (raw.find('\\') == std::string_view::npos) return std::string(raw);
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\') {
      out += raw[i];
      continue;
    }
    char c = raw[++i];
    if (c != 'u') {
      out += c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c;
      continue;
    }
    uint32_t code = hex_value(raw.substr(i + 1, 4));
    i += 4;
    bool pair = code >= 0xd800 && code < 0xdc00 && raw.substr(i + 1, 2) == "\\u";
    uint32_t low = pair ? hex_value(raw.substr(i + 3, 4)) : 0;
    if (low >= 0xdc00 && low <= 0xdfff) {
      code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
      i += 6;
    }
    append_utf8(code, out);
  }
  return out;
}

void append_string(std::string_view s, std::string& out) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += char(c);
    }
  }
  out += '"';
}

using Fields = std::vector<std::pair<std::string, std::string>>;  // key, canonical value

void sort_fields(Fields& fields) {
  std::stable_sort(fields.begin(), fields.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
}

std::string join_fields(const Fields& fields, std::string_view skip = {}) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : fields) {
    if (!skip.empty() && key == skip) continue;
    if (!first) out += ',';
    first = false;
    append_string(key, out);
    out += ':';
    out += value;
  }
  out += '}';
  return out;
}

class Canonicalizer {
 public:
  Canonicalizer(std::string_view json, uint64_t& inexact) : tokens_(json), inexact_(inexact) {}

  // The next key or string of the document, read from its text.
  std::string string() { return unescape(next_token(true)); }

  // Appends the canonical text of `e`; `unescaped` gets a string value itself.
  void value(dom::element e, std::string& out, std::string* unescaped = nullptr) {
    switch (e.type()) {
      case dom::element_type::OBJECT: {
        Fields fields;
        for (dom::key_value_pair field : dom::object(e)) {
          std::string key = string(), v;
          value(field.value, v);
          fields.emplace_back(std::move(key), std::move(v));
        }
        sort_fields(fields);
        out += join_fields(fields);
        break;
      }
      case dom::element_type::ARRAY: {
        out += '[';
        bool first = true;
        for (dom::element item : dom::array(e)) {
          if (!first) out += ',';
          first = false;
          value(item, out);
        }
        out += ']';
        break;
      }
      case dom::element_type::STRING: {
        std::string s = string();
        append_string(s, out);
        if (unescaped) *unescaped = std::move(s);
        break;
      }
      case dom::element_type::INT64:
      case dom::element_type::UINT64:
      case dom::element_type::DOUBLE: {
        std::string_view text = next_token(false);
        Decimal d;
        bool integer = e.type() != dom::element_type::DOUBLE;
        if (!parse_decimal(text, d) || (integer && text.find_first_of(".eE") != std::string_view::npos)) out_of_step();
        out += decimal_text(d);
        break;
      }
      case dom::element_type::BOOL: {
        bool b = false;
        if (e.get_bool().get(b) != simdjson::SUCCESS) b = false;
        out += b ? "true" : "false";
        break;
      }
      case dom::element_type::NULL_VALUE:
        out += "null";
        break;
    }
  }

  // The nanoseconds of a canonical number text of microseconds.
  std::optional<Units> units(const std::string& canonical) {
    Decimal d;
    if (!parse_decimal(canonical, d)) return std::nullopt;
    return to_units(d, inexact_);
  }

  void finish() {
    if (!tokens_.next().empty()) out_of_step();
  }

 private:
  std::string_view next_token(bool string) {
    std::string_view token = tokens_.next();
    if (token.empty() || (token[0] == '"') != string) out_of_step();
    return token;
  }
  [[noreturn]] static void out_of_step() {
    throw std::logic_error("internal error: the text's tokens out of step with the parsed document");
  }

  Tokens tokens_;
  uint64_t& inexact_;
};

// ---- Events -------------------------------------------------------------------------------

Event read_event(dom::element element, Canonicalizer& canonical) {
  Event ev;
  if (element.type() != dom::element_type::OBJECT) {
    canonical.value(element, ev.canon);
    return ev;
  }
  ev.object = true;
  Fields fields;
  for (dom::key_value_pair field : dom::object(element)) {
    std::string key = canonical.string();
    std::string v, text;  // text: the value itself when it is a string
    if (key == "args" && field.value.type() == dom::element_type::OBJECT) {
      Fields args;
      for (dom::key_value_pair arg : dom::object(field.value)) {
        std::string arg_key = canonical.string(), a;
        canonical.value(arg.value, a);
        args.emplace_back(std::move(arg_key), std::move(a));
      }
      sort_fields(args);
      v = join_fields(args);
      ev.args_no_stream = join_fields(args, "stream");
    } else {
      canonical.value(field.value, v, &text);
      if (key == "args") ev.args_no_stream = v;
    }
    bool is_number = field.value.is_number();
    if (key == "name") ev.name = text;
    if (key == "cat") ev.cat = text;
    if (key == "ph") ev.ph = text;
    if (key == "pid") ev.pid = v;
    if (key == "tid") ev.tid = v;
    if (key == "ts") {
      ev.ts_text = v;
      ev.ts = is_number ? canonical.units(v) : std::nullopt;
    }
    if (key == "dur") {
      ev.dur_text = v;
      ev.dur = is_number ? canonical.units(v) : std::nullopt;
    }
    fields.emplace_back(std::move(key), std::move(v));
  }
  sort_fields(fields);
  ev.canon = join_fields(fields);
  if (flow(ev)) ev.flow_key = join_fields(fields, "tid");
  return ev;
}

// Whether `token` is a number by JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool json_number(std::string_view token) {
  size_t i = 0, n = token.size();
  auto digits = [&] {
    size_t start = i;
    while (i < n && is_digit(token[i])) ++i;
    return i > start;
  };
  if (i < n && token[i] == '-') ++i;
  if (i < n && token[i] == '0')
    ++i;
  else if (!digits())
    return false;
  if (i < n && token[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < n && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    if (i < n && (token[i] == '+' || token[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == n;
}

// A string token with \ufffd for every UTF-16 surrogate escape, paired or not.
void append_string_stand_in(std::string_view token, std::string& out) {
  for (size_t i = 0; i < token.size(); ++i) {
    std::string_view escape = token.substr(i, 6);
    if (escape.size() == 6 && escape[0] == '\\' && escape[1] == 'u' && is_hex(escape[2]) && is_hex(escape[3]) &&
        is_hex(escape[4]) && is_hex(escape[5]) && surrogate(hex_value(escape.substr(2)))) {
      out += "\\ufffd";
      i += 5;
    } else if (token[i] == '\\' && i + 1 < token.size()) {
      out += token.substr(i++, 2);  // an escaped backslash does not start an escape
    } else {
      out += token[i];
    }
  }
}

// A copy of `json` that simdjson's DOM accepts wherever JSON does. The DOM refuses integers
// beyond 64 bits, numbers beyond a double's range and lone UTF-16 surrogate escapes, all of
// which JSON allows and compact keeps: every number becomes 0 (an integer) or 0.0, and every
// surrogate escape \ufffd. Tokens keep their order and kind, and text that is not JSON stays
// as it was, so the copy is JSON exactly when `json` is.
std::string with_stand_ins(std::string_view json) {
  std::string out;
  out.reserve(json.size() + simdjson::SIMDJSON_PADDING);  // no token grows: parsed in place
  Tokens tokens(json);
  size_t copied = 0;
  for (std::string_view token = tokens.next(); !token.empty(); token = tokens.next()) {
    size_t at = size_t(token.data() - json.data());
    out.append(json.substr(copied, at - copied));
    copied = at + token.size();
    if (token[0] == '"')
      append_string_stand_in(token, out);
    else if (json_number(token))
      out += token.find_first_of(".eE") == std::string_view::npos ? "0" : "0.0";
    else
      out.append(token);
  }
  out.append(json.substr(copied));
  return out;
}

// The document's structure. Its numbers and strings are read from the text (Canonicalizer),
// so when the DOM refuses one, the document is parsed again with stand-ins.
dom::element parse_structure(dom::parser& parser, std::string_view json, bool compacted) {
  dom::element root;
  auto error = parser.parse(json.data(), json.size()).get(root);
  std::string stand_ins;
  if (error == simdjson::NUMBER_ERROR || error == simdjson::STRING_ERROR) {
    stand_ins = with_stand_ins(json);
    error = parser.parse(stand_ins).get(root);
  }
  if (error) throw CheckInputError(compacted, std::string("not valid JSON: ") + simdjson::error_message(error));
  return root;
}

}  // namespace

Document read_document(std::string_view json, bool compacted, uint64_t& inexact) {
  dom::parser parser;  // one per document; the DOM is dropped once the events are read
  dom::element root = parse_structure(parser, json, compacted);
  Document doc;
  Canonicalizer canonical(json, inexact);
  if (root.type() == dom::element_type::ARRAY) {  // the JSON Array Format: the list of events
    for (dom::element e : dom::array(root)) doc.events.push_back(read_event(e, canonical));
    canonical.finish();
    return doc;
  }
  if (root.type() != dom::element_type::OBJECT)
    throw CheckInputError(compacted, "not a trace: the top level is neither an object nor a list");
  bool seen = false;
  for (dom::key_value_pair field : dom::object(root)) {
    std::string key = canonical.string();
    if (key == "traceEvents" && !seen) {
      if (field.value.type() != dom::element_type::ARRAY)
        throw CheckInputError(compacted, "not a trace: traceEvents is not an array");
      seen = true;
      for (dom::element e : dom::array(field.value)) doc.events.push_back(read_event(e, canonical));
    } else {
      std::string v;
      canonical.value(field.value, v);
      doc.top.emplace_back(std::move(key), std::move(v));
    }
  }
  if (!seen) throw CheckInputError(compacted, "not a trace: no traceEvents array");
  canonical.finish();
  return doc;
}

}  // namespace tracelane::check
