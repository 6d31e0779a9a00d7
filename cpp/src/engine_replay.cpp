// engine_replay.cpp — the runtime of a script: a real trace's timer
// operations and busy/idle intervals, replayed at their recorded times on
// their recorded CPUs (the model is ScriptSpec in workload.hpp).
//
// Theory of operation
// -------------------
// Each CPU's items run in script order, one at a time, each at its time
// (the tick's lateness, the jiffies duty and the tick decisions, which belong
// to the clock, are queued all at once). What the kernel decides is left to the simulation: where an armed
// timer goes (__mod_timer with the arming CPU as the current one), whether
// and whom it wakes, when and where it expires, when the tick stops, which
// idle state is entered, who is the hierarchy's migrator. What the kernel
// was asked to do is the script's: which timers were armed for when, which
// were deleted, when tasks ran, when devices interrupted.
//
//   item            CPU idle in the simulation      CPU awake
//   arm / cancel    runs without waking it, then    runs
//                   the idle path re-reads the
//                   next event (stopped tick)
//   busy_start      wakes it (device), then runs    leaves the idle loop
//                   the task                        (or keeps running)
//   idle_start      —                               enters the idle loop
//   external_irq    wakes it (device)               stays awake duration_ns
//   idle_exit       wakes it (device), then leaves  leaves the idle loop
//                   the idle loop and re-enters it  (if in it) and re-enters it
//   tick_policy     applies from the next pass of the idle loop
//   tick_delay      from the next tick on, this CPU's periodic tick comes
//                   duration_ns after the tick grid (a traced tick's lateness)
//   wake_irq        the clock wakeup it names, if it ends an idle period,
//                   keeps the CPU awake duration_ns (as traced)
//   jiffies_duty    target_cpu takes the jiffies-update duty (flags 1:
//                   nobody holds it), as the trace's jiffies show; taking
//                   it happens at a tick, which brings jiffies up to date
//
// A task woken by a timer's callback (busy_start with kScriptWokenByTimer)
// runs when the simulation expires that timer, not when the trace says: a
// remote expiry by a busy migrator, a late tick or an early one move it, and
// the task's run (the CPU's items up to its next idle_start) moves with it;
// later items keep the trace's time (never earlier than the run's end):
//
//   trace     arm K ... sleep ..... K expires, task runs, re-arms K
//   replay    arm K ... sleep ......... K expires (remote) -> IPI -> runs ...
//                                                 shift = how much later
//
// If the timer already expired here, the task runs at once; if it is not
// pending (the simulation deleted it), at its traced time; if it never
// expires, a second past that. A scripted arm or delete of the timer
// releases a task still waiting on it (in the trace its sleep was over).
//
// Only arm/cancel/busy_start/external_irq are interrupts in the trace: on a
// CPU whose tick is stopped they bring jiffies up to date (with the jiffies
// duty); the tick, wake_irq and duty items are bookkeeping placed between
// trace events.
//
// Simplifications vs. the kernel
//   * Scripted operations take no time; a timer's callback does nothing but
//     take its traced time (its effects — re-arms, wakeups of tasks — are
//     scripted items). Interrupts take their traced time where the CPU
//     idles again after them (external_irq, wake_irq); one that wakes a task
//     ends at once (the switch to the task comes that much early).
//   * A task's CPU is the trace's: no load balancing is simulated; a task
//     woken by a timer runs where the trace ran it.
//   * Only wakeups from timer callbacks are causal; a task woken by another
//     task or an hrtimer (nanosleep) runs at its traced time.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine_impl.hpp"
#include "timerlab/mod_timer.hpp"

