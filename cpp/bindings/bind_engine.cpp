// bind_engine.cpp — _core.simulate: a validated Config (as a dict, built by
// timerlab/config.py) in, result columns out. The run releases the GIL.
#include <pybind11/stl.h>

#include <chrono>
#include <optional>

#include "bindings.hpp"
#include "timerlab/engine.hpp"

namespace timerlab::bindings {

TopologySpec topology_spec(unsigned nr_cpus, unsigned nr_nodes, std::vector<int> node_of_cpu, unsigned smt,
                           unsigned llc_size, std::vector<unsigned> bringup_order);
py::dict result_dict(SimResult&& r);  // bind_engine_result.cpp

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

// A script as columns (timerlab.replay): equal-length arrays, one entry per item.
ScriptSpec script_of(const py::dict& d) {
  constexpr int forced = py::array::forcecast;
  const auto t = get<py::array_t<std::int64_t, forced>>(d, "t_ns");
  const auto cpu = get<py::array_t<std::uint32_t, forced>>(d, "cpu");
  const auto op = get<py::array_t<std::uint8_t, forced>>(d, "op");
  const auto key = get<py::array_t<std::uint32_t, forced>>(d, "key");
  const auto expires = get<py::array_t<std::uint64_t, forced>>(d, "expires_jiffies");
  const auto flags = get<py::array_t<std::uint32_t, forced>>(d, "flags");
  const auto function = get<py::array_t<std::uint16_t, forced>>(d, "function");
  const auto target = get<py::array_t<std::uint32_t, forced>>(d, "target_cpu");
  const auto duration = get<py::array_t<std::int64_t, forced>>(d, "duration_ns");
  const auto place = get<py::array_t<std::uint8_t, forced>>(d, "place");
  const auto n = static_cast<std::size_t>(t.size());
  // late_ns came with replayed hrtimers: a script without it has none.
  const auto late = d.contains("late_ns") ? get<py::array_t<std::int64_t, forced>>(d, "late_ns")
                                          : py::array_t<std::int64_t, forced>(std::vector<py::ssize_t>{static_cast<py::ssize_t>(n)});
  for (const py::array* a : {static_cast<const py::array*>(&cpu), static_cast<const py::array*>(&op),
                             static_cast<const py::array*>(&key), static_cast<const py::array*>(&expires),
                             static_cast<const py::array*>(&flags), static_cast<const py::array*>(&function),
                             static_cast<const py::array*>(&target), static_cast<const py::array*>(&duration),
                             static_cast<const py::array*>(&place), static_cast<const py::array*>(&late)}) {
    if (a->ndim() != 1 || static_cast<std::size_t>(a->size()) != n) {
      throw std::invalid_argument("script: every column must be 1-D with one entry per item");
    }
  }
  ScriptSpec s;
  s.nr_keys = get<std::uint32_t>(d, "nr_keys");
  if (d.contains("nr_hrtimer_keys")) s.nr_hrtimer_keys = get<std::uint32_t>(d, "nr_hrtimer_keys");
  s.initial_busy = get<std::vector<std::uint8_t>>(d, "initial_busy");
  if (d.contains("initial_tick")) s.initial_tick = get<std::vector<std::uint8_t>>(d, "initial_tick");
  s.items.resize(n);
  const auto tv = t.unchecked<1>();
  const auto cv = cpu.unchecked<1>();
  const auto ov = op.unchecked<1>();
  const auto kv = key.unchecked<1>();
  const auto ev = expires.unchecked<1>();
  const auto fv = flags.unchecked<1>();
  const auto fnv = function.unchecked<1>();
  const auto tgv = target.unchecked<1>();
  const auto dv = duration.unchecked<1>();
  const auto pv = place.unchecked<1>();
  const auto lv = late.unchecked<1>();
  for (std::size_t i = 0; i < n; ++i) {
    const auto k = static_cast<py::ssize_t>(i);
    if (ov(k) > static_cast<std::uint8_t>(ScriptOp::wake_pending)) {
      throw std::invalid_argument("script item " + std::to_string(i) + ": unknown operation " + std::to_string(ov(k)));
    }
    if (pv(k) > static_cast<std::uint8_t>(ArmPlace::own_base)) {
      throw std::invalid_argument("script item " + std::to_string(i) + ": unknown place " + std::to_string(pv(k)));
    }
    s.items[i] = {tv(k), cv(k), static_cast<ScriptOp>(ov(k)), kv(k), ev(k), fv(k), fnv(k), tgv(k), dv(k),
                  static_cast<ArmPlace>(pv(k)), d.contains("late_ns") ? lv(k) : -1};
  }
  return s;
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
    t.sleep = static_cast<SleepKind>(get<unsigned>(td, "sleep_kind"));
    t.sleep_function = get<std::uint16_t>(td, "sleep_function");
    t.rt_priority = get<unsigned>(td, "rt_priority");
    t.nice = get<int>(td, "nice");
    t.timer_slack_ns = get<std::int64_t>(td, "timer_slack_ns");
    t.range_ns = get<std::int64_t>(td, "range_ns");
    t.measure = static_cast<Measure>(get<unsigned>(td, "measure"));
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
  for (const auto& h : get<py::list>(d, "loops")) {
    const auto ld = h.cast<py::dict>();
    LoopSpec l;
    l.cpu = get<unsigned>(ld, "cpu");
    l.pairs = get<unsigned>(ld, "pairs");
    l.timeout_ns = dist_of(ld["timeout_ns"]);
    l.function = get<std::uint16_t>(ld, "function");
    w.loops.push_back(std::move(l));
  }
  if (d.contains("script") && !d["script"].is_none()) w.script = script_of(d["script"].cast<py::dict>());
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

IdleTable idle_of(const py::dict& d) {
  IdleTable t;
  t.busy_power_mw = get<double>(d, "busy_power_mw");
  for (const auto& h : get<py::list>(d, "states")) {
    const auto sd = h.cast<py::dict>();
    IdleState st;
    st.name = get<std::string>(sd, "name");
    st.exit_latency_ns = get<std::int64_t>(sd, "exit_latency_ns");
    st.target_residency_ns = get<std::int64_t>(sd, "target_residency_ns");
    st.power_mw = get<double>(sd, "power_mw");
    st.transition_uj = get<double>(sd, "transition_uj");
    st.polling = get<bool>(sd, "polling");
    st.package = get<bool>(sd, "package");
    st.disabled = get<bool>(sd, "disabled");
    t.states.push_back(std::move(st));
  }
  return t;
}

OverheadModel overhead_of(const py::dict& d) {
  OverheadModel o;
  o.enqueue_ns = get<double>(d, "enqueue_ns");
  o.dequeue_ns = get<double>(d, "dequeue_ns");
  o.push_target_ns = get<double>(d, "push_target_ns");
  o.push_domain_ns = get<double>(d, "push_domain_ns");
  o.tmigr_level_ns = get<double>(d, "tmigr_level_ns");
  o.remote_cpu_ns = get<double>(d, "remote_cpu_ns");
  o.expire_ns = get<double>(d, "expire_ns");
  return o;
}

DeferrablePolicy deferrable_policy_of(const std::string& name) {
  if (name == "legacy") return DeferrablePolicy::legacy;
  if (name == "global") return DeferrablePolicy::global;
  if (name == "global_nowake") return DeferrablePolicy::global_nowake;
  throw std::invalid_argument("deferrable='" + name + "': choose 'legacy', 'global' or 'global_nowake'");
}

SimConfig config_of(const py::dict& d) {
  SimConfig c;
  c.topology = topology_spec(get<unsigned>(d, "cpus"), get<unsigned>(d, "nodes"), get<std::vector<int>>(d, "node_of_cpu"),
                             get<unsigned>(d, "smt"), get<unsigned>(d, "llc_size"),
                             get<std::vector<unsigned>>(d, "bringup_order"));
  c.hz = get<unsigned>(d, "hz");
  c.pull_model = get<bool>(d, "pull_model");
  c.lazy_wakeup = get<bool>(d, "lazy_wakeup");
  c.deferrable = deferrable_policy_of(get<std::string>(d, "deferrable"));
  c.tmigr_setup = get<bool>(d, "numa_tree_fix") ? TmigrSetup::fixed : TmigrSetup::v6_12;
  c.remote_expires_self = get<bool>(d, "remote_expires_self");
  c.first_timer_by_bucket = get<bool>(d, "first_timer_by_bucket");
  c.jiffies_stall_check = get<bool>(d, "jiffies_stall_check");
  c.rcu_needs_cpu = get<bool>(d, "rcu_needs_cpu");
  if (d.contains("fair_server_defer_ns")) c.fair_server_defer_ns = get<std::int64_t>(d, "fair_server_defer_ns");
  c.start_ns = get<std::int64_t>(d, "start_ns");
  c.duration_ns = get<std::int64_t>(d, "duration_ns");
  c.seed = get<std::uint64_t>(d, "seed");
  c.ipi_latency_ns = get<std::int64_t>(d, "ipi_latency_ns");
  if (d.contains("wake_latency")) {
    const auto w = get<py::dict>(d, "wake_latency");
    c.wake_latency.stopped.quantiles_ns = get<std::vector<std::vector<std::int64_t>>>(w, "stopped");
    c.wake_latency.tick.quantiles_ns = get<std::vector<std::vector<std::int64_t>>>(w, "tick");
  }
  c.record_events = get<bool>(d, "record_events");
  c.record_timers = get<bool>(d, "record_timers");
  c.check_invariants = get<bool>(d, "check_invariants");
  c.record_idle = get<bool>(d, "record_idle");
  c.idle = idle_of(get<py::dict>(d, "idle"));
  c.governor = get<std::string>(d, "governor");
  c.latency_req_ns = get<std::int64_t>(d, "latency_req_ns");
  c.teo_tick_intercepts_fixed = get<bool>(d, "teo_tick_intercepts_fixed");
  c.overhead = overhead_of(get<py::dict>(d, "overhead"));
  if (d.contains("callback_ns")) c.callback_ns = get<std::vector<std::int64_t>>(d, "callback_ns");
  c.timer_migration = get<bool>(d, "timer_migration");
  c.hrtimer_keep_local = get<bool>(d, "hrtimer_keep_local");
  c.tick_function = get<std::uint16_t>(d, "tick_function");
  c.fair_server_function = get<std::uint16_t>(d, "fair_server_function");
  const auto lat = get<py::dict>(d, "latency");
  c.latency.irq_entry_ns = get<std::int64_t>(lat, "irq_entry_ns");
  c.latency.context_switch_ns = get<std::int64_t>(lat, "context_switch_ns");
  c.latency.return_to_user_ns = get<std::int64_t>(lat, "return_to_user_ns");
  c.record_hrtimers = static_cast<RecordHrtimers>(get<unsigned>(d, "record_hrtimers"));
  c.resume_latency_ns = get<std::vector<std::int64_t>>(d, "resume_latency_ns");
  const auto wd = get<py::dict>(d, "workload");
  c.workload = workload_of(wd);
  // A replayed trace brings its own jiffies (timerlab.replay).
  if (wd.contains("initial_jiffies") && !wd["initial_jiffies"].is_none()) {
    c.initial_jiffies = wd["initial_jiffies"].cast<jiffies_t>();
  }
  if (wd.contains("jiffies_duty")) c.jiffies_duty = wd["jiffies_duty"].cast<bool>();
  if (d.contains("max_memory_bytes")) c.guard.max_memory_bytes = get<std::uint64_t>(d, "max_memory_bytes");
  return c;
}

// Ctrl-C during a run: the loop runs without the GIL, so Python's handler
// only sets a flag; the engine polls here (guard.hpp), which runs the
// handler and leaves its KeyboardInterrupt set for simulate to raise. Only
// the main thread receives signals. A time limit (sweeps) is polled here too.
void poll_from_engine(SimConfig& cfg, std::optional<double> time_limit_s, bool& timed_out) {
  const auto threading = py::module_::import("threading");
  const bool main = threading.attr("current_thread")().is(threading.attr("main_thread")());
  if (!main && !time_limit_s) return;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (time_limit_s) {
    deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(*time_limit_s));
  }
  cfg.guard.interrupted = [main, deadline, &timed_out] {
    if (deadline && std::chrono::steady_clock::now() > *deadline) return timed_out = true;
    if (!main) return false;
    py::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0;
  };
}

}  // namespace

