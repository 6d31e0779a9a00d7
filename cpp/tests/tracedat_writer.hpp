// tracedat_writer.hpp — a writer of small trace.dat v6 files for the tests
// and the fuzz target: records the real traces never hold (time extends,
// absolute time stamps, padding, long records, lost-event counts), laid out
// as trace-cmd.dat.v6(5) and the kernel's ring-buffer pages describe them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace timerlab::testing {

inline void put(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// One event with a payload of every kind the print fmt interpreter reads.
// Record: common (8 bytes) | u64 value | __data_loc name | s32 delta | name bytes
inline constexpr int kTestEventId = 7;
inline const char* const kTestEventFormat =
    "name: test_event\n"
    "ID: 7\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:unsigned long value;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:__data_loc char[] name;\toffset:16;\tsize:4;\tsigned:0;\n"
    "\tfield:int delta;\toffset:20;\tsize:4;\tsigned:1;\n"
    "\n"
    "print fmt: \"value=%lu name=%s delta=%d flags=%s hex=%#x\", REC->value, __get_str(name), REC->delta, "
    "__print_flags(REC->value & 3, \"|\", { 1, \"A\" }, { 2, \"B\" }), (unsigned int)(REC->value >> 1)\n";

// The 8 bytes every record starts with: common_type, flags, preempt count, pid.
inline std::string common_fields(std::uint16_t id, std::int32_t pid) {
  std::string r;
  put(r, id, 2);
  put(r, 0, 2);
  put(r, static_cast<std::uint32_t>(pid), 4);
  return r;
}

// Events of the text reader's schema, as the kernel describes them (fields
// and print fmt; trace-cmd's sched plugin prints sched_switch its own way),
// and records of them: what the direct decoder (tracedat_decode.hpp) reads.
inline const std::string kCommonFields =
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

inline const std::string kSchedSwitchFormat =
    "name: sched_switch\nID: 20\nformat:\n" + kCommonFields +
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
    "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
    "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
    "print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid\n";

inline const std::string kTimerStartFormat =
    "name: timer_start\nID: 21\nformat:\n" + kCommonFields +
    "\tfield:void * timer;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long expires;\toffset:24;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long now;\toffset:32;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned int flags;\toffset:40;\tsize:4;\tsigned:0;\n"
    "print fmt: \"timer=%p function=%ps expires=%lu [timeout=%ld] cpu=%u idx=%u flags=%s\", REC->timer, "
    "REC->function, REC->expires, (long)REC->expires - REC->now, REC->flags & 0x0003FFFF, REC->flags >> 22, "
    "__print_flags(REC->flags & (0x00040000 | 0x00080000), \"|\", { 0x00040000, \"M\" }, { 0x00080000, \"D\" })\n";

inline const std::string kCpuIdleFormat =
    "name: cpu_idle\nID: 22\nformat:\n" + kCommonFields +
    "\tfield:u64 state;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:u32 cpu_id;\toffset:16;\tsize:4;\tsigned:0;\n"
    "print fmt: \"state=%llu cpu_id=%lu\", REC->state, (unsigned long)REC->cpu_id\n";

inline std::string comm16(const std::string& s) {
  std::string c = s;
  c.resize(16, '\0');
  return c;
}

inline std::string sched_switch_record(const std::string& prev, std::int32_t prio, std::int64_t state, const std::string& next) {
  std::string r = common_fields(20, 7) + comm16(prev);
  put(r, 7, 4);
  put(r, static_cast<std::uint32_t>(prio), 4);
  put(r, static_cast<std::uint64_t>(state), 8);
  r += comm16(next);
  put(r, 8, 4);
  put(r, 120, 4);
  return r;
}

inline std::string timer_start_record(std::uint64_t timer, std::uint64_t fn, std::uint64_t expires, std::uint64_t now,
                        std::uint32_t flags) {
  std::string r = common_fields(21, 8);
  put(r, timer, 8);
  put(r, fn, 8);
  put(r, expires, 8);
  put(r, now, 8);
  put(r, flags, 4);
  put(r, 0, 4);
  return r;
}

inline std::string cpu_idle_record(std::uint64_t state, std::uint32_t cpu) {
  std::string r = common_fields(22, 0);
  put(r, state, 8);
  put(r, cpu, 4);
  put(r, 0, 4);
  return r;
}


inline std::string test_record(std::int32_t pid, std::uint64_t value, const std::string& name, std::int32_t delta) {
  std::string r = common_fields(kTestEventId, pid);
  put(r, value, 8);
  put(r, (static_cast<std::uint64_t>(name.size() + 1) << 16) | 24, 4);
  put(r, static_cast<std::uint32_t>(delta), 4);
  r += name;
  r.push_back('\0');
  while (r.size() % 4) r.push_back('\0');
  return r;
}

// A ring-buffer page: u64 time stamp, u64 commit, then records.
class Page {
 public:
  explicit Page(std::uint64_t ts) : ts_(ts) {}
  Page& event(std::uint32_t delta, const std::string& rec) {
    if (rec.size() <= 28 * 4 && rec.size() % 4 == 0) {
      put(data_, (delta << 5) | static_cast<std::uint32_t>(rec.size() / 4), 4);
    } else {  // type_len 0: the length word counts itself
      put(data_, delta << 5, 4);
      put(data_, rec.size() + 4, 4);
    }
    data_ += rec;
    return *this;
  }
  Page& long_event(std::uint32_t delta, const std::string& rec) {
    put(data_, delta << 5, 4);
    put(data_, rec.size() + 4, 4);
    data_ += rec;
    return *this;
  }
  Page& extend(std::uint64_t delta) {
    put(data_, ((delta & ((1u << 27) - 1)) << 5) | 30, 4);
    put(data_, delta >> 27, 4);
    return *this;
  }
  Page& absolute(std::uint64_t ts) {
    put(data_, ((ts & ((1u << 27) - 1)) << 5) | 31, 4);
    put(data_, (ts >> 27) & 0xffffffff, 4);
    return *this;
  }
  // A discarded record: `bytes` after its 8-byte header. Its length word,
  // as the kernel's, is the size less the 4-byte header (it counts itself).
  Page& padding(std::uint32_t bytes) {
    put(data_, (1u << 5) | 29, 4);
    put(data_, bytes + 4, 4);
    data_.append(bytes, '\0');
    return *this;
  }
  Page& lost(std::uint64_t n) {
    lost_ = n;
    return *this;
  }
  // Events lost before the page, how many not stored (RB_MISSED_EVENTS alone).
  Page& missed() {
    missed_ = true;
    return *this;
  }
  std::string build(std::uint32_t page_size = 4096) const {
    std::string p;
    put(p, ts_, 8);
    std::uint64_t commit = data_.size();
    if (lost_) commit |= (1ull << 31) | (1ull << 30);
    if (missed_) commit |= 1ull << 31;
    put(p, commit, 8);
    p += data_;
    if (lost_) put(p, lost_, 8);
    p.resize(page_size, '\0');
    return p;
  }

 private:
  std::uint64_t ts_;
  std::string data_;
  std::uint64_t lost_ = 0;
  bool missed_ = false;
};

inline const char* const kHeaderPage =
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
    "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
    "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

// A v6 file: one system "test" with the given formats, kallsyms, cmdlines,
// per-CPU data (whole pages) and trace_printk formats.
inline std::string v6_file(const std::vector<std::string>& formats, const std::string& kallsyms,
                           const std::string& cmdlines, const std::vector<std::string>& cpu_data,
                           const std::string& printk = "") {
  std::string f("\x17\x08\x44tracing6", 11);
  f.push_back('\0');
  f.push_back('\0');  // little endian
  f.push_back(8);     // long size
  put(f, 4096, 4);
  f.append("header_page\0", 12);
  put(f, std::string(kHeaderPage).size(), 8);
  f += kHeaderPage;
  f.append("header_event\0", 13);
  put(f, 0, 8);
  put(f, 0, 4);  // ftrace formats
  put(f, 1, 4);  // systems
  f.append("test\0", 5);
  put(f, formats.size(), 4);
  for (const std::string& fmt : formats) {
    put(f, fmt.size(), 8);
    f += fmt;
  }
  put(f, kallsyms.size(), 4);
  f += kallsyms;
  put(f, printk.size(), 4);
  f += printk;
  put(f, cmdlines.size(), 8);
  f += cmdlines;
  put(f, cpu_data.size(), 4);
  f.append("flyrecord\0", 10);
  std::uint64_t at = (f.size() + 16 * cpu_data.size() + 4095) / 4096 * 4096;
  for (const std::string& d : cpu_data) {
    put(f, at, 8);
    put(f, d.size(), 8);
    at += d.size();
  }
  f.resize((f.size() + 4095) / 4096 * 4096, '\0');
  for (const std::string& d : cpu_data) f += d;
  return f;
}

// A v7 file, sections uncompressed ("none"): the formats, kallsyms and
// cmdlines as in v6_file, and one flyrecord buffer per entry of `buffers`
// (instance name, per-CPU data), all described by one options section.
struct V7Buffer {
  std::string name;
  std::vector<std::string> cpu_data;
};

inline std::string v7_file(const std::vector<std::string>& formats, const std::string& kallsyms,
                           const std::string& cmdlines, const std::vector<V7Buffer>& buffers) {
  std::string f("\x17\x08\x44tracing7", 11);
  f.push_back('\0');
  f.push_back('\0');  // little endian
  f.push_back(8);
  put(f, 4096, 4);
  f.append("none\0\0", 6);
  const std::size_t options_at_field = f.size();
  put(f, 0, 8);  // patched below
  auto section = [&](std::uint16_t id, const std::string& body) {
    const std::uint64_t at = f.size();
    put(f, id, 2);
    put(f, 0, 2);
    put(f, 0, 4);
    put(f, body.size(), 8);
    f += body;
    return at;
  };
  std::string body("header_page\0", 12);
  put(body, std::string(kHeaderPage).size(), 8);
  body += kHeaderPage;
  body.append("header_event\0", 13);
  put(body, 0, 8);
  const std::uint64_t header_info = section(16, body);
  body.clear();
  put(body, 0, 4);
  const std::uint64_t ftrace = section(17, body);
  body.clear();
  put(body, 1, 4);
  body.append("test\0", 5);
  put(body, formats.size(), 4);
  for (const std::string& fmt : formats) {
    put(body, fmt.size(), 8);
    body += fmt;
  }
  const std::uint64_t events = section(18, body);
  body.clear();
  put(body, kallsyms.size(), 4);
  body += kallsyms;
  const std::uint64_t syms = section(19, body);
  body.clear();
  put(body, cmdlines.size(), 8);
  body += cmdlines;
  const std::uint64_t comms = section(21, body);
  std::string options;
  auto option = [&](std::uint16_t id, const std::string& data) {
    put(options, id, 2);
    put(options, data.size(), 4);
    options += data;
  };
  auto offset = [](std::uint64_t v) {
    std::string d;
    put(d, v, 8);
    return d;
  };
  option(16, offset(header_info));
  option(17, offset(ftrace));
  option(18, offset(events));
  option(19, offset(syms));
  option(21, offset(comms));
  for (const V7Buffer& b : buffers) {
    std::string data;
    for (const std::string& d : b.cpu_data) data += d;
    const std::uint64_t at = section(3, data);
    std::uint64_t cpu_at = at + 16;
    std::string opt = offset(at) + b.name + std::string(1, '\0') + "local" + std::string(1, '\0');
    put(opt, 4096, 4);
    put(opt, b.cpu_data.size(), 4);
    for (std::size_t i = 0; i < b.cpu_data.size(); ++i) {
      put(opt, i, 4);
      put(opt, cpu_at, 8);
      put(opt, b.cpu_data[i].size(), 8);
      cpu_at += b.cpu_data[i].size();
    }
    option(3, opt);
  }
  option(0, offset(0));  // DONE: no further options section
  const std::uint64_t options_at = section(0, options);
  for (int i = 0; i < 8; ++i) f[options_at_field + static_cast<std::size_t>(i)] = static_cast<char>((options_at >> (8 * i)) & 0xff);
  return f;
}

}  // namespace timerlab::testing
