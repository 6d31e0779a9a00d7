// bind_engine_result.cpp — a SimResult as columns for Python (timerlab/simulate.py
// shapes them into DataFrames): per CPU, per idle state, idle periods,
// timers, hrtimers, latency samples and the event log, each array handed
// over without a copy.
#include <iterator>

#include "bindings.hpp"
#include "timerlab/engine.hpp"

namespace timerlab::bindings {

py::dict event_log_arrays(std::vector<EventRow>&& rows);

namespace {

// One field of every row as a column.
template <class T, class Row, class F>
py::array_t<T> column(const std::vector<Row>& rows, F f) {
  std::vector<T> v;
  v.reserve(rows.size());
  for (const auto& r : rows) v.push_back(static_cast<T>(f(r)));
  return to_numpy(std::move(v));
}

py::dict usage_dict(const std::vector<std::vector<StateUsage>>& usage) {
  std::vector<std::int32_t> cpu, state;
  std::vector<std::int64_t> hits, total, min, max, above, below;
  for (std::size_t c = 0; c < usage.size(); ++c) {
    for (std::size_t s = 0; s < usage[c].size(); ++s) {
      const StateUsage& u = usage[c][s];
      cpu.push_back(static_cast<std::int32_t>(c));
      state.push_back(static_cast<std::int32_t>(s));
      hits.push_back(static_cast<std::int64_t>(u.usage));
      total.push_back(u.time_ns);
      min.push_back(u.usage ? u.min_ns : 0);
      max.push_back(u.max_ns);
      above.push_back(static_cast<std::int64_t>(u.above));
      below.push_back(static_cast<std::int64_t>(u.below));
    }
  }
  py::dict d;
  d["cpu"] = to_numpy(std::move(cpu));
  d["state"] = to_numpy(std::move(state));
  d["hits"] = to_numpy(std::move(hits));
  d["total_ns"] = to_numpy(std::move(total));
  d["min_ns"] = to_numpy(std::move(min));
  d["max_ns"] = to_numpy(std::move(max));
  d["above"] = to_numpy(std::move(above));
  d["below"] = to_numpy(std::move(below));
  return d;
}

py::dict idle_periods_dict(IdlePeriods&& p) {
  py::dict d;
  d["cpu"] = to_numpy(std::move(p.cpu));
  d["start_ns"] = to_numpy(std::move(p.start_ns));
  d["duration_ns"] = to_numpy(std::move(p.duration_ns));
  d["state"] = to_numpy(std::move(p.state));
  d["predicted_ns"] = to_numpy(std::move(p.predicted_ns));
  d["cause"] = to_numpy(std::move(p.cause));
  d["above"] = to_numpy(std::move(p.above));
  d["below"] = to_numpy(std::move(p.below));
  d["function"] = to_numpy(std::move(p.function));
  return d;
}

py::dict hrtimers_dict(const std::vector<HrtimerRow>& rows) {
  py::dict d;
#define TL_COL(name, T) d[#name] = column<T>(rows, [](const HrtimerRow& r) { return r.name; })
  TL_COL(hrtimer, std::uint32_t);
  TL_COL(function, std::uint16_t);
  TL_COL(mode, std::uint8_t);
  TL_COL(cpu_armed, std::int32_t);
  TL_COL(base_cpu, std::int32_t);
  TL_COL(cpu_expired, std::int32_t);
  TL_COL(armed_ns, std::int64_t);
  TL_COL(softexpires_ns, std::int64_t);
  TL_COL(expires_ns, std::int64_t);
  TL_COL(end_ns, std::int64_t);
  TL_COL(callback_ns, std::int64_t);
  TL_COL(exit_latency_ns, std::int32_t);
#undef TL_COL
  d["outcome"] = column<std::uint8_t>(rows, [](const HrtimerRow& r) { return static_cast<std::uint8_t>(r.outcome); });
  return d;
}

py::dict latency_dict(const std::vector<LatencyRow>& rows) {
  py::dict d;
#define TL_COL(name, T) d[#name] = column<T>(rows, [](const LatencyRow& r) { return r.name; })
  TL_COL(cpu, std::int32_t);
  TL_COL(task, std::uint32_t);
  TL_COL(state, std::int32_t);
  TL_COL(requested_ns, std::int64_t);
  TL_COL(expires_ns, std::int64_t);
  TL_COL(window_ns, std::int64_t);
  TL_COL(wake_ns, std::int64_t);
  TL_COL(exit_latency_ns, std::int64_t);
  TL_COL(irq_entry_ns, std::int64_t);
  TL_COL(handler_wait_ns, std::int64_t);
  TL_COL(sched_ns, std::int64_t);
  TL_COL(user_ns, std::int64_t);
  TL_COL(irq_latency_ns, std::int64_t);
  TL_COL(latency_ns, std::int64_t);
#undef TL_COL
  d["tool"] = column<std::uint8_t>(rows, [](const LatencyRow& r) { return static_cast<std::uint8_t>(r.tool); });
  return d;
}

}  // namespace

py::dict result_dict(SimResult&& r) {
  py::dict per_cpu;
#define TL_COL(name) per_cpu[#name] = column<std::int64_t>(r.cpus, [](const CpuCounters& c) { return c.name; })
  TL_COL(busy_ns);
  TL_COL(idle_ns);
  TL_COL(idle_entries);
  TL_COL(wakeups);
  TL_COL(tick_stops);
  TL_COL(ticks);
  TL_COL(softirqs);
  TL_COL(timers_armed);
  TL_COL(timers_cancelled);
  TL_COL(timers_expired_local);
  TL_COL(timers_expired_remote);
  TL_COL(remote_expiries_done);
  TL_COL(ipis_sent);
  TL_COL(ipis_received);
  TL_COL(tasks_woken);
  TL_COL(hrtimers_armed);
  TL_COL(hrtimers_expired);
  TL_COL(hrtimer_interrupts);
  TL_COL(hrtimer_retries);
  TL_COL(hrtimer_hangs);
  TL_COL(hrtimer_max_hang_ns);
  TL_COL(preemptions);
#undef TL_COL
  static const char* causes[] = {"timer", "remote_duty", "ipi", "task", "tick", "irq", "hrtimer"};
  static_assert(std::size(causes) == static_cast<std::size_t>(WakeCause::count_));
  for (int k = 0; k < static_cast<int>(WakeCause::count_); ++k) {
    per_cpu[(std::string("wakeups_") + causes[k]).c_str()] =
        column<std::int64_t>(r.cpus, [k](const CpuCounters& c) { return c.wakeups_by[k]; });
  }
  per_cpu["energy_uj"] = column<double>(r.cpus, [](const CpuCounters& c) { return c.energy_uj; });
  per_cpu["timer_overhead_ns"] = column<double>(r.cpus, [](const CpuCounters& c) { return c.timer_overhead_ns; });
  const std::size_t n = r.timers.size();
  std::vector<std::uint32_t> timer(n), flags(n);
  std::vector<std::uint16_t> function(n);
  std::vector<std::int32_t> cpu_armed(n), base_cpu(n), cpu_expired(n);
  std::vector<std::int64_t> armed_ns(n), end_ns(n);
  std::vector<std::uint64_t> expires(n), bucket(n);
  std::vector<std::uint8_t> outcome(n);
  std::vector<std::int32_t> exit_latency(n);
  std::vector<std::int64_t> callback(n);
  for (std::size_t i = 0; i < n; ++i) {
    const TimerRow& t = r.timers[i];
    timer[i] = t.timer;
    flags[i] = t.flags;
    function[i] = t.function;
    cpu_armed[i] = t.cpu_armed;
    base_cpu[i] = t.base_cpu;
    cpu_expired[i] = t.cpu_expired;
    armed_ns[i] = t.armed_ns;
    end_ns[i] = t.end_ns;
    expires[i] = t.expires_jiffies;
    bucket[i] = t.bucket_expiry_jiffies;
    outcome[i] = static_cast<std::uint8_t>(t.outcome);
    exit_latency[i] = t.exit_latency_ns;
    callback[i] = t.callback_ns;
  }
  r.timers = {};
  py::dict timers;
  timers["timer"] = to_numpy(std::move(timer));
  timers["function"] = to_numpy(std::move(function));
  timers["flags"] = to_numpy(std::move(flags));
  timers["cpu_armed"] = to_numpy(std::move(cpu_armed));
  timers["base_cpu"] = to_numpy(std::move(base_cpu));
  timers["armed_ns"] = to_numpy(std::move(armed_ns));
  timers["expires_jiffies"] = to_numpy(std::move(expires));
  timers["bucket_expiry_jiffies"] = to_numpy(std::move(bucket));
  timers["outcome"] = to_numpy(std::move(outcome));
  timers["end_ns"] = to_numpy(std::move(end_ns));
  timers["cpu_expired"] = to_numpy(std::move(cpu_expired));
  timers["exit_latency_ns"] = to_numpy(std::move(exit_latency));
  timers["callback_ns"] = to_numpy(std::move(callback));
  py::dict out;
  out["per_cpu"] = per_cpu;
  out["residency"] = usage_dict(r.usage);
  out["idle_periods"] = idle_periods_dict(std::move(r.idle_periods));
  out["timers"] = timers;
  out["hrtimers"] = hrtimers_dict(r.hrtimers);
  r.hrtimers = {};
  out["latency"] = latency_dict(r.latency);
  r.latency = {};
  out["events"] = event_log_arrays(std::move(r.events));
  out["steps"] = r.steps;
  out["timer_events"] = r.timer_events;
  out["pending_at_end"] = r.pending_at_end;
  out["peak_pending"] = r.peak_pending;
  out["end_ns"] = r.end_ns;
  return out;
}

}  // namespace timerlab::bindings
