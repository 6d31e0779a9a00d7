// engine_impl.hpp — the Engine class, shared by the engine's sources
// (engine.cpp: loop, timers, tick and softirq; engine_idle.cpp: NOHZ idle;
// engine_workload.cpp: tasks and timer generators; engine_replay.cpp: the
// script of a replayed trace). See engine.hpp.
#pragma once

#include <algorithm>
#include <queue>
#include <vector>

#include "timerlab/cpu_queue.hpp"
#include "timerlab/engine.hpp"
#include "timerlab/hrtimer.hpp"
#include "timerlab/mod_timer.hpp"
#include "hrtimer_impl.hpp"

namespace timerlab {

// run: a task (or background load); irq: awake in interrupt context from
// idle; idle: in an idle state; exiting: woken, paying the state's exit latency.
enum class Activity : std::uint8_t { run, irq, idle, exiting };

// The source that ended an idle period.
enum class WakeSource : std::uint8_t { ipi, clock, device };

// What a timer's callback does.
enum class TimerKind : std::uint8_t { none, sleep, timeout, periodic, remote, script };

// A workload item due on a CPU at a time.
struct WorkItem {
  std::int64_t t;
  std::uint8_t kind;  // WorkKind
  std::uint64_t id;   // task, stream, spec, or (generation << 32 | timer)
  bool operator>(const WorkItem& o) const {
    if (t != o.t) return t > o.t;
    if (kind != o.kind) return kind > o.kind;
    return id > o.id;
  }
};
enum WorkKind : std::uint8_t {
  work_resched, work_burst_end, work_task_wake, work_stream, work_cancel, work_remote, work_loop, work_script,
  work_script_step,  // the next item of a CPU's scripted activity (engine_replay.cpp)
  work_preempt       // a higher-priority task woken here takes the CPU (resched_curr)
};

// What an hrtimer's callback does (engine_hrtimer.cpp).
enum class HrtimerKind : std::uint8_t { none, tick, sleeper, fair_server, script };

// Laid out by the paths that touch it, in cache lines (the struct is
// aligned to one): at 256 CPUs a CPU's state is cold again by its next
// step, so each line an idle cycle touches is a miss. Line 0: what every
// step reads; 1: the idle entry and exit; 2: the queues; 3-4: the clock
// interrupt and the wakeup's cause; then what only a replay, an old
// kernel or a rare path reads.
struct alignas(64) CpuState {
  // The fields every step reads (next_time, clock_at) and the clock
  // interrupt reads or writes.
  Activity act = Activity::run;
  bool tick_stopped = false;
  bool need_resched = false;   // set by an IPI or a local wakeup while in irq
  bool preempt_pending = false;  // a higher priority woken in this clock interrupt
  bool cause_pending = false;
  bool in_idle_loop = false;
  bool rcu_pending = false;    // rcu_needs_cpu: a task ran since this CPU's last tick
  bool timer_softirq_raised = false;     // by the tick's run_local_timers
  WakeSource wake_src = WakeSource::clock;
  int state = -1;              // the idle state entered (see below)
  int running = -1;                      // task
  // The clock event device's programmed time: hrtimer_cpu_base's
  // device_next, kept here by hrtimer_device_programmed and the clock
  // interrupt (check_invariants compares them), so that the dispatch reads
  // the CPU's state alone.
  std::int64_t device_next = INT64_MAX;
  std::int64_t irq_end = INT64_MAX;
  std::int64_t ipi_at = INT64_MAX;
  std::int64_t exit_done = INT64_MAX;    // while exiting, when the exit ends
  std::int64_t since = 0;                // start of the current activity

  // How late the clock wakeup that ends this idle period arrives
  // (wake_latency.hpp): drawn at the idle entry (0 in a polling state),
  // unless a replay traced the wakeup programmed for traced_late_for (by
  // traced_late_ns, below).
  std::int64_t wake_late_ns = 0;
  std::int64_t traced_late_for = INT64_MIN;
  // Idle (idle.hpp): when the state was entered, what the governor
  // predicted; the exit latency of the exit that started the current
  // interrupt work.
  std::int64_t idle_entry = 0, predicted = 0;
  std::int64_t wake_exit_latency = 0;
  std::int64_t timer_expires = 0;        // tick_nohz_next_event's result
  std::int64_t period_row = -1;
  std::size_t idle_log_row = SIZE_MAX;

