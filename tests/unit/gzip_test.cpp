// gzip (include/tracelane/gzip.hpp) on its own: what gzip_compress writes gunzip reads back
// at every level, any number of members in a row, and a corrupt, truncated or foreign
// input is an error that names the file, the member and the byte it starts at.
// gzip_members_test.cpp and gzip_size_test.cpp test the concurrent members and the size
// guess.
#include "tracelane/gzip.hpp"
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
