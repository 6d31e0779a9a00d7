// ftrace.cpp — the ftrace text reader (see ftrace.hpp).
#include "timerlab/ftrace.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <unordered_set>

namespace timerlab {

// ---------------------------------------------------------------------------
// Small text helpers. The text is bytes; nothing here depends on the locale.

namespace {

constexpr std::size_t npos = std::string_view::npos;

constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view ltrim(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  return s.substr(i);
}

std::string_view rtrim(std::string_view s) {
  std::size_t n = s.size();
  while (n > 0 && is_space(s[n - 1])) --n;
  return s.substr(0, n);
}

std::string_view trim(std::string_view s) { return rtrim(ltrim(s)); }

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_digit(c); });
}

// A value quoted for an error message, cut so that a runaway line does not
// make a runaway message.
std::string quoted(std::string_view v) {
  constexpr std::size_t kMax = 40;
  std::string q = "'";
  q.append(v.substr(0, kMax));
  if (v.size() > kMax) q += "...";
  q += '\'';
  return q;
}

enum class Num { Ok, NotNumber, OutOfRange };

template <class T>
Num parse_int(std::string_view s, T& out, int base = 10) {
  if (s.empty()) return Num::NotNumber;
  const char* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, out, base);
  if (ec == std::errc::result_out_of_range) return Num::OutOfRange;
  if (ec != std::errc() || p != end) return Num::NotNumber;
  return Num::Ok;
}

// %0x masks and %p pointers: hex digits, 0x optional (the kernel prints
// none, trace-cmd's printf-based %p prints one).
Num parse_hex(std::string_view s, std::uint64_t& out) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  // from_chars would take a sign; a mask or a pointer has none.
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) return Num::NotNumber;
  return parse_int(s, out, 16);
}

}  // namespace

// ---------------------------------------------------------------------------
// Interner and columns.

namespace {

// A word-at-a-time multiply-xorshift hash: the strings are short (task and
// function names), so eight bytes per step beats a byte loop.
std::uint64_t hash_bytes(std::string_view s) {
  std::uint64_t h = 0x9e3779b97f4a7c15u ^ s.size();
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9u;
    h ^= h >> 31;
  }
  std::uint64_t tail = 0;
  for (std::size_t k = 0; i + k < s.size(); ++k) {
    tail |= std::uint64_t{static_cast<unsigned char>(s[i + k])} << (8 * k);
  }
  h = (h ^ tail) * 0x94d049bb133111ebu;
  return h ^ (h >> 29);
}

}  // namespace

std::int32_t Interner::intern(std::string_view s) {
  if (last_code_ >= 0 && s == last_) return last_code_;
  if (2 * (values_.size() + 1) > slots_.size()) grow();
  const std::uint64_t h = hash_bytes(s);
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = static_cast<std::size_t>(h) & mask;
  while (slots_[i].code >= 0) {
    const Slot& slot = slots_[i];
    if (slot.hash == h && values_[static_cast<std::size_t>(slot.code)] == s) {
      last_ = values_[static_cast<std::size_t>(slot.code)];
      return last_code_ = slot.code;
    }
    i = (i + 1) & mask;
  }
  if (values_.size() >= static_cast<std::size_t>(INT32_MAX)) {
    throw std::length_error("more than 2^31 - 1 distinct strings in one column");
  }
  const std::string& stored = storage_.emplace_back(s);
  const auto code = static_cast<std::int32_t>(values_.size());
  values_.push_back(stored);
  slots_[i] = {h, code};
  last_ = stored;
  return last_code_ = code;
}

