// engine_replay.cpp — the runtime of a script: a real trace's timer
// operations and busy/idle intervals, replayed at their recorded times on
// their recorded CPUs (the model is ScriptSpec in workload.hpp).
//
// Theory of operation
// -------------------
// Every item becomes a work item of its CPU at its time; items of one CPU at
// one instant run in script order (the work queue breaks ties by item
// number). What the kernel decides is left to the simulation: where an armed
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
//   tick_policy     applies from the next pass of the idle loop
//   tick_delay      from the next tick on, this CPU's periodic tick comes
//                   duration_ns after the tick grid (a traced tick's lateness)
//   jiffies_duty    target_cpu takes the jiffies-update duty (flags 1:
//                   nobody holds it), as the trace's jiffies show; taking
//                   it happens at a tick, which brings jiffies up to date
//
// Only arm/cancel/busy_start/external_irq are interrupts in the trace: on a
// CPU whose tick is stopped they bring jiffies up to date (with the jiffies
// duty); the tick and duty items are bookkeeping placed between trace events.
//
// Simplifications vs. the kernel
//   * Scripted operations take no time; a timer's callback does nothing
//     (its effects — re-arms, wakeups of tasks — are scripted items).
//   * A task's CPU is the trace's: no load balancing is simulated.
#include <stdexcept>
#include <string>

#include "engine_impl.hpp"
#include "timerlab/mod_timer.hpp"

namespace timerlab {

void ScriptSpec::validate(unsigned nr_cpus, std::size_t nr_functions) const {
  auto bad = [](std::size_t i, const std::string& m) {
    throw std::invalid_argument("script item " + std::to_string(i) + ": " + m);
  };
  if (nr_keys > (1u << 24)) throw std::invalid_argument("script: nr_keys must be at most 2^24");
  for (const auto& [name, v] : {std::pair{"initial_busy", &initial_busy}, std::pair{"initial_tick", &initial_tick}}) {
    if (!v->empty() && v->size() != nr_cpus) {
      throw std::invalid_argument(std::string("script: ") + name + " has " + std::to_string(v->size()) +
                                  " entries for " + std::to_string(nr_cpus) + " CPUs");
    }
  }
  for (std::size_t c = 0; c < initial_tick.size(); ++c) {
    if (initial_tick[c] > 2) {
      throw std::invalid_argument("script: initial_tick of CPU " + std::to_string(c) +
                                  " must be 0 (governor), 1 (keep) or 2 (stop)");
    }
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const ScriptItem& it = items[i];
    if (it.t_ns < 0) bad(i, "time " + std::to_string(it.t_ns) + " ns is negative");
    if (i > 0 && it.t_ns < items[i - 1].t_ns) {
      bad(i, "times are not sorted (" + std::to_string(it.t_ns) + " ns after " + std::to_string(items[i - 1].t_ns) +
                 " ns)");
    }
    if (it.cpu >= nr_cpus) bad(i, "CPU " + std::to_string(it.cpu) + " does not exist (cpus=" + std::to_string(nr_cpus) + ")");
    switch (it.op) {
      case ScriptOp::arm:
        if (it.target_cpu >= nr_cpus) bad(i, "target CPU " + std::to_string(it.target_cpu) + " does not exist");
        if (it.place > ArmPlace::own_base) bad(i, "unknown place " + std::to_string(static_cast<int>(it.place)));
        if (it.flags & ~TIMER_INIT_FLAGS) bad(i, "flags may hold only pinned, deferrable and irqsafe");
        if (it.function >= nr_functions) bad(i, "unknown function code " + std::to_string(it.function));
        [[fallthrough]];
      case ScriptOp::cancel:
        if (it.key >= nr_keys) bad(i, "timer key " + std::to_string(it.key) + " >= nr_keys " + std::to_string(nr_keys));
        break;
      case ScriptOp::external_irq:
        if (it.duration_ns < 0 || it.duration_ns > 1'000'000'000'000) bad(i, "duration_ns must be in [0, 1000 s]");
        break;
      case ScriptOp::tick_delay:
        if (it.duration_ns < 0 || it.duration_ns > 1'000'000'000'000) bad(i, "tick_delay must be in [0, 1000 s]");
        break;
      case ScriptOp::tick_policy:
        if (it.flags > 2) bad(i, "tick_policy must be 0 (governor), 1 (keep) or 2 (stop)");
        break;
      case ScriptOp::jiffies_duty:
        if (it.flags > 1) bad(i, "jiffies_duty flags must be 0 (target_cpu holds it) or 1 (nobody)");
        if (it.flags == 0 && it.target_cpu >= nr_cpus) bad(i, "jiffies_duty: CPU " + std::to_string(it.target_cpu) + " does not exist");
        break;
      case ScriptOp::busy_start:
      case ScriptOp::idle_start:
        break;
      default:
        bad(i, "unknown operation " + std::to_string(static_cast<int>(it.op)));
    }
  }
}

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
  for (unsigned c = 0; c < s.initial_busy.size(); ++c) cpus_[c].script_busy = s.initial_busy[c] != 0;
  for (unsigned c = 0; c < s.initial_tick.size(); ++c) cpus_[c].script_tick = s.initial_tick[c];
  for (std::size_t i = 0; i < s.items.size(); ++i) {
    const ScriptItem& it = s.items[i];
    // Items before the start run at the start, in order.
    cpus_[it.cpu].work.push({std::max(it.t_ns, now_), work_script, i});
  }
}

