// Restore data (SPEC 9.12): the compacted output carries, in one top-level key written
// after traceEvents, everything needed to rebuild the original document byte for byte.
//
// The writer copies an unchanged event's bytes and replaces only the values of a changed
// one (event_writer.cpp), so the original is the output's events in another arrangement:
//
//   original = head + event_0 + gap_1 + event_1 + ... + event_n-1 + tail
//
// For each original event the record says where it went in the output (or, for the few
// that compaction removes, how it differs from an original shortly before it: they are
// duplicates and stream metadata, nearly copies), and for each value the writer replaced,
// how to get the original text back. Parsing the output again finds those values (the same parser
// finds the same key occurrence in both texts). The values are mostly predictable: a
// stream's original text is its tid's; a pid, tid or flow id maps back to the text it last
// came from; a merged ts is the output's minus the rank's clock offset, any other ts or
// dur the output's plus a difference; a lane's tid is one of the last few tids; a merged
// name loses its rank prefix. Only what prediction misses is stored as text. Gaps between
// events are one common string plus exceptions, and head and tail are diffs (common
// prefix, suffix and the middle) against the output's own head and tail. The record is
// columns (placement, masks, values, texts) that DEFLATE packs well, then base64.
//
// Integrity: the record holds the original's length, CRC-32 and XXH64, the XXH64 of the
// output outside the restore key (so an edited event is refused before anything is
// rebuilt), and the record's own CRC-32. Restore checks all of them: a damaged or edited
// copy is an error, never a wrong original.
#include "tracelane/restore.hpp"

#include <libdeflate.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <memory>
#include <unordered_map>

#include "parallel_ranges.hpp"
#include "restore_codec.hpp"
#include "tracelane/decimal_time.hpp"
#include "tsan_handoff.hpp"

namespace tracelane {

namespace {

using namespace restore_codec;

// 2: a removed event may be a copy of an original before it (1: always its text).
constexpr uint32_t kFormatVersion = 2;
constexpr char kMagic[4] = {'T', 'L', 'R', '1'};
// A restore record never inflates beyond this (the original's length is checked again).
constexpr uint64_t kMaxRecordBytes = uint64_t(1) << 36;
// libdeflate's best for a record under 1 MB (the usual); 9 above, where 12 is slow.
constexpr int kDeflateLevel = 12;
// DEFLATE cannot expand beyond ~1032:1 (RFC 1951's longest match per the shortest code).
constexpr uint64_t kMaxDeflateRatio = 1032;
// See plausible_original_bytes.
constexpr uint64_t kMaxOriginalPerOutputByte = 64;

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
constexpr size_t kRecentTids = 16;

// The last kRecentTids distinct original tid texts, the latest first.
void remember_tid(std::vector<std::string_view>& recent, std::string_view text) {
  auto it = std::find(recent.begin(), recent.end(), text);
  if (it != recent.end())
    recent.erase(it);
  else if (recent.size() == kRecentTids)
    recent.pop_back();
  recent.insert(recent.begin(), text);
}

// The largest original a record may claim for an output of `output_bytes` (without the
// record) and a record of `raw_bytes` decompressed: what compaction removes or replaces is
// in the record (as text, or as a copy of an earlier original), so an original beyond this
// is whitespace repeated between events or nearly all of it removed copies, far beyond any
// trace, and a claim beyond it is a crafted record asking for memory.
uint64_t plausible_original_bytes(uint64_t output_bytes, uint64_t raw_bytes) {
  return kMaxOriginalPerOutputByte * output_bytes + raw_bytes + (uint64_t(1) << 20);
}

// The id a replaced pid/tid/id/stream value has in the output.
const Id& id_of(const Event& event, int field) {
  return field == kPid ? event.pid : field == kTid ? event.tid : field == kId ? event.id : event.stream;
}

// One source trace's record: its original events walked in document order, each either
// placed in the output (with the values the writer replaced) or removed (written as a near
// copy of an original shortly before it), and the text between them.
class RecordEncoder {
 public:
  explicit RecordEncoder(const RestoreSource& source) : source_(source), document_(source.trace->document) {}

  // The walk over the source's events, and the original's two checksums beside it: reads
  // only its trace, so it may run while the output's events are being written. (The
  // checksums, a pass over the whole original each, were left to encode(), after every
  // block was out.)
  void walk() {
    const Trace& trace = *source_.trace;
    if (document_.empty() && !trace.events.empty())
      throw Error(trace.source + ": internal: no original document to make restore data from");
    for_each_index(3, [&](size_t task) {
      if (task == 0)
        walk_events();
      else if (task == 1)
        document_crc32_ = libdeflate_crc32(0, document_.data(), document_.size());
      else
        document_xxhash64_ = xxhash64(document_);
    });
  }