void Interner::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max<std::size_t>(16, 2 * old.size()), Slot{});
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.code < 0) continue;
    std::size_t i = static_cast<std::size_t>(slot.hash) & mask;
    while (slots_[i].code >= 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

std::size_t FtraceColumn::size() const {
  switch (storage) {
    case ColumnStorage::Int64:
      return i64.size();
    case ColumnStorage::UInt64:
      return u64.size();
    case ColumnStorage::Category:
      break;
  }
  return codes.size();
}

// ---------------------------------------------------------------------------
// The parser.

FtraceParser::FtraceParser(bool strict, std::size_t max_examples) : strict_(strict), max_examples_(max_examples) {
  const auto& schema = ftrace_schema();
  column_of_field_.resize(schema.size());
  for (std::size_t i = 0; i < schema.size(); ++i) {
    schema_index_.emplace(schema[i].name, static_cast<int>(i));  // views of the static schema
    column_of_field_[i].assign(schema[i].fields.size(), nullptr);
  }
}

std::int32_t FtraceParser::nr_cpus() const {
  if (header_nr_cpus_ >= 0) return header_nr_cpus_;
  return max_cpu_ + 1;
}

void FtraceParser::malformed(std::string reason) {
  if (strict_) {
    failed_ = true;
    error_line_ = line_no_;
    error_reason_ = std::move(reason);
    return;
  }
  ++skipped_lines_;
  if (skipped_examples_.size() < max_examples_) {
    skipped_examples_.push_back("line " + std::to_string(line_no_) + ": " + reason);
  }
}

void FtraceParser::feed(std::string_view chunk) {
  if (failed_) return;
  const std::size_t n = chunk.size();
  std::size_t pos = 0;
  auto carry = [&](std::string_view part) {
    if (carry_overlong_) return;
    if (carry_.size() + part.size() > kMaxLineBytes) {
      carry_overlong_ = true;
      carry_cr_ = carry_.find('\r') != npos || part.find('\r') != npos;
      carry_.clear();
      carry_.shrink_to_fit();
      // Strict: say so now rather than at a newline that may never come
      // (an endless line, e.g. a device read as a file).
      if (strict_) {
        ++line_no_;
        malformed(overlong_reason(carry_cr_));
      }
      return;
    }
    carry_.append(part);
  };
  auto finish_carried_line = [&] {
    if (carry_overlong_) {
      ++line_no_;
      malformed(overlong_reason(carry_cr_));
    } else {
      process_line(carry_);
    }
    carry_.clear();
    carry_overlong_ = carry_cr_ = false;
  };

  if (!carry_.empty() || carry_overlong_) {
    const void* nl = n ? std::memchr(chunk.data(), '\n', n) : nullptr;
    const std::size_t end = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - chunk.data()) : n;
    carry(chunk.substr(0, end));
    if (!nl || failed_) return;
    finish_carried_line();
    pos = end + 1;
  }
  while (pos < n && !failed_) {
    const void* nl = std::memchr(chunk.data() + pos, '\n', n - pos);
    if (!nl) break;
    const auto end = static_cast<std::size_t>(static_cast<const char*>(nl) - chunk.data());
    if (end - pos > kMaxLineBytes) {
      ++line_no_;
      malformed(overlong_reason(chunk.substr(pos, end - pos).find('\r') != npos));
    } else {
      process_line(chunk.substr(pos, end - pos));
    }
    pos = end + 1;
  }
  if (pos < n && !failed_) carry(chunk.substr(pos));
}

void FtraceParser::finish() {
  if (failed_ || (carry_.empty() && !carry_overlong_)) return;
  // Every line the kernel and trace-cmd print ends with a newline: a last
  // event line without one was cut short, and a cut may fall anywhere, even
  // where what is left still parses (expires=42949 of expires=4294937296).
  const std::string_view rest = ltrim(carry_);
  if (!carry_overlong_ && !rest.empty() && rest.front() != '#') {
    ++line_no_;
    malformed("partial last line: no newline at the end of the text (was the file cut short?)");
    carry_.clear();
    return;
  }
  feed("\n");
}

std::string FtraceParser::overlong_reason(bool has_cr) {
  std::string r = "line longer than " + std::to_string(kMaxLineBytes) + " bytes";
  if (has_cr) r += " with carriage returns in it: CR-only line endings? (convert them: tr '\\r' '\\n')";
  return r;
}

// Lines that are not events but are expected in the text. Only consulted
// for lines that failed to frame, so they cost nothing on the hot path.
bool FtraceParser::header_line(std::string_view line) {
  const std::string_view s = trim(line);
  auto after = [&](std::string_view prefix, std::string_view& rest) {
    if (s.substr(0, prefix.size()) != prefix) return false;
    rest = s.substr(prefix.size());
    return true;
  };
  std::string_view rest;
  if (after("cpus=", rest)) {  // trace-cmd report
    std::int32_t n = 0;
    if (parse_int(rest, n) != Num::Ok || n < 0) return false;
    header_nr_cpus_ = n;
    trace_cmd_header_ = true;
    return true;
  }
  if (after("version = ", rest)) {  // trace-cmd report
    if (!all_digits(rest)) return false;
    trace_cmd_header_ = true;
    return true;
  }
  if (after("CPU ", rest)) {                                // trace-cmd: "CPU 3 is empty"
    const std::size_t sp = rest.find(' ');
    return sp != npos && all_digits(rest.substr(0, sp)) && rest.substr(sp) == " is empty";
  }
  if (after("CPU:", rest)) {
    // Ring-buffer markers: tracefs "CPU:3 [LOST 12 EVENTS]"; trace-cmd
    // "CPU:3 [12 EVENTS DROPPED]", "CPU:3 [EVENTS DROPPED]",
    // "CPU:3 [SUBBUFFER START]" (possibly followed by debug details).
    const std::size_t sp = rest.find(" [");
    const std::size_t rb = rest.find(']');
    if (sp == npos || rb == npos || rb < sp || !all_digits(rest.substr(0, sp))) return false;
    const std::string_view what = rest.substr(sp + 2, rb - sp - 2);
    std::int64_t lost = 0;
    if (what.substr(0, 5) == "LOST " && what.size() > 12 && what.substr(what.size() - 7) == " EVENTS") {
      if (parse_int(what.substr(5, what.size() - 12), lost) != Num::Ok) return false;
    } else if (what.size() > 15 && what.substr(what.size() - 15) == " EVENTS DROPPED") {
      if (parse_int(what.substr(0, what.size() - 15), lost) != Num::Ok) return false;
    } else if (what != "EVENTS DROPPED" && what != "SUBBUFFER START") {
      return false;
    }
    if (what == "SUBBUFFER START") return true;
    std::int64_t cpu = 0;
    if (parse_int(rest.substr(0, sp), cpu) != Num::Ok || cpu > INT32_MAX) return false;
    add_loss(static_cast<std::int32_t>(cpu), what == "EVENTS DROPPED" ? -1 : lost);
    return true;
  }
  return false;
}

