#include "tracelane/gzip.hpp"

#include <libdeflate.h>
#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "in_order_pipeline.hpp"
#include "parallel_ranges.hpp"
#include "prefault.hpp"
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
constexpr size_t kIsizeModulus = size_t(1) << 32;

uint32_t read_le32(const char* p) {
  return uint8_t(p[0]) | uint8_t(p[1]) << 8 | uint8_t(p[2]) << 16 | uint32_t(uint8_t(p[3])) << 24;
}

// CRC-32 arithmetic: polynomials over GF(2) modulo RFC 1952's, written bit-reflected as the
// CRC is (bit 31 is the coefficient of x^0, bit 0 that of x^31). The product of a and b.
uint32_t crc_multiply(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t bit = uint32_t(1) << 31; bit; bit >>= 1) {
    if (a & bit) product ^= b;
    b = b & 1 ? (b >> 1) ^ 0xedb88320u : b >> 1;  // b * x
  }
  return product;
}

// The CRC-32 of two texts one after the other, from the CRC-32 of each and the second's
// length: the first's moves up by x^(8 * length), as if followed by that many zero bytes
// (the CRC's initial and final XORs cancel out).
uint32_t crc32_of_both(uint32_t first, uint32_t second, uint64_t second_bytes) {
  uint32_t shift = uint32_t(1) << 31;        // x^0
  uint32_t power = uint32_t(1) << (31 - 8);  // x^8, squared for each bit of the length
  for (; second_bytes; second_bytes >>= 1) {
    if (second_bytes & 1) shift = crc_multiply(shift, power);
    power = crc_multiply(power, power);
  }
  return crc_multiply(shift, first) ^ second;
}

// A member's CRC-32, from its trailer (`end` is the member's end).
uint32_t member_crc32(const char* end) { return read_le32(end - 8); }

// Where the deflate data of the member at the start of `bytes` begins (after FEXTRA, FNAME,
// FCOMMENT and FHCRC), or 10 when the header cannot be read.
size_t deflate_start(std::string_view bytes) {
  if (bytes.size() < 10) return 10;
  const uint8_t flags = uint8_t(bytes[3]);
  size_t pos = 10;
  if ((flags & 4) && pos + 2 <= bytes.size()) pos += 2 + (uint8_t(bytes[pos]) | uint8_t(bytes[pos + 1]) << 8);
  for (uint8_t field : {uint8_t(8), uint8_t(16)})
    if ((flags & field) && pos < bytes.size()) {
      const void* nul = std::memchr(bytes.data() + pos, 0, bytes.size() - pos);
      pos = nul ? size_t(static_cast<const char*>(nul) - bytes.data()) + 1 : bytes.size();
    }
  if (flags & 2) pos += 2;
  return std::min(pos, bytes.size());
}

// Whether a member header could start at `pos` (0x1f there, and at least 4 bytes after
// it): 1f 8b 08 (deflate) with the reserved flag bits clear.
bool member_header_at(std::string_view bytes, size_t pos) {
  return uint8_t(bytes[pos + 1]) == 0x8b && bytes[pos + 2] == 8 && !(uint8_t(bytes[pos + 3]) & 0xe0);
}

// True when the last `isize` output bytes of `bytes` are a complete gzip member of their
// own that ends the file: the file has several members, and ISIZE is only the last one's.
// A member of n output bytes takes at most about n + n/64 + 1 KiB (stored blocks, a name
// field), so only that tail is searched, and only where a header could start.
bool ends_with_own_member(std::string_view bytes, uint32_t isize, libdeflate_decompressor* d) {
  const size_t window = std::min(bytes.size(), size_t(isize) + isize / 64 + 1024 + 18);
  std::unique_ptr<char[]> scratch(new char[std::max<size_t>(isize, 1)]);  // untouched pages cost nothing
  for (size_t pos = bytes.size() - window; pos + 18 <= bytes.size(); ++pos) {
    const void* hit = std::memchr(bytes.data() + pos, 0x1f, bytes.size() - 18 + 1 - pos);
    if (!hit) break;
    pos = size_t(static_cast<const char*>(hit) - bytes.data());
    if (pos == 0 || !member_header_at(bytes, pos)) continue;
    size_t in_used = 0, out_used = 0;
    std::string_view member = bytes.substr(pos);
    if (libdeflate_gzip_decompress_ex(d, member.data(), member.size(), scratch.get(), isize, &in_used, &out_used) ==
            LIBDEFLATE_SUCCESS &&
        in_used == member.size() && out_used == isize)
      return true;
  }
  return false;
}

