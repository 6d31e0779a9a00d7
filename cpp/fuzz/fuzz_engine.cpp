// fuzz_engine.cpp — fuzz target of the simulation engine (engine.hpp): the
// bytes choose a small machine, a workload of every generator kind and the
// policies, with edge values (irq_ns = 0, zero latencies, zero-length runs,
// 1-ns durations). A config the core refuses must be refused with
// std::invalid_argument; any other must run to its end with busy + idle time
// equal to the duration on every CPU — a RunawayError (a model that loops)
// is a finding. See cpp/fuzz/fuzz_ftrace.cpp for how targets are run.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "timerlab/engine.hpp"

using namespace timerlab;

namespace {

class Bytes {
 public:
  Bytes(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  unsigned below(unsigned n) {
    if (n <= 1) return 0;
    return static_cast<unsigned>(n <= 256 ? byte() % n : next() % n);
  }
  bool flip() { return below(2) != 0; }
  double ns(double hi) {  // 0, tiny, or up to hi
    switch (below(4)) {
      case 0:
        return 0;
      case 1:
        return 1 + below(1000);
      default:
        return hi * below(1001) / 1000.0;
    }
  }
  Dist dist(double hi) {
    const double a = ns(hi);
    switch (below(4)) {
      case 0:
        return Dist::constant(a);
      case 1:
        return {Dist::Kind::uniform, a, a + ns(hi)};
      case 2:
        return {Dist::Kind::exponential, a, 0};
      default:
        return {Dist::Kind::lognormal, a + 1, below(300) / 100.0};
    }
  }

 private:
  std::uint32_t byte() { return i_ < n_ ? d_[i_++] : 0; }
  std::uint32_t next() {
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v = v << 8 | byte();
    return v;
  }
  const std::uint8_t* d_;
  std::size_t n_, i_ = 0;
};

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_engine: invariant violated: %s\n", what);
    std::abort();
  }
}

