// Tests of the script workload (a replayed trace, engine_replay.cpp):
// hand-computed small scripts and the validation of bad input.
#include <gtest/gtest.h>

#include <stdexcept>

#include "script_helpers.hpp"
#include "timerlab/engine.hpp"
#include "timerlab/nohz.hpp"

using namespace timerlab;
using namespace timerlab::test;

TEST(Replay, ArmedTimerExpiresAtItsBucketWithTheScriptsJiffies) {
  SimConfig c = replay_config(2);
  // At 1001 ms, jiffies = kJ0 + 250; expires 25 jiffies later: level 0, whose
  // bucket is the next jiffy after expires (the wheel never fires early).
  const jiffies_t expires = kJ0 + 250 + 25;
  c.workload.script.items = {op(1000 * kMs, 0, ScriptOp::busy_start), arm(1001 * kMs, 0, 0, expires, TIMER_PINNED),
                             op(1002 * kMs, 0, ScriptOp::idle_start)};
  const SimResult r = simulate(c);
  ASSERT_EQ(r.timers.size(), 1u);
  EXPECT_EQ(r.timers[0].timer, 0u);  // key 0 is TimerId 0
  EXPECT_EQ(r.timers[0].cpu_armed, 0);
  EXPECT_EQ(r.timers[0].expires_jiffies, expires);
  EXPECT_EQ(r.timers[0].outcome, TimerOutcome::expired);
  EXPECT_EQ(r.timers[0].bucket_expiry_jiffies, expires + 1);
  EXPECT_EQ(r.timers[0].end_ns, static_cast<std::int64_t>(expires + 1 - kJ0) * 4 * kMs);
  bool traced = false;
  for (const EventRow& e : r.events) {
    if (e.event == SimEvent::timer_start) {
      traced = true;
      EXPECT_EQ(e.v[3], 25u);  // timeout_jiffies: the simulation's jiffies are the script's
    }
  }
  EXPECT_TRUE(traced);
}

TEST(Replay, CancelledTimerDoesNotExpireAndArmsOnIdleCpusDoNotWakeThem) {
  SimConfig c = replay_config(2);
  c.workload.script.items = {arm(1010 * kMs, 1, 1, kJ0 + 300, TIMER_PINNED), op(1100 * kMs, 1, ScriptOp::cancel, 1)};
  const SimResult r = simulate(c);
  ASSERT_EQ(r.timers.size(), 1u);
  EXPECT_EQ(r.timers[0].outcome, TimerOutcome::cancelled);
  EXPECT_EQ(r.cpus[1].timers_cancelled, 1u);
  EXPECT_EQ(r.cpus[1].wakeups, 0u);  // idle all along: the arm and the cancel ran in place
}

TEST(Replay, ExternalInterruptWakesAnIdleCpuAndBusyIntervalsCount) {
  SimConfig c = replay_config(2);
  c.workload.script.items = {op(1050 * kMs, 1, ScriptOp::external_irq), op(1100 * kMs, 0, ScriptOp::busy_start),
                             op(1150 * kMs, 0, ScriptOp::idle_start)};
  const SimResult r = simulate(c);
  EXPECT_EQ(r.cpus[1].wakeups_by[static_cast<int>(WakeCause::irq)], 1u);
  EXPECT_EQ(r.cpus[0].wakeups_by[static_cast<int>(WakeCause::task)], 1u);
  EXPECT_NEAR(static_cast<double>(r.cpus[0].busy_ns), 50.0 * kMs, 0.1 * kMs);
}

TEST(Replay, TickPolicyOverridesTheGovernor) {
  SimConfig c = replay_config(2);
  // A timer 100 ms away: the governor stops the tick; a "keep" policy does not.
  c.workload.script.initial_busy = {1, 0};
  c.workload.script.items = {op(1000 * kMs, 0, ScriptOp::busy_start), arm(1001 * kMs, 0, 0, kJ0 + 275, TIMER_PINNED),
                             op(1002 * kMs, 0, ScriptOp::idle_start)};
  EXPECT_GE(simulate(c).cpus[0].tick_stops, 1u);
  ScriptItem keep = op(1000 * kMs, 0, ScriptOp::tick_policy);
  keep.flags = 1;
  c.workload.script.items.insert(c.workload.script.items.begin(), keep);
  const SimResult r = simulate(c);
  EXPECT_EQ(r.cpus[0].tick_stops, 0u);
  EXPECT_GE(r.cpus[0].ticks, 20u);
}