size_t size_guess(size_t compressed_size, size_t deflate_bytes, uint32_t isize, bool last_member_is_own) {
  // DEFLATE expands at most ~1032:1, so a larger size is garbage (a truncated or corrupt
  // file): ignore it rather than allocate gigabytes for it.
  const size_t plausible_max = compressed_size * 1032 + 1024;
  // ISIZE is the last member's size modulo 2^32. The encoders that write traces (zlib,
  // libdeflate, Python's gzip) never let a block grow past its stored form, so a member's
  // output is at least about its deflate data (7/8 leaves room for a fixed-Huffman
  // encoder's 9 bits a byte). An ISIZE below that has wrapped: a single member of
  // ISIZE + k * 2^32 bytes, the smallest such size that is not below the deflate data.
  // That is exact for every single-member file up to 4 GiB plus its compressed size (a
  // 4.0 GiB trace at 10:1 up to 4.4 GiB); a larger one is found on the next try, and only
  // a wrongly low guess costs a second decompression. Not so when the file ends with a
  // small member of its own (several members: ISIZE is only that member's).
  size_t size = isize;
  const size_t floor = deflate_bytes - deflate_bytes / 8;
  if (!last_member_is_own)
    while (size < floor && size + kIsizeModulus <= plausible_max) size += kIsizeModulus;
  if (size > plausible_max) return compressed_size * 8;
  return size;
}

// Makes `out` `size` bytes long, keeping its first `kept` bytes (the text decompressed so
// far). std::string::resize would copy the whole old buffer and zero-fill the new part on
// this thread alone, one page fault at a time (a 493 MB trace of eight members spent more
// time so than decompressing: bench/README.md, "gunzip's growth"); here the new buffer's
// pages are made on every thread of the arena first, and only the text is copied.
// The old buffer is freed before the rest of the new one is made, as resize does: the
// peak is the old buffer and the copy of its text, never both whole buffers.
void grow(std::string& out, size_t kept, size_t size) {
  std::string bigger;
  bigger.reserve(size);
  prefault(bigger.data(), kept);
  bigger.append(out.data(), kept);
  std::string().swap(out);
  prefault(bigger.data() + kept, size - kept);
  bigger.resize(size);
  out.swap(bigger);
}
// The same for a TextBuffer, whose new bytes are left as the kernel made them.
void grow(TextBuffer& out, size_t kept, size_t size) {
  TextBuffer bigger = TextBuffer::uninitialised(size);
  prefault(bigger.data(), kept);
  std::memcpy(bigger.data(), out.data(), kept);
  out = TextBuffer();
  prefault(bigger.data() + kept, size - kept);
  out = std::move(bigger);
}

// A buffer of `size` bytes to decompress into, with room for `capacity` (simdjson's
// padding after the text), its pages made on every thread of the arena (prefault): a
// std::string then zero-fills the `size` bytes (resize), a TextBuffer leaves them.
void make_buffer(std::string& out, size_t capacity, size_t size) {
  out.reserve(capacity);
  prefault(out.data(), capacity);
  out.resize(size);
}
void make_buffer(TextBuffer& out, size_t capacity, size_t size) {
  out = TextBuffer::uninitialised(capacity);
  prefault(out.data(), capacity);
  out.truncate(size);
}
void keep_first(std::string& out, size_t size) { out.resize(size); }
void keep_first(TextBuffer& out, size_t size) { out.truncate(size); }

