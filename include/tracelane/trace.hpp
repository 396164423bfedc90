// The in-memory form of one Kineto trace: every event keeps the exact bytes it was read
// from, the few fields tracelane looks at, and where those fields' values sit in the
// bytes, so that an unchanged event is written back byte for byte and a changed one keeps
// the original text of every number it keeps (SPEC 9.1).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tracelane/text_buffer.hpp"

namespace tracelane {

class Timings;

using Ns = int64_t;  // time inside the core is always integer nanoseconds

// A failure that stops one file: the message starts with the file, then the position.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An integer stored at any address (alignment 1), read and assigned by value only. Id and
// Time hold theirs so, and sit in Event without padding: a trace holds millions of Events,
// and their padding alone was 54 of an Event's 296 bytes. Unlike a packed struct's member,
// it cannot be bound to a reference to a misaligned integer: passed where a reference is
// taken, it converts to a temporary.
template <class T>
class Unaligned {
 public:
  Unaligned() = default;
  Unaligned(T value) { std::memcpy(bytes_, &value, sizeof value); }  // implicit: it is a T
  operator T() const {
    T value;
    std::memcpy(&value, bytes_, sizeof value);
    return value;
  }

 private:
  unsigned char bytes_[sizeof(T)] = {};
};

// A view of text that lives elsewhere (the document, a trace's arena, a literal), in 8
// bytes where std::string_view takes 16: an Event holds five, and a trace millions of
// Events. The low 48 bits are the address (user-space addresses on x86-64 and AArch64
// Linux fit in 48 bits), the high 16 the size. Text of 65535 bytes or more, or at an
// address that does not fit, is described by a record of its own and the address is the
// record's. Records are kept for the process's life: 16 bytes each time such text is
// viewed (read from a file, or assigned), at most 0.025% of the long text read. It
// converts to and from std::string_view implicitly, and is compared as one.
class Text {
 public:
  Text() = default;
  Text(std::string_view view) {  // implicit: it is a view
    const auto address = uint64_t(reinterpret_cast<uintptr_t>(view.data()));
    if (view.size() < kLong && address <= kAddressMask)
      bits_ = address | uint64_t(view.size()) << kAddressBits;
    else
      bits_ = long_record(view) | kLong << kAddressBits;
  }
  Text(const char* text) : Text(std::string_view(text)) {}
  Text(const std::string& text) : Text(std::string_view(text)) {}

  operator std::string_view() const { return view(); }
  std::string_view view() const {
    const uint64_t size = bits_ >> kAddressBits;
    const char* address = reinterpret_cast<const char*>(uintptr_t(bits_ & kAddressMask));
    if (size == kLong) return *reinterpret_cast<const std::string_view*>(address);
    return std::string_view(address, size_t(size));
  }
  const char* data() const { return view().data(); }
  size_t size() const { return view().size(); }
  bool empty() const { return view().empty(); }
  std::string_view substr(size_t pos, size_t count = std::string_view::npos) const { return view().substr(pos, count); }

  friend bool operator==(const Text& a, const Text& b) { return a.view() == b.view(); }
  friend bool operator==(const Text& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const Text& a, const char* b) { return a.view() == std::string_view(b); }
  friend bool operator==(const Text& a, const std::string& b) { return a.view() == std::string_view(b); }
  friend auto operator<=>(const Text& a, const Text& b) { return a.view() <=> b.view(); }
  friend auto operator<=>(const Text& a, std::string_view b) { return a.view() <=> b; }

 private:
  static constexpr int kAddressBits = 48;
  static constexpr uint64_t kAddressMask = (uint64_t(1) << kAddressBits) - 1;
  static constexpr uint64_t kLong = 0xffff;
  // The address of a record holding `view`, which fits in 48 bits (throws if not).
  static uint64_t long_record(std::string_view view);

  uint64_t bits_ = 0;
};

// A JSON scalar used as pid, tid, args.stream or flow id. Its text is the event's
// (Event::id_text), so 5, 5.0 and "5" are three different ids.
struct Id {
  enum class Kind : uint8_t { absent, integer, string, other };
  Kind kind = Kind::absent;
  Unaligned<int64_t> value = 0;  // when kind == integer