  // The record, once the output's text around its events is known (after walk()).
  std::string encode(const OutputFrame& frame) { return pack(columns(frame)); }

 private:
  void walk_events() {
    size_t output_index = source_.first_output_index;
    for (const Event& event : source_.trace->events) {
      size_t here = output_index;
      if (!event.dropped) ++output_index;
      if (event.synthesised) continue;  // made by tracelane: not in the original
      add_place(event);
      if (event.dropped)
        add_removed(event);
      else
        add_written(event, here);
      recent_[(originals_ - 1) % kRemovedWindow] = event.raw;
    }
  }

  // Where an original lies in its document, and the text between it and the one before.
  void add_place(const Event& event) {
    const std::string& source = source_.trace->source;
    if (event.raw.data() < document_.data() ||
        event.raw.data() + event.raw.size() > document_.data() + document_.size())
      throw Error(source + ": internal: an event lies outside the document: " + std::string(event.raw.substr(0, 200)));
    size_t begin = size_t(event.raw.data() - document_.data());
    if (originals_ == 0) {
      first_begin_ = begin;
    } else {
      if (begin < previous_end_)
        throw Error(source + ": internal: event at byte " + std::to_string(begin) + " is out of document order");
      std::string_view gap = document_.substr(previous_end_, begin - previous_end_);
      if (originals_ == 1) default_gap_ = gap;
      if (gap != default_gap_) {
        put_varint(gap_exceptions_, originals_ - last_exception_);
        put_text(gap_exceptions_, gap);
        last_exception_ = originals_;
        ++exceptions_;
      }
    }
    previous_end_ = begin + event.raw.size();
    ++originals_;
  }

  // A removed original: a copy of the one among the last kRemovedWindow it costs least to
  // write against, else its text.
  void add_removed(const Event& event) {
    put_varint(placement_, 0);
    size_t k = originals_ - 1, best_back = 0, best_cost = event.raw.size();
    tokenize(event.raw, tokens_);
    for (size_t back = 1; back <= kRemovedWindow && back <= k; ++back) {
      size_t slot = (k - back) % kRemovedWindow;
      if (tokenized_[slot] != k - back) {
        tokenize(recent_[slot], recent_tokens_[slot]);
        tokenized_[slot] = k - back;
      }
      size_t cost = removed_cost(recent_tokens_[slot], tokens_);
      if (cost != SIZE_MAX && cost + varint_size(back) < best_cost)
        best_back = back, best_cost = cost + varint_size(back);
    }
    put_varint(dropped_, best_back);
    if (best_back)
      put_removed(dropped_, recent_tokens_[(k - best_back) % kRemovedWindow], tokens_);
    else
      put_text(dropped_, event.raw);
  }

  // A written original: its place in the output and the values the writer replaced
  // (append_event's rule).
  void add_written(const Event& event, size_t here) {
    put_varint(placement_, zigzag(int64_t(here) - (previous_output_ + 1)) + 1);
    previous_output_ = int64_t(here);
    bool prefix = event.name_prefixed && event.has_span(kArgName);
    uint8_t mask = uint8_t(event.changed | (prefix ? 1u << kArgName : 0u));
    masks_.push_back(char(mask));
    for (int f = 0; f < kFieldCount; ++f)
      if ((mask >> f) & 1) add_value(event, f, event.value_text(Field(f)));
  }