// Several members decompressed concurrently, each straight into its place, or nothing.
//
// Where members start is guessed (every header-like "1f 8b 08" with its reserved flag
// bits clear, XFL 0, 2 or 4 and an OS byte RFC 1952 names: about one position in 10^11 of
// compressed data looks so by chance), and so is the size of each (the ISIZE in the 4 bytes before the next guess,
// or the file's last 4). Each member is then decompressed from its guessed start into its
// guessed place, and the guesses are kept only if every member, decompressed, takes
// exactly the bytes up to the next guess and gives exactly its guessed size: then each
// starts where the previous one ends, from the file's first byte to its last, which is
// what decompressing the members one after another finds, and each has its CRC-32
// checked by libdeflate. Anything else (one member, a wrong guess, a member of 4 GiB or
// more, a total beyond `max_bytes` or DEFLATE's 1032:1, a corrupt member) returns
// nothing, and the members are decompressed one after another, with their errors.
template <class Out>
std::optional<Out> gunzip_members_concurrently(std::string_view bytes, uint64_t max_bytes, uint32_t& crc32) {
  constexpr size_t kSmallestMember = 18;  // a header and a trailer
  std::vector<size_t> starts;
  for (size_t pos = 0; pos + kSmallestMember <= bytes.size();) {
    const void* hit = std::memchr(bytes.data() + pos, 0x1f, bytes.size() - kSmallestMember + 1 - pos);
    if (!hit) break;
    pos = size_t(static_cast<const char*>(hit) - bytes.data());
    const uint8_t xfl = uint8_t(bytes[pos + 8]), os = uint8_t(bytes[pos + 9]);
    if (member_header_at(bytes, pos) && (xfl == 0 || xfl == 2 || xfl == 4) && (os <= 13 || os == 255) &&
        (starts.empty() ? pos == 0 : pos >= starts.back() + kSmallestMember)) {
      starts.push_back(pos);
      // Members are rarely this small (bgzip's are up to 64 KiB): so many guesses is a
      // file made to look so, not worth the tasks.
      if (starts.size() > bytes.size() / 512 + 1) return std::nullopt;
    }
    ++pos;
  }
  if (starts.size() < 2 || starts[0] != 0) return std::nullopt;
  starts.push_back(bytes.size());
  const size_t members = starts.size() - 1;
  std::vector<size_t> offsets(members + 1, 0);
  for (size_t k = 0; k < members; ++k) offsets[k + 1] = offsets[k] + read_le32(bytes.data() + starts[k + 1] - 4);
  const uint64_t total = offsets[members];
  if (total > max_bytes || total > bytes.size() * uint64_t(1032) + 1024) return std::nullopt;
  Out out;
  make_buffer(out, total + 64, total);  // simdjson's padding, as gunzip leaves it
  std::vector<char> right(members, 0);
  for_each_index(members, [&](size_t k) {
    std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> d(libdeflate_alloc_decompressor());
    if (!d) return;
    const size_t length = starts[k + 1] - starts[k], size = offsets[k + 1] - offsets[k];
    size_t in_used = 0, out_used = 0;
    right[k] = libdeflate_gzip_decompress_ex(d.get(), bytes.data() + starts[k], length, out.data() + offsets[k], size,
                                             &in_used, &out_used) == LIBDEFLATE_SUCCESS &&
               in_used == length && out_used == size;
  });
  if (std::find(right.begin(), right.end(), 0) != right.end()) return std::nullopt;
  crc32 = 0;  // of no text
  for (size_t k = 0; k < members; ++k)
    crc32 = crc32_of_both(crc32, member_crc32(bytes.data() + starts[k + 1]), offsets[k + 1] - offsets[k]);
  return out;
}

}  // namespace

size_t gunzip_size_guess(std::string_view bytes) {
  if (bytes.size() < 18) return 0;
  std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> d(libdeflate_alloc_decompressor());
  if (!d) return bytes.size() * 8;
  const uint32_t isize = read_le32(bytes.data() + bytes.size() - 4);
  const size_t deflate_bytes = bytes.size() - std::min(bytes.size(), deflate_start(bytes) + 8);
  size_t guess = size_guess(bytes.size(), deflate_bytes, isize, false);
  if (guess != isize && guess >= isize && (guess - isize) % kIsizeModulus == 0 &&
      ends_with_own_member(bytes, isize, d.get()))
    guess = size_guess(bytes.size(), deflate_bytes, isize, true);
  return guess;
}

