// Tests of hrtimers in the engine: a stopped tick wakes for the first
// hrtimer, the governor sees it, wakeups name it, PM QoS bounds the latency a
// cyclictest thread measures, a SCHED_FIFO task preempts, the latency parts
// add up, and a run stays a function of its seed.
#include <gtest/gtest.h>

#include <algorithm>

#include "timerlab/engine.hpp"

using namespace timerlab;

namespace {

constexpr std::int64_t kUs = 1000, kMs = 1'000'000;

// Function codes of base(): the wheel's sleep, an hrtimer sleep, the tick, the fair server.
enum : std::uint16_t { kProcessTimeout = 0, kHrtimerWakeup = 1, kTick = 2, kFairServer = 3 };

IdleTable skx() {
  // The skx preset's states (timerlab.idle_states): POLL, C1, C1E, C6.
  IdleTable t;
  t.busy_power_mw = 4500;
  t.states = {{"POLL", 0, 0, 4000, 0, true, false, false},
              {"C1", 2 * kUs, 2 * kUs, 1500, 0.01, false, false, false},
              {"C1E", 10 * kUs, 20 * kUs, 1000, 0.02, false, false, false},
              {"C6", 133 * kUs, 600 * kUs, 100, 0.6, false, false, false}};
  return t;
}

SimConfig base(unsigned cpus) {
  SimConfig c;
  c.topology.nr_cpus = cpus;
  c.topology.nr_nodes = 1;
  c.duration_ns = 1000 * kMs;
  c.workload.function_names = {"process_timeout", "hrtimer_wakeup", "tick_nohz_handler", "dl_task_timer"};
  c.tick_function = kTick;
  c.fair_server_function = kFairServer;
  c.rcu_needs_cpu = false;
  c.governor = "none";
  return c;
}

TaskSpec hrtimer_sleeper(std::vector<unsigned> cpus, SleepKind kind, std::int64_t sleep_ns, unsigned prio = 0) {
  TaskSpec t;
  t.cpus = std::move(cpus);
  t.run_ns = Dist::constant(20 * kUs);
  t.sleep_ns = Dist::constant(static_cast<double>(sleep_ns));
  t.sleep = kind;
  t.sleep_function = kHrtimerWakeup;
  t.rt_priority = prio;
  return t;
}

// cyclictest: clock_nanosleep ABS every interval, RT, measured.
TaskSpec cyclictest(std::vector<unsigned> cpus, std::int64_t interval_ns) {
  TaskSpec t = hrtimer_sleeper(std::move(cpus), SleepKind::clock_nanosleep, interval_ns, 99);
  t.run_ns = Dist::constant(2 * kUs);
  t.measure = Measure::cyclictest;
  return t;
}

TEST(EngineHrtimer, AStoppedTickWakesForTheFirstHrtimerAndTheWakeupNamesIt) {
  // One CPU, one task sleeping 10 ms in nanosleep (RT: no slack): the tick
  // stops and every idle period ends with hrtimer_wakeup, on time.
  SimConfig c = base(1);
  c.workload.tasks.push_back(hrtimer_sleeper({0}, SleepKind::nanosleep, 10 * kMs, 1));
  const SimResult r = simulate(c);
  const IdlePeriods& p = r.idle_periods;
  ASSERT_GT(p.size(), 90u);
  std::size_t by_hrtimer = 0;
  for (std::size_t i = 1; i < p.size(); ++i) {
    if (p.cause[i] == static_cast<std::uint8_t>(WakeCause::hrtimer)) {
      ++by_hrtimer;
      EXPECT_EQ(p.function[i], kHrtimerWakeup);
      EXPECT_EQ(p.duration_ns[i], 10 * kMs);  // run 20 µs, sleep 10 ms from its end, on time
    }
  }
  EXPECT_GE(by_hrtimer, p.size() - 2);
  EXPECT_GT(r.cpus[0].tick_stops, 90u);
  EXPECT_LT(r.cpus[0].ticks, 10u);  // the tick never ran while the CPU slept
  for (const HrtimerRow& h : r.hrtimers) {
    if (h.outcome != TimerOutcome::expired) continue;
    EXPECT_EQ(h.end_ns, h.expires_ns);  // no wake latency, entry or exit set: the handler runs on time
    EXPECT_EQ(h.cpu_expired, 0);
  }
}

TEST(EngineHrtimer, TheGovernorSeesTheNextHrtimer) {
  // Sleeps of 300 µs on average (exponential: no pattern to learn): in
  // nanosleep the governor's sleep length says how long each is and it
  // rarely picks C6 (target residency 600 µs) for a short one; woken by a
  // device interrupt instead (an opaque event) it sees only the tick, goes
  // deep and misses (above: a state left before its target residency).
  auto run = [](SleepKind kind) {
    SimConfig c = base(1);
    c.idle = skx();
    c.governor = "menu";
    TaskSpec t = hrtimer_sleeper({0}, kind, 300 * kUs, 1);
    t.sleep_ns = Dist{Dist::Kind::exponential, 300e3, 0};
    if (kind == SleepKind::external) t.sleep_function = kProcessTimeout;
    c.workload.tasks.push_back(t);
    return simulate(c);
  };
  const SimResult seen = run(SleepKind::nanosleep), unseen = run(SleepKind::external);
  const auto c6 = [](const SimResult& r) { return r.usage[0][3].usage; };
  const auto above = [](const SimResult& r) {
    std::uint64_t a = 0;
    for (const StateUsage& u : r.usage[0]) a += u.above;
    return a;
  };
  EXPECT_LT(c6(seen) * 3, c6(unseen)) << c6(seen) << " " << c6(unseen);
  EXPECT_LT(above(seen) * 3, above(unseen)) << above(seen) << " " << above(unseen);
}

// The largest latency of a cyclictest thread at 1 kHz on an skx CPU, and what
// the interrupt costs on the way (entry, the tick's handler in front of it,
// the time an idle CPU's interrupt keeps it awake, the switch, user space).
struct MaxLatency {
  std::int64_t max_ns = 0, samples = 0;
};

MaxLatency cyclictest_max(std::int64_t latency_req_ns, std::uint64_t seed) {
  SimConfig c = base(2);
  c.idle = skx();
  c.governor = "menu";
  c.seed = seed;
  c.latency_req_ns = latency_req_ns;
  c.latency = {500, 700, 300};
  c.callback_ns = {2000, 300, 1500, 500};
  c.wake_latency.stopped.quantiles_ns = {{1000, 4000, 20000}};
  c.wake_latency.tick.quantiles_ns = {{1000, 4000, 20000}};
  c.workload.tasks.push_back(cyclictest({0, 1}, 1 * kMs));
  const SimResult r = simulate(c);
  MaxLatency m;
  for (const LatencyRow& s : r.latency) {
    m.max_ns = std::max(m.max_ns, s.latency_ns);
    ++m.samples;
  }
  return m;
}

TEST(EngineHrtimer, PmQosZeroBoundsTheLatencyAndLiftingItAddsTheDeepStatesExit) {
  const std::int64_t interrupt = 2000 /*irq_ns*/ + 500 + 1500 /*a tick in front*/ + 700 + 300;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const MaxLatency qos0 = cyclictest_max(0, seed), free = cyclictest_max(INT64_MAX, seed);
    ASSERT_GT(qos0.samples, 1900);
    // POLL: no exit latency, no wake latency (the CPU is not halted).
    EXPECT_LE(qos0.max_ns, 0 + interrupt) << seed;
    // C6: its 133 µs exit, and the platform's wake latency (at most 20 µs).
    EXPECT_GE(free.max_ns - qos0.max_ns, 133 * kUs - interrupt) << seed;
    EXPECT_LE(free.max_ns - qos0.max_ns, 133 * kUs + 20 * kUs + interrupt) << seed;
  }
}

