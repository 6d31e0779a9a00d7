// Tests of the runaway guard (guard.hpp): it fires on a script that makes the
// engine loop at one instant, on a runaway queue and on a memory limit, names
// the CPU, the source and the time, and honours an interruption; and the
// config of issue 17 (an interrupt ending before its handler) now finishes.
#include <gtest/gtest.h>

#include <string>

#include "timerlab/engine.hpp"

using namespace timerlab;

namespace {

constexpr std::int64_t kMs = 1'000'000;

SimConfig one_cpu() {
  SimConfig c;
  c.topology.nr_cpus = 1;
  c.topology.nr_nodes = 1;
  c.hz = 250;
  c.duration_ns = 10 * kMs;
  c.workload.function_names = {"process_timeout"};
  return c;
}

// A replayed trace that arms and cancels one timer over and over at one
// instant: the engine takes a step per item without time advancing.
SimConfig looping_script(std::size_t pairs) {
  SimConfig c = one_cpu();
  c.workload.script.nr_keys = 1;
  c.workload.script.initial_busy = {1};
  for (std::size_t i = 0; i < pairs; ++i) {
    ScriptItem arm;
    arm.t_ns = 2 * kMs;
    arm.expires_jiffies = (jiffies_t{1} << 32) - 300 * 250 + 100;
    ScriptItem cancel = arm;
    cancel.op = ScriptOp::cancel;
    c.workload.script.items.push_back(arm);
    c.workload.script.items.push_back(cancel);
  }
  return c;
}

std::string runaway_message(const SimConfig& c) {
  try {
    simulate(c);
  } catch (const RunawayError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Guard, StopsALoopAtOneInstantNamingCpuSourceAndTime) {
  SimConfig c = looping_script(600);
  c.guard.max_steps_per_instant = 1000;
  const std::string m = runaway_message(c);
  EXPECT_NE(m.find("stopped making progress"), std::string::npos) << m;
  EXPECT_NE(m.find("t=2000000 ns"), std::string::npos) << m;
  EXPECT_NE(m.find("on CPU 0"), std::string::npos) << m;
  EXPECT_NE(m.find("work_script"), std::string::npos) << m;
  // Under the limit the same script runs.
  c.guard.max_steps_per_instant = 2000;
  EXPECT_NO_THROW(simulate(c));
}

TEST(Guard, StopsARunawayQueue) {
  SimConfig c = one_cpu();
  c.duration_ns = 1000 * kMs;
  TimeoutStreamSpec s;  // 1 MHz of 10 s timeouts, never cancelled: 10^7 pending at the end
  s.cpus = {0};
  s.rate_hz = 1e6;
  s.timeouts = {1, Dist::constant(1e10), 0, Dist::constant(0), 0, 0};
  c.workload.streams.push_back(s);
  c.guard.max_pending = 100'000;
  const std::string m = runaway_message(c);
  EXPECT_NE(m.find("runaway queue"), std::string::npos) << m;
  EXPECT_NE(m.find("timers pending"), std::string::npos) << m;
}

TEST(Guard, AReplaysQueuedTraceIsNoRunawayQueue) {
  // A replay queues the clock bookkeeping of its whole trace at the start
  // (here how late each tick ran): a long trace is more items than the limit,
  // and still no runaway.
  SimConfig c = one_cpu();
  c.duration_ns = 1000 * kMs;
  c.workload.script.nr_keys = 1;
  c.workload.script.initial_busy = {1};
  for (std::int64_t i = 0; i < 6000; ++i) {
    ScriptItem late;
    late.t_ns = (i + 1) * 150'000;
    late.op = ScriptOp::tick_delay;
    late.duration_ns = 1'000;
    c.workload.script.items.push_back(late);
  }
  c.guard.max_pending = 1000;  // far below the 6000 items queued at the start
  EXPECT_EQ(runaway_message(c), "");
}

TEST(Guard, StopsARunOverItsMemoryLimit) {
  SimConfig c = one_cpu();
  c.duration_ns = 1000 * kMs;
  TimeoutStreamSpec s;
  s.cpus = {0};
  s.rate_hz = 1e6;
  s.timeouts = {1, Dist::constant(1e5), 0, Dist::constant(0), 0, 0};
  c.workload.streams.push_back(s);
  c.guard.max_memory_bytes = 4 << 20;
  const std::string m = runaway_message(c);
  EXPECT_NE(m.find("max_memory_bytes=4194304"), std::string::npos) << m;
}

TEST(Guard, AnInterruptionStopsTheRun) {
  SimConfig c = one_cpu();
  c.duration_ns = 100'000 * kMs;
  TaskSpec t;
  t.cpus = {0};
  t.run_ns = Dist::constant(50'000);
  t.sleep_ns = Dist::constant(50'000);
  t.sleep = SleepKind::external;
  c.workload.tasks.push_back(t);
  int polls = 0;
  c.guard.interrupted = [&polls] {
    ++polls;
    return true;
  };
  EXPECT_THROW(simulate(c), Interrupted);
  EXPECT_EQ(polls, 1);
  polls = 0;
  c.duration_ns = 10 * kMs;
  c.guard.interrupted = [&polls] { return ++polls < 0; };
  EXPECT_NO_THROW(simulate(c));
  EXPECT_GE(polls, 1);  // polled, not stopped
}

// Issue 17, item 1: with irq_ns = 0 a task's wakeup (a device interrupt)
// woke the idle CPU, whose interrupt then ended before its handler ran: the
// CPU went back to idle with the wakeup still due, at the same instant,
// forever. The handler runs first now.
TEST(Guard, AnInterruptsHandlerRunsBeforeTheInterruptEnds) {
  SimConfig c = one_cpu();
  c.duration_ns = 3 * kMs;
  c.governor = "oracle";
  c.idle.states = {{"POLL", 0, 0, 4000, 0, true, false, false}, {"C1", 2000, 2000, 1500, 0, false, false, false}};
  c.idle.busy_power_mw = 5000;
  c.workload.irq_ns = 0;
  TaskSpec t;
  t.cpus = {0};
  t.run_ns = Dist::constant(62'000);
  t.sleep_ns = Dist::constant(100'000);
  c.workload.tasks.push_back(t);
  c.guard.max_steps_per_instant = 10'000;
  const SimResult r = simulate(c);
  EXPECT_EQ(r.cpus[0].tasks_woken, 1u);  // woken once from outside, then asleep on its 1-jiffy timer
  EXPECT_EQ(r.cpus[0].busy_ns, 62'000);
  EXPECT_EQ(r.cpus[0].wakeups, 1u);
  EXPECT_EQ(r.cpus[0].busy_ns + r.cpus[0].idle_ns, 3 * kMs);
}
