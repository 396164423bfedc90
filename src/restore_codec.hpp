// The restore record's byte-level pieces (restore.cpp writes and reads the record with
// them): varints and texts, a bounds-checked reader, line diffs of the head and tail,
// removed events as near copies of earlier ones, base64. Private to the core library.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tracelane/trace.hpp"

namespace tracelane::restore_codec {

// Inline: XXH64 calls them for every 8 bytes of an output (an out-of-line call each made
// it ~1 GB/s, on the streamed write's serial stage).
inline uint32_t read32(const char* p) {  // little-endian machines only (x86-64, aarch64),
  uint32_t v;                            // as XXH64 defines it
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t read64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
void put_varint(std::string& out, uint64_t v);
size_t varint_size(uint64_t v);
uint64_t zigzag(int64_t v);
int64_t unzigzag(uint64_t v);
void put_text(std::string& out, std::string_view text);   // its length, then the bytes
void put_fixed(std::string& out, uint64_t v, int bytes);  // little-endian

// Reads what put_* wrote; every overrun is a damaged record.
class Reader {
 public:
  Reader(std::string_view data, const std::string& where) : data_(data), where_(where) {}
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) fail("truncated");
      uint8_t byte = uint8_t(data_[pos_++]);
      v |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
    fail("a number is too long");
  }
  std::string_view text() {
    uint64_t n = varint();
    if (n > data_.size() - pos_) fail("truncated text");
    std::string_view t = data_.substr(pos_, n);
    pos_ += n;
    return t;
  }
  uint64_t fixed(int bytes) {
    if (size_t(bytes) > data_.size() - pos_) fail("truncated");
    uint64_t v = 0;
    for (int k = 0; k < bytes; ++k) v |= uint64_t(uint8_t(data_[pos_ + k])) << (8 * k);
    pos_ += bytes;
    return v;
  }
  uint8_t byte() { return uint8_t(fixed(1)); }
  bool done() const { return pos_ == data_.size(); }
  const std::string& where() const { return where_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(where_ + " is damaged: " + what + " at byte " + std::to_string(pos_) + " of its decompressed data");
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  const std::string& where_;
};

// head/tail of the original as a diff against the output's, line by line: runs of the
// output's lines (each run where the last one ended, or elsewhere) and lines of its own. A
// merged output's head is one rank's top level with a few keys replaced, so a rank's own
// head is mostly runs of it.
void put_diff(std::string& out, std::string_view original, std::string_view output);
// `out` never grows beyond `limit` bytes (the original's length): a crafted record of a
// few KB could otherwise ask for the output's head a million times over.
void apply_diff(std::string& out, Reader& in, std::string_view output, uint64_t limit);

// A removed event (a coalesced duplicate annotation, a merged rank's metadata) is nearly
// a copy of an event shortly before it: the same keys and names, other times and ids. It is
// written as such a copy: the texts of both are cut into tokens (plain decimal numbers and
// the text between them), and each token of the reference is kept, shifted (a number: the
// difference of the two read as integers with the same count of decimals) or replaced by
// text. The reference is one of the kRemovedWindow originals before it, the one whose
// tokens it matches at least cost; an event no reference fits is kept as text.
constexpr size_t kRemovedWindow = 64;
// Cut into plain decimal numbers and the text between them.
void tokenize(std::string_view text, std::vector<std::string_view>& tokens);
// The cost in bytes of writing `mine` against `reference`, or SIZE_MAX when it cannot be.
size_t removed_cost(const std::vector<std::string_view>& reference, const std::vector<std::string_view>& mine);
void put_removed(std::string& out, const std::vector<std::string_view>& reference,
                 const std::vector<std::string_view>& mine);
void apply_removed(std::string& out, Reader& in, std::string_view reference);

inline constexpr int64_t kMaxDecimal = 999'999'999'999'999'999;  // 18 digits
inline constexpr int64_t kPowersOfTen[] = {1, 10, 100, 1000};
// A number token as mantissa / 10^decimals. At most 18 digits, so any two differ by less
// than 2^63.
bool as_decimal(std::string_view token, int64_t& mantissa, int& decimals);
std::string decimal_text(int64_t mantissa, int decimals);

void append_base64(std::string& out, std::string_view bytes);
bool decode_base64(std::string_view text, std::string& out);  // false: not base64

}  // namespace tracelane::restore_codec
