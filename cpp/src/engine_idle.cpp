// engine_idle.cpp — NOHZ idle entry, the idle loop with its governor, idle
// states with their exit latency, and leaving idle (see nohz.hpp and
// idle.hpp for the models).
#include "engine_impl.hpp"
#include "timerlab/nohz.hpp"

namespace timerlab {

// What the governor may ask of the NOHZ code during one pass of the loop.
class Engine::SleepLength final : public IdleContext {
 public:
  SleepLength(Engine& e, unsigned cpu) : e_(e), cpu_(cpu) {}
  std::int64_t get_sleep_length(std::int64_t* delta_tick) override {
    return e_.tick_nohz_get_sleep_length(cpu_, delta_tick);
  }
  bool tick_stopped() const override { return e_.cpus_[cpu_].tick_stopped; }

 private:
  Engine& e_;
  unsigned cpu_;
};

void Engine::idle_enter(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  set_context(cpu);
  set_busy(cpu, false);
  cs.in_idle_loop = true;
  idle_iteration(cpu);
}

void Engine::idle_iteration(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  resolve_cause(cpu);
  set_wake_pending(cpu, false);  // a wakeup still pending would not let the CPU idle again
  cs.expires_computed = false;
  // cpuidle_idle_call: the governor picks a state and says whether the tick
  // may stop; a stopped tick is re-evaluated on every pass anyway.
  bool stop_tick = true;
  SleepLength ctx(*this, cpu);
  const int idx = cs.governor->select(ctx, &stop_tick);
  if (cs.script_tick) stop_tick = cs.script_tick == 2;  // a replay imposing the trace's decision
  if (stop_tick || cs.tick_stopped) {
    tick_nohz_idle_stop_tick(cpu);
  } else if (!cfg_.pull_model) {
    // tick_nohz_idle_retain_tick before 6.9: the sleep-length query marked
    // the base idle; keeping the tick undoes it, so no remote enqueue IPIs
    // a CPU whose tick will see the timer (pre-6.9-kernels.md §4.2, §7).
    cpu_timers_[cpu].timer_clear_idle();
  }
  enter_state(cpu, idx);
}

std::int64_t Engine::tick_nohz_next_event(unsigned cpu, jiffies_t basej, std::uint64_t basem) {
  CpuState& cs = cpus_[cpu];
  TimerCpu& tc = cpu_timers_[cpu];
  std::uint64_t next;
  if (cfg_.rcu_needs_cpu && cs.rcu_pending && cs.script_tick != 2) {
    // The CPU is needed (rcu_needs_cpu): the next tick, without asking the
    // timer bases (and so without the hierarchy's quick check). A replay
    // imposing the trace's "stop" overrides it, as any imposed decision does.
    next = basem + tick_nsec_;
  } else {
    if (cfg_.pull_model) {
      next = tc.get_next_timer_interrupt(basej, basem, tick_nsec_, tmigr_.get(), nullptr);
    } else {
      next = tc.get_next_timer_interrupt_push(basej, basem, tick_nsec_);
      cs.next_expiry_pre59 = tc.base(BASE_STD).next_expiry();
    }
  }
  cs.expires_computed = true;
  // At most a tick away while the tick runs: keep it (before 6.9 the base is
  // not idle then either: timer_clear_idle).
  if (next - basem <= tick_nsec_) {
    if (!cfg_.pull_model) tc.timer_clear_idle();
    if (!cs.tick_stopped) {
      cs.timer_expires = 0;
      return 0;
    }
  }
  cs.timer_expires = static_cast<std::int64_t>(std::min<std::uint64_t>(next, KTIME_MAX));
  return cs.timer_expires;
}

std::int64_t Engine::tick_nohz_get_sleep_length(unsigned cpu, std::int64_t* delta_tick) {
  // The device's next event (the tick, or an earlier hrtimer); then the
  // wheel's next event, or the first hrtimer other than the tick if earlier
  // (hrtimer_next_event_without): the governor sees every hrtimer.
  const std::int64_t programmed = hr_.base(cpu).device_next;
  *delta_tick = programmed == INT64_MAX ? INT64_MAX : programmed - now_;
  const jiffies_t basej = jiffies();
  std::int64_t next = tick_nohz_next_event(cpu, basej, basem_of(basej));
  if (next == 0) return *delta_tick;
  next = std::min(next, hr_.next_event_without(cpu, cpus_[cpu].tick_timer));
  return next >= static_cast<std::int64_t>(KTIME_MAX) ? INT64_MAX : next - now_;
}

void Engine::tick_nohz_idle_stop_tick(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  const jiffies_t basej = jiffies();
  const std::uint64_t basem = basem_of(basej);
  // The governor may already have run the next-event path (sleep length).
  const std::int64_t expires = cs.expires_computed ? cs.timer_expires : tick_nohz_next_event(cpu, basej, basem);
  if (expires > 0) tick_nohz_stop_tick(cpu, basej, basem);
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
  const bool was_stopped = cs.tick_stopped;
  if (!cs.tick_stopped) {
    cs.tick_stopped = true;
    if (do_timer_cpu_ == static_cast<int>(cpu)) do_timer_cpu_ = -1;  // give up the jiffies duty
    ++res_.cpus[cpu].tick_stops;
    if (cfg_.record_events) log_.add(SimEvent::tick_stop, {1});
  }
  // The tick's hrtimer now stands for the next event (none: cancelled); a
  // stopped tick already programmed for it is left alone.
  const std::int64_t wakeup = expires >= KTIME_MAX ? INT64_MAX : static_cast<std::int64_t>(expires);
  if (!was_stopped || tick_expires(cpu) != wakeup) tick_program(cpu, wakeup);
}

void Engine::enter_state(unsigned cpu, int idx) {
  CpuState& cs = cpus_[cpu];
  const auto& states = cfg_.idle.states;
  const unsigned node = static_cast<unsigned>(topo_.node_of(cpu));
  // A package state needs every other CPU of the package in an idle state.
  cs.package_ok = node_idle_[node] + 1 >= node_size_[node];
  if (states[static_cast<std::size_t>(idx)].package && !cs.package_ok) {
    while (idx > 0 && (states[static_cast<std::size_t>(idx)].package || states[static_cast<std::size_t>(idx)].disabled)) {
      --idx;
    }
  }
  account(cpu);
  cs.act = Activity::idle;
  cs.state = idx;
  cs.idle_entry = now_;
  cs.predicted = cs.governor->predicted_ns();
  if (!cfg_.wake_latency.empty()) cs.wake_late_ns = cfg_.wake_latency.draw(cpu, cs.tick_stopped, wake_rng_[cpu]);
  // A polling state is not halted: it takes its interrupt at once (drawn
  // all the same, so that the draws do not depend on the states chosen).
  if (states[static_cast<std::size_t>(idx)].polling) cs.wake_late_ns = 0;
  ++node_idle_[node];
  ++res_.cpus[cpu].idle_entries;
  if (cfg_.record_events) {
    cs.idle_log_row = log_.rows().size();
    log_.add(SimEvent::cpu_idle, {static_cast<std::uint64_t>(idx), cpu});
  }
}

void Engine::choose_post_hoc(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  if (!cs.governor->post_hoc()) return;
  // The oracle chooses knowing how long the CPU was idle.
  cs.state = cs.governor->choose_post_hoc(now_ - cs.idle_entry, cs.package_ok);
  if (cs.idle_log_row != SIZE_MAX) log_.patch(cs.idle_log_row, 0, static_cast<std::uint64_t>(cs.state));
}

void Engine::begin_exit(unsigned cpu, WakeSource src) {
  CpuState& cs = cpus_[cpu];
  choose_post_hoc(cpu);
  --node_idle_[static_cast<unsigned>(topo_.node_of(cpu))];
  cs.act = Activity::exiting;
  cs.wake_src = src;
  const std::int64_t exit = cfg_.idle.states[static_cast<std::size_t>(cs.state)].exit_latency_ns;
  cs.exit_done = now_ + exit;
  cs.wake_function = -1;
  cs.wake_by_tick = false;
  if (src == WakeSource::clock) {  // for the latency of what the interrupt runs
    cs.clock_woke_at = now_;
    cs.clock_woke_exit_ns = exit;
    cs.clock_woke_state = cs.state;
  }
}

void Engine::finish_exit(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  const auto& states = cfg_.idle.states;
  const IdleState& st = states[static_cast<std::size_t>(cs.state)];
  const std::int64_t residency = now_ - cs.idle_entry;  // cpuidle's last_residency_ns: entry to end of exit
  // cpuidle_enter_state's misses: too short for the state although a
  // shallower one was available (above), or long enough for the next deeper
  // enabled state (below).
  bool above = false, below = false;
  if (residency < st.target_residency_ns) {
    for (int i = cs.state - 1; i >= 0; --i) {
      if (!states[static_cast<std::size_t>(i)].disabled) {
        above = true;
        break;
      }
    }
  } else if (residency > st.exit_latency_ns) {
    for (std::size_t i = static_cast<std::size_t>(cs.state) + 1; i < states.size(); ++i) {
      if (states[i].disabled) continue;
      below = residency - st.exit_latency_ns >= states[i].target_residency_ns;
      break;
    }
  }
  StateUsage& u = res_.usage[cpu][static_cast<std::size_t>(cs.state)];
  ++u.usage;
  u.time_ns += residency;
  u.min_ns = std::min(u.min_ns, residency);
  u.max_ns = std::max(u.max_ns, residency);
  u.above += above;
  u.below += below;
  CpuCounters& cc = res_.cpus[cpu];
  cc.energy_uj += st.power_mw * static_cast<double>(residency) * 1e-6 + st.transition_uj;
  cs.governor->reflect(cs.state, residency, cs.wake_src == WakeSource::clock);
  account(cpu);
  ++cc.wakeups;
  if (cfg_.record_events) log_.add(SimEvent::cpu_idle, {kCpuIdleExit, cpu});
  if (cfg_.record_idle) {
    cs.period_row = static_cast<std::int64_t>(res_.idle_periods.size());
    res_.idle_periods.add(static_cast<std::int32_t>(cpu), cs.state, cs.idle_entry, residency, cs.predicted,
                          WakeCause::timer, above, below);
  }
  // tick_nohz_irq_enter: an interrupt on a CPU whose tick is stopped brings jiffies up to date.
  if (cfg_.jiffies_duty && cs.tick_stopped) update_jiffies();
  cs.act = Activity::irq;
  cs.exit_done = INT64_MAX;
  cs.irq_end = now_ + cfg_.workload.irq_ns;
  // The interrupt serves the device (a work item) that woke the CPU before
  // it ends (irq_exit follows the handler), even with irq_ns = 0, when both
  // are due at once: otherwise the CPU went back to idle with the item
  // still due, was woken by it at the same instant, and so on forever.
  cs.irq_for_work = cs.wake_src == WakeSource::device;
  cs.wake_exit_latency = st.exit_latency_ns;
  cs.cause_pending = true;
  cs.local_before = cc.timers_expired_local;
  cs.remote_before = cc.remote_expiries_done;
}

void Engine::resolve_cause(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  if (!cs.cause_pending) return;
  cs.cause_pending = false;
  const CpuCounters& cc = res_.cpus[cpu];
  const bool task = !cs.runq.empty() || cs.running >= 0 || cs.script_busy;
  WakeCause cause;
  switch (cs.wake_src) {
    case WakeSource::ipi:
      cause = task ? WakeCause::task : WakeCause::ipi;
      break;
    case WakeSource::clock:
      cause = cs.wake_function >= 0 && !cs.wake_by_tick         ? WakeCause::hrtimer
              : cc.timers_expired_local > cs.local_before     ? WakeCause::timer
              : cc.remote_expiries_done > cs.remote_before ? WakeCause::remote_duty
              : cs.tick_stopped                            ? WakeCause::timer
                                                           : WakeCause::tick;
      break;
    default:
      cause = task ? WakeCause::task : WakeCause::irq;
      break;
  }
  ++res_.cpus[cpu].wakeups_by[static_cast<int>(cause)];
  if (cs.period_row >= 0) {
    const auto row = static_cast<std::size_t>(cs.period_row);
    res_.idle_periods.cause[row] = static_cast<std::uint8_t>(cause);
    res_.idle_periods.function[row] = cs.wake_function;
  }
  cs.period_row = -1;
}

void Engine::irq_done(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  set_context(cpu);
  if (cs.remote_more) {
    // Back to the hierarchy for the events left (remote_yield), in a softirq of its own.
    cs.remote_more = false;
    softirq_ns_ = std::max<std::int64_t>(0, cs.softirq_end - now_);
    handle_remote(cpu);
    softirq_done(cpu);
    if (cs.irq_end != INT64_MAX) return;  // it took time: done at its end
  }
  resolve_cause(cpu);
  cs.wake_exit_latency = 0;
  if (!cs.need_resched) {
    idle_iteration(cpu);  // nothing to run: round the idle loop again
    return;
  }
  cs.need_resched = false;
  tick_nohz_idle_exit(cpu);
  // Leaving the idle loop goes through schedule() even with no task to run;
  // the traces keep the tick at the next idle entry then, as after a task
  // (82 of 82 such entries on the 16-CPU idle trace): the same window.
  if (cfg_.rcu_needs_cpu) cs.rcu_pending = true;
  if (now_ < cs.exit_stay_until_ns && cs.runq.empty() && !cs.script_busy && !cs.always_busy) {
    // A replayed idle-loop exit with nothing to run: the trace's CPU spent
    // this long in schedule() (the fair server's bookkeeping arms its
    // inactive_task_timer there) before it idled again. Still idle_cpu().
    account(cpu);
    cs.act = Activity::run;
    push_work(cpu, {cs.exit_stay_until_ns, work_resched, 0});
    return;
  }
  run_next_task(cpu);
}

void Engine::tick_nohz_idle_exit(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  cs.in_idle_loop = false;
  if (cs.tick_stopped) {
    cs.tick_stopped = false;
    timer_clear_idle(cpu);
    // tick_nohz_restart: cancel, then on the grid again.
    hr_.cancel(cs.tick_timer);
    tick_program(cpu, next_tick_after(now_) + cs.tick_delay_ns);
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
