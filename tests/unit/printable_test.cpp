#include "cli/printable.hpp"

#include <gtest/gtest.h>

using tracelane::cli::Backslash;
using tracelane::cli::is_printable;
using tracelane::cli::printable;

TEST(Printable, KeepsValidPrintableUtf8AsItIs) {
  EXPECT_EQ(printable("outputs/run-α/iteration_3"), "outputs/run-α/iteration_3");
  EXPECT_EQ(printable("emoji \xf0\x9f\x9a\x80 ok"), "emoji \xf0\x9f\x9a\x80 ok");
  EXPECT_TRUE(is_printable("outputs/run-α"));
}

TEST(Printable, EscapesInvalidUtf8ByteByByte) {
  EXPECT_EQ(printable("run\xff\xfe"), "run\\xff\\xfe");
  EXPECT_EQ(printable("\xc3"), "\\xc3");                    // truncated sequence
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_FALSE(is_printable("run\xff"));
}

TEST(Printable, EscapesTerminalControlSequences) {
  EXPECT_EQ(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(printable("line\nbreak\r\t"), "line\\x0abreak\\x0d\\x09");
  EXPECT_EQ(printable("del\x7f"), "del\\x7f");
  EXPECT_EQ(printable("csi\xc2\x9b"), "csi\\xc2\\x9b");  // U+009B, the 8-bit CSI
}

TEST(Printable, BackslashesAreDoubledOnlyWhenAskedSoTheFormIsReversible) {
  EXPECT_EQ(printable("a\\xff"), "a\\xff");
  EXPECT_EQ(printable("a\\xff", Backslash::escape), "a\\\\xff");
  EXPECT_EQ(printable("a\xff", Backslash::escape), "a\\xff");
}
