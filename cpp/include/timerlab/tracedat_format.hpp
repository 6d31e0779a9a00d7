// tracedat_format.hpp — the event formats a trace.dat carries, and printing
// one binary record as `trace-cmd report` prints its payload.
//
// Theory of operation
// -------------------
// Every event in a trace.dat is described by the kernel's own `format` file
// (events/<system>/<event>/format), stored in the file: an ID, the fields
// (type, offset, size, signedness) and a `print fmt:` line, a C printf format
// followed by C expressions over the record (`REC->field`). Nothing about an
// event is built in: parse_event_format() reads that text, and a record is
// decoded by its own format.
//
//   field:unsigned long expires;  offset:16;  size:8;  signed:0;
//   field:__data_loc char[] name; offset:24;  size:4;  signed:0;   (len << 16 | offset)
//   field:char prev_comm[16];     offset:8;   size:16; signed:0;   (NUL-padded)
//   print fmt: "timer=%p expires=%lu [timeout=%ld]", REC->timer, REC->expires,
//              (long)REC->expires - REC->now
//
// The payload text is what the timerlab text reader already parses
// (ftrace.hpp), so a trace.dat gives the same columns as its report text by
// construction (the events of the reader's schema skip the text: their
// values are staged directly, as that text would read, tracedat_decode.hpp): PrintFormat compiles the print fmt once per event into
// literal pieces, conversions and an expression tree, and render() evaluates
// it per record without allocating (strings are views into the record or
// into the format). The conventions are those of trace-cmd report (Debian
// 3.1.x, libtraceevent 1.7), found by comparing outputs, never by copying
// its code:
//
//   conversion        prints
//   %d %u %x %ld ...  the value cut to the length modifier's width (l = the
//                     kernel's long), as C's printf would
//   %p                glibc's %p: 0x<hex>, or (nil) for 0
//   %ps  / %pS %pF    the kallsyms symbol containing the address / with
//                     +0x<offset>; 0x<hex> when no symbol holds it
//   %s                a char array or __data_loc string (up to its NUL), a
//                     literal, or what __print_flags / __print_symbolic give;
//                     of a `const char *` field, the string the file's
//                     trace_printk section holds for it, else its hex
//   __get_bitmask     hex words; __get_cpumask: the CPU list (0-1,6-9)
//
// Where a format leaves C, as trace-cmd reads it: an enum constant the
// kernel left unresolved is 0 in an expression and has no value in a
// __print_flags / __print_symbolic table (a few softirq and hrtimer names
// excepted); `(typedef)x` passes x unchanged; a table may end with
// { 0, NULL }; shift counts are taken modulo 64.
//
// trace-cmd's plugins replace the print fmt of a few events; those are
// reproduced (render_plugin): sched_switch and sched_wakeup[_new]
// (`comm:pid [prio] S ==> comm:pid [prio]`, fields read unsigned),
// hrtimer_start / hrtimer_expire_entry (`function=sym/0x<offset>`),
// tlb_flush and sys_enter_futex.
//
// Simplifications vs. trace-cmd report (tests/test_tracedat_formats.py
// compares every format of a 6.18 file)
//   * A print fmt this interpreter cannot compile (a helper other than
//     __print_flags, __print_symbolic, __get_str, __get_bitmask /
//     __get_cpumask, %p extensions other than s/S/F/f/B, e.g. %pU, %pI)
//     prints `field=value` for each of the event's own fields, where
//     trace-cmd prints its own text: such events keep that text in the
//     `payload` column and read, but not as trace-cmd's text.
//   * Where libtraceevent departs from C, the kernel's C is kept: fields
//     are sign-extended by their type (trace-cmd reads them unsigned, so a
//     negative value no symbol matches prints 0xfff..., a signed compare
//     or division differs), and timer_start's `flags & (M|D|P|I)`.
//   * Only the plugins above; others (kmem, kvm, function, ...) print the
//     kernel's print fmt.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace timerlab {

// A field of an event's format.
struct EventField {
  enum class Kind : std::uint8_t { Number, CharArray, Array, DataLoc, RelLoc };
  std::string name;
  std::string type;
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
  std::uint32_t elements = 0;  // an array's [n]; 0 if none or not a number
  bool is_signed = false;
  Kind kind = Kind::Number;
  bool common = false;  // common_type, common_pid, ...: not part of the payload
};

