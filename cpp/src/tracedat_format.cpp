// tracedat_format.cpp — format files, kallsyms, and the record fields (see
// tracedat_format.hpp). The print fmt interpreter is tracedat_print.cpp.
#include <algorithm>
#include <charconv>
#include <cstring>

#include "timerlab/tracedat_format.hpp"
#include "tracedat_print.hpp"

namespace timerlab {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool parse_u32(std::string_view s, std::uint32_t& v) {
  s = trim(s);
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "key:value;" within a field line.
bool attr(std::string_view line, std::string_view key, std::string_view& value) {
  std::size_t at = 0;
  while ((at = line.find(key, at)) != std::string_view::npos) {
    if ((at == 0 || line[at - 1] == '\t' || line[at - 1] == ' ' || line[at - 1] == ';') &&
        line.substr(at + key.size(), 1) == ":") {
      const std::size_t b = at + key.size() + 1;
      const std::size_t e = line.find(';', b);
      if (e == std::string_view::npos) return false;
      value = line.substr(b, e - b);
      return true;
    }
    at += key.size();
  }
  return false;
}

EventField parse_field(std::string_view line) {
  std::string_view decl, off, size, sign;
  if (!attr(line, "field", decl) || !attr(line, "offset", off) || !attr(line, "size", size)) {
    throw std::invalid_argument("field line without field:, offset: or size:");
  }
  EventField f;
  decl = trim(decl);
  if (!parse_u32(off, f.offset) || !parse_u32(size, f.size)) throw std::invalid_argument("bad offset or size");
  if (attr(line, "signed", sign)) f.is_signed = trim(sign) == "1";
  // The name is the last identifier of the declaration, before a trailing
  // [n] (`char comm[16]`; but `__data_loc char[] name` ends with its name).
  std::string_view d = decl;
  const bool array = !d.empty() && d.back() == ']';
  const std::size_t br = array ? d.rfind('[') : std::string_view::npos;
  std::string_view before = array ? trim(d.substr(0, br)) : d;
  std::size_t e = before.size();
  std::size_t b = e;
  while (b > 0 && (std::isalnum(static_cast<unsigned char>(before[b - 1])) || before[b - 1] == '_')) --b;
  if (b == e) throw std::invalid_argument("no field name in '" + std::string(decl) + "'");
  f.name = std::string(before.substr(b, e - b));
  // [n] of an array; a name ([TASK_COMM_LEN]) or an expression leaves it unknown.
  if (std::uint32_t n = 0; array && parse_u32(d.substr(br + 1, d.size() - br - 2), n)) f.elements = n;
  f.type = std::string(trim(before.substr(0, b)));
  f.common = f.name.rfind("common_", 0) == 0;
  if (f.type.rfind("__data_loc", 0) == 0) {
    f.kind = EventField::Kind::DataLoc;
  } else if (f.type.rfind("__rel_loc", 0) == 0) {
    f.kind = EventField::Kind::RelLoc;
  } else if (array) {
    const bool chars = f.type == "char" || f.type == "const char" || f.type == "unsigned char";
    f.kind = chars ? EventField::Kind::CharArray : EventField::Kind::Array;
  }
  // A struct member (ftrace's own formats have some): opaque bytes.
  if (f.kind == EventField::Kind::Number && f.size != 1 && f.size != 2 && f.size != 4 && f.size != 8) {
    f.kind = EventField::Kind::Array;
  }
  if ((f.kind == EventField::Kind::DataLoc || f.kind == EventField::Kind::RelLoc) && f.size != 4) {
    throw std::invalid_argument("dynamic field " + f.name + " has size " + std::to_string(f.size));
  }
  return f;
}

Plugin plugin_of(std::string_view name) {
  if (name == "sched_switch") return Plugin::SchedSwitch;
  if (name == "sched_wakeup" || name == "sched_wakeup_new") return Plugin::SchedWakeup;
  if (name == "hrtimer_start") return Plugin::HrtimerStart;
  if (name == "hrtimer_expire_entry") return Plugin::HrtimerExpireEntry;
  if (name == "tlb_flush") return Plugin::TlbFlush;
  if (name == "sys_enter_futex") return Plugin::SysEnterFutex;
  return Plugin::None;
}

}  // namespace

const EventField* EventFormat::field(std::string_view n) const {
  for (const EventField& f : fields) {
    if (f.name == n) return &f;
  }
  return nullptr;
}

EventFormat parse_event_format(std::string_view text, std::string_view system, std::uint32_t long_size) {
  EventFormat ev;
  ev.system = std::string(system);
  bool have_id = false;
  std::size_t pos = 0;
  std::string_view print;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    const std::string_view t = trim(line);
    pos = nl + 1;
    if (t.rfind("name:", 0) == 0) {
      ev.name = std::string(trim(t.substr(5)));
    } else if (t.rfind("ID:", 0) == 0) {
      std::uint32_t id = 0;
      if (!parse_u32(t.substr(3), id) || id > 0xffff) throw std::invalid_argument("bad ID line");
      ev.id = static_cast<int>(id);
      have_id = true;
    } else if (t.rfind("field:", 0) == 0) {
      ev.fields.push_back(parse_field(t));
    } else if (t.rfind("print fmt:", 0) == 0) {
      // The print fmt is the rest of the file (it never spans lines today,
      // but nothing after it is read anyway).
      print = trim(text.substr(static_cast<std::size_t>(t.data() - text.data()) + 10));
      break;
    }
  }
  if (ev.name.empty()) throw std::invalid_argument("format without a name: line");
  if (!have_id) throw std::invalid_argument("format of " + ev.name + " without an ID: line");
  for (std::size_t i = 0; i < ev.fields.size(); ++i) {
    if (ev.fields[i].name == "common_pid") ev.pid_field = static_cast<int>(i);
  }
  if (ev.pid_field < 0 || ev.fields[static_cast<std::size_t>(ev.pid_field)].kind != EventField::Kind::Number) {
    throw std::invalid_argument("format of " + ev.name + " without a numeric common_pid field");
  }
  while (!print.empty() && (print.back() == '\n' || print.back() == '\0')) print.remove_suffix(1);
  ev.plugin = plugin_of(ev.name);
  for (std::string_view name : plugin_field_names(ev.plugin)) {
    const EventField* f = ev.field(name);
    ev.plugin_fields.push_back(f ? static_cast<int>(f - ev.fields.data()) : -1);
  }
  ev.print = compile_print_format(print, ev, long_size, ev.print_error);
  return ev;
}

