// mod_timer.hpp — the timer API: arming, modifying and deleting a timer.
//
// Models __mod_timer and its wrappers mod_timer, mod_timer_pending,
// timer_reduce, add_timer, and timer_delete (kernel/time/timer.c).
// Reference: shared/reference/kernel-timers.md §1.6.
//
// Theory of operation
// -------------------
// __mod_timer is where the kernel's cheap paths live:
//   1. a pending timer re-armed for the same `expires` returns at once, with
//      no trace event;
//   2. with MOD_TIMER_REDUCE a later expiry returns at once;
//   3. the same-bucket shortcut: after forwarding the base clock, if the new
//      expiry falls in the bucket the timer already occupies, only
//      timer->expires changes — no dequeue, no enqueue, no trace event;
//   4. otherwise the timer is detached (trace: timer_cancel), a target base
//      is chosen, the timer is enqueued (trace: timer_start) and
//      trigger_dyntick_cpu decides whether to wake that base's CPU. The
//      kernel calls it only when the timer became the base's first one (the
//      lazy rule); the hook is told which, so that a context can also model
//      the pre-2015 rule that woke the CPU on every enqueue.
// Which base is the target is the placement policy (push or pull); it is a
// hook of the context, like the trace and wakeup hooks, so that one
// implementation of the sequence above serves the lone wheel of the Python
// API and the many bases of the simulation engine.
//
// The context `Ctx` provides:
//   TimerPool& pool();
//   jiffies_t jiffies();
//   TimerBase& timer_base(TimerId);                      // get_timer_base
//   TimerBase& target_base(TimerId, TimerBase& current); // placement
//   void trace_timer_start(TimerBase&, TimerId, const EnqueueResult&);
//   void trace_timer_cancel(TimerBase&, TimerId);
//   void trigger_dyntick_cpu(TimerBase&, TimerId, bool new_first);
//   TimerBase& cpu_base(unsigned cpu, std::uint32_t flags); // get_timer_cpu_base
//   bool add_timer_on_pins();             // 6.9+: add_timer_on sets TIMER_PINNED
//
// Simplifications vs. the kernel
//   * No timer->function, hence no shutdown state (a shut-down timer is one
//     the caller stops arming).
#pragma once

#include "timerlab/wheel.hpp"

namespace timerlab {

inline constexpr unsigned MOD_TIMER_PENDING_ONLY = 0x01;
inline constexpr unsigned MOD_TIMER_REDUCE = 0x02;
inline constexpr unsigned MOD_TIMER_NOTPENDING = 0x04;

// Returns 1 if the timer was pending before the call, else 0 (as the kernel).
template <class Ctx>
int __mod_timer(Ctx& ctx, TimerId t, jiffies_t expires, unsigned options) {
  TimerPool& pool = ctx.pool();
  TimerBase* base = &ctx.timer_base(t);
  bool have_idx = false;
  jiffies_t clk = 0;
  WheelIndex wi{0, 0};

  if (!(options & MOD_TIMER_NOTPENDING) && pool[t].pending()) {
    const auto diff = static_cast<std::int64_t>(pool[t].expires - expires);
    if (diff == 0) return 1;
    if ((options & MOD_TIMER_REDUCE) && diff <= 0) return 1;
    base->forward_timer_base(ctx.jiffies());
    clk = base->clk();
    wi = calc_wheel_index(expires, clk, base->depth());
    have_idx = true;
    if (wi.idx == pool[t].idx()) {
      // Same bucket: only the recorded expiry changes.
      if (!(options & MOD_TIMER_REDUCE) || time_after(pool[t].expires, expires)) {
        pool[t].expires = expires;
      }
      return 1;
    }
  } else {
    base->forward_timer_base(ctx.jiffies());
  }

  const int ret = base->detach_if_pending(t) ? 1 : 0;
  if (ret) ctx.trace_timer_cancel(*base, t);
  if (!ret && (options & MOD_TIMER_PENDING_ONLY)) return 0;

  TimerBase* new_base = &ctx.target_base(t, *base);
  // A timer whose callback is running stays on its base, so that a delete
  // that waits for the callback still finds it there.
  if (new_base != base && base->running_timer() != t) {
    base = new_base;
    pool[t].set_cpu(base->cpu());
    base->forward_timer_base(ctx.jiffies());
  }

  pool[t].expires = expires;
  const EnqueueResult r = (have_idx && clk == base->clk())
                              ? base->enqueue_timer(t, wi.idx, wi.bucket_expiry)
                              : base->internal_add_timer(t);
  ctx.trace_timer_start(*base, t, r);
  ctx.trigger_dyntick_cpu(*base, t, r.new_first);
  return ret;
}

template <class Ctx>
int mod_timer(Ctx& ctx, TimerId t, jiffies_t expires) {
  return __mod_timer(ctx, t, expires, 0);
}
template <class Ctx>
int mod_timer_pending(Ctx& ctx, TimerId t, jiffies_t expires) {
  return __mod_timer(ctx, t, expires, MOD_TIMER_PENDING_ONLY);
}
template <class Ctx>
int timer_reduce(Ctx& ctx, TimerId t, jiffies_t expires) {
  return __mod_timer(ctx, t, expires, MOD_TIMER_REDUCE);
}
// add_timer: the caller guarantees the timer is not pending (the kernel
// warns and does nothing otherwise; so do we).
template <class Ctx>
void add_timer(Ctx& ctx, TimerId t, jiffies_t expires) {
  if (ctx.pool()[t].pending()) return;
  __mod_timer(ctx, t, expires, MOD_TIMER_NOTPENDING);
}

// add_timer_on: arm a non-pending timer on `cpu`'s base (6.9+: as a pinned
// timer). The caller guarantees the timer is not pending (the kernel BUGs).
template <class Ctx>
void add_timer_on(Ctx& ctx, TimerId t, jiffies_t expires, unsigned cpu) {
  TimerPool& pool = ctx.pool();
  if (pool[t].pending()) return;
  if (ctx.add_timer_on_pins()) pool[t].flags |= TIMER_PINNED;
  TimerBase& base = ctx.cpu_base(cpu, pool[t].flags);
  pool[t].set_cpu(cpu);
  base.forward_timer_base(ctx.jiffies());
  pool[t].expires = expires;
  const EnqueueResult r = base.internal_add_timer(t);
  ctx.trace_timer_start(base, t, r);
  ctx.trigger_dyntick_cpu(base, t, r.new_first);
}

// timer_delete (del_timer): detach if pending. Returns 1 if it was pending.
template <class Ctx>
int timer_delete(Ctx& ctx, TimerId t) {
  if (!ctx.pool()[t].pending()) return 0;
  TimerBase& base = ctx.timer_base(t);
  if (!base.detach_if_pending(t)) return 0;
  ctx.trace_timer_cancel(base, t);
  return 1;
}

}  // namespace timerlab