TEST(Replay, JiffiesDutyMakesOtherCpusSeeStaleJiffies) {
  // Both CPUs run tasks; CPU 0 takes the jiffies duty at the first tick, then
  // its ticks run 2 ms late while CPU 1's are on time: CPU 1's tick sees the
  // previous jiffy, so its timer waits for its next tick.
  SimConfig c = replay_config(2);
  c.workload.script.initial_busy = {1, 1};
  ScriptItem late = op(1005 * kMs, 0, ScriptOp::tick_delay);  // after the first tick (1004 ms)
  late.duration_ns = 2 * kMs;
  const jiffies_t expires = kJ0 + 250 + 25;  // bucket kJ0 + 276, at 1104 ms
  c.workload.script.items = {arm(1002 * kMs, 1, 0, expires, TIMER_PINNED), late};
  const SimResult grid = simulate(c);
  ASSERT_EQ(grid.timers.size(), 1u);
  EXPECT_EQ(grid.timers[0].end_ns, 1104 * kMs);
  c.jiffies_duty = true;
  const SimResult duty = simulate(c);
  EXPECT_EQ(duty.timers[0].cpu_expired, 1);
  EXPECT_EQ(duty.timers[0].end_ns, 1108 * kMs);
}

TEST(Replay, TheTraceHandsTheJiffiesDutyOver) {
  // As above, CPU 0 ticks 2 ms late; but the trace says CPU 1 holds the
  // duty from the start, then hands it to CPU 0 at 1150 ms (jiffies_duty
  // items): CPU 1's timers see current jiffies at its own on-time tick
  // before, stale ones after.
  SimConfig c = replay_config(2);
  c.duration_ns = 300 * kMs;
  c.jiffies_duty = true;
  c.workload.script.initial_busy = {1, 1};
  ScriptItem start = op(1000 * kMs, 1, ScriptOp::jiffies_duty);
  start.target_cpu = 1;
  ScriptItem late = op(1001 * kMs, 0, ScriptOp::tick_delay);
  late.duration_ns = 2 * kMs;
  ScriptItem hand = op(1150 * kMs, 0, ScriptOp::jiffies_duty);
  hand.target_cpu = 0;
  c.workload.script.items = {start, late, arm(1002 * kMs, 1, 0, kJ0 + 250 + 25, TIMER_PINNED),
                             arm(1110 * kMs, 1, 1, kJ0 + 275 + 25, TIMER_PINNED), hand};
  const SimResult r = simulate(c);
  ASSERT_EQ(r.timers.size(), 2u);
  EXPECT_EQ(r.timers[0].end_ns, 1104 * kMs);  // bucket kJ0 + 276 at 1104 ms: CPU 1 updated jiffies itself
  EXPECT_EQ(r.timers[1].end_ns, 1208 * kMs);  // bucket kJ0 + 301 at 1204 ms, seen at CPU 1's next tick
  c.workload.script.items[0].target_cpu = 2;  // not a CPU
  EXPECT_THROW(simulate(c), std::invalid_argument);
}

TEST(Replay, AStallSwallowsATick) {
  // A busy CPU ticks every 4 ms; the trace shows its tick for 1040 ms
  // firing at 1045.5 ms: the 1044 ms tick never ran, and the later ticks
  // are back on the grid (no item needed to say so).
  SimConfig c = replay_config(1);
  c.workload.script.initial_busy = {1};
  const SimResult on_time = simulate(c);
  ScriptItem stall = op(1040 * kMs - 1, 0, ScriptOp::tick_delay);
  stall.duration_ns = 5 * kMs + kMs / 2;
  c.workload.script.items = {stall};
  EXPECT_EQ(simulate(c).cpus[0].ticks, on_time.cpus[0].ticks - 1);
}

