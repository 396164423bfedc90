// What Event's compact views need (include/tracelane/trace.hpp): the records of long
// Text, and the values an Event reads again from its text.
#include <deque>
#include <mutex>
#include <string>

#include <simdjson.h>

#include "tracelane/decimal_time.hpp"
#include "tracelane/trace.hpp"

namespace tracelane {

uint64_t Text::long_record(std::string_view view) {
  // Records are never moved or freed (a deque's elements stay put as it grows), so a Text
  // made on any thread stays valid. Long text is rare: an event or a name of 64 KiB.
  static std::mutex mutex;
  static std::deque<std::string_view> records;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string_view& record = records.emplace_back(view);
  const auto address = uint64_t(reinterpret_cast<uintptr_t>(&record));
  if (address > kAddressMask) {
    records.pop_back();
    throw Error("internal error: a text record's address does not fit in 48 bits");
  }
  return address;
}

Id Event::stream() const {
  const std::string_view text = id_text(kStream);
  if (text.empty()) return Id{};
  int64_t value = 0;
  if (text[0] == '"') return Id{Id::Kind::string, 0};
  if (parse_json_int(text, value)) return Id{Id::Kind::integer, value};
  return Id{Id::Kind::other, 0};
}

std::string_view Event::arg_name(std::string& buffer) const {
  const std::string_view quoted = arg_name_raw();
  if (quoted.size() < 2) return {};
  const std::string_view inner = quoted.substr(1, quoted.size() - 2);
  if (inner.find('\\') == std::string_view::npos) return inner;
  // Rare: a DOM parse of the string alone (the reader has checked its grammar).
  thread_local simdjson::dom::parser parser;
  std::string_view unescaped;
  if (parser.parse(simdjson::padded_string(quoted)).get_string().get(unescaped) != simdjson::SUCCESS) return inner;
  buffer.assign(unescaped);
  return buffer;
}

int64_t Event::original_int(Field field) const {
  const Id& which = field == kPid ? pid : field == kTid ? tid : id;
  if (!((changed >> field) & 1)) return which.value;
  int64_t value = 0;
  if (!parse_json_int(value_text(field), value))
    throw Error("internal error: a changed integer's text does not read as one");
  return value;
}

Ns Event::original_ns(Field field) const {
  const Time& which = field == kTs ? ts : dur;
  if (!((changed >> field) & 1)) return which.ns;
  Ns value = 0;
  if (!parse_us_as_ns(value_text(field), value))
    throw Error("internal error: a changed time's text does not read as one");
  return value;
}

}  // namespace tracelane
