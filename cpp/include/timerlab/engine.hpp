// engine.hpp — the discrete-event simulation of a machine's timer subsystem.
//
// Ties the models together: per-CPU timer bases (timer_cpu.hpp) and the
// timer API (mod_timer.hpp), placement (push: get_nohz_timer_target; pull:
// always local), remote wakeups (trigger_dyntick_cpu), the timer-migration
// hierarchy (tmigr.hpp), the tick and NOHZ idle (kernel/time/tick-sched.c:
// tick_nohz_next_event, tick_nohz_stop_tick, tick_nohz_idle_exit), and the
// workload (workload.hpp). Reference: kernel-timers.md §2-§5.
//
// Theory of operation
// -------------------
// Time is CLOCK_MONOTONIC in int64 ns; jiffies = INITIAL_JIFFIES (or a
// replayed trace's value at 0) + mono / TICK_NSEC, so values look like a
// real trace's. All CPUs' ticks fall on the same TICK_NSEC grid (no tick
// skew), as the kernel's default.
//
// Each CPU is in one of three activities:
//
//     run  --(nothing runnable)-->  idle (in a cpuidle state, tick stopped
//      ^                              |     or kept)
//      |                              | interrupt: tick / programmed wakeup /
//      |                              v            IPI / device
//      +--(a task is runnable)---  irq (awake irq_ns, then back to the idle
//                                       loop, or out of it to run a task)
//
// Every CPU has a handful of pending sources (its clock event device,
// programmed for the first hard expiry of its hrtimers — the tick among them:
// hrtimer.hpp —, an IPI in flight, the end of an interrupt, and its workload
// items); the engine keeps the earliest of
// each CPU in a tournament tree over CPUs (cpu_queue.hpp) and processes
// sources in (time, CPU, source) order, so a run is deterministic. The kernel
// code that runs at each step is the models': an idle entry runs
// tick_nohz_next_event and tick_nohz_stop_tick (which deactivate the CPU in
// the hierarchy and re-arm the tick's hrtimer for the next timer event, or
// cancel it); the clock event runs hrtimer_interrupt — every due hrtimer in
// hard-expiry order, each callback taking its callback_ns: the tick's
// (tick_nohz_handler: run_local_timers, jiffies), a sleeping task's
// hrtimer_wakeup, the fair server's dl_task_timer, a replayed one — then, at
// the interrupt's exit, the raised softirqs: TIMER (own bases, then
// tmigr_handle_remote), then HRTIMER (soft hrtimers); an exit from idle
// restarts the tick (timer_clear_idle activates the CPU in the hierarchy).
//
// Tasks are SCHED_OTHER or SCHED_FIFO (workload.hpp): a higher priority
// woken by an interrupt takes the CPU when that interrupt returns, the
// preempted task keeping the rest of its burst; a task's burst loses the time
// clock interrupts take on its CPU. A measured wakeup (cyclictest, timerlat)
// keeps the timeline of its interrupt — programmed, arrived, exit from idle,
// entry, handler, task running, user space — as a res.latency row
// (LatencyModel).
//
// Idle: each pass of the idle loop asks the CPU's governor (idle.hpp) for a
// state and whether to stop the tick, as cpuidle_idle_call does; the clock
// event of an idle CPU arrives late by the platform's wake latency
// (wake_latency.hpp: equal programmed times are then settled by wake order,
// not CPU number); an interrupt reaching an idle CPU is served after the
// state's exit latency;
// every idle period is accounted per state (residency, above/below, energy)
// and attributed to the cause of its end.
//
// Overhead: the CPU time the kernel would spend in timer code (arming,
// deleting, the push heuristic's search, hierarchy walks, remote expiry,
// running expiries) is accumulated per CPU from per-operation costs
// (OverheadModel), calibrated on the seeds' enqueue+dequeue benchmark. It is
// reported, not charged: it does not lengthen the simulated busy periods.
//
// Softirq time: callbacks run one after another for their callback_ns (a
// later expiry of one softirq starts later; the CPU stays in its interrupt
// until done), and a duty holder whose callbacks took time lets go of the
// hierarchy after each remote CPU (remote_yield), coming back at the end of
// its interrupt, so that CPUs waking meanwhile share one jiffy's events.
//
// Simplifications vs. the kernel
//   * The softirq's own work and the hierarchy walks take no simulated time
//     (callbacks do; only clock interrupts take time from a running task);
//     an interrupt from idle keeps the CPU awake at least irq_ns (after exit
//     latency) — in a replay, an
//     interrupt after which the trace's CPU idled again keeps it as long as
//     traced (external_irq, wake_irq: engine_replay.cpp).
//   * The jiffies-update duty is modelled only with jiffies_duty (replays
//     of real traces, whose ticks run late); otherwise jiffies is always
//     current. timekeeping_max_deferment is not modelled.
//   * RCU is not modelled; its effect on the tick is, empirically: a CPU
//     that switched away from a task keeps its tick until its next tick
//     (rcu_needs_cpu below, nohz.hpp); no grace periods, no callbacks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "timerlab/event_log.hpp"
#include "timerlab/hrtimer.hpp"
#include "timerlab/guard.hpp"
#include "timerlab/idle.hpp"
#include "timerlab/random.hpp"
#include "timerlab/timer_cpu.hpp"
#include "timerlab/topology.hpp"
#include "timerlab/wake_latency.hpp"
#include "timerlab/workload.hpp"

