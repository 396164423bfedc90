#include "event_writer.hpp"

#include <algorithm>

#include "tracelane/decimal_time.hpp"

namespace tracelane {

void append_json_string(std::string& out, std::string_view text) {
  static const char* hex = "0123456789abcdef";
  out.push_back('"');
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(hex[c >> 4]);
          out.push_back(hex[c & 15]);
        } else {
          out.push_back(char(c));
        }
    }
  }
  out.push_back('"');
}

size_t written_size_bound(const Event& event, size_t prefix_length) {
  // A changed value is at most an int64 or a time in microseconds: 21 and 26 characters.
  constexpr size_t kLongestValue = 32;
  size_t changed = size_t(__builtin_popcount(event.changed));
  return event.raw.size() + 4 + changed * kLongestValue + (event.name_prefixed ? prefix_length : 0);
}

size_t top_level_size_bound(const Trace& trace) {
  size_t bound = 64;
  for (const auto& field : trace.top)
    bound += 8 + field.key_raw.size() + field.key.size() + 2 +
             (field.replacement.empty() ? field.value_raw.size() : field.replacement.size());
  return bound;
}

void append_event(std::string& out, const Event& event, std::string_view name_prefix) {
  uint8_t changed = event.changed;
  bool prefix = event.name_prefixed && event.has_span(kArgName);
  if (!changed && !prefix) {
    out += event.raw;
    return;
  }
  // Replace the changed values in byte order.
  struct Cut {
    uint32_t offset, length;
    int field;
  };
  std::array<Cut, kFieldCount> cuts;
  int n = 0;
  for (int f = 0; f < kFieldCount; ++f) {
    bool want = (changed >> f) & 1 || (f == kArgName && prefix);
    if (!want) continue;
    const Span span = event.span(Field(f));
    if (!span.length)
      throw Error("internal: no value to replace for field " + std::to_string(f) + " in event " +
                  std::string(event.raw.substr(0, 200)));
    cuts[n++] = Cut{span.offset, span.length, f};
  }
  std::sort(cuts.begin(), cuts.begin() + n, [](const Cut& a, const Cut& b) { return a.offset < b.offset; });
  uint32_t pos = 0;
  for (int k = 0; k < n; ++k) {
    const Cut& cut = cuts[k];
    out.append(event.raw.data() + pos, cut.offset - pos);
    std::string_view old_text = event.raw.substr(cut.offset, cut.length);
    switch (cut.field) {
      case kPid:
        out += std::to_string(event.final_pid());
        break;
      case kTid:
        out += std::to_string(event.final_tid());
        break;
      case kStream:  // Event::put_back_recorded_stream
        if (event.original_stream_text().empty())
          throw Error("internal: args.stream put back without an integer args.original_stream in event " +
                      std::string(event.raw.substr(0, 200)));
        out += event.original_stream_text();
        break;
      case kId:
        out += std::to_string(event.final_id());
        break;
      case kTs:
        append_ns_as_us(out, event.final_ts());
        break;
      case kDur:
        append_ns_as_us(out, event.final_dur());
        break;
      case kArgName:
        out.push_back('"');
        out += name_prefix;  // plain ASCII, needs no escaping
        out += old_text.substr(1);
        break;
    }
    pos = cut.offset + cut.length;
  }
  out.append(event.raw.data() + pos, event.raw.size() - pos);
}

void set_top_level(Trace& trace, const std::string& key, std::string raw_value) {
  for (auto& field : trace.top)
    if (field.key == key) {
      field.replacement = std::move(raw_value);
      return;
    }
  TopLevelField field;
  std::string quoted;
  append_json_string(quoted, key);
  field.key_raw = trace.keep(quoted);
  field.key = key;
  field.replacement = std::move(raw_value);
  trace.top.push_back(std::move(field));
}

void remove_top_level(Trace& trace, const std::string& key) {
  for (size_t i = 0; i < trace.top.size(); ++i)
    if (trace.top[i].key == key) {
      trace.top.erase(trace.top.begin() + long(i));
      if (trace.events_position > i) --trace.events_position;
      return;
    }
}

EventBuilder& EventBuilder::raw(std::string_view key, std::string_view value_text, int field) {
  if (text_.size() > 1) text_ += ", ";
  append_json_string(text_, key);
  text_ += ": ";
  if (field >= 0) spans_[field] = Span{uint32_t(text_.size()), uint32_t(value_text.size())};
  text_ += value_text;
  return *this;
}

EventBuilder& EventBuilder::string(std::string_view key, std::string_view unescaped) {
  std::string quoted;
  append_json_string(quoted, unescaped);
  return raw(key, quoted);
}

EventBuilder& EventBuilder::integer(std::string_view key, int64_t value, int field) {
  return raw(key, std::to_string(value), field);
}

EventBuilder& EventBuilder::time(std::string_view key, Ns ns, int field) { return raw(key, ns_as_us(ns), field); }

EventBuilder& EventBuilder::args_name(std::string_view label) {
  if (text_.size() > 1) text_ += ", ";
  text_ += "\"args\": {\"name\": ";
  size_t start = text_.size();
  append_json_string(text_, label);
  spans_[kArgName] = Span{uint32_t(start), uint32_t(text_.size() - start)};
  text_ += "}";
  return *this;
}

Event EventBuilder::finish(Trace& owner) {
  text_ += "}";
  Event event;
  event.raw = owner.keep(text_);
  EventSpans spans;
  spans.fields = spans_;
  event.set_spans(spans, [&owner](std::string_view bytes) { return owner.keep(bytes); });
  event.synthesised = true;
  text_ = "{";
  spans_ = {};
  return event;
}

}  // namespace tracelane
