// Tests of the engine's queue of CPUs (cpu_queue.hpp): the root is always
// the CPU with the earliest time, ties to the lower CPU, whatever the order
// of updates and however many CPUs (powers of two and not).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "timerlab/cpu_queue.hpp"

using namespace timerlab;

namespace {

TEST(CpuQueue, TopIsEarliestTimeThenLowestCpu) {
  std::mt19937_64 rng(7);
  for (unsigned n : {1u, 2u, 3u, 5u, 8u, 64u, 100u, 257u}) {
    CpuQueue q(n);
    std::vector<std::int64_t> t(n, INT64_MAX);
    EXPECT_EQ(q.top(), 0u);
    EXPECT_EQ(q.top_time(), INT64_MAX);
    for (int step = 0; step < 20000; ++step) {
      // Few distinct times, so that ties are common; now and then never.
      const unsigned cpu = static_cast<unsigned>(rng() % n);
      const std::int64_t v = rng() % 16 == 0 ? INT64_MAX : static_cast<std::int64_t>(rng() % 8);
      q.update(cpu, v);
      t[cpu] = v;
      unsigned want = 0;
      for (unsigned c = 1; c < n; ++c) want = t[c] < t[want] ? c : want;
      ASSERT_EQ(q.top(), want) << "n=" << n << " step " << step;
      ASSERT_EQ(q.top_time(), t[want]);
    }
  }
}

}  // namespace
