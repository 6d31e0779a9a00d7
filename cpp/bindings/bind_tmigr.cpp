// bind_tmigr.cpp — the topology and the timer-migration hierarchy on their
// own (tl.hierarchy): groups, CPUs and the trace of how the hierarchy was
// built, as the kernel traces it at boot.
#include <pybind11/stl.h>

#include <memory>

#include "bindings.hpp"
#include "timerlab/event_log.hpp"

namespace timerlab::bindings {

namespace {

// Owns everything a built hierarchy refers to.
struct BuiltHierarchy {
  Topology topo;
  EventLog log;
  TmigrLogTracer tracer{log};
  Tmigr tmigr;
  BuiltHierarchy(const TopologySpec& spec, TmigrSetup setup) : topo(spec), tmigr(topo, setup, &tracer) {}
};

}  // namespace

TopologySpec topology_spec(unsigned nr_cpus, unsigned nr_nodes, std::vector<int> node_of_cpu, unsigned smt,
                           unsigned llc_size, std::vector<unsigned> bringup_order) {
  TopologySpec spec;
  spec.nr_cpus = nr_cpus;
  spec.nr_nodes = nr_nodes;
  spec.node_of_cpu = std::move(node_of_cpu);
  spec.smt = smt;
  spec.llc_size = llc_size;
  spec.bringup_order = std::move(bringup_order);
  return spec;
}

py::dict event_log_arrays(std::vector<EventRow>&& rows) {
  const std::size_t n = rows.size();
  std::vector<std::int64_t> ts(n);
  std::vector<std::int32_t> cpu(n);
  std::vector<std::uint16_t> event(n);
  std::vector<std::uint64_t> values(n * 9);
  for (std::size_t i = 0; i < n; ++i) {
    ts[i] = rows[i].ts_ns;
    cpu[i] = rows[i].cpu;
    event[i] = static_cast<std::uint16_t>(rows[i].event);
    std::copy(std::begin(rows[i].v), std::end(rows[i].v), values.begin() + static_cast<std::ptrdiff_t>(i * 9));
  }
  py::dict d;
  d["ts_ns"] = to_numpy(std::move(ts));
  d["cpu"] = to_numpy(std::move(cpu));
  d["event"] = to_numpy(std::move(event));
  d["values"] = to_numpy(std::move(values)).attr("reshape")(n, 9);
  return d;
}

py::list sim_event_schema_list() {
  static const char* kinds[] = {"u64", "i64", "ptr", "hex", "function", "timer_flags", "hrtimer_mode"};
  py::list out;
  for (const SimEventSpec& e : sim_event_schema()) {
    py::list slots;
    for (const SlotSpec& s : e.slots) {
      slots.append(py::make_tuple(std::string(s.column), kinds[static_cast<int>(s.kind)], s.slot));
    }
    out.append(py::make_tuple(std::string(e.name), slots));
  }
  return out;
}

void register_tmigr(py::module_& m) {
  py::class_<BuiltHierarchy, std::unique_ptr<BuiltHierarchy>> h(m, "Hierarchy");
  m.def("sim_event_schema", &sim_event_schema_list);
  h.def(py::init([](unsigned nr_cpus, unsigned nr_nodes, std::vector<int> node_of_cpu, unsigned smt, unsigned llc_size,
                    std::vector<unsigned> bringup_order, bool fixed) {
          return std::make_unique<BuiltHierarchy>(
              topology_spec(nr_cpus, nr_nodes, std::move(node_of_cpu), smt, llc_size, std::move(bringup_order)),
              fixed ? TmigrSetup::fixed : TmigrSetup::v6_12);
        }),
        py::arg("nr_cpus"), py::arg("nr_nodes"), py::arg("node_of_cpu"), py::arg("smt"), py::arg("llc_size"),
        py::arg("bringup_order"), py::arg("fixed"))
      .def_property_readonly("levels", [](const BuiltHierarchy& b) { return b.tmigr.hierarchy_levels(); })
      .def_property_readonly("crossnode_level", [](const BuiltHierarchy& b) { return b.tmigr.crossnode_level(); })
      .def_property_readonly("root", [](const BuiltHierarchy& b) { return b.tmigr.root(); })
      .def("groups",
           [](const BuiltHierarchy& b) {
             std::vector<std::int32_t> level, numa, parent, children, mask;
             for (const TmigrGroup& g : b.tmigr.groups()) {
               level.push_back(static_cast<std::int32_t>(g.level));
               numa.push_back(g.numa_node);
               parent.push_back(g.parent);
               children.push_back(static_cast<std::int32_t>(g.num_children));
               mask.push_back(g.groupmask);
             }
             py::dict d;
             d["level"] = to_numpy(std::move(level));
             d["numa"] = to_numpy(std::move(numa));
             d["parent"] = to_numpy(std::move(parent));
             d["num_children"] = to_numpy(std::move(children));
             d["groupmask"] = to_numpy(std::move(mask));
             return d;
           })
      .def("cpus",
           [](const BuiltHierarchy& b) {
             std::vector<std::int32_t> group, mask, node;
             for (unsigned c = 0; c < b.topo.nr_cpus(); ++c) {
               group.push_back(b.tmigr.cpu(c).tmgroup);
               mask.push_back(b.tmigr.cpu(c).groupmask);
               node.push_back(b.topo.node_of(c));
             }
             py::dict d;
             d["group"] = to_numpy(std::move(group));
             d["groupmask"] = to_numpy(std::move(mask));
             d["node"] = to_numpy(std::move(node));
             return d;
           })
      .def("boot_events", [](BuiltHierarchy& b) { return event_log_arrays(b.log.take()); })
      .def("check_invariants", [](const BuiltHierarchy& b) { return b.tmigr.check_invariants(); });
}

}  // namespace timerlab::bindings