void register_engine(py::module_& m) {
  py::register_exception<RunawayError>(m, "RunawayError", PyExc_RuntimeError);
  py::register_exception<Interrupted>(m, "Interrupted", PyExc_RuntimeError);
  // The guard's default limit on timers pending + work queued (Config refuses a workload bound to pass it).
  m.def("guard_pending_limit", [](unsigned nr_cpus) { return GuardSpec{}.pending_limit(nr_cpus); }, py::arg("nr_cpus"));
  m.def(
      "simulate",
      [](const py::dict& config, std::optional<double> time_limit_s) {
        SimConfig cfg = config_of(config);
        bool timed_out = false;
        poll_from_engine(cfg, time_limit_s, timed_out);
        SimResult r;
        try {
          py::gil_scoped_release nogil;
          r = simulate(cfg);
        } catch (const Interrupted& e) {
          if (PyErr_Occurred()) throw py::error_already_set();  // the signal handler's exception
          if (timed_out) {
            PyErr_Format(PyExc_TimeoutError, "over the time limit of %S s: %s",
                         py::float_(*time_limit_s).ptr(), e.what());
            throw py::error_already_set();
          }
          throw;
        }
        return result_dict(std::move(r));
      },
      py::arg("config"), py::arg("time_limit_s") = py::none(),
      "Run one simulation of a config dict (see timerlab.config); returns result columns. time_limit_s: wall "
      "time after which the run stops with TimeoutError");
}

}  // namespace timerlab::bindings
