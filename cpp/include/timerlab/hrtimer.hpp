// hrtimer.hpp — high-resolution timers: the per-CPU hrtimer_cpu_base with
// its clock bases and timerqueues, starting, cancelling and forwarding a
// timer, where a timer is placed, and the clock event interrupt that expires
// them (kernel/time/hrtimer.c; include/linux/hrtimer.h, hrtimer_defs.h,
// timerqueue.h). Reference: hrtimers-and-latency.md §A, pre-6.9-kernels.md
// §3.3-3.5.
//
// Theory of operation
// -------------------
// Every CPU has one hrtimer_cpu_base with a hard and a soft clock base
// (CLOCK_MONOTONIC and its _SOFT twin). Each base is a timerqueue ordered by
// the hard expiry (node.expires), earlier enqueues first among equals (the
// kernel's rbtree puts an equal key to the right). A timer has a window
// [softexpires, expires]: hrtimer_start_range_ns(t, tim, delta) sets
// soft = tim, hard = tim + delta (REL adds the current time first).
//
//      hrtimer_cpu_base (per CPU)
//      +-------------------------------------------------------------+
//      | MONOTONIC       : t3(h=10) -> tick(h=12) -> t7(h=40) ...    |
//      | MONOTONIC_SOFT  : t5(h=11) -> ...                           |
//      | expires_next = 10  softirq_expires_next = 11                |
//      | clock event device programmed for device_next (= 10)        |
//      +-------------------------------------------------------------+
//
// The clock event device of a CPU is programmed for the earliest hard
// expiry of its queues (the soft one counts unless the HRTIMER softirq is
// already raised). Only the CPU itself reprograms it: a timer started or
// removed on another CPU's base never touches that CPU's device. That is why
// placement never makes a timer a remote CPU's first (it would fire late),
// and why a remote removal leaves a spurious wakeup behind.
//
// hrtimer_interrupt (the device fired on CPU c at time `now`):
//   1. nr_events++; expires_next = "never" while it runs (in_hrtirq);
//   2. soft queue due (now >= softirq_expires_next) -> raise HRTIMER softirq;
//   3. walk the hard queue in order: every timer whose SOFT expiry has
//      passed runs (a timer behind one whose soft expiry is still ahead waits
//      for a later interrupt, even if its own window is open); a callback
//      returning RESTART is enqueued again (ABS);
//   4. program the device for the new first expiry; if that is already past
//      (callbacks took time), go round again from 2 — after the third pass
//      give up: nr_hangs++, hang_detected, and program now + (time spent in
//      the interrupt, at most 100 ms); until the next interrupt no reprogram
//      touches the device.
// hrtimer_run_softirq runs the soft queue the same way, then re-arms the
// soft expiry.
//
// Placement (__hrtimer_start_range_ns, switch_hrtimer_base):
//   * a timer that is its CPU's next_timer and restarted there stays local
//     (force_local, 5.15; the device is then reprogrammed once);
//   * PINNED, or kernel.timer_migration = 0: the current CPU;
//   * otherwise get_nohz_timer_target() (the host's: the current CPU if
//     busy, else the nearest busy one) — but never as the new first timer of
//     a remote CPU (hrtimer_check_target / hrtimer_suitable_target): then it
//     stays on the current CPU. A running callback's timer stays on its base.
//   * keep_local (the 2026 "Optimize for local timers" / "Use NOHZ
//     information for locality" change, ~7.1): a non-pinned timer armed on
//     a CPU whose tick runs (or with need-resched set) stays local; it is
//     pushed only from a CPU whose tick is stopped.
//
// Vocabulary: expires = the hard expiry, softexpires = the soft one,
// next_timer = the timer the device is programmed for, device_next = the
// device's programmed time (dev->next_event).
//
// Invariants (check_invariants):
//   * each queue is a heap ordered by (expires, seq) whose positions match
//     the timers' heap_pos and whose copies of the keys match the timers';
//     a queued timer's cpu and soft flag name its queue;
//   * softexpires <= expires for every timer;
//   * outside an interrupt, a CPU's expires_next is no later than its first
//     queued hard expiry (a remote enqueue never becomes first).
//
// Simplifications vs. the kernel
//   * One clock (MONOTONIC and its soft base): REALTIME/BOOTTIME/TAI differ
//     only by an offset that no simulated clock_settime or suspend changes.
//   * High-resolution mode only (no low-resolution hrtimer_run_queues), no
//     CPU hotplug (the 6.14 offline-CPU rule), no PREEMPT_RT soft default.
//   * A callback runs at one instant; its duration (the host's) moves the
//     interrupt's clock but no other CPU waits for a running callback.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace timerlab {

