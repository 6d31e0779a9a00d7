// bind_ftrace.cpp — placeholder until the ftrace reader lands.
#include "bindings.hpp"

namespace timerlab::bindings {
void register_ftrace(py::module_&) {}
}  // namespace timerlab::bindings