namespace timerlab {

// Costs (ns) of timer code for the overhead model. The defaults reproduce the
// seeds' micro benchmark (arm + delete one timer in a loop, 1/4 of the other
// CPUs busy): 109 ns per pair with the pull model, 145 ns with push, where
// the 36 ns difference is get_nohz_timer_target on a busy CPU. The split of
// 109 between arming and deleting, and the other costs, are assumptions.
struct OverheadModel {
  double enqueue_ns = 62;       // __mod_timer arming path
  double dequeue_ns = 47;       // timer_delete / detach
  double push_target_ns = 36;   // get_nohz_timer_target, current CPU busy
  double push_domain_ns = 20;   // each sched domain it then scans
  double tmigr_level_ns = 40;   // each group a hierarchy walk visits
  double remote_cpu_ns = 250;   // tmigr_handle_remote_cpu expiring a CPU
  double expire_ns = 80;        // running one expired timer (detach + call)
};

// Costs on the path from a clock interrupt to a task it wakes (the latency
// model; res.latency splits each sample into them). The core's default is
// no cost; timerlab.Config supplies documented figures.
struct LatencyModel {
  std::int64_t irq_entry_ns = 0;          // interrupt entry, before the first handler runs
  std::int64_t context_switch_ns = 0;     // switching to the woken task
  std::int64_t return_to_user_ns = 0;     // back to user space (cyclictest reads its clock there)
};

// Which hrtimer instances res.hrtimers keeps.
enum class RecordHrtimers : std::uint8_t { none = 0, no_tick = 1, all = 2 };

struct SimConfig {
  TopologySpec topology;
  unsigned hz = 250;
  bool pull_model = true;          // 6.9+: pull at expiry; false: pre-6.9 push at enqueue
  bool lazy_wakeup = true;         // wake an idle CPU only for its new first timer
  DeferrablePolicy deferrable = DeferrablePolicy::legacy;  // timer_cpu.hpp; non-legacy needs pull_model
  TmigrSetup tmigr_setup = TmigrSetup::fixed;
  bool remote_expires_self = true;
  // 5.9+: a remote idle CPU is woken only when the new timer's bucket is
  // its base's first; before, when the requested expiry precedes the
  // base's next_expiry (trigger_dyntick_cpu of the wheel before 5.9).
  bool first_timer_by_bucket = true;
  // 5.18+: tick_sched_do_timer's stall check (jiffies_duty only).
  bool jiffies_stall_check = true;
  std::int64_t start_ns = 0;  // CLOCK_MONOTONIC at the start (jiffies = initial_jiffies at 0)
  // jiffies at CLOCK_MONOTONIC 0: the kernel's INITIAL_JIFFIES unless set
  // (a replayed trace sets its own, so that simulated and recorded jiffies agree).
  std::optional<jiffies_t> initial_jiffies;
  // Model the jiffies-update duty (kernel/time/tick-sched.c): jiffies advance
  // only when the CPU holding tick_do_timer_cpu ticks (a ticking CPU takes
  // the duty when nobody holds it; a CPU stopping its tick drops it) or when
  // a CPU whose tick is stopped takes an interrupt. Off: jiffies are always
  // current (the tick grid).
  bool jiffies_duty = false;
  // tick_nohz_next_event keeps the tick while something needs the CPU
  // (rcu_needs_cpu: RCU callbacks queued; irq_work; a pending timer
  // softirq). Modelled from the real traces: after a task switches out, an
  // idle entry keeps the tick until the CPU's next tick has run (nohz.hpp).
  // Off: only timers decide.
  bool rcu_needs_cpu = true;
  // 6.12+: the fair server (kernel/sched/deadline.c, dl_server). A task
  // starting to run arms its CPU's dl_task_timer at the zero-laxity point of
  // the deferred server (period 1 s - runtime 50 ms); firing on a CPU in its
  // idle loop it sets need-resched with no task to run, so the CPU leaves
  // the loop (tick_nohz_idle_exit, tmigr_cpu_activate) and idles afresh.
  // 0: no fair server (before 6.12, or a replay, whose trace has its own).
  std::int64_t fair_server_defer_ns = 0;
  // hrtimers (hrtimer.hpp): kernel.timer_migration (non-pinned hrtimers go
  // to get_nohz_timer_target), the ~7.1 locality change (keep_local), the
  // tick's callback name code (tick_sched_timer before 6.10,
  // tick_nohz_handler since), the fair server's (dl_task_timer).
  bool timer_migration = true;
  bool hrtimer_keep_local = false;
  std::uint16_t tick_function = 0, fair_server_function = 0;
  LatencyModel latency;
  RecordHrtimers record_hrtimers = RecordHrtimers::no_tick;
  // PM QoS per CPU: the resume latency limit (ns; empty: none). Each CPU's
  // limit is the smaller of it and latency_req_ns (cpu_dma_latency).
  std::vector<std::int64_t> resume_latency_ns;
  std::int64_t duration_ns = 1'000'000'000;
  std::uint64_t seed = 1;
  std::int64_t ipi_latency_ns = 1000;
  // How late each hardware wakeup of an idle CPU arrives (wake_latency.hpp).
  WakeLatencySpec wake_latency;
  bool record_events = false;
  bool record_timers = true;
  bool record_idle = true;        // one row per idle period
  bool check_invariants = false;  // after every step (slow; for tests)
  IdleTable idle;                 // empty: one state (the default idle), no energy figures
  std::string governor = "menu";
  std::int64_t latency_req_ns = INT64_MAX;
  bool teo_tick_intercepts_fixed = true;
  OverheadModel overhead;
  // How long each callback runs, per function code (missing: no time): a
  // CPU's timer softirq takes the sum, later expiries of that softirq start
  // later, and remote handling lets go of the hierarchy after each remote
  // CPU whose timers took time, so that CPUs waking meanwhile share one
  // jiffy's events (tmigr_handle_remote_up takes one event per lock hold).
  std::vector<std::int64_t> callback_ns;
  WorkloadSpec workload;
  // Limits that stop a run that loops or grows without bound, and the
  // interruption poll (guard.hpp).
  GuardSpec guard;