namespace {

// Each line of a text section, without its newline.
template <class Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    fn(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

}  // namespace

void PrintkStrings::parse(std::string_view text) {
  // As trace-cmd reads the section: the address in hex before the first
  // ':', the text after ": ", without its quotes and a trailing literal \n.
  for_each_line(text, [&](std::string_view line) {
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon + 1 >= line.size()) return;
    std::string_view addr_text = line.substr(0, colon);
    if (addr_text.substr(0, 2) == "0x" || addr_text.substr(0, 2) == "0X") addr_text.remove_prefix(2);
    std::uint64_t addr = 0;
    const auto r = std::from_chars(addr_text.data(), addr_text.data() + addr_text.size(), addr, 16);
    if (r.ptr == addr_text.data()) return;
    std::string_view str = line.substr(colon + 2 <= line.size() ? colon + 2 : line.size());
    if (!str.empty() && str.front() == '"') str.remove_prefix(1);
    if (!str.empty() && str.back() == '"') {
      str.remove_suffix(1);
      if (str.size() >= 2 && str.substr(str.size() - 2) == "\\n") str.remove_suffix(2);
    }
    strings_[addr] = std::string(str);
  });
}

const std::string* PrintkStrings::find(std::uint64_t addr) const {
  const auto it = strings_.find(addr);
  return it == strings_.end() ? nullptr : &it->second;
}

void Symbols::parse(std::string_view text) {
  std::vector<std::pair<std::uint64_t, std::string>> syms;
  for_each_line(text, [&](std::string_view line) {
    const std::size_t s1 = line.find(' ');
    if (s1 == std::string_view::npos) return;
    const std::size_t s2 = line.find(' ', s1 + 1);
    if (s2 == std::string_view::npos) return;
    std::uint64_t addr = 0;
    const auto r = std::from_chars(line.data(), line.data() + s1, addr, 16);
    if (r.ec != std::errc() || r.ptr != line.data() + s1) return;
    std::string_view name = line.substr(s2 + 1);
    const std::size_t tab = name.find_first_of("\t ");
    if (tab != std::string_view::npos) name = name.substr(0, tab);
    if (name.empty()) return;
    syms.emplace_back(addr, std::string(name));
  });
  std::stable_sort(syms.begin(), syms.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  addrs_.clear();
  names_.clear();
  for (auto& [a, n] : syms) {
    addrs_.push_back(a);
    names_.push_back(std::move(n));
  }
}

const std::string* Symbols::find(std::uint64_t addr, std::uint64_t* start) const {
  auto it = std::upper_bound(addrs_.begin(), addrs_.end(), addr);
  if (it == addrs_.begin()) return nullptr;
  --it;
  const auto i = static_cast<std::size_t>(it - addrs_.begin());
  // The last symbol has no end: trace-cmd takes only its exact address.
  if (i + 1 == addrs_.size() && *it != addr) return nullptr;
  *start = *it;
  return &names_[i];
}

}  // namespace timerlab
