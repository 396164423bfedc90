// SHA-256 (FIPS 180-4), for digests that someone who names directories in a shared tree
// must not be able to make collide: the iteration plan of a sharded sweep
// (iteration_plan.hpp). Not for speed: a plan is a few megabytes at most.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tracelane::cli {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  // The digest as 64 lower-case hex digits; the object is spent afterwards.
  std::string hex_digest();

 private:
  void compress(const unsigned char* block);

  std::array<uint32_t, 8> state_;
  std::array<unsigned char, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes given so far
};

}  // namespace tracelane::cli
