// Writes events back as JSON: an unchanged event is its original bytes; a changed one is
// its original bytes with only the changed values' text replaced.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracelane/trace.hpp"

namespace tracelane {

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
                        const std::vector<std::pair<std::string, std::string>>& extra,
                        WriteEvents&& write_events) {
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
