// workload.hpp — what the simulated machine runs: the specification of the
// timer-arming activity that drives the engine.
//
// Theory of operation
// -------------------
// Four generators, each pinned to a set of CPUs; any mix of them forms a
// workload (the Python side composes them):
//
//   tasks      per CPU, `per_cpu` tasks alternate running (run_ns) and
//              sleeping (sleep_ns). A sleep is schedule_timeout (a
//              process_timeout timer, non-pinned: its expiry wakes the task)
//              or an external wakeup (an interrupt after sleep_ns). At the
//              start of each run a task arms `timeouts_per_run` timeouts.
//   timeouts   per CPU, interrupts arriving as a Poisson stream (rate_hz);
//              each arms one timeout from interrupt context — on an idle CPU
//              that is the case the pre-6.9 push heuristic moves away.
//   periodic   per CPU, one timer re-armed from its own callback every
//              period_ns (e.g. deferrable delayed work every 20 ms).
//   busy       CPUs kept running all the time (background load).
//   remote     one CPU arms timers on other CPUs with add_timer_on
//              (the lazy-wakeup patch's test), at rate_hz.
//   loop       the seeds' micro benchmark: on one busy CPU, arm and delete
//              one timer `pairs` times in a row, at the start of the run.
//
// A timeout is cancelled with probability cancel_p at cancel_after_ns after
// it was armed (an I/O completing: an interrupt on the arming CPU), unless it
// expired first. Timeouts in ns become jiffies rounding up, as
// msecs_to_jiffies does. Every timer carries a callback name (a code into
// `function_names`) that shows in traces and results.
//
// Simplifications vs. a real machine
//   * A task always runs on its home CPU (the fair scheduler's preference
//     for the previous CPU), first come first served, without preemption.
//   * Interrupts on a busy CPU take no time; from idle they keep the CPU
//     awake irq_ns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "timerlab/random.hpp"

namespace timerlab {

struct TimeoutSpec {
  unsigned count = 0;  // timeouts armed per occasion
  Dist timeout_ns;
  double cancel_p = 0;
  Dist cancel_after_ns;
  std::uint32_t flags = 0;  // TIMER_PINNED / TIMER_DEFERRABLE
  std::uint16_t function = 0;
};

struct TaskSpec {
  std::vector<unsigned> cpus;
  unsigned per_cpu = 1;
  Dist run_ns, sleep_ns;
  bool sleep_on_timer = true;  // schedule_timeout; false: woken by an interrupt
  std::uint16_t sleep_function = 0;
  TimeoutSpec timeouts;
};

struct TimeoutStreamSpec {
  std::vector<unsigned> cpus;
  double rate_hz = 0;
  TimeoutSpec timeouts;  // count per arrival
};

struct PeriodicSpec {
  std::vector<unsigned> cpus;
  Dist period_ns;
  std::uint32_t flags = 0;
  std::uint16_t function = 0;
};

struct RemoteEnqueueSpec {
  unsigned from_cpu = 0;
  std::vector<unsigned> to_cpus;
  double rate_hz = 0;
  Dist timeout_ns;
  std::uint16_t function = 0;
};

struct LoopSpec {
  unsigned cpu = 0;
  unsigned pairs = 1000;
  Dist timeout_ns;
  std::uint16_t function = 0;
};

struct WorkloadSpec {
  std::vector<TaskSpec> tasks;
  std::vector<TimeoutStreamSpec> streams;
  std::vector<PeriodicSpec> periodic;
  std::vector<RemoteEnqueueSpec> remote;
  std::vector<LoopSpec> loops;
  std::vector<unsigned> busy_cpus;
  std::vector<std::string> function_names;  // index = code
  std::int64_t irq_ns = 2000;

  // Throws std::invalid_argument naming the problem (CPU out of range,
  // unknown function code, negative rates ...).
  void validate(unsigned nr_cpus) const;
};

}  // namespace timerlab