  std::priority_queue<WorkItem, std::vector<WorkItem>, std::greater<>> work;
  std::vector<int> runq;                 // runnable tasks, FIFO
  std::unique_ptr<Governor> governor;

  std::int64_t softirq_end = 0;  // when its last timer softirq's callbacks are done
  std::int64_t tick_delay_ns = 0;  // a replayed trace's lateness of this CPU's periodic tick
  // The clock interrupt being served, for the latency of what it runs: the
  // time its device was programmed for, when it reached the CPU (an idle
  // CPU's wakeup; INT64_MIN: the CPU was awake), the exit latency paid and
  // the idle state left (-1: none).
  std::int64_t clock_woke_at = INT64_MIN, clock_woke_exit_ns = 0;
  std::int64_t irq_programmed = 0, irq_arrival = 0, irq_exit_ns = 0, irq_start = 0;
  std::int32_t clock_woke_state = -1;
  std::int32_t irq_state = -1;
  // The tick is an hrtimer (tick_sched.sched_timer): periodic while it runs,
  // the stopped tick's programmed wakeup otherwise (not queued: none).
  HrtimerId tick_timer = kNoHrtimer;
  // The first hrtimer the interrupt that ended an idle period ran (its
  // function names the wakeup), kNoHrtimer if none.
  std::int32_t wake_function = -1;
  // A replay's traced stay awake (wake_irq) for the clock wakeup of the
  // tick grid point or stopped-tick time wake_irq_for (below); -1: none.
  std::int64_t wake_irq_ns = -1;
  // A replayed idle_exit: the CPU idles again no earlier than this.
  std::int64_t exit_stay_until_ns = 0;
  std::uint64_t local_before = 0, remote_before = 0;
  bool script_busy = false;    // a replayed trace has a task running here
  std::uint8_t script_tick = 0;  // a replayed trace's tick decision: 0 governor, 1 keep, 2 stop
  bool wake_pending = false;  // a task was woken onto this idle CPU and has not run yet
  bool irq_for_work = false;   // in an interrupt from idle whose work item is not yet served
  bool remote_more = false;    // let go of the hierarchy mid-way (remote_yield): back at irq end
  bool wake_by_tick = false;
  bool package_ok = false;         // every other CPU of the package was idle at entry
  bool expires_computed = false;   // ts->timer_expires_base is set this pass

  std::int64_t traced_late_ns = 0;
  std::int64_t wake_irq_for = INT64_MIN;
  bool always_busy = false;
  std::uint8_t stalled_jiffies = 0;  // jiffies_duty: own ticks that saw jiffies unchanged
  // A replayed trace's activity on this CPU, one item at a time: the next
  // item's position, when it is due (entries at other times are stale), and
  // how far the activity runs behind (or ahead of) the trace since a task
  // here was woken by a simulated expiry.
  std::uint32_t script_cursor = 0;
  std::int64_t script_due = INT64_MIN;
  std::int64_t script_shift_ns = 0;
  // A replayed busy_start whose task the CPU pulled itself: until then it
  // is still idle_cpu() to get_nohz_timer_target (replay only).
  std::int64_t idle_cpu_until_ns = 0;
  // Before 5.9: the STD base's next_expiry as the idle path left it (and a
  // remote wakeup lowered it to the requested expiry).
  jiffies_t next_expiry_pre59 = 0;
  jiffies_t last_tick_jiffies = 0;
  HrtimerId fair_server = kNoHrtimer;    // the fair server's dl_task_timer (SimConfig)
};

// A measured wakeup on its way to res.latency: the hrtimer's requested (R)
// and hard (E) expiry, the clock interrupt that ran it — programmed for P,
// reaching the CPU at A, after an exit latency served from `irq_start` —
// and when its handler ran (H).
struct LatencyDraft {
  bool active = false;
  std::int64_t requested_ns = 0, expires_ns = 0, programmed_ns = 0, arrival_ns = 0, exit_ns = 0;
  std::int64_t irq_start_ns = 0, handler_ns = 0;
  std::int32_t state = -1;
};

struct TaskState {
  unsigned cpu;
  unsigned spec;
  bool sleeping = true;
  TimerId sleep_timer = kNoTimer;
  Rng rng;
  unsigned prio = 0;                 // 0: SCHED_OTHER; 1..99: SCHED_FIFO
  HrtimerId sleeper = kNoHrtimer;    // an hrtimer sleep's hrtimer_sleeper
  std::int64_t next_abs = 0;         // clock_nanosleep ABS / timerlat: the period boundary
  std::uint32_t burst_gen = 0;       // tells a preempted burst's stale end apart
  std::int64_t burst_end = 0;        // when its current burst ends
  std::int64_t remaining_ns = -1;    // preempted: the rest of its burst (-1: none)
  LatencyDraft sample{};             // a measured wakeup in flight (res.latency)
};

// An hrtimer's side data (the model's Hrtimer holds the kernel's fields).
struct HrtimerInfo {
  HrtimerKind kind = HrtimerKind::none;
  std::uint8_t mode = 0;
  std::int64_t row = -1;  // res.hrtimers
  std::int64_t callback_ns = -1;  // a replay's traced duration (-1: the function's)
  std::int64_t traced_late_ns = -1;  // a replay's lateness waking an idle CPU (-1: the platform's)
};

struct TimerInfo {
  std::uint32_t generation = 0;  // tells apart instances that reuse a TimerId
  TimerKind kind = TimerKind::none;
  std::uint16_t function = 0;
  std::uint32_t owner = 0;  // task, periodic index or remote spec
  std::int64_t row = -1;
  std::int64_t callback_ns = -1;  // a replay's traced duration of this instance's callback (-1: the function's)
};

class Engine final : public TmigrHost, public HardGlobalEvents, public HrtimerHost {
 public:
  explicit Engine(const SimConfig& cfg);
  SimResult run();

