// gunzip's first allocation (gzip.hpp, gunzip_size_guess): ISIZE is a size modulo 2^32, so
// a single member of 4 GiB or more would be decompressed once into a buffer of ISIZE
// bytes, fail, and be decompressed again. The guess must be the true size for such a
// member, and must not take a multi-member file's small last member for one.
#include <gtest/gtest.h>

#include <random>

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
