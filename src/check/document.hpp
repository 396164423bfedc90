// The verifier's reading of a trace (document.cpp): every event as a canonical text, with
// the fields the checks look at, and ts and dur as integer nanoseconds (rounded as Perfetto
// reads them). Shares nothing with the compactor's reader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tracelane::check {

using Units = __int128;  // nanoseconds

// One element of traceEvents, as the checks see it.
struct Event {
  bool object = false;
  std::string canon;          // the whole event
  std::string name, cat, ph;  // unescaped when they are strings, else empty
  std::string pid, tid;       // canonical texts, empty when absent
  std::string ts_text, dur_text;
  std::string args_no_stream;  // canonical args without "stream"; empty when absent
  std::optional<Units> ts, dur;
  std::string flow_key;  // flows: the event without tid
};

// A flow endpoint (its flow_key is set when it is read).
inline bool flow(const Event& e) { return e.ph == "s" || e.ph == "t" || e.ph == "f"; }

// A trace: its events in order, and its other top-level keys.
struct Document {
  std::vector<Event> events;
  std::vector<std::pair<std::string, std::string>> top;  // keys but traceEvents, canonical
};

// `json` (a whole document) read as a trace: a top-level object with a traceEvents array, or
// a list of events. Counts in `inexact` each ts or dur with digits past the nanosecond.
// Throws CheckInputError(compacted, ...) when it is not JSON or not a trace.
Document read_document(std::string_view json, bool compacted, uint64_t& inexact);

// Nanoseconds as microseconds text, the shortest exact decimal ("12.5").
std::string units_text(Units v);

}  // namespace tracelane::check
