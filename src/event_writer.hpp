// Writes events back as JSON: an unchanged event is its original bytes; a changed one is
// its original bytes with only the changed values' text replaced. Also how the core makes
// events and top-level values of its own (EventBuilder, set_top_level). Private to the core.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parallel_ranges.hpp"
#include "tracelane/trace.hpp"

namespace tracelane {

// Builds a new event's text field by field, remembering where the values that merge may
// rewrite sit, so synthesised events are patched exactly like read ones.
class EventBuilder {
 public:
  EventBuilder& raw(std::string_view key, std::string_view value_text, int field = -1);
  EventBuilder& string(std::string_view key, std::string_view unescaped);
  EventBuilder& integer(std::string_view key, int64_t value, int field = -1);
  EventBuilder& time(std::string_view key, Ns ns, int field);
  // Writes "args": {"name": <label>}, remembering the label for merge's rank prefix.
  EventBuilder& args_name(std::string_view label);
  // Finishes the object; the event's raw text lives in owner.arena.
  Event finish(Trace& owner);

 private:
  std::string text_ = "{";
  std::array<Span, kFieldCount> spans_{};
};

// Appends `per_item` events for each k in [0, count) to trace.events, in order of k:
// make(k, owner, out) fills out[0, per_item), their slots at the vector's end. They are
// made over ranges of k concurrently, each range's text kept by a scratch trace
// (`owner`, for EventBuilder::finish) whose arena is then moved into the trace's; the
// events are made in place, never copied. make() must only read the trace's events
// before these.
template <class Make>
void append_made_events(Trace& trace, size_t count, size_t per_item, const Make& make) {
  // Smaller than a walk's ranges (events_per_range): a trace's arrows or kernel runs are
  // tens of thousands, which at 64 Ki a range would be made on one thread.
  constexpr size_t kMadePerRange = 4096;
  const size_t base = trace.events.size();
  trace.events.resize(base + count * per_item);
  std::vector<Trace> owners((count + kMadePerRange - 1) / kMadePerRange);
  for_each_index(owners.size(), [&](size_t r) {
    for (size_t k = r * kMadePerRange; k < std::min(count, (r + 1) * kMadePerRange); ++k)
      make(k, owners[r], trace.events.data() + base + k * per_item);
  });
  for (Trace& owner : owners)
    for (auto& text : owner.arena) trace.arena.push_back(std::move(text));
}

// Sets a top-level key's raw JSON value, appending the key when the trace lacks it.
void set_top_level(Trace& trace, const std::string& key, std::string raw_value);
void remove_top_level(Trace& trace, const std::string& key);

// Appends `text` as a JSON string literal (with quotes), escaping as JSON requires.
void append_json_string(std::string& out, std::string_view text);

// Appends one event. `name_prefix` is put in front of args.name when the event's
// name_prefixed flag is set (merge's "PP rank <p> | ").
void append_event(std::string& out, const Event& event, std::string_view name_prefix = {});

// At least as many bytes as append_event() writes for `event` (with a prefix of
// `prefix_length`), so that an output buffer reserved once never grows: growing copies a
// buffer the size of the trace while both copies live.
size_t written_size_bound(const Event& event, size_t prefix_length = 0);
// The same for write_trace_object()'s own text: braces, keys, top-level values.
size_t top_level_size_bound(const Trace& trace);

// Appends `{` + the trace's top-level fields (with `extra` key/raw-value pairs appended)
// and calls `write_events(out)` where traceEvents' array body goes, then `}`.
template <class WriteEvents>
void write_trace_object(std::string& out, const Trace& trace,
                        const std::vector<std::pair<std::string, std::string>>& extra, WriteEvents&& write_events) {
  out += "{\n";
  bool first = true;
  auto separator = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  auto write_events_key = [&] {
    separator();
    out += "  \"traceEvents\": [\n";
    write_events(out);
    out += "\n  ]";
  };
  for (size_t i = 0; i < trace.top.size(); ++i) {
    if (i == trace.events_position) write_events_key();
    const auto& field = trace.top[i];
    separator();
    out += "  ";
    out += field.key_raw;
    out += ": ";
    out += field.replacement.empty() ? std::string_view(field.value_raw) : std::string_view(field.replacement);
  }
  if (trace.events_position >= trace.top.size()) write_events_key();
  for (const auto& [key, value] : extra) {
    separator();
    out += "  ";
    append_json_string(out, key);
    out += ": ";
    out += value;
  }
  out += "\n}\n";
}

}  // namespace tracelane