bool FtraceParser::frame(std::string_view line, Framed& f, std::string& why) const {
  const std::size_t n = line.size();
  std::size_t p = 0;
  while (p < n && is_space(line[p])) ++p;

  // The [cpu] column: the first "[digits]" whose left side is
  // "-pid" + spaces, or "-pid" + spaces + "(tgid)" + spaces.
  // Each candidate costs a scan back over the line; capping their number
  // keeps a hostile line linear. A real comm (16 bytes) holds fewer.
  constexpr std::size_t kMaxCandidates = 32;
  std::size_t rb = npos;
  for (std::size_t search = p, tries = 0; rb == npos; ++tries) {
    const void* hit = search < n && tries < kMaxCandidates ? std::memchr(line.data() + search, '[', n - search)
                                                           : nullptr;
    if (!hit) {
      why = "no 'comm-pid [cpu]' at the start of the line";
      return false;
    }
    const auto lb = static_cast<std::size_t>(static_cast<const char*>(hit) - line.data());
    search = lb + 1;
    std::size_t q = lb + 1;
    while (q < n && is_digit(line[q])) ++q;
    if (q == lb + 1 || q >= n || line[q] != ']') continue;
    std::size_t k = lb;
    while (k > p && is_space(line[k - 1])) --k;
    if (k == lb) continue;
    f.has_tgid = false;
    f.tgid_missing = false;
    f.tgid = 0;
    if (k > p && line[k - 1] == ')') {
      const std::size_t rp = k - 1;
      std::size_t lp = rp;  // one past '('
      while (lp > p && line[lp - 1] != '(') --lp;
      if (lp == p) continue;
      const std::string_view inside = trim(line.substr(lp, rp - lp));
      if (!inside.empty() && inside.find_first_not_of('-') == npos) {
        f.tgid_missing = true;
      } else if (parse_int(inside, f.tgid) != Num::Ok) {
        continue;
      }
      f.has_tgid = true;
      k = lp - 1;
      while (k > p && is_space(line[k - 1])) --k;
    }
    std::size_t d = k;
    while (d > p && is_digit(line[d - 1])) --d;
    if (d == k || d == p || line[d - 1] != '-') continue;
    if (parse_int(line.substr(d, k - d), f.pid) != Num::Ok) continue;
    if (parse_int(line.substr(lb + 1, q - lb - 1), f.cpu) != Num::Ok) {
      why = "cpu " + quoted(line.substr(lb + 1, q - lb - 1)) + " is out of range";
      return false;
    }
    f.task = line.substr(p, d - 1 - p);
    rb = q;
  }

  // [flags] sec.frac: event:
  auto token = [&](std::size_t& i) {
    while (i < n && is_space(line[i])) ++i;
    const std::size_t b = i;
    while (i < n && !is_space(line[i])) ++i;
    return line.substr(b, i - b);
  };
  std::size_t i = rb + 1;
  if (i < n && !is_space(line[i])) {
    why = "no space after '[cpu]'";
    return false;
  }
  std::string_view ts = token(i);
  if (!ts.empty() && ts.back() != ':') {  // that was the flags column
    f.latency_flags = ts;
    ts = token(i);
  }
  if (ts.empty()) {
    why = "no timestamp";
    return false;
  }
  if (ts.back() != ':') {
    why = "timestamp " + quoted(ts) + " is not followed by ':'";
    return false;
  }
  ts.remove_suffix(1);
  const std::size_t dot = ts.find('.');
  if (dot == npos) {
    why = "timestamp " + quoted(ts) + " has no fraction (only sec.usec and sec.nsec are read)";
    return false;
  }
  const std::string_view frac = ts.substr(dot + 1);
  std::uint64_t sec = 0, fr = 0;
  if (parse_int(ts.substr(0, dot), sec) != Num::Ok || frac.empty() || frac.size() > 9 ||
      !all_digits(frac) || parse_int(frac, fr) != Num::Ok) {
    why = "timestamp " + quoted(ts) + " is not sec.frac";
    return false;
  }
  static constexpr std::uint64_t kPow10[] = {1,      10,      100,      1000,      10000,
                                             100000, 1000000, 10000000, 100000000, 1000000000};
  const std::uint64_t frac_ns = fr * kPow10[9 - frac.size()];
  if (sec > static_cast<std::uint64_t>(INT64_MAX) / 1000000000u - 1) {
    why = "timestamp " + quoted(ts) + " is out of range";
    return false;
  }
  f.ts_ns = static_cast<std::int64_t>(sec * 1000000000u + frac_ns);

  while (i < n && is_space(line[i])) ++i;
  const std::size_t eb = i;
  while (i < n && line[i] != ':' && !is_space(line[i])) ++i;
  if (i == eb || i >= n || line[i] != ':' || (i + 1 < n && !is_space(line[i + 1]))) {
    why = "no 'event:' after the timestamp";
    return false;
  }
  f.event = line.substr(eb, i - eb);
  f.payload = trim(line.substr(i + 1));
  return true;
}

