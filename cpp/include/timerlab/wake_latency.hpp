// wake_latency.hpp — how late a hardware wakeup of an idle CPU arrives: the
// platform's wake latency (the clock event device's interrupt reaching the
// CPU, on a hypervisor the vCPU being scheduled), as an empirical
// distribution per CPU.
//
// Theory of operation
// -------------------
// A CPU in an idle state is woken by its clock event device: the periodic
// tick, or the one-shot wakeup tick_nohz_stop_tick programmed for the next
// event (kernel/time/tick-sched.c). Neither arrives on time. On bare metal
// the interrupt is a few µs late; under qemu/KVM the vCPU's timer interrupt
// is delivered when the host schedules the vCPU again, 0.1 / 0.45 / 2 ms
// late (p10/p50/p90) on the shared idle traces. Where several idle CPUs
// hold the hierarchy's duty for one event they all programmed the same
// nanosecond, so the lateness alone decides which of them runs its timer
// softirq first and takes the event: without it, equal times would go to
// the lowest CPU number (cpu_queue.hpp) and every what-if would hand the
// migrator duty to the lowest-numbered CPUs.
//
// Each distribution is a table of evenly spaced quantiles (q_0 = min ...
// q_n = max); a draw picks a uniform point and interpolates between the two
// quantiles around it. One table for every CPU, or one per CPU (a replay
// fits each CPU's own). Each CPU draws from its own seeded stream, so a run
// stays a function of its seed. The lateness is drawn at each idle entry and
// applies to the clock wakeup that ends that idle period; a replay imposes
// the traced lateness of the wakeups the kernel had (Engine::script_op).
//
// Not modelled: the lateness of a device interrupt or an IPI (ipi_latency_ns
// stands for the latter), and any dependence of the lateness on the idle
// state (its exit latency is paid on top, idle.hpp).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "timerlab/random.hpp"

namespace timerlab {

// Quantile tables: none (on time), one for every CPU, or one per CPU.
struct LatencyTables {
  std::vector<std::vector<std::int64_t>> quantiles_ns;  // each sorted, at least one value

  bool empty() const { return quantiles_ns.empty(); }

  void validate(const std::string& name, unsigned nr_cpus) const {
    if (quantiles_ns.size() > 1 && quantiles_ns.size() != nr_cpus) {
      throw std::invalid_argument(name + ": " + std::to_string(quantiles_ns.size()) + " per-CPU tables for " +
                                  std::to_string(nr_cpus) + " CPUs");
    }
    for (std::size_t c = 0; c < quantiles_ns.size(); ++c) {
      const auto& q = quantiles_ns[c];
      const std::string who = name + " table " + std::to_string(c);
      if (q.empty()) throw std::invalid_argument(who + " is empty");
      for (std::size_t i = 0; i < q.size(); ++i) {
        if (q[i] < 0 || q[i] > 1'000'000'000) throw std::invalid_argument(who + ": values must be in [0, 1 s]");
        if (i && q[i] < q[i - 1]) throw std::invalid_argument(who + ": quantiles must be sorted");
      }
    }
  }

  // A lateness for `cpu`, from its own stream.
  std::int64_t draw(unsigned cpu, Rng& rng) const {
    if (quantiles_ns.empty()) return 0;
    const auto& q = quantiles_ns[quantiles_ns.size() == 1 ? 0 : cpu];
    if (q.size() == 1) return q[0];
    const double x = rng.uniform() * static_cast<double>(q.size() - 1);
    const auto i = static_cast<std::size_t>(x);
    if (i + 1 >= q.size()) return q.back();
    const double f = x - static_cast<double>(i);
    return q[i] + static_cast<std::int64_t>(f * static_cast<double>(q[i + 1] - q[i]));
  }
};

// The stopped tick's programmed wakeup and the running tick of an idle CPU
// are late by different amounts under a hypervisor (a vCPU halted longer is
// descheduled deeper): one table each. A replay leaves `tick` empty: its
// ticks' lateness is the trace's own (the tick_delay items).
struct WakeLatencySpec {
  LatencyTables stopped, tick;

  bool empty() const { return stopped.empty() && tick.empty(); }
  void validate(unsigned nr_cpus) const {
    stopped.validate("wake_latency stopped", nr_cpus);
    tick.validate("wake_latency tick", nr_cpus);
  }
  std::int64_t draw(unsigned cpu, bool tick_stopped, Rng& rng) const {
    return (tick_stopped ? stopped : tick).draw(cpu, rng);
  }
};

}  // namespace timerlab
