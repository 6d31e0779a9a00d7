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
  Name,  // an identifier the format does not define (an enum constant): str
  Index,  // element a of array field `field` (REC->args[0])
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
  // Per table entry: its value is an enum constant the file leaves
  // unresolved, so it has none (Flags print the first such entry once no
  // bits are left, as trace-cmd does; Symbolic never match it).
  std::vector<bool> nameless;
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
  // Append what conversion `i` prints (not its literal `before`); scratch
  // and starred are work space. The direct decoder prints single values
  // with it (tracedat_decode.hpp).
  void render_conv(std::size_t i, const EventFormat& ev, std::string_view data, const PrintContext& ctx,
                   std::string& out, std::string& scratch, std::string& starred) const;
  detail::Val eval(int n, const EventFormat& ev, std::string_view data, const PrintContext& ctx, std::string& scratch) const;
};

namespace detail {
// trace-cmd's plugins' ways of printing, shared by the printer and the
// direct decoder: the hrtimer plugin's function (sym/0x<start - addr>, or
// 0x%08llx without a symbol) and the sched plugin's task state (letters of
// the low 8 bits, or R).
void put_plugin_function(std::string& out, std::uint64_t addr, const Symbols* syms);
void put_state(std::string& out, std::uint64_t state);
// A field's value as the sched plugin reads it (tep_get_field_val): its
// bytes as an unsigned number, not sign-extended; the plugin then prints
// pids, wakeup prio, success and target CPU with %lld/%llu of that (a
// 4-byte -1 prints 4294967295), only sched_switch's prios as (int).
inline std::uint64_t as_plugin_reads(std::uint64_t v, std::uint32_t field_size) {
  return field_size >= 8 ? v : v & ((std::uint64_t{1} << (8 * field_size)) - 1);
}
// The value a conversion prints: the argument cut to its width and sign.
std::uint64_t cut(std::uint64_t v, int bits, bool sign);
// The bytes of a char array or a dynamic field; false if outside the record.
bool field_bytes(const EventField& f, std::string_view data, const RecordLayout& layout, std::string_view& bytes);
// Up to the first NUL.
std::string_view c_string(std::string_view s);
}  // namespace detail


// The compiled print fmt of `ev`, or null with `why` when it uses something
// the interpreter does not know (the caller then prints field=value).
std::shared_ptr<const PrintFormat> compile_print_format(std::string_view text, const EventFormat& ev,
                                                        std::uint32_t long_size, std::string& why);

// The fields each plugin prints, in the order render_plugin reads them.
std::vector<std::string_view> plugin_field_names(Plugin p);

}  // namespace timerlab