namespace {

// A token's value read as its kind: shared by the text (stage) and by the
// binary reader's values it does not decode itself (parse_value).
Num read_value(FieldKind kind, std::string_view value, FtraceParser::Staged& s, const char*& what) {
  s.set = true;
  s.missing = false;
  s.bits = 0;
  s.text = value;
  Num r = Num::Ok;
  what = "is not a number";
  switch (kind) {
    case FieldKind::I64: {
      std::int64_t v = 0;
      r = parse_int(value, v);
      s.bits = std::bit_cast<std::uint64_t>(v);
      break;
    }
    case FieldKind::U64:
      r = parse_int(value, s.bits);
      break;
    case FieldKind::Hex:
      r = parse_hex(value, s.bits);
      what = "is not a hex number";
      break;
    case FieldKind::Ptr:
      // glibc's printf (trace-cmd) prints a NULL %p as (nil), old kernels
      // as (null); early-boot kernels print (____ptrval____) for any %p.
      if (value == "(null)" || value == "(nil)") break;
      if (value == "(____ptrval____)") {
        s.missing = true;
        break;
      }
      r = parse_hex(value, s.bits);
      what = "is not a pointer";
      break;
    case FieldKind::Str:
    case FieldKind::Comm:
      break;
  }
  return r;
}

}  // namespace

bool FtraceParser::parse_value(FieldKind kind, std::string_view text, Staged& s) {
  const char* what = nullptr;
  return read_value(kind, text, s, what) == Num::Ok;
}

bool FtraceParser::stage(const EventSpec& spec, std::size_t idx, std::string_view value, Staging& st,
                         std::string& why) const {
  const FieldSpec& fs = spec.fields[idx];
  const char* what = nullptr;
  const Num r = read_value(fs.kind, value, st[idx], what);
  if (r == Num::Ok) return true;
  why = std::string(spec.name) + ": " + std::string(fs.key) + "=" + quoted(value) + " " +
        (r == Num::OutOfRange ? "is out of range" : what);
  return false;
}

bool FtraceParser::stage_key(const EventSpec& spec, std::string_view key, std::string_view value, Staging& st,
                             std::string& why) const {
  for (std::size_t k = 0; k < spec.fields.size(); ++k) {
    if (spec.fields[k].key == key) return stage(spec, k, value, st, why);
  }
  why = std::string(spec.name) + ": no field " + std::string(key);  // a schema bug, not an input error
  return false;
}

bool FtraceParser::parse_key_value(const EventSpec& spec, std::string_view p, Staging& st, bool& extra,
                                   std::string& why) const {
  const std::size_t n = p.size();
  const std::size_t nf = spec.fields.size();
  std::size_t cursor = 0;  // keys usually come in table order: try that one first
  std::size_t i = 0;
  while (true) {
    while (i < n && is_space(p[i])) ++i;
    if (i >= n) return true;
    std::size_t next = i;
    while (next < n && !is_space(p[next])) ++next;
    std::string_view tok = p.substr(i, next - i);
    i = next;
    if (tok == "==>") continue;  // sched_switch: prev_... ==> next_...
    if (tok.front() == '[') {    // [timeout=1], [action=RCU]
      tok.remove_prefix(1);
      if (!tok.empty() && tok.back() == ']') tok.remove_suffix(1);
    }
    const std::size_t eq = tok.find('=');
    if (eq == npos) {
      why = std::string(spec.name) + ": token " + quoted(tok) + " has no '='";
      return false;
    }
    const std::string_view key = tok.substr(0, eq);
    std::string_view value = tok.substr(eq + 1);
    std::size_t idx = nf;
    if (cursor < nf && spec.fields[cursor].key == key) {
      idx = cursor;
    } else {
      for (std::size_t k = 0; k < nf; ++k) {
        if (spec.fields[k].key == key) {
          idx = k;
          break;
        }
      }
    }
    if (idx == nf || st[idx].set) {
      extra = true;
      continue;
    }
    cursor = idx + 1;
    if (spec.fields[idx].kind == FieldKind::Comm && idx + 1 < nf) {
      // A task name may hold spaces: it runs to " <next key>=".
      const std::string_view next_key = spec.fields[idx + 1].key;
      const auto vstart = static_cast<std::size_t>(value.data() - p.data());
      for (std::size_t at = p.find(next_key, vstart); at != npos; at = p.find(next_key, at + 1)) {
        const std::size_t after = at + next_key.size();
        if (at > vstart - 1 && p[at - 1] == ' ' && after < n && p[after] == '=') {
          value = p.substr(vstart, at - 1 - vstart);
          i = at - 1;
          break;
        }
      }
    } else if (spec.fields[idx].kind == FieldKind::Str) {
      // %ps of module code prints "sym [module]": a bracketed token without
      // '=' belongs to the value before it ([timeout=1] is a key of its own).
      std::size_t j = i;
      while (j < n && is_space(p[j])) ++j;
      std::size_t end = j;
      while (end < n && !is_space(p[end])) ++end;
      const std::string_view look = p.substr(j, end - j);
      if (look.size() > 2 && look.front() == '[' && look.back() == ']' && look.find('=') == npos) {
        const auto vstart = static_cast<std::size_t>(value.data() - p.data());
        value = p.substr(vstart, end - vstart);
        i = end;
      }
    }
    if (!stage(spec, idx, value, st, why)) return false;
  }
}

