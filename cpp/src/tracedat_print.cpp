// tracedat_print.cpp — the print fmt interpreter and trace-cmd's plugin
// formats (see tracedat_format.hpp for the conventions reproduced).
//
// A print fmt is compiled once per event: the format string is cut into
// literal text and conversions, and each argument, a C expression, is parsed
// by precedence climbing into a flat node array. Constant tables of
// __print_flags / __print_symbolic are evaluated at compile time. Rendering
// walks the nodes per record; strings are views into the record, the
// format, or one scratch buffer per conversion.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "tracedat_print.hpp"

namespace timerlab {

namespace {

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

// ---------------------------------------------------------------------------
// Tokens of the argument list.

struct Tok {
  enum Kind : std::uint8_t { End, Ident, Num, Str, Punct } kind = End;
  std::string text;
  std::uint64_t num = 0;
};

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}
  bool next(Tok& t, std::string& why) {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    t = Tok{};
    if (i_ >= s_.size()) return true;
    const char ch = s_[i_];
    if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') {
      const std::size_t b = i_;
      while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
      t.kind = Tok::Ident;
      t.text = std::string(s_.substr(b, i_ - b));
      return true;
    }
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      const std::size_t b = i_;
      while (i_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[i_]))) ++i_;
      std::string lit(s_.substr(b, i_ - b));
      while (!lit.empty() && (lit.back() == 'u' || lit.back() == 'U' || lit.back() == 'l' || lit.back() == 'L')) {
        lit.pop_back();
      }
      char* end = nullptr;
      t.num = std::strtoull(lit.c_str(), &end, 0);
      if (lit.empty() || *end != '\0') {
        why = "bad number " + lit;
        return false;
      }
      t.kind = Tok::Num;
      return true;
    }
    if (ch == '"') return string_lit(t, why);
    if (ch == '\'') {
      if (i_ + 2 < s_.size() && s_[i_ + 2] == '\'') {
        t.kind = Tok::Num;
        t.num = static_cast<unsigned char>(s_[i_ + 1]);
        i_ += 3;
        return true;
      }
      why = "character literal";
      return false;
    }
    static constexpr std::string_view two[] = {"->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||"};
    for (std::string_view p : two) {
      if (s_.substr(i_, 2) == p) {
        t.kind = Tok::Punct;
        t.text = std::string(p);
        i_ += 2;
        return true;
      }
    }
    if (std::strchr("(){}[],?:+-*/%<>&|^!~.", ch)) {
      t.kind = Tok::Punct;
      t.text = std::string(1, ch);
      ++i_;
      return true;
    }
    why = std::string("unexpected character '") + ch + "'";
    return false;
  }

 private:
  bool string_lit(Tok& t, std::string& why) {
    t.kind = Tok::Str;
    // Adjacent literals concatenate, as in C.
    while (i_ < s_.size() && s_[i_] == '"') {
      ++i_;
      while (i_ < s_.size() && s_[i_] != '"') {
        char ch = s_[i_++];
        if (ch == '\\' && i_ < s_.size()) {
          const char e = s_[i_++];
          ch = e == 'n' ? '\n' : e == 't' ? '\t' : e == '0' ? '\0' : e;
        }
        t.text.push_back(ch);
      }
      if (i_ >= s_.size()) {
        why = "unterminated string";
        return false;
      }
      ++i_;
      std::size_t j = i_;
      while (j < s_.size() && std::isspace(static_cast<unsigned char>(s_[j]))) ++j;
      if (j < s_.size() && s_[j] == '"') i_ = j;
    }
    return true;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

class PrintFormat {
 public:
  std::vector<Node> nodes;
  std::vector<Conv> convs;
  std::string tail;
  std::uint32_t long_size = 8;

  void render(const EventFormat& ev, std::string_view data, const PrintContext& ctx, std::string& out) const;

 private:
  Val eval(int n, const EventFormat& ev, std::string_view data, const PrintContext& ctx, std::string& scratch) const;
};

namespace {

// ---------------------------------------------------------------------------
// The compiler.

class Compiler {
 public:
  Compiler(std::string_view args, const EventFormat& ev, PrintFormat& pf) : lex_(args), ev_(ev), pf_(pf) {}

  bool start(std::string& why) { return advance(why); }
  bool at_end() const { return tok_.kind == Tok::End; }
  bool expect(std::string_view p, std::string& why) {
    if (tok_.kind != Tok::Punct || tok_.text != p) {
      why = "expected '" + std::string(p) + "' at '" + tok_.text + "'";
      return false;
    }
    return advance(why);
  }
  bool is(std::string_view p) const { return tok_.kind == Tok::Punct && tok_.text == p; }

  // expr := cond
  int expr(std::string& why) { return cond(why); }

 private:
  bool advance(std::string& why) { return lex_.next(tok_, why); }

  int add(Node n) {
    pf_.nodes.push_back(std::move(n));
    return static_cast<int>(pf_.nodes.size() - 1);
  }

  int cond(std::string& why) {
    const int c = binary(0, why);
    if (c < 0 || !is("?")) return c;
    if (!advance(why)) return -1;
    const int a = expr(why);
    if (a < 0 || !expect(":", why)) return -1;
    const int b = expr(why);
    if (b < 0) return -1;
    Node n;
    n.op = Op::Cond;
    n.a = c;
    n.b = a;
    n.c = b;
    return add(std::move(n));
  }

  static int prec(const Tok& t, Op& op) {
    if (t.kind != Tok::Punct) return -1;
    static const std::pair<std::string_view, std::pair<Op, int>> table[] = {
        {"*", {Op::Mul, 10}}, {"/", {Op::Div, 10}}, {"%", {Op::Mod, 10}}, {"+", {Op::Add, 9}},
        {"-", {Op::Sub, 9}},  {"<<", {Op::Shl, 8}}, {">>", {Op::Shr, 8}}, {"<", {Op::Lt, 7}},
        {">", {Op::Gt, 7}},   {"<=", {Op::Le, 7}},  {">=", {Op::Ge, 7}},  {"==", {Op::Eq, 6}},
        {"!=", {Op::Ne, 6}},  {"&", {Op::And, 5}},  {"^", {Op::Xor, 4}},  {"|", {Op::Or, 3}},
        {"&&", {Op::LAnd, 2}}, {"||", {Op::LOr, 1}}};
    for (const auto& [s, v] : table) {
      if (t.text == s) {
        op = v.first;
        return v.second;
      }
    }
    return -1;
  }

  int binary(int min_prec, std::string& why) {
    int lhs = unary(why);
    while (lhs >= 0) {
      Op op{};
      const int p = prec(tok_, op);
      if (p < 0 || p < min_prec) break;
      if (!advance(why)) return -1;
      const int rhs = binary(p + 1, why);
      if (rhs < 0) return -1;
      Node n;
      n.op = op;
      n.a = lhs;
      n.b = rhs;
      lhs = add(std::move(n));
    }
    return lhs;
  }

  static bool type_word(const std::string& w) {
    static constexpr std::string_view words[] = {
        "unsigned", "signed", "int",  "long", "short", "char", "void", "bool", "_Bool", "const", "u8",
        "u16",      "u32",    "u64",  "s8",   "s16",   "s32",  "s64",  "__u8", "__u16", "__u32", "__u64",
        "__s8",     "__s16",  "__s32", "__s64", "size_t", "ssize_t", "pid_t", "uint8_t", "uint16_t",
        "uint32_t", "uint64_t", "int8_t", "int16_t", "int32_t", "int64_t", "struct", "gfp_t", "dma_addr_t"};
    for (std::string_view t : words) {
      if (w == t) return true;
    }
    return false;
  }

  // After '(' when the next token is a type word: the cast's type up to ')'.
  int cast(std::string& why) {
    bool is_unsigned = false, is_pointer = false, is_bool = false;
    int bits = 32, longs = 0;
    bool sized = false;
    while (tok_.kind == Tok::Ident || is("*")) {
      const std::string w = tok_.text;
      if (w == "*") is_pointer = true;
      else if (w == "unsigned") is_unsigned = true;
      else if (w == "char" || w == "u8" || w == "__u8" || w == "s8" || w == "__s8" || w == "uint8_t" || w == "int8_t") bits = 8, sized = true;
      else if (w == "short" || w == "u16" || w == "__u16" || w == "s16" || w == "__s16" || w == "uint16_t" || w == "int16_t") bits = 16, sized = true;
      else if (w == "u32" || w == "__u32" || w == "s32" || w == "__s32" || w == "uint32_t" || w == "int32_t" || w == "pid_t" || w == "gfp_t") bits = 32, sized = true;
      else if (w == "u64" || w == "__u64" || w == "s64" || w == "__s64" || w == "uint64_t" || w == "int64_t" || w == "dma_addr_t") bits = 64, sized = true;
      else if (w == "size_t" || w == "ssize_t") bits = static_cast<int>(pf_.long_size * 8), sized = true, is_unsigned = w == "size_t";
      else if (w == "long") ++longs;
      else if (w == "bool" || w == "_Bool") is_bool = true;
      if (w[0] == 'u' && w != "unsigned") is_unsigned = true;
      if (w.rfind("__u", 0) == 0) is_unsigned = true;
      if (!advance(why)) return -1;
    }
    if (!expect(")", why)) return -1;
    if (!sized && longs == 1) bits = static_cast<int>(pf_.long_size * 8);
    if (!sized && longs >= 2) bits = 64;
    const int operand = unary(why);
    if (operand < 0) return -1;
    Node n;
    n.op = Op::Cast;
    n.a = operand;
    n.bits = is_pointer ? 64 : is_bool ? 0 : bits;
    n.sign = !(is_pointer || is_unsigned);
    return add(std::move(n));
  }

  int unary(std::string& why) {
    if (is("-") || is("!") || is("~") || is("+")) {
      const char c = tok_.text[0];
      if (!advance(why)) return -1;
      const int a = unary(why);
      if (a < 0 || c == '+') return a;
      Node n;
      n.op = c == '-' ? Op::Neg : c == '!' ? Op::Not : Op::BitNot;
      n.a = a;
      return add(std::move(n));
    }
    return primary(why);
  }

  int field_ref(const std::string& name, std::string& why) {
    for (std::size_t i = 0; i < ev_.fields.size(); ++i) {
      if (ev_.fields[i].name == name) {
        if (ev_.fields[i].kind == EventField::Kind::Array) {
          why = "array field " + name;
          return -1;
        }
        Node n;
        n.op = Op::Field;
        n.field = static_cast<int>(i);
        return add(std::move(n));
      }
    }
    why = "no field " + name;
    return -1;
  }

  // { value, "string" } pairs of __print_flags / __print_symbolic.
  bool table(Node& n, std::string& why) {
    while (is(",")) {
      if (!advance(why) || !expect("{", why)) return false;
      const int v = expr(why);
      if (v < 0 || !expect(",", why)) return false;
      if (tok_.kind != Tok::Str) {
        why = "table entry without a string";
        return false;
      }
      std::string s = tok_.text;
      if (!advance(why) || !expect("}", why)) return false;
      std::uint64_t value = 0;
      if (!constant(v, value, why)) return false;
      n.table.emplace_back(value, std::move(s));
    }
    return true;
  }

  bool constant(int node, std::uint64_t& value, std::string& why) {
    const Node& n = pf_.nodes[static_cast<std::size_t>(node)];
    std::uint64_t a = 0, b = 0;
    switch (n.op) {
      case Op::Num: value = n.num; return true;
      case Op::Neg: if (!constant(n.a, a, why)) return false; value = 0 - a; return true;
      case Op::BitNot: if (!constant(n.a, a, why)) return false; value = ~a; return true;
      case Op::Cast: return constant(n.a, value, why);
      default: break;
    }
    if (n.a < 0 || n.b < 0 || n.op < Op::Mul || !constant(n.a, a, why) || !constant(n.b, b, why)) {
      why = "a table value that is not a constant";
      return false;
    }
    switch (n.op) {
      case Op::Add: value = a + b; return true;
      case Op::Sub: value = a - b; return true;
      case Op::Mul: value = a * b; return true;
      case Op::Shl: value = b < 64 ? a << b : 0; return true;
      case Op::Shr: value = b < 64 ? a >> b : 0; return true;
      case Op::Or: value = a | b; return true;
      case Op::And: value = a & b; return true;
      case Op::Xor: value = a ^ b; return true;
      default: why = "a table value that is not a constant"; return false;
    }
  }

  int call(const std::string& name, std::string& why) {
    if (!advance(why)) return -1;  // '('
    Node n;
    if (name == "__print_flags" || name == "__print_symbolic") {
      n.op = name == "__print_flags" ? Op::Flags : Op::Symbolic;
      n.a = expr(why);
      if (n.a < 0) return -1;
      if (n.op == Op::Flags) {
        if (!expect(",", why)) return -1;
        if (tok_.kind != Tok::Str) {
          why = "__print_flags without a delimiter";
          return -1;
        }
        n.str = tok_.text;
        if (!advance(why)) return -1;
      }
      if (!table(n, why)) return -1;
    } else if (name == "__get_str" || name == "__get_bitmask" || name == "__get_cpumask" ||
               name == "__get_rel_str") {
      n.op = name == "__get_str" || name == "__get_rel_str" ? Op::GetStr : Op::Bitmask;
      if (tok_.kind != Tok::Ident) {
        why = name + " without a field";
        return -1;
      }
      n.a = field_ref(tok_.text, why);
      if (n.a < 0 || !advance(why)) return -1;
    } else {
      why = "helper " + name + "()";
      return -1;
    }
    if (!expect(")", why)) return -1;
    return add(std::move(n));
  }

  int primary(std::string& why) {
    if (tok_.kind == Tok::Num || tok_.kind == Tok::Str) {
      Node n;
      n.op = tok_.kind == Tok::Num ? Op::Num : Op::Str;
      n.num = tok_.num;
      n.str = tok_.text;
      if (!advance(why)) return -1;
      return add(std::move(n));
    }
    if (is("(")) {
      if (!advance(why)) return -1;
      if (tok_.kind == Tok::Ident && type_word(tok_.text)) return cast(why);
      const int e = expr(why);
      if (e < 0 || !expect(")", why)) return -1;
      return e;
    }
    if (tok_.kind == Tok::Ident) {
      const std::string name = tok_.text;
      if (!advance(why)) return -1;
      if (name == "REC") {
        if (!expect("->", why)) return -1;
        if (tok_.kind != Tok::Ident) {
          why = "REC-> without a field name";
          return -1;
        }
        const std::string f = tok_.text;
        if (!advance(why)) return -1;
        return field_ref(f, why);
      }
      if (is("(")) return call(name, why);
      why = "unresolved name " + name;
      return -1;
    }
    why = "unexpected '" + tok_.text + "'";
    return -1;
  }

  Lexer lex_;
  Tok tok_;
  const EventFormat& ev_;
  PrintFormat& pf_;
};

// The format string: literal text and conversions.
bool split_format(std::string_view f, PrintFormat& pf, std::string& why) {
  std::string lit;
  std::size_t i = 0;
  while (i < f.size()) {
    const char ch = f[i++];
    if (ch != '%') {
      lit.push_back(ch);
      continue;
    }
    if (i < f.size() && f[i] == '%') {
      lit.push_back('%');
      ++i;
      continue;
    }
    Conv c;
    while (i < f.size() && std::strchr("-+ #0", f[i])) c.spec.push_back(f[i++]);
    // Width and precision, digits or `*` (an argument, before the value's).
    while (i < f.size() && (std::isdigit(static_cast<unsigned char>(f[i])) || f[i] == '.' || f[i] == '*')) {
      c.spec.push_back(f[i++]);
    }
    if (std::count(c.spec.begin(), c.spec.end(), '*') > 2 || c.spec.size() > 16) {
      why = "conversion spec " + c.spec;
      return false;
    }
    int longs = 0, shorts = 0;
    while (i < f.size() && (f[i] == 'l' || f[i] == 'h' || f[i] == 'z' || f[i] == 'L' || f[i] == 'j' || f[i] == 't')) {
      if (f[i] == 'l' || f[i] == 'z' || f[i] == 'j' || f[i] == 't') ++longs;
      if (f[i] == 'L') longs += 2;
      if (f[i] == 'h') ++shorts;
      ++i;
    }
    if (i >= f.size()) {
      why = "format ends inside a conversion";
      return false;
    }
    c.conv = f[i++];
    if (c.conv == 'i') c.conv = 'd';
    if (!std::strchr("duxXocsp", c.conv)) {
      why = std::string("conversion %") + c.conv;
      return false;
    }
    c.bits = longs >= 2 ? 64 : longs == 1 ? static_cast<int>(pf.long_size * 8) : shorts >= 2 ? 8 : shorts == 1 ? 16 : 32;
    if (c.conv == 'p' && i < f.size() && std::isalnum(static_cast<unsigned char>(f[i]))) {
      c.pext = f[i++];
      if (!std::strchr("sSFfB", c.pext)) {
        why = std::string("%p") + c.pext;
        return false;
      }
    }
    c.before = std::move(lit);
    lit.clear();
    pf.convs.push_back(std::move(c));
  }
  pf.tail = std::move(lit);
  return true;
}

// printf of one integer with the format's flags and width. The common
// cases (no flags, or a zero/space-padded width) avoid snprintf, which is
// most of the cost of a record otherwise.
void put_int(std::string& out, const std::string& spec, char conv, std::uint64_t v, bool as_signed) {
  char fmt[40];
  char buf[320];  // a width of at most 256 (`*` is bounded)
  if (spec.size() > 20) return;
  if (conv != 'o' && conv != 'X') {
    std::size_t i = 0;
    const bool zero = !spec.empty() && spec[0] == '0';
    if (zero) ++i;
    unsigned width = 0;
    while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9' && width < 64) width = width * 10 + static_cast<unsigned>(spec[i++] - '0');
    if (i == spec.size()) {
      char* const b = buf;
      std::to_chars_result r{};
      bool neg = false;
      if (as_signed) {
        const auto sv = static_cast<std::int64_t>(v);
        neg = sv < 0;
        r = std::to_chars(b, b + sizeof buf, neg ? 0 - v : v, 10);
      } else {
        r = std::to_chars(b, b + sizeof buf, v, conv == 'x' ? 16 : 10);
      }
      const auto len = static_cast<unsigned>(r.ptr - b) + (neg ? 1u : 0u);
      if (!zero && neg) out.push_back('-');
      if (width > len) out.append(width - len, zero ? '0' : ' ');
      if (zero && neg) out.insert(out.size() - (width > len ? width - len : 0), 1, '-');
      out.append(b, r.ptr);
      return;
    }
  }
  if (as_signed) {
    std::snprintf(fmt, sizeof fmt, "%%%slld", spec.c_str());
    std::snprintf(buf, sizeof buf, fmt, static_cast<long long>(v));
  } else {
    std::snprintf(fmt, sizeof fmt, "%%%sll%c", spec.c_str(), conv);
    std::snprintf(buf, sizeof buf, fmt, static_cast<unsigned long long>(v));
  }
  out.append(buf);
}

void put_hex(std::string& out, std::uint64_t v, const char* fmt = "0x%" PRIx64) {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  out.append(buf);
}

// "0x" and the hex digits, without snprintf.
void put_0x(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
  out.append("0x");
  out.append(buf, r.ptr);
}

void put_u(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, 10);
  out.append(buf, r.ptr);
}

std::uint64_t cut(std::uint64_t v, int bits, bool sign) {
  if (bits >= 64) return v;
  if (bits == 0) return v != 0;
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  v &= mask;
  if (sign && (v >> (bits - 1)) & 1) v |= ~mask;
  return v;
}

std::string_view c_string(std::string_view s) {
  const std::size_t z = s.find('\0');
  return z == std::string_view::npos ? s : s.substr(0, z);
}

// The bytes of a char array or a dynamic field; false if outside the record.
bool field_bytes(const EventField& f, std::string_view data, const RecordLayout& layout, std::string_view& bytes) {
  if (f.kind == EventField::Kind::CharArray) {
    if (f.offset > data.size() || f.size > data.size() - f.offset) return false;
    bytes = data.substr(f.offset, f.size);
    return true;
  }
  std::uint64_t loc = 0;
  if (!read_field(f, data, layout, loc)) return false;
  std::uint64_t off = loc & 0xffff;
  const std::uint64_t len = (loc >> 16) & 0xffff;
  if (f.kind == EventField::Kind::RelLoc) off += f.offset + f.size;
  if (off > data.size() || len > data.size() - off) return false;
  bytes = data.substr(off, len);
  return true;
}

}  // namespace

