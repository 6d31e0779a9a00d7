// bind_engine.cpp — _core.simulate: a validated Config (as a dict, built by
// timerlab/config.py) in, result columns out. The run releases the GIL.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "timerlab/engine.hpp"

namespace timerlab::bindings {

TopologySpec topology_spec(unsigned nr_cpus, unsigned nr_nodes, std::vector<int> node_of_cpu, unsigned smt,
                           unsigned llc_size, std::vector<unsigned> bringup_order);
py::dict event_log_arrays(std::vector<EventRow>&& rows);

namespace {

template <class T>
T get(const py::dict& d, const char* key) {
  if (!d.contains(key)) throw std::invalid_argument(std::string("simulate: missing config field ") + key);
  return d[key].cast<T>();
}

Dist dist_of(const py::handle& h) {
  // (kind, a, b) with kind one of "const", "uniform", "exponential", "lognormal"
  const auto t = h.cast<std::tuple<std::string, double, double>>();
  const std::string& k = std::get<0>(t);
  Dist d;
  d.kind = k == "const"         ? Dist::Kind::constant
           : k == "uniform"     ? Dist::Kind::uniform
           : k == "exponential" ? Dist::Kind::exponential
           : k == "lognormal"   ? Dist::Kind::lognormal
                                : throw std::invalid_argument("unknown distribution " + k);
  d.a = std::get<1>(t);
  d.b = std::get<2>(t);
  return d;
}

TimeoutSpec timeouts_of(const py::dict& d) {
  TimeoutSpec t;
  t.count = get<unsigned>(d, "count");
  t.timeout_ns = dist_of(d["timeout_ns"]);
  t.cancel_p = get<double>(d, "cancel_p");
  t.cancel_after_ns = dist_of(d["cancel_after_ns"]);
  t.flags = get<std::uint32_t>(d, "flags");
  t.function = get<std::uint16_t>(d, "function");
  return t;
}

WorkloadSpec workload_of(const py::dict& d) {
  WorkloadSpec w;
  w.function_names = get<std::vector<std::string>>(d, "function_names");
  w.busy_cpus = get<std::vector<unsigned>>(d, "busy_cpus");
  w.irq_ns = get<std::int64_t>(d, "irq_ns");
  for (const auto& h : get<py::list>(d, "tasks")) {
    const auto td = h.cast<py::dict>();
    TaskSpec t;
    t.cpus = get<std::vector<unsigned>>(td, "cpus");
    t.per_cpu = get<unsigned>(td, "per_cpu");
    t.run_ns = dist_of(td["run_ns"]);
    t.sleep_ns = dist_of(td["sleep_ns"]);
    t.sleep_on_timer = get<bool>(td, "sleep_on_timer");
    t.sleep_function = get<std::uint16_t>(td, "sleep_function");
    t.timeouts = timeouts_of(get<py::dict>(td, "timeouts"));
    w.tasks.push_back(std::move(t));
  }
  for (const auto& h : get<py::list>(d, "streams")) {
    const auto sd = h.cast<py::dict>();
    TimeoutStreamSpec s;
    s.cpus = get<std::vector<unsigned>>(sd, "cpus");
    s.rate_hz = get<double>(sd, "rate_hz");
    s.timeouts = timeouts_of(get<py::dict>(sd, "timeouts"));
    w.streams.push_back(std::move(s));
  }
  for (const auto& h : get<py::list>(d, "periodic")) {
    const auto pd = h.cast<py::dict>();
    PeriodicSpec p;
    p.cpus = get<std::vector<unsigned>>(pd, "cpus");
    p.period_ns = dist_of(pd["period_ns"]);
    p.flags = get<std::uint32_t>(pd, "flags");
    p.function = get<std::uint16_t>(pd, "function");
    w.periodic.push_back(std::move(p));
  }
  for (const auto& h : get<py::list>(d, "remote")) {
    const auto rd = h.cast<py::dict>();
    RemoteEnqueueSpec r;
    r.from_cpu = get<unsigned>(rd, "from_cpu");
    r.to_cpus = get<std::vector<unsigned>>(rd, "to_cpus");
    r.rate_hz = get<double>(rd, "rate_hz");
    r.timeout_ns = dist_of(rd["timeout_ns"]);
    r.function = get<std::uint16_t>(rd, "function");
    w.remote.push_back(std::move(r));
  }
  return w;
}

SimConfig config_of(const py::dict& d) {
  SimConfig c;
  c.topology = topology_spec(get<unsigned>(d, "cpus"), get<unsigned>(d, "nodes"), get<std::vector<int>>(d, "node_of_cpu"),
                             get<unsigned>(d, "smt"), get<unsigned>(d, "llc_size"),
                             get<std::vector<unsigned>>(d, "bringup_order"));
  c.hz = get<unsigned>(d, "hz");
  c.pull_model = get<bool>(d, "pull_model");
  c.lazy_wakeup = get<bool>(d, "lazy_wakeup");
  c.deferrable_no_ipi = get<bool>(d, "deferrable_no_ipi");
  c.tmigr_setup = get<bool>(d, "numa_tree_fix") ? TmigrSetup::fixed : TmigrSetup::v6_12;
  c.remote_expires_self = get<bool>(d, "remote_expires_self");
  c.start_ns = get<std::int64_t>(d, "start_ns");
  c.duration_ns = get<std::int64_t>(d, "duration_ns");
  c.seed = get<std::uint64_t>(d, "seed");
  c.ipi_latency_ns = get<std::int64_t>(d, "ipi_latency_ns");
  c.record_events = get<bool>(d, "record_events");
  c.record_timers = get<bool>(d, "record_timers");
  c.check_invariants = get<bool>(d, "check_invariants");
  c.workload = workload_of(get<py::dict>(d, "workload"));
  return c;
}

template <class T, class F>
py::array_t<T> column(const std::vector<CpuCounters>& rows, F f) {
  std::vector<T> v;
  v.reserve(rows.size());
  for (const auto& r : rows) v.push_back(static_cast<T>(f(r)));
  return to_numpy(std::move(v));
}

py::dict result_dict(SimResult&& r) {
  py::dict per_cpu;
#define TL_COL(name) per_cpu[#name] = column<std::int64_t>(r.cpus, [](const CpuCounters& c) { return c.name; })
  TL_COL(busy_ns);
  TL_COL(idle_ns);
  TL_COL(idle_entries);
  TL_COL(wakeups);
  TL_COL(wakeups_timer);
  TL_COL(wakeups_ipi);
  TL_COL(wakeups_irq);
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
#undef TL_COL
  const std::size_t n = r.timers.size();
  std::vector<std::uint32_t> timer(n), flags(n);
  std::vector<std::uint16_t> function(n);
  std::vector<std::int32_t> cpu_armed(n), base_cpu(n), cpu_expired(n);
  std::vector<std::int64_t> armed_ns(n), end_ns(n);
  std::vector<std::uint64_t> expires(n), bucket(n);
  std::vector<std::uint8_t> outcome(n);
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
  py::dict out;
  out["per_cpu"] = per_cpu;
  out["timers"] = timers;
  out["events"] = event_log_arrays(std::move(r.events));
  out["steps"] = r.steps;
  out["timer_events"] = r.timer_events;
  out["pending_at_end"] = r.pending_at_end;
  out["peak_pending"] = r.peak_pending;
  out["end_ns"] = r.end_ns;
  return out;
}

}  // namespace

void register_engine(py::module_& m) {
  m.def(
      "simulate",
      [](const py::dict& config) {
        SimConfig cfg = config_of(config);
        SimResult r;
        {
          py::gil_scoped_release nogil;
          r = simulate(cfg);
        }
        return result_dict(std::move(r));
      },
      py::arg("config"), "Run one simulation of a config dict (see timerlab.config); returns result columns");
}

}  // namespace timerlab::bindings