  bool present() const { return kind != Kind::absent; }
  bool is_int() const { return kind == Kind::integer; }
};

struct Time {
  bool present : 1 = false;
  bool numeric : 1 = false;  // a JSON number we could read as exact nanoseconds
  Unaligned<Ns> ns = 0;
};

// Byte range of a value inside Event::raw.
struct Span {
  uint32_t offset = 0;
  uint32_t length = 0;
};

// A Span as an Event keeps it, in 3 bytes (an Event keeps eight): a 16-bit offset and an
// 8-bit length inside the event's text, as they are in nearly every event (its values are
// numbers, ids and short names). An event with a span past that keeps all its spans in a
// record of their own (Event::set_spans).
struct PackedSpan {
  static constexpr uint32_t kMostOffset = 0xffff, kMostLength = 0xff;
  static bool fits(Span span) { return span.offset <= kMostOffset && span.length <= kMostLength; }
  PackedSpan() = default;
  explicit PackedSpan(Span span) : bytes{uint8_t(span.offset), uint8_t(span.offset >> 8), uint8_t(span.length)} {}
  Span span() const { return Span{uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8, bytes[2]}; }

  uint8_t bytes[3] = {};
};

// The fields whose value text the writer may replace.
enum Field : uint8_t { kPid, kTid, kTs, kDur, kId, kStream, kArgName, kFieldCount };

// Where each field's value sits in an event's text (length 0: the event has none), and
// last args.original_stream's when it is an integer (SPEC 9.8).
struct EventSpans {
  std::array<Span, kFieldCount> fields{};
  Span original_stream{};
  std::string_view ph;  // unescaped, where it is not one character other than NUL (Event::ph)
};

// Every byte as a one-character text, at one address for the program's life: the views
// of one-character phs (Event::ph).
inline constexpr std::array<char, 256> kByteTexts = [] {
  std::array<char, 256> bytes{};
  for (int c = 0; c < 256; ++c) bytes[size_t(c)] = char(c);
  return bytes;
}();

struct Event {
  Text raw;        // "{...}" exactly as read (or as synthesised)
  Text cat, name;  // unescaped

  // pid, tid, id, ts and dur hold the values the event is written with. Each bit of
  // `changed` says one field's value is new (set_tid() and the like): it is written in
  // place of the text read, which keeps the value read (original_int(), original_ns()).
  // New values are held in place, not beside the old: a trace holds millions of Events.
  Id pid, tid, id;
  Time ts, dur;
  // Where each field's value sits in raw, and then args.original_stream's: span(),
  // set_spans(), original_stream_text(), not read directly. With far_spans, the first 8
  // bytes hold the address of a record of all of them instead, kept by the event's trace.
  std::array<PackedSpan, kFieldCount + 1> packed_spans{};
  uint8_t changed = 0;
  uint8_t ph_byte = 0;  // ph when it is one character other than NUL (ph(), set_ph())
  bool has_args : 1 = false;
  bool has_original_stream : 1 = false;  // args.original_stream (already-laned exporters)
  bool dropped : 1 = false;
  bool name_prefixed : 1 = false;  // merge: args.name gets the rank prefix
  bool lane_metadata : 1 = false;  // a thread_name/thread_sort_index tracelane made for a lane
  bool pp_flow : 1 = false;        // an end of a PP arrow tracelane made (SPEC 7)
  bool synthesised : 1 = false;    // made by tracelane (EventBuilder): not in the input
  bool far_spans : 1 = false;      // a span does not fit a PackedSpan: packed_spans holds a record's address

  // ph unescaped (empty when absent): nearly always one character, held in the event;
  // any other ph is held by the far record (set_spans with EventSpans::ph).
  std::string_view ph() const {
    if (ph_byte) return std::string_view(&kByteTexts[ph_byte], 1);
    return far_spans ? far_record().ph : std::string_view();
  }
  // Gives the event a one-character ph (events tracelane makes).
  void set_ph(char c) { ph_byte = uint8_t(c); }
  // Whether `ph` is held in the event (set_ph), rather than in a far record.
  static bool ph_fits(std::string_view ph) { return ph.size() == 1 && ph[0] != '\0'; }