Val PrintFormat::eval(int idx, const EventFormat& ev, std::string_view data, const PrintContext& ctx,
                      std::string& scratch) const {
  const Node& n = nodes[static_cast<std::size_t>(idx)];
  Val v;
  switch (n.op) {
    case Op::Num:
      v.n = n.num;
      return v;
    case Op::Str:
      v.is_str = true;
      v.s = n.str;
      return v;
    case Op::Field:
    case Op::GetStr: {
      const EventField& f = ev.fields[static_cast<std::size_t>(n.op == Op::Field ? n.field : nodes[static_cast<std::size_t>(n.a)].field)];
      if (f.kind == EventField::Kind::Number) {
        read_field(f, data, ctx.layout, v.n);  // bounds checked by the caller
        v.sign = f.is_signed;
      } else {
        v.is_str = true;
        std::string_view b;
        if (field_bytes(f, data, ctx.layout, b)) v.s = c_string(b);
      }
      return v;
    }
    case Op::Bitmask: {
      const EventField& f = ev.fields[static_cast<std::size_t>(nodes[static_cast<std::size_t>(n.a)].field)];
      std::string_view b;
      scratch.clear();
      if (field_bytes(f, data, ctx.layout, b)) {
        // 32-bit words, most significant first, comma separated.
        for (std::size_t w = (b.size() + 3) / 4; w-- > 0;) {
          std::uint32_t word = 0;
          for (std::size_t k = 0; k < 4 && w * 4 + k < b.size(); ++k) {
            word |= static_cast<std::uint32_t>(static_cast<unsigned char>(b[w * 4 + k])) << (8 * k);
          }
          char buf[16];
          std::snprintf(buf, sizeof buf, "%08x", word);
          if (!scratch.empty()) scratch.push_back(',');
          scratch.append(buf);
        }
      }
      v.is_str = true;
      v.s = scratch;
      return v;
    }
    case Op::Neg:
    case Op::Not:
    case Op::BitNot: {
      const Val a = eval(n.a, ev, data, ctx, scratch);
      v.n = n.op == Op::Neg ? 0 - a.n : n.op == Op::Not ? (a.is_str ? a.s.empty() : a.n == 0) : ~a.n;
      v.sign = n.op == Op::Not ? true : a.sign;
      return v;
    }
    case Op::Cast: {
      const Val a = eval(n.a, ev, data, ctx, scratch);
      if (a.is_str) return a;
      v.n = cut(a.n, n.bits, n.sign);
      v.sign = n.sign;
      return v;
    }
    case Op::Cond: {
      const Val c = eval(n.a, ev, data, ctx, scratch);
      const bool t = c.is_str ? !c.s.empty() : c.n != 0;
      return eval(t ? n.b : n.c, ev, data, ctx, scratch);
    }
    case Op::Flags:
    case Op::Symbolic: {
      std::uint64_t x = eval(n.a, ev, data, ctx, scratch).n;
      scratch.clear();
      v.is_str = true;
      if (n.op == Op::Symbolic) {
        for (const auto& [value, s] : n.table) {
          if (value == x) {
            v.s = s;
            return v;
          }
        }
        put_hex(scratch, x);
      } else {
        bool any = false;
        for (const auto& [value, s] : n.table) {
          if (value == 0 && x == 0) {
            scratch = s;
            any = true;
            break;
          }
          if (value != 0 && (x & value) == value) {
            if (any) scratch.append(n.str);
            scratch.append(s);
            any = true;
            x &= ~value;
          }
        }
        if (x != 0) {
          if (any) scratch.append(n.str);
          put_hex(scratch, x);
        }
      }
      v.s = scratch;
      return v;
    }
    default:
      break;
  }
  const Val a = eval(n.a, ev, data, ctx, scratch);
  if (n.op == Op::LAnd || n.op == Op::LOr) {
    const bool at = a.is_str ? !a.s.empty() : a.n != 0;
    if (n.op == Op::LAnd && !at) return v;
    if (n.op == Op::LOr && at) {
      v.n = 1;
      return v;
    }
    const Val b = eval(n.b, ev, data, ctx, scratch);
    v.n = b.is_str ? !b.s.empty() : b.n != 0;
    return v;
  }
  const Val b = eval(n.b, ev, data, ctx, scratch);
  const bool s = a.sign && b.sign;
  const auto sa = static_cast<std::int64_t>(a.n), sb = static_cast<std::int64_t>(b.n);
  v.sign = s;
  switch (n.op) {
    case Op::Mul: v.n = a.n * b.n; break;
    case Op::Div: v.n = b.n == 0 ? 0 : s && !(sa == INT64_MIN && sb == -1) ? static_cast<std::uint64_t>(sa / sb) : a.n / b.n; break;
    case Op::Mod: v.n = b.n == 0 ? 0 : s && !(sa == INT64_MIN && sb == -1) ? static_cast<std::uint64_t>(sa % sb) : a.n % b.n; break;
    case Op::Add: v.n = a.n + b.n; break;
    case Op::Sub: v.n = a.n - b.n; break;
    case Op::Shl: v.n = b.n < 64 ? a.n << b.n : 0; v.sign = a.sign; break;
    case Op::Shr: v.n = b.n < 64 ? (a.sign ? static_cast<std::uint64_t>(sa >> b.n) : a.n >> b.n) : 0; v.sign = a.sign; break;
    case Op::Lt: v.n = s ? sa < sb : a.n < b.n; v.sign = true; break;
    case Op::Gt: v.n = s ? sa > sb : a.n > b.n; v.sign = true; break;
    case Op::Le: v.n = s ? sa <= sb : a.n <= b.n; v.sign = true; break;
    case Op::Ge: v.n = s ? sa >= sb : a.n >= b.n; v.sign = true; break;
    case Op::Eq: v.n = a.n == b.n; v.sign = true; break;
    case Op::Ne: v.n = a.n != b.n; v.sign = true; break;
    case Op::And: v.n = a.n & b.n; break;
    case Op::Xor: v.n = a.n ^ b.n; break;
    case Op::Or: v.n = a.n | b.n; break;
    default: break;
  }
  return v;
}

