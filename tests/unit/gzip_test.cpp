// gzip (include/tracelane/gzip.hpp) on its own: what gzip_compress writes gunzip reads back
// at every level, any number of members in a row, and a corrupt, truncated or foreign
// input is an error that names the file, the member and the byte it starts at.
// gzip_members_test.cpp and gzip_size_test.cpp test the concurrent members and the size
// guess.
#include "tracelane/gzip.hpp"

#include <libdeflate.h>

#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

::testing::AssertionResult names(const std::string& message, const std::vector<std::string>& parts) {
  for (const auto& part : parts)
    if (message.find(part) == std::string::npos)
      return ::testing::AssertionFailure() << "'" << message << "' lacks '" << part << "'";
  return ::testing::AssertionSuccess();
}

const std::string cpu_op = R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 1, "dur": 1})";

// Text with some repetition, as a trace has: it compresses, but not to nothing.
std::string trace_like(size_t events, unsigned seed) {
  std::string text;
  unsigned state = seed;
  for (size_t i = 0; i < events; ++i) {
    state = state * 1103515245u + 12345u;
    text +=
        "{\"name\": \"kernel_" + std::to_string(state % 9973) + "\", \"ts\": " + std::to_string(state >> 7) + "},\n";
  }
  return text;
}

}  // namespace

TEST(Gzip, CompressedTracesRoundTrip) {
  std::string json = trace_json({kernel(0, 7, "1.5", "2")});
  std::string packed = gzip_compress(json, 6);
  EXPECT_TRUE(is_gzip(packed));
  EXPECT_FALSE(is_gzip(json));
  EXPECT_EQ(gunzip(packed, "test.json.gz"), json);
}

TEST(Gzip, ConcatenatedMembersAreAllRead) {
  std::string packed = gzip_compress("{\"a\": ", 1) + gzip_compress("1}", 9);
  EXPECT_EQ(gunzip(packed, "test.json.gz"), "{\"a\": 1}");
}

// Restore data takes the CRC-32 gunzip makes from the members' trailers instead of
// computing it: it must be the CRC of exactly the text gunzip gives, for one member and
// for several, read concurrently or one after another.
TEST(Gzip, TheCrcFromTheTrailersIsThatOfTheWholeText) {
  auto expect_crc = [](const std::string& packed, const std::string& text, const std::string& what) {
    std::optional<uint32_t> crc = 7;
    EXPECT_EQ(gunzip(packed, "t.json.gz", UINT64_MAX, &crc), text) << what;
    ASSERT_TRUE(crc) << what;
    EXPECT_EQ(*crc, libdeflate_crc32(0, text.data(), text.size())) << what;
  };
  for (const std::string& text : {std::string(), trace_like(1, 3), trace_like(5000, 4)})
    expect_crc(gzip_compress(text, 6), text, "one member of " + std::to_string(text.size()) + " bytes");
  std::string whole, packed;
  for (unsigned k = 0; k < 7; ++k) {  // empty, small and large members
    std::string part = k % 3 == 0 ? std::string() : trace_like(k * 300, k);
    whole += part;
    packed += gzip_compress(part, int(k % 2 ? 1 : 9));
  }
  expect_crc(packed, whole, "seven members");
  // A stored member whose text looks like a member header misleads the concurrent read's
  // guesses: the members are read one after another.
  const std::string lookalike =
      trace_like(3, 9) + std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10) + trace_like(3, 8);
  expect_crc(gzip_compress(lookalike, 0) + gzip_compress(whole, 6), lookalike + whole, "a misleading member");
}

TEST(Gzip, ATruncatedStreamIsAnErrorNamingTheFile) {
  std::string json = trace_json({kernel(0, 7, "1.5", "2"), kernel(0, 8, "1.5", "2"), cpu_op});
  std::string packed = gzip_compress(json, 6);
  for (size_t keep : {packed.size() / 2, packed.size() - 1, size_t(12)}) {
    std::string cut = packed.substr(0, keep);
    auto message = error_message([&] { gunzip(cut, "test.json.gz"); });
    EXPECT_TRUE(names(message, {"test.json.gz"})) << "kept " << keep << " bytes";
  }
}

TEST(Gzip, TrailingGarbageAfterAMemberIsAnError) {
  std::string packed = gzip_compress(trace_json({kernel(0, 7, "1", "2")}), 6) + "garbage";
  EXPECT_TRUE(names(error_message([&] { gunzip(packed, "test.json.gz"); }), {"test.json.gz", "trailing"}));
}

TEST(Gzip, BytesThatAreNotGzipAreAnError) {
  EXPECT_TRUE(names(error_message([] { gunzip("{\"traceEvents\": []}", "test.json.gz"); }), {"test.json.gz"}));
}