namespace {

// The whole output's size, better guessed once the buffer has reached the `max_bytes`
// admitted with `rest` compressed bytes still to go: always more than `max_bytes`.
uint64_t better_estimate(uint64_t max_bytes, size_t out_size, size_t in_pos, size_t rest, uint32_t isize,
                         size_t plausible_max) {
  // Expect the rest to expand as the members so far did, and at least double.
  double ratio = in_pos > 0 ? double(out_size) / double(in_pos) : 8.0;
  uint64_t estimate =
      std::max<uint64_t>(uint64_t(max_bytes) * 2, uint64_t(double(out_size) + ratio * double(rest) * 1.125));
  // When the rest is one member (the usual single-member file of 4 GiB or more), its
  // size is ISIZE modulo 2^32: the first such size beyond what was admitted is exact.
  uint64_t exact_if_one = out_size + isize;
  while (exact_if_one <= max_bytes) exact_if_one += uint64_t(1) << 32;
  if (exact_if_one <= 2 * estimate) estimate = std::max<uint64_t>(exact_if_one, max_bytes + 1);
  return std::max<uint64_t>(max_bytes + 1, std::min<uint64_t>(estimate, plausible_max));
}

// gunzip and gunzip_text, into either kind of buffer.
template <class Out>
Out gunzip_into(std::string_view bytes, std::string_view source, uint64_t max_bytes, std::optional<uint32_t>* crc32) {
  if (crc32) crc32->reset();
  // libdeflate decompressors are cheap and not thread-safe: one per call.
  std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> d(libdeflate_alloc_decompressor());
  if (!d) throw Error(std::string(source) + ": out of memory");
  if (bytes.size() < 18)
    throw Error(std::string(source) + ": truncated gzip stream (" + std::to_string(bytes.size()) + " bytes)");
  uint32_t crc = 0;  // of the text so far, from the members' trailers
  if (std::optional<Out> out = gunzip_members_concurrently<Out>(bytes, max_bytes, crc)) {
    if (crc32) *crc32 = crc;
    return std::move(*out);
  }
  const size_t plausible_max = bytes.size() * 1032 + 1024;
  // ISIZE (the last 4 bytes) is the size of the last member modulo 2^32: exact for the
  // usual single member under 4 GiB; see gunzip_size_guess for the others. The extra 64
  // bytes leave room for simdjson's padding without a reallocation.
  const uint32_t isize = read_le32(bytes.data() + bytes.size() - 4);
  const size_t guess = gunzip_size_guess(bytes);
  const bool from_isize = guess >= isize && (guess - isize) % kIsizeModulus == 0;
  // Whether the file ends with a member of its own (so it has several), when a first
  // member larger than the guess makes it matter (it reads the tail).
  std::optional<bool> several_members;
  auto ends_with_own = [&] {
    if (!several_members) several_members = ends_with_own_member(bytes, isize, d.get());
    return *several_members;
  };
  // If the first member is the only one, its size is ISIZE + k * 2^32: this one or larger.
  size_t single_member_size = guess;
  size_t capacity = std::max(guess + 64, size_t(1) << 16);
  // Never hold more than the caller admitted (ISIZE of a multi-member file is the last
  // member's only): the buffer stops growing there.
  const size_t admitted = max_bytes >= UINT64_MAX - 64 ? SIZE_MAX : size_t(max_bytes) + 64;
  capacity = std::min(capacity, admitted);
  Out out;
  make_buffer(out, capacity, capacity);
  size_t in_pos = 0, out_size = 0;
  int member = 0;
  while (in_pos < bytes.size()) {
    std::string_view rest = bytes.substr(in_pos);
    if (!is_gzip(rest)) {
      if (member == 0) throw Error(std::string(source) + ": not a gzip stream");
      throw Error(std::string(source) + ": trailing garbage after gzip member " + std::to_string(member) + " (byte " +
                  std::to_string(in_pos) + ")");
    }
    for (;;) {
      size_t in_used = 0, out_used = 0;
      auto result = libdeflate_gzip_decompress_ex(d.get(), rest.data(), rest.size(), out.data() + out_size,
                                                  out.size() - out_size, &in_used, &out_used);
      if (result == LIBDEFLATE_SUCCESS) {
        crc = crc32_of_both(crc, member_crc32(rest.data() + in_used), out_used);
        in_pos += in_used;
        out_size += out_used;
        break;
      }
      if (result == LIBDEFLATE_INSUFFICIENT_SPACE && out.size() >= admitted)
        throw LargerThanAdmitted(
            std::string(source) + ": decompresses to more than the " + std::to_string(max_bytes) + " bytes admitted",
            better_estimate(max_bytes, out_size, in_pos, rest.size(), isize, plausible_max));
      if (result == LIBDEFLATE_INSUFFICIENT_SPACE && member == 0 && from_isize &&
          single_member_size + kIsizeModulus <= plausible_max && !ends_with_own()) {
        // The only member is larger than guessed: it is the next size ISIZE allows.
        single_member_size += kIsizeModulus;
        grow(out, out_size, std::min(std::max(out.size(), single_member_size + 64), admitted));
        continue;
      }
      if (result == LIBDEFLATE_INSUFFICIENT_SPACE && out.size() < plausible_max) {
        // Multi-member input (or a wrong ISIZE): grow the whole buffer and redo this
        // member. Expect the rest to expand as the members so far did (plus 1/8), so that
        // one growth usually does: each one copies and zero-fills the buffer (a 2 GB
        // trace of 64 MB members grew five times). At least doubling keeps the work linear.
        size_t expected = out_size + (rest.size() << 3);
        if (in_pos > 0) expected = out_size + size_t(double(out_size) / double(in_pos) * double(rest.size()) * 1.125);
        grow(out, out_size, std::min({std::max(out.size() * 2, expected), plausible_max, admitted}));
        continue;
      }
      throw Error(std::string(source) + ": corrupt or truncated gzip data (member " + std::to_string(member + 1) +
                  ", compressed byte " + std::to_string(in_pos) + ")");
    }
    ++member;
  }
  // The buffer's 64 bytes of padding may have taken a few bytes beyond what was admitted.
  if (out_size > max_bytes)
    throw LargerThanAdmitted(
        std::string(source) + ": decompresses to more than the " + std::to_string(max_bytes) + " bytes admitted",
        out_size);
  // A buffer that grew for several members (doubling, zero-filled) ends up to twice what
  // it holds: give back the pages past the text and its padding.
  const size_t kept = out_size + 64;
  if (out.size() > kept) release_pages(out.data() + kept, out.size() - kept);
  keep_first(out, out_size);
  if (crc32) *crc32 = crc;
  return out;
}

}  // namespace

