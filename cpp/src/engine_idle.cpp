// engine_idle.cpp — NOHZ idle entry, the idle loop, and leaving idle (see
// nohz.hpp for the model).
#include "engine_impl.hpp"
#include "timerlab/nohz.hpp"

namespace timerlab {

void Engine::idle_enter(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  set_context(cpu);
  set_busy(cpu, false);
  cs.in_idle_loop = true;
  idle_iteration(cpu);
}

void Engine::idle_iteration(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  const jiffies_t basej = jiffies();
  const std::uint64_t basem = basem_of(basej);
  if (tick_nohz_next_event(cpu, basej, basem) > 0) tick_nohz_stop_tick(cpu, basej, basem);
  ++res_.cpus[cpu].idle_entries;
  if (cfg_.record_events) log_.add(SimEvent::cpu_idle, {kDefaultIdleState, cpu});
  account(cpu);
  cs.act = Activity::idle;
}

std::int64_t Engine::tick_nohz_next_event(unsigned cpu, jiffies_t basej, std::uint64_t basem) {
  CpuState& cs = cpus_[cpu];
  TimerCpu& tc = cpu_timers_[cpu];
  const std::uint64_t next = cfg_.pull_model ? tc.get_next_timer_interrupt(basej, basem, tick_nsec_, tmigr_.get(), nullptr)
                                             : tc.get_next_timer_interrupt_push(basej, basem, tick_nsec_);
  // At most a tick away while the tick runs: keep it.
  if (next - basem <= tick_nsec_ && !cs.tick_stopped) {
    cs.timer_expires = 0;
    return 0;
  }
  cs.timer_expires = static_cast<std::int64_t>(std::min<std::uint64_t>(next, KTIME_MAX));
  return cs.timer_expires;
}

void Engine::tick_nohz_stop_tick(unsigned cpu, jiffies_t basej, std::uint64_t basem) {
  CpuState& cs = cpus_[cpu];
  bool timer_idle = cs.tick_stopped;
  std::uint64_t expires = KTIME_MAX;
  if (cfg_.pull_model) {
    TimerCpu& tc = cpu_timers_[cpu];
    const bool was_idle = tc.base(BASE_LOCAL).is_idle();
    expires = tc.timer_base_try_to_set_idle(basej, basem, tick_nsec_, tmigr_.get(), &timer_idle);
    if (!was_idle && tc.base(BASE_LOCAL).is_idle() && cfg_.record_events) {
      log_.add(SimEvent::timer_base_idle, {1, cpu});
    }
  } else {
    timer_idle = true;  // before 6.9 the base was marked idle by the next-event path itself
  }
  // The hierarchy's answer at deactivation may be later than what the
  // estimate saw: keep the earlier.
  if (expires > static_cast<std::uint64_t>(cs.timer_expires)) expires = static_cast<std::uint64_t>(cs.timer_expires);
  if (!timer_idle) return;  // the base could not be marked idle: keep the tick
  if (!cs.tick_stopped) {
    cs.tick_stopped = true;
    ++res_.cpus[cpu].tick_stops;
    if (cfg_.record_events) log_.add(SimEvent::tick_stop, {1});
  }
  cs.wakeup = expires >= KTIME_MAX ? INT64_MAX : static_cast<std::int64_t>(expires);
}

void Engine::idle_exit_to_irq(unsigned cpu, std::uint64_t& cause_counter) {
  CpuState& cs = cpus_[cpu];
  account(cpu);
  ++res_.cpus[cpu].wakeups;
  ++cause_counter;
  if (cfg_.record_events) log_.add(SimEvent::cpu_idle, {kCpuIdleExit, cpu});
  cs.act = Activity::irq;
  cs.irq_end = now_ + cfg_.workload.irq_ns;
}

void Engine::irq_done(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  set_context(cpu);
  if (!cs.need_resched) {
    idle_iteration(cpu);  // nothing to run: round the idle loop again
    return;
  }
  cs.need_resched = false;
  tick_nohz_idle_exit(cpu);
  run_next_task(cpu);
}

void Engine::tick_nohz_idle_exit(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  cs.in_idle_loop = false;
  if (cs.tick_stopped) {
    cs.tick_stopped = false;
    cs.wakeup = INT64_MAX;
    timer_clear_idle(cpu);
    cs.next_tick = next_tick_after(now_);
  } else if (!cfg_.pull_model) {
    // Before 6.9 the base may be marked idle with the tick kept.
    cpu_timers_[cpu].timer_clear_idle();
  }
}

void Engine::timer_clear_idle(unsigned cpu) {
  cpu_timers_[cpu].timer_clear_idle();
  if (!cfg_.pull_model) return;
  if (cfg_.record_events) log_.add(SimEvent::timer_base_idle, {0, cpu});
  tmigr_->tmigr_cpu_activate(cpu);
}

}  // namespace timerlab
