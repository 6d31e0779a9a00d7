// Tests of the idle governors (menu.hpp, teo.hpp, governor.cpp) against the
// steps of kernel-timers.md §6.1 (menu, v6.15–v6.17) and §6.2 (teo, v6.17).
//
// Each scenario drives select/reflect with a scripted IdleContext standing in
// for the NOHZ code (sleep length, delta_tick, tick stopped) and asserts the
// state the reference's rules give, worked out by hand in the comments.
// Tables: Skylake-SP (skx) and Skylake client (skl) of reference §7, with the
// cpuidle core's POLL state at index 0. TICK = 4 ms (HZ = 250).
#include <gtest/gtest.h>

#include <array>
#include <climits>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "timerlab/idle.hpp"
#include "timerlab/menu.hpp"
#include "timerlab/teo.hpp"

using namespace timerlab;

namespace {

constexpr std::int64_t kUs = 1000;
constexpr std::int64_t kMs = 1000 * kUs;
constexpr std::int64_t kTick = 4 * kMs;

IdleState st(const char* name, std::int64_t exit_us, std::int64_t target_us, double power_mw = 0,
             double transition_uj = 0, bool polling = false) {
  IdleState s;
  s.name = name;
  s.exit_latency_ns = exit_us * kUs;
  s.target_residency_ns = target_us * kUs;
  s.power_mw = power_mw;
  s.transition_uj = transition_uj;
  s.polling = polling;
  return s;
}

// skx: POLL 0/0 · C1 2/2 · C1E 10/20 · C6 133/600 (µs). Powers are model
// parameters (idle.hpp) chosen for the oracle tests only.
IdleTable skx() {
  IdleTable t;
  t.states = {st("POLL", 0, 0, 2000, 0, true), st("C1", 2, 2, 1000, 0.1), st("C1E", 10, 20, 500, 1),
              st("C6", 133, 600, 50, 50)};
  t.busy_power_mw = 3000;
  return t;
}
constexpr int POLL = 0, C1 = 1, C1E = 2, C6 = 3;

// skl: POLL · C1 2/2 · C1E 10/20 · C3 70/100 · C6 85/200 · C7s 124/800 ·
// C8 200/800 · C9 480/5000 · C10 890/5000 (µs).
IdleTable skl() {
  IdleTable t;
  t.states = {st("POLL", 0, 0, 0, 0, true), st("C1", 2, 2),     st("C1E", 10, 20),
              st("C3", 70, 100),            st("C6", 85, 200),  st("C7s", 124, 800),
              st("C8", 200, 800),           st("C9", 480, 5000), st("C10", 890, 5000)};
  return t;
}
constexpr int SKL_C8 = 6, SKL_C9 = 7, SKL_C10 = 8;

// The NOHZ code as the governor sees it: scripted answers, and a count of
// the (costly) sleep-length reads.
struct FakeCtx final : IdleContext {
  std::int64_t sleep_ns = 10 * kMs;
  std::int64_t delta_tick_ns = 3 * kMs;  // next tick 3 ms away while it runs
  bool stopped = false;
  int calls = 0;
  std::int64_t get_sleep_length(std::int64_t* delta_tick) override {
    ++calls;
    *delta_tick = delta_tick_ns;
    return sleep_ns;
  }
  bool tick_stopped() const override { return stopped; }
};

struct Pick {
  int idx;
  bool stop_tick;
};

Pick sel(Governor& g, FakeCtx& ctx) {
  bool stop = true;  // cpuidle_idle_call starts with "stop the tick"
  const int idx = g.select(ctx, &stop);
  return {idx, stop};
}

GovernorParams params(const IdleTable& t, std::int64_t latency_req_ns = INT64_MAX, bool teo_fixed = true) {
  GovernorParams p;
  p.table = &t;
  p.tick_nsec = kTick;
  p.latency_req_ns = latency_req_ns;
  p.teo_tick_intercepts_fixed = teo_fixed;
  return p;
}

// Reflect a period whose menu-measured idle time is `measured_ns`: cpuidle's
// residency includes the exit latency, which menu subtracts (valid when
// measured_ns > exit latency, so that residency > 2 x exit latency).
void reflect_menu_measured(Governor& g, const IdleTable& t, int idx, std::int64_t measured_ns, bool got_tick = false) {
  g.reflect(idx, measured_ns + t.states[static_cast<std::size_t>(idx)].exit_latency_ns, got_tick);
}

// ---------------------------------------------------------------------------
// menu: the repeating-interval detector (get_typical_interval), step 1
// ---------------------------------------------------------------------------

using Ring = std::array<unsigned, menu::INTERVALS>;
constexpr unsigned kNone = menu::NO_INTERVAL;

TEST(MenuTypicalInterval, SteadyIntervalsGiveTheirAverage) {
  // All equal: variance 0 <= 400 -> the average.
  EXPECT_EQ(get_typical_interval(Ring{500, 500, 500, 500, 500, 500, 500, 500}), 500u);
  // Jitter of +-10 µs: sum 8000 -> avg 1000; sum of squares 8'000'250 -> /8 =
  // 1'000'031; variance 31 <= 400 -> the average.
  EXPECT_EQ(get_typical_interval(Ring{1000, 1010, 990, 1000, 1005, 995, 1000, 1000}), 1000u);
  // Spread 707 µs around 10 ms: variance 2.5e6/8 = 312'500 > 400, but
  // avg² = 1e8 > 36 * 312'500 = 11.25e6 with 8 >= 6 samples -> the average.
  EXPECT_EQ(get_typical_interval(Ring{10000, 10500, 9500, 10000, 11000, 9000, 10000, 10000}), 10000u);
}

TEST(MenuTypicalInterval, EmptyOrZeroRingGivesNoPrediction) {
  // Fresh ring: max == 0 -> "none" (UINT_MAX).
  EXPECT_EQ(get_typical_interval(Ring{}), kNone);
  // Rejected entries (UINT_MAX) sit on max_thresh and never take part.
  EXPECT_EQ(get_typical_interval(Ring{kNone, kNone, kNone, kNone, kNone, kNone, kNone, kNone}), kNone);
}

TEST(MenuTypicalInterval, OutlierEliminationDropsTheFarSide) {
  // Seven 500 µs and one 50 ms: avg 6687, variance huge -> rejected; avg-min =
  // 6187 <= max-avg = 43313 -> max_thresh = 50000 drops the high outlier;
  // the seven 500s have variance 0 -> 500.
  EXPECT_EQ(get_typical_interval(Ring{500, 500, 500, 50000, 500, 500, 500, 500}), 500u);
  // One 5 µs among seven 1000s: avg 875, variance 109'378 -> rejected
  // (avg² 765'625 < 36 * var); avg-min = 870 > max-avg = 125 -> min_thresh = 5
  // drops the low outlier -> 1000.
  EXPECT_EQ(get_typical_interval(Ring{1000, 1000, 5, 1000, 1000, 1000, 1000, 1000}), 1000u);
}

TEST(MenuTypicalInterval, NoisyIntervalsAreRejected) {
  // Geometric 100..12800: round 1 (8 samples) avg 3187, rejected, drop 12800
  // (avg-min 3087 <= max-avg 9613); round 2 (7) avg 1814, rejected, drop
  // 6400; round 3 (6 samples: 100..3200) avg 1050, variance 1'172'500,
  // rejected, and 6 <= 3/4 of 8: give up -> >= 4 samples remain -> their max.
  EXPECT_EQ(get_typical_interval(Ring{100, 200, 400, 800, 1600, 3200, 6400, 12800}), 3200u);
  // Four rejected entries and four noisy values: 4 samples, avg 4025,
  // variance 15'301'875 -> rejected; 4 <= 6 and 4 >= 4 -> max = 10000.
  EXPECT_EQ(get_typical_interval(Ring{kNone, 100, kNone, 1000, kNone, 10000, kNone, 5000}), 10000u);
  // Five rejected, three noisy: 3 samples rejected and 3 < 4 -> "none".
  EXPECT_EQ(get_typical_interval(Ring{kNone, kNone, kNone, kNone, kNone, 100, 1000, 10000}), kNone);
}

TEST(MenuTypicalInterval, SixfoldRuleNeedsSixSamples) {
  // Five samples around 10 ms (three slots rejected): avg 10000, variance
  // 500'000 -> avg² > 36 var, but 5 < 6 samples and var > 400 -> not accepted;
  // 5 <= 6 -> give up with the max (11000).
  EXPECT_EQ(get_typical_interval(Ring{kNone, 10000, 10500, kNone, 9500, 11000, kNone, 9000}), 11000u);
  // The same with a sixth sample (10000): avg 10000, var 416'666, 6 samples ->
  // accepted -> 10000.
  EXPECT_EQ(get_typical_interval(Ring{kNone, 10000, 10500, kNone, 9500, 11000, 10000, 9000}), 10000u);
}

TEST(MenuTypicalInterval, KeptRingViewMatchesTheRing) {
  // select keeps the ring sorted and its sums running as samples replace one
  // another; the detector over that view must be the detector over the ring,
  // through duplicates, zeros, rejected entries (UINT_MAX), samples clamped
  // to UINT_MAX - 1 (whose squares wrap the 64-bit sums) and selects with no
  // reflect in between.
  const IdleTable t = skx();
  MenuGovernor g(params(t));
  FakeCtx ctx;
  std::mt19937_64 rng(15);
  const std::int64_t kinds[] = {0, 5 * kUs, 300 * kUs, 1200 * kUs, 40 * kMs, INT64_MAX / 2};
  for (int k = 0; k < 20000; ++k) {
    // Now and then no timer for ages: the measured period is not clamped.
    ctx.sleep_ns = rng() % 8 == 0 ? INT64_MAX / 4 : static_cast<std::int64_t>(rng() % (200 * kMs));
    const Pick p = sel(g, ctx);
    ASSERT_EQ(g.typical_interval_us(), get_typical_interval(g.intervals())) << "after select " << k;
    const unsigned r = static_cast<unsigned>(rng() % 16);
    if (r == 0) continue;                               // no reflect: a rejected entry at the next select
    if (r == 1) {
      g.reflect(-1, 0, false);                          // rejected by the driver
    } else if (r < 8) {
      g.reflect(p.idx, kinds[r % 6], r == 3);           // repeated values
    } else {
      g.reflect(p.idx, static_cast<std::int64_t>(rng() % (60 * kMs)), false);
    }
  }
}

TEST(MenuWhichBucket, Decades) {
  EXPECT_EQ(which_bucket(0), 0);
  EXPECT_EQ(which_bucket(9'999), 0);
  EXPECT_EQ(which_bucket(10'000), 1);
  EXPECT_EQ(which_bucket(99'999), 1);
  EXPECT_EQ(which_bucket(100'000), 2);
  EXPECT_EQ(which_bucket(1'000'000), 3);
  EXPECT_EQ(which_bucket(10'000'000), 4);
  EXPECT_EQ(which_bucket(99'999'999), 4);
  EXPECT_EQ(which_bucket(100'000'000), 5);
  EXPECT_EQ(which_bucket(UINT64_MAX), 5);
}

// ---------------------------------------------------------------------------
// menu: select
// ---------------------------------------------------------------------------

TEST(MenuSelect, FreshGovernorFollowsTheTimer) {
  const IdleTable t = skx();
  MenuGovernor g(params(t));
  FakeCtx ctx;
  ctx.sleep_ns = 10 * kMs;
  const Pick p = sel(g, ctx);
  // Step 2: empty ring -> no typical interval (UINT_MAX µs > 15 µs) -> the
  // sleep length is read; bucket 4, factor 8192 (unity): timer_us =
  // (4'096'000 + 10e6 * 8192) / 8'192'000 = 10000 -> predicted 10 ms.
  EXPECT_EQ(ctx.calls, 1);
  EXPECT_EQ(g.bucket(), 4);
  EXPECT_EQ(g.predicted_ns(), 10 * kMs);
  // Step 5: every target (<= 600 µs) fits 10 ms -> C6; step 6: 10 ms >= TICK
  // and C6 does not poll -> the tick may stop.
  EXPECT_EQ(p.idx, C6);
  EXPECT_TRUE(p.stop_tick);
}

TEST(MenuSelect, SteadyIntervalsOverrideTheTimer) {
  const IdleTable t = skx();
  MenuGovernor g(params(t));
  FakeCtx ctx;
  ctx.sleep_ns = 100 * kMs;  // bucket 5
  // Periods of 500 µs (measured) while the next timer is 100 ms away.
  // Ring after n periods: n x 500 and 8-n zeros (fresh slots take part).
  //   n <= 4: e.g. n = 4: avg 250, rejected; avg-min = max-avg -> max_thresh
  //           = 500 leaves only zeros -> none.
  //   Factor of bucket 5 per period: f - f/8 + 1024*500e3/100e6 (= 5):
  //           8192 -> 7173 -> 6282 -> 5502 -> 4820 -> 4223.
  for (int n = 0; n < 5; ++n) {
    const Pick p = sel(g, ctx);
    // Step 2: typical none -> predicted = timer (>= 58.8 ms with f = 4820)
    // -> C6, tick stopped (step 6: >= TICK).
    EXPECT_EQ(p.idx, C6) << "period " << n;
    EXPECT_TRUE(p.stop_tick) << "period " << n;
    reflect_menu_measured(g, t, p.idx, 500 * kUs);
  }
  EXPECT_EQ(ctx.calls, 5);  // typical none (> 15 µs): the sleep length is read each time
  const Pick p = sel(g, ctx);
  // Step 1: {500 x5, 0 x3}: avg 312, rejected; avg-min 312 > max-avg 188 ->
  // min_thresh = 0 drops the zeros; five 500s -> variance 0 -> typical 500 µs.
  EXPECT_EQ(g.correction_factor(5), 4223u);
  // Step 2: predicted = min(timer 51.55 ms, typical 500 µs) = 500 µs (the
  // sleep length is still read: 500 µs > 15 µs).
  EXPECT_EQ(ctx.calls, 6);
  EXPECT_EQ(g.predicted_ns(), 500 * kUs);
  // Step 5: C6's 600 µs > 500 µs and 500 µs < TICK -> stop the scan at C1E.
  // Step 6: predicted < TICK with the tick running -> keep the tick; C1E's
  // 20 µs <= delta_tick (3 ms) -> no step down.
  EXPECT_EQ(p.idx, C1E);
  EXPECT_FALSE(p.stop_tick);

  // Step 4: the same prediction with the tick already stopped: a shallow
  // state without a tick could be stuck -> predicted = next_timer = 100 ms.
  reflect_menu_measured(g, t, p.idx, 500 * kUs);
  ctx.stopped = true;
  const Pick q = sel(g, ctx);
  EXPECT_EQ(g.predicted_ns(), 100 * kMs);
  // Scan: all targets fit 100 ms -> C6; step 6 does not apply (tick stopped).
  EXPECT_EQ(q.idx, C6);
  EXPECT_TRUE(q.stop_tick);
}

TEST(MenuSelect, ShortTypicalIntervalSkipsTheSleepLength) {
  const IdleTable t = skx();
  MenuGovernor g(params(t));
  FakeCtx ctx;
  ctx.sleep_ns = 30 * kUs;
  Pick p = sel(g, ctx);
  // Fresh: timer: bucket 1, timer_us = (4'096'000 + 30e3 * 8192) / 8'192'000
  // = 30 -> 30 µs. Scan: C1E (20 µs) fits, C6 (600) does not and 30 µs <
  // TICK -> C1E; step 6: keep the tick.
  EXPECT_EQ(ctx.calls, 1);
  EXPECT_EQ(p.idx, C1E);
  EXPECT_FALSE(p.stop_tick);
  // C1E residency 20 µs: not more than 2 x 10 µs exit -> measured = 10 µs.
  g.reflect(C1E, 20 * kUs, false);

  p = sel(g, ctx);
  // Update: factor[1] = 8192 - 1024 + 1024 * 10e3 / 30e3 (= 341) = 7509.
  EXPECT_EQ(g.correction_factor(1), 7509u);
  EXPECT_EQ(g.intervals()[0], 10u);
  // Step 1: {10, 0 x7}: avg 1, variance 12 - 1 = 11 <= 400 -> typical 1 µs.
  // Step 2: 1 µs <= RESIDENCY_THRESHOLD (15 µs) -> the sleep length is NOT
  // read: next_timer = KTIME_MAX, delta_tick = TICK/2, bucket 5.
  EXPECT_EQ(ctx.calls, 1);
  EXPECT_EQ(g.next_timer_ns(), INT64_MAX);
  EXPECT_EQ(g.bucket(), 5);
  // Step 5, polling special case: POLL is the pick and C1's 2 µs > 1 µs,
  // but C1's target <= next_timer -> take C1 (predicted = 2 µs) rather than
  // busy-poll. Step 6: 2 µs < TICK -> keep the tick.
  EXPECT_EQ(p.idx, C1);
  EXPECT_FALSE(p.stop_tick);
  EXPECT_EQ(g.predicted_ns(), 2 * kUs);

  // C1 residency 12 µs > 2 x 2 µs exit -> measured 10 µs; with next_timer =
  // KTIME_MAX the bucket-5 factor decays: 8192 - 1024 + 0 = 7168.
  g.reflect(C1, 12 * kUs, false);
  p = sel(g, ctx);
  EXPECT_EQ(g.correction_factor(5), 7168u);
  // {10, 10, 0 x6}: avg 2, variance 25 - 4 = 21 -> typical 2 µs: no read.
  EXPECT_EQ(ctx.calls, 1);
  EXPECT_EQ(p.idx, C1);
}

TEST(MenuSelect, CorrectionFactorConvergesAfterEarlyWakeups) {
  const IdleTable t = skx();
  MenuGovernor g(params(t));
  FakeCtx ctx;
  ctx.sleep_ns = 1200 * kUs;
  Pick p = sel(g, ctx);
  // Fresh: bucket 3, unity factor -> predicted 1.2 ms -> C6 (600 µs fits);
  // 1.2 ms < TICK with the tick running -> keep the tick.
  EXPECT_EQ(p.idx, C6);
  EXPECT_FALSE(p.stop_tick);
  // Wakeups always at 1/4 of the sleep length; sleep lengths cycle through
  // bucket 3 so the measured intervals {300, 2400, 600, 1200} µs stay noisy:
  // the ring ends with two of each, the detector drops 2400 (avg 1125,
  // avg-min 825 <= max-avg 1275), then gives up at 6 samples -> max 1200 µs.
  // Each update adds 1024 * 1/4 = 256: factor <- f - f/8 + 256, which goes
  // from 8192 towards 2048 and stops in [2048, 2055] (f/8 rounds to 256).
  const std::int64_t sleeps[] = {1200 * kUs, 9600 * kUs, 2400 * kUs, 4800 * kUs};
  for (int k = 0; k < 64; ++k) {
    reflect_menu_measured(g, t, p.idx, ctx.sleep_ns / 4);
    ctx.sleep_ns = sleeps[(k + 1) % 4];
    p = sel(g, ctx);
  }
  // The last select (k = 63) ran with sleeps[0] = 1.2 ms after the update.
  EXPECT_EQ(ctx.sleep_ns, 1200 * kUs);
  EXPECT_GE(g.correction_factor(3), 2048u);
  EXPECT_LE(g.correction_factor(3), 2055u);
  EXPECT_EQ(get_typical_interval(g.intervals()), 1200u);
  // timer_us = (4'096'000 + 1.2e6 * f) / 8'192'000 = 300 or 301 µs < typical
  // 1200 µs -> predicted ~300 µs: C6's 600 µs no longer fits -> C1E, where
  // the fresh governor chose C6 for the same sleep length.
  EXPECT_GE(g.predicted_ns(), 300 * kUs);
  EXPECT_LE(g.predicted_ns(), 301 * kUs);
  EXPECT_EQ(p.idx, C1E);
  EXPECT_FALSE(p.stop_tick);
}

TEST(MenuSelect, StateZeroEarlyReturn) {
  const IdleTable t = skx();
  {
    // Step 3: next_timer 1 µs < C1's target 2 µs and POLL enabled -> state 0;
    // POLL polls -> keep the tick.
    MenuGovernor g(params(t));
    FakeCtx ctx;
    ctx.sleep_ns = 1 * kUs;
    const Pick p = sel(g, ctx);
    EXPECT_EQ(p.idx, POLL);
    EXPECT_FALSE(p.stop_tick);
  }
  {
    // Step 3: latency_req 1 µs < C1's exit latency 2 µs -> state 0.
    MenuGovernor g(params(t, 1 * kUs));
    FakeCtx ctx;
    const Pick p = sel(g, ctx);
    EXPECT_EQ(p.idx, POLL);
    EXPECT_FALSE(p.stop_tick);
  }
  {
    // Step 3: latency_req == 0 -> state 0.
    MenuGovernor g(params(t, 0));
    FakeCtx ctx;
    EXPECT_EQ(sel(g, ctx).idx, POLL);
  }
  {
    // Step 3 with a non-polling state 0 (skx without POLL): next_timer 5 µs <
    // C1E's 20 µs -> state 0 (C1), and the tick may stop (C1 does not poll).
    IdleTable np = skx();
    np.states.erase(np.states.begin());
    MenuGovernor g(params(np));
    FakeCtx ctx;
    ctx.sleep_ns = 5 * kUs;
    const Pick p = sel(g, ctx);
    EXPECT_EQ(p.idx, 0);
    EXPECT_TRUE(p.stop_tick);
  }
  {
    // Step 3 does not apply when state 0 is disabled: next_timer 1 µs ->
    // timer_us = (4'096'000 + 1000 * 8192) / 8'192'000 = 1 -> 1 µs; the scan
    // starts at C1 (first enabled), whose 2 µs > 1 µs < TICK -> stop at C1;
    // step 6 keeps the tick.
    IdleTable d = skx();
    d.states[POLL].disabled = true;
    MenuGovernor g(params(d));
    FakeCtx ctx;
    ctx.sleep_ns = 1 * kUs;
    const Pick p = sel(g, ctx);
    EXPECT_EQ(p.idx, C1);
    EXPECT_FALSE(p.stop_tick);
  }
}

TEST(MenuSelect, KeepTickStepsDownToDeltaTick) {
  const IdleTable t = skx();
  MenuGovernor g(params(t));
  FakeCtx ctx;
  ctx.sleep_ns = 3 * kMs;
  ctx.delta_tick_ns = 500 * kUs;
  const Pick p = sel(g, ctx);
  // Predicted 3 ms -> scan picks C6; step 6: 3 ms < TICK and the tick runs ->
  // keep it; C6's 600 µs > delta_tick 500 µs -> step down to the deepest
  // enabled state with target <= 500 µs: C1E.
  EXPECT_EQ(p.idx, C1E);
  EXPECT_FALSE(p.stop_tick);

  // Same with C1E disabled: the step-down skips it -> C1 (2 µs <= 500 µs).
  IdleTable d = skx();
  d.states[C1E].disabled = true;
  MenuGovernor g2(params(d));
  FakeCtx ctx2 = ctx;
  ctx2.calls = 0;
  const Pick q = sel(g2, ctx2);
  EXPECT_EQ(q.idx, C1);
  EXPECT_FALSE(q.stop_tick);
}

TEST(MenuSelect, LatencyLimitStopsTheScan) {
  const IdleTable t = skx();
  MenuGovernor g(params(t, 50 * kUs));
  FakeCtx ctx;
  ctx.sleep_ns = 100 * kMs;
  const Pick p = sel(g, ctx);
  // Step 5: C6's exit latency 133 µs > 50 µs -> stop at C1E; 100 ms >= TICK
  // -> the tick may stop.
  EXPECT_EQ(p.idx, C1E);
  EXPECT_TRUE(p.stop_tick);
}

// skl warmed with five 4.5 ms periods (next timer 100 ms away): the ring
// {4500 x5, 0 x3} gives typical 4500 µs (zeros dropped, then variance 0).
MenuGovernor warmed_skl_menu(const IdleTable& t) {
  MenuGovernor g(params(t));
  FakeCtx warm;
  warm.sleep_ns = 100 * kMs;
  for (int n = 0; n < 5; ++n) {
    const Pick p = sel(g, warm);
    reflect_menu_measured(g, t, p.idx, 4500 * kUs);
  }
  return g;
}

TEST(MenuSelect, ManyStatesTickRules) {
  const IdleTable t = skl();
  {
    // Tick stopped, sleep 6 ms (bucket 3, factor unity -> 6 ms), typical
    // 4.5 ms -> predicted 4.5 ms (>= TICK, so step 4 leaves it). Scan: up to
    // C8 (800 µs) fits; C9's 5 ms > 4.5 ms, predicted >= TICK, tick stopped:
    // C8's 800 µs < TICK and C9's 5 ms <= delta_tick 6 ms -> take C9.
    MenuGovernor g = warmed_skl_menu(t);
    FakeCtx ctx;
    ctx.stopped = true;
    ctx.sleep_ns = 6 * kMs;
    ctx.delta_tick_ns = 6 * kMs;
    const Pick p = sel(g, ctx);
    EXPECT_EQ(g.predicted_ns(), 4500 * kUs);
    EXPECT_EQ(p.idx, SKL_C9);
    EXPECT_TRUE(p.stop_tick);
  }
  {
    // Same, but the next event is 4.9 ms away: C9's 5 ms does not fit
    // delta_tick -> stay at C8.
    MenuGovernor g = warmed_skl_menu(t);
    FakeCtx ctx;
    ctx.stopped = true;
    ctx.sleep_ns = 6 * kMs;
    ctx.delta_tick_ns = 4900 * kUs;
    EXPECT_EQ(sel(g, ctx).idx, SKL_C8);
  }
  {
    // Tick running: at C9 (5 ms > 4.5 ms), predicted >= TICK and the tick is
    // not stopped -> stop at C8 with predicted = C8's 800 µs, so step 6 keeps
    // the tick (800 µs < TICK; 800 µs <= delta_tick 3 ms: no step down).
    MenuGovernor g = warmed_skl_menu(t);
    FakeCtx ctx;
    ctx.sleep_ns = 6 * kMs;
    const Pick p = sel(g, ctx);
    EXPECT_EQ(p.idx, SKL_C8);
    EXPECT_FALSE(p.stop_tick);
    EXPECT_EQ(g.predicted_ns(), 800 * kUs);
  }
}

// ---------------------------------------------------------------------------
// menu: update (menu_update, run at the next select)
// ---------------------------------------------------------------------------

TEST(MenuUpdate, ReflectOnlyRecordsTheUpdateRunsAtNextSelect) {
  const IdleTable t = skx();
  MenuGovernor g(params(t));
  FakeCtx ctx;
  ctx.sleep_ns = 100 * kMs;
  const Pick p = sel(g, ctx);
  ASSERT_EQ(p.idx, C6);
  g.reflect(C6, 4 * kMs, false);
  // reflect only sets needs_update: nothing learnt yet.
  EXPECT_EQ(g.intervals()[0], 0u);
  EXPECT_EQ(g.correction_factor(5), 8192u);
  sel(g, ctx);
  // measured = 4 ms - 133 µs (> 2 x exit) = 3867 µs; factor[5] = 8192 - 1024
  // + 1024 * 3.867e6 / 100e6 (= 39) = 7207.
  EXPECT_EQ(g.intervals()[0], 3867u);
  EXPECT_EQ(g.correction_factor(5), 7207u);
}

TEST(MenuUpdate, TickWakeupBeyondTheTickCountsAsLongIdle) {
  const IdleTable t = skx();
  MenuGovernor g(params(t));
  FakeCtx ctx;
  ctx.sleep_ns = 100 * kMs;
  sel(g, ctx);
  g.reflect(C6, 4 * kMs, /*got_tick=*/true);
  sel(g, ctx);
  // The tick woke a CPU whose next timer was 100 ms > TICK away -> measured =
  // 9/10 x 50 ms = 45 ms; factor[5] = 7168 + 1024 * 45e6 / 100e6 (= 460).
  EXPECT_EQ(g.intervals()[0], 45000u);
  EXPECT_EQ(g.correction_factor(5), 7628u);

  // A tick wakeup when the next timer was within a tick is genuine: sleep
  // 3 ms -> C6 (tick kept); residency 2.5 ms -> 2.5 ms - 133 µs = 2367 µs.
  MenuGovernor h(params(t));
  FakeCtx c2;
  c2.sleep_ns = 3 * kMs;
  ASSERT_EQ(sel(h, c2).idx, C6);
  h.reflect(C6, 2500 * kUs, true);
  sel(h, c2);
  EXPECT_EQ(h.intervals()[0], 2367u);
}

TEST(MenuUpdate, ExitLatencyDeductionAndClamp) {
  const IdleTable t = skx();
  {
    // Residency 200 µs in C6 is not more than 2 x 133 µs -> halve: 100 µs.
    MenuGovernor g(params(t));
    FakeCtx ctx;
    ctx.sleep_ns = 100 * kMs;
    sel(g, ctx);
    g.reflect(C6, 200 * kUs, false);
    sel(g, ctx);
    EXPECT_EQ(g.intervals()[0], 100u);
  }
  {
    // Sleep 50 µs (bucket 1) -> C1E. Residency 1 ms -> 990 µs, clamped to the
    // sleep length 50 µs (no factor above unity): factor[1] = 7168 + 1024.
    MenuGovernor g(params(t));
    FakeCtx ctx;
    ctx.sleep_ns = 50 * kUs;
    ASSERT_EQ(sel(g, ctx).idx, C1E);
    g.reflect(C1E, 1 * kMs, false);
    sel(g, ctx);
    EXPECT_EQ(g.intervals()[0], 50u);
    EXPECT_EQ(g.correction_factor(1), 8192u);
  }
}

TEST(MenuUpdate, RejectedEntryPoisonsTheRing) {
  const IdleTable t = skx();
  MenuGovernor g(params(t));
  FakeCtx ctx;
  sel(g, ctx);
  g.reflect(-1, 0, false);  // the driver rejected the state
  sel(g, ctx);
  // No update ran (factor untouched); the ring slot gets UINT_MAX.
  EXPECT_EQ(g.intervals()[0], kNone);
  EXPECT_EQ(g.correction_factor(4), 8192u);
  // A select with no reflect since the last one is a rejection too.
  sel(g, ctx);
  EXPECT_EQ(g.intervals()[1], kNone);
}

// ---------------------------------------------------------------------------
// teo
// ---------------------------------------------------------------------------

// Reflect a period whose teo-measured idle time is `measured_ns` (teo takes
// half the exit latency off; valid when the residency >= the exit latency).
void reflect_teo_measured(Governor& g, const IdleTable& t, int idx, std::int64_t measured_ns, bool got_tick = false) {
  g.reflect(idx, measured_ns + t.states[static_cast<std::size_t>(idx)].exit_latency_ns / 2, got_tick);
}

// Three timer wakeups at 10 ms (hits in C6's bin) and then early wakeups
// after ~150 µs of idle (intercepts in C1E's bin), sleep length 10 ms.
// Returns the picks of selects 1..8.
std::vector<Pick> teo_hits_then_intercepts(TeoGovernor& g, FakeCtx& ctx, bool stop_at_7 = false) {
  std::vector<Pick> picks;
  for (int s = 1; s <= 8; ++s) {
    if (s == 7 && stop_at_7) ctx.stopped = true;
    const Pick p = sel(g, ctx);
    picks.push_back(p);
    if (s <= 3) {
      g.reflect(p.idx, 10 * kMs, false);  // measured ~9.93 ms: same bin as the sleep length -> hit
    } else {
      g.reflect(p.idx, 200 * kUs, false);  // measured 133.5 µs (C6) or 195 µs (C1E): C1E's bin
    }
  }
  return picks;
}

TEST(TeoSelect, RepeatedEarlyWakeupsMoveTheChoiceShallower) {
  const IdleTable t = skx();
  TeoGovernor g(params(t));
  FakeCtx ctx;
  const std::vector<Pick> p = teo_hits_then_intercepts(g, ctx);
  // Selects 1-4: only hits (C6's bin) so far -> no walk; sleep 10 ms fits
  // C6; 10 ms >= TICK -> stop the tick. Hits3 after 3 updates: 1024, 1920,
  // 2704 (x - x/8 + 1024), total likewise.
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(p[s].idx, C6) << "select " << s + 1;
    EXPECT_TRUE(p[s].stop_tick) << "select " << s + 1;
  }
  // Select 5: hits3 2366, intercepts2 1024, total 3390: 2 x 1024 > 3390 - 0?
  // no -> C6. Select 6: intercepts2 1920, total 3991: 3840 > 3991? no -> C6.
  EXPECT_EQ(p[4].idx, C6);
  EXPECT_EQ(p[5].idx, C6);
  EXPECT_TRUE(p[5].stop_tick);
  // Select 7: intercepts2 2704, total 4517: 5408 > 4517 -> walk down: at C1E
  // the running sum 2704 x 2 > 2704 -> C1E. Tick rule: tick_intercepts 2704 >
  // 4517/2 + 4517/8 = 2822? no -> duration = sleep length 10 ms -> stop.
  EXPECT_EQ(p[6].idx, C1E);
  EXPECT_TRUE(p[6].stop_tick);
  // Select 8: intercepts2 3390, tick_intercepts 3390 > 4977/2 + 4977/8 =
  // 3110 -> duration = TICK/2 -> keep the tick (C1E's 20 µs <= delta_tick).
  EXPECT_EQ(p[7].idx, C1E);
  EXPECT_FALSE(p[7].stop_tick);
  EXPECT_EQ(g.bins()[C6].hits, 1587u);
  EXPECT_EQ(g.bins()[C1E].intercepts, 3390u);
  EXPECT_EQ(g.total(), 4977u);
  EXPECT_EQ(g.tick_intercepts(), 3390u);
  EXPECT_EQ(ctx.calls, 8);  // C6/C1E targets >= 15 µs: the sleep length is always read
}

TEST(TeoSelect, SnapshotTickInterceptsBugKeepsShortInterceptsOutOfTheTickRule) {
  // The v6.17 snapshot counts an intercept in tick_intercepts only when
  // TICK <= measured: the ~150 µs intercepts never count, so at select 8 the
  // tick rule does not fire and the tick is stopped for C1E.
  const IdleTable t = skx();
  TeoGovernor g(params(t, INT64_MAX, /*teo_fixed=*/false));
  FakeCtx ctx;
  const std::vector<Pick> p = teo_hits_then_intercepts(g, ctx);
  EXPECT_EQ(p[6].idx, C1E);
  EXPECT_EQ(p[7].idx, C1E);
  EXPECT_EQ(g.tick_intercepts(), 0u);
  EXPECT_TRUE(p[7].stop_tick);
}

TEST(TeoSelect, TickStoppedKeepsOnlyStatesDeeperThanTheTick) {
  // The history of the previous test, but the tick is already stopped at
  // select 7: the walk reaches C1E (2 x 2704 > 2704) but teo_state_ok fails
  // (20 µs < TICK) -> the first suitable state, the candidate C6. With the
  // tick stopped the tick decision is skipped: stop_tick stays true.
  const IdleTable t = skx();
  TeoGovernor g(params(t));
  FakeCtx ctx;
  const std::vector<Pick> p = teo_hits_then_intercepts(g, ctx, /*stop_at_7=*/true);
  EXPECT_EQ(p[6].idx, C6);
  EXPECT_TRUE(p[6].stop_tick);
}

TEST(TeoSelect, ManyShortIdlesSkipTheSleepLength) {
  const IdleTable t = skx();
  TeoGovernor g(params(t));
  FakeCtx ctx;
  Pick p = sel(g, ctx);
  // Fresh: no metrics -> candidate C6, sleep length read (10 ms) -> C6.
  EXPECT_EQ(p.idx, C6);
  EXPECT_EQ(ctx.calls, 1);
  // Residency 8 µs < C6's exit 133 µs -> measured 4 µs (halved), a short
  // idle; bins: sleep 10 ms -> C6's bin, 4 µs -> C1's bin -> intercept.
  g.reflect(C6, 8 * kUs, false);
  p = sel(g, ctx);
  // Select 2: intercepts1 1024 = total: 2 x 1024 > 1024 -> walk: C1E's bin
  // adds 0 (C1E suitable), C1's bin brings 1024 > 1024/2 -> C1. Step 4: C1's
  // 2 µs < 15 µs and 2 x short_idles 2048 >= total 1024 -> return C1, keep
  // the tick, without reading the sleep length.
  EXPECT_EQ(p.idx, C1);
  EXPECT_FALSE(p.stop_tick);
  EXPECT_EQ(ctx.calls, 1);
  EXPECT_EQ(g.short_idles(), 1024u);
  EXPECT_EQ(g.predicted_ns(), 2 * kUs);  // no sleep length: C1's target
  // C1 residency 8 µs >= exit 2 µs -> measured 8 - 1 = 7 µs: short again; the
  // sleep length was not read (infinite) -> C6's bin vs C1's bin: intercept.
  g.reflect(C1, 8 * kUs, false);
  p = sel(g, ctx);
  // short_idles 1920, intercepts1 1920, total 1920 -> same walk -> C1, early.
  EXPECT_EQ(p.idx, C1);
  EXPECT_FALSE(p.stop_tick);
  EXPECT_EQ(ctx.calls, 1);
  // An artificial wakeup: the tick ends a period whose sleep length was not
  // read (infinite > TICK) -> measured = infinite: a hit in the deepest bin,
  // not an intercept, and not a short idle.
  g.reflect(C1, 4 * kMs, /*got_tick=*/true);
  p = sel(g, ctx);
  EXPECT_EQ(g.bins()[C6].hits, 1024u);
  EXPECT_EQ(g.bins()[C1].intercepts, 1680u);  // 1920 - 240, nothing added
  EXPECT_EQ(g.short_idles(), 1680u);
  EXPECT_EQ(g.total(), 2704u);
  // 2 x 1680 > 2704 - 0 -> walk -> C1; 2 x 1680 >= 2704 -> early return.
  EXPECT_EQ(p.idx, C1);
  EXPECT_EQ(ctx.calls, 1);
}

TEST(TeoSelect, TickInterceptsBeyondTheTickFixedVsSnapshot) {
  // skl: sleep 100 ms (C10's bin); a non-timer wakeup after 4.5 ms of idle
  // lands in C8's bin [800 µs, 5 ms) -> an intercept at 4.5 ms > TICK.
  const IdleTable t = skl();
  for (const bool fixed : {true, false}) {
    TeoGovernor g(params(t, INT64_MAX, fixed));
    FakeCtx ctx;
    ctx.sleep_ns = 100 * kMs;
    Pick p = sel(g, ctx);
    EXPECT_EQ(p.idx, SKL_C10);  // fresh: deepest state, 5 ms fits 100 ms
    EXPECT_TRUE(p.stop_tick);
    reflect_teo_measured(g, t, SKL_C10, 4500 * kUs);
    p = sel(g, ctx);
    // Walk: intercepts below C10 = 1024 = total -> walk; C9's bin 0 (C9
    // suitable), C8's bin 1024 > 512 -> C8. Sleep 100 ms fits C8's 800 µs.
    EXPECT_EQ(p.idx, SKL_C8) << "fixed=" << fixed;
    if (fixed) {
      // measured 4.5 ms > TICK: not an intercept before the tick -> the tick
      // rule does not fire -> duration 100 ms -> stop the tick.
      EXPECT_EQ(g.tick_intercepts(), 0u);
      EXPECT_TRUE(p.stop_tick);
    } else {
      // Snapshot: TICK <= 4.5 ms counts -> 1024 > 5/8 x 1024 -> duration =
      // TICK/2 -> the tick is kept for an idle pattern longer than a tick.
      EXPECT_EQ(g.tick_intercepts(), 1024u);
      EXPECT_FALSE(p.stop_tick);
    }
  }
}

TEST(TeoUpdate, TickInterceptsAtExactlyOneTick) {
  // measured == TICK_NSEC: the snapshot's "TICK <= measured" counts it, and
  // so does the kernel's fix, "measured <= TICK" (commit "cpuidle: governors:
  // teo: Fix tick_intercepts handling in teo_update()").
  const IdleTable t = skl();
  for (const bool fixed : {true, false}) {
    TeoGovernor g(params(t, INT64_MAX, fixed));
    FakeCtx ctx;
    ctx.sleep_ns = 100 * kMs;
    sel(g, ctx);
    reflect_teo_measured(g, t, SKL_C10, kTick);
    sel(g, ctx);
    EXPECT_EQ(g.bins()[SKL_C8].intercepts, 1024u);
    EXPECT_EQ(g.tick_intercepts(), 1024u) << "fixed=" << fixed;
  }
}

TEST(TeoUpdate, ArtificialTickWakeupCountsAsInfinite) {
  const IdleTable t = skl();
  TeoGovernor g(params(t));
  FakeCtx ctx;
  ctx.sleep_ns = 100 * kMs;
  sel(g, ctx);
  // The tick woke the CPU after 4 ms while the sleep length was 100 ms > TICK:
  // artificial -> measured infinite -> same bin as the sleep length: a hit.
  g.reflect(SKL_C10, 4 * kMs, /*got_tick=*/true);
  sel(g, ctx);
  EXPECT_EQ(g.bins()[SKL_C10].hits, 1024u);
  EXPECT_EQ(g.bins()[SKL_C8].intercepts, 0u);
  // The same wakeup not by the tick: 4 ms - 445 µs = 3.555 ms -> C8's bin:
  // an intercept.
  TeoGovernor h(params(t));
  FakeCtx c2;
  c2.sleep_ns = 100 * kMs;
  sel(h, c2);
  h.reflect(SKL_C10, 4 * kMs, false);
  sel(h, c2);
  EXPECT_EQ(h.bins()[SKL_C10].hits, 0u);
  EXPECT_EQ(h.bins()[SKL_C8].intercepts, 1024u);
}

TEST(TeoSelect, LatencyConstraint) {
  const IdleTable t = skx();
  {
    // latency_req 50 µs: constraint_idx = C1E (exit 10 µs; C6's 133 µs too
    // much). C1E's 20 µs >= 15 µs -> the sleep length is read; 10 ms >= TICK
    // -> stop the tick.
    TeoGovernor g(params(t, 50 * kUs));
    FakeCtx ctx;
    const Pick p = sel(g, ctx);
    EXPECT_EQ(p.idx, C1E);
    EXPECT_TRUE(p.stop_tick);
    EXPECT_EQ(ctx.calls, 1);
  }
  for (const std::int64_t lat : {5 * kUs, 9 * kUs}) {
    // latency_req 5 or 9 µs: constraint_idx = C1. One long period first so
    // short idles (0) are not half of total (1024).
    TeoGovernor g(params(t, lat));
    FakeCtx ctx;
    Pick p = sel(g, ctx);
    EXPECT_EQ(p.idx, C1);  // fresh: 2 x 0 >= 0 -> early return at C1
    EXPECT_EQ(ctx.calls, 0);
    g.reflect(C1, 10 * kMs, false);
    p = sel(g, ctx);
    EXPECT_EQ(p.idx, C1);
    if (lat < teo::LATENCY_THRESHOLD_NS) {
      // 5 µs < 7.5 µs: the latency limit alone triggers the early return.
      EXPECT_EQ(ctx.calls, 0);
      EXPECT_FALSE(p.stop_tick);
    } else {
      // 9 µs: no early return -> sleep length read (10 ms) -> C1 stays (2 µs
      // fits) and 10 ms >= TICK -> stop the tick.
      EXPECT_EQ(ctx.calls, 1);
      EXPECT_TRUE(p.stop_tick);
    }
  }
}

TEST(TeoSelect, SleepLengthStepAndKeepTickStepDown) {
  const IdleTable t = skx();
  {
    // Sleep 300 µs < C6's 600 µs -> the deepest enabled state fitting it:
    // C1E; 300 µs < TICK -> keep the tick.
    TeoGovernor g(params(t));
    FakeCtx ctx;
    ctx.sleep_ns = 300 * kUs;
    const Pick p = sel(g, ctx);
    EXPECT_EQ(p.idx, C1E);
    EXPECT_FALSE(p.stop_tick);
  }
  {
    // Same with the tick stopped: C1E is not OK (20 µs < TICK) -> keep C6.
    TeoGovernor g(params(t));
    FakeCtx ctx;
    ctx.sleep_ns = 300 * kUs;
    ctx.stopped = true;
    const Pick p = sel(g, ctx);
    EXPECT_EQ(p.idx, C6);
    EXPECT_TRUE(p.stop_tick);
  }
  {
    // Sleep 3 ms fits C6, but 3 ms < TICK -> keep the tick, and C6's 600 µs >
    // delta_tick 300 µs -> step down to C1E.
    TeoGovernor g(params(t));
    FakeCtx ctx;
    ctx.sleep_ns = 3 * kMs;
    ctx.delta_tick_ns = 300 * kUs;
    const Pick p = sel(g, ctx);
    EXPECT_EQ(p.idx, C1E);
    EXPECT_FALSE(p.stop_tick);
  }
}

TEST(TeoSelect, SingleEnabledStateAndRejection) {
  IdleTable t = skx();
  t.states[POLL].disabled = t.states[C1].disabled = t.states[C1E].disabled = true;
  TeoGovernor g(params(t));
  FakeCtx ctx;
  const Pick p = sel(g, ctx);
  // Only C6 enabled: take it, duration = its 600 µs < TICK -> keep the tick;
  // the sleep length is not needed.
  EXPECT_EQ(p.idx, C6);
  EXPECT_FALSE(p.stop_tick);
  EXPECT_EQ(ctx.calls, 0);
  // A rejected entry teaches nothing: no reflect (or reflect(-1)) -> no update.
  sel(g, ctx);
  g.reflect(-1, 0, false);
  sel(g, ctx);
  EXPECT_EQ(g.total(), 0u);
}

// ---------------------------------------------------------------------------
// Robustness: any input, indices in range, at most one sleep-length read.
// ---------------------------------------------------------------------------

TEST(GovernorRobustness, RandomInputsStayInRange) {
  std::mt19937_64 rng(12345);
  const std::int64_t lengths[] = {-5, 0, 1, 999, 2 * kUs, 15 * kUs, 600 * kUs, kTick, 6 * kMs, 100 * kMs,
                                  std::int64_t{1} << 40, INT64_MAX};
  auto any = [&](auto& arr) { return arr[rng() % (sizeof(arr) / sizeof(arr[0]))]; };
  for (const bool use_skl : {false, true}) {
    for (const char* name : {"menu", "teo"}) {
      IdleTable t = use_skl ? skl() : skx();
      const std::int64_t lat[] = {0, 1, 5 * kUs, 100 * kUs, INT64_MAX};
      GovernorParams p = params(t, any(lat), rng() % 2 == 0);
      std::unique_ptr<Governor> g = make_governor(name, p);
      for (int i = 0; i < 4000; ++i) {
        // The engine may flip states on and off, even all of them.
        if (rng() % 50 == 0) t.states[rng() % t.states.size()].disabled ^= true;
        FakeCtx ctx;
        ctx.sleep_ns = any(lengths);
        ctx.delta_tick_ns = any(lengths);
        ctx.stopped = rng() % 3 == 0;
        bool stop = true;
        const int idx = g->select(ctx, &stop);
        ASSERT_GE(idx, 0);
        ASSERT_LT(idx, static_cast<int>(t.states.size()));
        ASSERT_LE(ctx.calls, 1);
        if (rng() % 20 == 0) continue;  // rejected: no reflect
        g->reflect(rng() % 30 == 0 ? -1 : idx, any(lengths), rng() % 4 == 0);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// shallowest, deepest, oracle, make_governor
// ---------------------------------------------------------------------------

TEST(GovernorShallowestDeepest, Picks) {
  IdleTable t = skx();
  FakeCtx ctx;
  auto sh = make_governor("shallowest", params(t));
  Pick p = sel(*sh, ctx);
  EXPECT_EQ(p.idx, POLL);
  EXPECT_FALSE(p.stop_tick);  // POLL polls: keep the tick
  t.states[POLL].disabled = true;
  p = sel(*sh, ctx);
  EXPECT_EQ(p.idx, C1);
  EXPECT_TRUE(p.stop_tick);
  EXPECT_EQ(ctx.calls, 0);

  IdleTable u = skx();
  auto dp = make_governor("deepest", params(u));
  p = sel(*dp, ctx);
  EXPECT_EQ(p.idx, C6);
  EXPECT_TRUE(p.stop_tick);
  u.states[C6].disabled = true;
  EXPECT_EQ(sel(*dp, ctx).idx, C1E);
  IdleTable v = skx();
  auto dl = make_governor("deepest", params(v, 50 * kUs));  // C6's 133 µs exit too slow
  p = sel(*dl, ctx);
  EXPECT_EQ(p.idx, C1E);
  EXPECT_TRUE(p.stop_tick);
  EXPECT_FALSE(dl->post_hoc());
}

// Without a cpuidle driver the kernel never asks for a sleep length and
// always offers the tick to stop, even before a very short sleep.
TEST(GovernorNone, DefaultIdleAlwaysOffersToStopTheTick) {
  IdleTable t = skx();
  FakeCtx ctx;
  ctx.sleep_ns = 10 * kUs;
  ctx.delta_tick_ns = 10 * kUs;
  auto g = make_governor("none", params(t));
  Pick p = sel(*g, ctx);
  EXPECT_EQ(p.idx, C1);  // default idle halts: it never polls
  EXPECT_TRUE(p.stop_tick);
  EXPECT_EQ(ctx.calls, 0);
  t.states[C1].disabled = true;
  EXPECT_EQ(sel(*g, ctx).idx, C1E);
  for (auto& s : t.states) s.disabled = s.polling ? false : true;
  EXPECT_EQ(sel(*g, ctx).idx, POLL);  // nothing but polling left
  EXPECT_FALSE(g->post_hoc());
}

TEST(GovernorOracle, MinimisesEnergyKnowingTheIdleLength) {
  const IdleTable t = skx();
  auto g = make_governor("oracle", params(t));
  EXPECT_TRUE(g->post_hoc());
  FakeCtx ctx;
  const Pick p = sel(*g, ctx);
  EXPECT_EQ(p.idx, POLL);  // first enabled state; the real choice is post hoc
  EXPECT_TRUE(p.stop_tick);
  EXPECT_EQ(ctx.calls, 0);
  // Energy (pJ) = mW x (idle + exit) ns + µJ x 1e6.
  // 0 ns: POLL 0; C1 1000 x 2000 + 1e5 -> POLL.
  EXPECT_EQ(g->choose_post_hoc(0, true), POLL);
  // 10 µs: POLL 2e7; C1 1.21e7; C1E 500 x 20e3 + 1e6 = 1.1e7; C6 5.715e7 -> C1E.
  EXPECT_EQ(g->choose_post_hoc(10 * kUs, true), C1E);
  EXPECT_EQ(g->predicted_ns(), 10 * kUs);
  // 10 ms: C1E 5.006e9; C6 50 x 10.133e6 + 5e7 = 5.5665e8 -> C6.
  EXPECT_EQ(g->choose_post_hoc(10 * kMs, true), C6);
  EXPECT_EQ(g->predicted_ns(), 10 * kMs);

  // Latency limit 50 µs excludes C6 -> C1E at 10 ms.
  auto gl = make_governor("oracle", params(t, 50 * kUs));
  EXPECT_EQ(gl->choose_post_hoc(10 * kMs, true), C1E);

  // Tie -> the shallower: two identical states.
  IdleTable tie;
  tie.states = {st("A", 1, 1, 100, 1), st("B", 1, 1, 100, 1)};
  auto gt = make_governor("oracle", params(tie));
  EXPECT_EQ(gt->choose_post_hoc(5 * kMs, true), 0);
}

TEST(GovernorFactory, NamesAndErrors) {
  const IdleTable t = skx();
  for (const char* name : {"menu", "teo", "none", "oracle", "shallowest", "deepest"}) {
    EXPECT_NE(make_governor(name, params(t)), nullptr) << name;
  }
  try {
    make_governor("ladder", params(t));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("ladder"), std::string::npos) << m;
    for (const char* name : {"menu", "teo", "none", "oracle", "shallowest", "deepest"}) {
      EXPECT_NE(m.find(name), std::string::npos) << m;
    }
  }
  GovernorParams none;
  EXPECT_THROW(make_governor("menu", none), std::invalid_argument);  // no table
  IdleTable bad = skx();
  bad.states[C1E].target_residency_ns = 1;  // shallower than C1: out of order
  EXPECT_THROW(make_governor("teo", params(bad)), std::invalid_argument);
  GovernorParams zero_tick = params(t);
  zero_tick.tick_nsec = 0;
  EXPECT_THROW(make_governor("menu", zero_tick), std::invalid_argument);
  EXPECT_THROW(make_governor("teo", params(t, -1)), std::invalid_argument);
}

}  // namespace