  // Context of __mod_timer (mod_timer.hpp) and of the hierarchy (TmigrHost).
  TimerPool& pool() { return pool_; }
  jiffies_t jiffies() const { return cfg_.jiffies_duty ? jiffies_now_ : jiffies_at(now_); }
  TimerBase& timer_base(TimerId t) {
    const std::uint32_t f = pool_[t].flags;
    return cpu_timers_[f & TIMER_CPUMASK].base(timer_base_index(f, cfg_.pull_model, cfg_.deferrable));
  }
  TimerBase& target_base(TimerId t, TimerBase& current);
  void trace_timer_start(TimerBase& base, TimerId t, const EnqueueResult& r);
  void trace_timer_cancel(TimerBase& base, TimerId t);
  void trigger_dyntick_cpu(TimerBase& base, TimerId t, bool new_first);
  TimerBase& cpu_base(unsigned cpu, std::uint32_t flags) {
    return cpu_timers_[cpu].base(timer_base_index(flags, cfg_.pull_model, cfg_.deferrable));
  }
  bool add_timer_on_pins() const { return cfg_.pull_model; }
  void timer_expire_remote(unsigned cpu) override;
  std::uint64_t fetch_next_global_remote(unsigned cpu) override;
  std::uint64_t first_hard_global(jiffies_t basej, std::uint64_t basem) override;
  bool remote_yield() override;
  // HrtimerHost (engine_hrtimer.cpp)
  unsigned hrtimer_this_cpu() override { return cur_; }
  std::int64_t hrtimer_now() override { return now_ + hardirq_ns_; }
  unsigned hrtimer_nohz_target() override { return get_nohz_timer_target(cur_); }
  std::int64_t hrtimer_first_late_ns(unsigned cpu, HrtimerId first) override {
    return first == cpus_[cpu].tick_timer ? cpus_[cpu].tick_delay_ns : 0;
  }
  bool hrtimer_tick_running() override { return !cpus_[cur_].tick_stopped || cpus_[cur_].need_resched; }
  HrtimerRestart hrtimer_callback(HrtimerId t, std::int64_t now) override;
  void hrtimer_device_programmed(unsigned cpu, std::int64_t t) override {
    cpus_[cpu].device_next = t;
    if (cpu != cur_) touch(cpu);
  }
  // Every (re)start, the tick's every tick among them: the counter here, a
  // row or an event only when asked for (engine_hrtimer.cpp).
  void trace_hrtimer_start(HrtimerId t, std::uint8_t mode, bool was_armed) override {
    HrtimerInfo& info = hinfo_[t];
    info.mode = mode;
    const bool row = cfg_.record_hrtimers == RecordHrtimers::all ||
                     (cfg_.record_hrtimers == RecordHrtimers::no_tick && info.kind != HrtimerKind::tick);
    // (A re-arm without a row to end and nothing to record, the fair
    // server's at every task start, needs no call.)
    if ((was_armed && info.row >= 0) || row || cfg_.record_events) hrtimer_start_rows(t, mode, was_armed);
    ++res_.cpus[static_cast<unsigned>(hr_[t].cpu)].hrtimers_armed;
  }
  void trace_hrtimer_cancel(HrtimerId t) override;

