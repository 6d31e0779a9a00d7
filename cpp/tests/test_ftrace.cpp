// Tests of the ftrace text reader (ftrace.hpp): line framing of tracefs and
// trace-cmd report text, the payload kinds of the schema, errors with their
// line numbers, and chunk boundaries anywhere in the text. Lines are taken
// from the real traces in tests/data/traces (tracefs, Linux 6.12 and 6.18)
// and rewritten the way trace-cmd report prints them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "timerlab/ftrace.hpp"

using namespace timerlab;

namespace {

FtraceTable parse(std::string_view text, bool strict = true, FtraceParser* out = nullptr) {
  FtraceParser local(strict);
  FtraceParser& p = out ? *out : local;
  p.feed(text);
  p.finish();
  return p.take();
}

const FtraceColumn* column(const FtraceTable& t, std::string_view name) {
  for (const FtraceColumn& c : t.fields) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// Whether `row` of a column is <NA> (a column that never occurred is all <NA>).
bool is_na(const FtraceTable& t, std::string_view name, std::size_t row) {
  const FtraceColumn* c = column(t, name);
  if (!c) return true;
  if (c->storage == ColumnStorage::Category) return c->codes.at(row) < 0;
  return c->missing.at(row) != 0;
}

std::uint64_t u64(const FtraceTable& t, std::string_view name, std::size_t row) {
  const FtraceColumn* c = column(t, name);
  EXPECT_NE(c, nullptr) << name;
  if (!c) return 0;
  EXPECT_EQ(c->storage, ColumnStorage::UInt64) << name;
  EXPECT_EQ(c->missing.at(row), 0) << name << " row " << row;
  return c->u64.at(row);
}

std::int64_t i64(const FtraceTable& t, std::string_view name, std::size_t row) {
  const FtraceColumn* c = column(t, name);
  EXPECT_NE(c, nullptr) << name;
  if (!c) return 0;
  EXPECT_EQ(c->storage, ColumnStorage::Int64) << name;
  EXPECT_EQ(c->missing.at(row), 0) << name << " row " << row;
  return c->i64.at(row);
}

std::string str(const FtraceTable& t, std::string_view name, std::size_t row) {
  const FtraceColumn* c = column(t, name);
  EXPECT_NE(c, nullptr) << name;
  if (!c) return "";
  EXPECT_EQ(c->storage, ColumnStorage::Category) << name;
  const std::int32_t code = c->codes.at(row);
  EXPECT_GE(code, 0) << name << " row " << row;
  return code < 0 ? "<NA>" : std::string(c->strings[static_cast<std::size_t>(code)]);
}

std::string task(const FtraceTable& t, std::size_t row) { return t.task_names.at(static_cast<std::size_t>(t.task.at(row))); }
std::string event(const FtraceTable& t, std::size_t row) {
  return t.event_names.at(static_cast<std::size_t>(t.event.at(row)));
}

std::string payload(const FtraceTable& t, std::size_t row) {
  for (std::size_t i = 0; i < t.payload_rows.size(); ++i) {
    if (t.payload_rows[i] == static_cast<std::int64_t>(row)) {
      const std::size_t begin = i ? t.payload_ends[i - 1] : 0;
      return t.payload_blob.substr(begin, t.payload_ends[i] - begin);
    }
  }
  return "<None>";
}

// Real lines (tracefs, 5-character flags column).
const char* const kTimerStart =
    "           rcu_preempt-18      [006] d..1.    14.468597: timer_start: timer=000000007b946db6 "
    "function=process_timeout expires=4294893984 [timeout=1] bucket_expiry=4294893985 cpu=6 idx=33 flags=";
const char* const kSchedSwitch =
    "          <idle>-0       [006] d..2.    14.468537: sched_switch: prev_comm=swapper/6 prev_pid=0 "
    "prev_prio=120 prev_state=R ==> next_comm=rcu_preempt next_pid=18 next_prio=120";
const char* const kUpdateEvents =
    "          <idle>-0       [000] d..5.    11.705448: tmigr_update_events: child=0000000000000000 "
    "group=00000000440bb8d7 group_lvl=0 child_active=0 group_active=ee nextevt=4296000000 "
    "next_expiry=4296000000 child_evt_expiry=0 child_evtcpu=0";

std::string lines(std::initializer_list<std::string_view> ls) {
  std::string s;
  for (std::string_view l : ls) {
    s.append(l);
    s += '\n';
  }
  return s;
}

// ---------------------------------------------------------------------------

TEST(FtraceSchema, BuildsAndIsConsistent) {
  const auto& schema = ftrace_schema();  // throws std::logic_error if inconsistent
  EXPECT_GE(schema.size(), 40u);
  for (const EventSpec& e : schema) {
    for (const FieldSpec& f : e.fields) {
      EXPECT_NE(f.column, "cpu") << e.name;  // the line's column
      EXPECT_NE(f.column, "pid") << e.name;
      if (f.key == "cpu") {
        EXPECT_TRUE(f.column == "base_cpu" || f.column == "cpu_id" || f.column == "target_cpu") << e.name;
      }
    }
  }
}

TEST(FtraceFraming, TracefsWithFlags) {
  const FtraceTable t = parse(lines({kTimerStart}));
  ASSERT_EQ(t.ts_ns.size(), 1u);
  EXPECT_EQ(t.ts_ns[0], 14'468'597'000);
  EXPECT_EQ(t.cpu[0], 6);
  EXPECT_EQ(t.pid[0], 18);
  EXPECT_EQ(t.line[0], 1);
  EXPECT_EQ(task(t, 0), "rcu_preempt");
  EXPECT_EQ(event(t, 0), "timer_start");
  EXPECT_EQ(u64(t, "timer", 0), 0x7b946db6u);
  EXPECT_EQ(str(t, "function", 0), "process_timeout");
  EXPECT_EQ(u64(t, "expires_jiffies", 0), 4294893984u);
  EXPECT_EQ(i64(t, "timeout_jiffies", 0), 1);
  EXPECT_EQ(u64(t, "bucket_expiry_jiffies", 0), 4294893985u);
  EXPECT_EQ(i64(t, "base_cpu", 0), 6);
  EXPECT_EQ(i64(t, "idx", 0), 33);
  EXPECT_EQ(str(t, "flags", 0), "");  // no flags: empty, not missing
  EXPECT_TRUE(t.payload_rows.empty());
}

TEST(FtraceFraming, TracefsWithoutFlagsColumn) {
  const FtraceTable t = parse(lines({"          <idle>-0       [010]    14.468101: cpu_idle: state=4294967295 cpu_id=10",
                                     "  kworker/7:1-77 [007] 1.000000: timer_cancel: timer=00000000ffffffff"}));
  ASSERT_EQ(t.ts_ns.size(), 2u);
  EXPECT_EQ(t.ts_ns[0], 14'468'101'000);
  EXPECT_EQ(task(t, 0), "<idle>");
  EXPECT_EQ(i64(t, "state", 0), 4294967295);
  EXPECT_EQ(i64(t, "cpu_id", 0), 10);
  EXPECT_EQ(task(t, 1), "kworker/7:1");
  EXPECT_EQ(t.pid[1], 77);
  EXPECT_TRUE(is_na(t, "state", 1));
}

TEST(FtraceFraming, TgidColumn) {
  const FtraceTable t = parse(lines({
      "            task-6770  (   6760) [000] d..2.   266.043228: ipi_send_cpu: cpu=1 callsite=update_curr+0x83/0x160 "
      "callback=0x0",
      "          <idle>-0       (-------) [001] d..2.   266.043283: hrtimer_cancel: hrtimer=00000000bfab805a",
  }));
  ASSERT_EQ(t.ts_ns.size(), 2u);
  EXPECT_EQ(task(t, 0), "task");
  EXPECT_EQ(t.pid[0], 6770);
  EXPECT_EQ(i64(t, "tgid", 0), 6760);
  EXPECT_TRUE(is_na(t, "tgid", 1));
  EXPECT_EQ(t.fields.front().name, "tgid");
  EXPECT_EQ(i64(t, "target_cpu", 0), 1);
  EXPECT_EQ(str(t, "callsite", 0), "update_curr+0x83/0x160");
  EXPECT_EQ(str(t, "callback", 0), "0x0");
}

TEST(FtraceFraming, CommWithSpacesDashesAndBrackets) {
  const FtraceTable t = parse(lines({
      "   my task-with-dash-1234    [001] .....     1.000001: timer_init: timer=0000000000000001",
      "foo [1]-5 [002] d.... 2.5: timer_init: timer=2",
      "-7 [003] 3.000000001: timer_init: timer=3",
  }));
  ASSERT_EQ(t.ts_ns.size(), 3u);
  EXPECT_EQ(task(t, 0), "my task-with-dash");
  EXPECT_EQ(t.pid[0], 1234);
  EXPECT_EQ(t.cpu[0], 1);
  EXPECT_EQ(task(t, 1), "foo [1]");
  EXPECT_EQ(t.pid[1], 5);
  EXPECT_EQ(t.cpu[1], 2);
  EXPECT_EQ(t.ts_ns[1], 2'500'000'000);  // fractions of any length up to 9 digits
  EXPECT_EQ(task(t, 2), "");
  EXPECT_EQ(t.ts_ns[2], 3'000'000'001);
}

TEST(FtraceFraming, TraceCmdReport) {
  // trace-cmd report: header lines, no flags column, the event name padded
  // to 20 columns, 0x pointers, ns timestamps with -t, and its sched plugin.
  const std::string text = lines({
      "version = 6",
      "CPU 3 is empty",
      "cpus=16",
      "     rcu_preempt-18    [006]    14.468597123: timer_start:          timer=0xffff888003a1b2c8 "
      "function=process_timeout expires=4294893984 [timeout=1] bucket_expiry=4294893985 cpu=6 idx=33 flags=D|P|I",
      "          <idle>-0     [006]    14.468537000: sched_switch:         swapper/6:0 [120] R ==> my task:18 [120]",
      "          <idle>-0     [006]    14.468537001: sched_switch:         a:b:1 [120] S|D ==> rcu_preempt:18 [98]",
      "          <idle>-0     [006]    14.468487000: sched_wakeup:         rcu_preempt:18 [120] CPU:006",
      "          <idle>-0     [006]    14.468487001: sched_wakeup:         kworker/0:1:9 [120] success=1 CPU:000",
      "          <idle>-0     [010]    14.468050000: hrtimer_expire_entry: hrtimer=0xffff88807dd1e8a0 now=7012148877",
      "          <idle>-0     [010]    14.468073000: hrtimer_start:        hrtimer=0xffff88807dd1e8a0 "
      "function=tick_nohz_handler expires=7016000000 softexpires=7016000000",
      "          <idle>-0     [010]    14.468074000: tmigr_group_set_cpu_active: group=0xffff888004d1c000 lvl=0 "
      "numa=0 active=c0 migrator=80 parent=(nil) childmask=40",
  });
  FtraceParser p;
  const FtraceTable t = parse(text, true, &p);
  ASSERT_EQ(p.error_line(), 0) << p.error_reason();
  ASSERT_EQ(t.ts_ns.size(), 8u);
  EXPECT_EQ(p.nr_cpus(), 16);
  EXPECT_EQ(t.line[0], 4);
  EXPECT_EQ(t.ts_ns[0], 14'468'597'123);
  EXPECT_EQ(u64(t, "timer", 0), 0xffff888003a1b2c8u);
  EXPECT_EQ(str(t, "flags", 0), "D|P|I");

  EXPECT_EQ(str(t, "prev_comm", 1), "swapper/6");
  EXPECT_EQ(i64(t, "prev_pid", 1), 0);
  EXPECT_EQ(i64(t, "prev_prio", 1), 120);
  EXPECT_EQ(str(t, "prev_state", 1), "R");
  EXPECT_EQ(str(t, "next_comm", 1), "my task");
  EXPECT_EQ(i64(t, "next_pid", 1), 18);
  EXPECT_EQ(str(t, "prev_comm", 2), "a:b");
  EXPECT_EQ(i64(t, "prev_pid", 2), 1);
  EXPECT_EQ(str(t, "prev_state", 2), "S|D");
  EXPECT_EQ(i64(t, "next_prio", 2), 98);
  EXPECT_EQ(payload(t, 1), "<None>");

  EXPECT_EQ(str(t, "wakee_comm", 3), "rcu_preempt");
  EXPECT_EQ(i64(t, "wakee_pid", 3), 18);
  EXPECT_EQ(i64(t, "wakee_prio", 3), 120);
  EXPECT_EQ(i64(t, "target_cpu", 3), 6);
  EXPECT_EQ(str(t, "wakee_comm", 4), "kworker/0:1");
  EXPECT_EQ(payload(t, 4), "kworker/0:1:9 [120] success=1 CPU:000");  // success= is not in the schema

  // trace-cmd's hrtimer plugin leaves out function and mode.
  EXPECT_EQ(u64(t, "now_ns", 5), 7012148877u);
  EXPECT_TRUE(is_na(t, "function", 5));
  EXPECT_EQ(u64(t, "expires_ns", 6), 7016000000u);
  EXPECT_TRUE(is_na(t, "mode", 6));
  EXPECT_EQ(u64(t, "parent", 7), 0u);  // glibc prints a NULL %p as (nil)
  EXPECT_EQ(u64(t, "active", 7), 0xc0u);
}

TEST(FtraceFields, KindsAndExtremes) {
  const FtraceTable t = parse(lines({
      kUpdateEvents,
      "          <idle>-0       [000] d..4.    11.705446: tmigr_cpu_idle: cpu=4 parent=00000000440bb8d7 "
      "nextevt=9223372036854775807 wakeup=18446744073709551615",
      "            task-1       [000] .....     1.046166: tmigr_connect_child_parent: group=00000000ac40fac7 "
      "groupmask=2 parent=000000007cc94409 lvl=1 numa=-1 num_children=2",
      "            task-1       [000] .....     1.046167: timer_start: timer=1 function=f expires=5 "
      "[timeout=-3] cpu=0 idx=0 flags=D",
  }));
  ASSERT_EQ(t.ts_ns.size(), 4u);
  EXPECT_EQ(u64(t, "child", 0), 0u);
  EXPECT_EQ(u64(t, "group", 0), 0x440bb8d7u);
  EXPECT_EQ(u64(t, "group_active", 0), 0xeeu);
  EXPECT_EQ(u64(t, "nextevt_ns", 0), 4296000000u);
  EXPECT_EQ(i64(t, "child_evtcpu", 0), 0);
  EXPECT_EQ(u64(t, "nextevt_ns", 1), 9223372036854775807u);
  EXPECT_EQ(u64(t, "wakeup_ns", 1), 18446744073709551615u);
  EXPECT_EQ(i64(t, "cpu_id", 1), 4);
  EXPECT_EQ(i64(t, "numa", 2), -1);
  EXPECT_EQ(u64(t, "groupmask", 2), 2u);
  EXPECT_TRUE(is_na(t, "capacity", 2));  // not printed by 6.12
  EXPECT_EQ(i64(t, "timeout_jiffies", 3), -3);
  EXPECT_TRUE(is_na(t, "bucket_expiry_jiffies", 3));  // kernels before 6.8
  EXPECT_EQ(str(t, "flags", 3), "D");
  // Rows of other events are missing in a column.
  EXPECT_TRUE(is_na(t, "group_active", 3));
  EXPECT_TRUE(is_na(t, "function", 0));
}

TEST(FtraceFields, SchedSwitchCommsWithSpaces) {
  const FtraceTable t = parse(lines({
      kSchedSwitch,
      "  Web Content-4905 [000] d..2. 204.005729: sched_switch: prev_comm=Web Content prev_pid=4905 prev_prio=120 "
      "prev_state=S ==> next_comm=a b  c next_pid=1 next_prio=120",
      "  x-1 [000] d..2. 204.005730: sched_wakeup: comm=my prev_pid=2 pid=7 prio=100 target_cpu=001",
      "  x-1 [000] d..2. 204.005731: sched_switch: prev_comm= prev_pid=0 prev_prio=120 prev_state=R+ ==> "
      "next_comm= next_pid=0 next_prio=120",
  }));
  ASSERT_EQ(t.ts_ns.size(), 4u);
  EXPECT_EQ(str(t, "prev_comm", 0), "swapper/6");
  EXPECT_EQ(str(t, "next_comm", 0), "rcu_preempt");
  EXPECT_EQ(i64(t, "next_pid", 0), 18);
  EXPECT_EQ(task(t, 1), "Web Content");
  EXPECT_EQ(str(t, "prev_comm", 1), "Web Content");
  EXPECT_EQ(str(t, "prev_state", 1), "S");
  EXPECT_EQ(str(t, "next_comm", 1), "a b  c");
  EXPECT_EQ(str(t, "wakee_comm", 2), "my prev_pid=2");
  EXPECT_EQ(i64(t, "wakee_pid", 2), 7);
  EXPECT_EQ(i64(t, "target_cpu", 2), 1);
  EXPECT_EQ(str(t, "prev_comm", 3), "");
  EXPECT_EQ(str(t, "prev_state", 3), "R+");
  EXPECT_EQ(str(t, "next_comm", 3), "");
}

TEST(FtraceFields, UnknownEventsAndKeysKeepTheirPayload) {
  const FtraceTable t = parse(lines({
      "  x-1 [000] d..2. 1.000000: softirq_entry: vec=9 [action=RCU]",
      "  x-1 [000] d..2. 1.000001: irq_handler_entry: irq=11 name=virtio0",
      "  x-1 [000] d..2. 1.000002: timer_cancel: timer=0000000000000010 newkey=5",
      "  x-1 [000] d..2. 1.000003: bputs:",
  }));
  ASSERT_EQ(t.ts_ns.size(), 4u);
  EXPECT_EQ(i64(t, "vec", 0), 9);
  EXPECT_EQ(str(t, "action", 0), "RCU");
  EXPECT_EQ(payload(t, 0), "<None>");
  EXPECT_EQ(event(t, 1), "irq_handler_entry");
  EXPECT_EQ(payload(t, 1), "irq=11 name=virtio0");
  EXPECT_EQ(u64(t, "timer", 2), 16u);
  EXPECT_EQ(payload(t, 2), "timer=0000000000000010 newkey=5");
  EXPECT_EQ(payload(t, 3), "");
}

TEST(FtraceHeader, CpusAndLostEvents) {
  FtraceParser p;
  const FtraceTable lossy = parse(lines({"# tracer: nop", "#", "# entries-in-buffer/entries-written: 1906/1906   #P:16", "",
               "CPU:3 [LOST 12 EVENTS]", kTimerStart, "CPU:1 [7 EVENTS DROPPED]", "CPU:2 [EVENTS DROPPED]",
               "  ##### CPU 2 buffer started ####", kTimerStart}),
        true, &p);
  EXPECT_EQ(p.error_line(), 0) << p.error_reason();
  EXPECT_EQ(p.nr_cpus(), 16);
  EXPECT_EQ(p.lost_events(), 19);
  EXPECT_EQ(p.loss_markers(), 3);  // the buffer-started line is no loss
  EXPECT_EQ(p.lines(), 10);
  // Where: before row 0 on CPU 3, before row 1 on CPUs 1 and 2 (that one of unknown size).
  const std::vector<LossMark>& at = lossy.losses;
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(std::make_tuple(at[0].row, at[0].cpu, at[0].lost), std::make_tuple(0, 3, 12));
  EXPECT_EQ(std::make_tuple(at[1].row, at[1].cpu, at[1].lost), std::make_tuple(1, 1, 7));
  EXPECT_EQ(std::make_tuple(at[2].row, at[2].cpu, at[2].lost), std::make_tuple(1, 2, -1));
  EXPECT_TRUE(p.losses().empty());  // handed over
  // Rows count on over every take() (a store's row groups).
  FtraceParser s;
  s.feed(lines({kTimerStart, kTimerStart}));
  EXPECT_TRUE(s.take().losses.empty());
  s.feed(lines({"CPU:5 [LOST 1 EVENTS]", kTimerStart}));
  s.finish();
  const FtraceTable later = s.take();
  ASSERT_EQ(later.losses.size(), 1u);
  EXPECT_EQ(later.losses[0].row, 2);

  FtraceParser q;
  const FtraceTable t = parse(lines({kTimerStart}), true, &q);
  EXPECT_EQ(q.nr_cpus(), 7);  // no header: 1 + highest cpu
  FtraceParser e;
  parse("", true, &e);
  EXPECT_EQ(e.nr_cpus(), 0);
  EXPECT_EQ(e.rows(), 0u);
}

// ---------------------------------------------------------------------------
// Errors.

struct ErrorCase {
  std::string line;
  std::string reason;
};

TEST(FtraceErrors, StrictStopsAtTheFirstMalformedLine) {
  const ErrorCase cases[] = {
      {"            task-1       [000] .....     1.0: timer_start: timer=1 function=f expires=12x cpu=0 idx=0 flags=",
       "timer_start: expires='12x' is not a number"},
      {"  x-1 [000] d..2. 1.000000: timer_start: timer=1 function=f expires=1 oops",
       "timer_start: token 'oops' has no '='"},
      {"  x-1 [000] d..2. 1.000000: cpu_idle: state=99999999999999999999 cpu_id=0",
       "cpu_idle: state='99999999999999999999' is out of range"},
      {"  x-1 [000] d..2. 1.000000: tmigr_group_set_cpu_active: group=1 lvl=0 numa=0 active=zz migrator=1 "
       "parent=0 childmask=1",
       "tmigr_group_set_cpu_active: active='zz' is not a hex number"},
      {"  x-1 [000] d..2. 1.000000: timer_init: timer=-5", "timer_init: timer='-5' is not a pointer"},
      {"  x-1 [000] d..2. 1.000000: timer_start: timer=000000007b946db6 function=process_ti",
       "timer_start: no expires= in the payload (truncated line?)"},
      {"            rcu_preempt-18      [006] d..1.    14.4", "timestamp '14.4' is not followed by ':'"},
      {"            rcu_preempt-18      [006] d..1.    14.468597: timer_sta",
       "no 'event:' after the timestamp"},
      {"            rcu_preempt-18      [006", "no 'comm-pid [cpu]' at the start of the line"},
      {"  x-1 [000] 12345: timer_init: timer=1", "timestamp '12345' has no fraction (only sec.usec and sec.nsec are read)"},
      {"  x-1 [000] 1.0000000001: timer_init: timer=1", "timestamp '1.0000000001' is not sec.frac"},
      {"  x-1 [000] 99999999999.0: timer_init: timer=1", "timestamp '99999999999.0' is out of range"},
      {"  x-1 [99999999999] 1.0: timer_init: timer=1", "cpu '99999999999' is out of range"},
      {"  x-1 [000] d..2. 1.000000: sched_switch: nonsense", "sched_switch: payload 'nonsense' is neither "
                                                             "'prev_comm=... ==> next_comm=...' nor 'comm:pid [prio] "
                                                             "S ==> comm:pid [prio]'"},
      {"hello world", "no 'comm-pid [cpu]' at the start of the line"},
  };
  for (const ErrorCase& c : cases) {
    FtraceParser p;
    const std::string text = lines({kTimerStart, "# comment", c.line, kTimerStart});
    const FtraceTable t = parse(text, true, &p);
    EXPECT_EQ(p.error_line(), 3) << c.line;
    EXPECT_EQ(p.error_reason(), c.reason) << c.line;
    EXPECT_EQ(t.ts_ns.size(), 1u) << c.line;  // stopped at the bad line
  }
}

TEST(FtraceErrors, LenientCountsAndSkips) {
  std::string text = lines({kTimerStart});
  for (int i = 0; i < 8; ++i) text += "garbage " + std::to_string(i) + "\n";
  text += lines({"  x-1 [000] d..2. 1.000000: timer_start: timer=1 function=f expires=12x", kSchedSwitch});
  FtraceParser p(false, 3);
  const FtraceTable t = parse(text, false, &p);
  EXPECT_EQ(p.error_line(), 0);
  EXPECT_EQ(p.skipped_lines(), 9);
  ASSERT_EQ(p.skipped_examples().size(), 3u);
  EXPECT_EQ(p.skipped_examples()[0], "line 2: no 'comm-pid [cpu]' at the start of the line");
  ASSERT_EQ(t.ts_ns.size(), 2u);
  EXPECT_EQ(t.line[1], 11);
  // The bad timer_start wrote nothing: its partial fields did not leak.
  EXPECT_TRUE(is_na(t, "timer", 1));
  EXPECT_EQ(column(t, "timer")->u64.size(), 2u);
}

TEST(FtraceErrors, OverlongLine) {
  std::string text = lines({kTimerStart});
  text += "  x-1 [000] d..2. 1.000000: foo: " + std::string(FtraceParser::kMaxLineBytes + 10, 'a') + "\n";
  text += lines({kTimerStart});
  for (std::size_t chunk : {std::size_t{4096}, text.size()}) {
    FtraceParser p(false);
    for (std::size_t i = 0; i < text.size(); i += chunk) p.feed(std::string_view(text).substr(i, chunk));
    p.finish();
    EXPECT_EQ(p.skipped_lines(), 1) << chunk;
    EXPECT_EQ(p.rows(), 2u) << chunk;
    EXPECT_EQ(p.lines(), 3) << chunk;
  }
}

TEST(FtraceErrors, HostileLineStaysLinear) {
  // Every ") [1]" is a candidate [cpu] column whose tgid check scans back to
  // the only '(' at the start: without a cap on candidates this line would
  // take ~10^10 steps.
  std::string line = "(";
  for (int i = 0; i < 100000; ++i) line += ") [1]";
  FtraceParser p(false);
  p.feed(line + "\n" + kTimerStart + "\n");
  p.finish();
  EXPECT_EQ(p.skipped_lines(), 1);
  EXPECT_EQ(p.rows(), 1u);
}

// ---------------------------------------------------------------------------
// Chunks.

std::string sample_text() {
  return lines({"# tracer: nop", "# entries-in-buffer/entries-written: 5/5   #P:8", kTimerStart, kSchedSwitch,
                kUpdateEvents, "", "  x-1 [000] d..2. 1.000001: irq_handler_entry: irq=11 name=virtio0",
                "  Web Content-4905 (   4900) [001] d..2. 204.005729: sched_switch: prev_comm=Web Content "
                "prev_pid=4905 prev_prio=120 prev_state=S ==> next_comm=a b next_pid=1 next_prio=120"}) +
         "          <idle>-0       [001] d..1.    14.468101: cpu_idle: state=4294967295 cpu_id=1\n";
}

void expect_same(const FtraceTable& a, const FtraceTable& b, const std::string& what) {
  EXPECT_EQ(a.ts_ns, b.ts_ns) << what;
  EXPECT_EQ(a.cpu, b.cpu) << what;
  EXPECT_EQ(a.pid, b.pid) << what;
  EXPECT_EQ(a.line, b.line) << what;
  EXPECT_EQ(a.task, b.task) << what;
  EXPECT_EQ(a.task_names, b.task_names) << what;
  EXPECT_EQ(a.event_names, b.event_names) << what;
  EXPECT_EQ(a.payload_rows, b.payload_rows) << what;
  EXPECT_EQ(a.payload_blob, b.payload_blob) << what;
  ASSERT_EQ(a.fields.size(), b.fields.size()) << what;
  for (std::size_t i = 0; i < a.fields.size(); ++i) {
    EXPECT_EQ(a.fields[i].name, b.fields[i].name) << what;
    EXPECT_EQ(a.fields[i].i64, b.fields[i].i64) << what;
    EXPECT_EQ(a.fields[i].u64, b.fields[i].u64) << what;
    EXPECT_EQ(a.fields[i].missing, b.fields[i].missing) << what;
    EXPECT_EQ(a.fields[i].codes, b.fields[i].codes) << what;
  }
}

TEST(FtraceChunks, EverySplitPointGivesTheSameColumns) {
  const std::string text = sample_text();
  FtraceParser whole_parser;
  const FtraceTable whole = parse(text, true, &whole_parser);
  ASSERT_EQ(whole_parser.error_line(), 0) << whole_parser.error_reason();
  ASSERT_EQ(whole.ts_ns.size(), 6u);
  EXPECT_EQ(whole.ts_ns.back(), 14'468'101'000);
  EXPECT_EQ(i64(whole, "tgid", 4), 4900);
  EXPECT_TRUE(is_na(whole, "tgid", 5));
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    FtraceParser p;
    p.feed(std::string_view(text).substr(0, cut));
    p.feed(std::string_view(text).substr(cut));
    p.finish();
    expect_same(whole, p.take(), "cut at " + std::to_string(cut));
  }
  FtraceParser bytewise;
  for (char c : text) bytewise.feed(std::string_view(&c, 1));
  bytewise.finish();
  expect_same(whole, bytewise.take(), "byte by byte");
}

TEST(FtraceChunks, CrLfAndEmptyChunks) {
  std::string text = sample_text();
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  FtraceParser p;
  p.feed("");
  p.feed(crlf);
  p.feed("");
  p.finish();
  p.finish();  // idempotent
  expect_same(parse(text), p.take(), "crlf");
}

// Random damage to real lines must give errors, never a crash (this test
// earns its keep under ASan + UBSan).
TEST(FtraceErrors, DamagedLinesNeverCrash) {
  const std::string text = sample_text();
  std::mt19937 rng(12345);
  const char alphabet[] = " -[]():=.#0123456789abcxyz\n\r\t\xff";
  for (int round = 0; round < 3000; ++round) {
    std::string damaged = text;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % damaged.size();
      switch (rng() % 3) {
        case 0:
          damaged[at] = alphabet[rng() % (sizeof(alphabet) - 1)];
          break;
        case 1:
          damaged.erase(at, 1 + rng() % 20);
          break;
        default:
          damaged.insert(at, 1, alphabet[rng() % (sizeof(alphabet) - 1)]);
      }
      if (damaged.empty()) damaged = "x";
    }
    for (bool strict : {true, false}) {
      FtraceParser p(strict);
      const std::size_t chunk = 1 + rng() % 64;
      for (std::size_t i = 0; i < damaged.size(); i += chunk) p.feed(std::string_view(damaged).substr(i, chunk));
      p.finish();
      const FtraceTable t = p.take();
      for (const FtraceColumn& c : t.fields) ASSERT_EQ(c.size(), t.ts_ns.size());
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Damage that still parses (issue 17): the reader must not guess.

TEST(FtraceErrors, PartialLastLineIsAnErrorWhereverTheCutFalls) {
  // Cut mid-number, what is left is a well-formed timer_start with a wrong
  // expires: only the missing newline tells.
  const std::string line = kTimerStart;
  const std::size_t at = line.find("expires=") + std::string("expires=42949").size();
  const std::string text = sample_text() + line.substr(0, at);
  const std::int64_t last = 1 + static_cast<std::int64_t>(std::count(text.begin(), text.end(), '\n'));
  FtraceParser strict;
  parse(text, true, &strict);
  EXPECT_EQ(strict.error_line(), last);
  EXPECT_NE(strict.error_reason().find("partial last line"), std::string::npos) << strict.error_reason();
  FtraceParser lenient(false);
  const FtraceTable t = parse(text, false, &lenient);
  EXPECT_EQ(lenient.skipped_lines(), 1);
  EXPECT_EQ(t.ts_ns.size(), 6u);
  // A comment or blank space without its newline is no loss.
  FtraceParser comment;
  parse(sample_text() + "# the end", true, &comment);
  EXPECT_EQ(comment.error_line(), 0);
}

TEST(FtraceErrors, CrOnlyLineEndingsAreRejectedClearly) {
  std::string cr = sample_text();
  std::replace(cr.begin(), cr.end(), '\n', '\r');
  cr += "\n";
  FtraceParser p;
  parse(cr, true, &p);
  EXPECT_EQ(p.error_line(), 1);
  EXPECT_NE(p.error_reason().find("CR-only"), std::string::npos) << p.error_reason();
}

TEST(FtraceErrors, CpuBeyondTheHeadersCount) {
  // sample_text says #P:8; an event on CPU 8 contradicts it.
  const std::string text = sample_text() + "  x-1 [008] d..2. 1.000002: irq_handler_entry: irq=11 name=virtio0\n";
  FtraceParser p;
  parse(text, true, &p);
  EXPECT_EQ(p.error_line(), 10);
  EXPECT_EQ(p.error_reason(), "CPU 8 is beyond the header's CPU count (#P:8)");
}

TEST(FtraceErrors, AnEndlessLineFailsAsSoonAsItIsTooLongWhenStrict) {
  // /dev/zero read as a file: NUL bytes and never a newline.
  FtraceParser p;
  const std::string zeros(1 << 16, '\0');
  std::size_t fed = 0;
  while (p.error_line() == 0 && fed < 4 * FtraceParser::kMaxLineBytes) {
    p.feed(zeros);
    fed += zeros.size();
  }
  EXPECT_EQ(p.error_line(), 1);
  EXPECT_LE(fed, FtraceParser::kMaxLineBytes + zeros.size());
}
