// tracedat_print.hpp — internal: the compiled form of a print fmt, shared by
// its compiler (tracedat_compile.cpp) and its evaluator (tracedat_print.cpp).
//
// A print fmt is compiled once per event: the format string is cut into
// literal text and conversions, and each argument, a C expression, is parsed
// by precedence climbing into a flat node array. Constant tables of
// __print_flags / __print_symbolic are evaluated at compile time. Rendering
// walks the nodes per record; strings are views into the record, the
// format, or one scratch buffer per conversion.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "timerlab/tracedat_format.hpp"

namespace timerlab {

namespace detail {

enum class Op : std::uint8_t {
  Num, Str, Field, Neg, Not, BitNot, Cast, Cond, Flags, Symbolic, GetStr, Bitmask,
  Mul, Div, Mod, Add, Sub, Shl, Shr, Lt, Gt, Le, Ge, Eq, Ne, And, Xor, Or, LAnd, LOr
};

struct Node {
  Op op = Op::Num;
  int a = -1, b = -1, c = -1;
  std::uint64_t num = 0;
  bool sign = true;
  int bits = 64;      // Cast: width; 0 = bool
  std::string str;    // Str: literal; Flags: delimiter
  int field = -1;
  std::vector<std::pair<std::uint64_t, std::string>> table;
};

struct Conv {
  std::string before;  // literal text before it
  char conv = 'd';     // d u x X o c s p
  char pext = 0;       // %p extension: s S F f B
  std::string spec;    // flags, width, precision
  int bits = 32;
  int arg = -1;
  int stars[2] = {-1, -1};  // arguments of `*` width / precision, in order
};

struct Val {
  bool is_str = false;
  std::uint64_t n = 0;
  bool sign = true;
  std::string_view s;
};


}  // namespace detail

class PrintFormat {
 public:
  std::vector<detail::Node> nodes;
  std::vector<detail::Conv> convs;
  std::string tail;
  std::uint32_t long_size = 8;

  void render(const EventFormat& ev, std::string_view data, const PrintContext& ctx, std::string& out) const;

 private:
  detail::Val eval(int n, const EventFormat& ev, std::string_view data, const PrintContext& ctx, std::string& scratch) const;
};


// The compiled print fmt of `ev`, or null with `why` when it uses something
// the interpreter does not know (the caller then prints field=value).
std::shared_ptr<const PrintFormat> compile_print_format(std::string_view text, const EventFormat& ev,
                                                        std::uint32_t long_size, std::string& why);

// The fields each plugin prints, in the order render_plugin reads them.
std::vector<std::string_view> plugin_field_names(Plugin p);

}  // namespace timerlab
