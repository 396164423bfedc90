// A document's text in memory, as gunzip makes it and the parser reads it in place.
// std::string zero-fills every byte it grows to (resize): a whole pass over a text that
// the decompressor is about to write anyway. A TextBuffer's block is left as the kernel
// made it until written. It holds either such a block or a std::string moved into it (a
// file read as it is), and moves, never copies.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>

namespace tracelane {

class TextBuffer {
 public:
  TextBuffer() = default;
  explicit TextBuffer(std::string text) : string_(std::move(text)) {}

  // `size` bytes of a fresh block, not written: the caller writes them.
  static TextBuffer uninitialised(size_t size) {
    TextBuffer buffer;
    buffer.block_.reset(static_cast<char*>(std::malloc(std::max<size_t>(size, 1))));
    if (!buffer.block_) throw std::bad_alloc();
    buffer.size_ = buffer.capacity_ = size;
    return buffer;
  }

  char* data() { return block_ ? block_.get() : string_.data(); }
  const char* data() const { return block_ ? block_.get() : string_.data(); }
  size_t size() const { return block_ ? size_ : string_.size(); }
  std::string_view view() const { return {data(), size()}; }

  // Keeps the first `size` bytes (no more than size()).
  void truncate(size_t size) {
    if (!block_) string_.resize(std::min(size, string_.size()));
    size_ = std::min(size, size_);
  }
  // As std::string::resize: bytes past the old size are zeros; past the block's capacity
  // the text moves to a larger block.
  void resize_zeroed(size_t size) {
    if (!block_) return string_.resize(size, '\0');
    if (size > capacity_) {
      TextBuffer larger = uninitialised(size);
      std::memcpy(larger.data(), data(), size_);
      larger.size_ = size_;
      *this = std::move(larger);
    }
    if (size > size_) std::memset(data() + size_, 0, size - size_);
    size_ = size;
  }
  // The text as a std::string: moved out when it is one, else copied.
  std::string release_string() && {
    if (!block_) return std::move(string_);
    std::string text(view());
    *this = TextBuffer();
    return text;
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> block_;
  size_t size_ = 0, capacity_ = 0;  // of block_
  std::string string_;              // when there is no block
};

}  // namespace tracelane
