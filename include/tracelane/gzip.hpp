// Whole-buffer gzip with libdeflate: one member out (Perfetto reads no other), any number
// of members in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tracelane/trace.hpp"

namespace tracelane {

bool is_gzip(std::string_view bytes);

// Thrown when an input holds, or decompresses to, more than the caller admitted (a memory
// budget decided before reading). `estimate` is a better guess of the whole size, always
// larger than what was admitted.
class LargerThanAdmitted : public Error {
 public:
  LargerThanAdmitted(const std::string& message, uint64_t estimate) : Error(message), estimate(estimate) {}
  uint64_t estimate;
};

// Decompresses every member. Throws Error("<source>: ...") on a truncated or corrupt
// stream, LargerThanAdmitted (having held no more than about `max_bytes`) when the output
// is larger than `max_bytes`. The result has `padding` spare bytes of capacity after its
// end (for simdjson).
std::string gunzip(std::string_view bytes, std::string_view source, uint64_t max_bytes = UINT64_MAX);

// The output size gunzip first allocates for the gzip file `bytes` (before its 64 bytes of
// padding). The trailer's ISIZE is a size modulo 2^32: the guess is ISIZE + k * 2^32 for
// the smallest k that is not below what the deflate data must expand to (a single member
// of 4 GiB or more), or ISIZE itself when the file ends with a member of its own (several
// members: ISIZE is only the last one's). Beyond the 1032:1 that DEFLATE can reach, ISIZE
// is garbage and the guess is 8x the compressed size. Decompresses nothing but, at most,
// a last member of ISIZE bytes.
size_t gunzip_size_guess(std::string_view bytes);

// Compresses into one gzip member at `level` (0-12, libdeflate's scale).
std::string gzip_compress(std::string_view bytes, int level);

}  // namespace tracelane
