// Tests of the hrtimer model (hrtimer.hpp) on its own, driven by a small
// host: queue order, the soft..hard window, placement's first-timer rule,
// the device a remote operation leaves alone, hang detection, forwarding —
// and a randomized run checking that no timer runs before its soft expiry
// and every started instance ends exactly once.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <random>

#include "timerlab/hrtimer.hpp"

using namespace timerlab;

namespace {

// A machine of `n` CPUs: a current CPU, a clock, which CPUs are busy, and a
// log of what ran where and when.
struct Host : HrtimerHost {
  explicit Host(unsigned n) : busy(n, false) {}
  unsigned cpu = 0;
  std::int64_t now = 0;
  std::int64_t callback_ns = 0;  // each callback moves the clock this much
  std::vector<bool> busy;
  std::vector<std::int64_t> device;
  struct Ran {
    HrtimerId t;
    unsigned cpu;
    std::int64_t at;
  };
  std::vector<Ran> ran;
  std::function<HrtimerRestart(HrtimerId, std::int64_t)> on_expiry;

  unsigned hrtimer_this_cpu() override { return cpu; }
  std::int64_t hrtimer_now() override { return now; }
  unsigned hrtimer_nohz_target() override {
    if (busy[cpu]) return cpu;
    for (unsigned c = 0; c < busy.size(); ++c) {
      if (busy[c]) return c;
    }
    return cpu;
  }
  bool hrtimer_tick_running() override { return busy[cpu]; }
  HrtimerRestart hrtimer_callback(HrtimerId t, std::int64_t at) override {
    ran.push_back({t, cpu, at});
    now += callback_ns;
    return on_expiry ? on_expiry(t, at) : HrtimerRestart::norestart;
  }
  void hrtimer_device_programmed(unsigned c, std::int64_t t) override {
    if (device.size() <= c) device.resize(c + 1, kHrtimerNever);
    device[c] = t;
  }
};

// Fire `cpu`'s device at its programmed time.
void fire(Host& host, Hrtimers& hr, unsigned cpu) {
  host.cpu = cpu;
  host.now = std::max(host.now, hr.base(cpu).device_next);
  if (hr.hrtimer_interrupt(cpu)) hr.hrtimer_run_softirq(cpu);
}

TEST(Hrtimer, ExpiresInHardOrderAndTiesInEnqueueOrder) {
  Host host(1);
  Hrtimers hr(1, {}, host);
  const HrtimerId a = hr.setup(0, false, 0), b = hr.setup(0, false, 0), c = hr.setup(0, false, 0);
  hr.start(a, 300, HRTIMER_MODE_ABS);
  hr.start(b, 100, HRTIMER_MODE_ABS);
  hr.start(c, 300, HRTIMER_MODE_ABS);
  EXPECT_EQ(hr.base(0).device_next, 100);
  fire(host, hr, 0);
  fire(host, hr, 0);
  ASSERT_EQ(host.ran.size(), 3u);
  EXPECT_EQ(host.ran[0].t, b);
  EXPECT_EQ(host.ran[1].t, a);  // armed before c for the same time
  EXPECT_EQ(host.ran[2].t, c);
  EXPECT_EQ(hr.base(0).device_next, kHrtimerNever);
  EXPECT_EQ(hr.base(0).nr_events, 2u);
}

TEST(Hrtimer, AnOpenWindowWaitsBehindATimerWhoseWindowIsNot) {
  // g [10, 10], h [15, 16], i [5, 17]: the device fires at 10; g runs; h's
  // window is not open, so i — open since 5 — waits for the interrupt at 16.
  Host host(1);
  Hrtimers hr(1, {}, host);
  const HrtimerId g = hr.setup(0, false, 0), h = hr.setup(0, false, 0), i = hr.setup(0, false, 0);
  hr.start_range_ns(g, 10, 0, HRTIMER_MODE_ABS);
  hr.start_range_ns(h, 15, 1, HRTIMER_MODE_ABS);
  hr.start_range_ns(i, 5, 12, HRTIMER_MODE_ABS);
  fire(host, hr, 0);
  ASSERT_EQ(host.ran.size(), 1u);
  EXPECT_EQ(host.ran[0].t, g);
  EXPECT_EQ(hr.base(0).device_next, 16);
  fire(host, hr, 0);
  ASSERT_EQ(host.ran.size(), 3u);
  EXPECT_EQ(host.ran[1].t, h);
  EXPECT_EQ(host.ran[2].t, i);
  EXPECT_EQ(host.ran[2].at, 16);
}

TEST(Hrtimer, SlackLetsALaterTimerRunOnAnEarlierInterrupt) {
  Host host(1);
  Hrtimers hr(1, {}, host);
  const HrtimerId early = hr.setup(0, false, 0), slack = hr.setup(0, false, 0);
  hr.start_range_ns(slack, 1000, 50'000, HRTIMER_MODE_ABS);  // a 50 µs window
  hr.start(early, 20'000, HRTIMER_MODE_ABS);
  fire(host, hr, 0);
  ASSERT_EQ(host.ran.size(), 2u);  // one interrupt for both
  EXPECT_EQ(host.ran[1].t, slack);
  EXPECT_EQ(host.ran[1].at, 20'000);
}

TEST(Hrtimer, RelativeModeAddsNow) {
  Host host(1);
  host.now = 5000;
  Hrtimers hr(1, {}, host);
  const HrtimerId t = hr.setup(0, false, 0);
  hr.start_range_ns(t, 1000, 50, HRTIMER_MODE_REL);
  EXPECT_EQ(hr[t].softexpires, 6000);
  EXPECT_EQ(hr[t].expires, 6050);
}

TEST(Hrtimer, NeverBecomesARemoteCpusFirstTimer) {
  // CPU 0 idle arms a non-pinned timer; CPU 1 is busy (the nohz target).
  Host host(2);
  host.busy[1] = true;
  Hrtimers hr(2, {}, host);
  host.cpu = 1;
  const HrtimerId on1 = hr.setup(0, false, 0);
  hr.start(on1, 1000, HRTIMER_MODE_ABS);
  host.cpu = 0;
  const HrtimerId later = hr.setup(0, false, 0), earlier = hr.setup(0, false, 0), pinned = hr.setup(0, false, 0);
  EXPECT_EQ(hr.start(later, 2000, HRTIMER_MODE_ABS), 1u);    // behind CPU 1's first: pushed
  EXPECT_EQ(hr.start(earlier, 500, HRTIMER_MODE_ABS), 0u);   // would be CPU 1's first: stays
  EXPECT_EQ(hr.start(pinned, 3000, HRTIMER_MODE_ABS | HRTIMER_MODE_PINNED), 0u);
  EXPECT_EQ(hr.base(1).device_next, 1000);
  EXPECT_EQ(hr.check_invariants(), "");
  // kernel.timer_migration = 0: nothing moves.
  Host host2(2);
  host2.busy[1] = true;
  Hrtimers off(2, {false, false}, host2);
  EXPECT_EQ(off.start(off.setup(0, false, 0), 2000, HRTIMER_MODE_ABS), 0u);
}

TEST(Hrtimer, KeepLocalPushesOnlyFromACpuWhoseTickIsStopped) {
  Host host(2);
  host.busy[1] = true;
  Hrtimers hr(2, {true, true}, host);
  host.cpu = 1;
  hr.start(hr.setup(0, false, 0), 100, HRTIMER_MODE_ABS);
  // CPU 0's tick is stopped (not busy): pushed as before.
  host.cpu = 0;
  EXPECT_EQ(hr.start(hr.setup(0, false, 0), 2000, HRTIMER_MODE_ABS), 1u);
  // CPU 0's tick runs: kept, although CPU 1 would take it.
  host.busy[0] = true;
  host.busy[1] = true;
  EXPECT_EQ(hr.start(hr.setup(0, false, 0), 2000, HRTIMER_MODE_ABS), 0u);
}

TEST(Hrtimer, TheLocalFirstTimerRestartedStaysLocal) {
  // force_local: even with a busy CPU 1 to push to, CPU 0's next_timer
  // restarted on CPU 0 stays there and the device follows it.
  Host host(2);
  host.busy[1] = true;
  Hrtimers hr(2, {}, host);
  host.cpu = 0;
  const HrtimerId t = hr.setup(0, false, 0);
  hr.start(t, 100, HRTIMER_MODE_ABS);  // CPU 1 has no timer: would be its first -> stays
  ASSERT_EQ(hr[t].cpu, 0);
  hr.start(t, 5000, HRTIMER_MODE_ABS);
  EXPECT_EQ(hr[t].cpu, 0);
  EXPECT_EQ(hr.base(0).device_next, 5000);
}

TEST(Hrtimer, ARemoteCancelLeavesASpuriousInterrupt) {
  Host host(2);
  Hrtimers hr(2, {}, host);
  host.cpu = 1;
  const HrtimerId t = hr.setup(0, false, 0);
  hr.start(t, 1000, HRTIMER_MODE_ABS);
  host.cpu = 0;
  EXPECT_TRUE(hr.cancel(t));
  EXPECT_EQ(hr.base(1).device_next, 1000);  // CPU 1 was not told
  fire(host, hr, 1);
  EXPECT_TRUE(host.ran.empty());
  EXPECT_EQ(hr.base(1).device_next, kHrtimerNever);
  // A local cancel reprograms at once.
  host.cpu = 1;
  hr.start(t, 3000, HRTIMER_MODE_ABS);
  hr.cancel(t);
  EXPECT_EQ(hr.base(1).device_next, kHrtimerNever);
}

TEST(Hrtimer, HangDetectionAfterThreePasses) {
  // A callback taking 30 µs that restarts itself 10 µs ahead is always due
  // again: three passes, then the device waits as long as the interrupt took.
  Host host(1);
  host.callback_ns = 30'000;
  Hrtimers hr(1, {}, host);
  const HrtimerId t = hr.setup(0, false, 0);
  host.on_expiry = [&](HrtimerId id, std::int64_t at) {
    hr.forward(id, at, 10'000);
    return HrtimerRestart::restart;
  };
  hr.start(t, 10'000, HRTIMER_MODE_ABS);
  host.now = 10'000;
  hr.hrtimer_interrupt(0);
  const HrtimerCpuBase& b = hr.base(0);
  EXPECT_EQ(b.nr_retries, 3u);
  EXPECT_EQ(b.nr_hangs, 1u);
  EXPECT_TRUE(b.hang_detected);
  EXPECT_EQ(host.ran.size(), 3u);
  EXPECT_EQ(b.max_hang_time_ns, 90'000);
  EXPECT_EQ(b.device_next, host.now + 90'000);
  // While the hang delay holds, a new local first timer does not move the device.
  const HrtimerId u = hr.setup(0, false, 0);
  hr.start(u, host.now + 1, HRTIMER_MODE_ABS);
  EXPECT_EQ(b.device_next, host.now + 90'000);
}

TEST(Hrtimer, ForwardCountsOverruns) {
  Host host(1);
  Hrtimers hr(1, {}, host);
  const HrtimerId t = hr.setup(0, false, 0);
  hr[t].expires = hr[t].softexpires = 1000;
  EXPECT_EQ(hr.forward(t, 999, 100), 0u);   // not yet expired
  EXPECT_EQ(hr.forward(t, 1000, 100), 1u);  // now == expires: one period
  EXPECT_EQ(hr[t].expires, 1100);
  EXPECT_EQ(hr.forward(t, 1350, 100), 3u);  // 1200, 1300 missed
  EXPECT_EQ(hr[t].expires, 1400);
  EXPECT_EQ(hr.forward(t, 1600, 100), 3u);  // an exact multiple: past `now`
  EXPECT_EQ(hr[t].expires, 1700);
}

TEST(Hrtimer, SoftTimersRunFromTheSoftirq) {
  Host host(1);
  Hrtimers hr(1, {}, host);
  const HrtimerId s = hr.setup(0, true, 0), h = hr.setup(0, false, 0);
  hr.start(s, 100, HRTIMER_MODE_ABS | HRTIMER_MODE_SOFT);
  hr.start(h, 200, HRTIMER_MODE_ABS);
  EXPECT_EQ(hr.base(0).device_next, 100);  // the soft expiry programs the device too
  EXPECT_EQ(hr.next_event_without(0, kNoHrtimer), 100);
  host.now = 100;
  EXPECT_TRUE(hr.hrtimer_interrupt(0));  // raises HRTIMER_SOFTIRQ, runs no hard timer
  EXPECT_TRUE(host.ran.empty());
  EXPECT_EQ(hr.next_event_without(0, kNoHrtimer), 200);  // the raised soft queue does not count
  hr.hrtimer_run_softirq(0);
  ASSERT_EQ(host.ran.size(), 1u);
  EXPECT_EQ(host.ran[0].t, s);
  EXPECT_EQ(hr.base(0).device_next, 200);
}

TEST(Hrtimer, NextEventWithoutSkipsTheExcludedTimer) {
  Host host(1);
  Hrtimers hr(1, {}, host);
  const HrtimerId tick = hr.setup(0, false, 0), a = hr.setup(0, false, 0), b = hr.setup(0, false, 0);
  hr.start(tick, 100, HRTIMER_MODE_ABS | HRTIMER_MODE_PINNED);
  hr.start(a, 700, HRTIMER_MODE_ABS);
  hr.start(b, 300, HRTIMER_MODE_ABS);
  EXPECT_EQ(hr.next_event_without(0, tick), 300);
  EXPECT_EQ(hr.next_event_without(0, kNoHrtimer), 100);
}

TEST(Hrtimer, RandomRunsKeepEveryInvariant) {
  // Random starts (with slack, modes, CPUs), cancels and interrupts on 4
  // CPUs: no timer runs before its soft expiry, each start ends exactly once
  // (expiry, cancel or restart), the queues stay ordered.
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    Host host(4);
    Hrtimers hr(4, {}, host);
    std::vector<HrtimerId> ids;
    for (int i = 0; i < 40; ++i) ids.push_back(hr.setup(0, i % 5 == 0, 0));
    std::map<HrtimerId, int> live;  // started and not yet ended
    std::uint64_t starts = 0, ends = 0;
    host.on_expiry = [&](HrtimerId t, std::int64_t at) {
      EXPECT_GE(at, hr[t].softexpires);
      ++ends;
      --live[t];
      return HrtimerRestart::norestart;
    };
    for (int step = 0; step < 3000; ++step) {
      host.cpu = static_cast<unsigned>(rng() % 4);
      for (unsigned c = 0; c < 4; ++c) host.busy[c] = rng() % 2;
      const HrtimerId t = ids[rng() % ids.size()];
      switch (rng() % 4) {
        case 0:
        case 1: {
          if (hr[t].queued()) {
            ++ends;  // a restart ends the instance
            --live[t];
          }
          const std::uint8_t mode = static_cast<std::uint8_t>((rng() % 2 ? HRTIMER_MODE_PINNED : 0) |
                                                              (hr[t].is_soft ? HRTIMER_MODE_SOFT : 0));
          hr.start_range_ns(t, host.now + static_cast<std::int64_t>(rng() % 5000), static_cast<std::int64_t>(rng() % 3000),
                            mode);
          ++starts;
          ++live[t];
          break;
        }
        case 2:
          if (hr.cancel(t)) {
            ++ends;
            --live[t];
          }
          break;
        default: {
          // The earliest device fires.
          unsigned first = 0;
          for (unsigned c = 1; c < 4; ++c) {
            if (hr.base(c).device_next < hr.base(first).device_next) first = c;
          }
          if (hr.base(first).device_next != kHrtimerNever) fire(host, hr, first);
        }
      }
      ASSERT_EQ(hr.check_invariants(), "") << "seed " << seed << " step " << step;
    }
    std::uint64_t queued = 0;
    for (const HrtimerId t : ids) {
      queued += hr[t].queued();
      EXPECT_EQ(live[t], hr[t].queued() ? 1 : 0);
    }
    EXPECT_EQ(starts, ends + queued);
  }
}

}  // namespace