namespace {

// "comm:pid [prio]" as trace-cmd's sched plugin prints a task. The comm may
// hold ':' and spaces: the pid is after the last ':'.
bool split_plugin_task(std::string_view s, std::string_view& comm, std::string_view& pid, std::string_view& prio) {
  s = rtrim(s);
  if (s.empty() || s.back() != ']') return false;
  const std::size_t lb = s.rfind('[');
  if (lb == npos) return false;
  prio = s.substr(lb + 1, s.size() - lb - 2);
  const std::string_view task = rtrim(s.substr(0, lb));
  const std::size_t colon = task.rfind(':');
  if (colon == npos) return false;
  comm = task.substr(0, colon);
  pid = task.substr(colon + 1);
  return true;
}

}  // namespace

bool FtraceParser::parse_sched_switch_plugin(const EventSpec& spec, std::string_view p, Staging& st,
                                             std::string& why) const {
  const std::size_t arrow = p.find(" ==> ");
  std::string_view prev_comm, prev_pid, prev_prio, next_comm, next_pid, next_prio, state;
  bool ok = arrow != npos;
  if (ok) {
    const std::string_view left = rtrim(p.substr(0, arrow));
    const std::size_t sp = left.rfind(' ');
    ok = sp != npos && split_plugin_task(left.substr(0, sp), prev_comm, prev_pid, prev_prio) &&
         split_plugin_task(p.substr(arrow + 5), next_comm, next_pid, next_prio);
    if (ok) state = left.substr(sp + 1);
  }
  if (!ok) {
    why = "sched_switch: payload " + quoted(p) +
          " is neither 'prev_comm=... ==> next_comm=...' nor 'comm:pid [prio] S ==> comm:pid [prio]'";
    return false;
  }
  return stage_key(spec, "prev_comm", prev_comm, st, why) && stage_key(spec, "prev_pid", prev_pid, st, why) &&
         stage_key(spec, "prev_prio", prev_prio, st, why) && stage_key(spec, "prev_state", state, st, why) &&
         stage_key(spec, "next_comm", next_comm, st, why) && stage_key(spec, "next_pid", next_pid, st, why) &&
         stage_key(spec, "next_prio", next_prio, st, why);
}

bool FtraceParser::parse_sched_wakeup_plugin(const EventSpec& spec, std::string_view p, Staging& st,
                                             bool& extra, std::string& why) const {
  p = rtrim(p);
  // From the right: [CPU:nnn] [success=n] [prio] comm:pid.
  auto last_token = [&](std::string_view s) {
    const std::size_t sp = s.rfind(' ');
    return sp == npos ? s : s.substr(sp + 1);
  };
  std::string_view target_cpu;
  std::string_view tail = last_token(p);
  if (tail.substr(0, 4) == "CPU:") {
    target_cpu = tail.substr(4);
    p = rtrim(p.substr(0, p.size() - tail.size()));
    tail = last_token(p);
  }
  if (tail.substr(0, 8) == "success=") {  // older kernels; kept in the raw payload
    extra = true;
    p = rtrim(p.substr(0, p.size() - tail.size()));
  }
  std::string_view comm, pid, prio;
  if (!split_plugin_task(p, comm, pid, prio)) {
    why = std::string(spec.name) + ": payload " + quoted(p) +
          " is neither 'comm=... pid=... prio=...' nor 'comm:pid [prio] CPU:nnn'";
    return false;
  }
  return stage_key(spec, "comm", comm, st, why) && stage_key(spec, "pid", pid, st, why) &&
         stage_key(spec, "prio", prio, st, why) &&
         (target_cpu.data() == nullptr || stage_key(spec, "target_cpu", target_cpu, st, why));
}

