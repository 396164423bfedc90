// The restore record's layout and the pieces its encoder (restore_encoder.cpp) and decoder
// (restore_decoder.cpp) share: the format version, magic and header, the codes of replaced
// values, varints and texts, a bounds-checked reader, line diffs of the head and tail,
// removed events as near copies of earlier ones, base64, and the byte reads of XXH64
// (declared in tracelane/restore.hpp, defined in restore_codec.cpp). Private to the core
// library.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tracelane/trace.hpp"

namespace tracelane::restore_codec {

// A record: kMagic, the length of its raw bytes (8 bytes) and their CRC-32 (4), then the
// raw bytes DEFLATE'd. The raw bytes: the header (RecordHeader), the diffs of the
// original's head and tail, the count of originals, the common gap between them and its
// exceptions, then the columns: placement, masks, values (one text), removed events.
// 2: a removed event may be a copy of an original before it (1: always its text).
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr char kMagic[4] = {'T', 'L', 'R', '1'};

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
  void skip(uint64_t bytes) {
    if (bytes > data_.size() - pos_) {
      pos_ = data_.size();  // where reading them one by one would have stopped
      fail("truncated");
    }
    pos_ += size_t(bytes);
  }
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

// What a record says about itself and its output, first in its raw bytes.
struct RecordHeader {
  uint64_t version = 0;
  uint64_t original_bytes = 0;
  uint32_t crc = 0;
  uint64_t hash = 0, covered = 0;
  int64_t global_rank = -1;
  std::string_view name_prefix;
  Ns offset_ns = 0;
  uint64_t output_events = 0;
};
void put_header(std::string& out, const RecordHeader& header);
RecordHeader read_header(Reader& in);  // fails on a version this tracelane does not read

// The restore member's opening, `, "tracelane_restore": [`.
std::string_view key_pattern();

// See plausible_original_bytes.
inline constexpr uint64_t kMaxOriginalPerOutputByte = 64;
// The largest original a record may claim for an output of `output_bytes` (without the
// record) and a record of `raw_bytes` decompressed: what compaction removes or replaces is
// in the record (as text, or as a copy of an earlier original), so an original beyond this
// is whitespace repeated between events or nearly all of it removed copies, far beyond any
// trace, and a claim beyond it is a crafted record asking for memory.
inline uint64_t plausible_original_bytes(uint64_t output_bytes, uint64_t raw_bytes) {
  return kMaxOriginalPerOutputByte * output_bytes + raw_bytes + (uint64_t(1) << 20);
}

// How a replaced value's original text is written in the values column.
enum Code : uint8_t {
  kLiteral = 0,     // the text follows
  kPrevious = 1,    // the text this field last had for the same output integer
  kAsTid = 2,       // args.stream: the event's original tid text
  kShifted = 3,     // ts: the output's time less the record's clock offset
  kUnprefixed = 4,  // args.name: the output's text without the record's prefix
  kNear = 5,        // an integer written plainly: the difference from this field's last one
  kNearTime = 6,    // ts or dur: its decimals, and the difference in ns from the output's
                    // time (ts: less the clock offset), as when a coalesced dur grew
  kRecentTid = 7    // tid: the index of the text among the last distinct tids (a lane holds
};                  // a few streams, each with its own tid, taking turns)
inline constexpr size_t kRecentTids = 16;

// Whether two texts are equal, byte by byte: tids are a few bytes, which a call to
// memcmp takes longer to compare (the record's walk compares each replaced tid with up to
// kRecentTids others).
inline bool same_text(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// Where `text` is among the last distinct tid texts (remember_tid), or recent.size().
inline size_t find_tid(const std::vector<std::string_view>& recent, std::string_view text) {
  size_t at = 0;
  while (at < recent.size() && !same_text(recent[at], text)) ++at;
  return at;
}

// The last kRecentTids distinct original tid texts, the latest first: `text`, found at
// `at` (find_tid), becomes the first.
inline void remember_tid_at(std::vector<std::string_view>& recent, size_t at, std::string_view text) {
  if (at < recent.size()) {
    std::rotate(recent.begin(), recent.begin() + ptrdiff_t(at), recent.begin() + ptrdiff_t(at) + 1);
    return;
  }
  if (recent.size() == kRecentTids) recent.pop_back();
  recent.insert(recent.begin(), text);
}
inline void remember_tid(std::vector<std::string_view>& recent, std::string_view text) {
  remember_tid_at(recent, find_tid(recent, text), text);
}

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
