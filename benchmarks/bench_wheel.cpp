// bench_wheel.cpp — the seeds' micro benchmark: arm one timer and delete it,
// 1000 times in a loop, on an otherwise idle base and with 10^5 and 10^6
// other timers pending. timerlab's wheel goes through the real API path
// (add_timer -> __mod_timer, timer_delete, with the engine's no-op trace and
// wakeup hooks); two baselines are built and measured in the same run:
//   * heap: std::priority_queue with lazy deletion — delete only bumps the
//     timer's generation; the stale entry would be discarded when it reaches
//     the top. That later pop is NOT timed, so this is a lower bound for a
//     heap.
//   * multimap: std::multimap<expires, id>, insert and erase by iterator.
// The three structures take turns, ten blocks of 1000 pairs each per turn
// (after an untimed block that warms the caches the others evicted), so that
// a slow phase of a shared virtual machine hits all three alike while each
// runs warm, as the kernel's loop does; the figure is the median over blocks
// of ns per pair, with p10 and p90 beside it. Expiries are drawn log-uniformly in
// [1, 10^5] jiffies from a fixed seed, the same sequence for every structure.
//
// Usage: bench_wheel [blocks] — prints one JSON object per line.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <vector>

#include "timerlab/mod_timer.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using timerlab::jiffies_t;

constexpr int kPairsPerBlock = 1000;
constexpr jiffies_t kNow = 4294667296ull;  // INITIAL_JIFFIES at HZ=1000

std::vector<jiffies_t> draw_deltas(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 5.0);
  std::vector<jiffies_t> d(n);
  for (auto& x : d) x = static_cast<jiffies_t>(std::pow(10.0, u(rng)));
  return d;
}

// The wheel as the simulation engine drives it: one base, the real
// __mod_timer / timer_delete code, no-op trace and wakeup hooks.
struct WheelBench {
  timerlab::TimerPool timers;
  timerlab::TimerBase base{timers, 1000, kNow};
  timerlab::TimerId timer = 0;

  explicit WheelBench(const std::vector<jiffies_t>& background) {
    timers.reserve(background.size() + 1);
    for (jiffies_t d : background) timerlab::add_timer(*this, timers.alloc(0, 0), kNow + d);
    timer = timers.alloc(0, 0);
  }
  void pair(jiffies_t delta) {
    timerlab::add_timer(*this, timer, kNow + delta);
    timerlab::timer_delete(*this, timer);
  }
  bool consistent(std::size_t pending) const {
    return base.check_invariants().empty() && base.pending_count() == pending;
  }

  // Context hooks of __mod_timer (mod_timer.hpp).
  timerlab::TimerPool& pool() { return timers; }
  jiffies_t jiffies() const { return kNow; }
  timerlab::TimerBase& timer_base(timerlab::TimerId) { return base; }
  timerlab::TimerBase& target_base(timerlab::TimerId, timerlab::TimerBase& cur) { return cur; }
  void trace_timer_start(timerlab::TimerBase&, timerlab::TimerId, const timerlab::EnqueueResult&) {}
  void trace_timer_cancel(timerlab::TimerBase&, timerlab::TimerId) {}
  void trigger_dyntick_cpu(timerlab::TimerBase&, timerlab::TimerId, bool) {}
};

struct HeapBench {
  struct Entry {
    jiffies_t expires;
    std::uint32_t id, gen;
    bool operator>(const Entry& o) const { return expires > o.expires; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  std::vector<std::uint32_t> gen;
  std::uint32_t id;

  HeapBench(const std::vector<jiffies_t>& background, std::size_t pushes) : gen(background.size() + 1, 0) {
    std::vector<Entry> storage;
    storage.reserve(background.size() + pushes);
    heap = decltype(heap)(std::greater<>{}, std::move(storage));
    for (std::size_t i = 0; i < background.size(); ++i) {
      heap.push({kNow + background[i], static_cast<std::uint32_t>(i), 0});
    }
    id = static_cast<std::uint32_t>(background.size());
  }
  void pair(jiffies_t delta) {
    heap.push({kNow + delta, id, gen[id]});
    ++gen[id];  // lazy delete: the entry is now stale
  }
};

struct MultimapBench {
  std::multimap<jiffies_t, std::uint32_t> m;
  explicit MultimapBench(const std::vector<jiffies_t>& background) {
    for (std::size_t i = 0; i < background.size(); ++i) m.emplace(kNow + background[i], static_cast<std::uint32_t>(i));
  }
  void pair(jiffies_t delta) { m.erase(m.emplace(kNow + delta, 0u)); }
};

template <class Bench>
double time_block(Bench& b, const std::vector<jiffies_t>& deltas) {
  const auto t0 = Clock::now();
  for (int i = 0; i < kPairsPerBlock; ++i) b.pair(deltas[static_cast<std::size_t>(i)]);
  const auto t1 = Clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / kPairsPerBlock;
}

void report(const char* name, std::size_t pending, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))]; };
  std::printf(
      "{\"bench\": \"enqueue_dequeue_pair\", \"structure\": \"%s\", \"pending\": %zu, \"blocks\": %zu, "
      "\"ns_per_pair_p10\": %.2f, \"ns_per_pair_median\": %.2f, \"ns_per_pair_p90\": %.2f}\n",
      name, pending, v.size(), at(0.1), at(0.5), at(0.9));
}

}  // namespace

int main(int argc, char** argv) {
  const int blocks = argc > 1 ? std::max(1, std::atoi(argv[1])) : 301;
  const auto deltas = draw_deltas(kPairsPerBlock, 1);
  for (std::size_t pending : {std::size_t{0}, std::size_t{100000}, std::size_t{1000000}}) {
    const auto background = draw_deltas(pending, 2);
    WheelBench wheel(background);
    HeapBench heap(background, static_cast<std::size_t>(blocks + blocks / 10 + 2) * kPairsPerBlock);
    MultimapBench multimap(background);
    // Rounds of kBlocksPerRound consecutive blocks per structure (the first,
    // untimed, re-warms the caches the other structures evicted).
    std::vector<double> w, h, m;
    constexpr int kBlocksPerRound = 10;
    for (int done = 0; done < blocks; done += kBlocksPerRound) {
      const int n = std::min(kBlocksPerRound, blocks - done);
      auto run = [&](auto& bench, std::vector<double>& out) {
        time_block(bench, deltas);
        for (int b = 0; b < n; ++b) out.push_back(time_block(bench, deltas));
      };
      run(wheel, w);
      run(heap, h);
      run(multimap, m);
    }
    if (!wheel.consistent(pending) || multimap.m.size() != pending) std::abort();
    report("timerlab_wheel", pending, w);
    report("heap_lazy_delete", pending, h);
    report("std_multimap", pending, m);
    std::fflush(stdout);
  }
  return 0;
}
