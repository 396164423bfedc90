// Names read from a shared tree are bytes: a directory may be called anything but '/' and
// NUL, including invalid UTF-8 and terminal escape sequences. Everything tracelane prints
// or writes into a report goes through printable(), so that a hostile or unlucky name can
// neither make a report unreadable (JSON and CSV must be UTF-8) nor drive a terminal.
#pragma once

#include <string>
#include <string_view>

namespace tracelane::cli {

enum class Backslash { keep, escape };

// `bytes` with every byte that is not part of printable, valid UTF-8 written as `\xHH`
// (C0 controls, DEL, C1 controls U+0080-U+009F, invalid or overlong sequences, surrogates).
// With Backslash::escape a backslash is written `\\`, so the form is reversible (the
// report's); with Backslash::keep (terminal messages) it stays as it is.
std::string printable(std::string_view bytes, Backslash backslash = Backslash::keep);

// True when printable(bytes, Backslash::keep) == bytes.
bool is_printable(std::string_view bytes);

}  // namespace tracelane::cli