TEST(Replay, AnArmGoesWhereItsPlaceSays) {
  // Before 6.9, with CPU 0 running a task and CPU 1 idle: a mod_timer from
  // CPU 1 (an interrupt there) is pushed to CPU 0; add_timer_on(1) stays on
  // CPU 1; a re-arm from a callback stays on the timer's own base, wherever
  // the arming CPU is.
  SimConfig c = replay_config(2);
  c.pull_model = false;
  c.workload.script.initial_busy = {1, 0};
  ScriptItem on = arm(1010 * kMs, 1, 0, kJ0 + 300);
  on.place = ArmPlace::on_cpu;
  ScriptItem own = arm(1020 * kMs, 1, 1, kJ0 + 300);
  own.place = ArmPlace::own_base;
  c.workload.script.items = {arm(1005 * kMs, 0, 1, kJ0 + 290), arm(1008 * kMs, 1, 0, kJ0 + 290), on, own};
  const SimResult r = simulate(c);
  ASSERT_EQ(r.timers.size(), 4u);
  EXPECT_EQ(r.timers[0].base_cpu, 0);  // armed by the busy CPU: local
  EXPECT_EQ(r.timers[1].base_cpu, 0);  // armed on idle CPU 1: pushed to the busy CPU
  EXPECT_EQ(r.timers[2].base_cpu, 1);  // add_timer_on(1)
  EXPECT_EQ(r.timers[3].base_cpu, 0);  // re-armed by its callback: stays on CPU 0's base
  EXPECT_EQ(r.timers[3].flags & TIMER_PINNED, 0u);  // and is not pinned by it
  c.workload.script.items[3].place = static_cast<ArmPlace>(3);
  EXPECT_THROW(simulate(c), std::invalid_argument);
}

TEST(Replay, StalledJiffiesAreCaughtUpByAnotherCpu) {
  // CPU 0 holds the jiffies duty and stalls for 30 ms (its 1004 ms tick
  // comes at 1034 ms); CPU 1's ticks see jiffies stuck and, at the fifth,
  // bring them up to date (tick_sched_do_timer's stall check): CPU 1's
  // timer for the bucket of 1016 ms expires at CPU 1's 1024 ms tick, not
  // when the duty holder comes back.
  SimConfig c = replay_config(2);
  c.jiffies_duty = true;
  c.workload.script.initial_busy = {1, 1};
  ScriptItem hold = op(1000 * kMs, 0, ScriptOp::jiffies_duty);
  hold.target_cpu = 0;
  ScriptItem stall = op(1004 * kMs - 1, 0, ScriptOp::tick_delay);
  stall.duration_ns = 30 * kMs;
  c.workload.script.items = {hold, arm(1001 * kMs, 1, 0, kJ0 + 253, TIMER_PINNED), stall};
  const SimResult r = simulate(c);
  ASSERT_EQ(r.timers.size(), 1u);
  EXPECT_EQ(r.timers[0].cpu_expired, 1);
  EXPECT_EQ(r.timers[0].end_ns, 1024 * kMs);
}

TEST(Replay, ATaskWokenByATimerRunsWhenTheSimulationExpiresIt) {
  // CPU 1's task sleeps on a global timer (bucket kJ0 + 260, 1040 ms) and
  // goes idle; CPU 0 runs a task. The trace woke the task at 1020 ms (its
  // kernel expired the timer then); the simulation's migrator, CPU 0,
  // expires it at its 1040 ms tick and sends CPU 1 a reschedule IPI: the
  // task runs then, and its re-arm, 1 ms into its run, moves with it.
  SimConfig c = replay_config(2);
  c.workload.script.initial_busy = {1, 1};
  ScriptItem woken = op(1020 * kMs, 1, ScriptOp::busy_start, 0);
  woken.flags = kScriptWokenByTimer;
  c.workload.script.items = {arm(1001 * kMs, 1, 0, kJ0 + 259), op(1002 * kMs, 1, ScriptOp::idle_start), woken,
                             arm(1021 * kMs, 1, 0, kJ0 + 300), op(1022 * kMs, 1, ScriptOp::idle_start),
                             op(1100 * kMs, 1, ScriptOp::busy_start), arm(1101 * kMs, 1, 1, kJ0 + 300)};
  const SimResult r = simulate(c);
  ASSERT_EQ(r.timers.size(), 3u);
  EXPECT_EQ(r.timers[0].cpu_expired, 0);
  EXPECT_EQ(r.timers[0].end_ns, 1040 * kMs);
  const std::int64_t ran = 1040 * kMs + c.ipi_latency_ns;
  EXPECT_EQ(r.timers[1].armed_ns, ran + 1 * kMs);  // 1021 ms in the trace
  EXPECT_EQ(r.timers[1].expires_jiffies, kJ0 + 300 + 5);  // its timeout kept: 5 ticks later too
  EXPECT_EQ(r.timers[2].armed_ns, 1101 * kMs);      // after the next idle_start, the trace's time again
  EXPECT_GE(r.cpus[0].ipis_sent, 1u);
  // Armed anew by another task (the same on-stack address) before it expires
  // here: the sleep was over in the trace, so the waiting task runs then.
  std::vector<ScriptItem> reused = c.workload.script.items;
  reused.insert(reused.begin() + 5, arm(1030 * kMs, 0, 0, kJ0 + 280));
  std::swap(c.workload.script.items, reused);
  EXPECT_EQ(simulate(c).timers[2].armed_ns, 1030 * kMs + c.ipi_latency_ns + 1 * kMs);
  std::swap(c.workload.script.items, reused);
  // Not woken by the timer: the task runs at its traced time.
  c.workload.script.items[2].flags = 0;
  EXPECT_EQ(simulate(c).timers[1].armed_ns, 1021 * kMs);
  c.workload.script.items[2].flags = 2;
  EXPECT_THROW(simulate(c), std::invalid_argument);
}