bool Engine::script_runs_in_idle(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  if (cs.work.empty() || cs.work.top().t > now_ || cs.work.top().kind != work_script) return false;
  const ScriptOp op = cfg_.workload.script.items[cs.work.top().id].op;
  if (op == ScriptOp::busy_start || op == ScriptOp::external_irq) return false;
  const WorkItem item = cs.work.top();
  cs.work.pop();
  // The trace shows the CPU in an interrupt here: tick_nohz_irq_enter.
  const bool bookkeeping = op == ScriptOp::tick_delay || op == ScriptOp::tick_policy || op == ScriptOp::jiffies_duty;
  if (cfg_.jiffies_duty && cs.tick_stopped && !bookkeeping) update_jiffies();
  script_op(cpu, static_cast<std::size_t>(item.id));
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
  switch (it.op) {
    case ScriptOp::arm: {
      const TimerId t = script_timers_[it.key];
      info_[t].function = it.function;
      if (pool_[t].pending()) del_timer(cpu, t);  // the trace had it not pending: enqueue as it did
      pool_[t].flags = (pool_[t].flags & ~TIMER_INIT_FLAGS) | it.flags;
      if (it.place == ArmPlace::on_cpu) {
        res_.cpus[cpu].timer_overhead_ns += cfg_.overhead.enqueue_ns;
        add_timer_on(*this, t, it.expires_jiffies, it.target_cpu);
        if (info_[t].row >= 0) res_.timers[static_cast<std::size_t>(info_[t].row)].expires_jiffies = pool_[t].expires;
      } else {
        // A re-arm from the timer's callback is a mod_timer that stays on
        // the base the callback runs from (its CPU bits still name it).
        keep_base_ = it.place == ArmPlace::own_base;
        arm(cpu, t, it.expires_jiffies, MOD_TIMER_NOTPENDING);
        keep_base_ = false;
      }
      script_idle_update(cpu);  // a remote target is woken by the enqueue's IPI, if at all
      break;
    }
    case ScriptOp::cancel: {
      const TimerId t = script_timers_[it.key];
      if (pool_[t].pending()) {
        del_timer(cpu, t);
        script_idle_update(cpu);  // the remote base's CPU is not told, as in the kernel
      }
      break;
    }
    case ScriptOp::busy_start:
      cs.script_busy = true;
      if (cs.act == Activity::irq) {
        cs.need_resched = true;  // leave the idle loop now
        cs.irq_end = now_;
      }  // running already: nothing changes
      break;
    case ScriptOp::idle_start:
      cs.script_busy = false;
      cs.rcu_pending = true;  // the trace's task switched out
      if (cs.act == Activity::run && cs.running < 0 && !cs.always_busy) run_next_task(cpu);
      break;
    case ScriptOp::tick_delay:
      // The item delays the tick of the grid point after its own time —
      // which, for an item from before the start, may still be ahead
      // although the grid point is behind. Later ticks keep the lateness. A
      // delay of a tick or more is a stall that swallowed this grid point's
      // tick: the next one comes late, and then the tick is back on the grid
      // (hrtimer_forward) with its usual lateness.
      if (it.duration_ns < static_cast<std::int64_t>(tick_nsec_)) cs.tick_delay_ns = it.duration_ns;
      if (!cs.tick_stopped) {
        const std::int64_t own = next_tick_after(it.t_ns) + it.duration_ns;
        cs.next_tick = own >= now_ ? own : next_tick_after(now_) + cs.tick_delay_ns;
      }
      break;
    case ScriptOp::tick_policy:
      cs.script_tick = static_cast<std::uint8_t>(it.flags);
      break;
    case ScriptOp::jiffies_duty:
      if (!cfg_.jiffies_duty) break;  // jiffies on the grid: no duty
      // Taking the duty happens at a tick. A CPU whose tick the simulation
      // stopped (where the kernel kept it) cannot hold it: the next ticking
      // CPU takes it instead (the kernel's stalled-jiffies catch-up, after
      // 5 ticks without progress, is not modelled).
      do_timer_cpu_ = it.flags || cpus_[it.target_cpu].tick_stopped ? -1 : static_cast<int>(it.target_cpu);
      if (do_timer_cpu_ >= 0) update_jiffies();
      break;
    case ScriptOp::external_irq:
      interrupt(cpu);
      if (cs.act == Activity::irq) cs.irq_end = std::max(cs.irq_end, now_ + it.duration_ns);
      break;
  }
}

}  // namespace timerlab
