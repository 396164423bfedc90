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

#include "json_grammar.hpp"
#include "tracelane/trace.hpp"

namespace tracelane {

// Copies unescaped strings into blocks of the trace's arena; the views stay valid because
// a block never grows past the capacity it was given.
class StringKeeper {
 public:
  explicit StringKeeper(Trace& trace) : trace_(trace) {}
  std::string_view keep(std::string_view text) {
    if (!block_ || block_->capacity() - block_->size() < text.size()) {
      trace_.arena.push_back(std::make_unique<std::string>());
      block_ = trace_.arena.back().get();
      block_->reserve(std::max(text.size(), size_t(16) << 10));
    }
    size_t at = block_->size();
    block_->append(text);
    return std::string_view(block_->data() + at, text.size());
  }

 private:
  Trace& trace_;
  std::string* block_ = nullptr;
};

// Reads the events and top-level values of one document; `check` is that document's
// grammar check, which also words the messages.
class EventReader {
 public:
  EventReader(GrammarCheck& check, StringKeeper& strings) : check_(check), strings_(strings) {}

  // Reads one event object; false when the value is not an object. `index` is its
  // position in traceEvents, for messages. Every value of the event is checked.
  bool read(simdjson::ondemand::value value, Event& event, size_t index, simdjson::ondemand::document& doc);

  // Checks a top-level value (not traceEvents) and returns its exact text.
  std::string_view read_top_level(simdjson::ondemand::value& v, simdjson::ondemand::document& doc,
                                  const std::string& key) {
    check_.checking_top_level(key, doc);
    return check_.checked_text(v, 2);
  }

  GrammarCheck& check() { return check_; }

 private:
  void read_string(simdjson::ondemand::value& v, std::string_view& out, size_t level);
  void read_id(simdjson::ondemand::value& v, Id& id, std::string_view& token, size_t level);
  void read_time(simdjson::ondemand::value& v, Time& time, std::string_view& token, size_t level);

  GrammarCheck& check_;
  StringKeeper& strings_;
};

// The one loop that reads events, for both paths; `index` counts on across chunks.
void read_events(Trace& trace, EventReader& reader, simdjson::ondemand::document& doc,
                 simdjson::ondemand::array& events, size_t& index);

}  // namespace tracelane