TEST(Gzip, EveryLevelAndTheEmptyInputRoundTrip) {
  const std::string text = trace_like(2000, 1);
  for (int level : {0, 1, 6, 12}) {
    std::string packed = gzip_compress(text, level);
    EXPECT_TRUE(is_gzip(packed)) << "level " << level;
    EXPECT_EQ(gunzip(packed, "t.json.gz"), text) << "level " << level;
  }
  // Level 0 stores: the member is the text plus its framing. Level 6 finds the repetition.
  EXPECT_GT(gzip_compress(text, 0).size(), text.size());
  EXPECT_LT(gzip_compress(text, 6).size(), text.size() / 2);
  EXPECT_EQ(gunzip(gzip_compress("", 6), "empty.json.gz"), "");
}

TEST(Gzip, ALevelLibdeflateDoesNotHaveIsAnError) {
  EXPECT_THROW(gzip_compress("{}", 13), Error);
  EXPECT_THROW(gzip_compress("{}", -1), Error);
  EXPECT_THROW({ MemberCompressor compressor(13); }, Error);
}

TEST(Gzip, MembersOfEverySizeAreReadInOrder) {
  // Small members (a few bytes each) and large ones (kilobytes each), at mixed levels.
  for (size_t events : {size_t(1), size_t(400)}) {
    std::string whole, packed;
    for (unsigned k = 0; k < 6; ++k) {
      std::string part = "member " + std::to_string(k) + ": " + trace_like(events, k + 7);
      whole += part;
      packed += gzip_compress(part, k % 2 ? 1 : 9);
    }
    EXPECT_EQ(gunzip(packed, "t.json.gz"), whole) << events << " events a member";
  }
}

TEST(Gzip, AMemberCompressorMakesMembersOneAfterAnother) {
  MemberCompressor compressor(6);
  const std::string first = trace_like(300, 3), second = trace_like(50, 4);
  std::string packed = compressor.compress(first);
  EXPECT_EQ(gunzip(packed, "one.gz"), first);
  packed += compressor.compress(second);
  EXPECT_EQ(gunzip(packed, "two.gz"), first + second);
}

// Errors name the file, then where: the member and the compressed byte it starts at.
TEST(Gzip, ACorruptMemberIsNamedWithItsNumberAndTheByteItStartsAt) {
  const std::string first = gzip_compress(trace_like(100, 5), 6);
  std::string second = gzip_compress(trace_like(100, 6), 6);
  second[second.size() - 8] = char(second[second.size() - 8] ^ 0x01);  // its CRC-32 no longer matches
  std::string message = error_message([&] { gunzip(first + second, "rank1_trace.json.gz"); });
  EXPECT_EQ(message.rfind("rank1_trace.json.gz: ", 0), 0u) << message;
  EXPECT_NE(message.find("member 2"), std::string::npos) << message;
  EXPECT_NE(message.find("byte " + std::to_string(first.size())), std::string::npos) << message;

  std::string damaged_first = first;
  damaged_first[damaged_first.size() - 8] = char(damaged_first[damaged_first.size() - 8] ^ 0x01);
  message = error_message([&] { gunzip(damaged_first, "rank0_trace.json.gz"); });
  EXPECT_EQ(message.rfind("rank0_trace.json.gz: ", 0), 0u) << message;
  EXPECT_NE(message.find("member 1"), std::string::npos) << message;
  EXPECT_NE(message.find("byte 0"), std::string::npos) << message;
}

TEST(Gzip, TrailingGarbageIsNamedWithTheByteWhereItStarts) {
  const std::string member = gzip_compress("{\"traceEvents\": []}", 6);
  std::string message = error_message([&] { gunzip(member + "not gzip at all", "t.json.gz"); });
  EXPECT_EQ(message.rfind("t.json.gz: ", 0), 0u) << message;
  EXPECT_NE(message.find("member 1"), std::string::npos) << message;
  EXPECT_NE(message.find("byte " + std::to_string(member.size())), std::string::npos) << message;
}

TEST(Gzip, InputTooShortForAMemberIsTruncated) {
  const std::string member = gzip_compress("{}", 6);
  std::string message = error_message([&] { gunzip(member.substr(0, 12), "t.json.gz"); });
  EXPECT_EQ(message.rfind("t.json.gz: ", 0), 0u) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST(Gzip, OutputBeyondWhatWasAdmittedGivesALargerEstimate) {
  const std::string text = trace_like(500, 8);
  const std::string packed = gzip_compress(text, 6);
  EXPECT_EQ(gunzip(packed, "t.json.gz", text.size()), text);
  try {
    gunzip(packed, "t.json.gz", text.size() / 2);
    ADD_FAILURE() << "decompressed beyond what was admitted";
  } catch (const LargerThanAdmitted& e) {
    EXPECT_GT(e.estimate, text.size() / 2);
    EXPECT_EQ(std::string(e.what()).rfind("t.json.gz: ", 0), 0u) << e.what();
  }
}

TEST(Gzip, IsGzipLooksAtTheMagicBytesOnly) {
  EXPECT_TRUE(is_gzip(std::string("\x1f\x8b", 2)));
  EXPECT_FALSE(is_gzip(std::string("\x1f", 1)));
  EXPECT_FALSE(is_gzip(std::string("\x8b\x1f", 2)));
  EXPECT_FALSE(is_gzip(""));
}
