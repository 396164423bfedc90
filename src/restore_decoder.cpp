// The restore decoder: rebuilds an original trace from the compacted output's restore data
// (restore_encoder.cpp explains what a record says, restore_codec.hpp how it is laid out).
// Nothing is trusted before it is checked: the member's base64, each record's magic, length
// and CRC-32, its format version, the XXH64 of the output outside the member and the
// output's event count, then every reference while the record is walked, and at the end the
// rebuilt original's length, CRC-32 and XXH64. A damaged, edited or crafted copy is an
// error, never a wrong original.
#include <libdeflate.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

#include "restore_codec.hpp"
#include "tracelane/decimal_time.hpp"
#include "tracelane/restore.hpp"

namespace tracelane {

namespace {

using namespace restore_codec;

// A restore record never inflates beyond this (the original's length is checked again).
constexpr uint64_t kMaxRecordBytes = uint64_t(1) << 36;
// The rebuilt original is handed on (restore_original_to) whenever this much is made, all
// but its last kRemovedWindow originals.
constexpr size_t kRebuiltPieceBytes = size_t(4) << 20;
// DEFLATE cannot expand beyond ~1032:1 (RFC 1951's longest match per the shortest code).
constexpr uint64_t kMaxDeflateRatio = 1032;

// The id a replaced pid/tid/id/stream value has in the output.
Id id_of(const Event& event, int field) {
  return field == kPid ? event.pid : field == kTid ? event.tid : field == kId ? event.id : event.stream();
}

// The restore data of an output: the member `, "tracelane_restore": [...]` that
// append_restore_data inserted, and the records in it.
struct RestoreKey {
  size_t member_begin = 0, member_end = 0;
  std::vector<std::string_view> records;  // base64 text
};

// Finds the member written last, as append_restore_data writes it. Returns false when the
// output has none.
bool find_restore_key(std::string_view text, std::string_view source, RestoreKey& key) {
  size_t at = text.rfind(key_pattern());
  if (at == std::string_view::npos) return false;
  key.member_begin = at;
  size_t p = at + key_pattern().size();
  auto damaged = [&](const std::string& what) {
    return Error(std::string(source) + ": restore data (\"" + kRestoreKey + "\", byte " + std::to_string(p) +
                 ") is damaged: " + what);
  };
  for (;;) {
    if (p >= text.size()) throw damaged("the list does not end");
    if (text[p] == ']' && key.records.empty()) break;
    if (text[p] != '"') throw damaged("expected a string");
    size_t end = text.find('"', p + 1);
    if (end == std::string_view::npos) throw damaged("a string does not end");
    key.records.push_back(text.substr(p + 1, end - p - 1));
    p = end + 1;
    if (text.compare(p, 2, ", ") == 0) {
      p += 2;
      continue;
    }
    if (p < text.size() && text[p] == ']') break;
    throw damaged("expected ', ' or ']'");
  }
  key.member_end = p + 1;
  return true;
}

// A record's decompressed bytes, after its own checks.
std::string unpack_record(std::string_view base64, const std::string& where) {
  std::string record;
  if (!decode_base64(base64, record)) throw Error(where + " is damaged: not base64");
  if (record.size() < 16 || std::memcmp(record.data(), kMagic, 4) != 0)
    throw Error(where + " is damaged or of an unknown format (it does not start with " + std::string(kMagic, 4) + ")");
  uint64_t raw_size = 0;
  for (int k = 0; k < 8; ++k) raw_size |= uint64_t(uint8_t(record[4 + k])) << (8 * k);
  uint32_t crc = read32(record.data() + 12);  // little-endian, as put_fixed wrote it
  // Before allocating: no DEFLATE stream inflates beyond kMaxDeflateRatio.
  if (raw_size > kMaxRecordBytes || raw_size > kMaxDeflateRatio * (record.size() - 16) + 64)
    throw Error(where + " is damaged: it claims " + std::to_string(raw_size) + " bytes from " +
                std::to_string(record.size() - 16) + " compressed");
  std::string raw(raw_size, '\0');
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> decompressor(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  if (!decompressor) throw std::bad_alloc();
  size_t actual = 0;
  if (libdeflate_deflate_decompress(decompressor.get(), record.data() + 16, record.size() - 16, raw.data(), raw.size(),
                                    &actual) != LIBDEFLATE_SUCCESS ||
      actual != raw_size)
    throw Error(where + " is damaged: its DEFLATE data does not decompress");
  if (libdeflate_crc32(0, raw.data(), raw.size()) != crc) throw Error(where + " is damaged: its CRC-32 differs");
  return raw;
}

std::string record_where(std::string_view source, size_t k, size_t count) {
  std::string where = std::string(source) + ": restore data";
  if (count > 1) where += " (record " + std::to_string(k) + " of " + std::to_string(count) + ")";
  return where;
}

// Rebuilds one original from its record and the parsed output, the encoder's walk in
// reverse: the head, then each original (removed: from its copy or text; written: the
// output event with its replaced values put back), the gaps between them, the tail. The
// text goes to `sink` in order, in pieces of about kRebuiltPieceBytes, as it is made:
// original_ holds only what is not handed on yet, which always includes the last
// kRemovedWindow originals (a removed original may copy one of them).
class Rebuilder {
 public:
  // `on_length`: told the original's length once the record's claim of it is checked
  // plausible, before any text is handed on.
  Rebuilder(const Trace& output, const RecordHeader& header, Reader& in, std::string_view raw_record,
            const std::function<void(uint64_t)>& on_length, const std::function<void(std::string_view)>& sink)
      : output_(output), h_(header), in_(in), raw_bytes_(raw_record.size()), on_length_(on_length), sink_(sink) {}

  void rebuild() {
    read_layout();
    Reader values(in_.text(), in_.where());
    // The placements and masks were checked by read_layout(); read again here, one an
    // original, rather than held (8 bytes an original).
    Reader placements = *placements_, masks = *masks_;
    int64_t previous = -1;
    size_t next_gap = 0;
    for (uint64_t k = 0; k < originals_; ++k) {
      if (k > 0) {
        bool exception = next_gap < gaps_.size() && gaps_[next_gap].first == k;
        original_ += exception ? gaps_[next_gap++].second : default_gap_;
      }
      // A record (authentic by its CRC, but maybe crafted) never makes more than it claims.
      if (length() > h_.original_bytes) in_.fail("the rebuilt text outgrows the original's length");
      uint64_t begin = length();
      uint64_t placement = placements.varint();
      if (placement == 0) {
        rebuild_removed(k);
      } else {
        previous = placed_after(previous, placement);
        rebuild_written(size_t(previous), masks.byte(), values);
      }
      recent_[k % kRemovedWindow] = {begin, length()};
      // What the originals after k may copy begins at the oldest of the last kRemovedWindow.
      if (original_.size() >= kRebuiltPieceBytes && k + 1 >= kRemovedWindow)
        hand_on(recent_[(k + 1) % kRemovedWindow].first);
    }
    original_ += tail_;
    if (!in_.done() || !values.done()) in_.fail("bytes left over");
    hand_on(length());
  }

 private:
  // Head and tail, the gaps, where each original went in the output, and the masks.
  void read_layout() {
    std::string_view text = output_.document;
    size_t events_begin = SIZE_MAX, events_end = SIZE_MAX;
    if (!output_.events.empty()) {
      events_begin = size_t(output_.events.front().raw.data() - text.data());
      events_end = size_t(output_.events.back().raw.data() + output_.events.back().raw.size() - text.data());
    }
    std::string_view output_head = events_begin == SIZE_MAX ? text : text.substr(0, events_begin);
    std::string_view output_tail = events_begin == SIZE_MAX ? std::string_view() : text.substr(events_end);
    if (h_.original_bytes > kMaxRecordBytes * 64 ||
        h_.original_bytes > plausible_original_bytes(text.size(), raw_bytes_))
      in_.fail("the original's length (" + std::to_string(h_.original_bytes) +
               " bytes) is implausible for an output of " + std::to_string(text.size()) + " bytes");
    if (on_length_) on_length_(h_.original_bytes);
    apply_diff(original_, in_, output_head, h_.original_bytes);
    apply_diff(tail_, in_, output_tail, h_.original_bytes);
    originals_ = in_.varint();
    default_gap_ = in_.text();
    uint64_t exceptions = in_.varint();
    uint64_t at = 0;
    for (uint64_t k = 0; k < exceptions; ++k) {
      at += in_.varint();
      gaps_.emplace_back(at, in_.text());
    }
    if (originals_ > h_.original_bytes) in_.fail("more events than the original has bytes");
    placements_.emplace(in_);
    int64_t previous = -1;
    uint64_t written = 0;
    for (uint64_t k = 0; k < originals_; ++k) {
      uint64_t v = in_.varint();
      if (v == 0) continue;
      previous = placed_after(previous, v);
      if (previous < 0 || uint64_t(previous) >= output_.events.size())
        in_.fail("an event is placed outside the output");
      ++written;
    }
    masks_.emplace(in_);
    in_.skip(written);  // a mask per written original
  }

  // The output index a placement code puts an original at, after the one placed before it
  // at `previous` (-1 before the first).
  static int64_t placed_after(int64_t previous, uint64_t code) {
    return int64_t(uint64_t(previous) + 1 + uint64_t(unzigzag(code - 1)));  // wraps; read_layout range-checks it
  }

  // Removed by compaction: its text, or a copy of an original before it.
  void rebuild_removed(uint64_t k) {
    uint64_t back = h_.version == 1 ? 0 : in_.varint();
    if (back == 0) {
      original_ += in_.text();
      return;
    }
    if (back > kRemovedWindow || back > k) in_.fail("a removed event refers to one outside its window");
    auto [from, to] = recent_[(k - back) % kRemovedWindow];
    apply_removed(original_, in_, std::string_view(original_).substr(size_t(from - handed_on_), size_t(to - from)));
  }

  // Output event `placed`, with the original text of each value its mask says was replaced,
  // put back in byte order.
  void rebuild_written(size_t placed, uint8_t mask, Reader& values) {
    const Event& event = output_.events[placed];
    if (!mask) {
      original_ += event.raw;
      return;
    }
    std::array<std::string_view, kFieldCount> replaced;
    std::string shifted;
    for (int f = 0; f < kFieldCount; ++f) {
      if (!((mask >> f) & 1)) continue;
      if (!event.has_span(Field(f)))
        in_.fail("a replaced value is missing from output event #" + std::to_string(placed));
      uint8_t code = values.byte();
      replaced[f] = decode_value(event, f, code, mask, replaced, shifted, values);
      if (f == kTid) remember_tid(recent_tids_, replaced[f]);
      if ((f == kPid || f == kTid || f == kId || f == kStream) && code != kAsTid && code != kPrevious) {
        const Id id = id_of(event, f);
        if (id.is_int()) last_text_[f][id.value] = replaced[f];
      }
    }
    std::array<int, kFieldCount> order;
    int n = 0;
    for (int f = 0; f < kFieldCount; ++f)
      if ((mask >> f) & 1) order[n++] = f;
    std::sort(order.begin(), order.begin() + n,
              [&](int a, int b) { return event.span(Field(a)).offset < event.span(Field(b)).offset; });
    uint32_t pos = 0;
    for (int j = 0; j < n; ++j) {
      int f = order[j];
      const Span span = event.span(Field(f));
      if (span.offset < pos) in_.fail("replaced values overlap in output event #" + std::to_string(placed));
      original_.append(event.raw.substr(pos, span.offset - pos));
      if (f == kArgName) {
        std::string_view now = event.value_text(kArgName);
        original_.push_back('"');
        original_.append(now.substr(1 + h_.name_prefix.size()));
      } else {
        original_.append(replaced[f]);
      }
      pos = span.offset + span.length;
    }
    original_.append(event.raw.substr(pos));
  }

  // Bytes made so far, handed on or not.
  uint64_t length() const { return handed_on_ + original_.size(); }

  // Hands on the text before position `end` of the original.
  void hand_on(uint64_t end) {
    size_t bytes = size_t(end - handed_on_);
    if (bytes == 0) return;
    sink_(std::string_view(original_).substr(0, bytes));
    original_.erase(0, bytes);
    handed_on_ = end;
  }

  // The original text of field `f` (the encoder's add_value in reverse). `shifted` holds a
  // text made here for this event; kNear and kNearTime texts live in integers_.
  std::string_view decode_value(const Event& event, int f, uint8_t code, uint8_t mask,
                                const std::array<std::string_view, kFieldCount>& replaced, std::string& shifted,
                                Reader& values) {
    std::string_view now = event.value_text(Field(f));
    switch (code) {
      case kLiteral:
        return values.text();
      case kPrevious: {
        const Id id = id_of(event, f);
        auto it =
            id.is_int() && f != kTs && f != kDur && f != kArgName ? last_text_[f].find(id.value) : last_text_[f].end();
        if (it == last_text_[f].end()) values.fail("a value refers to one not seen before");
        return it->second;
      }
      case kAsTid:
        if (f != kStream) values.fail("a value code does not fit its field");
        return (mask >> kTid) & 1 ? replaced[kTid] : event.value_text(kTid);
      case kShifted: {
        if (f != kTs || !event.ts.numeric) values.fail("a value code does not fit its field");
        Ns unshifted;
        if (__builtin_sub_overflow(Ns(event.ts.ns), h_.offset_ns, &unshifted)) values.fail("a clock offset overflows");
        shifted = ns_as_us(unshifted);
        return shifted;
      }
      case kUnprefixed:
        if (f != kArgName || now.size() < 1 + h_.name_prefix.size() ||
            now.substr(1, h_.name_prefix.size()) != h_.name_prefix)
          values.fail("a name lacks the rank prefix");
        return {};  // put back from the output's text (rebuild_written)
      case kNearTime: {
        if ((f != kTs || !event.ts.numeric) && (f != kDur || !event.dur.numeric))
          values.fail("a value code does not fit its field");
        uint8_t decimals = values.byte();
        if (decimals > 3) values.fail("a time has more than 3 decimals");
        int64_t time = event.dur.ns;
        if (f == kTs && __builtin_sub_overflow(Ns(event.ts.ns), h_.offset_ns, &time))
          values.fail("a clock offset overflows");
        int64_t ns = int64_t(uint64_t(time) + uint64_t(unzigzag(values.varint())));  // wraps, then is range-checked
        int64_t unit = kPowersOfTen[3 - decimals];
        if (ns < 0 || ns % unit || ns / unit > kMaxDecimal) values.fail("a time is out of range");
        return integers_.emplace_back(decimal_text(ns / unit, decimals));
      }
      case kRecentTid: {
        if (f != kTid) values.fail("a value code does not fit its field");
        uint64_t at = values.varint();
        if (at >= recent_tids_.size()) values.fail("a tid refers to one not seen before");
        return recent_tids_[size_t(at)];
      }
      case kNear:
        last_integer_[f] = int64_t(uint64_t(last_integer_[f]) + uint64_t(unzigzag(values.varint())));
        return integers_.emplace_back(std::to_string(last_integer_[f]));
      default:
        values.fail("unknown value code " + std::to_string(code));
    }
  }

  const Trace& output_;
  const RecordHeader& h_;
  Reader& in_;
  size_t raw_bytes_;
  const std::function<void(uint64_t)>& on_length_;
  const std::function<void(std::string_view)>& sink_;
  std::string original_, tail_;  // original_: the text from handed_on_ on
  uint64_t handed_on_ = 0;
  uint64_t originals_ = 0;
  std::string_view default_gap_;
  std::vector<std::pair<uint64_t, std::string_view>> gaps_;  // (original index, its gap)
  // Where the placement column (a code per original: 0 removed, else where it went in the
  // output) and the mask column (a byte per written original) begin.
  std::optional<Reader> placements_, masks_;
  std::array<std::unordered_map<int64_t, std::string_view>, kFieldCount> last_text_;
  std::array<int64_t, kFieldCount> last_integer_{};
  std::vector<std::string_view> recent_tids_;
  std::deque<std::string> integers_;  // texts of kNear and kNearTime values (stable addresses)
  // Where the last kRemovedWindow originals lie in the original (a removed event's references).
  std::vector<std::pair<uint64_t, uint64_t>> recent_ = std::vector<std::pair<uint64_t, uint64_t>>(kRemovedWindow);
};

}  // namespace

std::vector<RestoreRecordInfo> list_restore_records(std::string_view compacted, std::string_view source) {
  RestoreKey key;
  std::vector<RestoreRecordInfo> infos;
  if (!find_restore_key(compacted, source, key)) return infos;
  for (size_t k = 0; k < key.records.size(); ++k) {
    std::string where = record_where(source, k, key.records.size());
    std::string raw = unpack_record(key.records[k], where);
    Reader in(raw, where);
    RecordHeader h = read_header(in);
    infos.push_back({h.global_rank, h.original_bytes});
  }
  return infos;
}

namespace {

void restore_with(std::string compacted, const std::string& source, size_t record,
                  const std::function<void(uint64_t)>& on_length, const std::function<void(std::string_view)>& sink) {
  RestoreKey key;
  if (!find_restore_key(compacted, source, key))
    throw Error(source + ": no restore data (no \"" + kRestoreKey +
                "\" in cuda_graph_stream_compaction; written with --no-restore-data, by another tool, or removed)");
  if (record >= key.records.size())
    throw Error(source + ": restore data has " + std::to_string(key.records.size()) + " record(s), not " +
                std::to_string(record + 1));
  std::string where = record_where(source, record, key.records.size());
  std::string raw = unpack_record(key.records[record], where);
  Reader in(raw, where);
  RecordHeader h = read_header(in);
  compacted.erase(key.member_begin, key.member_end - key.member_begin);
  if (xxhash64(compacted) != h.covered)
    throw Error(source +
                ": the compacted trace was changed after it was written (its checksum differs from the "
                "one in the restore data): events or top-level keys were edited, or bytes are damaged");
  Trace output = parse_trace(std::move(compacted), source);
  if (output.events.size() != h.output_events)
    throw Error(where + " is for an output of " + std::to_string(h.output_events) + " events, this one has " +
                std::to_string(output.events.size()));
  uint64_t length = 0;
  uint32_t crc = 0;
  Xxhash64 hash;
  std::function<void(std::string_view)> checked = [&](std::string_view piece) {
    length += piece.size();
    crc = libdeflate_crc32(crc, piece.data(), piece.size());
    hash.update(piece);
    sink(piece);
  };
  Rebuilder(output, h, in, raw, on_length, checked).rebuild();
  if (length != h.original_bytes || crc != h.crc || hash.digest() != h.hash)
    throw Error(where +
                " does not rebuild the original (its length or checksums differ): the restore data or the "
                "events it refers to are damaged");
}

}  // namespace

void restore_original_to(std::string compacted, const std::string& source, size_t record,
                         const std::function<void(std::string_view piece)>& sink) {
  restore_with(std::move(compacted), source, record, nullptr, sink);
}

std::string restore_original(std::string compacted, const std::string& source, size_t record) {
  std::string original;
  restore_with(
      std::move(compacted), source, record, [&](uint64_t bytes) { original.reserve(size_t(bytes)); },
      [&](std::string_view piece) { original += piece; });
  return original;
}

}  // namespace tracelane