  void validate() const;  // throws std::invalid_argument naming the option
};

// Why an idle period ended (the first interrupt's purpose, judged by what
// the CPU then did).
enum class WakeCause : std::uint8_t {
  timer = 0,        // its own timer (or a programmed wakeup that found nothing)
  remote_duty = 1,  // the hierarchy's first global event: another CPU's timer
  ipi = 2,          // a reschedule IPI from a remote enqueue, no task to run
  task = 3,         // a task became runnable (IPI or device interrupt)
  tick = 4,         // the periodic tick, kept while idle
  irq = 5,          // a device interrupt that woke no task
  hrtimer = 6,      // an hrtimer other than the tick (its function: IdlePeriods::function)
  count_
};

// Aligned to a cache line, the counters of every idle cycle in the first
// (at 256 CPUs a CPU's counters are cold again by its next wakeup).
struct alignas(64) CpuCounters {
  std::int64_t busy_ns = 0, idle_ns = 0;
  std::uint64_t idle_entries = 0, wakeups = 0, ticks = 0;
  // Beside ticks: the tick's interrupt counts an expiry and a restart each time.
  std::uint64_t hrtimers_armed = 0, hrtimers_expired = 0;
  double energy_uj = 0;           // idle states and transitions (busy energy is added at the end)
  std::uint64_t wakeups_by[static_cast<int>(WakeCause::count_)] = {};
  std::uint64_t tick_stops = 0;
  std::uint64_t softirqs = 0;
  double timer_overhead_ns = 0;   // CPU time in timer code (OverheadModel)
  std::uint64_t timers_armed = 0, timers_cancelled = 0;
  std::uint64_t timers_expired_local = 0;   // timers of this CPU's bases it expired itself
  std::uint64_t timers_expired_remote = 0;  // timers of this CPU's bases expired by another CPU
  std::uint64_t remote_expiries_done = 0;   // timers of other CPUs this CPU expired
  std::uint64_t ipis_sent = 0, ipis_received = 0;
  std::uint64_t tasks_woken = 0;
  // hrtimer_cpu_base's counters (/proc/timer_list).
  std::uint64_t hrtimer_interrupts = 0, hrtimer_retries = 0, hrtimer_hangs = 0;
  std::int64_t hrtimer_max_hang_ns = 0;
  std::uint64_t preemptions = 0;
};

enum class TimerOutcome : std::uint8_t { pending = 0, expired = 1, cancelled = 2, rearmed = 3 };

// One armed hrtimer instance: from hrtimer_start to its end.
struct HrtimerRow {
  HrtimerId hrtimer;
  std::uint16_t function;
  std::uint8_t mode;
  std::int32_t cpu_armed, base_cpu, cpu_expired;
  std::int64_t armed_ns, softexpires_ns, expires_ns, end_ns;
  TimerOutcome outcome;
  std::int64_t callback_ns = 0;
  std::int32_t exit_latency_ns = 0;
};

// One measured wakeup (cyclictest's or timerlat's), split into the parts of
// its latency: requested time R -> the interrupt's programmed time P ->
// its arrival A (platform wake latency) -> exit from idle -> interrupt
// entry -> the handler H (behind earlier handlers) -> the task runs (after
// the rest of the interrupt, softirqs, higher priorities, the switch) ->
// user space. The parts add up to latency_ns.
struct LatencyRow {
  std::int32_t cpu;
  std::uint32_t task;
  Measure tool;
  std::int32_t state;  // the idle state the CPU left (-1: it was awake)
  std::int64_t requested_ns, expires_ns;
  std::int64_t window_ns, wake_ns, exit_latency_ns, irq_entry_ns, handler_wait_ns, sched_ns, user_ns;
  std::int64_t irq_latency_ns;  // handler - hard expiry (timerlat's IRQ latency)
  std::int64_t latency_ns;      // the tool's: cyclictest's (user - R) or timerlat's thread latency (run - E)
};


// One armed timer instance: from timer_start to its end.
struct TimerRow {
  TimerId timer;
  std::uint16_t function;
  std::uint32_t flags;  // TIMER_PINNED | TIMER_DEFERRABLE
  std::int32_t cpu_armed, base_cpu, cpu_expired;
  std::int64_t armed_ns, end_ns;
  jiffies_t expires_jiffies, bucket_expiry_jiffies;
  std::int32_t exit_latency_ns;  // paid by the CPU that ran it, if it woke from idle to do so
  TimerOutcome outcome;
  std::int64_t callback_ns = 0;  // how long its callback ran (expired timers)
};

// The idle periods of a run, one row per period of one CPU from entry to the
// end of the exit, kept as columns: a large run has ~10^6 of them, and the
// bindings hand columns to NumPy without copying or transposing them.
struct IdlePeriods {
  std::vector<std::int32_t> cpu, state;
  std::vector<std::int64_t> start_ns, duration_ns, predicted_ns;
  std::vector<std::uint8_t> cause, above, below;  // cause: a WakeCause
  std::vector<std::int32_t> function;  // the first hrtimer the waking interrupt ran (-1: none)