namespace {

// %s with flags, width and precision: printf's rules, without its buffer.
void put_str(std::string& out, const std::string& spec, std::string_view s) {
  bool left = false;
  std::size_t i = 0;
  while (i < spec.size() && std::strchr("-+ #0", spec[i])) left |= spec[i++] == '-';
  long width = 0, prec = -1;
  if (i < spec.size() && spec[i] == '-') left = true, ++i;  // a negative `*` width
  while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) width = width * 10 + (spec[i++] - '0');
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    prec = 0;
    if (i < spec.size() && spec[i] == '-') prec = -1;  // a negative `*` precision: none
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) {
      if (prec >= 0) prec = prec * 10 + (spec[i] - '0');
      ++i;
    }
  }
  if (prec >= 0 && static_cast<std::size_t>(prec) < s.size()) s = s.substr(0, static_cast<std::size_t>(prec));
  const std::size_t pad = width > static_cast<long>(s.size()) ? static_cast<std::size_t>(width) - s.size() : 0;
  if (!left) out.append(pad, ' ');
  out.append(s);
  if (left) out.append(pad, ' ');
}

void put_symbol(std::string& out, std::uint64_t addr, char pext, const Symbols* syms) {
  std::uint64_t start = 0;
  const std::string* name = syms ? syms->find(addr, &start) : nullptr;
  if (!name) {
    put_hex(out, addr);
    return;
  }
  out.append(*name);
  if (pext == 'S' || pext == 'F' || pext == 'B') {
    out.push_back('+');
    put_0x(out, addr - start);
  }
}

}  // namespace

