// Tests of replayed hrtimers (script items hrtimer_arm / hrtimer_cancel,
// engine_replay.cpp): the simulation expires them, an idle CPU wakes as late
// as traced, a task an hrtimer woke waits for the simulated expiry, a cancel
// removes the timer, and bad items are named.
#include <gtest/gtest.h>

#include <stdexcept>

#include "script_helpers.hpp"
#include "timerlab/engine.hpp"

using namespace timerlab;
using namespace timerlab::test;

namespace {

ScriptItem hr_arm(std::int64_t t, unsigned cpu, std::uint32_t key, std::int64_t expires_ns, std::int64_t late_ns = -1,
                  std::uint32_t mode = 0) {
  ScriptItem it = op(t, cpu, ScriptOp::hrtimer_arm, key);
  it.expires_jiffies = static_cast<std::uint64_t>(expires_ns);
  it.duration_ns = 0;  // no window
  it.flags = mode;
  it.function = 2;  // hrtimer_wakeup
  it.target_cpu = cpu;
  it.late_ns = late_ns;
  return it;
}

SimConfig hr_config() {
  SimConfig c = replay_config(2);
  c.workload.function_names.push_back("hrtimer_wakeup");
  c.workload.script.nr_hrtimer_keys = 2;
  return c;
}

// When `cpu`'s idle periods end, from the event log (cpu_idle exits).
std::vector<std::int64_t> idle_exits(const SimResult& r, unsigned cpu) {
  std::vector<std::int64_t> out;
  for (const EventRow& e : r.events) {
    if (e.event == SimEvent::cpu_idle && e.cpu == static_cast<std::int32_t>(cpu) && e.v[0] == 4294967295ull) {
      out.push_back(e.ts_ns);
    }
  }
  return out;
}

}  // namespace

