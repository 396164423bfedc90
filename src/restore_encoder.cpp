// The restore encoder (SPEC 9.12): the compacted output carries, in one top-level key
// written after traceEvents, everything needed to rebuild the original document byte for
// byte. This file writes that key; restore_decoder.cpp reads it back, and
// restore_codec.hpp holds the record's layout and the pieces both sides share.
//
// The writer copies an unchanged event's bytes and replaces only the values of a changed
// one (event_writer.cpp), so the original is the output's events in another arrangement:
//
//   original = head + event_0 + gap_1 + event_1 + ... + event_n-1 + tail
//
// For each original event the record says where it went in the output (or, for the few
// that compaction removes, how it differs from an original shortly before it: they are
// duplicates and stream metadata, nearly copies), and for each value the writer replaced,
// how to get the original text back. Parsing the output again finds those values (the same
// parser finds the same key occurrence in both texts). The values are mostly predictable: a
// stream's original text is its tid's; a pid, tid or flow id maps back to the text it last
// came from; a merged ts is the output's minus the rank's clock offset, any other ts or
// dur the output's plus a difference; a lane's tid is one of the last few tids; a merged
// name loses its rank prefix; a plain integer is the difference from its field's last one.
// Only what prediction misses is stored as text. Gaps between events are one common string
// plus exceptions, and head and tail are line diffs against the output's own head and tail
// (runs of its lines, and lines of their own). The record is columns (gaps, placement,
// masks, values, removed events) that DEFLATE packs well, then base64.
//
// Integrity: the record holds the original's length, CRC-32 and XXH64, the XXH64 of the
// output outside the restore key (so an edited event is refused before anything is
// rebuilt), and the record's own CRC-32. Restore checks all of them: a damaged or edited
// copy is an error, never a wrong original.
#include <libdeflate.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <memory>
#include <unordered_map>

#include "parallel_ranges.hpp"
#include "restore_codec.hpp"
#include "tracelane/decimal_time.hpp"
#include "tracelane/restore.hpp"
#include "tsan_handoff.hpp"

namespace tracelane {

namespace {

using namespace restore_codec;

// Asks for the cache line of the byte before `text` (where the gap before an event ends).
inline void prefetch_gap_before(std::string_view text) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(text.data()) - 1));
}

// libdeflate's best for a record under 1 MB (the usual); 9 above, where 12 is slow.
constexpr int kDeflateLevel = 12;

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
        document_crc32_ =
            trace.document_crc32 ? *trace.document_crc32 : libdeflate_crc32(0, document_.data(), document_.size());
      else
        document_xxhash64_ = xxhash64(document_);
    });
  }

  // The record, once the output's text around its events is known (after walk()). Once:
  // the columns are given up as they are joined.
  std::string encode(const OutputFrame& frame) {
    if (encoded_) throw Error(source_.trace->source + ": internal: a restore record encoded twice");
    encoded_ = true;
    return pack(columns(frame));
  }

 private:
  void walk_events() {
    size_t output_index = source_.first_output_index;
    const std::vector<Event>& events = source_.trace->events;
    // A placement is a byte for most originals, a mask a byte for each written one: room
    // from the start rather than copies as they grow.
    placement_.reserve(events.size());
    masks_.reserve(events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      // The gap before an event lies just before its text: asked for ahead, as the
      // passes ask for the text they read (trace.hpp's prefetch).
      if (i + kPrefetchAhead < events.size()) {
        const Event& ahead = events[i + kPrefetchAhead];
        prefetch_gap_before(ahead.raw);
        if (ahead.changed) prefetch(ahead.value_text(kTid));
      }
      const Event& event = events[i];
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
      if (!same_text(gap, default_gap_)) {
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
    if (f == kTs && event.ts.numeric && ns_as_us(event.final_ts() - source_.offset_ns) == original) {
      values_.push_back(char(kShifted));
      return;
    }
    if ((f == kTs && event.ts.numeric) || (f == kDur && event.dur.numeric)) {
      int64_t mantissa = 0;
      int decimals = 0;
      if (as_decimal(original, mantissa, decimals) && decimals <= 3 && decimal_text(mantissa, decimals) == original) {
        int64_t ns = mantissa * kPowersOfTen[3 - decimals];
        int64_t now = f == kTs ? event.final_ts() - source_.offset_ns : event.final_dur();
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
      int64_t now = f == kPid ? event.final_pid() : f == kId ? event.final_id() : event.final_tid();
      // The value as written (the restorer keys by it): a put-back args.stream is
      // args.original_stream's integer.
      if (f == kStream && !parse_json_int(event.original_stream_text(), now))
        throw Error("internal: args.stream put back without an integer args.original_stream");
      auto [it, inserted] = last_text_[f].try_emplace(now, original);
      if (!inserted && same_text(it->second, original)) {
        values_.push_back(char(kPrevious));
        if (f == kTid) remember_tid(recent_tids_, original);
        return;
      }
      it->second = original;
    }
    if (f == kTid) {
      size_t at = find_tid(recent_tids_, original);
      bool found = at < recent_tids_.size();
      remember_tid_at(recent_tids_, at, original);
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

  // The record before DEFLATE: header, head and tail diffs, then the columns, each freed
  // once it is in (they are most of the record: with its copy they were the write's peak).
  std::string columns(const OutputFrame& frame) {
    std::string_view head = originals_ ? document_.substr(0, first_begin_) : document_;
    std::string_view tail = originals_ ? document_.substr(previous_end_) : std::string_view();
    std::string raw;
    // Room for all of it (the head and tail diffs are about their texts' size): no copies.
    constexpr size_t kVarints = 8 * 10;   // the header's and the counts', 10 bytes at most each
    constexpr size_t kFixed = 4 + 8 + 8;  // the header's CRC-32 and two XXH64s
    raw.reserve(kVarints + kFixed + source_.name_prefix.size() + head.size() + tail.size() + default_gap_.size() +
                gap_exceptions_.size() + placement_.size() + masks_.size() + values_.size() + dropped_.size());
    auto join = [&raw](std::string& column) {
      raw += column;
      std::string().swap(column);
    };
    put_header(raw, {.version = kFormatVersion,
                     .original_bytes = document_.size(),
                     .crc = document_crc32_,
                     .hash = document_xxhash64_,
                     .covered = frame.covered,
                     .global_rank = source_.global_rank,
                     .name_prefix = source_.name_prefix,
                     .offset_ns = source_.offset_ns,
                     .output_events = frame.events});
    put_diff(raw, head, frame.head);
    put_diff(raw, tail, frame.tail);
    put_varint(raw, originals_);
    put_text(raw, default_gap_);
    put_varint(raw, exceptions_);
    join(gap_exceptions_);
    join(placement_);
    join(masks_);
    put_varint(raw, values_.size());  // put_text: read beside the removed texts, which follow
    join(values_);
    join(dropped_);
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
  bool encoded_ = false;
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

}  // namespace

size_t restore_member_position(std::string_view text) { return member_position(text); }

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

}  // namespace tracelane