void PrintFormat::render(const EventFormat& ev, std::string_view data, const PrintContext& ctx, std::string& out) const {
  std::string scratch, starred;
  for (const Conv& c : convs) {
    out.append(c.before);
    const std::string* spec = &c.spec;
    if (c.stars[0] >= 0) {
      // `*`: the argument's value, as int, bounded (a record cannot ask for
      // megabytes of padding).
      starred.clear();
      int k = 0;
      for (char ch : c.spec) {
        if (ch != '*') {
          starred.push_back(ch);
          continue;
        }
        const auto n = static_cast<std::int32_t>(eval(c.stars[k++], ev, data, ctx, scratch).n);
        if (n < 0 && !starred.empty() && starred.back() == '.') {
          starred.pop_back();  // a negative precision is none
          continue;
        }
        starred += std::to_string(std::clamp(n, -256, 256));
      }
      spec = &starred;
    }
    const Val v = eval(c.arg, ev, data, ctx, scratch);
    if (c.conv == 's') {
      if (!v.is_str) {
        put_int(out, "", 'u', v.n, false);
      } else if (spec->empty()) {
        out.append(v.s);
      } else {
        put_str(out, *spec, v.s);
      }
    } else if (v.is_str) {
      out.append(v.s);  // a string where a number was asked for: print it
    } else if (c.conv == 'p') {
      if (c.pext) put_symbol(out, v.n, c.pext, ctx.symbols);
      else if (v.n == 0) out.append("(nil)");
      else put_0x(out, v.n);
    } else if (c.conv == 'c') {
      out.push_back(static_cast<char>(v.n));
    } else {
      put_int(out, *spec, c.conv, cut(v.n, c.bits, c.conv == 'd'), c.conv == 'd');
    }
  }
  out.append(tail);
}