TEST(ReplayHrtimer, AnIdleCpuWakesForItAsLateAsTraced) {
  // CPU 1 arms an hrtimer for 1100 ms and idles; it wakes 300 µs late, as traced.
  SimConfig c = hr_config();
  c.workload.script.items = {op(1000 * kMs, 1, ScriptOp::busy_start), hr_arm(1001 * kMs, 1, 0, 1100 * kMs, 300'000),
                             op(1002 * kMs, 1, ScriptOp::idle_start)};
  const SimResult r = simulate(c);
  ASSERT_EQ(r.hrtimers.size(), 1u);
  const HrtimerRow& h = r.hrtimers[0];
  EXPECT_EQ(h.hrtimer, 2u);  // key 0 comes right after the two ticks
  EXPECT_EQ(h.outcome, TimerOutcome::expired);
  EXPECT_EQ(h.cpu_expired, 1);
  EXPECT_EQ(h.end_ns, 1100 * kMs + 300'000);
  const auto exits = idle_exits(r, 1);
  EXPECT_NE(std::find(exits.begin(), exits.end(), 1100 * kMs + 300'000), exits.end());
}

TEST(ReplayHrtimer, ATaskItWokeWaitsForTheSimulatedExpiry) {
  // The trace ran CPU 0's task at 1100.3 ms, woken by hrtimer 0; the
  // simulation's hrtimer fires at 1100 ms + its lateness 50 µs: the task runs then.
  SimConfig c = hr_config();
  ScriptItem woken = op(1100 * kMs + 300'000, 0, ScriptOp::busy_start, 0);
  woken.flags = kScriptWokenByHrtimer;
  c.workload.script.items = {op(1000 * kMs, 0, ScriptOp::busy_start), hr_arm(1001 * kMs, 0, 0, 1100 * kMs, 50'000),
                             op(1002 * kMs, 0, ScriptOp::idle_start), woken,
                             op(1101 * kMs, 0, ScriptOp::idle_start)};
  const SimResult r = simulate(c);
  const auto exits = idle_exits(r, 0);
  ASSERT_FALSE(exits.empty());
  EXPECT_NE(std::find(exits.begin(), exits.end(), 1100 * kMs + 50'000), exits.end());
  EXPECT_EQ(std::find(exits.begin(), exits.end(), 1100 * kMs + 300'000), exits.end());
}

TEST(ReplayHrtimer, ACancelRemovesItAndAPinnedOneStaysPut) {
  SimConfig c = hr_config();
  c.workload.script.items = {op(1000 * kMs, 0, ScriptOp::busy_start), hr_arm(1001 * kMs, 1, 0, 1100 * kMs),
                             hr_arm(1001 * kMs, 1, 1, 1150 * kMs, -1, HRTIMER_MODE_PINNED),
                             op(1050 * kMs, 1, ScriptOp::hrtimer_cancel, 0)};
  const SimResult r = simulate(c);
  ASSERT_EQ(r.hrtimers.size(), 2u);
  EXPECT_EQ(r.hrtimers[0].outcome, TimerOutcome::cancelled);
  // Armed from idle CPU 1 (an interrupt there): not pinned, it would go to
  // busy CPU 0, but as CPU 0's first timer it stays; pinned, it stays anyway.
  EXPECT_EQ(r.hrtimers[1].base_cpu, 1);
  EXPECT_EQ(r.hrtimers[1].cpu_expired, 1);
}

TEST(ReplayHrtimer, BadItemsAreNamed) {
  auto expect_bad = [](SimConfig c, const char* what) {
    try {
      simulate(c);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  SimConfig c = hr_config();
  c.workload.script.items = {hr_arm(1001 * kMs, 0, 2, 1100 * kMs)};
  expect_bad(c, "hrtimer key 2 >= nr_hrtimer_keys 2");
  c.workload.script.items = {hr_arm(1001 * kMs, 0, 0, 1100 * kMs, -1, 0x1)};
  expect_bad(c, "PINNED, SOFT and HARD mode bits only");
  c.workload.script.items = {hr_arm(1001 * kMs, 0, 0, 1100 * kMs, -7)};
  expect_bad(c, "late_ns");
  ScriptItem w = op(1001 * kMs, 0, ScriptOp::busy_start, 5);
  w.flags = kScriptWokenByHrtimer;
  c.workload.script.items = {w};
  expect_bad(c, "hrtimer key 5");
}

TEST(ReplayHrtimer, ACpuThatPulledItsTaskIsIdleCpuUntilItsRunnableDelayEnds) {
  // CPU 1 leaves idle at 1050 ms for a task it pulls itself (no wakeup):
  // busy_start with a runnable delay of 200 µs. An hrtimer armed there at
  // 1050.1 ms finds CPU 1 still idle_cpu() and goes to busy CPU 0, as
  // get_nohz_timer_target does (after CPU 0's tick at 1052 ms: not its
  // first timer); armed after the delay, it stays on CPU 1.
  auto expired_on = [](std::int64_t runnable_ns) {
    SimConfig c = hr_config();
    ScriptItem pulled = op(1050 * kMs, 1, ScriptOp::busy_start);
    pulled.duration_ns = runnable_ns;
    c.workload.script.items = {op(1000 * kMs, 0, ScriptOp::busy_start), pulled,
                               hr_arm(1050 * kMs + 100'000, 1, 0, 1053 * kMs + 500'000)};
    const SimResult r = simulate(c);
    EXPECT_EQ(r.hrtimers.size(), 1u);
    return r.hrtimers.empty() ? -1 : r.hrtimers[0].cpu_expired;
  };
  EXPECT_EQ(expired_on(200'000), 0);
  EXPECT_EQ(expired_on(50'000), 1);
  EXPECT_EQ(expired_on(0), 1);
  // A task already queued on CPU 1's wake list (ttwu_pending, from the
  // waker's IPI at 1049.8 ms): not idle_cpu(), whatever the delay.
  SimConfig c = hr_config();
  ScriptItem pulled = op(1050 * kMs, 1, ScriptOp::busy_start);
  pulled.duration_ns = 200'000;
  c.workload.script.items = {op(1000 * kMs, 0, ScriptOp::busy_start),
                             op(1049 * kMs + 800'000, 1, ScriptOp::wake_pending), pulled,
                             hr_arm(1050 * kMs + 100'000, 1, 0, 1053 * kMs + 500'000)};
  const SimResult r = simulate(c);
  ASSERT_EQ(r.hrtimers.size(), 1u);
  EXPECT_EQ(r.hrtimers[0].cpu_expired, 1);
}

TEST(ReplayHrtimer, AnIdleLoopExitStaysOutOfIdleAsLongAsTraced) {
  // An idle_exit at 1050 ms whose CPU idled again 400 µs later in the
  // trace: an hrtimer due 300 µs after it expires before that, so it ends
  // no idle period; the CPU idles again at 1050.4 ms.
  SimConfig c = hr_config();
  ScriptItem exit = op(1050 * kMs, 1, ScriptOp::idle_exit);
  exit.duration_ns = 400'000;
  c.workload.script.items = {exit, hr_arm(1050 * kMs + 200'000, 1, 0, 1050 * kMs + 300'000, -1, HRTIMER_MODE_PINNED)};
  const SimResult r = simulate(c);
  ASSERT_EQ(r.hrtimers.size(), 1u);
  EXPECT_EQ(r.hrtimers[0].cpu_expired, 1);
  const auto exits = idle_exits(r, 1);
  EXPECT_EQ(std::find(exits.begin(), exits.end(), 1050 * kMs + 300'000), exits.end());
  bool idled_again = false;
  for (const EventRow& e : r.events) {
    if (e.event == SimEvent::cpu_idle && e.cpu == 1 && e.v[0] != 4294967295ull && e.ts_ns >= 1050 * kMs + 400'000 &&
        e.ts_ns < 1051 * kMs) {
      idled_again = true;
    }
  }
  EXPECT_TRUE(idled_again);
}

TEST(ReplayHrtimer, ALateTickStillCountsAsProgrammedForTheFirstTimerRule) {
  // Busy CPU 0's ticks run 600 µs late (tick_delay, as traced); its device
  // was programmed for the grid point, 1052 ms. An hrtimer armed from idle
  // CPU 1 at 1051.5 ms for 1052.3 ms is then not CPU 0's first timer, and
  // goes there; with ticks on time, 1052.3 ms is past CPU 0's tick anyway.
  auto expired_on = [](std::int64_t tick_late_ns, std::int64_t expires) {
    SimConfig c = hr_config();
    ScriptItem late = op(1000 * kMs + 500'000, 0, ScriptOp::tick_delay);
    late.duration_ns = tick_late_ns;
    c.workload.script.items = {op(1000 * kMs, 0, ScriptOp::busy_start), late,
                               hr_arm(1051 * kMs + 500'000, 1, 0, expires)};
    const SimResult r = simulate(c);
    EXPECT_EQ(r.hrtimers.size(), 1u);
    return r.hrtimers.empty() ? -1 : r.hrtimers[0].cpu_expired;
  };
  EXPECT_EQ(expired_on(600'000, 1052 * kMs + 300'000), 0);
  EXPECT_EQ(expired_on(0, 1052 * kMs + 300'000), 0);
  EXPECT_EQ(expired_on(600'000, 1051 * kMs + 900'000), 1);  // before the grid point: CPU 0's first
}

TEST(ReplayHrtimer, AStaleDeviceWakesWhenTheTracedHandlerOfTheNewFirstTimerRan) {
  // CPU 1 idles with two hrtimers, 1100 ms first. CPU 0 re-arms that one
  // onto itself at 1050 ms: CPU 1's device stays programmed for 1100 ms
  // (no reprogram from a remote CPU). The kernel's spurious interrupt came
  // when the handler of 1150 ms ran, 300 µs late as traced: the replay's
  // CPU 1 wakes then, not at 1100 ms.
  SimConfig c = hr_config();
  c.workload.script.items = {op(1000 * kMs, 0, ScriptOp::busy_start), op(1000 * kMs, 1, ScriptOp::busy_start),
                             hr_arm(1001 * kMs, 1, 0, 1100 * kMs, 10'000, HRTIMER_MODE_PINNED),
                             hr_arm(1001 * kMs, 1, 1, 1150 * kMs, 300'000, HRTIMER_MODE_PINNED),
                             op(1002 * kMs, 1, ScriptOp::idle_start),
                             hr_arm(1050 * kMs, 0, 0, 1120 * kMs, 10'000, HRTIMER_MODE_PINNED)};
  const SimResult r = simulate(c);
  const auto exits = idle_exits(r, 1);
  EXPECT_EQ(std::count_if(exits.begin(), exits.end(), [](std::int64_t t) { return t > 1090 * kMs && t < 1160 * kMs; }), 1);
  EXPECT_NE(std::find(exits.begin(), exits.end(), 1150 * kMs + 300'000), exits.end());
}
