// guard.hpp — the engine's runaway guard: no input makes a run loop forever,
// grow its memory without bound, or ignore an interruption.
//
// Theory of operation
// -------------------
// A discrete-event model can loop: two sources that keep re-arming each other
// at the same instant (or a source that is processed but never consumed) make
// the step loop spin while simulated time stands still, and every step may
// log a row, so memory grows as fast as the loop runs. A workload whose
// timers are armed faster than they end grows the timer pool and the work
// queues instead. Neither is a legitimate run: the guard stops both with a
// RunawayError that names the CPU, the source due on it and the simulated
// time, so that the model (or the input) can be fixed.
//
//   after every step      steps at this instant, all CPUs together, over
//                         max_steps_per_instant -> RunawayError (no progress)
//   every kCheckSteps     timers pending + work items queued over max_pending,
//                         or the run's own memory over max_memory_bytes
//                         -> RunawayError (runaway queue / memory)
//   every kPollSteps      the first time, then when kPollWall has passed
//                         since the last poll: interrupted() -> Interrupted
//                         (Ctrl-C)
//
// The limits are checked at fixed step counts, so whether a run fails does
// not depend on the machine's speed; only the interruption poll looks at the
// wall clock. The defaults are far above what any real run needs: a tick on
// every CPU of a 4096-CPU machine is a few steps per CPU at one instant, and
// the largest workloads keep a few hundred timers per CPU.
//
// Simplifications
//   * The memory figure counts what the engine stores per step (result rows,
//     the event log, timers and their bookkeeping, work queues), by capacity;
//     the fixed per-CPU state is left out.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace timerlab {

struct GuardSpec {
  // Steps at one simulated instant, all CPUs together (0: 1'000'000 + 1'000 per CPU).
  std::uint64_t max_steps_per_instant = 0;
  // Timers pending plus work items queued, all CPUs (0: 4'000'000 + 4'096 per CPU).
  std::uint64_t max_pending = 0;
  // The run's own memory, bytes (0: no limit).
  std::uint64_t max_memory_bytes = 0;
  // Polled from the step loop about every kPollWall of wall time; true stops
  // the run with Interrupted (the bindings check for Ctrl-C here).
  std::function<bool()> interrupted;

  std::uint64_t steps_per_instant(unsigned nr_cpus) const {
    return max_steps_per_instant ? max_steps_per_instant : 1'000'000 + 1'000ull * nr_cpus;
  }
  std::uint64_t pending_limit(unsigned nr_cpus) const {
    return max_pending ? max_pending : 4'000'000 + 4'096ull * nr_cpus;
  }
};

// The model stopped making progress or grew without bound.
class RunawayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The run was interrupted from outside (GuardSpec::interrupted).
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The wall-clock side of the guard: when to poll for an interruption.
class InterruptPoll {
 public:
  static constexpr std::uint64_t kPollSteps = 1024;
  static constexpr std::chrono::milliseconds kPollWall{50};

  explicit InterruptPoll(const std::function<bool()>& f) : f_(f) {}
  // Called every kPollSteps steps; throws Interrupted when asked to stop.
  void poll(std::int64_t now_ns) {
    if (!f_) return;
    const auto t = std::chrono::steady_clock::now();
    if (t - last_ < kPollWall) return;
    last_ = t;
    if (f_()) throw Interrupted("simulation interrupted at t=" + std::to_string(now_ns) + " ns");
  }

 private:
  const std::function<bool()>& f_;
  std::chrono::steady_clock::time_point last_{};  // the first poll is at once
};

}  // namespace timerlab
