// module.cpp — timerlab._core: the private binding of the C++ core.
// One register_<area> function per binding file; the public API is the pure
// Python package timerlab, which validates arguments before calling in here.
#include <pybind11/pybind11.h>

#include "bindings.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "timerlab's C++ simulation core (private; use the timerlab package)";
  timerlab::bindings::register_wheel(m);
  timerlab::bindings::register_ftrace(m);
  timerlab::bindings::register_tmigr(m);
  timerlab::bindings::register_engine(m);
  timerlab::bindings::register_tracedat(m);
}
