// Whole-buffer gzip with libdeflate: one member out (Perfetto reads no other), any number
// of members in.
#pragma once

#include <string>
#include <string_view>

namespace tracelane {

bool is_gzip(std::string_view bytes);

// Decompresses every member. Throws Error("<source>: ...") on a truncated or corrupt
// stream. The result has `padding` spare bytes of capacity after its end (for simdjson).
std::string gunzip(std::string_view bytes, std::string_view source);

// Compresses into one gzip member at `level` (0-12, libdeflate's scale).
std::string gzip_compress(std::string_view bytes, int level);

}  // namespace tracelane
