// Exact time arithmetic (SPEC 9.1): µs number text <-> integer nanoseconds.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "tracelane/decimal_time.hpp"

using namespace tracelane;

namespace {

std::optional<int64_t> ns_of(std::string_view text) {
  int64_t ns = 0x5eed;
  if (!parse_us_as_ns(text, ns)) return std::nullopt;
  return ns;
}

std::optional<int64_t> int_of(std::string_view text) {
  int64_t v = 0x5eed;
  if (!parse_json_int(text, v)) return std::nullopt;
  return v;
}

}  // namespace

TEST(ParseUsAsNs, ReadsPlainDecimals) {
  EXPECT_EQ(ns_of("1.5"), 1500);
  EXPECT_EQ(ns_of("12"), 12000);
  EXPECT_EQ(ns_of("0"), 0);
  EXPECT_EQ(ns_of("0.001"), 1);
  EXPECT_EQ(ns_of("1.500"), 1500);
  EXPECT_EQ(ns_of("1.5000000"), 1500);
}

// The usual form ([-]digits[.ddd]) is read by a shortcut: it must read every such token,
// and every token near that form (leading zeros, no digit after the point, more digits
// than it takes), as the general path reads the same number with an exponent of zero.
TEST(ParseUsAsNs, TheUsualFormReadsAsTheGeneralPathDoes) {
  uint64_t state = 12345;
  auto next = [&](uint64_t below) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % below;
  };
  for (int k = 0; k < 20000; ++k) {
    std::string token = next(4) == 0 ? "-" : "";
    const size_t whole_digits = next(19);  // 0 to 18: the shortcut takes up to 15
    for (size_t d = 0; d < whole_digits; ++d) token += char('0' + next(10));
    if (next(3) != 0) {
      token += '.';
      const size_t fraction_digits = next(6);  // 0 to 5: the shortcut takes 1 to 3
      for (size_t d = 0; d < fraction_digits; ++d) token += char('0' + next(10));
    }
    EXPECT_EQ(ns_of(token), ns_of(token + "e0")) << token;
  }
  EXPECT_EQ(ns_of("999999999999999.999"), 999999999999999999);
  EXPECT_EQ(ns_of("-999999999999999.999"), -999999999999999999);
  EXPECT_EQ(ns_of("9999999999999999.999"), std::nullopt);  // 16 digits: the general path, beyond int64
  EXPECT_EQ(ns_of("3520313169605.131"), 3520313169605131);
  EXPECT_EQ(ns_of("-0.0"), 0);
}

TEST(ParseUsAsNs, ReadsNegativeNumbers) {
  EXPECT_EQ(ns_of("-0.001"), -1);
  EXPECT_EQ(ns_of("-12.25"), -12250);
  EXPECT_EQ(ns_of("-0"), 0);
}

TEST(ParseUsAsNs, ReadsExponents) {
  EXPECT_EQ(ns_of("1e3"), 1000000);
  EXPECT_EQ(ns_of("1E3"), 1000000);
  EXPECT_EQ(ns_of("1e+3"), 1000000);
  EXPECT_EQ(ns_of("1e-3"), 1);
  EXPECT_EQ(ns_of("2.5e-1"), 250);
  EXPECT_EQ(ns_of("1.683564902133354123e15"), 1683564902133354123);
}

TEST(ParseUsAsNs, KeepsEveryNanosecondOfAnEpochTimestamp) {
  // Far past 2^53 ns: a double would round this.
  EXPECT_EQ(ns_of("1683564902133354.123"), 1683564902133354123);
  EXPECT_EQ(ns_of("1683564902133354.124"), 1683564902133354124);
  EXPECT_EQ(ns_of("9223372036854775.807"), INT64_MAX);
}

TEST(ParseUsAsNs, RoundsSubNanosecondDigitsHalfAwayFromZero) {
  EXPECT_EQ(ns_of("0.0004"), 0);
  EXPECT_EQ(ns_of("0.0005"), 1);
  EXPECT_EQ(ns_of("0.0015"), 2);
  EXPECT_EQ(ns_of("-0.0005"), -1);
  EXPECT_EQ(ns_of("-0.0004"), 0);
  EXPECT_EQ(ns_of("1.2345678"), 1235);
}

