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
  cpu0.event(0, sched_switch_record("worker", 120, 1, "next"))
      .event(1, sched_switch_record("a b", 120, 0, "sh"))       // a space: printed and parsed
      .event(1, sched_switch_record("x=y", -5, 0x102, "sh"))    // '=': printed and parsed
      .event(1, sched_switch_record("", 0, 0x80, "p:q[1]"))
      .event(1, timer_start_record(0xffff888000001000ull, 0xffffffff81000010ull, 100, 90, 0x40000 | 0x80000 | (3u << 22) | 1))
      .event(1, timer_start_record(0, 0x1234, 90, 100, 0))        // (nil), no symbol, negative timeout
      .event(1, timer_start_record(1, 0xffffffff81000100ull, ~0ull, 0, 0x80000))
      .event(1, cpu_idle_record(4294967295ull, 1))
      .event(1, cpu_idle_record(1ull << 63, 0));                  // out of range for the column: skipped
  const std::string file = v6_file({kSchedSwitchFormat, kTimerStartFormat, kCpuIdleFormat},
                                   "ffffffff81000000 T first\nffffffff81000100 t second\nffffffff81000200 T last\n",
                                   "7 worker\n", {cpu0.build()});
  const Result direct = read(file, true);
  const Result printed = read(file, false);
  EXPECT_EQ(direct.t.ts_ns.size(), 8u);
  EXPECT_EQ(direct.skipped, 1);
  expect_same(direct, printed);
}

}  // namespace