  // The original text of one replaced value, as the cheapest code that predicts it.
  void add_value(const Event& event, int f, std::string_view original) {
    if (f == kArgName) {
      values_.push_back(char(kUnprefixed));
      return;
    }
    if (f == kTs && event.ts.numeric && ns_as_us(event.new_ts - source_.offset_ns) == original) {
      values_.push_back(char(kShifted));
      return;
    }
    if ((f == kTs && event.ts.numeric) || (f == kDur && event.dur.numeric)) {
      int64_t mantissa = 0;
      int decimals = 0;
      if (as_decimal(original, mantissa, decimals) && decimals <= 3 && decimal_text(mantissa, decimals) == original) {
        int64_t ns = mantissa * kPowersOfTen[3 - decimals];
        int64_t now = f == kTs ? event.new_ts - source_.offset_ns : event.new_dur;
        values_.push_back(char(kNearTime));
        values_.push_back(char(decimals));
        put_varint(values_, zigzag(int64_t(uint64_t(ns) - uint64_t(now))));
        return;
      }
    }
    if (f == kStream && original == event.value_text(kTid) && event.has_span(kTid)) {
      values_.push_back(char(kAsTid));
      return;
    }
    if (f == kPid || f == kTid || f == kId || f == kStream) {
      int64_t now = f == kPid ? event.new_pid : f == kId ? event.new_id : event.new_tid;
      // The value as written (the restorer keys by it): a put-back args.stream is
      // args.original_stream's integer.
      if (f == kStream && !parse_json_int(event.original_stream_text(), now))
        throw Error("internal: args.stream put back without an integer args.original_stream");
      auto [it, inserted] = last_text_[f].try_emplace(now, original);
      if (!inserted && it->second == original) {
        values_.push_back(char(kPrevious));
        if (f == kTid) remember_tid(recent_tids_, original);
        return;
      }
      it->second = original;
    }
    if (f == kTid) {
      size_t at = size_t(std::find(recent_tids_.begin(), recent_tids_.end(), original) - recent_tids_.begin());
      bool found = at < recent_tids_.size();
      remember_tid(recent_tids_, original);
      if (found) {
        values_.push_back(char(kRecentTid));
        put_varint(values_, at);
        return;
      }
    }
    // Flow ids count up, tids and pids repeat: a plain integer as a difference.
    int64_t value = 0;
    if (parse_json_int(original, value) && std::to_string(value) == original) {
      values_.push_back(char(kNear));
      put_varint(values_, zigzag(int64_t(uint64_t(value) - uint64_t(last_integer_[f]))));
      last_integer_[f] = value;
      return;
    }
    values_.push_back(char(kLiteral));
    put_text(values_, original);
  }

  // The record before DEFLATE: header, head and tail diffs, then the columns.
  std::string columns(const OutputFrame& frame) const {
    std::string_view output_head = frame.head, output_tail = frame.tail;
    uint64_t covered = frame.covered;
    size_t output_events = frame.events;
    std::string_view head = originals_ ? document_.substr(0, first_begin_) : document_;
    std::string_view tail = originals_ ? document_.substr(previous_end_) : std::string_view();
    std::string raw;
    put_varint(raw, kFormatVersion);
    put_varint(raw, document_.size());
    put_fixed(raw, document_crc32_, 4);
    put_fixed(raw, document_xxhash64_, 8);
    put_fixed(raw, covered, 8);
    put_varint(raw, zigzag(source_.global_rank));
    put_text(raw, source_.name_prefix);
    put_varint(raw, zigzag(source_.offset_ns));
    put_varint(raw, output_events);
    put_diff(raw, head, output_head);
    put_diff(raw, tail, output_tail);
    put_varint(raw, originals_);
    put_text(raw, default_gap_);
    put_varint(raw, exceptions_);
    raw += gap_exceptions_;
    raw += placement_;
    raw += masks_;
    put_text(raw, values_);  // read beside the removed texts, which follow
    raw += dropped_;
    if (document_.size() > plausible_original_bytes(frame.size, raw.size()))
      throw Error(source_.trace->source + ": the original is " + std::to_string(document_.size()) +
                  " bytes for an output of " + std::to_string(frame.size) +
                  ", more than restore accepts (only whitespace between events can do that); compact it with "
                  "--no-restore-data");
    return raw;
  }

  // Magic, the raw length and CRC-32, then the DEFLATE'd columns.
  std::string pack(const std::string& raw) const {
    std::unique_ptr<libdeflate_compressor, void (*)(libdeflate_compressor*)> compressor(
        libdeflate_alloc_compressor(raw.size() < (size_t(1) << 20) ? kDeflateLevel : 9), libdeflate_free_compressor);
    if (!compressor) throw std::bad_alloc();
    std::string packed(libdeflate_deflate_compress_bound(compressor.get(), raw.size()), '\0');
    size_t packed_size =
        libdeflate_deflate_compress(compressor.get(), raw.data(), raw.size(), packed.data(), packed.size());
    if (packed_size == 0) throw Error(source_.trace->source + ": internal: restore data did not compress");
    packed.resize(packed_size);
    std::string record(kMagic, 4);
    put_fixed(record, raw.size(), 8);
    put_fixed(record, libdeflate_crc32(0, raw.data(), raw.size()), 4);
    record += packed;
    return record;
  }

