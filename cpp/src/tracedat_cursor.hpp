// tracedat_cursor.hpp — internal: a bounds-checked reader of file bytes that
// names the section and the file offset in every error (tracedat.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "timerlab/tracedat.hpp"

namespace timerlab {

class TraceDat::Cursor {
 public:
  // `data` starts at file offset `base`; `inflated`: data is the
  // decompressed content of a section whose compressed bytes start at base.
  Cursor(std::string_view data, std::uint64_t base, std::string section, bool big_endian, bool inflated = false)
      : data_(data), base_(base), section_(std::move(section)), big_(big_endian), inflated_(inflated) {}

  Cursor& at(std::uint64_t pos) & {
    if (pos > data_.size()) fail_at(pos, "offset " + std::to_string(pos) + " is past the end of the file (" +
                                             std::to_string(data_.size()) + " bytes): truncated?");
    pos_ = pos;
    return *this;
  }
  Cursor at(std::uint64_t pos) && { return static_cast<Cursor&>(*this).at(pos); }
  void set_section(std::string s) { section_ = std::move(s); }
  void set_big_endian(bool b) { big_ = b; }

  std::uint64_t offset() const { return inflated_ ? base_ : base_ + pos_; }
  std::uint64_t remaining() const { return data_.size() - pos_; }

  std::string_view bytes(std::uint64_t n) {
    need(n);
    const std::string_view s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string_view peek(std::uint64_t n) const { return data_.substr(pos_, n); }
  std::string_view rest() const { return data_.substr(pos_); }
  void skip(std::uint64_t n) { need(n), pos_ += n; }
  Cursor sub(std::uint64_t n) {
    need(n);
    Cursor c(data_.substr(0, pos_ + n), base_, section_, big_, inflated_);
    c.pos_ = pos_;
    return c;
  }
  std::uint8_t u8() { return static_cast<std::uint8_t>(num(1)); }
  std::uint16_t u16() { return static_cast<std::uint16_t>(num(2)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(num(4)); }
  std::uint64_t u64() { return num(8); }
  // A NUL-terminated string of at most `max` bytes.
  std::string_view cstr(std::size_t max) {
    const std::string_view r = data_.substr(pos_, max + 1);
    const std::size_t z = r.find('\0');
    if (z == std::string_view::npos) fail("a string without its NUL within " + std::to_string(max) + " bytes");
    pos_ += z + 1;
    return r.substr(0, z);
  }

  std::string decompress(const Decompress& d, std::string_view in, std::uint64_t size, std::uint64_t at) {
    if (!d) fail_at(at, "compressed data and no decompressor");
    std::string out;
    try {
      out = d(in, size);
    } catch (const std::exception& e) {
      fail_at(at, std::string("compressed data that does not decompress: ") + e.what());
    }
    if (out.size() != size) {
      fail_at(at, "compressed data gives " + std::to_string(out.size()) + " bytes where the header promises " +
                      std::to_string(size));
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& why) const { fail_at(offset(), why); }
  [[noreturn]] void fail_at(std::uint64_t file_offset, const std::string& why) const {
    std::string msg = why;
    if (inflated_) msg += " (at byte " + std::to_string(pos_) + " of the section's decompressed data)";
    throw TraceDatError(section_, file_offset, msg);
  }

 private:
  void need(std::uint64_t n) const {
    if (n > data_.size() - pos_) {
      fail("needs " + std::to_string(n) + " bytes, " + std::to_string(data_.size() - pos_) +
           " left: truncated or corrupt");
    }
  }
  std::uint64_t num(int n) {
    need(static_cast<std::uint64_t>(n));
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      const int k = big_ ? i : n - 1 - i;
      v = (v << 8) | static_cast<unsigned char>(data_[pos_ + static_cast<std::size_t>(k)]);
    }
    pos_ += static_cast<std::size_t>(n);
    return v;
  }

  std::string_view data_;
  std::uint64_t base_;
  std::uint64_t pos_ = 0;
  std::string section_;
  bool big_;
  bool inflated_;
};

}  // namespace timerlab
