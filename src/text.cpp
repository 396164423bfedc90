// What Event's compact views need (include/tracelane/trace.hpp): the records of long
// Text, and the length of a long value's span.
#include <algorithm>
#include <deque>
#include <mutex>
#include <string>

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

size_t json_value_length(std::string_view text, size_t offset) {
  // The text is valid JSON (simdjson has read it, or tracelane wrote it): strings end at
  // their first unescaped quote, containers at the bracket that brings the depth back to
  // zero, scalars at the first character that cannot continue them.
  size_t i = offset;
  int depth = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; i += text[i] == '\\' ? 2 : 1) {
      }
      ++i;
    } else if (c == '{' || c == '[') {
      ++depth, ++i;
    } else if (c == '}' || c == ']') {
      --depth, ++i;
    } else if (depth == 0) {
      while (i < text.size() && text[i] != ',' && text[i] != '}' && text[i] != ']' && text[i] != ' ' &&
             text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
        ++i;
    } else {
      ++i;
    }
    if (depth == 0) break;
  }
  return std::min(i, text.size()) - offset;
}

}  // namespace tracelane