  RestoreSource source_;
  std::string_view document_;
  // The columns, in the order the record holds them.
  std::string gap_exceptions_, placement_, masks_, values_, dropped_;
  uint32_t document_crc32_ = 0;
  uint64_t document_xxhash64_ = 0;
  size_t originals_ = 0, exceptions_ = 0, last_exception_ = 0;
  size_t first_begin_ = 0, previous_end_ = 0;
  int64_t previous_output_ = -1;
  std::string_view default_gap_;
  // What values are predicted from: per field, the text last seen for an output integer,
  // the last plain integer, and the last distinct tids.
  std::array<std::unordered_map<int64_t, std::string_view>, kFieldCount> last_text_;
  std::array<int64_t, kFieldCount> last_integer_{};
  std::vector<std::string_view> recent_tids_;
  // The last kRemovedWindow originals (by original index modulo the window), tokenized
  // when a removed event first needs them.
  std::vector<std::string_view> recent_ = std::vector<std::string_view>(kRemovedWindow);
  std::vector<std::vector<std::string_view>> recent_tokens_ =
      std::vector<std::vector<std::string_view>>(kRemovedWindow);
  std::vector<size_t> tokenized_ = std::vector<size_t>(kRemovedWindow, SIZE_MAX);
  std::vector<std::string_view> tokens_;
};

// The restore data of an output: the member `, "tracelane_restore": [...]` that
// append_restore_data inserted, and the records in it.
struct RestoreKey {
  size_t member_begin = 0, member_end = 0;
  std::vector<std::string_view> records;  // base64 text
};

std::string_view key_pattern() {
  static const std::string pattern = std::string(", \"") + kRestoreKey + "\": [";
  return pattern;
}

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

// Where the restore member goes: at the end of the top-level object
// "cuda_graph_stream_compaction" (compaction's own record, which every output has and
// which semdiff and viewers ignore). Returns the position of that object's closing brace.
size_t member_position(std::string_view text) {
  static const std::string key = "\"cuda_graph_stream_compaction\": {";
  size_t at = text.rfind(key);
  if (at == std::string_view::npos)
    throw Error("internal: an output without \"cuda_graph_stream_compaction\" to put restore data in");
  int depth = 0;
  bool in_string = false;
  for (size_t p = at + key.size() - 1; p < text.size(); ++p) {
    char c = text[p];
    if (in_string) {
      if (c == '\\')
        ++p;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return p;
    }
  }
  throw Error("internal: \"cuda_graph_stream_compaction\" does not end");
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

std::string record_where(std::string_view source, size_t k, size_t count) {
  std::string where = std::string(source) + ": restore data";
  if (count > 1) where += " (record " + std::to_string(k) + " of " + std::to_string(count) + ")";
  return where;
}

}  // namespace

size_t restore_member_position(std::string_view text) { return member_position(text); }

namespace {

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

struct RestoreData::Encoders {
  std::vector<std::unique_ptr<RecordEncoder>> list;
};

RestoreData::RestoreData(const std::vector<RestoreSource>& sources) : encoders_(std::make_unique<Encoders>()) {
  for (const RestoreSource& source : sources) encoders_->list.push_back(std::make_unique<RecordEncoder>(source));
}

RestoreData::~RestoreData() = default;

size_t RestoreData::sources() const { return encoders_->list.size(); }

void RestoreData::walk(size_t k) { encoders_->list.at(k)->walk(); }

std::string RestoreData::member(const OutputFrame& frame) {
  // Each record is DEFLATE'd on its own (a merge's, one a rank): concurrently.
  std::vector<std::string> records(encoders_->list.size());
  // The hand-offs to and from the tasks, for TSan (tsan_handoff.hpp); the task is made
  // before them (parallel_for calls it through a reference).
  auto task = [&](size_t k) {
    tsan_acquire(&tsan_task_start);
    records[k] = encoders_->list[k]->encode(frame);
    tsan_release(&records[k]);
  };
  tsan_release(&tsan_task_start);
  tbb::this_task_arena::isolate([&] { tbb::parallel_for(size_t(0), records.size(), task); });
  for (const std::string& record : records) tsan_acquire(&record);
  std::string member(key_pattern());
  for (size_t k = 0; k < records.size(); ++k) {
    if (k) member += ", ";
    member.push_back('"');
    append_base64(member, records[k]);
    member.push_back('"');
  }
  member += "]";
  return member;
}

void append_restore_data(std::string& text, WrittenEvents events, const std::vector<RestoreSource>& sources) {
  size_t at = restore_member_position(text);
  RestoreData data(sources);
  for (size_t k = 0; k < sources.size(); ++k) data.walk(k);
  // The records describe the output as it is without them, so removing the member gives
  // back exactly what --no-restore-data writes, and that is what restore checks against.
  OutputFrame frame;
  frame.head = events.begin == SIZE_MAX ? std::string_view(text) : std::string_view(text).substr(0, events.begin);
  frame.tail = events.begin == SIZE_MAX ? std::string_view() : std::string_view(text).substr(events.end);
  frame.size = text.size();
  frame.covered = xxhash64(text);
  frame.events = events.count;
  text.insert(at, data.member(frame));
}

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

// Rebuilds one original from its record and the parsed output, the encoder's walk in
// reverse: the head, then each original (removed: from its copy or text; written: the
// output event with its replaced values put back), the gaps between them, the tail.
class Rebuilder {
 public:
  Rebuilder(const Trace& output, const RecordHeader& header, Reader& in, std::string_view raw_record)
      : output_(output), h_(header), in_(in), raw_bytes_(raw_record.size()) {}