bool FtraceParser::parse_payload(const EventSpec& spec, std::string_view payload, Staging& st, bool& extra,
                                 std::string& why) const {
  bool ok = false;
  switch (spec.shape) {
    case PayloadShape::KeyValue:
      ok = parse_key_value(spec, payload, st, extra, why);
      break;
    case PayloadShape::SchedSwitch:
      ok = payload.substr(0, 10) == "prev_comm=" ? parse_key_value(spec, payload, st, extra, why)
                                                 : parse_sched_switch_plugin(spec, payload, st, why);
      break;
    case PayloadShape::SchedWakeup:
      ok = payload.substr(0, 5) == "comm=" ? parse_key_value(spec, payload, st, extra, why)
                                           : parse_sched_wakeup_plugin(spec, payload, st, extra, why);
      break;
  }
  if (!ok) return false;
  for (std::size_t k = 0; k < spec.fields.size(); ++k) {
    if (!st[k].set && spec.fields[k].presence == Presence::Required) {
      why = std::string(spec.name) + ": no " + std::string(spec.fields[k].key) + "= in the payload (truncated line?)";
      return false;
    }
  }
  return true;
}

void FtraceParser::process_line(std::string_view line) {
  ++line_no_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // A carriage return inside a line: lines ending in CR alone (old Mac
  // text), which would otherwise read as one line, a comment or a payload.
  if (std::memchr(line.data(), '\r', line.size())) {
    malformed("a carriage return inside the line: CR-only line endings? (convert them: tr '\\r' '\\n')");
    return;
  }
  const std::string_view s = ltrim(line);
  if (s.empty()) return;
  if (s.front() == '#') {
    // tracefs header: "# entries-in-buffer/entries-written: 1906/1906   #P:16"
    const std::size_t at = s.find("#P:");
    if (at != npos) {
      std::size_t e = at + 3;
      while (e < s.size() && is_digit(s[e])) ++e;
      std::int32_t n = 0;
      if (parse_int(s.substr(at + 3, e - at - 3), n) == Num::Ok) header_nr_cpus_ = n;
    }
    return;
  }
  Framed f;
  std::string why;
  if (!frame(line, f, why)) {
    if (!header_line(line)) malformed(std::move(why));
    return;
  }
  add_framed(f);
}

void FtraceParser::add_record(std::int64_t record, std::int64_t ts_ns, std::int32_t cpu, std::int32_t pid,
                              std::string_view task, std::string_view event, std::string_view payload) {
  if (failed_) return;
  line_no_ = record;
  // Trimmed as the text reader trims a line's payload: a print fmt that
  // starts or ends with a blank, or ends with a newline (which ends the
  // line in the text), gives the same row either way.
  while (!payload.empty() && (is_space(payload.back()) || payload.back() == '\n')) payload.remove_suffix(1);
  add_framed(binary_framed(ts_ns, cpu, pid, task, event, ltrim(payload)));
}

void FtraceParser::add_staged(std::int64_t record, std::int64_t ts_ns, std::int32_t cpu, std::int32_t pid,
                              std::string_view task, std::string_view event, const Staging& st,
                              std::int32_t& event_code) {
  if (failed_) return;
  line_no_ = record;
  // What add_framed does for a parsed payload, in its order (the CPU check
  // before the event name is interned: the names' order is the categories').
  if (!cpu_in_header(cpu)) return;
  if (event_code < 0) event_code = static_cast<std::int32_t>(event_code_of(event));
  const int spec_idx = spec_of_code_[static_cast<std::size_t>(event_code)];
  if (spec_idx < 0) throw std::logic_error("add_staged: " + std::string(event) + " is not in the schema");
  commit(binary_framed(ts_ns, cpu, pid, task, event, {}), event_code, spec_idx, st, false);
}

FtraceParser::Framed FtraceParser::binary_framed(std::int64_t ts_ns, std::int32_t cpu, std::int32_t pid,
                                                 std::string_view task, std::string_view event,
                                                 std::string_view payload) {
  Framed f;
  f.ts_ns = ts_ns;
  f.cpu = cpu;
  f.pid = pid;
  f.task = task;
  f.event = event;
  f.payload = payload;
  return f;
}

bool FtraceParser::cpu_in_header(std::int32_t cpu) {
  if (header_nr_cpus_ < 0 || cpu < header_nr_cpus_) return true;
  malformed("CPU " + std::to_string(cpu) + " is beyond the header's CPU count (" +
            (trace_cmd_header_ ? "cpus=" : "#P:") + std::to_string(header_nr_cpus_) + ")");
  return false;
}