std::shared_ptr<const PrintFormat> compile_print_format(std::string_view text, const EventFormat& ev,
                                                        std::uint32_t long_size, std::string& why) {
  auto pf = std::make_shared<PrintFormat>();
  pf->long_size = long_size;
  Lexer lex(text);
  Tok fmt;
  if (!lex.next(fmt, why)) return nullptr;
  if (fmt.kind != Tok::Str) {
    why = "print fmt does not start with a string";
    return nullptr;
  }
  if (!split_format(fmt.text, *pf, why)) return nullptr;
  // The arguments follow the string literal.
  std::size_t after = 0;
  {
    bool in = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\\' && in) {
        ++i;
        continue;
      }
      if (text[i] == '"') in = !in;
      if (!in && text[i] == ',') {
        after = i;
        break;
      }
      after = text.size();
    }
  }
  Compiler comp(text.substr(after), ev, *pf);
  if (!comp.start(why)) return nullptr;
  for (Conv& c : pf->convs) {
    for (int k = 0; k < static_cast<int>(std::count(c.spec.begin(), c.spec.end(), '*')); ++k) {
      if (!comp.expect(",", why)) return nullptr;
      c.stars[k] = comp.expr(why);
      if (c.stars[k] < 0) return nullptr;
    }
    if (!comp.expect(",", why)) return nullptr;
    c.arg = comp.expr(why);
    if (c.arg < 0) return nullptr;
  }
  if (!comp.at_end()) {
    why = "more arguments than conversions";
    return nullptr;
  }
  return pf;
}

