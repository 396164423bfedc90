// gunzip's first allocation (gzip.hpp, gunzip_size_guess): ISIZE is a size modulo 2^32, so
// a single member of 4 GiB or more would be decompressed once into a buffer of ISIZE
// bytes, fail, and be decompressed again. The guess must be the true size for such a
// member, and must not take a multi-member file's small last member for one.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "tracelane/gzip.hpp"

using namespace tracelane;

namespace {

constexpr size_t k4GiB = size_t(1) << 32;

// A gzip-shaped file: a 10-byte header, `deflate_bytes` of stand-in data, CRC and ISIZE.
// The guess reads only sizes, so the data need not decompress.
std::string synthetic_member(size_t deflate_bytes, uint32_t isize) {
  std::string bytes = std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
  bytes.append(deflate_bytes, '\x55');
  bytes.append(4, '\0');
  for (int k = 0; k < 4; ++k) bytes.push_back(char(isize >> (8 * k)));
  return bytes;
}

std::string random_text(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::string text(size, ' ');
  for (auto& c : text) c = char('a' + rng() % 26);  // ~1.6:1, so its deflate data is large
  return text;
}

// `member` with an FNAME field (a name and its NUL) added to its header.
std::string with_name(const std::string& member, const std::string& name) {
  std::string named = member.substr(0, 10);
  named[3] = char(uint8_t(named[3]) | 8);
  return named + name + '\0' + member.substr(10);
}

}  // namespace

TEST(GunzipSizeGuess, AnIsizeBelowTheDeflateDataIsAFourGibMemberThatWrapped) {
  // 8 MiB of deflate data cannot come from 1000 bytes: the member is 4 GiB + 1000 bytes.
  EXPECT_EQ(gunzip_size_guess(synthetic_member(8 << 20, 1000)), k4GiB + 1000);
  EXPECT_EQ(gunzip_size_guess(synthetic_member(300 << 20, 50u << 20)), k4GiB + (50u << 20));
}

TEST(GunzipSizeGuess, AnIsizeAtOrAboveTheDeflateDataIsTakenAsIs) {
  EXPECT_EQ(gunzip_size_guess(synthetic_member(8 << 20, 80u << 20)), size_t(80) << 20);
  EXPECT_EQ(gunzip_size_guess(synthetic_member(100, 5000)), 5000u);
  EXPECT_EQ(gunzip_size_guess(synthetic_member(2, 0)), 0u);  // an empty member
}

TEST(GunzipSizeGuess, AnImplausibleIsizeFallsBackToEightTimesTheFile) {
  // 100 bytes of deflate data cannot reach 1 GiB (1032:1 at most), nor can 4 GiB + 10.
  std::string small = synthetic_member(100, 1u << 30);
  EXPECT_EQ(gunzip_size_guess(small), small.size() * 8);
  std::string short_isize = synthetic_member(1 << 20, 10);  // 1 MiB * 1032 < 4 GiB
  EXPECT_EQ(gunzip_size_guess(short_isize), 10u);
}

TEST(GunzipSizeGuess, AMultiMemberFileEndingInASmallMemberIsNotTakenForAWrappedOne) {
  // 8 MiB of barely compressible text, then a 2-byte member: ISIZE is 2, far below the
  // deflate data, yet the file is 8 MiB, not 4 GiB + 2.
  std::string first = random_text(8 << 20, 1);
  std::string file = gzip_compress(first, 1) + gzip_compress("{}", 1);
  ASSERT_GT(file.size(), size_t(4) << 20);  // so that 4 GiB + 2 is within 1032:1
  EXPECT_EQ(gunzip_size_guess(file), 2u);
  EXPECT_EQ(gunzip(file, "two.json.gz"), first + "{}");
  // an empty last member (bgzip's end-of-file block) likewise
  std::string with_empty = gzip_compress(first, 1) + gzip_compress("", 1);
  EXPECT_EQ(gunzip_size_guess(with_empty), 0u);
  EXPECT_EQ(gunzip(with_empty, "bgzf.json.gz"), first);
}

// How many of the whole pages inside [p, p + bytes) are resident.
size_t resident_pages(const char* p, size_t bytes) {
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (uintptr_t(p) + page - 1) / page * page, last = (uintptr_t(p) + bytes) / page * page;
  if (last <= first) return 0;
  std::vector<unsigned char> in_core((last - first) / page);
  if (::mincore(reinterpret_cast<void*>(first), last - first, in_core.data()) != 0)
    ADD_FAILURE() << "mincore: " << std::strerror(errno);
  size_t resident = 0;
  for (unsigned char c : in_core) resident += c & 1;
  return resident;
}

TEST(GunzipSizeGuess, ABufferThatGrewForSeveralMembersGivesBackThePagesPastTheText) {
  // ISIZE says 2 bytes, so the buffer starts small and grows (zero-filled, which makes
  // every page resident) to several times the 12 MiB the members hold. The text is kept;
  // what lies past it and its 64 bytes of padding is returned to the kernel (a 493 MB
  // trace of eight members held 40 MB it did not need through the whole compaction).
  std::string first = random_text(12 << 20, 2);
  // A name with a header's bytes in it (past the smallest member's 18 bytes) makes the concurrent path's guess of where
  // the members start wrong, so that the members are decompressed one after another.
  std::string file = gzip_compress(first, 1) +
                     with_name(gzip_compress("{}", 1),
                               std::string(24, 'x') + std::string("\x1f\x8b\x08\x01\x01\x01\x01\x01\x04\x03y", 11));
  std::string text = gunzip(file, "grown.json.gz");
  ASSERT_EQ(text, first + "{}");
  const size_t kept = text.size() + 64;
  ASSERT_GT(text.capacity(), kept + (size_t(4) << 20)) << "the buffer did not grow past the text: nothing to test";
  EXPECT_EQ(resident_pages(text.data() + kept, text.capacity() - kept), 0u);
  EXPECT_GT(resident_pages(text.data(), text.size()), 0u);  // mincore does see the text's pages
}

TEST(GunzipSizeGuess, ASingleMemberIsGuessedExactly) {
  std::string text = random_text(3 << 20, 2);
  std::string file = gzip_compress(text, 6);
  EXPECT_EQ(gunzip_size_guess(file), text.size());
  EXPECT_EQ(gunzip(file, "one.json.gz"), text);
}

TEST(GunzipSizeGuess, AHeaderWithANameFieldIsSkipped) {
  // FNAME set: the name is header, not deflate data.
  std::string packed = gzip_compress("{\"a\": 1}", 6);
  std::string named = packed.substr(0, 10);
  named[3] = char(uint8_t(named[3]) | 8);
  named += std::string(64, 'n') + '\0';
  named += packed.substr(10);
  EXPECT_EQ(gunzip_size_guess(named), 8u);
  EXPECT_EQ(gunzip(named, "named.json.gz"), "{\"a\": 1}");
}
