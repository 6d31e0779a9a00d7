// Tests of the simulation engine: determinism, hand-computed small runs, the
// ping-pong of the pull model (reference §9 item 10), invariants under load.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "timerlab/engine.hpp"

using namespace timerlab;

namespace {

constexpr std::int64_t kMs = 1'000'000;

SimConfig base_config(unsigned cpus, bool pull) {
  SimConfig c;
  c.topology.nr_cpus = cpus;
  c.topology.nr_nodes = 1;
  c.hz = 250;
  c.pull_model = pull;
  c.duration_ns = 1000 * kMs;
  c.workload.function_names = {"process_timeout", "delayed_work_timer_fn", "tcp_write_timer"};
  return c;
}

TaskSpec sleeper(unsigned cpu, double sleep_ms) {
  TaskSpec t;
  t.cpus = {cpu};
  t.run_ns = Dist::constant(100'000);
  t.sleep_ns = Dist::constant(sleep_ms * kMs);
  t.sleep_function = 0;
  return t;
}

std::uint64_t sum(const SimResult& r, std::uint64_t CpuCounters::*f) {
  std::uint64_t s = 0;
  for (const CpuCounters& c : r.cpus) s += c.*f;
  return s;
}

TEST(Engine, SameSeedSameRunDifferentSeedDifferentRun) {
  SimConfig c = base_config(8, true);
  c.workload.tasks.push_back(sleeper(1, 10));
  TaskSpec noisy;
  noisy.cpus = {2, 3, 4, 5, 6, 7};
  noisy.run_ns = Dist{Dist::Kind::exponential, 300'000, 0};
  noisy.sleep_ns = Dist{Dist::Kind::lognormal, 5e6, 1.0};
  noisy.timeouts = {2, Dist{Dist::Kind::uniform, 5e6, 200e6}, 0.8, Dist{Dist::Kind::exponential, 2e6, 0}, 0, 2};
  c.workload.tasks.push_back(noisy);
  c.workload.busy_cpus = {0};
  c.record_events = true;
  const SimResult a = simulate(c), b = simulate(c);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    ASSERT_EQ(a.events[i].ts_ns, b.events[i].ts_ns) << i;
    ASSERT_EQ(a.events[i].event, b.events[i].event) << i;
    for (int k = 0; k < 9; ++k) ASSERT_EQ(a.events[i].v[k], b.events[i].v[k]) << i;
  }
  ASSERT_EQ(a.timers.size(), b.timers.size());
  c.seed = 2;
  const SimResult d = simulate(c);
  EXPECT_NE(a.events.size(), d.events.size());
}

// One CPU, one pinned timer re-armed every 20 ms (5 jiffies at HZ=250): it
// lands in level 0, so each expiry is one jiffy after its expires (bucket =
// expires + 1); the CPU sleeps with its tick stopped in between and wakes
// once per period, for that timer only.
TEST(Engine, OnePeriodicTimerOnOneCpuByHand) {
  SimConfig c = base_config(1, true);
  PeriodicSpec p;
  p.cpus = {0};
  p.period_ns = Dist::constant(20 * kMs);
  p.flags = TIMER_PINNED;
  p.function = 1;
  c.workload.periodic.push_back(p);
  const SimResult r = simulate(c);
  const CpuCounters& cpu = r.cpus[0];
  std::uint64_t expired = 0;
  for (const TimerRow& t : r.timers) {
    if (t.outcome != TimerOutcome::expired) continue;
    ++expired;
    EXPECT_EQ(t.bucket_expiry_jiffies, t.expires_jiffies + 1);
    // Fires at the start of its bucket's jiffy: (bucket - INITIAL_JIFFIES) * 4 ms.
    const std::int64_t bucket_ns = static_cast<std::int64_t>(t.bucket_expiry_jiffies - ((1ull << 32) - 300 * 250)) * 4 * kMs;
    EXPECT_EQ(t.end_ns, bucket_ns);
  }
  // Armed at a random phase within the first period, then every 6 jiffies:
  // 5 for the timeout and 1 because the callback re-arms from jiffies, which
  // is the bucket (expires + 1).
  EXPECT_GE(expired, 1000u / 24 - 1);
  EXPECT_LE(expired, 1000u / 24 + 1);
  EXPECT_EQ(cpu.wakeups, expired);
  EXPECT_EQ(cpu.wakeups_by[static_cast<int>(WakeCause::timer)], expired);
  EXPECT_EQ(cpu.tick_stops, 1u);  // stopped once, never restarted (no task runs)
  EXPECT_EQ(cpu.ipis_received, 0u);
}

// rcu_needs_cpu: a CPU that switched away from a task keeps its tick at the
// idle entry that follows (every real trace: 99.8-100 % of those entries);
// its next tick wakes it, and the next pass of the idle loop stops the
// tick. One sleeper on one CPU: each cycle costs one tick
// wakeup more than with timers alone deciding.
TEST(Engine, RcuKeepsTheTickUntilTheNextTickAfterATask) {
  for (bool rcu : {true, false}) for (bool pull : {true, false}) {
    SCOPED_TRACE(std::string(rcu ? "rcu" : "no rcu") + (pull ? ", pull" : ", push"));
    SimConfig c = base_config(1, pull);
    c.rcu_needs_cpu = rcu;
    c.workload.tasks.push_back(sleeper(0, 30));
    const SimResult r = simulate(c);
    const CpuCounters& cpu = r.cpus[0];
    ASSERT_GT(cpu.tasks_woken, 25u);
    const std::uint64_t by_tick = cpu.wakeups_by[static_cast<int>(WakeCause::tick)];
    // Each sleep stops the tick once, either way (the first cycle may begin
    // before the task's first run).
    EXPECT_NEAR(static_cast<double>(cpu.tick_stops), static_cast<double>(cpu.tasks_woken), 1.0);
    if (rcu) {
      EXPECT_NEAR(static_cast<double>(by_tick), static_cast<double>(cpu.tasks_woken), 1.0) << "one tick wakeup per sleep";
      EXPECT_NEAR(static_cast<double>(cpu.wakeups), 2.0 * static_cast<double>(cpu.tasks_woken), 2.0);
    } else {
      EXPECT_EQ(by_tick, 0u) << "timers alone: the tick stops at once";
      EXPECT_NEAR(static_cast<double>(cpu.wakeups), static_cast<double>(cpu.tasks_woken), 1.0);
    }
  }
}

// Reference §9 item 10 (the series' cover letter): on a mostly idle machine
// a sleeper's process_timeout timer is expired remotely by the busy
// migrator, which wakes the task on its own CPU with an IPI; the task re-arms
// there and idles again. Before 6.9 the timer stays on the sleeper's CPU and
// that CPU wakes for it by itself.
TEST(Engine, PingPongOfProcessTimeoutUnderPullNotPush) {
  for (bool pull : {true, false}) {
    SimConfig c = base_config(4, pull);
    c.workload.busy_cpus = {0};
    c.workload.tasks.push_back(sleeper(2, 30));
    const SimResult r = simulate(c);
    const CpuCounters& s = r.cpus[2];
    ASSERT_GT(s.tasks_woken, 25u);
    if (pull) {
      EXPECT_GE(s.timers_expired_remote + 1, s.tasks_woken) << "the migrator expires the sleeper's timers";
      EXPECT_EQ(s.timers_expired_local, 0u);
      EXPECT_EQ(r.cpus[0].remote_expiries_done, s.timers_expired_remote);
      EXPECT_GE(s.wakeups_by[static_cast<int>(WakeCause::task)] + 1, s.tasks_woken)
          << "the sleeper's CPU is woken by the IPI of the task's wakeup";
      EXPECT_EQ(s.wakeups_by[static_cast<int>(WakeCause::timer)], 0u);
    } else {
      EXPECT_EQ(s.timers_expired_remote, 0u);
      EXPECT_GE(s.timers_expired_local + 1, s.tasks_woken);
      EXPECT_GE(s.wakeups_by[static_cast<int>(WakeCause::timer)] + 1, s.tasks_woken) << "woken by its own timer";
      EXPECT_EQ(s.ipis_received, 0u);
    }
    for (const TimerRow& t : r.timers) EXPECT_EQ(t.base_cpu, 2) << "armed by the task on its own CPU";
  }
}

TEST(Engine, InvariantsHoldUnderAMixedLoad) {
  for (bool pull : {true, false}) {
    for (TmigrSetup setup : {TmigrSetup::v6_12, TmigrSetup::fixed}) {
      // 12 CPUs on 2 interleaved nodes: two levels, nodes mixed in v6_12.
      SimConfig c = base_config(12, pull);
      c.topology.nr_nodes = 2;
      c.topology.node_of_cpu.resize(12);
      for (unsigned i = 0; i < 12; ++i) c.topology.node_of_cpu[i] = static_cast<int>(i % 2);
      c.tmigr_setup = setup;
      c.check_invariants = true;
      c.duration_ns = 150 * kMs;
      TaskSpec t;
      for (unsigned i = 1; i < 12; ++i) t.cpus.push_back(i);
      t.run_ns = Dist{Dist::Kind::exponential, 100'000, 0};
      t.sleep_ns = Dist{Dist::Kind::exponential, 3e6, 0};
      t.timeouts = {1, Dist{Dist::Kind::uniform, 1e6, 50e6}, 0.5, Dist{Dist::Kind::exponential, 1e6, 0}, 0, 2};
      c.workload.tasks.push_back(t);
      TimeoutStreamSpec s;
      s.cpus = {3, 4, 5};
      s.rate_hz = 300;
      s.timeouts = {1, Dist{Dist::Kind::uniform, 1e6, 20e6}, 0.3, Dist::constant(1e6), 0, 2};
      c.workload.streams.push_back(s);
      c.workload.busy_cpus = {0, 7};
      SimResult r;
      ASSERT_NO_THROW(r = simulate(c)) << "pull=" << pull;
      EXPECT_GT(r.timer_events, 500u);
    }
  }
}

TEST(Engine, BadConfigsAreRejected) {
  SimConfig c = base_config(4, true);
  c.duration_ns = -5;
  EXPECT_THROW(simulate(c), std::invalid_argument);
  c = base_config(4, true);
  c.hz = 64;
  EXPECT_THROW(simulate(c), std::invalid_argument);
  c = base_config(4, true);
  c.workload.busy_cpus = {9};
  EXPECT_THROW(simulate(c), std::invalid_argument);
  c = base_config(4, true);
  c.topology.nr_nodes = 5;
  EXPECT_THROW(simulate(c), std::invalid_argument);
  c = base_config(4, true);
  TaskSpec t = sleeper(1, 10);
  t.sleep_function = 42;
  c.workload.tasks.push_back(t);
  EXPECT_THROW(simulate(c), std::invalid_argument);
}

}  // namespace