  std::string rebuild() {
    read_layout();
    Reader values(in_.text(), in_.where());
    size_t next_mask = 0, next_gap = 0;
    for (uint64_t k = 0; k < originals_; ++k) {
      if (k > 0) {
        bool exception = next_gap < gaps_.size() && gaps_[next_gap].first == k;
        original_ += exception ? gaps_[next_gap++].second : default_gap_;
      }
      // A record (authentic by its CRC, but maybe crafted) never makes more than it claims.
      if (original_.size() > h_.original_bytes) in_.fail("the rebuilt text outgrows the original's length");
      size_t begin = original_.size();
      if (placed_[k] < 0)
        rebuild_removed(k);
      else
        rebuild_written(size_t(placed_[k]), masks_[next_mask++], values);
      recent_[k % kRemovedWindow] = {begin, original_.size()};
    }
    original_ += tail_;
    if (!in_.done() || !values.done()) in_.fail("bytes left over");
    return std::move(original_);
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
    original_.reserve(h_.original_bytes);
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
    placed_.reserve(originals_);
    int64_t previous = -1;
    for (uint64_t k = 0; k < originals_; ++k) {
      uint64_t v = in_.varint();
      if (v == 0) {
        placed_.push_back(-1);
        continue;
      }
      previous = int64_t(uint64_t(previous) + 1 + uint64_t(unzigzag(v - 1)));  // wraps, then is range-checked
      if (previous < 0 || uint64_t(previous) >= output_.events.size())
        in_.fail("an event is placed outside the output");
      placed_.push_back(previous);
    }
    for (int64_t p : placed_)
      if (p >= 0) masks_.push_back(in_.byte());
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
    apply_removed(original_, in_, std::string_view(original_).substr(from, to - from));
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
        const Id& id = id_of(event, f);
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
        const Id& id = id_of(event, f);
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
  std::string original_, tail_;
  uint64_t originals_ = 0;
  std::string_view default_gap_;
  std::vector<std::pair<uint64_t, std::string_view>> gaps_;  // (original index, its gap)
  std::vector<int64_t> placed_;                              // per original: output index, or -1 when removed
  std::vector<uint8_t> masks_;                               // per written original
  std::array<std::unordered_map<int64_t, std::string_view>, kFieldCount> last_text_;
  std::array<int64_t, kFieldCount> last_integer_{};
  std::vector<std::string_view> recent_tids_;
  std::deque<std::string> integers_;  // texts of kNear and kNearTime values (stable addresses)
  // Where the last kRemovedWindow originals lie in original_ (a removed event's references).
  std::vector<std::pair<size_t, size_t>> recent_ = std::vector<std::pair<size_t, size_t>>(kRemovedWindow);
};

}  // namespace

std::string restore_original(std::string compacted, const std::string& source, size_t record) {
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
  std::string original = Rebuilder(output, h, in, raw).rebuild();
  if (original.size() != h.original_bytes || libdeflate_crc32(0, original.data(), original.size()) != h.crc ||
      xxhash64(original) != h.hash)
    throw Error(where +
                " does not rebuild the original (its length or checksums differ): the restore data or the "
                "events it refers to are damaged");
  return original;
}

}  // namespace tracelane
