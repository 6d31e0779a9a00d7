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
//              process_timeout timer, non-pinned: its expiry wakes the task),
//              an hrtimer sleep (nanosleep, clock_nanosleep, poll timeouts,
//              usleep_range, the timerlat kthread; SleepKind) or an external
//              wakeup (an interrupt after sleep_ns). Tasks are SCHED_OTHER or
//              SCHED_FIFO (rt_priority); a higher priority preempts. At the
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
//   script     a replay of a real trace (engine_replay.cpp): timed
//              operations per CPU, in trace order — see ScriptSpec.
//
// A timeout is cancelled with probability cancel_p at cancel_after_ns after
// it was armed (an I/O completing: an interrupt on the arming CPU), unless it
// expired first. Timeouts in ns become jiffies rounding up, as
// msecs_to_jiffies does. Every timer carries a callback name (a code into
// `function_names`) that shows in traces and results.
//
// Simplifications vs. a real machine
//   * A task always runs on its home CPU (the fair scheduler's preference
//     for the previous CPU); the highest priority first, first come first
//     served among equals; a SCHED_FIFO task preempts a lower priority at
//     the end of the interrupt that woke it (no time slices, no CFS).
//   * Interrupts on a busy CPU take no time; from idle they keep the CPU
//     awake irq_ns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "timerlab/random.hpp"

namespace timerlab {

// Tasks per CPU and timeouts armed at one occasion, at most: the engine
// creates them in one step, before the runaway guard (guard.hpp) can look.
inline constexpr unsigned kMaxPerOccasion = 10'000;
// A task's mean run + sleep cycle, at least (two context switches take
// longer): a 1-ns cycle would be a simulation step per ns.
inline constexpr double kMinTaskCycleNs = 1000;

struct TimeoutSpec {
  unsigned count = 0;  // timeouts armed per occasion
  Dist timeout_ns;
  double cancel_p = 0;
  Dist cancel_after_ns;
  std::uint32_t flags = 0;  // TIMER_PINNED / TIMER_DEFERRABLE
  std::uint16_t function = 0;
};

// How a task sleeps for its sleep_ns (hrtimers-and-latency.md §A.2; the
// hrtimer sleeps' window is the task's slack):
//   timeout          schedule_timeout: a process_timeout wheel timer
//   external         woken by an interrupt after sleep_ns
//   nanosleep        nanosleep/clock_nanosleep REL: hrtimer_wakeup, window = slack
//   clock_nanosleep  clock_nanosleep ABS at the next period boundary: the
//                    previous one + sleep_ns, past ones skipped (cyclictest)
//   poll             poll/select/epoll_wait timeout (ABS): window =
//                    max(slack, 0.1 % of the timeout, 0.5 % if nice > 0), at most 100 ms
//   usleep_range     usleep_range(sleep_ns, sleep_ns + range_ns): window = range_ns
//   timerlat         the timerlat tracer's kthread: an ABS|PINNED|HARD hrtimer
//                    at the next period boundary (wait_next_period)
enum class SleepKind : std::uint8_t { timeout = 0, external, nanosleep, clock_nanosleep, poll, usleep_range, timerlat };

// What a sleep's wakeup measures, per sample (res.latency): nothing,
// cyclictest's latency (clock read in user space - the requested time), or
// timerlat's IRQ and thread latencies.
enum class Measure : std::uint8_t { none = 0, cyclictest = 1, timerlat = 2 };

inline constexpr std::int64_t kDefaultTimerSlackNs = 50'000;  // init_task.timer_slack_ns
inline constexpr std::int64_t kMaxPollSlackNs = 100'000'000;  // fs/select.c MAX_SLACK

struct TaskSpec {
  std::vector<unsigned> cpus;
  unsigned per_cpu = 1;
  Dist run_ns, sleep_ns;
  SleepKind sleep = SleepKind::timeout;
  std::uint16_t sleep_function = 0;  // the wheel timer's or the hrtimer's callback
  // Scheduling: 0 = SCHED_OTHER; 1..99 = SCHED_FIFO priority (preempts
  // lower priorities; its timer slack is 0, as __setscheduler_params makes it).
  unsigned rt_priority = 0;
  int nice = 0;
  std::int64_t timer_slack_ns = kDefaultTimerSlackNs;
  std::int64_t range_ns = 0;  // usleep_range's max - min
  Measure measure = Measure::none;
  TimeoutSpec timeouts;