  // Where a field's value sits in raw; length 0 when the event has none.
  Span span(Field field) const {
    if (far_spans) return far_record().fields[field];
    return packed_spans[field].span();
  }
  bool has_span(Field field) const { return span(field).length != 0; }
  // Sets every span at once. Spans that do not all fit a PackedSpan go to a record, a copy
  // of whose bytes keep(bytes) keeps as long as the event's trace and returns (the trace's
  // arena, or a reader's StringKeeper's): only events with a value of 256 bytes or more, or
  // past 64 KiB into the event, need one. Copies of the event share it; no one changes it.
  template <class Keep>
  void set_spans(const EventSpans& spans, const Keep& keep) {
    bool near = PackedSpan::fits(spans.original_stream) && spans.ph.empty();
    for (const Span& s : spans.fields) near = near && PackedSpan::fits(s);
    far_spans = !near;
    if (!near) {
      const std::string_view kept = keep(std::string_view(reinterpret_cast<const char*>(&spans), sizeof spans));
      const char* record = kept.data();
      packed_spans = {};
      std::memcpy(static_cast<void*>(packed_spans.data()), &record, sizeof record);
      return;
    }
    for (int f = 0; f < kFieldCount; ++f) packed_spans[f] = PackedSpan(spans.fields[f]);
    packed_spans[kFieldCount] = PackedSpan(spans.original_stream);
  }
  // The value text of a field, as read (empty when the event has none). Events hold
  // spans, not views, of these (an event is kept per trace event: 4 bytes each, not 16).
  std::string_view value_text(Field field) const {
    const Span where = span(field);
    return raw.substr(where.offset, where.length);
  }
  // The text of pid, tid, id or args.stream as read (strings with their quotes); empty
  // when absent, and for events tracelane made (their ids are not read back).
  std::string_view id_text(Field field) const {
    if (synthesised) return {};
    if (field == kStream) return value_text(kStream);
    const Id& which = field == kPid ? pid : field == kTid ? tid : id;
    return which.present() ? value_text(field) : std::string_view();
  }
  // args.stream as read, from its text (id_text(kStream)): held by no event, as only the
  // measured slices' is ever read, and a trace holds millions of events.
  Id stream() const;
  // args.name as written, with its quotes, when it is a string read from the input.
  std::string_view arg_name_raw() const { return synthesised ? std::string_view() : value_text(kArgName); }
  // args.name unescaped, when it is a string read from the input, else empty: its text
  // between the quotes, or, where that holds a backslash, the string it spells, made in
  // `buffer` (a text as "\ud800", which JSON allows and no string is, stays as written).
  std::string_view arg_name(std::string& buffer) const;

  // The text of args.original_stream when it is an integer, else empty.
  std::string_view original_stream_text() const {
    const Span where = far_spans ? far_record().original_stream : packed_spans[kFieldCount].span();
    return raw.substr(where.offset, where.length);
  }

  bool is_flow() const { return ph_byte == 's' || ph_byte == 't' || ph_byte == 'f'; }
  // Places the event on track `lane_tid`; args.stream stays as it is (SPEC 9.14).
  void set_tid(int64_t lane_tid) {
    tid.value = lane_tid;
    changed |= 1u << kTid;
  }
  // Gives pid or a flow's id a new integer (merge), written in place of the text read.
  void set_pid(int64_t value) {
    pid.value = value;
    changed |= 1u << kPid;
  }
  void set_id(int64_t value) {
    id.value = value;
    changed |= 1u << kId;
  }
  // Gives ts or dur a new time (merge, coalescing), written in place of the text read.
  void set_ts(Ns value) {
    ts.ns = value;
    changed |= 1u << kTs;
  }
  void set_dur(Ns value) {
    dur.ns = value;
    changed |= 1u << kDur;
  }
  // args.stream is written as args.original_stream's text: the stream a PyTorch-laned
  // slice ran on, put back where its exporter wrote the lane (SPEC 9.8). Needs
  // original_stream_text().
  void put_back_recorded_stream() { changed |= 1u << kStream; }
  // The values written: the new one where changed, else the one read.
  int64_t final_tid() const { return tid.value; }
  int64_t final_pid() const { return pid.value; }
  int64_t final_id() const { return id.value; }
  Ns final_ts() const { return ts.ns; }
  Ns final_dur() const { return dur.ns; }
  // The integer read as pid, tid or id (Id::is_int), even after a change: read again from
  // the text when changed.
  int64_t original_int(Field field) const;
  // The time read as ts or dur (Time::numeric), even after a change.
  Ns original_ns(Field field) const;