// How a record's bytes are to be read.
struct RecordLayout {
  bool big_endian = false;
  std::uint32_t long_size = 8;  // the kernel's long: %ld, %lu, %lx
};

// Address -> symbol, from the file's kallsyms section.
class Symbols {
 public:
  // "ffffffff81000000 T name [module]" lines; others are skipped.
  void parse(std::string_view kallsyms);
  // The symbol whose range holds addr, as trace-cmd finds it: the last symbol
  // at or below addr, unless that is the last symbol and not exactly addr.
  // nullptr if none; *start is its address.
  const std::string* find(std::uint64_t addr, std::uint64_t* start) const;
  std::size_t size() const { return addrs_.size(); }

 private:
  std::vector<std::uint64_t> addrs_;
  std::vector<std::string> names_;
};

// Address -> constant string, from the file's trace_printk formats section:
// `0x<addr> : "<text>"` lines, the kernel's tracepoint_string()s and
// trace_printk formats. An event that prints `%s` of such an address (e.g.
// rcu_utilization) shows the string.
class PrintkStrings {
 public:
  void parse(std::string_view section);
  const std::string* find(std::uint64_t addr) const;

 private:
  std::unordered_map<std::uint64_t, std::string> strings_;
};

class PrintFormat;  // compiled print fmt (tracedat_format.cpp)

// trace-cmd's plugins that print an event in their own words.
enum class Plugin : std::uint8_t {
  None, SchedSwitch, SchedWakeup, HrtimerStart, HrtimerExpireEntry, TlbFlush, SysEnterFutex
};

struct EventFormat {
  int id = -1;
  std::string system;
  std::string name;
  std::vector<EventField> fields;
  int pid_field = -1;  // index of common_pid
  std::shared_ptr<const PrintFormat> print;  // null: not compilable, see the fallback above
  std::string print_error;                   // why not
  Plugin plugin = Plugin::None;
  // The fields the plugin prints, in its order (-1: absent), found once.
  std::vector<int> plugin_fields;

  const EventField* field(std::string_view name) const;
};

// Parse the text of one format file. Throws std::invalid_argument naming
// what is wrong (the caller adds the section and the offset).
EventFormat parse_event_format(std::string_view text, std::string_view system, std::uint32_t long_size = 8);

// Context for printing records: the symbol table and the pid -> comm map that
// the sched plugin feeds as trace-cmd's does (names of pids the saved
// cmdlines lack).
struct PrintContext {
  RecordLayout layout;
  const Symbols* symbols = nullptr;
  const PrintkStrings* printk = nullptr;
  // Called with (pid, comm) for each task a sched_switch / sched_wakeup names.
  void (*register_comm)(void* self, std::int32_t pid, std::string_view comm) = nullptr;
  void* self = nullptr;
};

// Append the payload of one record of `ev` to `out`, as trace-cmd report
// prints it. `data` is the record's bytes (starting with common_type).
// Returns false, with `why`, if the record is too short for its format.
bool render_payload(const EventFormat& ev, std::string_view data, const PrintContext& ctx, std::string& out,
                    std::string& why);

// The value of a numeric field (sign-extended if signed). False if the
// record is too short. Inline: the decoder reads a few fields of every
// record, and a field in the machine's own byte order is one load.
inline bool read_field(const EventField& f, std::string_view data, const RecordLayout& layout,
                       std::uint64_t& value) {
  if (f.offset > data.size() || f.size > data.size() - f.offset || f.size > 8 || f.size == 0) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data()) + f.offset;
  std::uint64_t v = 0;
  const bool native = layout.big_endian == (std::endian::native == std::endian::big);
  if (native && f.size == 8) {
    std::memcpy(&v, p, 8);
  } else if (native && f.size == 4) {
    std::uint32_t w;
    std::memcpy(&w, p, 4);
    v = w;
  } else {
    for (std::uint32_t i = 0; i < f.size; ++i) {
      const std::uint32_t k = layout.big_endian ? i : f.size - 1 - i;
      v = (v << 8) | p[k];
    }
  }
  if (f.is_signed && f.size < 8) {
    const std::uint64_t sign = std::uint64_t{1} << (8 * f.size - 1);
    v = (v ^ sign) - sign;
  }
  value = v;
  return true;
}

}  // namespace timerlab
