// Reads a Kineto trace with simdjson On-Demand in one pass. For each event it keeps the
// object's exact bytes and, for the handful of fields tracelane reads or rewrites, their
// values and the byte ranges of their value text; every other field is skipped unread.
#include <simdjson.h>

#include <cctype>

#include "tracelane/decimal_time.hpp"
#include "tracelane/trace.hpp"

namespace tracelane {
namespace {

namespace od = simdjson::ondemand;

struct Storage {
  std::string json;  // the document plus simdjson's padding
  od::parser parser;  // owns the unescaped strings the events point at
};

std::string_view trim_right(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

class EventReader {
 public:
  EventReader(const char* document_begin, const std::string& source)
      : document_begin_(document_begin), source_(source) {}

  [[noreturn]] void fail(std::string_view what, const char* where) const {
    std::string message = source_ + ": ";
    message += what;
    if (where) message += " (byte " + std::to_string(where - document_begin_) + ")";
    throw Error(message);
  }

  [[noreturn]] void fail_json(simdjson::error_code error, od::document& doc, std::string_view context) {
    auto location = doc.current_location();
    fail(std::string("invalid JSON ") + std::string(context) + ": " + simdjson::error_message(error),
         location.error() ? nullptr : location.value_unsafe());
  }

  // Reads one event object. `index` is its position in traceEvents, for messages.
  bool read(od::value value, Event& event, size_t index, od::document& doc) {
    od::object object;
    if (value.get_object().get(object)) return false;
    const char* begin = nullptr;
    std::array<std::string_view, kFieldCount> tokens{};
    for (auto field_result : object) {
      od::field field;
      if (auto error = std::move(field_result).get(field)) fail_json(error, doc, event_context(index));
      od::raw_json_string key = field.key();
      od::value v = field.value();
      if (!begin) {
        // The first key's quote is one token after '{'; step back over whitespace.
        const char* key_quote = reinterpret_cast<const char*>(key.raw()) - 1;
        begin = key_quote - 1;
        while (*begin != '{') --begin;
      }
      if (key == "ph") {
        read_string(v, event.ph);
      } else if (key == "cat") {
        read_string(v, event.cat);
      } else if (key == "name") {
        read_string(v, event.name);
      } else if (key == "pid") {
        read_id(v, event.pid, tokens[kPid]);
      } else if (key == "tid") {
        read_id(v, event.tid, tokens[kTid]);
      } else if (key == "id") {
        read_id(v, event.id, tokens[kId]);
      } else if (key == "ts") {
        read_time(v, event.ts, tokens[kTs]);
      } else if (key == "dur") {
        read_time(v, event.dur, tokens[kDur]);
      } else if (key == "args") {
        od::object args;
        if (v.get_object().get(args) == simdjson::SUCCESS) {
          event.has_args = true;
          for (auto arg_result : args) {
            od::field arg;
            if (auto error = std::move(arg_result).get(arg)) fail_json(error, doc, event_context(index));
            od::raw_json_string arg_key = arg.key();
            od::value arg_value = arg.value();
            if (arg_key == "stream") {
              read_id(arg_value, event.stream, tokens[kStream]);
            } else if (arg_key == "name") {
              std::string_view raw = arg_value.raw_json_token();
              if (!raw.empty() && raw[0] == '"') {
                tokens[kArgName] = trim_right(raw);
                event.arg_name_raw = tokens[kArgName];
                read_string(arg_value, event.arg_name);
              }
            } else if (arg_key == "original_stream") {
              event.has_original_stream = true;
            }
          }
        }
      }
    }
    // The object is consumed; the iterator stands on the ',' or ']' after it.
    const char* end_token = nullptr;
    if (doc.current_location().get(end_token)) fail("unexpected end of traceEvents", nullptr);
    if (!begin) {
      // An empty object "{}": find its braces around the current position.
      const char* p = end_token - 1;
      while (*p != '}') --p;
      const char* q = p - 1;
      while (*q != '{') --q;
      begin = q;
    }
    std::string_view raw(begin, size_t(end_token - begin));
    raw = trim_right(raw);
    event.raw = raw;
    event.byte_offset = uint64_t(begin - document_begin_);
    for (int f = 0; f < kFieldCount; ++f) {
      if (tokens[f].data()) {
        event.spans[f].offset = uint32_t(tokens[f].data() - begin);
        event.spans[f].length = uint32_t(tokens[f].size());
      }
    }
    return true;
  }

 private:
  std::string event_context(size_t index) const { return "in event #" + std::to_string(index); }

  static void read_string(od::value& v, std::string_view& out) {
    // Most strings have no escapes: view them in place instead of unescaping a copy.
    std::string_view raw = trim_right(v.raw_json_token());
    if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"' &&
        raw.find('\\') == std::string_view::npos) {
      out = raw.substr(1, raw.size() - 2);
      return;
    }
    std::string_view s;
    if (v.get_string().get(s) == simdjson::SUCCESS) out = s;
  }

  static void read_id(od::value& v, Id& id, std::string_view& token) {
    std::string_view raw = trim_right(v.raw_json_token());
    id = Id{};
    id.text = raw;
    token = raw;
    od::json_type type;
    if (v.type().get(type) != simdjson::SUCCESS) {
      id.kind = Id::Kind::other;
      return;
    }
    if (type == od::json_type::number && parse_json_int(raw, id.value)) {
      id.kind = Id::Kind::integer;
    } else if (type == od::json_type::string) {
      id.kind = Id::Kind::string;
    } else {
      id.kind = Id::Kind::other;
      // Objects and arrays as ids: consume them so the text is complete.
      if (type == od::json_type::object || type == od::json_type::array) {
        std::string_view whole;
        if (type == od::json_type::object) {
          od::object o;
          if (v.get_object().get(o) == simdjson::SUCCESS && o.raw_json().get(whole) == simdjson::SUCCESS)
            id.text = token = trim_right(whole);
        } else {
          od::array a;
          if (v.get_array().get(a) == simdjson::SUCCESS && a.raw_json().get(whole) == simdjson::SUCCESS)
            id.text = token = trim_right(whole);
        }
      }
    }
  }

  static void read_time(od::value& v, Time& time, std::string_view& token) {
    std::string_view raw = trim_right(v.raw_json_token());
    time = Time{};
    time.present = true;
    token = raw;
    od::json_type type;
    if (v.type().get(type) == simdjson::SUCCESS && type == od::json_type::number)
      time.numeric = parse_us_as_ns(raw, time.ns);
    if (type == od::json_type::object || type == od::json_type::array) token = {};  // never spliced
  }

  const char* document_begin_;
  const std::string& source_;
};

std::string_view raw_value(od::value& value) {
  od::json_type type;
  std::string_view raw;
  if (value.type().get(type)) return {};
  if (type == od::json_type::object) {
    od::object o;
    if (value.get_object().get(o) || o.raw_json().get(raw)) return {};
  } else if (type == od::json_type::array) {
    od::array a;
    if (value.get_array().get(a) || a.raw_json().get(raw)) return {};
  } else {
    raw = value.raw_json_token();
  }
  return trim_right(raw);
}

}  // namespace

Trace parse_trace(std::string json, std::string source) {
  Trace trace;
  trace.source = std::move(source);
  auto storage = std::make_shared<Storage>();
  size_t length = json.size();
  storage->json = std::move(json);
  storage->json.resize(length + simdjson::SIMDJSON_PADDING, '\0');
  storage->json[length] = '\0';
  const char* begin = storage->json.data();
  EventReader reader(begin, trace.source);

  if (length == 0) reader.fail("empty file, not a Kineto trace", nullptr);
  od::document doc;
  if (auto error = storage->parser.iterate(begin, length, storage->json.size()).get(doc))
    reader.fail(std::string("invalid JSON: ") + simdjson::error_message(error), nullptr);
  od::object root;
  if (auto error = doc.get_object().get(root)) {
    if (error == simdjson::INCORRECT_TYPE) reader.fail("top level is not a JSON object, not a Kineto trace", nullptr);
    size_t last = length;
    while (last > 0 && std::isspace(static_cast<unsigned char>(begin[last - 1]))) --last;
    if (last > 0 && begin[last - 1] != '}')
      reader.fail("invalid JSON: the document does not end with '}' (truncated, or trailing content)",
                  begin + last - 1);
    reader.fail(std::string("invalid JSON: ") + simdjson::error_message(error), nullptr);
  }
  bool have_events = false;
  for (auto field_result : root) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) reader.fail_json(error, doc, "at top level");
    // key() must be read before unescaped_key(), which consumes it.
    const char* key_begin = reinterpret_cast<const char*>(field.key().raw()) - 1;
    std::string_view key_unescaped;
    if (auto error = field.unescaped_key().get(key_unescaped)) reader.fail_json(error, doc, "in a top-level key");
    std::string key(key_unescaped);
    od::value value = field.value();
    if (key == "traceEvents") {
      if (have_events) reader.fail("traceEvents appears twice", nullptr);
      have_events = true;
      trace.events_position = trace.top.size();
      od::array events;
      if (value.get_array().get(events)) reader.fail("traceEvents is not a list, not a Kineto trace", nullptr);
      size_t index = 0;
      // Kineto events average 200-400 bytes: reserving avoids regrowing a large vector.
      trace.events.reserve(length / 256 + 16);
      for (auto element : events) {
        od::value v;
        if (auto error = std::move(element).get(v)) reader.fail_json(error, doc, "in traceEvents");
        Event& event = trace.events.emplace_back();
        const char* where = nullptr;
        if (doc.current_location().get(where)) where = nullptr;
        if (!reader.read(v, event, index, doc)) {
          reader.fail("event #" + std::to_string(index) + " is not a JSON object", where);
        }
        if (event.tid.is_int() && event.tid.value > trace.max_int_tid) trace.max_int_tid = event.tid.value;
        ++index;
      }
    } else {
      TopLevelField top;
      top.key = std::move(key);
      top.value_raw = raw_value(value);
      if (top.value_raw.empty()) reader.fail_json(simdjson::TAPE_ERROR, doc, "in top-level key \"" + top.key + "\"");
      const char* key_end = key_begin + 1;
      while (*key_end != '"' || key_end[-1] == '\\') ++key_end;  // escaped quotes are rare but legal
      top.key_raw = std::string_view(key_begin, size_t(key_end + 1 - key_begin));
      trace.top.push_back(std::move(top));
    }
  }
  const char* trailing = nullptr;
  if (doc.current_location().get(trailing) == simdjson::SUCCESS)
    reader.fail("trailing content after the JSON document", trailing);
  if (!have_events) reader.fail("no traceEvents list, not a Kineto trace", nullptr);
  trace.storage = storage;
  return trace;
}

}  // namespace tracelane