  bool hrtimer_sleep() const { return sleep >= SleepKind::nanosleep; }
  std::int64_t slack_ns() const { return rt_priority ? 0 : timer_slack_ns; }
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

// A script: what a recorded machine did, as timed operations per CPU
// (timerlab.replay builds it from a trace).
//
//   op            on `cpu` at t_ns
//   arm           timer `key` armed for `expires_jiffies` with `flags` and
//                 callback `function`, from `cpu`, as `place` says: the
//                 policy's placement (mod_timer: push or pull, wakeups and the
//                 deferrable policy apply), add_timer_on(`target_cpu`), or its
//                 own base (re-armed by its callback, which runs there);
//                 its callback, when it expires, runs duration_ns (as traced)
//   cancel        timer_delete of timer `key`
//   busy_start    the CPU starts running a task (leaves the idle loop);
//                 flags kScriptWokenByTimer: the task was woken by the
//                 callback of timer `key` (schedule_timeout's
//                 process_timeout), so it starts when the simulation expires
//                 that timer — on its CPU, or after a reschedule IPI from
//                 the CPU that expired it — and the task's run (this CPU's
//                 items up to the next idle_start) moves with it
//                 duration_ns > 0: no task was woken onto the CPU; it
//                 pulled one (the load balancer in its SCHED softirq) or was
//                 handed one, and stays idle_cpu() to get_nohz_timer_target
//                 for duration_ns, until the trace showed need-resched
//   idle_start    the CPU stops running tasks (enters the idle loop)
//   external_irq  a device interrupt keeping the CPU awake duration_ns from
//                 its arrival (an idle CPU's exit latency included)
//   tick_delay    the CPU's next periodic tick fires duration_ns after its
//                 grid time (the trace's tick ran that late; < 1 tick).
//                 flags kScriptStoppedTick: the trace's tick was stopped and
//                 its programmed wakeup, t_ns + 1, arrived duration_ns late:
//                 a simulated stopped tick programmed for the same time
//                 arrives as late (wake_latency.hpp); a simulated tick that
//                 runs takes it as its lateness, as for flags 0
//   wake_irq      the CPU's clock wakeup programmed for t_ns + 1 (its tick
//                 of that grid point, late as tick_delay says, or a stopped
//                 tick's wakeup programmed then), if it wakes the CPU from
//                 idle, keeps it in the interrupt duration_ns from when it
//                 fired: the trace's handler and the softirqs it raised
//                 (timer callbacks, RCU, nohz idle balancing) took that long
//                 before the idle loop went round again. A simulated wakeup
//                 up to a tick later than the traced one takes it as well.
//   idle_exit     an interrupt that sets need-resched with no task to run
//                 (6.12's fair-server timer): the CPU leaves the idle loop —
//                 tick_nohz_idle_exit, tmigr_cpu_activate — and enters it
//                 afresh (duration_ns, its stay awake in the trace, is kept
//                 for the record but not replayed)
//   tick_policy   from now on, the CPU's idle loop keeps the tick (flags=1),
//                 stops it (2) or lets the governor decide (0): imposes the
//                 trace's tick decisions, to study the rest in isolation
//   hrtimer_arm   hrtimer `key` started from `cpu` (hrtimer_start_range_ns)
//                 for [expires_jiffies, expires_jiffies + duration_ns] —
//                 here ns of CLOCK_MONOTONIC, ABS — with the mode bits in
//                 flags (PINNED/SOFT/HARD as HRTIMER_MODE_*; REL arms are
//                 replayed as their absolute time) and callback `function`;
//                 placed by the hrtimer model (get_nohz_timer_target, the
//                 first-timer rule), or on its own base (place own_base: a
//                 restart from its own callback). Its expiry is an interrupt;
//                 a task asleep on it (busy_start kScriptWokenByHrtimer) wakes
//                 When this instance wakes its CPU from idle, it arrives
//                 late_ns late (>= 0: its traced handler's lateness; -1: the
//                 platform's, wake_latency.hpp)
//   hrtimer_cancel  hrtimer_cancel of hrtimer `key`
//   wake_pending  a task was woken onto this CPU (sched_wakeup): until it
//                 runs, the CPU is not idle_cpu() to get_nohz_timer_target
//
// Only busy_start, external_irq and idle_exit wake an idle CPU. Any other item
// reaching a CPU the simulation has idle runs there without waking it: the
// trace shows that CPU awake then, and the simulated wakeup that hosted the
// operation came at a slightly different time (the idle path then
// re-evaluates the CPU's next event, as after an interrupt). Expiry is
// simulated, not replayed: a timer's callback does nothing, its re-arms
// are the script's. An arm whose timer the simulation still has pending
// (the trace had it expire or deleted without a trace of it) deletes it first, so
// that every arm enqueues, as in the trace. Timer `key` has TimerId `key`
// (pointer key + 1 in the event log): script timers are allocated first.
// busy_start flags: the task was woken by timer `key`'s expiry, or by
// hrtimer `key`'s (hrtimer_wakeup: a nanosleep, poll, ... timeout).
inline constexpr std::uint32_t kScriptWokenByTimer = 1;
inline constexpr std::uint32_t kScriptWokenByHrtimer = 2;
// tick_delay flags: the lateness of a stopped tick's programmed wakeup.
inline constexpr std::uint32_t kScriptStoppedTick = 1;

enum class ScriptOp : std::uint8_t {
  arm = 0, cancel = 1, busy_start = 2, idle_start = 3, external_irq = 4, tick_policy = 5, tick_delay = 6,
  jiffies_duty = 7, idle_exit = 8, wake_irq = 9, hrtimer_arm = 10, hrtimer_cancel = 11, wake_pending = 12
};

// Where a scripted arm goes (timerlab.replay.arms reads it off the trace).
enum class ArmPlace : std::uint8_t { policy = 0, on_cpu = 1, own_base = 2 };

struct ScriptItem {
  std::int64_t t_ns = 0;
  std::uint32_t cpu = 0;
  ScriptOp op = ScriptOp::arm;
  std::uint32_t key = 0;          // arm, cancel; busy_start woken by a timer
  std::uint64_t expires_jiffies = 0;  // arm
  std::uint32_t flags = 0;        // arm: TIMER_PINNED | TIMER_DEFERRABLE | TIMER_IRQSAFE; tick_policy: 0/1/2;
                                  // jiffies_duty: 1 = nobody holds it; busy_start: kScriptWokenByTimer;
                                  // tick_delay: kScriptStoppedTick
  std::uint16_t function = 0;     // arm
  std::uint32_t target_cpu = 0;   // arm: the base's CPU in the trace; jiffies_duty: the new holder
  std::int64_t duration_ns = 0;   // external_irq, idle_exit, tick_delay; arm: its callback's;
                                  // busy_start: how long the CPU stays idle_cpu()
  ArmPlace place = ArmPlace::policy;  // arm, hrtimer_arm
  std::int64_t late_ns = -1;          // hrtimer_arm: its traced lateness waking an idle CPU (-1: none)
};

struct ScriptSpec {
  std::vector<ScriptItem> items;      // sorted by t_ns; ties run in this order
  std::uint32_t nr_keys = 0;          // timer keys are 0 .. nr_keys-1
  std::uint32_t nr_hrtimer_keys = 0;  // hrtimer keys are 0 .. nr_hrtimer_keys-1
  std::vector<std::uint8_t> initial_busy;  // per CPU: running a task at the start (empty: none)
  // Per CPU: the tick policy (as tick_policy) in force from the start, for
  // an idle period that began before the trace (empty: the governor's).
  std::vector<std::uint8_t> initial_tick;

  bool empty() const {
    return items.empty() && nr_keys == 0 && nr_hrtimer_keys == 0 && initial_busy.empty() && initial_tick.empty();
  }
  // Throws std::invalid_argument naming the first bad item.
  void validate(unsigned nr_cpus, std::size_t nr_functions) const;
};

struct WorkloadSpec {
  std::vector<TaskSpec> tasks;
  std::vector<TimeoutStreamSpec> streams;
  std::vector<PeriodicSpec> periodic;
  std::vector<RemoteEnqueueSpec> remote;
  std::vector<LoopSpec> loops;
  std::vector<unsigned> busy_cpus;
  ScriptSpec script;
  std::vector<std::string> function_names;  // index = code
  std::int64_t irq_ns = 2000;

  // Throws std::invalid_argument naming the problem (CPU out of range,
  // unknown function code, negative rates ...).
  void validate(unsigned nr_cpus) const;
};

}  // namespace timerlab