std::size_t FtraceParser::event_code_of(std::string_view event) {
  const auto code = static_cast<std::size_t>(event_names_.intern(event));
  if (code == spec_of_code_.size()) {
    const auto it = schema_index_.find(event);
    spec_of_code_.push_back(it == schema_index_.end() ? -1 : it->second);
  }
  return code;
}

void FtraceParser::set_binary_header(std::int32_t nr_cpus) {
  header_nr_cpus_ = nr_cpus;
  trace_cmd_header_ = true;
}

void FtraceParser::add_loss(std::int32_t cpu, std::int64_t lost) {
  if (lost > 0 && lost_events_ <= INT64_MAX - lost) lost_events_ += lost;
  ++loss_markers_;
  losses_.push_back(LossMark{rows_taken_ + static_cast<std::int64_t>(ts_ns_.size()), cpu, lost});
}

void FtraceParser::add_framed(const Framed& f) {
  std::string why;
  if (!cpu_in_header(f.cpu)) return;
  const std::size_t code = event_code_of(f.event);
  const int spec_idx = spec_of_code_[code];
  Staging st;
  bool keep_payload = true;  // unknown events keep their text
  if (spec_idx >= 0) {
    bool extra = false;
    if (!parse_payload(ftrace_schema()[static_cast<std::size_t>(spec_idx)], f.payload, st, extra, why)) {
      malformed(std::move(why));
      return;
    }
    keep_payload = extra;
  }
  commit(f, static_cast<std::int32_t>(code), spec_idx, st, keep_payload);
}

FtraceParser::SparseColumn& FtraceParser::new_column(std::string_view name, ColumnStorage storage) {
  SparseColumn& col = columns_.emplace_back();
  col.name = std::string(name);
  col.storage = storage;
  column_by_name_.emplace(col.name, static_cast<int>(columns_.size() - 1));  // col.name is stable in the deque
  return col;
}

FtraceParser::SparseColumn& FtraceParser::first_column_for(int spec_idx, std::size_t field_idx) {
  const FieldSpec& fs = ftrace_schema()[static_cast<std::size_t>(spec_idx)].fields[field_idx];
  const auto it = column_by_name_.find(fs.column);
  if (it == column_by_name_.end()) new_column(fs.column, storage_of(fs.kind));
  SparseColumn* c = &columns_[static_cast<std::size_t>(column_by_name_.at(fs.column))];
  column_of_field_[static_cast<std::size_t>(spec_idx)][field_idx] = c;
  return *c;
}

void FtraceParser::commit(const Framed& f, std::int32_t event_code, int spec_idx, const Staging& st,
                          bool keep_payload) {
  const std::uint64_t row = ts_ns_.size();
  ts_ns_.push_back(f.ts_ns);
  cpu_.push_back(f.cpu);
  pid_.push_back(f.pid);
  line_.push_back(line_no_);
  task_.push_back(task_names_.intern(f.task));
  event_.push_back(event_code);
  max_cpu_ = std::max(max_cpu_, f.cpu);

  if (f.has_tgid) {
    if (tgid_column_ < 0) {
      new_column("tgid", ColumnStorage::Int64);
      tgid_column_ = static_cast<int>(columns_.size() - 1);
    }
    if (!f.tgid_missing) {
      SparseColumn& col = columns_[static_cast<std::size_t>(tgid_column_)];
      col.rows.push_back(row);
      col.values.push_back(std::bit_cast<std::uint64_t>(f.tgid));
    }
  }
  if (!f.latency_flags.empty()) {
    if (latency_flags_column_ < 0) {
      new_column("latency_flags", ColumnStorage::Category);
      latency_flags_column_ = static_cast<int>(columns_.size() - 1);
    }
    SparseColumn& col = columns_[static_cast<std::size_t>(latency_flags_column_)];
    col.rows.push_back(row);
    col.values.push_back(static_cast<std::uint64_t>(col.strings.intern(f.latency_flags)));
  }
  if (spec_idx >= 0) {
    const std::size_t nf = ftrace_schema()[static_cast<std::size_t>(spec_idx)].fields.size();
    for (std::size_t k = 0; k < nf; ++k) {
      const Staged& s = st[k];
      if (!s.set || s.missing) continue;
      SparseColumn& col = column_for(spec_idx, k);
      col.rows.push_back(row);
      col.values.push_back(col.storage == ColumnStorage::Category
                               ? static_cast<std::uint64_t>(col.strings.intern(s.text))
                               : s.bits);
    }
  }
  if (keep_payload) {
    payload_rows_.push_back(static_cast<std::int64_t>(row));
    payload_blob_.append(f.payload);
    payload_ends_.push_back(payload_blob_.size());
  }
}