using HrtimerId = std::uint32_t;
inline constexpr HrtimerId kNoHrtimer = 0xFFFFFFFFu;
inline constexpr std::int64_t kHrtimerNever = INT64_MAX;  // KTIME_MAX

// enum hrtimer_mode bits (include/linux/hrtimer.h).
inline constexpr std::uint8_t HRTIMER_MODE_ABS = 0x00;
inline constexpr std::uint8_t HRTIMER_MODE_REL = 0x01;
inline constexpr std::uint8_t HRTIMER_MODE_PINNED = 0x02;
inline constexpr std::uint8_t HRTIMER_MODE_SOFT = 0x04;
inline constexpr std::uint8_t HRTIMER_MODE_HARD = 0x08;
inline constexpr std::uint8_t HRTIMER_MODE_MASK = 0x0F;

// hrtimer_interrupt: passes before it gives up, and the longest hang delay.
inline constexpr unsigned kHrtimerMaxPasses = 3;
inline constexpr std::int64_t kHrtimerMaxHangDelayNs = 100'000'000;
inline constexpr std::int64_t kHrtimerMinHangDelayNs = 1'000;

enum class HrtimerRestart : std::uint8_t { norestart = 0, restart = 1 };

// One cache line each: 40 bytes packed straddled two lines for half the
// timers, and a tick's timer is cold again by its next tick at 256 CPUs.
struct alignas(64) Hrtimer {
  std::int64_t expires = 0;      // node.expires: the hard expiry (ns, CLOCK_MONOTONIC)
  std::int64_t softexpires = 0;  // _softexpires
  std::uint64_t seq = 0;         // enqueue order: ties of `expires` go to the earlier enqueue
  std::uint32_t heap_pos = kNotQueued;
  std::int32_t cpu = -1;         // the hrtimer_cpu_base it is (or was last) queued on
  std::uint16_t function = 0;    // callback name code (the host's table)
  bool is_soft = false;          // HRTIMER_MODE_SOFT at setup: lives on the soft base
  bool running = false;          // its callback is running now
  std::uint32_t owner = 0;       // the host's: what the callback acts on

  static constexpr std::uint32_t kNotQueued = 0xFFFFFFFFu;
  bool queued() const { return heap_pos != kNotQueued; }
};

// One timerqueue: an indexed binary min-heap keyed by (expires, seq);
// timers keep their position for O(log n) removal. Each place holds a copy
// of its timer's key and soft expiry, so that ordering the queue and looking
// at its first timer read the queue alone, not the timers (on every tick,
// that is a cache line instead of two or three dependent ones). The copy is
// taken when the timer is queued or re-keyed: a queued timer's expires,
// softexpires and seq change only through start_range_ns (check() verifies).
// The keys are unique (seq is), so the order timers leave the queue in does
// not depend on the heap's layout: removing and re-adding a timer, or
// re-keying it in place, expire the same timers in the same order.
// The first kInline places live inside the queue itself (so inside its
// hrtimer_cpu_base, beside the fields the interrupt reads): a CPU's tick and
// the few timers beside it need no separate allocation and no other cache
// line; a longer queue moves to the heap. A queue therefore neither copies
// nor moves (its places may point into itself).
class HrtimerQueue {
 public:
  struct Entry {
    std::int64_t expires;      // the timer's, when queued or re-keyed
    std::int64_t softexpires;
    std::uint64_t seq;
    HrtimerId id;
  };
  static constexpr std::uint32_t kInline = 2;