 private:
  // engine.cpp
  jiffies_t jiffies_at(std::int64_t ns) const;
  std::uint64_t basem_of(jiffies_t j) const;
  std::int64_t next_tick_after(std::int64_t ns) const;
  // One source of one CPU, inlined into the run loop (its only caller),
  // which link-time optimisation does by itself; without it the call's
  // register saves were ~2 % of the engine's instructions. A work item,
  // the one path with a heap pop, stays out of line (next_work).
  [[gnu::always_inline]] void step(unsigned cpu);
  [[gnu::noinline]] void next_work(unsigned cpu);
  std::int64_t next_time(unsigned cpu) const;
  std::int64_t clock_at(unsigned cpu) const;
  std::int64_t clock_at_late(unsigned cpu, std::int64_t programmed) const;
  void set_context(unsigned cpu) {
    cur_ = cpu;
    log_.set_context(now_, cpu);
  }
  void tick(unsigned cpu);
  HrtimerRestart tick_nohz_handler(unsigned cpu, std::int64_t now);
  void clock_interrupt(unsigned cpu);
  void tick_program(unsigned cpu, std::int64_t expires);  // the tick hrtimer (re)armed, or cancelled
  std::int64_t tick_expires(unsigned cpu) const;
  void jiffies_stall_check(unsigned cpu);  // tick_sched_do_timer's, 5.18+
  void run_timer_softirq(unsigned cpu);
  void handle_remote(unsigned cpu);
  void softirq_done(unsigned cpu);
  void run_base(TimerBase& base);
  void expire_timer(TimerBase& base, TimerId t, jiffies_t baseclk);
  void arm(unsigned cpu, TimerId t, jiffies_t expires, unsigned options);
  void del_timer(unsigned cpu, TimerId t);
  TimerId new_timer(TimerKind kind, std::uint16_t function, std::uint32_t flags, std::uint32_t owner, unsigned cpu);
  void release_timer(TimerId t);
  unsigned get_nohz_timer_target(unsigned cpu);
  void wake_up_nohz_cpu(unsigned cpu);
  void send_ipi(unsigned to);
  void set_busy(unsigned cpu, bool busy);
  void set_wake_pending(unsigned cpu, bool pending);
  void update_nonidle(unsigned cpu);
  void touch(unsigned cpu) { queue_.update(cpu, next_time(cpu)); }
  // tick_do_update_jiffies64: catch jiffies up with the clock (jiffies_duty).
  void update_jiffies() { jiffies_now_ = std::max(jiffies_now_, jiffies_at(now_)); }
  void account(unsigned cpu);
  void check_invariants();

  // engine_guard.cpp (guard.hpp): guard_instant when the run loop takes a
  // CPU's due time (the only place now_ moves), guard_step before every
  // step. A new instant starts the count at "minus one" so that its first
  // step counts 0, as the steps before it at the same instant did.
  void guard_instant() {
    if (now_ != guard_t_) {
      guard_t_ = now_;
      guard_steps_ = UINT64_MAX;
    }
  }
  void guard_step(unsigned cpu) {
    if (++guard_steps_ > guard_steps_limit_) runaway_no_progress(cpu);
    // One test a step: the guard's period is a multiple of the poll's.
    if ((res_.steps & (InterruptPoll::kPollSteps - 1)) == 0) {
      if ((res_.steps & (kGuardCheckSteps - 1)) == 0) guard_check(cpu);
      poll_.poll(now_);
    }
  }
  static constexpr std::uint64_t kGuardCheckSteps = 1u << 16;
  static_assert(kGuardCheckSteps % InterruptPoll::kPollSteps == 0);
  [[noreturn]] void runaway_no_progress(unsigned cpu);
  void guard_check(unsigned cpu);
  std::string due_source(unsigned cpu) const;
  std::uint64_t memory_bytes() const;