 private:
  // The record's bytes lie anywhere in a block of text: read by copy, not in place.
  EventSpans far_record() const {
    const char* record;
    std::memcpy(&record, packed_spans.data(), sizeof record);
    EventSpans spans;
    std::memcpy(static_cast<void*>(&spans), record, sizeof spans);
    return spans;
  }
};
// Brings the start of a text into cache ahead of its use. A pass over the events reads a
// few bytes of each event's text, and events lie far apart in the document: a cache miss
// each, unless the pass asks for them some events ahead (bench/README.md).
inline void prefetch(std::string_view text) { __builtin_prefetch(text.data()); }
inline constexpr size_t kPrefetchAhead = 16;  // events

// A trace's event records are about as large as its text (bench/README.md): keep them so.
static_assert(sizeof(Event) <= 96, "Event grew: a 2 GB trace holds about 7 M of them");
static_assert(std::is_trivially_copyable_v<EventSpans>, "a far record is kept as its bytes");
static_assert(sizeof(Text) == 8);

// A top-level key of the trace object other than traceEvents, with its raw value.
struct TopLevelField {
  std::string key;             // unescaped
  std::string_view key_raw;    // with quotes
  std::string_view value_raw;  // exactly as read
  std::string replacement;     // when non-empty, written instead of value_raw
};

struct Trace {
  // Events point into `storage` and `arena`: a copy would dangle, so there is none, and
  // moves must not relocate the text (which is why the arena holds pointers).
  Trace() = default;
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;
  Trace(Trace&&) noexcept = default;
  Trace& operator=(Trace&&) noexcept = default;

  // Keeps a copy of `text` as long as the trace and returns a view of it. Copies share
  // blocks of kKeptBlock bytes: a trace gains tens of thousands of made events (kernel-run
  // spans, PP arrows), and a string each cost about twice their text (bench/README.md,
  // "Event records and the memory peak"). A block is appended to only within the capacity
  // it was given, so no view of it moves; the last block may be any of the arena's (a
  // reader's StringKeeper's too).
  std::string_view keep(std::string_view text) {
    if (text.size() > kKeptBlock / 4) {
      arena.push_back(std::make_unique<std::string>(text));
      return *arena.back();
    }
    if (arena.empty() || arena.back()->capacity() - arena.back()->size() < text.size()) {
      arena.push_back(std::make_unique<std::string>());
      arena.back()->reserve(kKeptBlock);
    }
    std::string& block = *arena.back();
    const size_t at = block.size();
    block.append(text);
    return std::string_view(block.data() + at, text.size());
  }
  static constexpr size_t kKeptBlock = size_t(16) << 10;

  std::string source;                      // file name used in messages
  std::string_view document;               // the whole text as parsed, for restore data (SPEC 9.12)
  std::optional<uint32_t> document_crc32;  // its CRC-32, when the reader had it (ParseOptions)
  std::vector<TopLevelField> top;
  size_t events_position = 0;  // index in `top` before which traceEvents is written
  bool array_format = false;   // the input was a list of events (JSON Array Format), no object
  std::vector<Event> events;
  // The largest integer tid among the events read (INT64_MIN: none), which TrackTids
  // relies on. INT64_MAX in a Trace not made by parse_trace: not known.
  int64_t max_int_tid = INT64_MAX;

  // Storage the string_views above point into.
  std::shared_ptr<void> storage;
  std::vector<std::unique_ptr<std::string>> arena;  // text of synthesised events

  // Where an event read from the input begins in it, for messages (not for synthesised
  // events: Event::synthesised).
  uint64_t byte_offset(const Event& event) const { return uint64_t(event.raw.data() - document.data()); }

  const TopLevelField* find_top(std::string_view key) const {
    for (const auto& field : top)
      if (field.key == key) return &field;
    return nullptr;
  }
};

struct ParseOptions {
  // A document larger than this is read in chunks of whole events (SPEC 9.10): simdjson
  // reads at most 4 GiB in one document, and its index of a large one is costly. 0 means
  // 8 MB, 4 MB with threads to spare (src/trace_parser.cpp says why); tests lower it to
  // exercise the chunked path on small traces.
  size_t max_document_bytes = 0;
  // Parsed beside other traces in the same arena (a merge's ranks, a sweep's files), which
  // keep its threads busy: a document below that size is then read in chunks only with 4
  // threads or more, not from 2 on as a trace alone is (src/trace_parser.cpp).
  bool beside_others = false;
  // The CRC-32 of the whole text, where the caller has it checked already (a gzip file's
  // trailers: gunzip): the trace keeps it for restore data.
  std::optional<uint32_t> document_crc32 = std::nullopt;
};

// Parses a trace from decompressed JSON bytes. Takes ownership of `json`. Throws Error
// with "<source>: <reason>" on anything that is not a Kineto trace.
Trace parse_trace(std::string json, std::string source);
// `timings`, when given, gets the parse's phases (pad, scan, read) as scoped timers.
Trace parse_trace(std::string json, std::string source, const ParseOptions& options, Timings* timings = nullptr);
Trace parse_trace(TextBuffer json, std::string source, const ParseOptions& options, Timings* timings = nullptr);

}  // namespace tracelane