TEST(ParseUsAsNs, RejectsWhatIsNotAJsonNumber) {
  for (const char* bad : {"abc", "", "-", "1.", ".5", "01", "1e", "1e+", "+1", "1.5x", " 1", "1 ", "\"1\"", "NaN",
                          "Infinity", "0x10", "1..2"})
    EXPECT_FALSE(ns_of(bad).has_value()) << "'" << bad << "'";
}

TEST(ParseUsAsNs, RejectsNumbersOutsideInt64Nanoseconds) {
  EXPECT_FALSE(ns_of("9223372036854775.808").has_value());
  EXPECT_FALSE(ns_of("1e30").has_value());
  EXPECT_FALSE(ns_of("-1e30").has_value());
}

TEST(ParseUsAsNs, AcceptsTheMostNegativeNanosecond) { EXPECT_EQ(ns_of("-9223372036854775.808"), INT64_MIN); }

TEST(ParseJsonInt, ReadsIntegersOnly) {
  EXPECT_EQ(int_of("42"), 42);
  EXPECT_EQ(int_of("-7"), -7);
  EXPECT_EQ(int_of("0"), 0);
  EXPECT_EQ(int_of("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(int_of("-9223372036854775808"), INT64_MIN);
  for (const char* bad : {"1.0", "1e3", "01", "", "-", "9223372036854775808", "abc", "\"5\""})
    EXPECT_FALSE(int_of(bad).has_value()) << "'" << bad << "'";
}

TEST(AppendNsAsUs, WritesTheShortestExactDecimal) {
  EXPECT_EQ(ns_as_us(1500), "1.5");
  EXPECT_EQ(ns_as_us(2000), "2");
  EXPECT_EQ(ns_as_us(-1), "-0.001");
  EXPECT_EQ(ns_as_us(0), "0");
  EXPECT_EQ(ns_as_us(10), "0.01");
  EXPECT_EQ(ns_as_us(1001), "1.001");
  EXPECT_EQ(ns_as_us(-2500), "-2.5");
  EXPECT_EQ(ns_as_us(1683564902133354123), "1683564902133354.123");
  EXPECT_EQ(ns_as_us(INT64_MIN), "-9223372036854775.808");
}

// Every fraction of a microsecond, on both sides of zero and at int64's ends, against the
// digits printf writes with the fraction's trailing zeros taken off.
TEST(AppendNsAsUs, EveryFractionAgainstPrintf) {
  auto expected = [](int64_t ns) {
    const uint64_t magnitude = ns < 0 ? 0 - uint64_t(ns) : uint64_t(ns);
    char text[40];
    std::snprintf(text, sizeof text, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(magnitude / 1000),
                  (unsigned long long)(magnitude % 1000));
    std::string out = text;
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
    return out;
  };
  for (int64_t whole : {int64_t(0), int64_t(1), int64_t(7), int64_t(10), int64_t(999), int64_t(1683564902133354)})
    for (int64_t frac = 0; frac < 1000; ++frac)
      for (int64_t ns : {whole * 1000 + frac, -(whole * 1000 + frac)}) EXPECT_EQ(ns_as_us(ns), expected(ns)) << ns;
  for (int64_t ns : {INT64_MAX, INT64_MAX - 1, INT64_MIN, INT64_MIN + 1, INT64_MIN + 808})
    EXPECT_EQ(ns_as_us(ns), expected(ns)) << ns;
}

TEST(AppendNsAsUs, AppendsAfterExistingText) {
  std::string out = "\"ts\": ";
  append_ns_as_us(out, 192088);
  EXPECT_EQ(out, "\"ts\": 192.088");
}

TEST(AppendNsAsUs, RoundTripsThroughParse) {
  for (int64_t ns : {int64_t(0), int64_t(1), int64_t(-1), int64_t(999), int64_t(1000), int64_t(123456789),
                     int64_t(-987654321), int64_t(1683564902133354123), INT64_MAX, INT64_MIN}) {
    int64_t back = 0;
    ASSERT_TRUE(parse_us_as_ns(ns_as_us(ns), back)) << ns;
    EXPECT_EQ(back, ns);
  }
}