  // engine_idle.cpp (kernel/time/tick-sched.c, kernel/sched/idle.c,
  // drivers/cpuidle/cpuidle.c)
  class SleepLength;
  void idle_enter(unsigned cpu);
  void idle_iteration(unsigned cpu);
  std::int64_t tick_nohz_next_event(unsigned cpu, jiffies_t basej, std::uint64_t basem);
  std::int64_t tick_nohz_get_sleep_length(unsigned cpu, std::int64_t* delta_tick);
  void tick_nohz_idle_stop_tick(unsigned cpu);
  void tick_nohz_stop_tick(unsigned cpu, jiffies_t basej, std::uint64_t basem);
  void enter_state(unsigned cpu, int idx);
  void choose_post_hoc(unsigned cpu);
  void begin_exit(unsigned cpu, WakeSource src);
  void finish_exit(unsigned cpu);
  void resolve_cause(unsigned cpu);
  void irq_done(unsigned cpu);
  void tick_nohz_idle_exit(unsigned cpu);
  void timer_clear_idle(unsigned cpu);

  // engine_workload.cpp
  void start_workload();
  void work(unsigned cpu, const WorkItem& item);
  void cancel_timeout(unsigned cpu, std::uint64_t id);
  void wake_task(int task);
  void preempt(unsigned cpu);
  void extend_burst(unsigned cpu, std::int64_t ns);
  int pick_next_task(unsigned cpu);
  void run_next_task(unsigned cpu);
  void task_starts_running(unsigned cpu, int task);
  void task_burst_end(unsigned cpu, int task);
  void arm_timeouts(unsigned cpu, const TimeoutSpec& spec, Rng& rng);
  void stream_arrival(unsigned cpu, std::uint64_t id);
  void remote_enqueue(unsigned cpu, std::uint32_t spec);
  void enqueue_dequeue_loop(unsigned cpu, std::uint32_t spec);
  void timer_callback(TimerId t);
  void interrupt(unsigned cpu);  // a device interrupt on `cpu` (wakes it if idle)
  jiffies_t timeout_jiffies(std::int64_t ns) const;
  void push_work(unsigned cpu, WorkItem item);

  // engine_hrtimer.cpp
  HrtimerId new_hrtimer(HrtimerKind kind, std::uint16_t function, std::uint32_t owner, bool soft);
  void hrtimer_start_rows(HrtimerId t, std::uint8_t mode, bool was_armed);
  void hrtimer_row_end(HrtimerId t, TimerOutcome outcome, std::int64_t at) {
    if (hinfo_[t].row >= 0) hrtimer_row_close(t, outcome, at);
  }
  void hrtimer_row_close(HrtimerId t, TimerOutcome outcome, std::int64_t at);
  std::int64_t hrtimer_callback_ns(HrtimerId t) const;
  void hrtimer_sleep(unsigned cpu, int task);
  void fair_server_fired(unsigned cpu);
  void latency_draft(unsigned cpu, int task, HrtimerId t, std::int64_t handler_at);
  void latency_done(unsigned cpu, int task);

  // engine_replay.cpp (the script of a replayed trace, workload.hpp)
  void start_script();
  void script_op(unsigned cpu, std::size_t item);
  bool script_runs_in_idle(unsigned cpu);
  void script_idle_update(unsigned cpu);
  void script_schedule_step(unsigned cpu);
  void script_step(unsigned cpu, const WorkItem& item);
  bool script_step_is_current(unsigned cpu, const WorkItem& item) const;
  void script_timer_fired(std::uint32_t key);  // a timer key, or nr_keys + an hrtimer key
  std::uint32_t waiter_key(const ScriptItem& it) const;
  void script_hrtimer_op(unsigned cpu, const ScriptItem& it);

