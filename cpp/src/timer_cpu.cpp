// timer_cpu.cpp — see timer_cpu.hpp.
#include "timerlab/timer_cpu.hpp"

namespace timerlab {

namespace {

// A bucket expiry in jiffies as CLOCK_MONOTONIC on the tick grid (one
// already due counts as now).
std::uint64_t jiffies_to_ns(jiffies_t at, jiffies_t basej, std::uint64_t basem, std::uint64_t tick_nsec) {
  return basem + (time_before(at, basej) ? 0 : at - basej) * tick_nsec;
}

}  // namespace

TimerCpu::TimerCpu(TimerPool& pool, unsigned hz, jiffies_t jiffies, unsigned cpu, HardGlobalEvents* hard)
    : bases_{TimerBase(pool, hz, jiffies, cpu), TimerBase(pool, hz, jiffies, cpu), TimerBase(pool, hz, jiffies, cpu),
             TimerBase(pool, hz, jiffies, cpu)},
      cpu_(cpu),
      hard_(hard) {}

jiffies_t TimerCpu::fetch_next_timer_interrupt(jiffies_t basej, std::uint64_t basem, TimerEvents& tevt,
                                               std::uint64_t tick_nsec) {
  TimerBase& local = bases_[BASE_LOCAL];
  TimerBase& global = bases_[BASE_GLOBAL];
  const jiffies_t next_local = local.next_timer_interrupt(basej);
  const jiffies_t next_global = global.next_timer_interrupt(basej);
  const bool local_first = time_before_eq(next_local, next_global);
  jiffies_t nextevt = local_first ? next_local : next_global;
  if (time_before_eq(nextevt, basej + 1)) {
    // At most a tick away: the global event does not matter (the CPU will
    // not idle), but is kept equal to local for remote callers.
    if (time_before(nextevt, basej)) nextevt = basej;
    tevt.local = basem + (nextevt - basej) * tick_nsec;
    if (!local_first) tevt.global = tevt.local;
    return nextevt;
  }
  if (!local_first && global.timers_pending()) tevt.global = basem + (next_global - basej) * tick_nsec;
  if (local.timers_pending()) tevt.local = basem + (next_local - basej) * tick_nsec;
  // global_nowake: the GDEF base's first expiry reaches the hierarchy like
  // a global one (when it precedes the local event) but never this CPU's
  // own wakeup.
  TimerBase& gdef = bases_[BASE_GDEF];
  if (gdef.timers_pending()) {
    const jiffies_t next_gdef = gdef.next_timer_interrupt(basej);
    if (time_before(next_gdef, next_local)) {
      tevt.global = std::min(tevt.global, jiffies_to_ns(next_gdef, basej, basem, tick_nsec));
    }
  }
  return nextevt;
}

std::uint64_t TimerCpu::next_hard_global(jiffies_t basej, std::uint64_t basem, std::uint64_t tick_nsec) {
  TimerBase& global = bases_[BASE_GLOBAL];
  if (!global.timers_pending()) return KTIME_MAX;
  return jiffies_to_ns(global.next_timer_interrupt(basej), basej, basem, tick_nsec);
}

std::uint64_t TimerCpu::get_next_timer_interrupt(jiffies_t basej, std::uint64_t basem, std::uint64_t tick_nsec,
                                                 Tmigr* tmigr, bool* idle) {
  TimerBase& local = bases_[BASE_LOCAL];
  TimerEvents tevt;
  jiffies_t nextevt = fetch_next_timer_interrupt(basej, basem, tevt, tick_nsec);
  const bool idle_is_possible = time_after(nextevt, basej + 1);
  if (idle_is_possible && tmigr) {
    // timer_use_tmigr: which hierarchy entry point depends on where we are.
    std::uint64_t next_tmigr;
    if (local.is_idle()) {
      next_tmigr = tmigr->tmigr_cpu_new_timer(cpu_, tevt.global);
    } else if (idle) {
      next_tmigr = tmigr->tmigr_cpu_deactivate(cpu_, tevt.global);
    } else {
      next_tmigr = tmigr->tmigr_quick_check(cpu_, tevt.global);
    }
    // global_nowake: the hierarchy's answer may be a deferrable event; the
    // last idle CPU wakes only for the system's first BASE_GLOBAL one.
    if (hard_ && next_tmigr != KTIME_MAX) next_tmigr = hard_->first_hard_global(basej, basem);
    // The last CPU going idle must wake for the system's first global event.
    if (next_tmigr < tevt.local) {
      if (next_tmigr < basem) next_tmigr = basem;
      nextevt = basej + (next_tmigr - basem) / tick_nsec;
      tevt.local = next_tmigr;
    }
  } else if (idle_is_possible) {
    tevt.local = std::min(tevt.local, tevt.global);  // no hierarchy (uniprocessor)
  }
  local.forward_timer_base(basej);
  bases_[BASE_GLOBAL].forward_timer_base(basej);
  bases_[BASE_GDEF].forward_timer_base(basej);
  if (idle) {
    // The bases are idle when the next event is more than a tick away; the
    // hierarchy may have moved nextevt, so test again.
    if (!local.is_idle() && time_after(nextevt, basej + 1)) local.set_is_idle(true);
    *idle = local.is_idle();
    // Could not mark the base idle: undo the deactivation.
    if (!local.is_idle() && idle_is_possible && tmigr) tmigr->tmigr_cpu_activate(cpu_);
  }
  return tevt.local;
}

std::uint64_t TimerCpu::timer_base_try_to_set_idle(jiffies_t basej, std::uint64_t basem, std::uint64_t tick_nsec,
                                                   Tmigr* tmigr, bool* idle) {
  if (*idle) return KTIME_MAX;
  return get_next_timer_interrupt(basej, basem, tick_nsec, tmigr, idle);
}

std::uint64_t TimerCpu::get_next_timer_interrupt_push(jiffies_t basej, std::uint64_t basem,
                                                      std::uint64_t tick_nsec) {
  TimerBase& base = bases_[BASE_STD];
  if (base.next_expiry_recalc()) base.timer_recalc_next_expiry();
  const jiffies_t nextevt = base.next_expiry();
  // Forward with the fresh value, never rewinding.
  if (time_after(basej, base.clk())) base.forward_timer_base(basej);
  std::uint64_t expires = KTIME_MAX;
  if (time_before_eq(nextevt, basej)) {
    expires = basem;
    base.set_is_idle(false);
  } else {
    if (base.timers_pending()) expires = basem + (nextevt - basej) * tick_nsec;
    // More than a tick to sleep: the base is idle (and remote enqueues will
    // IPI), even if the tick is then kept.
    if (expires - basem > tick_nsec) base.set_is_idle(true);
  }
  return expires;
}

bool TimerCpu::timer_clear_idle() {
  const bool was = bases_[BASE_LOCAL].is_idle();
  bases_[BASE_LOCAL].set_is_idle(false);
  return was;
}

bool TimerCpu::any_base_due(jiffies_t jiffies, bool pull_model) const {
  for (unsigned b = 0; b < NR_BASES; ++b) {
    if (!pull_model && (b == BASE_GLOBAL || b == BASE_GDEF)) continue;
    if (time_after_eq(jiffies, bases_[b].next_expiry())) return true;
  }
  return false;
}

}  // namespace timerlab
