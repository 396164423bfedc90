// gzip with libdeflate: any number of members in; out, one member, or consecutive members
// compressed concurrently (RFC 1952 2.2; today's Perfetto, Python's gzip, zcat and
// libdeflate-gzip read them all: docs/commands.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tracelane/text_buffer.hpp"
#include "tracelane/trace.hpp"

struct libdeflate_compressor;  // libdeflate.h

namespace tracelane {

bool is_gzip(std::string_view bytes);

// Thrown when an input holds, or decompresses to, more than the caller admitted (a memory
// budget decided before reading). `estimate` is a better guess of the whole size, always
// larger than what was admitted.
class LargerThanAdmitted : public Error {
 public:
  LargerThanAdmitted(const std::string& message, uint64_t better_estimate)
      : Error(message), estimate(better_estimate) {}
  uint64_t estimate;
};

// Decompresses every member. Throws Error("<source>: ...") on a truncated or corrupt
// stream, LargerThanAdmitted (having held no more than about `max_bytes`) when the output
// is larger than `max_bytes`. The result has `padding` spare bytes of capacity after its
// end (for simdjson). `crc32`, when given, gets the CRC-32 of the whole result, made from
// the members' trailers (each of which libdeflate has checked against its member's text).
std::string gunzip(std::string_view bytes, std::string_view source, uint64_t max_bytes = UINT64_MAX,
                   std::optional<uint32_t>* crc32 = nullptr);
// The same into a TextBuffer, which is never zero-filled first: for the document a trace
// is parsed from.
TextBuffer gunzip_text(std::string_view bytes, std::string_view source, uint64_t max_bytes = UINT64_MAX,
                       std::optional<uint32_t>* crc32 = nullptr);

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

// One thread's gzip compressor at one level, for members compressed one after another: its
// scratch buffer (the compression bound, never zero-filled: only what is written is
// touched) is reused, so a member in flight holds only its compressed bytes.
class MemberCompressor {
 public:
  explicit MemberCompressor(int level);  // throws Error for a level libdeflate refuses
  ~MemberCompressor();
  MemberCompressor(const MemberCompressor&) = delete;
  MemberCompressor& operator=(const MemberCompressor&) = delete;
  MemberCompressor(MemberCompressor&& other) noexcept;
  // One gzip member of `bytes`.
  std::string compress(std::string_view bytes);
  // The same member into `member`, whose room is reused (no allocation once it has grown).
  void compress_into(std::string_view bytes, std::string& member);

 private:
  ::libdeflate_compressor* compressor_ = nullptr;
  std::unique_ptr<char[]> scratch_;
  size_t scratch_size_ = 0;
};

// Input bytes per member of gzip_compress_members: small enough that a 50 MB trace keeps a
// few cores busy, large enough that the members cost little in size: 0.15% at level 1 and
// 0.18% at level 6 on the mi300 trace (`tracelane_bench --benchmark_filter=GzipMembers`,
// bench/README.md); gzip_members_test keeps it under 1%.
inline constexpr size_t kGzipMemberBytes = size_t(4) << 20;

// Compresses `bytes` into consecutive gzip members of `member_bytes` of input each (the
// last shorter; one empty member for empty input), concurrently in the caller's TBB arena,
// and hands each member to `sink` in order as soon as it and those before it are ready,
// holding a few members per thread at most. The bytes depend only on the input, `level` and
// `member_bytes`, never on the number of threads. An exception from `sink` or from a
// member stops the rest and is rethrown.
void gzip_compress_members(std::string_view bytes, int level, size_t member_bytes,
                           const std::function<void(std::string_view member)>& sink);
// The same, the members concatenated into one string.
std::string gzip_compress_members(std::string_view bytes, int level, size_t member_bytes = kGzipMemberBytes);

}  // namespace tracelane