  std::size_t size() const { return cpu.size(); }
  void add(std::int32_t c, std::int32_t st, std::int64_t start, std::int64_t duration, std::int64_t predicted,
           WakeCause why, bool is_above, bool is_below) {
    cpu.push_back(c);
    state.push_back(st);
    start_ns.push_back(start);
    duration_ns.push_back(duration);
    predicted_ns.push_back(predicted);
    cause.push_back(static_cast<std::uint8_t>(why));
    above.push_back(is_above);
    below.push_back(is_below);
    function.push_back(-1);
  }
};

// Per CPU and idle state, the cpuidle sysfs counters and more.
struct StateUsage {
  std::uint64_t usage = 0, above = 0, below = 0;
  std::int64_t time_ns = 0, min_ns = INT64_MAX, max_ns = 0;
};

struct SimResult {
  std::vector<CpuCounters> cpus;
  std::vector<std::vector<StateUsage>> usage;  // [cpu][state]
  IdlePeriods idle_periods;
  std::vector<TimerRow> timers;
  std::vector<HrtimerRow> hrtimers;
  std::vector<LatencyRow> latency;
  std::vector<EventRow> events;
  std::uint64_t steps = 0;        // sources processed
  std::uint64_t timer_events = 0; // timer_start + timer_cancel + expiries
  std::uint64_t pending_at_end = 0;
  std::uint64_t peak_pending = 0;
  std::int64_t end_ns = 0;
};

class Engine;  // defined in engine_impl.hpp (a private header of the engine sources)

// Runs one simulation. Throws std::invalid_argument for a bad config,
// RunawayError for a run that stops making progress or outgrows its limits,
// Interrupted when cfg.guard.interrupted asks it to stop.
SimResult simulate(const SimConfig& cfg);

}  // namespace timerlab
