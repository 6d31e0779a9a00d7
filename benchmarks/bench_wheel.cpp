// bench_wheel.cpp — the seeds' micro benchmark: arm one timer and delete it,
// 1000 times in a loop, on an otherwise idle base and with 10^5 and 10^6
// other timers pending. timerlab's wheel goes through the real API path
// (add_timer -> __mod_timer, timer_delete); two baselines are built and
// measured in the same run:
//   * heap: std::priority_queue with lazy deletion — delete only bumps the
//     timer's generation; the stale entry would be discarded when it reaches
//     the top. That later pop is NOT timed, so this is a lower bound for a
//     heap.
//   * multimap: std::multimap<expires, id>, insert and erase by iterator.
// Each structure runs `blocks` blocks of 1000 pairs; the figure is the
// median over blocks of ns per pair (p10 and p90 beside it). Expiries are
// drawn log-uniformly in [1, 10^5] jiffies from a fixed seed, the same
// sequence for every structure.
//
// Usage: bench_wheel [blocks] — prints one JSON object per line.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <queue>
#include <random>
#include <vector>

#include <cmath>

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

struct Stats {
  double p10, median, p90;
};

Stats summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))]; };
  return {at(0.1), at(0.5), at(0.9)};
}

// Times `blocks` blocks of kPairsPerBlock calls of pair(i) (after one
// untimed warm-up block); returns ns per pair of each block.
template <class Pair>
std::vector<double> time_blocks(int blocks, Pair&& pair) {
  std::vector<double> ns;
  for (int b = -1; b < blocks; ++b) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kPairsPerBlock; ++i) pair(i);
    const auto t1 = Clock::now();
    if (b >= 0) ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kPairsPerBlock);
  }
  return ns;
}

// The wheel as the simulation engine drives it: one base, the real
// __mod_timer / timer_delete code, no-op trace and wakeup hooks.
struct Ctx {
  timerlab::TimerPool& p;
  timerlab::TimerBase& b;
  timerlab::TimerPool& pool() { return p; }
  jiffies_t jiffies() const { return kNow; }
  timerlab::TimerBase& timer_base(timerlab::TimerId) { return b; }
  timerlab::TimerBase& target_base(timerlab::TimerId, timerlab::TimerBase& cur) { return cur; }
  void trace_timer_start(timerlab::TimerBase&, timerlab::TimerId, const timerlab::EnqueueResult&) {}
  void trace_timer_cancel(timerlab::TimerBase&, timerlab::TimerId) {}
  void trigger_dyntick_cpu(timerlab::TimerBase&, timerlab::TimerId) {}
};

Stats bench_wheel(std::size_t pending, int blocks, const std::vector<jiffies_t>& deltas,
                  const std::vector<jiffies_t>& background) {
  timerlab::TimerPool pool;
  pool.reserve(pending + 1);
  timerlab::TimerBase base(pool, 1000, kNow);
  Ctx ctx{pool, base};
  for (std::size_t i = 0; i < pending; ++i) {
    const auto t = pool.alloc(0, 0);
    timerlab::add_timer(ctx, t, kNow + background[i]);
  }
  const auto t = pool.alloc(0, 0);
  auto ns = time_blocks(blocks, [&](int i) {
    timerlab::add_timer(ctx, t, kNow + deltas[static_cast<std::size_t>(i)]);
    timerlab::timer_delete(ctx, t);
  });
  if (!base.check_invariants().empty() || base.pending_count() != pending) std::abort();
  return summarize(ns);
}

Stats bench_heap(std::size_t pending, int blocks, const std::vector<jiffies_t>& deltas,
                 const std::vector<jiffies_t>& background) {
  struct Entry {
    jiffies_t expires;
    std::uint32_t id, gen;
    bool operator>(const Entry& o) const { return expires > o.expires; }
  };
  std::vector<Entry> storage;
  storage.reserve(pending + static_cast<std::size_t>(blocks + 1) * kPairsPerBlock);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap(std::greater<>{}, std::move(storage));
  std::vector<std::uint32_t> gen(pending + 1, 0);
  for (std::size_t i = 0; i < pending; ++i) heap.push({kNow + background[i], static_cast<std::uint32_t>(i), 0});
  const auto id = static_cast<std::uint32_t>(pending);
  auto ns = time_blocks(blocks, [&](int i) {
    heap.push({kNow + deltas[static_cast<std::size_t>(i)], id, gen[id]});
    ++gen[id];  // lazy delete: the entry is now stale
  });
  if (heap.size() < pending) std::abort();
  return summarize(ns);
}

Stats bench_multimap(std::size_t pending, int blocks, const std::vector<jiffies_t>& deltas,
                     const std::vector<jiffies_t>& background) {
  std::multimap<jiffies_t, std::uint32_t> m;
  for (std::size_t i = 0; i < pending; ++i) m.emplace(kNow + background[i], static_cast<std::uint32_t>(i));
  auto ns = time_blocks(blocks, [&](int i) {
    auto it = m.emplace(kNow + deltas[static_cast<std::size_t>(i)], 0u);
    m.erase(it);
  });
  if (m.size() != pending) std::abort();
  return summarize(ns);
}

}  // namespace

int main(int argc, char** argv) {
  const int blocks = argc > 1 ? std::max(1, std::atoi(argv[1])) : 301;
  const auto deltas = draw_deltas(kPairsPerBlock, 1);
  for (std::size_t pending : {std::size_t{0}, std::size_t{100000}, std::size_t{1000000}}) {
    const auto background = draw_deltas(pending, 2);
    const Stats w = bench_wheel(pending, blocks, deltas, background);
    const Stats h = bench_heap(pending, blocks, deltas, background);
    const Stats m = bench_multimap(pending, blocks, deltas, background);
    for (auto [name, s] : {std::pair{"timerlab_wheel", w}, std::pair{"heap_lazy_delete", h},
                           std::pair{"std_multimap", m}}) {
      std::printf(
          "{\"bench\": \"enqueue_dequeue_pair\", \"structure\": \"%s\", \"pending\": %zu, \"blocks\": %d, "
          "\"ns_per_pair_p10\": %.2f, \"ns_per_pair_median\": %.2f, \"ns_per_pair_p90\": %.2f}\n",
          name, pending, blocks, s.p10, s.median, s.p90);
    }
    std::fflush(stdout);
  }
  return 0;
}