std::string gunzip(std::string_view bytes, std::string_view source, uint64_t max_bytes,
                   std::optional<uint32_t>* crc32) {
  return gunzip_into<std::string>(bytes, source, max_bytes, crc32);
}

TextBuffer gunzip_text(std::string_view bytes, std::string_view source, uint64_t max_bytes,
                       std::optional<uint32_t>* crc32) {
  return gunzip_into<TextBuffer>(bytes, source, max_bytes, crc32);
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

MemberCompressor::MemberCompressor(int level) : compressor_(libdeflate_alloc_compressor(level)) {
  if (!compressor_) throw Error("invalid compression level " + std::to_string(level));
}

MemberCompressor::~MemberCompressor() {
  if (compressor_) libdeflate_free_compressor(compressor_);
}

MemberCompressor::MemberCompressor(MemberCompressor&& other) noexcept
    : compressor_(std::exchange(other.compressor_, nullptr)),
      scratch_(std::move(other.scratch_)),
      scratch_size_(std::exchange(other.scratch_size_, 0)) {}

std::string MemberCompressor::compress(std::string_view bytes) {
  std::string member;
  compress_into(bytes, member);
  return member;
}

void MemberCompressor::compress_into(std::string_view bytes, std::string& member) {
  size_t bound = libdeflate_gzip_compress_bound(compressor_, bytes.size());
  if (scratch_size_ < bound) {
    scratch_.reset(new char[bound]);  // not zero-filled: only what is written is touched
    scratch_size_ = bound;
  }
  size_t n = libdeflate_gzip_compress(compressor_, bytes.data(), bytes.size(), scratch_.get(), bound);
  if (n == 0) throw Error("gzip compression failed");
  member.assign(scratch_.get(), n);
}

void gzip_compress_members(std::string_view bytes, int level, size_t member_bytes,
                           const std::function<void(std::string_view member)>& sink) {
  if (member_bytes == 0) throw Error("internal: gzip members of 0 bytes");
  if (std::unique_ptr<libdeflate_compressor, CompressorDeleter> probe(libdeflate_alloc_compressor(level)); !probe)
    throw Error("invalid compression level " + std::to_string(level));
  size_t members = std::max<size_t>(1, (bytes.size() + member_bytes - 1) / member_bytes);
  if (members == 1) {
    sink(gzip_compress(bytes, level));
    return;
  }
  // One compressor per thread (their state is a few hundred KB at the higher levels).
  tbb::enumerable_thread_specific<MemberCompressor> workers([level] { return MemberCompressor(level); });
  std::vector<std::string> outputs(members);
  in_order_pipeline(
      members, [&](size_t k) { outputs[k] = workers.local().compress(bytes.substr(k * member_bytes, member_bytes)); },
      [&](size_t k) {
        std::string member = std::move(outputs[k]);
        sink(member);
      });
}

std::string gzip_compress_members(std::string_view bytes, int level, size_t member_bytes) {
  std::string out;
  gzip_compress_members(bytes, level, member_bytes, [&](std::string_view member) { out += member; });
  return out;
}

}  // namespace tracelane
