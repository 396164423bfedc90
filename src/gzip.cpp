#include "tracelane/gzip.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <memory>

#include "tracelane/trace.hpp"

namespace tracelane {

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && uint8_t(bytes[0]) == 0x1f && uint8_t(bytes[1]) == 0x8b;
}

namespace {
struct DecompressorDeleter {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};
struct CompressorDeleter {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};
}  // namespace

std::string gunzip(std::string_view bytes, std::string_view source, uint64_t max_bytes) {
  // libdeflate decompressors are cheap and not thread-safe: one per call.
  std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> d(libdeflate_alloc_decompressor());
  if (!d) throw Error(std::string(source) + ": out of memory");
  if (bytes.size() < 18) throw Error(std::string(source) + ": truncated gzip stream (" + std::to_string(bytes.size()) + " bytes)");
  // DEFLATE expands at most ~1032:1, so a larger ISIZE is garbage (a truncated or corrupt
  // file): ignore it rather than allocate gigabytes for it. ISIZE (the last 4 bytes) is
  // the size of the last member modulo 2^32: exact for the usual single member. The
  // extra 64 bytes leave room for simdjson's padding without a reallocation.
  const size_t plausible_max = bytes.size() * 1032 + 1024;
  uint32_t isize = uint8_t(bytes[bytes.size() - 4]) | uint8_t(bytes[bytes.size() - 3]) << 8 |
                   uint8_t(bytes[bytes.size() - 2]) << 16 | uint32_t(uint8_t(bytes[bytes.size() - 1])) << 24;
  size_t capacity = size_t(isize) <= plausible_max ? size_t(isize) + 64 : bytes.size() * 8;
  capacity = std::max(capacity, size_t(1) << 16);
  // Never hold more than the caller admitted (ISIZE of a multi-member file is the last
  // member's only): the buffer stops growing there.
  const size_t admitted = max_bytes >= UINT64_MAX - 64 ? SIZE_MAX : size_t(max_bytes) + 64;
  capacity = std::min(capacity, admitted);
  std::string out;
  out.resize(capacity);
  size_t in_pos = 0, out_size = 0;
  int member = 0;
  while (in_pos < bytes.size()) {
    std::string_view rest = bytes.substr(in_pos);
    if (!is_gzip(rest)) {
      if (member == 0) throw Error(std::string(source) + ": not a gzip stream");
      throw Error(std::string(source) + ": trailing garbage after gzip member " + std::to_string(member) +
                  " (byte " + std::to_string(in_pos) + ")");
    }
    for (;;) {
      size_t in_used = 0, out_used = 0;
      auto result = libdeflate_gzip_decompress_ex(d.get(), rest.data(), rest.size(), out.data() + out_size,
                                                  out.size() - out_size, &in_used, &out_used);
      if (result == LIBDEFLATE_SUCCESS) {
        in_pos += in_used;
        out_size += out_used;
        break;
      }
      if (result == LIBDEFLATE_INSUFFICIENT_SPACE && out.size() >= admitted) {
        // Expect the rest to expand as the members so far did, and at least double.
        double ratio = in_pos > 0 ? double(out_size) / double(in_pos) : 8.0;
        uint64_t estimate = std::max<uint64_t>(uint64_t(max_bytes) * 2,
                                               uint64_t(double(out_size) + ratio * double(rest.size()) * 1.125));
        // When the rest is one member (the usual single-member file of 4 GiB or more), its
        // size is ISIZE modulo 2^32: the first such size beyond what was admitted is exact.
        uint64_t exact_if_one = out_size + isize;
        while (exact_if_one <= max_bytes) exact_if_one += uint64_t(1) << 32;
        if (exact_if_one <= 2 * estimate) estimate = std::max<uint64_t>(exact_if_one, max_bytes + 1);
        throw LargerThanAdmitted(std::string(source) + ": decompresses to more than the " +
                                     std::to_string(max_bytes) + " bytes admitted",
                                 std::max<uint64_t>(max_bytes + 1, std::min<uint64_t>(estimate, plausible_max)));
      }
      if (result == LIBDEFLATE_INSUFFICIENT_SPACE && out.size() < plausible_max) {
        // Multi-member input (or a wrong ISIZE): grow the whole buffer and redo this
        // member. Expect the rest to expand as the members so far did (plus 1/8), so that
        // one growth usually does: each one copies and zero-fills the buffer (a 2 GB
        // trace of 64 MB members grew five times). At least doubling keeps the work linear.
        size_t expected = out_size + (rest.size() << 3);
        if (in_pos > 0) expected = out_size + size_t(double(out_size) / double(in_pos) * double(rest.size()) * 1.125);
        out.resize(std::min({std::max(out.size() * 2, expected), plausible_max, admitted}));
        continue;
      }
      throw Error(std::string(source) + ": corrupt or truncated gzip data (member " + std::to_string(member + 1) +
                  ", compressed byte " + std::to_string(in_pos) + ")");
    }
    ++member;
  }
  out.resize(out_size);
  return out;
}

std::string gzip_compress(std::string_view bytes, int level) {
  std::unique_ptr<libdeflate_compressor, CompressorDeleter> c(libdeflate_alloc_compressor(level));
  if (!c) throw Error("invalid compression level " + std::to_string(level));
  // The bound is about the input's size: an uninitialised buffer leaves its untouched
  // pages unallocated (a std::string would zero-fill, i.e. touch, all of them).
  size_t bound = libdeflate_gzip_compress_bound(c.get(), bytes.size());
  std::unique_ptr<char[]> buffer(new char[bound]);
  size_t n = libdeflate_gzip_compress(c.get(), bytes.data(), bytes.size(), buffer.get(), bound);
  if (n == 0) throw Error("gzip compression failed");
  return std::string(buffer.get(), n);
}

}  // namespace tracelane
