// TextBuffer (include/tracelane/text_buffer.hpp): a document's text, held as a block that is
// never zero-filled first or as a std::string moved in, and what gunzip_text puts in one:
// the same text as gunzip gives, for one member, several, and a buffer that had to grow.
// trace_job_test.cpp reads files with read_trace_text.
#include "tracelane/text_buffer.hpp"

#include "test_support.hpp"
#include "tracelane/gzip.hpp"

using namespace tracelane;

TEST(TextBuffer, AStringMovedInIsTheText) {
  std::string text(1000, 'x');
  const char* where = text.data();
  TextBuffer buffer(std::move(text));
  EXPECT_EQ(buffer.view(), std::string(1000, 'x'));
  EXPECT_EQ(buffer.data(), where);  // moved, not copied
  buffer.truncate(10);
  EXPECT_EQ(buffer.view(), "xxxxxxxxxx");
  buffer.resize_zeroed(12);
  EXPECT_EQ(buffer.view(), std::string("xxxxxxxxxx\0\0", 12));
  EXPECT_EQ(std::move(buffer).release_string(), std::string("xxxxxxxxxx\0\0", 12));
}

TEST(TextBuffer, ABlockKeepsWhatWasWrittenAndZeroesOnlyWhatItGrowsTo) {
  TextBuffer buffer = TextBuffer::uninitialised(100);
  ASSERT_EQ(buffer.size(), 100u);
  std::memset(buffer.data(), 'a', 100);
  buffer.truncate(40);
  EXPECT_EQ(buffer.view(), std::string(40, 'a'));
  const char* where = buffer.data();
  buffer.resize_zeroed(50);  // within the block: in place, the ten new bytes zero
  EXPECT_EQ(buffer.data(), where);
  EXPECT_EQ(buffer.view(), std::string(40, 'a') + std::string(10, '\0'));
  buffer.resize_zeroed(5000);  // past it: a larger block, the text kept
  EXPECT_EQ(buffer.view(), std::string(40, 'a') + std::string(4960, '\0'));
  buffer.truncate(45);
  TextBuffer moved = std::move(buffer);
  EXPECT_EQ(moved.view(), std::string(40, 'a') + std::string(5, '\0'));
  EXPECT_EQ(std::move(moved).release_string(), std::string(40, 'a') + std::string(5, '\0'));
  EXPECT_EQ(TextBuffer::uninitialised(0).size(), 0u);
}

namespace {

std::string numbered_text(size_t lines, unsigned seed) {
  std::string text;
  for (size_t i = 0; i < lines; ++i) text += "{\"n\": " + std::to_string(i * seed % 7919) + "},\n";
  return text;
}

}  // namespace

// Every way gunzip fills its buffer: one member (its size from ISIZE), several read
// concurrently, several read one after another into a buffer that grows (a misleading
// member header in stored text defeats the concurrent read), and a member larger than
// its ISIZE says being refused as gunzip refuses it.
TEST(TextBuffer, GunzipTextGivesWhatGunzipGives) {
  const std::string part = numbered_text(3000, 13);
  const std::string lookalike = numbered_text(3, 5) + std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
  std::vector<std::string> inputs = {
      gzip_compress(part, 6),
      gzip_compress("", 1),
      gzip_compress(part, 1) + gzip_compress(part, 9) + gzip_compress(numbered_text(7, 3), 6),
      gzip_compress(lookalike, 0) + gzip_compress(part, 6) + gzip_compress(part + part + part, 6),
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::optional<uint32_t> crc, text_crc;
    const std::string expected = gunzip(inputs[k], "t.json.gz", UINT64_MAX, &crc);
    TextBuffer buffer = gunzip_text(inputs[k], "t.json.gz", UINT64_MAX, &text_crc);
    EXPECT_EQ(buffer.view(), expected) << "input " << k;
    EXPECT_EQ(text_crc, crc) << "input " << k;
    buffer.resize_zeroed(buffer.size() + 64);  // the parser's padding
    EXPECT_EQ(buffer.view().substr(0, expected.size()), expected) << "input " << k;
  }
  std::string truncated = inputs[0].substr(0, inputs[0].size() / 2);
  EXPECT_THROW(gunzip_text(truncated, "t.json.gz"), Error);
  EXPECT_THROW(gunzip_text(inputs[0], "t.json.gz", part.size() - 1), LargerThanAdmitted);
}
