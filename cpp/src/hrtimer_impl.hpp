// hrtimer_impl.hpp — the member functions of the hrtimer model
// (HrtimersT, hrtimer.hpp; kernel/time/hrtimer.c), a template on its host:
// instantiated for any HrtimerHost in hrtimer.cpp and for the engine in
// engine_hrtimer.cpp.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "timerlab/hrtimer.hpp"

namespace timerlab {

namespace hrtimer_detail {

// ktime_add_safe: a sum past the end of time saturates.
inline std::int64_t add_safe(std::int64_t a, std::int64_t b) {
  if (b > 0 && a > kHrtimerNever - b) return kHrtimerNever;
  return a + b;
}

}  // namespace hrtimer_detail

// ---------------------------------------------------------------------------
// Timers and bases

template <class Host>
HrtimersT<Host>::HrtimersT(unsigned nr_cpus, HrtimerPolicy policy, Host& host)
    : bases_(std::make_unique<HrtimerCpuBase[]>(nr_cpus)), nr_cpus_(nr_cpus), policy_(policy), host_(host) {}

template <class Host>
HrtimerId HrtimersT<Host>::setup(std::uint16_t function, bool soft, std::uint32_t owner) {
  HrtimerId t;
  if (!free_.empty()) {
    t = free_.back();
    free_.pop_back();
  } else {
    t = static_cast<HrtimerId>(pool_.size());
    pool_.emplace_back();
  }
  Hrtimer& h = pool_[t];
  h = Hrtimer{};
  h.function = function;
  h.is_soft = soft;
  h.owner = owner;
  h.cpu = static_cast<std::int32_t>(host_.hrtimer_this_cpu());  // the base it is set up on
  return t;
}

template <class Host>
void HrtimersT<Host>::release(HrtimerId t) {
  if (pool_[t].queued()) throw std::logic_error("hrtimer released while queued");
  free_.push_back(t);
}

template <class Host>
inline bool HrtimersT<Host>::enqueue(HrtimerId t, unsigned cpu) {
  Hrtimer& h = pool_[t];
  h.cpu = static_cast<std::int32_t>(cpu);
  h.seq = ++seq_;
  HrtimerQueue& q = queue_of(h);
  q.add(pool_, t);
  return q.first() == t;
}

template <class Host>
void HrtimersT<Host>::remove(HrtimerId t, bool reprogram) {
  Hrtimer& h = pool_[t];
  if (!h.queued()) return;
  queue_of(h).del(pool_, t);
  // A remote removal leaves the remote device alone: that CPU takes a
  // spurious interrupt later and reprograms itself then.
  if (reprogram && bases_[static_cast<unsigned>(h.cpu)].next_timer == t) {
    force_reprogram(static_cast<unsigned>(h.cpu), true);
  }
}

template <class Host>
inline std::int64_t HrtimersT<Host>::get_next_event(const HrtimerCpuBase& b, unsigned which) const {
  return b.clock_base[which].first_expires();
}

template <class Host>
inline std::int64_t HrtimersT<Host>::update_next_event(HrtimerCpuBase& b) {
  // A raised softirq will handle the soft queue: it does not count then.
  std::int64_t soft = kHrtimerNever;
  if (!b.softirq_activated) {
    soft = get_next_event(b, HRTIMER_BASE_MONOTONIC_SOFT);
    b.softirq_expires_next = soft;
    b.softirq_next_timer = b.clock_base[HRTIMER_BASE_MONOTONIC_SOFT].first();
  }
  std::int64_t hard = get_next_event(b, HRTIMER_BASE_MONOTONIC);
  b.next_timer = b.clock_base[HRTIMER_BASE_MONOTONIC].first();
  if (hard > soft) {
    b.next_timer = b.softirq_next_timer;
    hard = soft;
  }
  return hard;
}

template <class Host>
inline bool HrtimersT<Host>::program_device(unsigned cpu, std::int64_t t, bool force) {
  // tick_program_event: "never" stops the device; a time already past is
  // an error the interrupt handles by another pass, unless forced: then the
  // device fires at once, its next_event still the time asked for.
  HrtimerCpuBase& b = bases_[cpu];
  if (t != kHrtimerNever && t <= host_.hrtimer_now() && !force) return false;
  b.device_next = t;
  host_.hrtimer_device_programmed(cpu, t);
  return true;
}

template <class Host>
void HrtimersT<Host>::force_reprogram(unsigned cpu, bool skip_equal) {
  HrtimerCpuBase& b = bases_[cpu];
  const std::int64_t next = update_next_event(b);
  if (skip_equal && next == b.expires_next) return;
  b.expires_next = next;
  // A detected hang keeps its delay in the device until the next interrupt.
  if (!b.hang_detected) program_device(cpu, next, true);
}

template <class Host>
void HrtimersT<Host>::reprogram(HrtimerId t, bool reprogram_device) {
  const Hrtimer& h = pool_[t];
  HrtimerCpuBase& b = bases_[static_cast<unsigned>(h.cpu)];
  const std::int64_t expires = std::max<std::int64_t>(h.expires, 0);
  if (h.is_soft) {
    // The soft expiry is tracked even for a remote base (it cannot be
    // earlier than that base's first hard timer: placement saw to it).
    if (b.softirq_activated || expires >= b.softirq_expires_next) return;
    b.softirq_next_timer = t;
    b.softirq_expires_next = expires;
    if (expires >= b.expires_next || !reprogram_device) return;
  }
  if (static_cast<unsigned>(h.cpu) != host_.hrtimer_this_cpu()) return;  // not our device
  if (expires >= b.expires_next) return;
  if (b.in_hrtirq) return;  // the interrupt reprograms on its way out
  b.next_timer = t;
  b.expires_next = expires;
  if (!b.hang_detected) program_device(static_cast<unsigned>(h.cpu), expires, true);
}

template <class Host>
bool HrtimersT<Host>::check_target(HrtimerId t, unsigned cpu) const {
  // hrtimer_check_target / hrtimer_suitable_target: a remote CPU's device
  // cannot be reprogrammed from here, so the timer must not be its first.
  // The device as programmed: a tick that a replay runs late was due on its grid point.
  const HrtimerCpuBase& b = bases_[cpu];
  return pool_[t].expires >= b.expires_next - host_.hrtimer_first_late_ns(cpu, b.next_timer);
}

template <class Host>
unsigned HrtimersT<Host>::switch_hrtimer_base(HrtimerId t, unsigned this_cpu, bool pinned) {
  const Hrtimer& h = pool_[t];
  const bool local = h.cpu < 0 || static_cast<unsigned>(h.cpu) == this_cpu;
  if (policy_.keep_local && local && (pinned || !policy_.timer_migration || host_.hrtimer_tick_running())) {
    return this_cpu;
  }
  // get_target_base
  unsigned target = policy_.timer_migration && !pinned ? host_.hrtimer_nohz_target() : this_cpu;
  // Its current base counts as remote too: a restart from another CPU
  // must not make it that CPU's first timer either.
  if (target != this_cpu && !check_target(t, target)) target = this_cpu;
  const unsigned current = h.cpu < 0 ? this_cpu : static_cast<unsigned>(h.cpu);
  if (target != current && h.running) return current;  // a running callback's timer cannot change base
  return target;
}

template <class Host>
unsigned HrtimersT<Host>::start_range_ns(HrtimerId t, std::int64_t tim, std::int64_t delta_ns, std::uint8_t mode) {
  Hrtimer& h = pool_[t];
  const unsigned this_cpu = host_.hrtimer_this_cpu();
  const bool was_armed = h.queued();
  // The local first timer restarted here stays here: one reprogram, after
  // the enqueue, rather than one on removal and another on enqueue (5.15).
  const bool force_local = was_armed && static_cast<unsigned>(h.cpu) == this_cpu && bases_[this_cpu].next_timer == t;
  // remove_hrtimer(restart): the removal never reprograms here — the one
  // case it would (this CPU's next_timer) is force_local's — and it changes
  // nothing placement looks at, so the timer leaves its queue only once its
  // new base is known; staying on its base, it is re-keyed in place.
  if (mode & HRTIMER_MODE_REL) tim = hrtimer_detail::add_safe(tim, host_.hrtimer_now());
  h.softexpires = tim;
  h.expires = hrtimer_detail::add_safe(tim, std::max<std::int64_t>(delta_ns, 0));
  const unsigned cpu = force_local ? this_cpu : switch_hrtimer_base(t, this_cpu, mode & HRTIMER_MODE_PINNED);
  bool first;
  if (was_armed && static_cast<unsigned>(h.cpu) == cpu) {
    h.seq = ++seq_;  // a new enqueue as far as ties go
    HrtimerQueue& q = queue_of(h);
    q.rekey(pool_, t);
    first = q.first() == t;
  } else {
    if (was_armed) queue_of(h).del(pool_, t);
    first = enqueue(t, cpu);
  }
  host_.trace_hrtimer_start(t, mode, was_armed);
  if (force_local) {
    force_reprogram(this_cpu, true);
  } else if (first) {
    reprogram(t, true);
  }
  return cpu;
}

template <class Host>
bool HrtimersT<Host>::cancel(HrtimerId t) {
  Hrtimer& h = pool_[t];
  if (!h.queued()) return false;
  host_.trace_hrtimer_cancel(t);
  remove(t, static_cast<unsigned>(h.cpu) == host_.hrtimer_this_cpu());
  return true;
}

template <class Host>
std::uint64_t HrtimersT<Host>::forward(HrtimerId t, std::int64_t now, std::int64_t interval_ns) {
  Hrtimer& h = pool_[t];
  const std::int64_t delta = now - h.expires;
  if (delta < 0 || h.queued()) return 0;
  interval_ns = std::max<std::int64_t>(interval_ns, 1);  // hrtimer_resolution
  std::uint64_t overruns = 1;
  if (delta >= interval_ns) {
    const std::int64_t n = delta / interval_ns;
    h.expires = hrtimer_detail::add_safe(h.expires, n * interval_ns);
    h.softexpires = hrtimer_detail::add_safe(h.softexpires, n * interval_ns);
    if (h.expires > now) return static_cast<std::uint64_t>(n);
    overruns = static_cast<std::uint64_t>(n) + 1;  // an exact multiple: one more
  }
  h.expires = hrtimer_detail::add_safe(h.expires, interval_ns);
  h.softexpires = hrtimer_detail::add_safe(h.softexpires, interval_ns);
  return overruns;
}

template <class Host>
std::int64_t HrtimersT<Host>::next_event_without(unsigned cpu, HrtimerId exclude) const {
  const HrtimerCpuBase& b = bases_[cpu];
  std::int64_t e = b.clock_base[HRTIMER_BASE_MONOTONIC].first_expires_without(exclude);
  if (!b.softirq_activated) {
    e = std::min(e, b.clock_base[HRTIMER_BASE_MONOTONIC_SOFT].first_expires_without(exclude));
  }
  return e;
}

// ---------------------------------------------------------------------------
// Expiry

template <class Host>
void HrtimersT<Host>::run_queue(unsigned cpu, unsigned which, std::int64_t now) {
  HrtimerQueue& q = bases_[cpu].clock_base[which];
  const std::uint64_t pass = seq_;
  while (!q.empty()) {
    const HrtimerQueue::Entry& first = q.top();
    // In hard-expiry order, as long as the soft expiry has passed: a timer
    // whose window opened behind one whose window has not waits.
    if (now < first.softexpires) break;
    // A callback that restarted its timer at or before `now` (the kernel's
    // would loop here) waits for the next pass: the hang detection's case.
    if (first.seq > pass) break;
    const HrtimerId t = first.id;
    q.del(pool_, t);
    pool_[t].running = true;
    const HrtimerRestart r = host_.hrtimer_callback(t, now);
    Hrtimer& h = pool_[t];
    // Restarted by its callback (RESTART): queued again here, as ABS; the
    // interrupt reprograms the device once it is done.
    if (r == HrtimerRestart::restart && !h.queued()) {
      // enqueue() on the queue at hand (the timer ran from it).
      h.cpu = static_cast<std::int32_t>(cpu);
      h.seq = ++seq_;
      q.add(pool_, t);
      host_.trace_hrtimer_start(t, HRTIMER_MODE_ABS | (h.is_soft ? HRTIMER_MODE_SOFT : HRTIMER_MODE_HARD), false);
    }
    h.running = false;
  }
}

template <class Host>
bool HrtimersT<Host>::hrtimer_interrupt(unsigned cpu) {
  HrtimerCpuBase& b = bases_[cpu];
  ++b.nr_events;
  b.device_next = kHrtimerNever;  // it fired
  const std::int64_t entry = host_.hrtimer_now();
  std::int64_t now = entry;
  bool raised = false;
  for (unsigned pass = 1;; ++pass) {
    b.in_hrtirq = true;
    b.expires_next = kHrtimerNever;  // no reprogram from callbacks: done below
    if (now >= b.softirq_expires_next) {
      b.softirq_expires_next = kHrtimerNever;
      b.softirq_activated = true;
      raised = true;
    }
    run_queue(cpu, HRTIMER_BASE_MONOTONIC, now);
    b.expires_next = update_next_event(b);
    b.in_hrtirq = false;
    if (program_device(cpu, b.expires_next, false)) {
      b.hang_detected = false;
      return raised;
    }
    // The next expiry passed while the callbacks ran.
    now = host_.hrtimer_now();
    ++b.nr_retries;
    if (pass == kHrtimerMaxPasses) break;
  }
  // A hang: give the CPU as long as the interrupt took (at most 100 ms)
  // before the device fires again.
  ++b.nr_hangs;
  b.hang_detected = true;
  // (At least a µs: a simulated pass whose callbacks take no time still
  // moves the clock, as a real one does.)
  const std::int64_t spent = std::max<std::int64_t>(now - entry, kHrtimerMinHangDelayNs);
  b.max_hang_time_ns = std::max(b.max_hang_time_ns, spent);
  program_device(cpu, hrtimer_detail::add_safe(now, std::min(kHrtimerMaxHangDelayNs, spent)), true);
  return raised;
}

template <class Host>
void HrtimersT<Host>::hrtimer_run_softirq(unsigned cpu) {
  HrtimerCpuBase& b = bases_[cpu];
  run_queue(cpu, HRTIMER_BASE_MONOTONIC_SOFT, host_.hrtimer_now());
  b.softirq_activated = false;
  // hrtimer_update_softirq_timer: arm the next soft expiry, reprogramming
  // the device if it is now the first.
  const HrtimerId next = b.clock_base[HRTIMER_BASE_MONOTONIC_SOFT].first();
  if (next == kNoHrtimer) return;
  b.softirq_expires_next = kHrtimerNever;
  reprogram(next, true);
}

template <class Host>
std::string HrtimersT<Host>::check_invariants() const {
  for (unsigned c = 0; c < nr_cpus_; ++c) {
    const HrtimerCpuBase& b = bases_[c];
    for (unsigned w = 0; w < HRTIMER_MAX_CLOCK_BASES; ++w) {
      const std::string e = b.clock_base[w].check(pool_);
      if (!e.empty()) return "CPU " + std::to_string(c) + ": " + e;
      for (const HrtimerQueue::Entry& e : b.clock_base[w]) {
        const HrtimerId t = e.id;
        const Hrtimer& h = pool_[t];
        if (h.cpu != static_cast<std::int32_t>(c) || h.is_soft != (w == HRTIMER_BASE_MONOTONIC_SOFT)) {
          return "hrtimer " + std::to_string(t) + " sits in the wrong queue";
        }
        if (h.softexpires > h.expires) return "hrtimer " + std::to_string(t) + " has softexpires > expires";
      }
    }
    if (!b.in_hrtirq && !b.hang_detected && b.expires_next > get_next_event(b, HRTIMER_BASE_MONOTONIC)) {
      return "CPU " + std::to_string(c) + ": a queued hrtimer is earlier than expires_next (a remote first timer)";
    }
  }
  return {};
}

}  // namespace timerlab