  HrtimerQueue() = default;
  HrtimerQueue(const HrtimerQueue&) = delete;
  HrtimerQueue& operator=(const HrtimerQueue&) = delete;

  bool empty() const { return n_ == 0; }
  std::size_t size() const { return n_; }
  HrtimerId first() const { return n_ == 0 ? kNoHrtimer : heap_[0].id; }
  // The first timer's place (the queue must not be empty).
  const Entry& top() const { return heap_[0]; }
  std::int64_t first_expires() const { return n_ == 0 ? kHrtimerNever : heap_[0].expires; }
  [[gnu::always_inline]] void add(std::vector<Hrtimer>& pool, HrtimerId t) {
    if (n_ == cap_) grow();
    heap_[n_] = entry_of(pool, t);
    up(pool, n_++);
  }
  [[gnu::always_inline]] void del(std::vector<Hrtimer>& pool, HrtimerId t);
  // A queued timer whose key (expires, seq) has just changed moves to its
  // place: the same queue as del + add, without the two resizes.
  void rekey(std::vector<Hrtimer>& pool, HrtimerId t) {
    const std::uint32_t i = pool[t].heap_pos;
    heap_[i] = entry_of(pool, t);
    if (i > 0 && less(heap_[i], heap_[(i - 1) / 2])) {
      up(pool, i);
    } else {
      down(pool, i);
    }
  }
  // The earliest hard expiry among the queued timers other than `exclude`.
  std::int64_t first_expires_without(HrtimerId exclude) const;
  std::string check(const std::vector<Hrtimer>& pool) const;
  // The places, in heap order.
  const Entry* begin() const { return heap_; }
  const Entry* end() const { return heap_ + n_; }

 private:
  static Entry entry_of(const std::vector<Hrtimer>& pool, HrtimerId t) {
    const Hrtimer& h = pool[t];
    return {h.expires, h.softexpires, h.seq, t};
  }
  static bool less(const Entry& x, const Entry& y) {
    return x.expires != y.expires ? x.expires < y.expires : x.seq < y.seq;
  }
  void grow();  // hrtimer.cpp
  [[gnu::always_inline]] void up(std::vector<Hrtimer>& pool, std::uint32_t i);
  [[gnu::always_inline]] void down(std::vector<Hrtimer>& pool, std::uint32_t i);
  Entry* heap_ = inline_;  // inline_, or spill_ once the queue outgrew it
  std::uint32_t n_ = 0, cap_ = kInline;
  Entry inline_[kInline];
  std::unique_ptr<Entry[]> spill_;
};

