// tracedat_compile.cpp — compiling a print fmt: the lexer of its C
// expressions, the precedence-climbing parser, the conversions of its
// format string (tracedat_print.hpp).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "tracedat_print.hpp"

namespace timerlab {

using namespace detail;

namespace {

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


// Enum constants trace-cmd (libtraceevent) knows by name when a format
// prints them unresolved: the softirq numbers and the hrtimer restart codes,
// kernel ABI that has not changed since they were introduced.
bool builtin_name_value(std::string_view name, std::uint64_t& value) {
  static constexpr std::pair<std::string_view, std::uint64_t> known[] = {
      {"HI_SOFTIRQ", 0},      {"TIMER_SOFTIRQ", 1}, {"NET_TX_SOFTIRQ", 2}, {"NET_RX_SOFTIRQ", 3},
      {"BLOCK_SOFTIRQ", 4},   {"IRQ_POLL_SOFTIRQ", 5}, {"TASKLET_SOFTIRQ", 6}, {"SCHED_SOFTIRQ", 7},
      {"HRTIMER_SOFTIRQ", 8}, {"RCU_SOFTIRQ", 9},   {"HRTIMER_NORESTART", 0}, {"HRTIMER_RESTART", 1}};
  for (const auto& [n, v] : known) {
    if (n == name) {
      value = v;
      return true;
    }
  }
  return false;
}

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

  // REC->name[index] of an array field of numbers.
  int element(const std::string& name, std::string& why) {
    const EventField* f = ev_.field(name);
    if (!f || f->kind != EventField::Kind::Array) {
      why = "no array field " + name;
      return -1;
    }
    if (!advance(why)) return -1;  // '['
    Node n;
    n.op = Op::Index;
    n.field = static_cast<int>(f - ev_.fields.data());
    n.a = expr(why);
    if (n.a < 0 || !expect("]", why)) return -1;
    return add(std::move(n));
  }

  // { value, "string" } pairs of __print_flags / __print_symbolic.
  bool table(Node& n, std::string& why) {
    while (is(",")) {
      if (!advance(why) || !expect("{", why)) return false;
      const int v = expr(why);
      if (v < 0 || !expect(",", why)) return false;
      if (tok_.kind != Tok::Str) {
        // `{ 0, NULL }` (NULL printed as ((void *)0)): the kernel's end of
        // a table, no entry.
        const int z = expr(why);
        std::uint64_t zero = 1;
        if (z < 0 || !constant(z, zero, why) || zero != 0) {
          why = "table entry without a string";
          return false;
        }
        if (!expect("}", why)) return false;
        continue;
      }
      std::string s = tok_.text;
      if (!advance(why) || !expect("}", why)) return false;
      std::uint64_t value = 0;
      const Node& entry = pf_.nodes[static_cast<std::size_t>(v)];
      // An entry named by an enum constant the file does not resolve has
      // no value; trace-cmd knows a few by name (builtin_name_value).
      const bool named = entry.op == Op::Name;
      const bool nameless = named && !builtin_name_value(entry.str, value);
      if (!named && !constant(v, value, why)) return false;
      n.table.emplace_back(value, std::move(s));
      n.nameless.push_back(nameless);
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
      case Op::Name: value = 0; return true;  // inside an expression: 0, as trace-cmd reads it
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
      case Op::Shl: value = a << (b & 63); return true;  // the count modulo 64, as in eval
      case Op::Shr: value = a >> (b & 63); return true;
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
               name == "__get_rel_str" || name == "__get_rel_bitmask" || name == "__get_rel_cpumask") {
      n.op = name == "__get_str" || name == "__get_rel_str" ? Op::GetStr : Op::Bitmask;
      n.num = name == "__get_cpumask" || name == "__get_rel_cpumask";  // printed as a CPU list
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
      // `(loff_t)REC->x`: a name in parentheses before an operand is a cast
      // to a typedef; its width is not in the file, so the value passes
      // unchanged, as trace-cmd passes it.
      if (pf_.nodes[static_cast<std::size_t>(e)].op == Op::Name &&
          (tok_.kind == Tok::Ident || tok_.kind == Tok::Num || is("("))) {
        return unary(why);
      }
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
        if (is("[")) return element(f, why);
        return field_ref(f, why);
      }
      if (is("(")) return call(name, why);
      // An enum constant the kernel did not turn into its number (no
      // TRACE_DEFINE_ENUM): its value is not in the file. As trace-cmd
      // does, it reads as 0 in an expression and matches nothing in a
      // table (see table()).
      Node n;
      n.op = Op::Name;
      n.str = name;
      return add(std::move(n));
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

}  // namespace

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

}  // namespace timerlab
