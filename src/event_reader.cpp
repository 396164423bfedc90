// The event reader (see event_reader.hpp): one event object at a time, in the order of its
// fields, reading pid, tid, id, ts, dur, ph, cat, name, args.stream and args.name and
// handing every other value to the grammar check.
#include "event_reader.hpp"

#include <array>

#include "tracelane/decimal_time.hpp"

namespace tracelane {

namespace od = simdjson::ondemand;

namespace {

// Every pass compares an event's ph and cat, and an event's text lies far from the next
// one's in the document: a comparison there costs a cache miss per event. The values
// traces use are kept as views of static text instead, which stays in cache; any other
// value stays a view of the document.
constexpr std::string_view kKnownCats[] = {"kernel",
                                           "ac2g",
                                           "cpu_op",
                                           "cuda_runtime",
                                           "gpu_memcpy",
                                           "gpu_memset",
                                           "cuda_driver",
                                           "cuda_sync",
                                           "Kernel",
                                           "Memcpy",
                                           "Memset",
                                           "Runtime",
                                           "Trace",
                                           "python_function",
                                           "fwdbwd",
                                           "user_annotation",
                                           "gpu_user_annotation",
                                           "cpu_instant_event",
                                           "overhead",
                                           "Sync",
                                           "Driver"};

// Whether two texts of one size hold the same bytes: a loop, not memcmp, since most
// candidates differ in their first byte, and a call per candidate of each event's cat
// was most of the parse's memcmp time.
bool same_bytes(std::string_view a, std::string_view b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

Text static_cat(Text cat) {
  const std::string_view text = cat;
  for (std::string_view known : kKnownCats)
    if (known.size() == text.size() && same_bytes(known, text)) return known;
  return cat;
}

// The nesting level of an event's fields: the document 1, traceEvents 2, the event 3.
constexpr size_t kFieldLevel = 4;

}  // namespace

bool EventReader::read(od::value& value, Event& event, size_t index, od::document& doc) {
  od::object object;
  if (value.get_object().get(object)) return false;
  check_.checking_event(index, doc);
  const char* begin = nullptr;
  std::array<std::string_view, kFieldCount> tokens{};
  std::string_view original_stream;  // args.original_stream's text, when an integer
  Text ph;
  for (auto field_result : object) {
    // The field and its value are used where the loop made them, not copied out: a copy
    // of an iterator just written (a 16-byte load of two smaller stores) stalls on
    // store forwarding, which cost ~7% of the mi300 trace's user time (bench/README.md).
    if (auto error = field_result.error()) check_.fail_json(error);
    od::field& field = field_result.value_unsafe();
    od::raw_json_string key = field.key();
    check_.check_key(key);
    od::value& v = field.value();
    if (!begin) {
      // The first key's quote is one token after '{'; step back over whitespace.
      const char* key_quote = reinterpret_cast<const char*>(key.raw()) - 1;
      begin = key_quote - 1;
      while (*begin != '{') --begin;
    }
    if (key == "ph") {
      read_string(v, ph, kFieldLevel);
    } else if (key == "cat") {
      read_string(v, event.cat, kFieldLevel);
    } else if (key == "name") {
      read_string(v, event.name, kFieldLevel);
    } else if (key == "pid") {
      read_id(v, event.pid, tokens[kPid], kFieldLevel);
    } else if (key == "tid") {
      read_id(v, event.tid, tokens[kTid], kFieldLevel);
    } else if (key == "id") {
      read_id(v, event.id, tokens[kId], kFieldLevel);
    } else if (key == "ts") {
      read_time(v, event.ts, tokens[kTs], kFieldLevel);
    } else if (key == "dur") {
      read_time(v, event.dur, tokens[kDur], kFieldLevel);
    } else if (key == "args") {
      read_args(v, event, tokens, original_stream);
    } else {
      check_.check_value(v, kFieldLevel);
    }
  }
  // The object is consumed; the iterator stands on the ',' or ']' after it.
  const char* end_token = nullptr;
  if (doc.current_location().get(end_token)) check_.fail("unexpected end of traceEvents", nullptr);
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
  event.cat = static_cat(event.cat);
  EventSpans spans;
  if (Event::ph_fits(ph))
    event.set_ph(ph.view()[0]);
  else
    spans.ph = ph;  // "", or rare: kept by the event's far record
  for (int f = 0; f < kFieldCount; ++f) {
    if (tokens[f].data()) spans.fields[f] = Span{uint32_t(tokens[f].data() - begin), uint32_t(tokens[f].size())};
  }
  if (original_stream.data())
    spans.original_stream = Span{uint32_t(original_stream.data() - begin), uint32_t(original_stream.size())};
  event.set_spans(spans, [this](std::string_view bytes) { return strings_.keep(bytes); });
  return true;
}

// The fields of args the event keeps: stream, name and original_stream (SPEC 9.8); the
// others are checked and passed over.
void EventReader::read_args(od::value& v, Event& event, std::array<std::string_view, kFieldCount>& tokens,
                            std::string_view& original_stream) {
  od::json_type type;
  if (auto error = v.type().get(type)) check_.fail_json(error);
  if (type != od::json_type::object) {
    check_.check_value(v, kFieldLevel);
    return;
  }
  od::object args;
  if (auto error = v.get_object().get(args)) check_.fail_json(error);
  event.has_args = true;
  for (auto arg_result : args) {
    if (auto error = arg_result.error()) check_.fail_json(error);
    od::field& arg = arg_result.value_unsafe();
    od::raw_json_string arg_key = arg.key();
    check_.check_key(arg_key);
    od::value& arg_value = arg.value();
    if (arg_key == "stream") {
      Id stream;  // read for its checks and its text: Event::stream() reads it again
      read_id(arg_value, stream, tokens[kStream], kFieldLevel + 1);
    } else if (arg_key == "name") {
      // Kept as its text (Event::arg_name); one with escapes is checked here.
      std::string_view raw = trim_right(arg_value.raw_json_token());
      if (!raw.empty() && raw[0] == '"') {
        tokens[kArgName] = raw;
        if (raw.find('\\') != std::string_view::npos) check_.check_string(raw);
      } else {
        check_.check_value(arg_value, kFieldLevel + 1);
      }
    } else {
      if (arg_key == "original_stream") {
        event.has_original_stream = true;
        std::string_view raw = trim_right(arg_value.raw_json_token());
        int64_t stream_value = 0;
        if (parse_json_int(raw, stream_value)) original_stream = raw;
      }
      check_.check_value(arg_value, kFieldLevel + 1);
    }
  }
}

void EventReader::read_string(od::value& v, Text& out, size_t level) {
  // Most strings have no escapes: view them in place instead of unescaping a copy. The
  // others are unescaped into the parser's buffer and copied out, so the parser can go.
  std::string_view raw = trim_right(v.raw_json_token());
  if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"' && raw.find('\\') == std::string_view::npos) {
    out = raw.substr(1, raw.size() - 2);
    return;
  }
  if (raw.empty() || raw[0] != '"') {
    check_.check_value(v, level);  // not a string: the field keeps no value, but must be JSON
    return;
  }
  check_.check_string(raw);
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) {
    out = strings_.keep(s);
  } else {
    // Grammatical but not decodable: a lone UTF-16 surrogate such as "\ud800", which JSON
    // allows and simdjson refuses to decode. Keep the text as written (escapes and all)
    // rather than refuse the trace or read the name as empty.
    out = raw.substr(1, raw.size() - 2);
  }
}