namespace timerlab {

namespace {

// A scripted busy_start whose task was woken by a timer's callback waits
// for the simulated expiry at most this long past its traced time (a
// deferrable timer may never be run by an idle CPU).
constexpr std::int64_t kScriptWakeWaitNs = 1'000'000'000;

// Items that keep the trace's clock whatever the activity does: the tick's
// lateness and the jiffies duty are properties of the tick grid, and the
// kernel's tick decisions belong to idle entries that mostly follow its ticks.
bool is_clock_item(ScriptOp op) {
  return op == ScriptOp::tick_delay || op == ScriptOp::jiffies_duty || op == ScriptOp::tick_policy ||
         op == ScriptOp::wake_irq || op == ScriptOp::wake_pending;
}

bool woken_by_timer(const ScriptItem& it) {
  return it.op == ScriptOp::busy_start && (it.flags == kScriptWokenByTimer || it.flags == kScriptWokenByHrtimer);
}

}  // namespace

void Engine::start_script() {
  const ScriptSpec& s = cfg_.workload.script;
  if (s.empty()) return;
  // Each key's timer, with the flags and CPU of its first arm; allocated
  // before any other timer so that key k is TimerId k.
  script_timers_.assign(s.nr_keys, kNoTimer);
  std::vector<const ScriptItem*> first(s.nr_keys, nullptr);
  for (const ScriptItem& it : s.items) {
    if (it.op == ScriptOp::arm && !first[it.key]) first[it.key] = &it;
  }
  for (std::uint32_t k = 0; k < s.nr_keys; ++k) {
    const ScriptItem* f = first[k];
    const TimerId t = new_timer(TimerKind::script, f ? f->function : 0, f ? f->flags : 0, k, f ? f->target_cpu : 0);
    if (t != k) throw std::logic_error("script timers must be allocated first");
    script_timers_[k] = t;
  }
  // Tasks wait on a timer key, or on an hrtimer key (after the timers').
  script_fired_.assign(s.nr_keys + s.nr_hrtimer_keys, 0);
  script_waiters_.assign(s.nr_keys + s.nr_hrtimer_keys, {});
  script_hrtimers_.assign(s.nr_hrtimer_keys, kNoHrtimer);
  // Script hrtimers come right after the ticks (one per CPU): key k is
  // HrtimerId nr_cpus + k in the results (res.hrtimers). Each is set up on
  // the CPU of its first start, with that start's callback.
  std::vector<const ScriptItem*> first_hr(s.nr_hrtimer_keys, nullptr);
  for (const ScriptItem& it : s.items) {
    if (it.op == ScriptOp::hrtimer_arm && !first_hr[it.key]) first_hr[it.key] = &it;
  }
  for (std::uint32_t k = 0; k < s.nr_hrtimer_keys; ++k) {
    const ScriptItem* f = first_hr[k];
    set_context(f ? f->cpu : 0);
    script_hrtimers_[k] = new_hrtimer(HrtimerKind::script, f ? f->function : 0, k, f && (f->flags & HRTIMER_MODE_SOFT));
    if (script_hrtimers_[k] != cpus_.size() + k) throw std::logic_error("script hrtimers must follow the ticks");
  }
  script_steps_.assign(cpus_.size(), {});
  for (unsigned c = 0; c < s.initial_busy.size(); ++c) cpus_[c].script_busy = s.initial_busy[c] != 0;
  for (unsigned c = 0; c < s.initial_tick.size(); ++c) cpus_[c].script_tick = s.initial_tick[c];
  for (std::size_t i = 0; i < s.items.size(); ++i) {
    const ScriptItem& it = s.items[i];
    if (is_clock_item(it.op)) {
      // Items before the start run at the start, in order.
      cpus_[it.cpu].work.push({std::max(it.t_ns, now_), work_script, i});
      ++script_queued_;
    } else {
      script_steps_[it.cpu].push_back(static_cast<std::uint32_t>(i));
    }
  }
  for (unsigned c = 0; c < cpus_.size(); ++c) script_schedule_step(c);
}

void Engine::script_schedule_step(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  const std::vector<std::uint32_t>& steps = script_steps_[cpu];
  if (cs.script_cursor >= steps.size()) return;
  const std::uint32_t i = steps[cs.script_cursor];
  const ScriptItem& it = cfg_.workload.script.items[i];
  // What comes from outside keeps the trace's time: a device interrupt (the
  // run around it goes on moved), a task woken by anything but a timer (a
  // new run, on the trace's time).
  if (it.op == ScriptOp::busy_start && !woken_by_timer(it)) cs.script_shift_ns = 0;
  std::int64_t t = it.t_ns + (it.op == ScriptOp::external_irq ? 0 : cs.script_shift_ns);
  if (woken_by_timer(it)) {
    const std::uint32_t w = waiter_key(it);
    const bool pending = it.flags == kScriptWokenByTimer ? pool_[script_timers_[it.key]].pending()
                                                         : hr_[script_hrtimers_[it.key]].queued();
    if (script_fired_[w]) {
      t = now_;  // its timer already expired: the task is runnable
    } else if (pending) {
      script_waiters_[w].push_back(cpu);
      t += kScriptWakeWaitNs;  // script_timer_fired brings it forward
    }
  }
  cs.script_due = std::max(t, now_);
  push_work(cpu, {cs.script_due, work_script_step, i});
}

bool Engine::script_step_is_current(unsigned cpu, const WorkItem& item) const {
  const CpuState& cs = cpus_[cpu];
  const std::vector<std::uint32_t>& steps = script_steps_[cpu];
  return item.t == cs.script_due && cs.script_cursor < steps.size() && steps[cs.script_cursor] == item.id;
}

void Engine::script_step(unsigned cpu, const WorkItem& item) {
  if (!script_step_is_current(cpu, item)) return;  // rescheduled since: a stale entry
  CpuState& cs = cpus_[cpu];
  const ScriptItem& it = cfg_.workload.script.items[item.id];
  if (woken_by_timer(it)) {
    std::vector<std::uint32_t>& w = script_waiters_[waiter_key(it)];
    w.erase(std::remove(w.begin(), w.end(), cpu), w.end());  // woken at last, or past the deadline
    cs.script_shift_ns = now_ - it.t_ns;  // the task's run follows its wakeup
  }
  ++cs.script_cursor;
  script_op(cpu, static_cast<std::size_t>(item.id));
  if (it.op == ScriptOp::idle_start) cs.script_shift_ns = 0;  // the task's run is over: back on the trace's time
  script_schedule_step(cpu);
}

std::uint32_t Engine::waiter_key(const ScriptItem& it) const {
  return it.flags == kScriptWokenByHrtimer ? cfg_.workload.script.nr_keys + it.key : it.key;
}

void Engine::script_hrtimer_op(unsigned cpu, const ScriptItem& it) {
  const HrtimerId t = script_hrtimers_[it.key];
  // As for a timer: armed or cancelled anew in the trace, its last sleep was over there.
  const std::uint32_t w = cfg_.workload.script.nr_keys + it.key;
  if (!script_waiters_[w].empty()) script_timer_fired(w);
  // Taken off another CPU's queue, the timer leaves that device as it was;
  // when that CPU wakes may now follow another replayed timer (clock_at).
  const std::int32_t was_on = hr_[t].queued() ? hr_[t].cpu : -1;
  if (it.op == ScriptOp::hrtimer_cancel) {
    hr_.cancel(t);
    if (was_on >= 0 && static_cast<unsigned>(was_on) != cpu) touch(static_cast<unsigned>(was_on));
    return;
  }
  script_fired_[w] = 0;
  Hrtimer& h = hr_[t];
  if (!h.queued()) {  // a pointer reused by another hrtimer takes the new one's callback and base
    h.function = it.function;
    h.is_soft = it.flags & HRTIMER_MODE_SOFT;
  }
  hinfo_[t].traced_late_ns = it.late_ns;
  traced_hrtimers_ = traced_hrtimers_ || it.late_ns >= 0;  // clock_at's slow path from now on
  // A task's run moved by its wakeup keeps its sleeps: the absolute expiry moves with it.
  const auto soft = static_cast<std::int64_t>(it.expires_jiffies) + cpus_[cpu].script_shift_ns;
  auto mode = static_cast<std::uint8_t>(it.flags & (HRTIMER_MODE_PINNED | HRTIMER_MODE_SOFT | HRTIMER_MODE_HARD));
  if (it.place == ArmPlace::own_base && h.cpu >= 0) {
    // Restarted by its own callback, which runs on its base's CPU: a local restart there.
    set_context(static_cast<unsigned>(h.cpu));
    mode |= HRTIMER_MODE_PINNED;
  }
  hr_.start_range_ns(t, soft, it.duration_ns, mode);
  set_context(cpu);
  if (was_on >= 0 && was_on != hr_[t].cpu) touch(static_cast<unsigned>(was_on));
}

void Engine::script_timer_fired(std::uint32_t key) {
  script_fired_[key] = 1;
  std::vector<std::uint32_t> waiters;
  waiters.swap(script_waiters_[key]);
  for (const unsigned c : waiters) {
    // try_to_wake_up: the task runs on its CPU; an idle remote CPU is sent
    // a reschedule IPI and runs it once that arrives.
    CpuState& cs = cpus_[c];
    std::int64_t t = log_.ts_ns();  // when the callback ran (later in a long softirq)
    if (c != cur_ && cs.act == Activity::idle) {
      send_ipi(c);
      t += cfg_.ipi_latency_ns;
    }
    cs.script_due = t;
    push_work(c, {t, work_script_step, script_steps_[c][cs.script_cursor]});
  }
}

bool Engine::script_runs_in_idle(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  if (cs.work.empty() || cs.work.top().t > now_) return false;
  const WorkItem item = cs.work.top();
  if (item.kind != work_script && item.kind != work_script_step) return false;
  const bool stale = item.kind == work_script_step && !script_step_is_current(cpu, item);
  const ScriptOp op = cfg_.workload.script.items[item.id].op;
  if (!stale && (op == ScriptOp::busy_start || op == ScriptOp::external_irq || op == ScriptOp::idle_exit)) return false;
  cs.work.pop();
  if (stale) return true;  // nothing happens: the item was rescheduled
  // The trace shows the CPU in an interrupt here: tick_nohz_irq_enter.
  const bool bookkeeping = is_clock_item(op);
  if (cfg_.jiffies_duty && cs.tick_stopped && !bookkeeping) update_jiffies();
  if (item.kind == work_script) {
    script_op(cpu, static_cast<std::size_t>(item.id));
  } else {
    script_step(cpu, item);
  }
  return true;
}

void Engine::script_idle_update(unsigned cpu) {
  // After an interrupt the idle loop recomputes the next event; with the
  // tick kept, the tick itself will see the new timer.
  CpuState& cs = cpus_[cpu];
  if (cs.act != Activity::idle || !cs.tick_stopped) return;
  const jiffies_t basej = jiffies();
  const std::uint64_t basem = basem_of(basej);
  tick_nohz_next_event(cpu, basej, basem);
  tick_nohz_stop_tick(cpu, basej, basem);
}

void Engine::script_op(unsigned cpu, std::size_t i) {
  const ScriptItem& it = cfg_.workload.script.items[i];
  CpuState& cs = cpus_[cpu];
  set_context(cpu);
  if (is_clock_item(it.op)) --script_queued_;  // queued at the start (start_script), taken now
  switch (it.op) {
    case ScriptOp::arm: {
      const TimerId t = script_timers_[it.key];
      // Armed anew in the trace, the timer's last sleep was over there: a
      // task still waiting for it here (its address reused by another task's
      // on-stack timer, say) wakes now rather than wait for an expiry that
      // this arm replaces.
      if (!script_waiters_[it.key].empty()) script_timer_fired(it.key);
      script_fired_[it.key] = 0;  // a new sleep, if a task sleeps on it
      info_[t].function = it.function;
      info_[t].callback_ns = it.duration_ns;  // the traced duration of this instance's callback
      if (pool_[t].pending()) del_timer(cpu, t);  // the trace had it not pending: enqueue as it did
      pool_[t].flags = (pool_[t].flags & ~TIMER_INIT_FLAGS) | it.flags;
      // A task's run moved by its wakeup keeps its timeouts: schedule_timeout(1)
      // armed later is due later, by as many ticks as the run moved.
      const jiffies_t expires =
          it.expires_jiffies + (cs.script_shift_ns ? jiffies_at(now_) - jiffies_at(it.t_ns) : 0);
      if (it.place == ArmPlace::on_cpu) {
        res_.cpus[cpu].timer_overhead_ns += cfg_.overhead.enqueue_ns;
        add_timer_on(*this, t, expires, it.target_cpu);
        if (info_[t].row >= 0) res_.timers[static_cast<std::size_t>(info_[t].row)].expires_jiffies = pool_[t].expires;
      } else {
        // A re-arm from the timer's callback is a mod_timer that stays on
        // the base the callback runs from (its CPU bits still name it).
        keep_base_ = it.place == ArmPlace::own_base;
        arm(cpu, t, expires, MOD_TIMER_NOTPENDING);
        keep_base_ = false;
      }
      script_idle_update(cpu);  // a remote target is woken by the enqueue's IPI, if at all
      break;
    }
    case ScriptOp::cancel: {
      const TimerId t = script_timers_[it.key];
      // Deleted in the trace, the timer ends the sleep of no task waiting on
      // it here: such a task was woken otherwise, and runs now.
      if (!script_waiters_[it.key].empty()) script_timer_fired(it.key);
      if (pool_[t].pending()) {
        del_timer(cpu, t);
        script_idle_update(cpu);  // the remote base's CPU is not told, as in the kernel
      }
      break;
    }
    case ScriptOp::busy_start:
      cs.script_busy = true;
      // Not for a task already queued on its wake list (ttwu_pending: the waker's IPI came first).
      if (it.duration_ns > 0 && cs.act != Activity::run && !cs.wake_pending) {
        cs.idle_cpu_until_ns = now_ + it.duration_ns;
        pulled_.set(cpu);
        any_pulled_ = true;
      }
      if (cs.act == Activity::irq) {
        cs.need_resched = true;  // leave the idle loop now
        cs.irq_end = now_;
      } else if (cs.running < 0 && !busy_.test(cpu)) {
        run_next_task(cpu);  // out of the idle loop after an idle_exit, not yet idle again
      }  // running already: nothing changes
      break;
    case ScriptOp::idle_start:
      cs.script_busy = false;
      cs.rcu_pending = true;  // the trace's task switched out
      if (cs.act == Activity::run && cs.running < 0 && !cs.always_busy) run_next_task(cpu);
      break;
    case ScriptOp::tick_delay:
      if (it.flags & kScriptStoppedTick) {
        // The kernel's stopped tick was programmed for just after the item:
        // a simulated wakeup programmed for the same time is as late.
        cs.traced_late_for = it.t_ns + 1;
        cs.traced_late_ns = it.duration_ns;
      }
      // The item delays the tick of the grid point after its own time —
      // which, for an item from before the start, may still be ahead
      // although the grid point is behind. Later ticks keep the lateness. A
      // delay of a tick or more is a stall that swallowed this grid point's
      // tick: the next one comes late, and then the tick is back on the grid
      // (hrtimer_forward) with its usual lateness.
      if (it.duration_ns < static_cast<std::int64_t>(tick_nsec_)) cs.tick_delay_ns = it.duration_ns;
      if (!cs.tick_stopped) {
        // The replay's bookkeeping, not a kernel restart: no trace of it.
        const std::int64_t own = next_tick_after(it.t_ns) + it.duration_ns;
        trace_hrtimers_ = false;
        tick_program(cpu, own >= now_ ? own : next_tick_after(now_) + cs.tick_delay_ns);
        trace_hrtimers_ = true;
      }
      break;
    case ScriptOp::wake_irq:
      cs.wake_irq_for = it.t_ns + 1;
      cs.wake_irq_ns = it.duration_ns;
      break;
    case ScriptOp::tick_policy:
      cs.script_tick = static_cast<std::uint8_t>(it.flags);
      break;
    case ScriptOp::jiffies_duty:
      if (!cfg_.jiffies_duty) break;  // jiffies on the grid: no duty
      // Taking the duty happens at a tick. A CPU whose tick the simulation
      // stopped (where the kernel kept it) cannot hold it: the next ticking
      // CPU takes it instead (and, 5.18+, any ticking CPU catches jiffies up
      // after 5 ticks without progress: Engine::jiffies_stall_check).
      do_timer_cpu_ = it.flags || cpus_[it.target_cpu].tick_stopped ? -1 : static_cast<int>(it.target_cpu);
      if (do_timer_cpu_ >= 0) update_jiffies();
      break;
    case ScriptOp::external_irq:
      interrupt(cpu);
      // The traced stay awake counts from the interrupt's arrival: a CPU
      // woken from idle runs this item only after its exit latency.
      if (cs.act == Activity::irq) cs.irq_end = std::max(cs.irq_end, now_ - cs.wake_exit_latency + it.duration_ns);
      break;
    case ScriptOp::wake_pending:
      if (cs.act != Activity::run) set_wake_pending(cpu, true);
      break;
    case ScriptOp::hrtimer_arm:
    case ScriptOp::hrtimer_cancel:
      script_hrtimer_op(cpu, it);
      break;
    case ScriptOp::idle_exit:
      // need_resched with nothing to run: do_idle leaves its loop when the
      // interrupt ends (irq_done), and the hierarchy sees the CPU active at
      // once, as in the trace; it idles again when the trace's CPU did.
      cs.exit_stay_until_ns = now_ + it.duration_ns;
      interrupt(cpu);
      if (cs.act == Activity::irq && cs.in_idle_loop) cs.need_resched = true;
      break;
  }
}

}  // namespace timerlab
