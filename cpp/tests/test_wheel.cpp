// Tests of the timer wheel model (wheel.hpp, mod_timer.hpp) against the
// reference's worked examples (kernel-timers.md §1, §10) and its invariants.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "timerlab/standalone_wheel.hpp"

using namespace timerlab;

namespace {

constexpr jiffies_t kJ = 1'000'000;

TEST(WheelConstants, MatchReferenceTable) {
  const jiffies_t starts[] = {63, 504, 4032, 32256, 258048, 2064384, 16515072, 132120576, 1056964608};
  for (unsigned n = 1; n <= 9; ++n) EXPECT_EQ(LVL_START(n), starts[n - 1]) << n;
  EXPECT_EQ(LVL_DEPTH(1000), 9u);
  EXPECT_EQ(LVL_DEPTH(250), 9u);
  EXPECT_EQ(LVL_DEPTH(300), 9u);
  EXPECT_EQ(LVL_DEPTH(100), 8u);
  EXPECT_EQ(WHEEL_TIMEOUT_CUTOFF(9), 1056964608u);
  EXPECT_EQ(WHEEL_TIMEOUT_MAX(9), 1040187392u);
  EXPECT_EQ(WHEEL_TIMEOUT_CUTOFF(8), 132120576u);
  EXPECT_EQ(WHEEL_TIMEOUT_MAX(8), 130023424u);
  EXPECT_THROW(checked_lvl_depth(200), std::invalid_argument);
}

struct Example {
  jiffies_t delta;
  unsigned idx;
  jiffies_t bucket;
};

TEST(CalcWheelIndex, Reference10_1AlignedClock) {
  const Example ex[] = {{1, 2, 1000002},     {63, 80, 1000064},  {64, 81, 1000072},
                        {500, 71, 1000504},  {10000, 245, 1010176}, {0, 1, 1000001},
                        {62, 63, 1000063},   {503, 71, 1000504}, {504, 145, 1000512}};
  for (const auto& e : ex) {
    const WheelIndex wi = calc_wheel_index(kJ + e.delta, kJ, 9);
    EXPECT_EQ(wi.idx, e.idx) << "delta " << e.delta;
    EXPECT_EQ(wi.bucket_expiry, e.bucket) << "delta " << e.delta;
  }
}

TEST(CalcWheelIndex, Reference10_2MisalignedClock) {
  const jiffies_t j = 1'000'003;
  const Example ex[] = {{1, 5, 1000005}, {63, 81, 1000072}, {64, 81, 1000072}, {500, 71, 1000504},
                        {10000, 245, 1010176}};
  for (const auto& e : ex) {
    const WheelIndex wi = calc_wheel_index(j + e.delta, j, 9);
    EXPECT_EQ(wi.idx, e.idx) << "delta " << e.delta;
    EXPECT_EQ(wi.bucket_expiry, e.bucket) << "delta " << e.delta;
  }
}

TEST(CalcWheelIndex, Reference10_3SameRequestDifferentHz) {
  // 500 ms at HZ=250 is 125 jiffies; 10 s is 2500 jiffies.
  EXPECT_EQ(calc_wheel_index(kJ + 125, kJ, LVL_DEPTH(250)), (WheelIndex{88, 1000128}));
  EXPECT_EQ(calc_wheel_index(kJ + 2500, kJ, LVL_DEPTH(250)), (WheelIndex{177, 1002560}));
}

TEST(CalcWheelIndex, Reference10_4Clamping) {
  EXPECT_EQ(calc_wheel_index(kJ + 2'000'000'000ull, kJ, 9), (WheelIndex{575, 1056964608}));
  EXPECT_EQ(calc_wheel_index(kJ + 2'000'000'000ull, kJ, 8), (WheelIndex{511, 132120576}));
}

TEST(CalcWheelIndex, Depth8LastLevelTakesEverythingAboveLevel6) {
  const WheelIndex wi = calc_wheel_index(kJ + 16515072, kJ, 8);
  EXPECT_EQ(wi.idx / LVL_SIZE, 7u);
}

TEST(CalcWheelIndex, LevelAtEveryBoundaryAsTheKernelTestsThem) {
  // The kernel's calc_wheel_index compares delta with each LVL_START in turn;
  // the branch-free count must give the same level on both sides of every
  // boundary, at both depths.
  for (const unsigned depth : {8u, 9u}) {
    for (unsigned n = 1; n < depth - 1; ++n) {
      for (const jiffies_t delta : {LVL_START(n) - 1, LVL_START(n), LVL_START(n) + 1}) {
        unsigned lvl = 0;
        while (lvl + 1 < depth - 1 && delta >= LVL_START(lvl + 1)) ++lvl;
        const WheelIndex wi = calc_wheel_index(kJ + delta, kJ, depth);
        EXPECT_EQ(wi.idx / LVL_SIZE, lvl) << "depth " << depth << " delta " << delta;
      }
    }
  }
}

TEST(CalcWheelIndex, ExpiredTimerGoesToCurrentSlot) {
  const jiffies_t clk = 4294938600ull;
  EXPECT_EQ(calc_wheel_index(clk - 5, clk, 9), (WheelIndex{static_cast<unsigned>(clk & 63), clk}));
}

TEST(CalcWheelIndex, WrapsLikeUnsignedLong) {
  // A clock just below 2^64 and an expiry that wrapped past zero: delta 20.
  const jiffies_t clk = ~jiffies_t{0} - 9;
  const WheelIndex wi = calc_wheel_index(clk + 20, clk, 9);
  EXPECT_EQ(wi.idx, static_cast<unsigned>((clk + 21) & 63));
  EXPECT_EQ(wi.bucket_expiry, clk + 21);
  // Real traces: jiffies near 2^32 on a 64-bit kernel (the done-when example).
  EXPECT_EQ(calc_wheel_index(4294938528ull, 4294938527ull, 9), (WheelIndex{33, 4294938529ull}));
}

TEST(CalcWheelIndex, SlackBoundsOnRandomDeltas) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const jiffies_t clk = rng();
    const jiffies_t delta = rng() % WHEEL_TIMEOUT_CUTOFF(9);
    const WheelIndex wi = calc_wheel_index(clk + delta, clk, 9);
    const unsigned lvl = wi.idx / LVL_SIZE;
    const jiffies_t slack = wi.bucket_expiry - (clk + delta);
    ASSERT_GE(slack, 1u);
    ASSERT_LE(slack, LVL_GRAN(lvl));
    if (lvl > 0) ASSERT_LE(static_cast<double>(slack) / static_cast<double>(delta), 8.0 / 63.0 + 1e-12);
  }
}

// ---------------------------------------------------------------------------
// The base: enqueue, lazy next_expiry, forwarding, expiry.

struct Fired {
  TimerId t;
  jiffies_t baseclk;
  jiffies_t now;
};

TEST(TimerBase, StartsEmptyWithMaxDeltaSentinel) {
  StandaloneWheel w(250, kJ);
  EXPECT_EQ(w.base().clk(), kJ);
  EXPECT_EQ(w.base().next_expiry(), kJ + TIMER_NEXT_MAX_DELTA);
  EXPECT_FALSE(w.base().timers_pending());
}

TEST(TimerBase, DeleteMarksNextExpiryStaleAndForwardStopsThere) {
  StandaloneWheel w(250, kJ);
  const TimerId a = w.new_timer(0), b = w.new_timer(0);
  w.mod_timer(a, kJ + 10, MOD_TIMER_NOTPENDING);
  w.mod_timer(b, kJ + 40, MOD_TIMER_NOTPENDING);
  EXPECT_EQ(w.base().next_expiry(), kJ + 11);
  w.del_timer(a);
  // Not recomputed eagerly: the stale value stays until a recalculation.
  EXPECT_TRUE(w.base().next_expiry_recalc());
  EXPECT_EQ(w.base().next_expiry(), kJ + 11);
  // A forward to jiffies past the stale value stops at it (clk lags).
  w.base().forward_timer_base(kJ + 30);
  EXPECT_EQ(w.base().clk(), kJ + 11);
  EXPECT_EQ(w.base().next_timer_interrupt(kJ + 30), kJ + 41);
  EXPECT_FALSE(w.base().next_expiry_recalc());
  w.base().forward_timer_base(kJ + 30);
  EXPECT_EQ(w.base().clk(), kJ + 30);
  // Forwarding never rewinds.
  w.base().forward_timer_base(kJ + 20);
  EXPECT_EQ(w.base().clk(), kJ + 30);
  EXPECT_EQ(w.base().check_invariants(), "");
}

TEST(TimerBase, EmptyBaseNextTimerInterruptIsBasejPlusMaxDelta) {
  StandaloneWheel w(250, kJ);
  const TimerId a = w.new_timer(0);
  w.mod_timer(a, kJ + 10, MOD_TIMER_NOTPENDING);
  w.del_timer(a);
  EXPECT_EQ(w.base().next_timer_interrupt(kJ + 5), kJ + 5 + TIMER_NEXT_MAX_DELTA);
  EXPECT_FALSE(w.base().timers_pending());
}

TEST(TimerBase, SameBucketShortcutLogsNothing) {
  StandaloneWheel w(1000, 1'000'003);
  const TimerId t = w.new_timer(0);
  w.mod_timer(t, 1'000'003 + 63, 0);
  const std::size_t n = w.events().size();
  EXPECT_EQ(w.mod_timer(t, 1'000'003 + 64, 0), 1);  // same bucket 81 (reference §10.2)
  EXPECT_EQ(w.events().size(), n);
  EXPECT_EQ(w.pool()[t].expires, 1'000'003u + 64);
  EXPECT_EQ(w.mod_timer(t, 1'000'003 + 64, 0), 1);  // unchanged expiry: nothing at all
  EXPECT_EQ(w.events().size(), n);
  EXPECT_EQ(w.mod_timer(t, 1'000'003 + 500, 0), 1);  // new bucket: cancel + start
  ASSERT_EQ(w.events().size(), n + 2);
  EXPECT_EQ(w.events()[n].kind, WheelEventKind::timer_cancel);
  EXPECT_EQ(w.events()[n + 1].kind, WheelEventKind::timer_start);
}

TEST(TimerBase, ReduceAndPendingOnly) {
  StandaloneWheel w(250, kJ);
  const TimerId t = w.new_timer(0);
  EXPECT_EQ(w.mod_timer(t, kJ + 100, MOD_TIMER_PENDING_ONLY), 0);
  EXPECT_FALSE(w.pool()[t].pending());
  w.mod_timer(t, kJ + 100, 0);
  EXPECT_EQ(w.mod_timer(t, kJ + 300, MOD_TIMER_REDUCE), 1);
  EXPECT_EQ(w.pool()[t].expires, kJ + 100);
  EXPECT_EQ(w.mod_timer(t, kJ + 20, MOD_TIMER_REDUCE), 1);
  EXPECT_EQ(w.pool()[t].expires, kJ + 20);
}

TEST(TimerBase, RefusesJiffiesGoingBack) {
  StandaloneWheel w(250, 100);
  EXPECT_THROW(w.set_jiffies(99), std::invalid_argument);
}

TEST(TimerBase, CollectionOrderAcrossLevels) {
  StandaloneWheel w(1000, 0);
  std::vector<TimerId> ids;
  // Level 2 timer: armed at 0 for 505 -> bucket 512.
  TimerId l2 = w.new_timer(0);
  w.mod_timer(l2, 505, 0);
  ASSERT_EQ(w.bucket_expiry(l2), 512u);
  // Level 1 timer: armed at 400 for 507 (delta 107) -> bucket 512.
  w.run(400, false, nullptr);
  TimerId l1 = w.new_timer(0);
  w.mod_timer(l1, 507, 0);
  ASSERT_EQ(w.bucket_expiry(l1), 512u);
  // Two level 0 timers armed at 500 for 511 -> bucket 512.
  w.run(500, false, nullptr);
  TimerId l0a = w.new_timer(0), l0b = w.new_timer(0);
  w.mod_timer(l0a, 511, 0);
  w.mod_timer(l0b, 511, 0);
  std::vector<Fired> fired;
  w.run(512, false, [&](TimerId t, jiffies_t baseclk) { fired.push_back({t, baseclk, 512}); });
  ASSERT_EQ(fired.size(), 4u);
  EXPECT_EQ(fired[0].t, l2);
  EXPECT_EQ(fired[1].t, l1);
  EXPECT_EQ(fired[2].t, l0b);  // newest first within a bucket (hlist_add_head)
  EXPECT_EQ(fired[3].t, l0a);
  for (const auto& f : fired) EXPECT_EQ(f.baseclk, 512u);
}

TEST(TimerBase, RearmForNowLandsInNextJiffy) {
  StandaloneWheel w(250, kJ);
  const TimerId t = w.new_timer(0);
  w.mod_timer(t, kJ + 3, 0);
  int runs = 0;
  w.run(kJ + 10, false, [&](TimerId id, jiffies_t) {
    ++runs;
    if (runs < 5) w.mod_timer(id, w.jiffies(), 0);  // "now"
  });
  // The re-armed timer is in the bucket of clk = jiffies + 1, not run again now.
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(w.bucket_expiry(t), kJ + 11);
  w.run(kJ + 11, false, [&](TimerId, jiffies_t) { ++runs; });
  EXPECT_EQ(runs, 2);
}

TEST(TimerBase, CallbackMayDeleteACollectedTimer) {
  StandaloneWheel w(250, kJ);
  const TimerId a = w.new_timer(0), b = w.new_timer(0);
  w.mod_timer(a, kJ + 5, 0);
  w.mod_timer(b, kJ + 5, 0);  // b runs first (newest), then deletes a
  std::vector<TimerId> fired;
  w.run(kJ + 6, false, [&](TimerId t, jiffies_t) {
    fired.push_back(t);
    if (t == b) EXPECT_EQ(w.del_timer(a), 1);
  });
  EXPECT_EQ(fired, std::vector<TimerId>{b});
  EXPECT_EQ(w.base().pending_count(), 0u);
  EXPECT_EQ(w.base().check_invariants(), "");
}

// Seen in a real 6.18 trace (vm2-idle, line 48979): a level-3 and a level-2
// timer share a bucket expiry and are collected together while the base is
// catching up; the level-3 callback re-arms its timer, which forwards clk to
// jiffies, so the level-2 timer is traced with baseclk = jiffies - 1.
TEST(TimerBase, BaseclkIsReadPerListAfterEarlierCallbacks) {
  StandaloneWheel w(250, 0);
  const TimerId l3 = w.new_timer(TIMER_DEFERRABLE), l2 = w.new_timer(TIMER_DEFERRABLE);
  w.mod_timer(l3, 5000, 0);  // delta 5000 -> level 3, bucket 5120
  w.run(4200, false, nullptr);
  w.mod_timer(l2, 5100, 0);  // delta 900 -> level 2, bucket 5120
  ASSERT_EQ(w.bucket_expiry(l3), 5120u);
  ASSERT_EQ(w.bucket_expiry(l2), 5120u);
  std::vector<Fired> fired;
  w.run(5183, false, [&](TimerId t, jiffies_t baseclk) {
    fired.push_back({t, baseclk, 5183});
    if (t == l3) w.mod_timer(l3, 5183 + 7500, 0);
  });
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0].t, l3);
  EXPECT_EQ(fired[0].baseclk, 5120u);
  EXPECT_EQ(fired[1].t, l2);
  EXPECT_EQ(fired[1].baseclk, 5182u);
}

// Random operations against the reference's claim that, whatever the
// interleaving, each timer is collected exactly at its bucket expiry
// (collection clock == bucket_expiry recorded at enqueue), never early, and
// that the invariants hold throughout. Runs are sometimes every jiffy and
// sometimes after long jumps (the catch-up path).
TEST(TimerBase, RandomOperationsFireExactlyAtBucketExpiry) {
  for (unsigned hz : {100u, 250u, 1000u}) {
    std::mt19937_64 rng(hz);
    const jiffies_t start = (jiffies_t{1} << 32) - 300 * hz;  // INITIAL_JIFFIES
    StandaloneWheel w(hz, start);
    std::vector<TimerId> timers;
    for (int i = 0; i < 400; ++i) timers.push_back(w.new_timer(0));
    std::map<TimerId, jiffies_t> expected;  // pending timer -> bucket expiry
    std::size_t fired_total = 0;
    jiffies_t now = start;
    for (int step = 0; step < 40000; ++step) {
      const auto op = rng() % 10;
      const TimerId t = timers[rng() % timers.size()];
      if (op < 5) {
        const jiffies_t delta = (rng() % 4 == 0) ? rng() % 40000 : rng() % 300;
        w.mod_timer(t, now + delta, 0);
        expected[t] = w.bucket_expiry(t);
      } else if (op < 7) {
        w.del_timer(t);
        expected.erase(t);
      } else {
        now += (rng() % 8 == 0) ? rng() % 5000 : rng() % 3;
        w.run(now, false, [&](TimerId id, jiffies_t baseclk) {
          ++fired_total;
          auto it = expected.find(id);
          ASSERT_NE(it, expected.end());
          ASSERT_EQ(baseclk, it->second);
          ASSERT_TRUE(time_before_eq(baseclk, now));
          expected.erase(it);
        });
        // Nothing due may remain queued after a run.
        for (const auto& [id, bucket] : expected) ASSERT_TRUE(time_after(bucket, now)) << id;
      }
      if (step % 997 == 0) ASSERT_EQ(w.base().check_invariants(), "") << "hz " << hz << " step " << step;
    }
    EXPECT_GT(fired_total, 1000u);
    EXPECT_EQ(w.base().pending_count(), expected.size());
  }
}

}  // namespace