TEST(EngineHrtimer, LatencyPartsAddUpAndTheRunIsAFunctionOfItsSeed) {
  SimConfig c = base(4);
  c.idle = skx();
  c.governor = "teo";
  c.latency = {500, 700, 300};
  c.callback_ns = {2000, 300, 1500, 500};
  c.wake_latency.stopped.quantiles_ns = {{1000, 4000, 20000}};
  c.workload.tasks.push_back(cyclictest({0, 1, 2, 3}, 700 * kUs));
  TaskSpec noise = hrtimer_sleeper({0, 1, 2, 3}, SleepKind::poll, 3 * kMs);
  noise.sleep_ns = Dist{Dist::Kind::exponential, 3e6, 0};
  noise.run_ns = Dist{Dist::Kind::exponential, 50e3, 0};
  noise.per_cpu = 3;
  c.workload.tasks.push_back(noise);
  c.check_invariants = true;
  c.duration_ns = 120 * kMs;
  const SimResult a = simulate(c), b = simulate(c);
  ASSERT_GT(a.latency.size(), 500u);
  ASSERT_EQ(a.latency.size(), b.latency.size());
  for (std::size_t i = 0; i < a.latency.size(); ++i) {
    const LatencyRow& s = a.latency[i];
    EXPECT_EQ(s.window_ns + s.wake_ns + s.exit_latency_ns + s.irq_entry_ns + s.handler_wait_ns + s.sched_ns + s.user_ns,
              s.latency_ns);
    EXPECT_GE(s.handler_wait_ns, 0);
    EXPECT_GE(s.sched_ns, 700);
    ASSERT_EQ(s.latency_ns, b.latency[i].latency_ns);
    ASSERT_EQ(s.cpu, b.latency[i].cpu);
  }
  ASSERT_EQ(a.hrtimers.size(), b.hrtimers.size());
  for (std::size_t i = 0; i < a.hrtimers.size(); ++i) ASSERT_EQ(a.hrtimers[i].end_ns, b.hrtimers[i].end_ns);
  // Each armed instance ends once: expired, cancelled, re-armed or still pending.
  std::uint64_t expired = 0;
  for (const HrtimerRow& h : a.hrtimers) {
    expired += h.outcome == TimerOutcome::expired;
    if (h.outcome == TimerOutcome::expired) EXPECT_GE(h.end_ns, h.softexpires_ns);
  }
  // Every expiry but the tick's has its row (record_hrtimers no_tick).
  std::uint64_t counted = 0;
  for (const CpuCounters& cc : a.cpus) counted += cc.hrtimers_expired - cc.ticks;
  EXPECT_EQ(expired, counted);
}

