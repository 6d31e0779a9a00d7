// bindings.hpp — the register_<area> functions of the _core module and the
// helpers they share.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <utility>
#include <vector>

namespace timerlab::bindings {

namespace py = pybind11;

void register_wheel(py::module_& m);
void register_ftrace(py::module_& m);
void register_tmigr(py::module_& m);
void register_engine(py::module_& m);
void register_tracedat(py::module_& m);

// A NumPy array that takes ownership of `v`'s buffer without copying: the
// array's base is a capsule that deletes the vector.
template <class T, class A>
py::array_t<T> to_numpy(std::vector<T, A>&& v) {
  auto* owner = new std::vector<T, A>(std::move(v));
  py::capsule base(owner, [](void* p) { delete static_cast<std::vector<T, A>*>(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(owner->size())}, {sizeof(T)}, owner->data(), base);
}

}  // namespace timerlab::bindings
