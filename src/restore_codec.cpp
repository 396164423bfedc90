// The restore record's shared pieces, as restore_codec.hpp describes them, and XXH64 (the
// hash tracelane/restore.hpp declares; a record holds the original's and the output's).
#include "restore_codec.hpp"

#include <array>
#include <cstring>
#include <unordered_map>

#include "tracelane/restore.hpp"

namespace tracelane::restore_codec {

// kShiftedAgain: shifted as much as the last shifted number of this event ("tid": 22 and
// "stream 22" of a thread_name move together).
enum TokenCode : uint8_t { kSameToken = 0, kShiftedToken = 1, kTextToken = 2, kShiftedAgain = 3 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(v | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}
uint64_t zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
int64_t unzigzag(uint64_t v) { return int64_t(v >> 1) ^ -int64_t(v & 1); }
void put_text(std::string& out, std::string_view text) {
  put_varint(out, text.size());
  out += text;
}
void put_fixed(std::string& out, uint64_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) out.push_back(char(v >> (8 * k)));
}

// A text's lines, each with its '\n' (the last may lack one).
static std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}
void put_diff(std::string& out, std::string_view original, std::string_view output) {
  std::vector<std::string_view> mine = lines_of(original), theirs = lines_of(output);
  std::unordered_map<std::string_view, std::vector<size_t>> where;
  for (size_t j = 0; j < theirs.size(); ++j) where[theirs[j]].push_back(j);
  std::string ops;
  size_t count = 0, next = 0;  // `next`: the output line after the last run
  for (size_t i = 0; i < mine.size();) {
    auto it = where.find(mine[i]);
    if (it == where.end()) {
      put_varint(ops, (1u << 1) | 1);  // one line of its own
      put_text(ops, mine[i]);
      ++i, ++count;
      continue;
    }
    // The longest run among the places this line occurs (the first few), `next` first.
    size_t best_at = it->second.front(), best_length = 0;
    auto try_at = [&](size_t j) {
      size_t n = 0;
      while (i + n < mine.size() && j + n < theirs.size() && mine[i + n] == theirs[j + n]) ++n;
      if (n > best_length) best_at = j, best_length = n;
    };
    if (next < theirs.size() && theirs[next] == mine[i]) try_at(next);
    for (size_t k = 0; k < it->second.size() && k < 8; ++k) try_at(it->second[k]);
    put_varint(ops, best_length << 1);
    put_varint(ops, zigzag(int64_t(best_at) - int64_t(next)));
    i += best_length, next = best_at + best_length, ++count;
  }
  put_varint(out, count);
  put_text(out, ops);
}
// `out` never grows beyond `limit` bytes (the original's length): a crafted record of a
// few KB could otherwise ask for the output's head a million times over.
void apply_diff(std::string& out, Reader& in, std::string_view output, uint64_t limit) {
  std::vector<std::string_view> theirs = lines_of(output);
  uint64_t count = in.varint();
  Reader ops(in.text(), in.where());
  size_t next = 0;
  auto append = [&](std::string_view piece) {
    if (piece.size() > limit || out.size() > limit - piece.size())
      in.fail("a diff rebuilds more than the original's length");
    out.append(piece);
  };
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t op = ops.varint();
    if (op & 1) {  // n lines of its own (each read consumes ops: the loop ends with them)
      for (uint64_t n = op >> 1; n > 0; --n) append(ops.text());
      continue;
    }
    uint64_t at = uint64_t(next) + uint64_t(unzigzag(ops.varint()));  // wraps, then is range-checked
    uint64_t length = op >> 1;
    if (at > theirs.size() || length > theirs.size() - at) in.fail("a diff reaches past the output's text");
    for (uint64_t n = 0; n < length; ++n) append(theirs[size_t(at + n)]);
    next = size_t(at + length);
  }
  if (!ops.done()) in.fail("a diff has bytes left over");
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
void tokenize(std::string_view text, std::vector<std::string_view>& tokens) {
  tokens.clear();
  for (size_t i = 0; i < text.size();) {
    size_t start = i;
    if (is_digit(text[i])) {
      while (i < text.size() && is_digit(text[i])) ++i;
      if (i + 1 < text.size() && text[i] == '.' && is_digit(text[i + 1]))
        for (++i; i < text.size() && is_digit(text[i]);) ++i;
    } else {
      while (i < text.size() && !is_digit(text[i])) ++i;
    }
    tokens.push_back(text.substr(start, i - start));
  }
}
// A number token as mantissa / 10^decimals. At most 18 digits, so any two differ by less
// than 2^63.
bool as_decimal(std::string_view token, int64_t& mantissa, int& decimals) {
  if (token.empty() || !is_digit(token[0])) return false;
  size_t point = token.find('.');
  decimals = point == std::string_view::npos ? 0 : int(token.size() - point - 1);
  if (token.size() - (decimals ? 1 : 0) > 18) return false;
  mantissa = 0;
  for (char c : token)
    if (c != '.') mantissa = mantissa * 10 + (c - '0');
  return true;
}
std::string decimal_text(int64_t mantissa, int decimals) {
  std::string digits = std::to_string(mantissa);
  if (digits.size() <= size_t(decimals)) digits.insert(0, size_t(decimals) + 1 - digits.size(), '0');
  if (decimals) digits.insert(digits.size() - size_t(decimals), 1, '.');
  return digits;
}
// `token` written as a shift of `reference`, when it can be.
static bool shift_between(std::string_view reference, std::string_view token, int64_t& shift) {
  int64_t a = 0, b = 0;
  int da = 0, db = 0;
  if (!as_decimal(reference, a, da) || !as_decimal(token, b, db) || da != db) return false;
  shift = b - a;
  return decimal_text(b, db) == token;  // no leading zeros to lose
}
size_t varint_size(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

// The cost in bytes of writing `mine` against `reference`, or SIZE_MAX when it cannot be.
size_t removed_cost(const std::vector<std::string_view>& reference, const std::vector<std::string_view>& mine) {
  if (reference.size() != mine.size()) return SIZE_MAX;
  size_t cost = 0;
  int64_t last_shift = 0;
  for (size_t t = 0; t < mine.size(); ++t) {
    int64_t shift = 0;
    if (reference[t] == mine[t])
      cost += 1;
    else if (shift_between(reference[t], mine[t], shift))
      cost += 1 + (shift == last_shift ? 0 : varint_size(zigzag(shift))), last_shift = shift;
    else
      cost += 1 + varint_size(mine[t].size()) + mine[t].size();
  }
  return cost;
}
void put_removed(std::string& out, const std::vector<std::string_view>& reference,
                 const std::vector<std::string_view>& mine) {
  int64_t last_shift = 0;
  for (size_t t = 0; t < mine.size(); ++t) {
    int64_t shift = 0;
    if (reference[t] == mine[t]) {
      out.push_back(char(kSameToken));
    } else if (shift_between(reference[t], mine[t], shift)) {
      out.push_back(char(shift == last_shift ? kShiftedAgain : kShiftedToken));
      if (shift != last_shift) put_varint(out, zigzag(shift));
      last_shift = shift;
    } else {
      out.push_back(char(kTextToken));
      put_text(out, mine[t]);
    }
  }
}
void apply_removed(std::string& out, Reader& in, std::string_view reference) {
  std::vector<std::string_view> tokens;
  tokenize(reference, tokens);
  std::string text;
  int64_t last_shift = 0;
  for (std::string_view token : tokens) {
    uint8_t code = in.byte();
    if (code == kSameToken) {
      text.append(token);
    } else if (code == kShiftedToken || code == kShiftedAgain) {
      int64_t mantissa = 0;
      int decimals = 0;
      if (!as_decimal(token, mantissa, decimals)) in.fail("a removed event shifts a token that is not a number");
      int64_t shift = code == kShiftedAgain ? last_shift : unzigzag(in.varint());
      last_shift = shift;
      if (shift < -mantissa || shift > kMaxDecimal - mantissa) in.fail("a removed event's number is out of range");
      text.append(decimal_text(mantissa + shift, decimals));
    } else if (code == kTextToken) {
      text.append(in.text());
    } else {
      in.fail("unknown token code " + std::to_string(code));
    }
  }
  out += text;  // `reference` may point into `out`
}

const char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void append_base64(std::string& out, std::string_view bytes) {
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 | uint8_t(bytes[i + 2]);
    for (int k = 3; k >= 0; --k) out.push_back(kBase64[(v >> (6 * k)) & 63]);
  }
  if (size_t rest = bytes.size() - i) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | (rest == 2 ? uint32_t(uint8_t(bytes[i + 1])) << 8 : 0);
    out.push_back(kBase64[(v >> 18) & 63]);
    out.push_back(kBase64[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kBase64[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
}

bool decode_base64(std::string_view text, std::string& out) {
  static const std::array<int8_t, 256> value = [] {
    std::array<int8_t, 256> v;
    v.fill(-1);
    for (int k = 0; k < 64; ++k) v[uint8_t(kBase64[k])] = int8_t(k);
    return v;
  }();
  if (text.size() % 4) return false;
  out.clear();
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int pad = (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=');
    if (pad && i + 4 != text.size()) return false;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      int8_t d = k >= 4 - pad ? 0 : value[uint8_t(text[i + k])];
      if (d < 0) return false;
      v = v << 6 | uint32_t(d);
    }
    out.push_back(char(v >> 16));
    if (pad < 2) out.push_back(char(v >> 8));
    if (pad < 1) out.push_back(char(v));
  }
  return true;
}

void put_header(std::string& out, const RecordHeader& h) {
  put_varint(out, h.version);
  put_varint(out, h.original_bytes);
  put_fixed(out, h.crc, 4);
  put_fixed(out, h.hash, 8);
  put_fixed(out, h.covered, 8);
  put_varint(out, zigzag(h.global_rank));
  put_text(out, h.name_prefix);
  put_varint(out, zigzag(h.offset_ns));
  put_varint(out, h.output_events);
}

RecordHeader read_header(Reader& in) {
  RecordHeader h;
  h.version = in.varint();
  if (h.version != 1 && h.version != kFormatVersion)
    in.fail("format version " + std::to_string(h.version) + " (this tracelane reads 1 to " +
            std::to_string(kFormatVersion) + ")");
  h.original_bytes = in.varint();
  h.crc = uint32_t(in.fixed(4));
  h.hash = in.fixed(8);
  h.covered = in.fixed(8);
  h.global_rank = unzigzag(in.varint());
  h.name_prefix = in.text();
  h.offset_ns = unzigzag(in.varint());
  h.output_events = in.varint();
  return h;
}

std::string_view key_pattern() {
  static const std::string pattern = std::string(", \"") + kRestoreKey + "\": [";
  return pattern;
}

}  // namespace tracelane::restore_codec

namespace tracelane {

namespace {

using namespace restore_codec;

constexpr uint64_t P1 = 11400714785074694791ULL, P2 = 14029467366897019727ULL, P3 = 1609587929392839161ULL,
                   P4 = 9650029242287828579ULL, P5 = 2870177450012600261ULL;
uint64_t xxh_round(uint64_t acc, uint64_t input) { return rotl(acc + input * P2, 31) * P1; }
uint64_t xxh_merge(uint64_t acc, uint64_t v) { return (acc ^ xxh_round(0, v)) * P1 + P4; }

}  // namespace

Xxhash64::Xxhash64(uint64_t seed) : v_{seed + P1 + P2, seed + P2, seed, seed - P1}, seed_(seed) {}

void Xxhash64::update(std::string_view bytes) {
  if (bytes.empty()) return;  // a default view's data() is null: no memcpy from it
  const char* p = bytes.data();
  const char* end = p + bytes.size();
  total_ += bytes.size();
  auto stripe = [&](const char* s) {
    v_[0] = xxh_round(v_[0], read64(s));
    v_[1] = xxh_round(v_[1], read64(s + 8));
    v_[2] = xxh_round(v_[2], read64(s + 16));
    v_[3] = xxh_round(v_[3], read64(s + 24));
  };
  if (buffered_ > 0) {
    size_t take = std::min(size_t(end - p), 32 - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    if (buffered_ < 32) return;
    stripe(buffer_);
    buffered_ = 0;
  }
  for (; p + 32 <= end; p += 32) stripe(p);
  std::memcpy(buffer_, p, size_t(end - p));
  buffered_ = size_t(end - p);
}

uint64_t Xxhash64::digest() const {
  uint64_t h;
  if (total_ >= 32) {
    h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
    h = xxh_merge(xxh_merge(xxh_merge(xxh_merge(h, v_[0]), v_[1]), v_[2]), v_[3]);
  } else {
    h = seed_ + P5;
  }
  h += total_;
  const char* p = buffer_;
  const char* end = buffer_ + buffered_;
  for (; p + 8 <= end; p += 8) h = rotl(h ^ xxh_round(0, read64(p)), 27) * P1 + P4;
  if (p + 4 <= end) {
    h = rotl(h ^ (uint64_t(read32(p)) * P1), 23) * P2 + P3;
    p += 4;
  }
  for (; p < end; ++p) h = rotl(h ^ (uint64_t(uint8_t(*p)) * P5), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

uint64_t xxhash64(std::string_view bytes, uint64_t seed) {
  Xxhash64 hash(seed);
  hash.update(bytes);
  return hash.digest();
}

}  // namespace tracelane