std::vector<unsigned> some_cpus(Bytes& b, unsigned n) {
  std::vector<unsigned> v;
  for (unsigned c = 0; c < n; ++c) {
    if (b.below(3) == 0) v.push_back(c);
  }
  if (v.empty()) v.push_back(b.below(n));
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes b(data, size);
  SimConfig c;
  const unsigned cpus = 1 + b.below(16);
  c.topology.nr_cpus = cpus;
  c.topology.nr_nodes = 1 + b.below(cpus < 4 ? cpus : 4);
  c.topology.smt = b.flip() && cpus % 2 == 0 ? 2 : 1;
  static const unsigned hz[] = {100, 250, 300, 1000};
  c.hz = hz[b.below(4)];
  c.pull_model = b.flip();
  c.lazy_wakeup = b.flip();
  c.first_timer_by_bucket = b.flip();
  c.deferrable = c.pull_model ? static_cast<DeferrablePolicy>(b.below(3)) : DeferrablePolicy::legacy;
  c.rcu_needs_cpu = b.flip();
  c.jiffies_duty = b.flip();
  c.duration_ns = 1 + static_cast<std::int64_t>(b.ns(10e6));
  c.start_ns = b.flip() ? 0 : static_cast<std::int64_t>(b.ns(1e12));
  c.seed = b.below(1u << 31);
  c.ipi_latency_ns = static_cast<std::int64_t>(b.ns(1e5));
  c.record_events = b.flip();
  c.check_invariants = b.below(8) == 0;
  c.fair_server_defer_ns = b.flip() ? 0 : static_cast<std::int64_t>(b.ns(2e6));
  static const char* governors[] = {"menu", "teo", "none", "oracle", "shallowest", "deepest"};
  c.governor = governors[b.below(6)];
  if (b.flip()) {
    c.idle.busy_power_mw = 4000;
    c.idle.states = {{"POLL", 0, 0, 3000, 0, true, false, false},
                     {"C1", static_cast<std::int64_t>(b.ns(5e3)), 2000, 1000, 0.1, false, false, false},
                     {"C6", 130'000, 600'000, 50, 5, false, b.flip(), false}};
    c.idle.states[1].target_residency_ns = c.idle.states[1].exit_latency_ns;
  }
  c.latency_req_ns = b.flip() ? INT64_MAX : static_cast<std::int64_t>(b.ns(1e5));
  WorkloadSpec& w = c.workload;
  w.function_names = {"process_timeout", "delayed_work_timer_fn", "tcp_write_timer", "hrtimer_wakeup",
                      "tick_nohz_handler", "dl_task_timer"};
  c.tick_function = 4;
  c.fair_server_function = 5;
  c.latency = {static_cast<std::int64_t>(b.ns(2e3)), static_cast<std::int64_t>(b.ns(2e3)),
               static_cast<std::int64_t>(b.ns(1e3))};
  c.callback_ns = {static_cast<std::int64_t>(b.ns(5e3)), 0, 0, static_cast<std::int64_t>(b.ns(1e3)),
                   static_cast<std::int64_t>(b.ns(3e3)), 0};
  c.timer_migration = b.flip();
  c.hrtimer_keep_local = b.flip();
  w.irq_ns = static_cast<std::int64_t>(b.ns(1e5));
  const unsigned parts = 1 + b.below(4);
  for (unsigned k = 0; k < parts; ++k) {
    TimeoutSpec to{b.below(3), b.dist(3e8), b.below(101) / 100.0, b.dist(1e7),
                   b.below(4) == 0 ? TIMER_PINNED : (b.below(3) == 0 ? TIMER_DEFERRABLE : 0u), 2};
    switch (b.below(6)) {
      case 0: {
        TaskSpec t;
        t.cpus = some_cpus(b, cpus);
        t.per_cpu = 1 + b.below(3);
        t.run_ns = b.dist(5e6);
        t.sleep_ns = b.dist(5e7);
        t.sleep = static_cast<SleepKind>(b.below(7));
        t.sleep_function = t.sleep == SleepKind::timeout ? 0 : 3;
        t.rt_priority = b.flip() ? 0 : b.below(100);
        t.timer_slack_ns = static_cast<std::int64_t>(b.ns(1e5));
        t.range_ns = static_cast<std::int64_t>(b.ns(1e5));
        t.measure = static_cast<Measure>(b.below(3));
        t.timeouts = to;
        w.tasks.push_back(t);
        break;
      }
      case 1:
        w.streams.push_back({some_cpus(b, cpus), 1.0 + b.below(50'000), to});
        break;
      case 2:
        w.periodic.push_back({some_cpus(b, cpus), b.dist(1e8), to.flags, 1});
        break;
      case 3:
        w.remote.push_back({b.below(cpus), some_cpus(b, cpus), 1.0 + b.below(50'000), b.dist(4e8), 2});
        break;
      case 4:
        w.loops.push_back({b.below(cpus), 1 + b.below(500), b.dist(4e8), 2});
        break;
      default:
        w.busy_cpus = some_cpus(b, cpus);
    }
  }
  c.guard.max_steps_per_instant = 200'000;
  // A legitimate but long run (a task sleeping 1 ns at a time takes a step
  // per ns) is stopped after a while: the fuzzer wants many inputs.
  const auto stop_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  c.guard.interrupted = [stop_at] { return std::chrono::steady_clock::now() > stop_at; };
  SimResult r;
  try {
    r = simulate(c);
  } catch (const Interrupted&) {
    return 0;
  } catch (const std::invalid_argument& e) {
    if (std::getenv("FUZZ_VERBOSE")) std::fprintf(stderr, "refused: %s\n", e.what());
    return 0;  // refused with a message: fine
  }
  if (std::getenv("FUZZ_VERBOSE")) {
    std::fprintf(stderr, "ran: %u CPUs, %lld ns, irq %lld, ipi %lld, %zu tasks %zu streams %zu periodic %zu remote "
                 "%zu loops, %llu steps\n", cpus, static_cast<long long>(c.duration_ns),
                 static_cast<long long>(w.irq_ns), static_cast<long long>(c.ipi_latency_ns), w.tasks.size(),
                 w.streams.size(), w.periodic.size(), w.remote.size(), w.loops.size(),
                 static_cast<unsigned long long>(r.steps));
  }
  for (const CpuCounters& cc : r.cpus) check(cc.busy_ns + cc.idle_ns == c.duration_ns, "busy + idle != duration");
  return 0;
}
