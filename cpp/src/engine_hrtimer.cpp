// engine_hrtimer.cpp — the engine as the host of the hrtimer model
// (hrtimer.hpp): the clock interrupt, what each hrtimer's callback does (the
// tick, a sleeping task's hrtimer_wakeup, the fair server's dl_task_timer, a
// replayed timer), their rows in res.hrtimers, and the latency of the wakeups
// a latency tool measures (res.latency). See engine.hpp.
#include <algorithm>

#include "engine_impl.hpp"

namespace timerlab {

HrtimerId Engine::new_hrtimer(HrtimerKind kind, std::uint16_t function, std::uint32_t owner, bool soft) {
  const HrtimerId t = hr_.setup(function, soft, owner);
  if (hinfo_.size() <= t) hinfo_.resize(static_cast<std::size_t>(t) + 1);
  hinfo_[t] = HrtimerInfo{};
  hinfo_[t].kind = kind;
  return t;
}

std::int64_t Engine::hrtimer_callback_ns(HrtimerId t) const {
  const std::int64_t traced = hinfo_[t].callback_ns;
  if (traced >= 0) return traced;
  const std::uint16_t f = hr_[t].function;
  return f < cfg_.callback_ns.size() ? cfg_.callback_ns[f] : 0;
}

void Engine::hrtimer_start_rows(HrtimerId t, std::uint8_t mode, bool was_armed) {
  const Hrtimer& h = hr_[t];
  HrtimerInfo& info = hinfo_[t];
  if (was_armed) hrtimer_row_end(t, TimerOutcome::rearmed, hrtimer_now());
  const bool tick = info.kind == HrtimerKind::tick;
  if (cfg_.record_hrtimers == RecordHrtimers::all || (cfg_.record_hrtimers == RecordHrtimers::no_tick && !tick)) {
    info.row = static_cast<std::int64_t>(res_.hrtimers.size());
    res_.hrtimers.push_back({t, h.function, mode, static_cast<std::int32_t>(cur_), h.cpu, -1, hrtimer_now(),
                             h.softexpires, h.expires, -1, TimerOutcome::pending});
  }
  if (cfg_.record_events && trace_hrtimers_) {
    // In the context the caller logs in (a softirq's callback runs ahead of now_).
    log_.add(SimEvent::hrtimer_start, {std::uint64_t{t} + 1, h.function, static_cast<std::uint64_t>(h.expires),
                                       static_cast<std::uint64_t>(h.softexpires), mode, was_armed});
  }
}

void Engine::trace_hrtimer_cancel(HrtimerId t) {
  hrtimer_row_end(t, TimerOutcome::cancelled, hrtimer_now());
  if (cfg_.record_events && trace_hrtimers_) log_.add(SimEvent::hrtimer_cancel, {std::uint64_t{t} + 1});
}

void Engine::hrtimer_row_close(HrtimerId t, TimerOutcome outcome, std::int64_t at) {
  HrtimerInfo& info = hinfo_[t];
  HrtimerRow& row = res_.hrtimers[static_cast<std::size_t>(info.row)];
  row.outcome = outcome;
  row.end_ns = at;
  if (outcome == TimerOutcome::expired) {
    row.cpu_expired = static_cast<std::int32_t>(cur_);
    row.callback_ns = hrtimer_callback_ns(t);
    row.exit_latency_ns = static_cast<std::int32_t>(cpus_[cur_].irq_exit_ns);
  }
  info.row = -1;
}

// clock_at for an idle CPU, or with replayed hrtimers (engine_impl.hpp).
std::int64_t Engine::clock_at_late(unsigned cpu, std::int64_t programmed) const {
  const CpuState& cs = cpus_[cpu];
  const bool idle = cs.act == Activity::idle;
  // A traced lateness runs to when the kernel's handler ran, its exit from
  // idle included: the simulated CPU pays its state's exit latency after it.
  const IdleState* st = idle ? &cfg_.idle.states[static_cast<std::size_t>(cs.state)] : nullptr;
  const std::int64_t exit = idle ? st->exit_latency_ns : 0;
  if (traced_hrtimers_) {
    // A replayed hrtimer the device is programmed for runs as late as
    // traced, idle or not: the platform delivered the kernel's interrupt that late.
    const HrtimerCpuBase& b = hr_.base(cpu);
    const HrtimerId next = b.next_timer;
    if (next != kNoHrtimer && hinfo_[next].traced_late_ns >= 0 && hr_[next].expires == programmed) {
      return programmed + std::max<std::int64_t>(0, hinfo_[next].traced_late_ns - exit);
    }
    if (next != kNoHrtimer && (!hr_[next].queued() || hr_[next].cpu != static_cast<std::int32_t>(cpu))) {
      // Still programmed for a first timer another CPU removed (no reprogram
      // from there): the kernel's spurious interrupt came when the traced
      // handler of the timer now first ran, if that one was replayed.
      const HrtimerId first = b.clock_base[HRTIMER_BASE_MONOTONIC].first();
      if (first != kNoHrtimer && hinfo_[first].traced_late_ns >= 0 && hr_[first].expires >= programmed) {
        return hr_[first].expires + std::max<std::int64_t>(0, hinfo_[first].traced_late_ns - exit);
      }
    }
    if (!idle) return programmed;
  }
  if (st->polling) return programmed;
  if (programmed == cs.traced_late_for) return programmed + std::max<std::int64_t>(0, cs.traced_late_ns - exit);
  return programmed + cs.wake_late_ns;
}

void Engine::clock_interrupt(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  // What the interrupt is, for the latency of what it runs: the time its
  // device was programmed for, when it reached the CPU and what the CPU
  // paid to leave its idle state (an awake CPU takes it at once).
  cs.irq_programmed = hr_.base(cpu).device_next;
  // This wakeup ended an idle period: a replay's traced stay awake
  // (wake_irq) holds the CPU in its interrupt from when the clock fired.
  const std::int64_t programmed = cs.irq_programmed;
  if (cs.wake_irq_ns >= 0 && cs.cause_pending && cs.wake_src == WakeSource::clock &&
      programmed >= cs.wake_irq_for && programmed < cs.wake_irq_for + static_cast<std::int64_t>(tick_nsec_)) {
    cs.irq_end = std::max(cs.irq_end, now_ - cs.wake_exit_latency + cs.wake_irq_ns);
    cs.wake_irq_ns = -1;
  }
  if (cs.clock_woke_at != INT64_MIN) {
    cs.irq_arrival = cs.clock_woke_at;
    cs.irq_exit_ns = cs.clock_woke_exit_ns;
    cs.irq_state = cs.clock_woke_state;
    cs.clock_woke_at = INT64_MIN;
  } else {
    cs.irq_arrival = now_;
    cs.irq_exit_ns = 0;
    cs.irq_state = -1;
  }
  cs.irq_start = now_;
  const std::int64_t soft_before = cs.softirq_end;
  hardirq_ns_ = cfg_.latency.irq_entry_ns;
  in_clock_irq_ = true;
  cs.device_next = kHrtimerNever;  // it fired (hrtimer_interrupt's first step; it reprograms through the host)
  const bool soft = hr_.hrtimer_interrupt(cpu);
  // irq_exit: the raised softirqs in vector order, TIMER before HRTIMER.
  if (cs.timer_softirq_raised) {
    cs.timer_softirq_raised = false;
    run_timer_softirq(cpu);
  }
  if (soft) {
    softirq_ns_ = std::max({softirq_ns_, hardirq_ns_, cs.softirq_end - now_});
    hardirq_ns_ = softirq_ns_;  // the soft callbacks' clock
    hr_.hrtimer_run_softirq(cpu);
    softirq_ns_ = hardirq_ns_;
    softirq_done(cpu);
  }
  in_clock_irq_ = false;
  // An idle CPU woken for this stays in its interrupt until the handlers are
  // done; a running task loses the time (what an earlier interrupt's
  // softirq still takes, it lost already), and a task of higher priority
  // woken here takes the CPU when the interrupt returns.
  const std::int64_t busy_end = std::max(now_ + hardirq_ns_, cs.softirq_end);
  if (cs.act == Activity::irq && hardirq_ns_ > 0) cs.irq_end = std::max(cs.irq_end, now_ + hardirq_ns_);
  if (cs.act == Activity::run && cs.running >= 0) {
    const std::int64_t lost = busy_end - std::max(now_, soft_before);
    if (lost > 0) extend_burst(cpu, lost);
  }
  if (cs.preempt_pending) {
    cs.preempt_pending = false;
    push_work(cpu, {busy_end, work_preempt, 0});
  }
  hardirq_ns_ = 0;
  softirq_ns_ = 0;
  set_context(cpu);
}

HrtimerRestart Engine::hrtimer_callback(HrtimerId t, std::int64_t now) {
  const unsigned cpu = cur_;
  CpuState& cs = cpus_[cpu];
  const HrtimerInfo& info = hinfo_[t];
  const std::uint16_t function = hr_[t].function;
  const std::int64_t handler_at = hrtimer_now();
  ++res_.cpus[cpu].hrtimers_expired;
  hrtimer_row_end(t, TimerOutcome::expired, handler_at);
  // The first handler of the interrupt that ended an idle period names its cause.
  if (cs.cause_pending && cs.wake_src == WakeSource::clock && cs.wake_function < 0) {
    cs.wake_function = function;
    cs.wake_by_tick = info.kind == HrtimerKind::tick;
  }
  if (cfg_.record_events) {
    log_.set_context(handler_at, cpu);
    log_.add(SimEvent::hrtimer_expire_entry, {std::uint64_t{t} + 1, function, static_cast<std::uint64_t>(now)});
  }
  HrtimerRestart r = HrtimerRestart::norestart;
  switch (info.kind) {
    case HrtimerKind::tick:
      r = tick_nohz_handler(cpu, now);
      break;
    case HrtimerKind::sleeper: {
      // hrtimer_wakeup: the sleeping task is woken (a measured one keeps
      // what the interrupt was, for its latency).
      const int task = static_cast<int>(hr_[t].owner);
      latency_draft(cpu, task, t, handler_at);
      wake_task(task);
      break;
    }
    case HrtimerKind::fair_server:
      fair_server_fired(cpu);
      break;
    case HrtimerKind::script:
      // A replayed hrtimer: a task asleep on it wakes (hrtimer_wakeup); the rest is the script's.
      script_timer_fired(cfg_.workload.script.nr_keys + hr_[t].owner);
      break;
    default:
      break;
  }
  hardirq_ns_ += hrtimer_callback_ns(t);
  // What follows in this interrupt (a restart, the next handler) is logged after the handler.
  log_.set_context(hrtimer_now(), cpu);
  if (cfg_.record_events) log_.add(SimEvent::hrtimer_expire_exit, {std::uint64_t{t} + 1});
  return r;
}

void Engine::fair_server_fired(unsigned cpu) {
  // dl_task_timer: the server has no fair task to run, but the idle task is
  // told to reschedule (a running task is not disturbed).
  CpuState& cs = cpus_[cpu];
  if (cs.act == Activity::irq && cs.in_idle_loop) {
    cs.need_resched = true;
    cs.irq_end = std::max(cs.irq_end, now_ + cfg_.workload.irq_ns);
  }
}

// ---------------------------------------------------------------------------
// Latency of measured wakeups

void Engine::latency_draft(unsigned cpu, int task, HrtimerId t, std::int64_t handler_at) {
  TaskState& ts = tasks_[static_cast<std::size_t>(task)];
  const TaskSpec& spec = cfg_.workload.tasks[ts.spec];
  if (spec.measure == Measure::none) return;
  const CpuState& cs = cpus_[cpu];
  const Hrtimer& h = hr_[t];
  LatencyDraft& d = ts.sample;
  d.active = true;
  d.requested_ns = h.softexpires;
  d.expires_ns = h.expires;
  d.programmed_ns = cs.irq_programmed;
  d.arrival_ns = cs.irq_arrival;
  d.exit_ns = cs.irq_exit_ns;
  d.irq_start_ns = cs.irq_start;
  d.handler_ns = handler_at;
  d.state = cs.irq_state;
}

void Engine::latency_done(unsigned cpu, int task) {
  TaskState& ts = tasks_[static_cast<std::size_t>(task)];
  LatencyDraft& d = ts.sample;
  if (!d.active) return;
  d.active = false;
  const TaskSpec& spec = cfg_.workload.tasks[ts.spec];
  const LatencyModel& m = cfg_.latency;
  LatencyRow r;
  r.cpu = static_cast<std::int32_t>(cpu);
  r.task = static_cast<std::uint32_t>(task);
  r.tool = spec.measure;
  r.state = d.state;
  r.requested_ns = d.requested_ns;
  r.expires_ns = d.expires_ns;
  // The chain R -> P -> A -> (exit) -> served -> (entry) -> H -> runs -> user.
  r.window_ns = d.programmed_ns - d.requested_ns;
  r.wake_ns = d.arrival_ns - d.programmed_ns;
  r.exit_latency_ns = d.exit_ns;
  const std::int64_t entered = d.irq_start_ns + m.irq_entry_ns;
  r.irq_entry_ns = entered - d.arrival_ns - d.exit_ns;  // entry, and any wait before the CPU served it
  r.handler_wait_ns = d.handler_ns - entered;
  const std::int64_t runs = now_ + m.context_switch_ns;
  r.sched_ns = runs - d.handler_ns;
  // cyclictest reads its clock back in user space; timerlat's kthread in the kernel.
  r.user_ns = spec.measure == Measure::cyclictest ? m.return_to_user_ns : 0;
  r.irq_latency_ns = d.handler_ns - d.expires_ns;
  r.latency_ns = runs + r.user_ns - d.requested_ns;
  res_.latency.push_back(r);
}

}  // namespace timerlab
