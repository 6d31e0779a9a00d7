// bind_wheel.cpp — calc_wheel_index (vectorised), the wheel constants and
// StandaloneWheel.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "timerlab/standalone_wheel.hpp"

namespace timerlab::bindings {

namespace {

py::tuple calc_wheel_index_array(py::array_t<std::uint64_t, py::array::c_style> expires,
                                 py::array_t<std::uint64_t, py::array::c_style> clk, unsigned hz) {
  const unsigned depth = checked_lvl_depth(hz);
  if (expires.size() != clk.size()) throw std::invalid_argument("expires and clk differ in size");
  const auto n = static_cast<std::size_t>(expires.size());
  std::vector<std::uint32_t> idx(n);
  std::vector<std::uint64_t> bucket(n);
  const std::uint64_t* e = expires.data();
  const std::uint64_t* c = clk.data();
  {
    py::gil_scoped_release nogil;
    for (std::size_t i = 0; i < n; ++i) {
      const WheelIndex wi = calc_wheel_index(e[i], c[i], depth);
      idx[i] = wi.idx;
      bucket[i] = wi.bucket_expiry;
    }
  }
  return py::make_tuple(to_numpy(std::move(idx)), to_numpy(std::move(bucket)));
}

py::dict wheel_constants(unsigned hz) {
  const unsigned depth = checked_lvl_depth(hz);
  py::dict d;
  d["LVL_DEPTH"] = depth;
  d["LVL_SIZE"] = LVL_SIZE;
  d["LVL_CLK_SHIFT"] = LVL_CLK_SHIFT;
  d["WHEEL_SIZE"] = WHEEL_SIZE(depth);
  d["WHEEL_TIMEOUT_CUTOFF"] = WHEEL_TIMEOUT_CUTOFF(depth);
  d["WHEEL_TIMEOUT_MAX"] = WHEEL_TIMEOUT_MAX(depth);
  d["TIMER_NEXT_MAX_DELTA"] = TIMER_NEXT_MAX_DELTA;
  std::vector<jiffies_t> start{0}, gran;
  for (unsigned n = 1; n <= depth; ++n) start.push_back(LVL_START(n));
  for (unsigned n = 0; n < depth; ++n) gran.push_back(LVL_GRAN(n));
  d["LVL_START"] = start;
  d["LVL_GRAN"] = gran;
  return d;
}

py::dict wheel_events(const StandaloneWheel& w) {
  const auto& ev = w.events();
  std::vector<std::uint8_t> kind;
  std::vector<std::uint32_t> timer, idx;
  std::vector<std::uint64_t> jiffies, expires, bucket;
  for (const WheelEvent& e : ev) {
    kind.push_back(static_cast<std::uint8_t>(e.kind));
    timer.push_back(e.timer);
    jiffies.push_back(e.jiffies);
    expires.push_back(e.expires);
    bucket.push_back(e.bucket_expiry);
    idx.push_back(e.idx);
  }
  py::dict d;
  d["kind"] = to_numpy(std::move(kind));
  d["timer"] = to_numpy(std::move(timer));
  d["jiffies"] = to_numpy(std::move(jiffies));
  d["expires"] = to_numpy(std::move(expires));
  d["bucket_expiry"] = to_numpy(std::move(bucket));
  d["idx"] = to_numpy(std::move(idx));
  return d;
}

}  // namespace

void register_wheel(py::module_& m) {
  py::class_<StandaloneWheel> wheel(m, "StandaloneWheel");

  m.def("calc_wheel_index", &calc_wheel_index_array, py::arg("expires"), py::arg("clk"), py::arg("hz"),
        "calc_wheel_index over equal-sized uint64 arrays -> (idx uint32, bucket_expiry uint64)");
  m.def("wheel_constants", &wheel_constants, py::arg("hz"));
  m.attr("TIMER_DEFERRABLE") = TIMER_DEFERRABLE;
  m.attr("TIMER_PINNED") = TIMER_PINNED;
  m.attr("TIMER_IRQSAFE") = TIMER_IRQSAFE;
  m.attr("MOD_TIMER_PENDING_ONLY") = MOD_TIMER_PENDING_ONLY;
  m.attr("MOD_TIMER_REDUCE") = MOD_TIMER_REDUCE;
  m.attr("MOD_TIMER_NOTPENDING") = MOD_TIMER_NOTPENDING;

  wheel.def(py::init<unsigned, jiffies_t>(), py::arg("hz"), py::arg("jiffies"))
      .def_property_readonly("hz", &StandaloneWheel::hz)
      .def_property("jiffies", &StandaloneWheel::jiffies, &StandaloneWheel::set_jiffies)
      .def_property_readonly("clk", [](const StandaloneWheel& w) { return w.base().clk(); })
      .def_property_readonly("next_expiry", [](const StandaloneWheel& w) { return w.base().next_expiry(); })
      .def_property_readonly("next_expiry_recalc",
                             [](const StandaloneWheel& w) { return w.base().next_expiry_recalc(); })
      .def_property_readonly("timers_pending", [](const StandaloneWheel& w) { return w.base().timers_pending(); })
      .def_property_readonly("pending_count", [](const StandaloneWheel& w) { return w.base().pending_count(); })
      .def_property_readonly("depth", [](const StandaloneWheel& w) { return w.base().depth(); })
      .def("new_timer", &StandaloneWheel::new_timer, py::arg("flags"))
      .def("mod_timer", &StandaloneWheel::mod_timer, py::arg("timer"), py::arg("expires"), py::arg("options"))
      .def("del_timer", &StandaloneWheel::del_timer, py::arg("timer"))
      .def("forward", [](StandaloneWheel& w, jiffies_t basej) { w.base().forward_timer_base(basej); },
           py::arg("basej"))
      .def("next_timer_interrupt",
           [](StandaloneWheel& w, jiffies_t basej) { return w.base().next_timer_interrupt(basej); },
           py::arg("basej"))
      .def("recalc_next_expiry", [](StandaloneWheel& w) { w.base().timer_recalc_next_expiry(); })
      .def("timer_info",
           [](const StandaloneWheel& w, TimerId t) {
             w.check(t);
             const TimerList& tl = w.pool()[t];
             return py::make_tuple(tl.pending(), tl.expires, tl.idx(), w.bucket_expiry(t), tl.flags);
           },
           py::arg("timer"))
      .def("run", &StandaloneWheel::run, py::arg("jiffies"), py::arg("one_collection"), py::arg("on_expire"))
      .def("events", &wheel_events)
      .def("clear_events", &StandaloneWheel::clear_events)
      .def("check_invariants", [](const StandaloneWheel& w) { return w.base().check_invariants(); });
}

}  // namespace timerlab::bindings