namespace {

// The dense column of a sparse one: every row, <NA> where it had no value.
// The bytes lay_out takes from the arena for a column of nrows.
std::size_t dense_bytes(ColumnStorage storage, std::size_t nrows) {
  if (storage == ColumnStorage::Category) return ColumnArena::round_up(nrows * sizeof(std::int32_t));
  return ColumnArena::round_up(nrows * sizeof(std::uint64_t)) + ColumnArena::round_up(nrows);
}

FtraceColumn lay_out(std::string name, ColumnStorage storage, const std::vector<std::uint64_t>& rows,
                     const std::vector<std::uint64_t>& values, std::size_t nrows,
                     const std::shared_ptr<ColumnArena>& arena) {
  FtraceColumn c;
  c.name = std::move(name);
  c.storage = storage;
  switch (storage) {
    case ColumnStorage::Int64:
      c.i64 = ColumnVector<std::int64_t>(nrows, 0, ArenaAllocator<std::int64_t>(arena));
      c.missing = ColumnVector<std::uint8_t>(nrows, 1, ArenaAllocator<std::uint8_t>(arena));
      for (std::size_t k = 0; k < rows.size(); ++k) {
        c.i64[rows[k]] = std::bit_cast<std::int64_t>(values[k]);
        c.missing[rows[k]] = 0;
      }
      break;
    case ColumnStorage::UInt64:
      c.u64 = ColumnVector<std::uint64_t>(nrows, 0, ArenaAllocator<std::uint64_t>(arena));
      c.missing = ColumnVector<std::uint8_t>(nrows, 1, ArenaAllocator<std::uint8_t>(arena));
      for (std::size_t k = 0; k < rows.size(); ++k) {
        c.u64[rows[k]] = values[k];
        c.missing[rows[k]] = 0;
      }
      break;
    case ColumnStorage::Category:
      c.codes = ColumnVector<std::int32_t>(nrows, -1, ArenaAllocator<std::int32_t>(arena));
      for (std::size_t k = 0; k < rows.size(); ++k) c.codes[rows[k]] = static_cast<std::int32_t>(values[k]);
      break;
  }
  return c;
}

}  // namespace

FtraceTable FtraceParser::take() {
  FtraceTable t;
  const std::size_t rows = ts_ns_.size();
  t.ts_ns = std::move(ts_ns_);
  t.cpu = std::move(cpu_);
  t.pid = std::move(pid_);
  t.line = std::move(line_);
  t.task = std::move(task_);
  t.event = std::move(event_);
  for (std::size_t i = 0; i < task_names_.size(); ++i) t.task_names.emplace_back(task_names_[i]);

  // Event names of malformed lines only: drop them, renumbering the codes.
  std::vector<std::int32_t> renumber(event_names_.size(), -1);
  for (std::int32_t code : t.event) renumber[static_cast<std::size_t>(code)] = 0;
  for (std::size_t i = 0; i < renumber.size(); ++i) {
    if (renumber[i] < 0) continue;
    renumber[i] = static_cast<std::int32_t>(t.event_names.size());
    t.event_names.emplace_back(event_names_[i]);
  }
  if (t.event_names.size() != event_names_.size()) {
    for (std::int32_t& code : t.event) code = renumber[static_cast<std::size_t>(code)];
  }

  // Columns in a fixed order whatever the file: tgid, latency_flags, then as
  // the schema first names them.
  std::unordered_map<std::string_view, int> rank{{"tgid", -2}, {"latency_flags", -1}};
  for (const EventSpec& e : ftrace_schema()) {
    for (const FieldSpec& fs : e.fields) rank.emplace(fs.column, static_cast<int>(rank.size()));
  }
  std::vector<std::size_t> order(columns_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return rank.at(columns_[a].name) < rank.at(columns_[b].name); });
  std::size_t bytes = 0;
  for (const SparseColumn& sc : columns_) bytes += dense_bytes(sc.storage, rows);
  const auto arena = std::make_shared<ColumnArena>(bytes);
  for (std::size_t i : order) {
    SparseColumn& sc = columns_[i];
    FtraceColumn& c = t.fields.emplace_back(lay_out(std::move(sc.name), sc.storage, sc.rows, sc.values, rows, arena));
    c.strings = std::move(sc.strings);
  }
  t.payload_rows = std::move(payload_rows_);
  t.payload_ends = std::move(payload_ends_);
  t.payload_blob = std::move(payload_blob_);
  t.losses = std::move(losses_);
  rows_taken_ += static_cast<std::int64_t>(rows);

  // Leave an empty parser behind.
  ts_ns_.clear();
  cpu_.clear();
  pid_.clear();
  line_.clear();
  task_.clear();
  event_.clear();
  task_names_ = Interner();
  event_names_ = Interner();
  spec_of_code_.clear();
  columns_.clear();
  tgid_column_ = -1;
  latency_flags_column_ = -1;
  column_by_name_.clear();
  for (auto& v : column_of_field_) std::fill(v.begin(), v.end(), nullptr);
  payload_rows_.clear();
  payload_ends_.clear();
  payload_blob_.clear();
  losses_.clear();
  return t;
}

}  // namespace timerlab
