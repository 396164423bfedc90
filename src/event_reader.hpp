// The event reader of the trace reader: simdjson On-Demand values -> Event. For each event
// it keeps the object's exact bytes and, for the handful of fields tracelane reads or
// rewrites, their values and the byte ranges of their value text; every other value is
// walked only to check it (json_grammar.hpp says why) and is never copied.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "json_grammar.hpp"
#include "tracelane/trace.hpp"

namespace tracelane {

// Copies unescaped strings into blocks of an arena (the trace's, or a chunk's that is
// appended to the trace's); the views stay valid because a block never grows past the
// capacity it was given, and moving the block's unique_ptr does not move its text.
class StringKeeper {
 public:
  using Arena = std::vector<std::unique_ptr<std::string>>;
  explicit StringKeeper(Arena& arena) : arena_(arena) {}
  std::string_view keep(std::string_view text) {
    if (!block_ || block_->capacity() - block_->size() < text.size()) {
      arena_.push_back(std::make_unique<std::string>());
      block_ = arena_.back().get();
      block_->reserve(std::max(text.size(), size_t(16) << 10));
    }
    size_t at = block_->size();
    block_->append(text);
    return std::string_view(block_->data() + at, text.size());
  }

 private:
  Arena& arena_;
  std::string* block_ = nullptr;
};

// Reads the events and top-level values of one document; `check` is that document's
// grammar check, which also words the messages.
class EventReader {
 public:
  EventReader(GrammarCheck& check, StringKeeper& strings) : check_(check), strings_(strings) {}

  // Reads one event object; false when the value is not an object. `index` is its
  // position in traceEvents, for messages. Every value of the event is checked.
  bool read(simdjson::ondemand::value& value, Event& event, size_t index, simdjson::ondemand::document& doc);

  // Checks a top-level value (not traceEvents) and returns its exact text.
  std::string_view read_top_level(simdjson::ondemand::value& v, simdjson::ondemand::document& doc,
                                  const std::string& key) {
    check_.checking_top_level(key, doc);
    return check_.checked_text(v, 2);
  }

  GrammarCheck& check() { return check_; }

 private:
  void read_args(simdjson::ondemand::value& v, Event& event, std::array<std::string_view, kFieldCount>& tokens,
                 std::string_view& original_stream);
  void read_string(simdjson::ondemand::value& v, Text& out, size_t level);
  void read_id(simdjson::ondemand::value& v, Id& id, std::string_view& token, size_t level);
  void read_time(simdjson::ondemand::value& v, Time& time, std::string_view& token, size_t level);

  GrammarCheck& check_;
  StringKeeper& strings_;
};

// The one loop that reads events, for every path; `index` counts on across chunks, for
// messages. `next_event()` gives the Event to fill: a new element of the trace's vector, or
// the next of a chunk's slots when chunks are read concurrently (nullptr when the chunk has
// more events than the scanner counted, which a valid list cannot have). `max_int_tid`
// gets the largest integer tid read.
template <class NextEvent>
void read_events(EventReader& reader, simdjson::ondemand::document& doc, simdjson::ondemand::array& events,
                 size_t& index, int64_t& max_int_tid, NextEvent&& next_event) {
  for (auto element : events) {
    if (auto error = element.error()) reader.check().fail_json(error, doc, "in traceEvents");
    simdjson::ondemand::value& v = element.value_unsafe();
    Event* event = next_event();
    if (!event)
      reader.check().fail("event #" + std::to_string(index) + " is not in the chunk the scanner planned", nullptr);
    const char* where = nullptr;
    if (doc.current_location().get(where)) where = nullptr;
    if (!reader.read(v, *event, index, doc)) {
      reader.check().fail("event #" + std::to_string(index) + " is not a JSON object", where);
    }
    if (event->tid.is_int() && event->tid.value > max_int_tid) max_int_tid = event->tid.value;
    ++index;
  }
}

inline void read_events(Trace& trace, EventReader& reader, simdjson::ondemand::document& doc,
                        simdjson::ondemand::array& events, size_t& index) {
  read_events(reader, doc, events, index, trace.max_int_tid, [&] { return &trace.events.emplace_back(); });
}

}  // namespace tracelane