TEST(EngineHrtimer, AFifoTaskPreemptsANormalOne) {
  // CPU 0 runs a normal task in 20 ms bursts; a SCHED_FIFO cyclictest thread
  // there still wakes within µs (it preempts), a SCHED_OTHER one waits.
  auto run = [](unsigned prio) {
    SimConfig c = base(1);
    c.latency = {500, 700, 300};
    TaskSpec hog = hrtimer_sleeper({0}, SleepKind::nanosleep, 1 * kMs);
    hog.run_ns = Dist::constant(20 * kMs);
    c.workload.tasks.push_back(hog);
    TaskSpec ct = cyclictest({0}, 1 * kMs);
    ct.rt_priority = prio;
    c.workload.tasks.push_back(ct);
    return simulate(c);
  };
  const SimResult fifo = run(99), other = run(0);
  std::int64_t fifo_max = 0, other_max = 0;
  for (const LatencyRow& s : fifo.latency) fifo_max = std::max(fifo_max, s.latency_ns);
  for (const LatencyRow& s : other.latency) other_max = std::max(other_max, s.latency_ns);
  EXPECT_GT(fifo.cpus[0].preemptions, 500u);
  EXPECT_LT(fifo_max, 20 * kUs);
  EXPECT_EQ(other.cpus[0].preemptions, 0u);
  EXPECT_GT(other_max, 5 * kMs);
}

}  // namespace
