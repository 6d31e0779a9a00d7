// Tests of the wake-latency model (wake_latency.hpp): the quantile draws,
// bad tables, and what it is for — without it the migrator duty of an idle
// hierarchy goes to the lowest-numbered CPUs; with it every CPU of a group
// takes its share.
#include <gtest/gtest.h>

#include <stdexcept>

#include "timerlab/engine.hpp"

using namespace timerlab;

namespace {

constexpr std::int64_t kMs = 1'000'000;

// 8 CPUs in one group, each with a task sleeping 50-200 ms on a
// process_timeout: a symmetric, mostly idle machine whose CPUs expire each
// other's timers (remote_expiries_done) as the hierarchy's duty holders.
SimConfig symmetric_idle(std::uint64_t seed, const WakeLatencySpec& wake) {
  SimConfig c;
  c.topology.nr_cpus = 8;
  c.topology.nr_nodes = 1;
  c.pull_model = true;
  c.duration_ns = 2000 * kMs;
  c.seed = seed;
  c.governor = "none";
  c.wake_latency = wake;
  c.workload.function_names = {"process_timeout"};
  TaskSpec t;
  for (unsigned cpu = 0; cpu < 8; ++cpu) t.cpus.push_back(cpu);
  t.run_ns = Dist::constant(100'000);
  t.sleep_ns = Dist{Dist::Kind::uniform, 50e6, 200e6};
  c.workload.tasks.push_back(t);
  return c;
}

// Pearson's chi-square statistic of `counts` against a uniform spread.
double chi_square(const std::vector<double>& counts) {
  double total = 0;
  for (double x : counts) total += x;
  const double expected = total / static_cast<double>(counts.size());
  double chi = 0;
  for (double x : counts) chi += (x - expected) * (x - expected) / expected;
  return chi;
}

std::vector<double> remote_expiries_by_cpu(const WakeLatencySpec& wake) {
  std::vector<double> counts(8, 0.0);
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const SimResult r = simulate(symmetric_idle(seed, wake));
    for (unsigned c = 0; c < 8; ++c) counts[c] += static_cast<double>(r.cpus[c].remote_expiries_done);
  }
  return counts;
}

}  // namespace

TEST(WakeLatency, DrawsInterpolateBetweenQuantiles) {
  LatencyTables t;
  t.quantiles_ns = {{100, 200, 400}};
  Rng rng(7, 0);
  double sum = 0;
  const int n = 20000;
  int below_200 = 0;
  for (int i = 0; i < n; ++i) {
    const std::int64_t d = t.draw(3, rng);  // one table serves every CPU
    ASSERT_GE(d, 100);
    ASSERT_LE(d, 400);
    below_200 += d < 200;
    sum += static_cast<double>(d);
  }
  // Half the mass between each pair of quantiles: mean (150 + 300) / 2.
  EXPECT_NEAR(sum / n, 225.0, 3.0);
  EXPECT_NEAR(static_cast<double>(below_200) / n, 0.5, 0.02);
  LatencyTables one;
  one.quantiles_ns = {{42}};
  EXPECT_EQ(one.draw(0, rng), 42);
  EXPECT_EQ(LatencyTables{}.draw(0, rng), 0);  // no table: on time
}

TEST(WakeLatency, BadTablesAreRejected) {
  SimConfig c = symmetric_idle(1, {});
  c.wake_latency.stopped.quantiles_ns = {{1}, {2}, {3}};
  EXPECT_THROW(simulate(c), std::invalid_argument);  // 3 tables for 8 CPUs
  c.wake_latency.stopped.quantiles_ns = {{5, 4}};
  EXPECT_THROW(simulate(c), std::invalid_argument);  // unsorted
  c.wake_latency.stopped.quantiles_ns = {{}};
  EXPECT_THROW(simulate(c), std::invalid_argument);  // empty
  c.wake_latency.stopped.quantiles_ns = {{-1}};
  EXPECT_THROW(simulate(c), std::invalid_argument);  // negative
}

TEST(WakeLatency, EveryCpuOfAGroupTakesItsShareOfTheDuty) {
  // chi-square with 7 degrees of freedom: 24.3 is its 0.1 % point.
  const std::vector<double> on_time = remote_expiries_by_cpu({});
  EXPECT_GT(chi_square(on_time), 100.0);  // equal times go to the lower CPU
  EXPECT_GT(on_time[0], 3 * on_time[7]);
  WakeLatencySpec jitter;
  jitter.stopped.quantiles_ns = {{1000, 2000, 4000, 8000, 20000}};  // bare metal, µs
  jitter.tick = jitter.stopped;
  const std::vector<double> late = remote_expiries_by_cpu(jitter);
  double total = 0;
  for (double x : late) total += x;
  ASSERT_GT(total, 1000.0);
  EXPECT_LT(chi_square(late), 24.3) << "on time " << chi_square(on_time) << ", jittered " << chi_square(late);
}