TEST(Replay, BeforeV69AKeptTickIsNotWokenForANewTimer) {
  // CPU 0 runs a task and puts a timer 100 ms out on idle CPU 1 (add_timer_on).
  // If CPU 1 kept its tick, the governor's sleep-length query had marked its
  // base idle but keeping the tick cleared that: no IPI. With the tick
  // stopped, the base stays idle and the new first timer sends one.
  SimConfig c = replay_config(2);
  c.pull_model = false;
  c.workload.script.initial_busy = {1, 0};
  ScriptItem on = arm(1010 * kMs, 0, 0, kJ0 + 300);
  on.place = ArmPlace::on_cpu;
  on.target_cpu = 1;
  c.workload.script.items = {on};
  c.workload.script.initial_tick = {0, 1};  // CPU 1 idles with its tick kept
  EXPECT_EQ(simulate(c).cpus[0].ipis_sent, 0u);
  c.workload.script.initial_tick = {0, 2};  // ... stopped
  EXPECT_EQ(simulate(c).cpus[0].ipis_sent, 1u);
}

TEST(Replay, BeforeV59AnEarlierRequestedExpiryWakesTheCpu) {
  // Two timers put on CPU 1, whose tick is stopped, 103 and 101 jiffies out:
  // level 1, the same 8-jiffy bucket (kJ0 + 360). The first is the base's
  // new first timer and wakes it in every release. The second is not a new
  // first bucket (5.9+: no wakeup), but its requested expiry precedes the
  // first's, which the older rule compared with (pre-6.9-kernels.md §4.1):
  // a second IPI. Then a third for 102 jiffies: before 5.9 the wakeup
  // lowered next_expiry to 101, so no IPI either way. All three come before
  // CPU 1 takes the first IPI: once awake it would compute next_expiry anew.
  SimConfig c = replay_config(2);
  c.ipi_latency_ns = 5'000;
  c.pull_model = false;
  c.workload.script.initial_busy = {1, 0};
  c.workload.script.initial_tick = {0, 2};
  c.workload.script.nr_keys = 3;
  const jiffies_t j = kJ0 + 252;  // at 1010 ms
  std::vector<ScriptItem> items = {arm(1010 * kMs, 0, 0, j + 103), arm(1010 * kMs + 1'000, 0, 1, j + 101),
                                   arm(1010 * kMs + 2'000, 0, 2, j + 102)};
  for (ScriptItem& it : items) {
    it.place = ArmPlace::on_cpu;
    it.target_cpu = 1;
  }
  c.workload.script.items = items;
  EXPECT_EQ(simulate(c).cpus[0].ipis_sent, 1u);
  c.first_timer_by_bucket = false;
  EXPECT_EQ(simulate(c).cpus[0].ipis_sent, 2u);
}

TEST(Replay, AnIdlePeriodBegunBeforeTheTraceKeepsItsTick) {
  SimConfig c = replay_config(1);
  c.governor = "none";  // no cpuidle driver: the tick is always offered to stop
  c.workload.script.items = {op(1150 * kMs, 0, ScriptOp::busy_start)};
  EXPECT_LE(simulate(c).cpus[0].ticks, 13u);  // idle from the start, nothing due: ticks only once busy
  c.workload.script.initial_tick = {1};       // the trace shows its tick running (and no later decision)
  EXPECT_GE(simulate(c).cpus[0].ticks, 49u);
  c.workload.script.initial_tick = {3};
  EXPECT_THROW(simulate(c), std::invalid_argument);
}

namespace {

// When CPU `cpu` entered idle (cpu_idle with a state) at or after `from`.
std::int64_t next_idle_entry(const SimResult& r, unsigned cpu, std::int64_t from) {
  for (const EventRow& e : r.events) {
    if (e.ts_ns >= from && e.cpu == static_cast<std::int32_t>(cpu) && e.event == SimEvent::cpu_idle &&
        e.v[0] != kCpuIdleExit) {
      return e.ts_ns;
    }
  }
  return -1;
}

}  // namespace

TEST(Replay, AClockWakeupKeepsTheCpuAwakeAsLongAsTraced) {
  // CPU 0 idles with its tick kept. The tick of 1100 ms wakes it; the trace
  // shows it awake for 300 µs (its softirqs) before it idled again: a
  // wake_irq item for that grid point holds it in the interrupt that long,
  // counted from when the tick fired (not after the state's exit latency).
  // Without the item the interrupt takes irq_ns. The 1104 ms tick has none.
  SimConfig c = replay_config(1);
  c.governor = "none";
  c.idle.states = {{"C1", 10'000, 20'000, 0, 0, false, false, false}};
  c.workload.script.initial_tick = {1};
  ScriptItem keep = op(1000 * kMs, 0, ScriptOp::tick_policy);
  keep.flags = 1;
  c.workload.script.items = {keep};
  const SimResult plain = simulate(c);
  EXPECT_EQ(next_idle_entry(plain, 0, 1100 * kMs), 1100 * kMs + 10'000 + c.workload.irq_ns);
  ScriptItem awake = op(1100 * kMs - 1, 0, ScriptOp::wake_irq);
  awake.duration_ns = 300'000;
  c.workload.script.items.push_back(awake);
  const SimResult r = simulate(c);
  EXPECT_EQ(next_idle_entry(r, 0, 1100 * kMs), 1100 * kMs + 300'000);
  EXPECT_EQ(next_idle_entry(r, 0, 1104 * kMs), 1104 * kMs + 10'000 + c.workload.irq_ns);
  c.workload.script.items.back().duration_ns = -1;
  EXPECT_THROW(simulate(c), std::invalid_argument);
}

TEST(Replay, AnExternalInterruptsTracedTimeCountsFromItsArrival) {
  // The trace shows a device interrupt keeping idle CPU 1 awake 50 µs: the
  // CPU idles again 50 µs after it arrived, its 10 µs exit latency included.
  SimConfig c = replay_config(2);
  c.governor = "none";
  c.idle.states = {{"C1", 10'000, 20'000, 0, 0, false, false, false}};
  ScriptItem irq = op(1050 * kMs + 123, 1, ScriptOp::external_irq);
  irq.duration_ns = 50'000;
  c.workload.script.items = {irq};
  EXPECT_EQ(next_idle_entry(simulate(c), 1, 1050 * kMs), 1050 * kMs + 123 + 50'000);
}

TEST(Replay, BadScriptsAreRejectedWithAMessage) {
  auto expect_bad = [](SimConfig c, const char* what) {
    try {
      simulate(c);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  SimConfig c = replay_config(2);
  c.workload.script.items = {arm(1010 * kMs, 0, 0, kJ0 + 300), arm(1005 * kMs, 0, 1, kJ0 + 300)};
  expect_bad(c, "not sorted");
  c.workload.script.items = {arm(1010 * kMs, 2, 0, kJ0 + 300)};
  expect_bad(c, "CPU 2 does not exist");
  c.workload.script.items = {arm(1010 * kMs, 0, 7, kJ0 + 300)};
  expect_bad(c, "timer key 7");
  c.workload.script.items = {arm(1010 * kMs, 0, 0, kJ0 + 300, 0x1)};
  expect_bad(c, "flags");
  c.workload.script.items = {op(1010 * kMs, 0, static_cast<ScriptOp>(13))};
  expect_bad(c, "unknown operation");
  c.workload.script.items = {op(1010 * kMs, 0, ScriptOp::tick_policy)};
  c.workload.script.items[0].flags = 3;
  expect_bad(c, "tick_policy");
  c.workload.script.items = {op(1010 * kMs, 0, ScriptOp::tick_delay)};
  c.workload.script.items[0].duration_ns = -1;
  expect_bad(c, "tick_delay");
  c.workload.script.items[0].duration_ns = 2'000'000'000'000;  // would overflow the tick's time
  expect_bad(c, "tick_delay");
  c.workload.script.items = {op(1010 * kMs, 0, ScriptOp::jiffies_duty)};
  c.workload.script.items[0].target_cpu = 5;
  expect_bad(c, "jiffies_duty");
  c.workload.script.items = {};
  c.workload.script.initial_busy = {1};
  expect_bad(c, "initial_busy");
}