// The heap's moves are a few loads and stores on the queues of a handful of
// timers a CPU has: inline, on every tick's path.
inline void HrtimerQueue::up(std::vector<Hrtimer>& pool, std::uint32_t i) {
  const Entry e = heap_[i];
  while (i > 0) {
    const std::uint32_t parent = (i - 1) / 2;
    if (!less(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    pool[heap_[i].id].heap_pos = i;
    i = parent;
  }
  heap_[i] = e;
  pool[e.id].heap_pos = i;
}

inline void HrtimerQueue::down(std::vector<Hrtimer>& pool, std::uint32_t i) {
  const Entry e = heap_[i];
  const std::uint32_t n = n_;
  for (;;) {
    std::uint32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && less(heap_[c + 1], heap_[c])) ++c;
    if (!less(heap_[c], e)) break;
    heap_[i] = heap_[c];
    pool[heap_[i].id].heap_pos = i;
    i = c;
  }
  heap_[i] = e;
  pool[e.id].heap_pos = i;
}

inline void HrtimerQueue::del(std::vector<Hrtimer>& pool, HrtimerId t) {
  const std::uint32_t i = pool[t].heap_pos;
  pool[t].heap_pos = Hrtimer::kNotQueued;
  const Entry last = heap_[--n_];
  if (last.id == t) return;
  heap_[i] = last;
  pool[last.id].heap_pos = i;
  if (i > 0 && less(last, heap_[(i - 1) / 2])) {
    up(pool, i);
  } else {
    down(pool, i);
  }
}

enum HrtimerBaseType : unsigned { HRTIMER_BASE_MONOTONIC = 0, HRTIMER_BASE_MONOTONIC_SOFT = 1, HRTIMER_MAX_CLOCK_BASES = 2 };

// One CPU's hrtimer_cpu_base, laid out for its interrupt: the fields every
// interrupt reads and writes in the first cache line, the hard queue's
// first places in the next, the soft queue after them, /proc/timer_list's
// rarer counters last. Aligned to a cache line, so no two CPUs share one.
struct alignas(64) HrtimerCpuBase {
  std::int64_t expires_next = kHrtimerNever;
  std::int64_t softirq_expires_next = kHrtimerNever;
  std::int64_t device_next = kHrtimerNever;  // the clock event device (dev->next_event)
  HrtimerId next_timer = kNoHrtimer;
  HrtimerId softirq_next_timer = kNoHrtimer;
  bool in_hrtirq = false, hang_detected = false, softirq_activated = false;
  // /proc/timer_list's counters.
  std::uint64_t nr_events = 0;
  HrtimerQueue clock_base[HRTIMER_MAX_CLOCK_BASES];
  std::uint64_t nr_retries = 0, nr_hangs = 0;
  std::int64_t max_hang_time_ns = 0;
};

// What the hrtimer code asks of the machine around it (the engine, or a test).
class HrtimerHost {
 public:
  virtual ~HrtimerHost() = default;
  virtual unsigned hrtimer_this_cpu() = 0;       // smp_processor_id()
  virtual std::int64_t hrtimer_now() = 0;        // ktime_get() on this CPU, now (moves while callbacks run)
  // get_nohz_timer_target() for this CPU (kernel/sched/core.c).
  virtual unsigned hrtimer_nohz_target() = 0;
  // keep_local's test: this CPU's tick runs or need-resched is set.
  virtual bool hrtimer_tick_running() = 0;
  // The callback of `t` (just dequeued); `now` is the interrupt's clock for
  // this pass. It may start or cancel timers. Returns what the kernel's
  // callback returns.
  virtual HrtimerRestart hrtimer_callback(HrtimerId t, std::int64_t now) = 0;
  // The device of `cpu` was programmed for `t` (kHrtimerNever: stopped).
  virtual void hrtimer_device_programmed(unsigned cpu, std::int64_t t) = 0;
  // How late `cpu`'s device fires for its first timer `first` beyond the
  // expiry the timer holds: a replay runs the tick as late as traced by
  // moving its expiry, where the kernel's device was programmed on the grid.
  virtual std::int64_t hrtimer_first_late_ns(unsigned /*cpu*/, HrtimerId /*first*/) { return 0; }
  // Tracepoints (include/trace/events/timer.h).
  virtual void trace_hrtimer_start(HrtimerId, std::uint8_t /*mode*/, bool /*was_armed*/) {}
  virtual void trace_hrtimer_cancel(HrtimerId) {}
};

struct HrtimerPolicy {
  bool timer_migration = true;  // kernel.timer_migration (and NOHZ active)
  bool keep_local = false;      // the 2026 locality change (kernel behaviour hrtimer_keep_local)
};

// The hrtimers of a machine: a pool of timers and one cpu base per CPU.
// Host: an HrtimerHost. The engine instantiates it with itself (a final
// class), so that the calls into the host on every tick's path (the clock,
// the callback, the tracepoints) are direct and inlined rather than virtual;
// `Hrtimers` (any HrtimerHost, through its virtual functions) is what the
// tests drive. The member functions are in src/hrtimer_impl.hpp.
template <class Host>
class HrtimersT {
 public:
  HrtimersT(unsigned nr_cpus, HrtimerPolicy policy, Host& host);

  // hrtimer_setup: a new timer (or reuse of a freed id); soft: HRTIMER_MODE_SOFT.
  HrtimerId setup(std::uint16_t function, bool soft, std::uint32_t owner);
  void release(HrtimerId t);  // the timer must not be queued

  // hrtimer_start_range_ns: (re)arm `t` for [tim, tim + delta_ns] (REL: from
  // now) from this CPU. Returns the CPU it was queued on.
  unsigned start_range_ns(HrtimerId t, std::int64_t tim, std::int64_t delta_ns, std::uint8_t mode);
  unsigned start(HrtimerId t, std::int64_t tim, std::uint8_t mode) { return start_range_ns(t, tim, 0, mode); }
  // hrtimer_try_to_cancel / hrtimer_cancel: true if it was queued.
  bool cancel(HrtimerId t);
  // hrtimer_forward: move the expiry past `now` by whole intervals; the number of intervals.
  std::uint64_t forward(HrtimerId t, std::int64_t now, std::int64_t interval_ns);

  // The device of `cpu` fired (the host calls it on that CPU at its clock).
  // Returns true if the HRTIMER softirq was raised.
  bool hrtimer_interrupt(unsigned cpu);
  // HRTIMER_SOFTIRQ on `cpu`.
  void hrtimer_run_softirq(unsigned cpu);

  // hrtimer_next_event_without: the earliest hard expiry of `cpu`'s queues
  // (soft ones too unless the softirq is raised), ignoring `exclude`.
  std::int64_t next_event_without(unsigned cpu, HrtimerId exclude) const;

  const Hrtimer& operator[](HrtimerId t) const { return pool_[t]; }
  Hrtimer& operator[](HrtimerId t) { return pool_[t]; }
  const HrtimerCpuBase& base(unsigned cpu) const { return bases_[cpu]; }
  std::size_t size() const { return pool_.size(); }
  std::string check_invariants() const;

 private:
  HrtimerQueue& queue_of(const Hrtimer& t) { return bases_[static_cast<unsigned>(t.cpu)].clock_base[t.is_soft]; }
  // (Inlined: the tick's restart and the device's reprogram on every tick.)
  [[gnu::always_inline]] bool enqueue(HrtimerId t, unsigned cpu);
  void remove(HrtimerId t, bool reprogram);
  unsigned switch_hrtimer_base(HrtimerId t, unsigned this_cpu, bool pinned);
  bool check_target(HrtimerId t, unsigned cpu) const;
  [[gnu::always_inline]] std::int64_t get_next_event(const HrtimerCpuBase& b, unsigned which) const;
  [[gnu::always_inline]] std::int64_t update_next_event(HrtimerCpuBase& b);
  void force_reprogram(unsigned cpu, bool skip_equal);
  void reprogram(HrtimerId t, bool reprogram_device);
  [[gnu::always_inline]] bool program_device(unsigned cpu, std::int64_t t, bool force);
  void run_queue(unsigned cpu, unsigned which, std::int64_t now);

  std::vector<Hrtimer> pool_;
  std::vector<HrtimerId> free_;
  std::unique_ptr<HrtimerCpuBase[]> bases_;  // one per CPU (a base neither copies nor moves)
  unsigned nr_cpus_;
  HrtimerPolicy policy_;
  Host& host_;
  std::uint64_t seq_ = 0;
};

using Hrtimers = HrtimersT<HrtimerHost>;
extern template class HrtimersT<HrtimerHost>;  // hrtimer.cpp

}  // namespace timerlab
