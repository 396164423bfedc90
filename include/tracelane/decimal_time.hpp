// Exact time arithmetic: Kineto writes microseconds with up to three decimals ("µs.fff"),
// which is exact nanoseconds. Reading them through a double loses that past 2^53 ns, so
// numbers are read from their text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tracelane {

// Reads a JSON number token (microseconds) as integer nanoseconds. Digits past the
// nanosecond are rounded half away from zero. Returns false for anything that is not a
// JSON number or does not fit in int64 nanoseconds.
bool parse_us_as_ns(std::string_view token, int64_t& ns);

// The largest |ts| or |dur| tracelane reads as a time: 3e18 ns (3e15 µs, ~95 years; an
// absolute Unix-epoch time up to 2065). Any sum or difference of three such times fits in
// int64, so interval arithmetic cannot overflow; larger values count as not numeric.
inline constexpr int64_t kMaxTimeNs = 3'000'000'000'000'000'000;

// Reads a JSON integer token (no fraction, no exponent) that fits in int64.
bool parse_json_int(std::string_view token, int64_t& value);

// Writes nanoseconds as microseconds with the shortest exact decimal: 1500 -> "1.5",
// 2000 -> "2", -1 -> "-0.001".
void append_ns_as_us(std::string& out, int64_t ns);
std::string ns_as_us(int64_t ns);

}  // namespace tracelane
