// read_file (files.hpp): one read into a buffer of the file's size, with simdjson's padding.
#include <gtest/gtest.h>

#include <fstream>

#include "files.hpp"

using namespace tracelane::cli;

TEST(ReadFile, ReadsAFileOnceIntoABufferOfItsSizeAndPadding) {
  // The buffer is the file's size plus simdjson's 64 bytes of padding: not regrown (copied
  // and zero-filled, twice the memory) on reaching the end.
  fs::path path = fs::temp_directory_path() / fs::unique_path("tracelane-read-%%%%-%%%%.json");
  std::string text(3 << 20, 'x');
  std::ofstream(path.string()) << text;
  std::string bytes = read_file(path);
  fs::remove(path);
  EXPECT_EQ(bytes, text);
  EXPECT_GE(bytes.capacity(), text.size() + 64);
  EXPECT_LT(bytes.capacity(), text.size() + text.size() / 2);
}
