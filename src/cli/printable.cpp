#include "printable.hpp"

#include <cstdint>

namespace tracelane::cli {

namespace {

// Length of the valid, printable UTF-8 sequence at bytes[i], or 0 when the byte there
// must be escaped.
size_t printable_sequence(std::string_view bytes, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(bytes[k]); };
  unsigned char lead = byte(i);
  if (lead < 0x80) return lead >= 0x20 && lead != 0x7f ? 1 : 0;
  size_t length;
  uint32_t code;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, code = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, code = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, code = lead & 0x07;
  } else {
    return 0;  // a continuation byte, an overlong lead (c0, c1) or beyond U+10FFFF
  }
  if (i + length > bytes.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    code = code << 6 | (byte(i + k) & 0x3f);
  }
  bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
  bool surrogate = code >= 0xd800 && code <= 0xdfff;
  bool c1_control = code >= 0x80 && code <= 0x9f;
  if (overlong || surrogate || c1_control || code > 0x10ffff) return 0;
  return length;
}

}  // namespace

std::string printable(std::string_view bytes, Backslash backslash) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    if (bytes[i] == '\\' && backslash == Backslash::escape) {
      out += "\\\\";
      ++i;
      continue;
    }
    if (size_t length = printable_sequence(bytes, i)) {
      out.append(bytes.substr(i, length));
      i += length;
      continue;
    }
    unsigned char b = static_cast<unsigned char>(bytes[i++]);
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

bool is_printable(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    size_t length = printable_sequence(bytes, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

}  // namespace tracelane::cli
