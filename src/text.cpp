// What Event's compact views need (include/tracelane/trace.hpp): the records of long
// Text, and the length of a long value's span.
#include <deque>
#include <mutex>
#include <string>

#include "trace_scanner.hpp"
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
  return Scanner(text.data(), text.size()).value_length(offset);
}

}  // namespace tracelane
