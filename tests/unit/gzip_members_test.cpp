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
    text += "{\"ph\": \"X\", \"name\": \"kernel_" + std::to_string(rng() % 97) +
            "\", \"ts\": " + std::to_string(rng() % 1000000) + "},\n";
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

namespace {

// `pieces` compressed one member each, and where each member starts.
std::pair<std::string, std::vector<size_t>> members_of(const std::vector<std::string>& pieces) {
  std::string file;
  std::vector<size_t> starts;
  for (const std::string& piece : pieces) {
    starts.push_back(file.size());
    file += gzip_compress(piece, 6);
  }
  return {file, starts};
}

std::vector<std::string> pieces_of(const std::string& text, size_t size) {
  std::vector<std::string> pieces;
  for (size_t at = 0; at < text.size(); at += size) pieces.push_back(text.substr(at, size));
  return pieces;
}

std::string gunzip_error(const std::string& file) {
  try {
    gunzip(file, "members.json.gz");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(GzipMembers, SeveralMembersAreDecompressedIntoOneBufferOfExactlyTheirSize) {
  // Each member goes straight to its place, on the arena's threads: the buffer is the
  // text and simdjson's 64 bytes of padding, never grown (a grown one is larger).
  std::string text = trace_like_text(3 << 20, 7);
  for (size_t member : {size_t(4096), size_t(64) << 10, size_t(1) << 20}) {
    std::string gz = gzip_compress_members(text, 6, member);
    std::string back;
    tbb::task_arena(4).execute([&] { back = gunzip(gz, "members.json.gz"); });
    ASSERT_EQ(back, text) << member;
    EXPECT_EQ(back.capacity(), text.size() + 64) << member;
  }
}

TEST(GzipMembers, AHeaderLookingNameOrAnEmptyMemberStillGivesTheTextBack) {
  std::string text = trace_like_text(1 << 20, 8);
  auto [file, starts] = members_of(pieces_of(text, 200000));
  // A member whose name holds a header's first bytes after a plausible ISIZE (16 MiB and
  // a bit): a wrong guess of where a member starts, and of the size of the one before.
  std::string named = gzip_compress("{}", 6);
  std::string name =
      std::string(20, 'a') + std::string("\x01\x01\x01\x01\x1f\x8b\x08\x01\x01\x01\x01\x01\x04\x03z", 15);
  std::string with_name =
      named.substr(0, 3) + char(uint8_t(named[3]) | 8) + named.substr(4, 6) + name + '\0' + named.substr(10);
  std::string empty = gzip_compress("", 6);
  for (const std::string& gz : {file + with_name, with_name + file, file + empty + file, empty}) {
    std::string expected = gz == empty                 ? ""
                           : gz == file + empty + file ? text + text
                           : gz == file + with_name    ? text + "{}"
                                                       : "{}" + text;
    std::string back;
    tbb::task_arena(4).execute([&] { back = gunzip(gz, "members.json.gz"); });
    EXPECT_EQ(back, expected);
  }
}

TEST(GzipMembers, ACorruptMemberOrTrailingGarbageIsReportedAsWhenReadOneAfterAnother) {
  std::string text = trace_like_text(1 << 20, 9);
  auto [file, starts] = members_of(pieces_of(text, 150000));
  ASSERT_GE(starts.size(), 5u);
  std::string corrupt = file;  // member 3's deflate data overwritten in its middle
  size_t middle = (starts[2] + starts[3]) / 2;
  for (size_t k = 0; k < 16; ++k) corrupt[middle + k] = char(0xff);
  std::string error;
  tbb::task_arena(4).execute([&] { error = gunzip_error(corrupt); });
  EXPECT_EQ(error, "members.json.gz: corrupt or truncated gzip data (member 3, compressed byte " +
                       std::to_string(starts[2]) + ")");
  std::string trailing = file + "garbage that is not a member";
  tbb::task_arena(4).execute([&] { error = gunzip_error(trailing); });
  EXPECT_EQ(error, "members.json.gz: trailing garbage after gzip member " + std::to_string(starts.size()) + " (byte " +
                       std::to_string(file.size()) + ")");
  std::string cut = file.substr(0, starts[4] + 100);  // the last member truncated
  tbb::task_arena(4).execute([&] { error = gunzip_error(cut); });
  EXPECT_EQ(error, "members.json.gz: corrupt or truncated gzip data (member 5, compressed byte " +
                       std::to_string(starts[4]) + ")");
}