// parse_json_int and parse_us_as_ns read JSON's number grammar and no more: a number they
// read needs no other check, and one they do not read is checked as before. (pid, tid, ts
// and dur are in every event: checking each twice was ~4% of mi300's parse.)
void EventReader::read_id(od::value& v, Id& id, std::string_view& token, size_t level) {
  id = Id{};
  od::json_type type;
  if (auto error = v.type().get(type)) check_.fail_json(error);
  int64_t value = 0;
  if (type == od::json_type::number) {
    token = trim_right(v.raw_json_token());
    if (parse_json_int(token, value)) {
      id = Id{Id::Kind::integer, value};
    } else {
      check_.check_scalar(token);
      id.kind = Id::Kind::other;
    }
    return;
  }
  token = check_.checked_text(v, level);
  id.kind = type == od::json_type::string ? Id::Kind::string : Id::Kind::other;
}

void EventReader::read_time(od::value& v, Time& time, std::string_view& token, size_t level) {
  time = Time{};
  time.present = true;
  od::json_type type;
  if (auto error = v.type().get(type)) check_.fail_json(error);
  // Beyond kMaxTimeNs a time is not numeric: sums and differences of times stay in int64.
  if (type == od::json_type::number) {
    token = trim_right(v.raw_json_token());
    Ns ns = 0;
    const bool read = parse_us_as_ns(token, ns);
    if (!read) check_.check_scalar(token);
    time.numeric = read && ns >= -kMaxTimeNs && ns <= kMaxTimeNs;
    time.ns = ns;
    return;
  }
  token = check_.checked_text(v, level);
  if (type == od::json_type::object || type == od::json_type::array) token = {};  // never spliced
}

}  // namespace tracelane
