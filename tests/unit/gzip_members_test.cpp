// gzip_compress_members (gzip.hpp): consecutive members compressed concurrently, the same
// bytes for any number of threads, and every member a complete gzip member that gunzip
// (and any RFC 1952 reader) takes in turn.
#include <gtest/gtest.h>
#include <libdeflate.h>
#include <tbb/task_arena.h>

#include <random>
#include <stdexcept>

#include "test_support.hpp"
#include "tracelane/gzip.hpp"

using namespace tracelane;
using tracelane::testing::gzip_member_sizes;

namespace {

std::string trace_like_text(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::string text;
  while (text.size() < size)
    text += "{\"ph\": \"X\", \"name\": \"kernel_" + std::to_string(rng() % 97) + "\", \"ts\": " +
            std::to_string(rng() % 1000000) + "},\n";
  text.resize(size);
  return text;
}

TEST(GzipMembers, OneMemberPerMemberBytesOfInputAndGunzipGivesTheInputBack) {
  const size_t member = 1000;
  for (size_t size : {size_t(0), size_t(1), member - 1, member, member + 1, 3 * member + member / 2}) {
    std::string text = trace_like_text(size, unsigned(size));
    std::string gz = gzip_compress_members(text, 6, member);
    EXPECT_EQ(gunzip(gz, "members"), text) << size;
    std::vector<size_t> sizes = gzip_member_sizes(gz);
    size_t expected = std::max<size_t>(1, (size + member - 1) / member);
    ASSERT_EQ(sizes.size(), expected) << size;
    for (size_t k = 0; k + 1 < sizes.size(); ++k) EXPECT_EQ(sizes[k], member) << size << " member " << k;
    EXPECT_EQ(sizes.back(), size == 0 ? 0 : size - (expected - 1) * member) << size;
  }
}

TEST(GzipMembers, TheBytesDoNotDependOnTheNumberOfThreads) {
  std::string text = trace_like_text(size_t(3) << 20, 7);
  std::string one, four;
  tbb::task_arena(1).execute([&] { one = gzip_compress_members(text, 6, size_t(64) << 10); });
  tbb::task_arena(4).execute([&] { four = gzip_compress_members(text, 6, size_t(64) << 10); });
  EXPECT_EQ(gzip_member_sizes(one).size(), 48u);
  EXPECT_EQ(one, four);
}

TEST(GzipMembers, ASinkThatThrowsStopsTheRestAndTheErrorReachesTheCaller) {
  std::string text = trace_like_text(size_t(1) << 20, 3);
  size_t seen = 0;
  EXPECT_THROW(gzip_compress_members(text, 1, 4096,
                                     [&](std::string_view) {
                                       if (++seen == 3) throw std::runtime_error("disk full");
                                     }),
               std::runtime_error);
  EXPECT_EQ(seen, 3u);  // nothing handed on after the failure
}

TEST(GzipMembers, AnInvalidLevelIsRefusedBeforeAnythingIsWritten) {
  size_t seen = 0;
  EXPECT_THROW(gzip_compress_members("abc", 13, 1, [&](std::string_view) { ++seen; }), Error);
  EXPECT_EQ(seen, 0u);
}

TEST(GzipMembers, MembersCostLittleSpace) {
  std::string text = trace_like_text(size_t(16) << 20, 11);
  for (int level : {1, 6}) {
    double single = double(gzip_compress(text, level).size());
    double members = double(gzip_compress_members(text, level).size());
    EXPECT_LT(members / single, 1.01) << "level " << level;
  }
}

}  // namespace
