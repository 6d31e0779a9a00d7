// Tests of the direct decoder (tracedat_decode.hpp): for records whose
// values it takes as they are and for those it must hand back (a task name
// with a space or '=', a negative timeout, a pointer of 0, a function with
// and without a symbol, a number the column refuses), reading a trace.dat
// directly gives the very table that printing and parsing every record
// gives, skipped records and their reasons included.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "timerlab/tracedat.hpp"
#include "tracedat_writer.hpp"

using namespace timerlab;
using namespace timerlab::testing;

namespace {

const std::string kCommon =
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

const std::string kSchedSwitch =
    "name: sched_switch\nID: 20\nformat:\n" + kCommon +
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
    "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
    "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
    "print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid\n";

const std::string kTimerStart =
    "name: timer_start\nID: 21\nformat:\n" + kCommon +
    "\tfield:void * timer;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long expires;\toffset:24;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long now;\toffset:32;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned int flags;\toffset:40;\tsize:4;\tsigned:0;\n"
    "print fmt: \"timer=%p function=%ps expires=%lu [timeout=%ld] cpu=%u idx=%u flags=%s\", REC->timer, "
    "REC->function, REC->expires, (long)REC->expires - REC->now, REC->flags & 0x0003FFFF, REC->flags >> 22, "
    "__print_flags(REC->flags & (0x00040000 | 0x00080000), \"|\", { 0x00040000, \"M\" }, { 0x00080000, \"D\" })\n";

const std::string kCpuIdle =
    "name: cpu_idle\nID: 22\nformat:\n" + kCommon +
    "\tfield:u64 state;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:u32 cpu_id;\toffset:16;\tsize:4;\tsigned:0;\n"
    "print fmt: \"state=%llu cpu_id=%lu\", REC->state, (unsigned long)REC->cpu_id\n";

std::string comm16(const std::string& s) {
  std::string c = s;
  c.resize(16, '\0');
  return c;
}

std::string sched_switch(const std::string& prev, std::int32_t prio, std::int64_t state, const std::string& next) {
  std::string r = common_fields(20, 7) + comm16(prev);
  put(r, 7, 4);
  put(r, static_cast<std::uint32_t>(prio), 4);
  put(r, static_cast<std::uint64_t>(state), 8);
  r += comm16(next);
  put(r, 8, 4);
  put(r, 120, 4);
  return r;
}

std::string timer_start(std::uint64_t timer, std::uint64_t fn, std::uint64_t expires, std::uint64_t now,
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

std::string cpu_idle(std::uint64_t state, std::uint32_t cpu) {
  std::string r = common_fields(22, 0);
  put(r, state, 8);
  put(r, cpu, 4);
  put(r, 0, 4);
  return r;
}

struct Result {
  FtraceTable t;
  std::int64_t skipped = 0;
  std::vector<std::string> examples;
};

Result read(const std::string& file, bool direct) {
  TraceDat dat(file, nullptr);
  FtraceParser p(false);  // lenient: a refused record is skipped, with its reason
  dat.read("", p, direct);
  p.finish();
  return {p.take(), p.skipped_lines(), p.skipped_examples()};
}

void expect_same(const Result& a, const Result& b) {
  EXPECT_EQ(a.skipped, b.skipped);
  EXPECT_EQ(a.examples, b.examples);
  EXPECT_EQ(a.t.ts_ns, b.t.ts_ns);
  EXPECT_EQ(a.t.pid, b.t.pid);
  EXPECT_EQ(a.t.line, b.t.line);
  EXPECT_EQ(a.t.task, b.t.task);
  EXPECT_EQ(a.t.task_names, b.t.task_names);
  EXPECT_EQ(a.t.event, b.t.event);
  EXPECT_EQ(a.t.event_names, b.t.event_names);
  EXPECT_EQ(a.t.payload_rows, b.t.payload_rows);
  EXPECT_EQ(a.t.payload_blob, b.t.payload_blob);
  ASSERT_EQ(a.t.fields.size(), b.t.fields.size());
  for (std::size_t i = 0; i < a.t.fields.size(); ++i) {
    const FtraceColumn& x = a.t.fields[i];
    const FtraceColumn& y = b.t.fields[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.i64, y.i64) << x.name;
    EXPECT_EQ(x.u64, y.u64) << x.name;
    EXPECT_EQ(x.missing, y.missing) << x.name;
    EXPECT_EQ(x.codes, y.codes) << x.name;
    ASSERT_EQ(x.strings.size(), y.strings.size()) << x.name;
    for (std::size_t k = 0; k < x.strings.size(); ++k) EXPECT_EQ(x.strings[k], y.strings[k]) << x.name;
  }
}

TEST(DirectDecoder, GivesTheRowsPrintingAndParsingGive) {
  Page cpu0(1000);
  cpu0.event(0, sched_switch("worker", 120, 1, "next"))
      .event(1, sched_switch("a b", 120, 0, "sh"))       // a space: printed and parsed
      .event(1, sched_switch("x=y", -5, 0x102, "sh"))    // '=': printed and parsed
      .event(1, sched_switch("", 0, 0x80, "p:q[1]"))
      .event(1, timer_start(0xffff888000001000ull, 0xffffffff81000010ull, 100, 90, 0x40000 | 0x80000 | (3u << 22) | 1))
      .event(1, timer_start(0, 0x1234, 90, 100, 0))        // (nil), no symbol, negative timeout
      .event(1, timer_start(1, 0xffffffff81000100ull, ~0ull, 0, 0x80000))
      .event(1, cpu_idle(4294967295ull, 1))
      .event(1, cpu_idle(1ull << 63, 0));                  // out of range for the column: skipped
  const std::string file = v6_file({kSchedSwitch, kTimerStart, kCpuIdle},
                                   "ffffffff81000000 T first\nffffffff81000100 t second\nffffffff81000200 T last\n",
                                   "7 worker\n", {cpu0.build()});
  const Result direct = read(file, true);
  const Result printed = read(file, false);
  EXPECT_EQ(direct.t.ts_ns.size(), 8u);
  EXPECT_EQ(direct.skipped, 1);
  expect_same(direct, printed);
}

}  // namespace