// ---------------------------------------------------------------------------
// Printing a record.

namespace {

// Field k of the plugin's list (plugin_field_names).
const EventField* plugin_field(const EventFormat& ev, int k) {
  const int i = ev.plugin_fields[static_cast<std::size_t>(k)];
  return i < 0 ? nullptr : &ev.fields[static_cast<std::size_t>(i)];
}

bool number(const EventFormat& ev, int k, std::string_view data, const RecordLayout& l, std::uint64_t& v) {
  const EventField* f = plugin_field(ev, k);
  return f && f->kind == EventField::Kind::Number && read_field(*f, data, l, v);
}

bool text(const EventFormat& ev, int k, std::string_view data, const RecordLayout& l, std::string_view& s) {
  const EventField* f = plugin_field(ev, k);
  if (!f || f->kind == EventField::Kind::Number || f->kind == EventField::Kind::Array) return false;
  if (!field_bytes(*f, data, l, s)) return false;
  s = c_string(s);
  return true;
}

void put_dec(std::string& out, std::int64_t v) { put_int(out, "", 'd', static_cast<std::uint64_t>(v), true); }

// trace-cmd's hrtimer plugin: sym/0x<start - addr>, or 0x%08llx.
void put_plugin_function(std::string& out, std::uint64_t addr, const Symbols* syms) {
  std::uint64_t start = 0;
  const std::string* name = syms ? syms->find(addr, &start) : nullptr;
  if (!name) {
    put_hex(out, addr, "0x%08" PRIx64);
    return;
  }
  out.append(*name);
  out.push_back('/');
  put_0x(out, start - addr);
}

// The sched plugin's task state: letters of the low 8 bits, or R.
void put_state(std::string& out, std::uint64_t state) {
  static constexpr char letters[] = "SDTtZXxW";
  bool any = false;
  for (int i = 0; i < 8; ++i) {
    if (!(state & (std::uint64_t{1} << i))) continue;
    if (any) out.push_back('|');
    out.push_back(letters[i]);
    any = true;
  }
  if (!any) out.push_back('R');
}

}  // namespace