  SimConfig cfg_;
  Topology topo_;
  std::uint64_t tick_nsec_;
  jiffies_t initial_jiffies_;
  TimerPool pool_;
  std::vector<TimerCpu> cpu_timers_;
  EventLog log_;
  TmigrLogTracer tracer_{log_};
  std::unique_ptr<Tmigr> tmigr_;
  std::vector<CpuState> cpus_;
  CpuQueue queue_;
  CpuMask busy_;     // CPUs running a task
  CpuMask nonidle_;  // not idle_cpu(): running a task, or one was woken onto it
  CpuMask pulled_;   // CPUs whose idle_cpu_until_ns may be ahead (replay)
  CpuMask placement_busy_;  // scratch: nonidle_ without the CPUs still idle_cpu() by pulled_
  bool any_pulled_ = false;
  const CpuMask& placement_busy();
  std::vector<unsigned> node_idle_, node_size_;  // CPUs in an idle state, per node (package)
  std::vector<TaskState> tasks_;
  std::vector<Rng> stream_rng_, periodic_rng_, remote_rng_, wake_rng_;
  std::vector<TimerInfo> info_;
  std::vector<TimerId> free_timers_;
  std::vector<TimerId> script_timers_;  // key -> timer
  std::vector<std::vector<std::uint32_t>> script_steps_;  // per CPU: its activity items, in order
  // A replay's clock items still in the work queues: queued all at the
  // start, they are the trace's length, not a runaway (guard_check).
  std::uint64_t script_queued_ = 0;
  std::vector<HrtimerId> script_hrtimers_;   // hrtimer key -> hrtimer
  std::vector<std::uint8_t> script_fired_;   // key -> expired since its last scripted arm
  // key -> the CPUs whose next item waits for its expiry (rarely more than one:
  // an on-stack timer's address reused by tasks of several CPUs).
  std::vector<std::vector<std::uint32_t>> script_waiters_;
  SimResult res_;
  std::int64_t now_ = 0, end_ns_ = 0;
  jiffies_t jiffies_now_ = 0;  // jiffies_duty: the kernel's jiffies
  int do_timer_cpu_ = -1;      // jiffies_duty: tick_do_timer_cpu (-1: none)
  unsigned cur_ = 0;
  bool in_mod_timer_ = false;
  std::int64_t softirq_ns_ = 0;  // time the current timer softirq has taken so far (callbacks)
  std::int64_t hardirq_ns_ = 0;  // time the current hard interrupt has taken so far (entry, hrtimer callbacks)
  bool in_clock_irq_ = false;    // inside clock_interrupt (hard handlers and softirqs)
  HrtimersT<Engine> hr_;  // direct calls into the engine (hrtimer.hpp)
  std::vector<HrtimerInfo> hinfo_;
  bool trace_hrtimers_ = true;  // off for the replay's own tick bookkeeping (tick_delay)
  // A replayed re-arm from the timer's own callback: __mod_timer keeps the
  // timer on its base, as it does while the callback runs there.
  bool keep_base_ = false;
  std::size_t pending_ = 0;
  // A replayed hrtimer carries a traced lateness (clock_at).
  bool traced_hrtimers_ = false;
  // The runaway guard (engine_guard.cpp).
  std::int64_t guard_t_ = INT64_MIN;
  std::uint64_t guard_steps_ = 0, guard_steps_limit_ = 0;
  InterruptPoll poll_{cfg_.guard.interrupted};
};

// clock_at and next_time run two or three times a step: inline, so that the
// run loop's dispatch compiles to loads and compares.
inline std::int64_t Engine::clock_at(unsigned cpu) const {
  // The clock event as programmed; an idle CPU takes it late (an awake one
  // at once: the interrupt is pending when it wakes; so does a polling one,
  // which is not halted). Called twice a step: the common cases (an awake
  // CPU, no replayed hrtimers) touch nothing but the CPU's state and stay
  // inline; the rest is clock_at_late (engine_hrtimer.cpp).
  const CpuState& cs = cpus_[cpu];
  const std::int64_t programmed = cs.device_next;
  if (programmed == INT64_MAX) return programmed;
  if (!traced_hrtimers_) {
    if (cs.act != Activity::idle) return programmed;
    // Idle, and no replay traced how late this CPU woke: the lateness
    // drawn at its idle entry (0 in a polling state).
    if (cs.traced_late_for == INT64_MIN) return programmed + cs.wake_late_ns;
  }
  return clock_at_late(cpu, programmed);
}

inline std::int64_t Engine::next_time(unsigned cpu) const {
  const CpuState& cs = cpus_[cpu];
  // While paying its exit latency a CPU runs no code: everything waits.
  if (cs.act == Activity::exiting) return cs.exit_done;
  std::int64_t t = std::min({cs.ipi_at, cs.irq_end, clock_at(cpu)});
  if (!cs.work.empty()) t = std::min(t, cs.work.top().t);
  return t;
}

// Treats idle and exiting alike: a CPU paying its exit latency is still in
// its idle period (the kernel's residency includes the exit).
inline bool in_idle_period(Activity a) { return a == Activity::idle || a == Activity::exiting; }

}  // namespace timerlab
