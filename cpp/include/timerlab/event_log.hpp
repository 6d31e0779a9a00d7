// event_log.hpp — the simulator's tracepoint log.
//
// Models the records of the kernel's tracepoints that timerlab simulates
// (include/trace/events/timer.h, timer_migration.h, power.h, ipi.h,
// sched.h), so that a simulated run reads like a real trace: same event names,
// same fields, and — once turned into a DataFrame in Python — the same column
// names as timerlab's ftrace reader gives for real traces (units in names:
// expires_jiffies, wakeup_ns, ...).
//
// Theory of operation
// -------------------
// A row is (ts_ns, cpu, event, 9 value slots). What each slot of each event
// means is ONE table, sim_event_schema(): event -> list of (column, kind,
// slot). The engine sets the context (time, CPU) and appends rows; the
// binding hands the rows over as arrays with the table, and Python lays out
// the named columns. Kernel pointers are opaque ids: a timer's id + 1, a
// group's index + 1, 0 for NULL, as the kernel prints (nil) pointers.
//
// Simplifications vs. the kernel
//   * No task names or pids on the line (the CPU's context is implicit).
//   * Strings (callback names) are codes into a table the engine owns.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "timerlab/tmigr.hpp"

namespace timerlab {

enum class SimEvent : std::uint16_t {
  timer_start,
  timer_cancel,
  timer_expire_entry,
  timer_expire_exit,
  timer_base_idle,
  tick_stop,
  cpu_idle,
  ipi_send_cpu,
  sched_wakeup,
  tmigr_group_set,
  tmigr_connect_child_parent,
  tmigr_connect_cpu_parent,
  tmigr_group_set_cpu_active,
  tmigr_group_set_cpu_inactive,
  tmigr_cpu_online,
  tmigr_cpu_active,
  tmigr_cpu_idle,
  tmigr_cpu_new_timer,
  tmigr_cpu_new_timer_idle,
  tmigr_update_events,
  tmigr_handle_remote,
  tmigr_handle_remote_cpu,
  hrtimer_start,
  hrtimer_cancel,
  hrtimer_expire_entry,
  hrtimer_expire_exit,
  count_
};

// How Python renders a slot: numbers (signed or not), an opaque pointer id,
// a hex mask, a callback-name code, timer flag bits ("D|P|I"), or hrtimer
// mode bits ("ABS|PINNED|HARD").
enum class SlotKind : std::uint8_t { u64, i64, ptr, hex, function, timer_flags, hrtimer_mode };

struct SlotSpec {
  std::string_view column;
  SlotKind kind;
  unsigned slot;
};

struct SimEventSpec {
  std::string_view name;
  std::vector<SlotSpec> slots;
};

// Indexed by SimEvent.
const std::vector<SimEventSpec>& sim_event_schema();

struct EventRow {
  std::int64_t ts_ns;
  std::int32_t cpu;
  SimEvent event;
  std::uint64_t v[9];
};

class EventLog {
 public:
  void set_context(std::int64_t ts_ns, unsigned cpu) {
    ts_ns_ = ts_ns;
    cpu_ = static_cast<std::int32_t>(cpu);
  }
  unsigned cpu() const { return static_cast<unsigned>(cpu_); }
  std::int64_t ts_ns() const { return ts_ns_; }
  // Append a row in the current context; up to 9 values in slot order.
  void add(SimEvent e, std::initializer_list<std::uint64_t> values) {
    EventRow& r = rows_.emplace_back();
    r.ts_ns = ts_ns_;
    r.cpu = cpu_;
    r.event = e;
    unsigned i = 0;
    for (std::uint64_t x : values) r.v[i++] = x;
    for (; i < 9; ++i) r.v[i] = 0;
  }
  // Correct a value of an earlier row (the oracle governor learns its state
  // when the idle period ends, after the entry was logged).
  void patch(std::size_t row, unsigned slot, std::uint64_t value) { rows_[row].v[slot] = value; }
  const std::vector<EventRow>& rows() const { return rows_; }
  std::vector<EventRow> take() { return std::move(rows_); }
  // Rows in time order, same-time rows in the order logged: a softirq logs
  // its later callbacks ahead of its CPU's clock (Engine::expire_timer), so
  // other CPUs' rows may come in between.
  void sort_by_time() {
    auto earlier = [](const EventRow& a, const EventRow& b) { return a.ts_ns < b.ts_ns; };
    if (!std::is_sorted(rows_.begin(), rows_.end(), earlier)) std::stable_sort(rows_.begin(), rows_.end(), earlier);
  }

 private:
  std::vector<EventRow> rows_;
  std::int64_t ts_ns_ = 0;
  std::int32_t cpu_ = 0;
};

// Writes the timer_migration tracepoints of a Tmigr into an EventLog.
class TmigrLogTracer final : public TmigrTracer {
 public:
  explicit TmigrLogTracer(EventLog& log) : log_(log) {}
  void boot_cpu(unsigned cpu) override { log_.set_context(log_.ts_ns(), cpu); }
  void group_set(const Tmigr& t, int group) override;
  void connect_child_parent(const Tmigr& t, int child) override;
  void connect_cpu_parent(const Tmigr& t, unsigned cpu) override;
  void group_set_cpu_active(const Tmigr& t, int group, std::uint8_t childmask) override {
    group_state_event(t, SimEvent::tmigr_group_set_cpu_active, group, childmask);
  }
  void group_set_cpu_inactive(const Tmigr& t, int group, std::uint8_t childmask) override {
    group_state_event(t, SimEvent::tmigr_group_set_cpu_inactive, group, childmask);
  }
  void update_events(const Tmigr& t, int child, int group, TmigrState child_state, TmigrState group_state,
                     std::uint64_t nextexp) override;
  void cpu_online(const Tmigr& t, unsigned cpu) override { cpu_event(t, SimEvent::tmigr_cpu_online, cpu); }
  void cpu_active(const Tmigr& t, unsigned cpu) override { cpu_event(t, SimEvent::tmigr_cpu_active, cpu); }
  void cpu_new_timer(const Tmigr& t, unsigned cpu) override { cpu_event(t, SimEvent::tmigr_cpu_new_timer, cpu); }
  void handle_remote_cpu(const Tmigr& t, unsigned cpu) override {
    cpu_event(t, SimEvent::tmigr_handle_remote_cpu, cpu);
  }
  void cpu_idle(const Tmigr& t, unsigned cpu, std::uint64_t nextevt) override {
    cpu_nextevt_event(t, SimEvent::tmigr_cpu_idle, cpu, nextevt);
  }
  void cpu_new_timer_idle(const Tmigr& t, unsigned cpu, std::uint64_t nextevt) override {
    cpu_nextevt_event(t, SimEvent::tmigr_cpu_new_timer_idle, cpu, nextevt);
  }
  void handle_remote(const Tmigr& t, int group) override;

 private:
  void cpu_event(const Tmigr& t, SimEvent e, unsigned cpu);
  void cpu_nextevt_event(const Tmigr& t, SimEvent e, unsigned cpu, std::uint64_t nextevt);
  void group_state_event(const Tmigr& t, SimEvent e, int group, std::uint8_t childmask);
  EventLog& log_;
};

// Pointer ids of groups as the log prints them: index + 1, NULL = 0.
inline std::uint64_t group_ptr(int group) { return group < 0 ? 0 : static_cast<std::uint64_t>(group) + 1; }

}  // namespace timerlab