std::vector<std::string_view> plugin_field_names(Plugin p) {
  switch (p) {
    case Plugin::SchedSwitch:
      return {"prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio"};
    case Plugin::SchedWakeup:
      return {"comm", "pid", "prio", "success", "target_cpu"};
    case Plugin::HrtimerStart:
      return {"hrtimer", "function", "expires", "softexpires"};
    case Plugin::HrtimerExpireEntry:
      return {"hrtimer", "now", "function"};
    case Plugin::None:
      break;
  }
  return {};
}

namespace {

bool render_plugin(const EventFormat& ev, std::string_view data, const PrintContext& ctx, std::string& out) {
  const RecordLayout& l = ctx.layout;
  auto task = [&](int comm_field, int pid_field, int prio_field) {
    std::string_view comm;
    std::uint64_t pid = 0, prio = 0;
    if (!text(ev, comm_field, data, l, comm) || !number(ev, pid_field, data, l, pid) ||
        !number(ev, prio_field, data, l, prio)) {
      return false;
    }
    out.append(comm);
    out.push_back(':');
    put_dec(out, static_cast<std::int64_t>(pid));
    out.append(" [");
    put_dec(out, static_cast<std::int32_t>(prio));
    out.push_back(']');
    if (ctx.register_comm) ctx.register_comm(ctx.self, static_cast<std::int32_t>(pid), comm);
    return true;
  };
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  switch (ev.plugin) {
    case Plugin::SchedSwitch: {
      if (!task(0, 1, 2) || !number(ev, 3, data, l, a)) return false;
      out.push_back(' ');
      put_state(out, a);
      out.append(" ==> ");
      return task(4, 5, 6);
    }
    case Plugin::SchedWakeup: {
      if (!task(0, 1, 2)) return false;
      if (number(ev, 3, data, l, a)) {
        out.append(" success=");
        put_dec(out, static_cast<std::int32_t>(a));
      }
      if (!number(ev, 4, data, l, b)) return false;
      out.append(" CPU:");
      put_int(out, "03", 'd', cut(b, 32, true), true);
      return true;
    }
    case Plugin::HrtimerStart:
      if (!number(ev, 0, data, l, a) || !number(ev, 1, data, l, b) || !number(ev, 2, data, l, c) ||
          !number(ev, 3, data, l, d)) {
        return false;
      }
      out.append("hrtimer=");
      put_0x(out, a);
      out.append(" function=");
      put_plugin_function(out, b, ctx.symbols);
      out.append(" expires=");
      put_u(out, c);
      out.append(" softexpires=");
      put_u(out, d);
      return true;
    case Plugin::HrtimerExpireEntry:
      if (!number(ev, 0, data, l, a) || !number(ev, 1, data, l, b) || !number(ev, 2, data, l, c)) {
        return false;
      }
      out.append("hrtimer=");
      put_0x(out, a);
      out.append(" now=");
      put_u(out, b);
      out.append(" function=");
      put_plugin_function(out, c, ctx.symbols);
      return true;
    case Plugin::None:
      break;
  }
  return false;
}

// Events whose print fmt did not compile: field=value of their own fields.
void render_fields(const EventFormat& ev, std::string_view data, const RecordLayout& l, std::string& out) {
  for (const EventField& f : ev.fields) {
    if (f.common) continue;
    if (!out.empty() && out.back() != ' ') out.push_back(' ');
    out.append(f.name);
    out.push_back('=');
    std::uint64_t v = 0;
    std::string_view s;
    if (f.kind == EventField::Kind::Number && read_field(f, data, l, v)) {
      put_int(out, "", f.is_signed ? 'd' : 'u', v, f.is_signed);
    } else if (f.kind != EventField::Kind::Array && field_bytes(f, data, l, s)) {
      out.append(c_string(s));
    } else if (f.offset <= data.size() && f.size <= data.size() - f.offset) {
      for (std::uint32_t i = 0; i < f.size; ++i) {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(data[f.offset + i]));
        out.append(buf);
      }
    }
  }
}

}  // namespace

bool render_payload(const EventFormat& ev, std::string_view data, const PrintContext& ctx, std::string& out,
                    std::string& why) {
  // Every fixed field must lie inside the record: the interpreter then reads
  // without further checks (dynamic fields are checked where read).
  for (const EventField& f : ev.fields) {
    if (f.offset > data.size() || f.size > data.size() - f.offset) {
      why = ev.name + " record of " + std::to_string(data.size()) + " bytes is too short for field " + f.name +
            " (offset " + std::to_string(f.offset) + ", size " + std::to_string(f.size) + ")";
      return false;
    }
  }
  if (ev.plugin != Plugin::None) {
    const std::size_t mark = out.size();
    if (render_plugin(ev, data, ctx, out)) return true;
    out.resize(mark);
  }
  if (ev.print) {
    ev.print->render(ev, data, ctx, out);
  } else {
    render_fields(ev, data, ctx.layout, out);
  }
  return true;
}

}  // namespace timerlab
