// tracedat_print.cpp — evaluating a compiled print fmt per record, and
// trace-cmd's plugin formats (see tracedat_format.hpp for the conventions
// reproduced, tracedat_print.hpp for the compiled form).
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

using namespace detail;

namespace {


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

// A cpumask as trace-cmd prints __get_cpumask(): the CPUs set, runs of two
// or more as "first-last", comma separated (the kernel's own text is the
// hex of __get_bitmask; libtraceevent 1.7 prints the list). The bytes are
// read lowest first, in reverse for a big-endian file, as trace-cmd reads them.
void put_cpu_list(std::string& out, std::string_view mask, bool big_endian) {
  const std::size_t bits = mask.size() * 8;
  auto set = [&](std::size_t k) {
    const std::size_t byte = big_endian ? mask.size() - 1 - k / 8 : k / 8;
    return (static_cast<unsigned char>(mask[byte]) >> (k % 8)) & 1;
  };
  for (std::size_t k = 0; k < bits;) {
    if (!set(k)) {
      ++k;
      continue;
    }
    std::size_t end = k;
    while (end + 1 < bits && set(end + 1)) ++end;
    if (!out.empty()) out.push_back(',');
    out.append(std::to_string(k));
    if (end > k) out.append("-" + std::to_string(end));
    k = end + 1;
  }
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

}  // namespace

namespace detail {

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

}  // namespace detail

Val PrintFormat::eval(int idx, const EventFormat& ev, std::string_view data, const PrintContext& ctx,
                      std::string& scratch) const {
  const Node& n = nodes[static_cast<std::size_t>(idx)];
  Val v;
  switch (n.op) {
    case Op::Num:
    case Op::Name:  // an unresolved enum constant: 0, as trace-cmd reads it
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
    case Op::Index: {
      // An element of a fixed array, n bytes each (size / [n]; a long when
      // the declaration does not say); outside the array it reads as 0.
      const EventField& f = ev.fields[static_cast<std::size_t>(n.field)];
      const std::uint64_t i = eval(n.a, ev, data, ctx, scratch).n;
      const std::uint32_t size = f.elements ? f.size / f.elements : ctx.layout.long_size;
      if (size == 0 || size > 8 || i >= f.size / size) return v;
      EventField e;
      e.offset = f.offset + static_cast<std::uint32_t>(i) * size;
      e.size = size;
      e.is_signed = f.is_signed;
      read_field(e, data, ctx.layout, v.n);  // inside the record: the caller checked every field
      v.sign = f.is_signed;
      return v;
    }
    case Op::Bitmask: {
      const EventField& f = ev.fields[static_cast<std::size_t>(nodes[static_cast<std::size_t>(n.a)].field)];
      std::string_view b;
      scratch.clear();
      if (field_bytes(f, data, ctx.layout, b) && n.num) {
        put_cpu_list(scratch, b, ctx.layout.big_endian);
      } else if (!b.empty()) {
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
        for (std::size_t i = 0; i < n.table.size(); ++i) {
          if (n.table[i].first == x && !n.nameless[i]) {
            v.s = n.table[i].second;
            return v;
          }
        }
        put_hex(scratch, x);
      } else {
        bool any = false;
        for (std::size_t i = 0; i < n.table.size(); ++i) {
          const auto& [value, s] = n.table[i];
          if (n.nameless[i]) {
            // trace-cmd prints the first such entry once no bits are left
            // (after the ones matched so far, without a delimiter), and stops.
            if (x != 0) continue;
            scratch.append(s);
            any = true;
            break;
          }
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
    // A shift by 64 or more is undefined in C; x86, which the kernel and
    // trace-cmd run on, takes the count modulo 64.
    case Op::Shl: v.n = a.n << (b.n & 63); v.sign = a.sign; break;
    case Op::Shr: v.n = a.sign ? static_cast<std::uint64_t>(sa >> (b.n & 63)) : a.n >> (b.n & 63); v.sign = a.sign; break;
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

void PrintFormat::render_conv(std::size_t i, const EventFormat& ev, std::string_view data, const PrintContext& ctx,
                              std::string& out, std::string& scratch, std::string& starred) const {
  const Conv& c = convs[i];
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
    const Node& arg = nodes[static_cast<std::size_t>(c.arg)];
    if (!v.is_str && arg.op == Op::Field &&
        ev.fields[static_cast<std::size_t>(arg.field)].size == ctx.layout.long_size) {
      // A `const char *` field: the kernel's string at that address, if
      // the file's printk formats hold it, else the address in hex (no
      // 0x), as trace-cmd prints it.
      const std::string* str = ctx.printk ? ctx.printk->find(v.n) : nullptr;
      if (str) out.append(*str);
      else put_hex(out, v.n, "%" PRIx64);
    } else if (!v.is_str) {
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

void PrintFormat::render(const EventFormat& ev, std::string_view data, const PrintContext& ctx, std::string& out) const {
  std::string scratch, starred;
  for (std::size_t i = 0; i < convs.size(); ++i) {
    out.append(convs[i].before);
    render_conv(i, ev, data, ctx, out, scratch, starred);
  }
  out.append(tail);
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

// Field k as trace-cmd's plugins read it: unsigned, not sign-extended (as_plugin_reads).
bool plugin_number(const EventFormat& ev, int k, std::string_view data, const RecordLayout& l, std::uint64_t& v) {
  if (!number(ev, k, data, l, v)) return false;
  v = as_plugin_reads(v, plugin_field(ev, k)->size);
  return true;
}

void put_dec(std::string& out, std::int64_t v) { put_int(out, "", 'd', static_cast<std::uint64_t>(v), true); }

}  // namespace

namespace detail {

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

}  // namespace detail

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
    case Plugin::TlbFlush:
      return {"pages", "reason"};
    case Plugin::SysEnterFutex:
      return {"uaddr", "op", "val", "utime", "uaddr2", "val3"};
    case Plugin::None:
      break;
  }
  return {};
}

namespace {

// trace-cmd's futex plugin for sys_enter_futex: the operation by name (the
// futex ABI's 13 commands), its flags, then the arguments that operation
// uses, each as it prints it ('x': 0x%08llx, 'u': %llu). False (print the
// format instead) for another command.
bool put_futex(const EventFormat& ev, std::string_view data, const RecordLayout& l, std::string& out) {
  struct Cmd {
    const char* name;
    char val, second, uaddr2, val3;  // how each is printed; 0: not
    bool second_is_val2;             // the 4th argument printed as val2=, else utime=
  };
  static constexpr Cmd cmds[] = {
      {"FUTEX_WAIT", 'x', 'x', 0, 0, false},         {"FUTEX_WAKE", 'u', 0, 0, 0, false},
      {"FUTEX_FD", 'u', 0, 0, 0, false},             {"FUTEX_REQUEUE", 'u', 'u', 'x', 0, true},
      {"FUTEX_CMP_REQUEUE", 'u', 'u', 'x', 'x', true}, {"FUTEX_WAKE_OP", 'u', 'u', 'x', 'x', true},
      {"FUTEX_LOCK_PI", 0, 'x', 0, 0, false},        {"FUTEX_UNLOCK_PI", 0, 0, 0, 0, false},
      {"FUTEX_TRYLOCK_PI", 0, 0, 0, 0, false},       {"FUTEX_WAIT_BITSET", 'x', 'x', 0, 'x', false},
      {"FUTEX_WAKE_BITSET", 'u', 0, 0, 'x', false},  {"FUTEX_WAIT_REQUEUE_PI", 'x', 'x', 'x', 'x', false},
      {"FUTEX_CMP_REQUEUE_PI", 'u', 'u', 'x', 'x', true}};
  constexpr std::uint64_t kPrivate = 128, kClockRealtime = 256;
  std::uint64_t a[6];
  for (int k = 0; k < 6; ++k) {
    if (!plugin_number(ev, k, data, l, a[k])) return false;
  }
  const std::uint64_t cmd = a[1] & ~(kPrivate | kClockRealtime);
  if (cmd >= std::size(cmds)) return false;
  const Cmd& c = cmds[cmd];
  auto put = [&](const char* label, char how, std::uint64_t v) {
    if (!how) return;
    out.append(label);
    if (how == 'x') put_hex(out, v, "0x%08" PRIx64);
    else put_u(out, v);
  };
  out.append("op=");
  out.append(c.name);
  if (a[1] & kPrivate) out.append("|FUTEX_PRIVATE_FLAG");
  if (a[1] & kClockRealtime) out.append("|FUTEX_CLOCK_REALTIME");
  put(" uaddr=", 'x', a[0]);
  put(" val=", c.val, a[2]);
  put(c.second_is_val2 ? " val2=" : " utime=", c.second, a[3]);
  put(" uaddr2=", c.uaddr2, a[4]);
  put(" val3=", c.val3, a[5]);
  return true;
}

bool render_plugin(const EventFormat& ev, std::string_view data, const PrintContext& ctx, std::string& out) {
  const RecordLayout& l = ctx.layout;
  auto raw = [&](int k, std::uint64_t& v) { return plugin_number(ev, k, data, l, v); };
  auto task = [&](int comm_field, int pid_field, int prio_field) {
    std::string_view comm;
    std::uint64_t pid = 0, prio = 0;
    if (!text(ev, comm_field, data, l, comm) || !raw(pid_field, pid) || !raw(prio_field, prio)) return false;
    out.append(comm);
    out.push_back(':');
    put_dec(out, static_cast<std::int64_t>(pid));
    out.append(" [");
    if (ev.plugin == Plugin::SchedSwitch) put_dec(out, static_cast<std::int32_t>(prio));
    else put_dec(out, static_cast<std::int64_t>(prio));
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
      if (raw(3, a)) {
        out.append(" success=");
        put_dec(out, static_cast<std::int64_t>(a));
      }
      if (!raw(4, b)) return false;
      out.append(" CPU:");
      put_int(out, "03", 'u', b, false);
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
    case Plugin::TlbFlush: {
      // trace-cmd's tlb plugin: the reason by name for the four the kernel
      // has had since 3.x, then its number.
      if (!raw(0, a) || !raw(1, b)) return false;
      static constexpr const char* reasons[] = {"flush on task switch", "remote shootdown", "local shootdown",
                                                "local mm shootdown"};
      out.append("pages=");
      put_dec(out, static_cast<std::int64_t>(a));
      out.append(" reason=");
      if (b < std::size(reasons)) out.append(reasons[b]);
      out.append(" (");
      put_dec(out, static_cast<std::int64_t>(b));
      out.push_back(')');
      return true;
    }
    case Plugin::SysEnterFutex:
      return put_futex(ev, data, l, out);
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
