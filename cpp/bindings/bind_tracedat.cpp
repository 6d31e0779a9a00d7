// bind_tracedat.cpp — TraceDat: a trace.dat's metadata, and its records
// decoded into an FtraceParser (bind_ftrace.cpp), whose take() gives the
// columns. The file's bytes are any buffer (an mmap, bytes); decompression
// calls back into Python with the GIL held.
#include <functional>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "timerlab/tracedat.hpp"

namespace timerlab::bindings {

namespace {

// Names from the file (buffers, clocks, options) are bytes: surrogateescape
// keeps any of them; messages quote damaged bytes: backslashreplace.
py::str text(std::string_view s, const char* errors = "surrogateescape") {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<py::ssize_t>(s.size()), errors);
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

// Holds the buffer the TraceDat views for as long as the TraceDat lives.
struct PyTraceDat {
  py::buffer_info info;
  py::object owner;
  std::unique_ptr<TraceDat> dat;
};

}  // namespace

void register_tracedat(py::module_& m) {
  static py::exception<TraceDatError> error(m, "TraceDatError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TraceDatError& e) {
      // The instance carries the section and the offset for the message
      // Python builds (it adds the file name).
      py::object exc = py::reinterpret_borrow<py::object>(error.ptr())(text(e.what(), "backslashreplace"));
      exc.attr("section") = text(e.section(), "backslashreplace");
      exc.attr("offset") = e.offset();
      PyErr_SetObject(error.ptr(), exc.ptr());
    }
  });

  py::class_<PyTraceDat>(m, "TraceDat", "The metadata of a trace.dat (v6, v7) and a decoder of its buffers")
      .def(py::init([](py::buffer data, py::object decompress) {
             auto t = std::make_unique<PyTraceDat>();
             t->info = data.request();
             t->owner = data;
             Decompress d;
             if (!decompress.is_none()) {
               d = [decompress](std::string_view in, std::uint64_t size) {
                 py::gil_scoped_acquire gil;
                 // A Python error becomes a C++ one here, with the GIL held:
                 // the reader turns it into a TraceDatError with its offset.
                 try {
                   py::bytes out = decompress(
                       py::memoryview::from_memory(in.data(), static_cast<py::ssize_t>(in.size())), size);
                   return std::string(out);
                 } catch (py::error_already_set& e) {
                   throw std::runtime_error(e.what());
                 }
               };
             }
             const std::string_view file(static_cast<const char*>(t->info.ptr),
                                         static_cast<std::size_t>(t->info.size * t->info.itemsize));
             {
               py::gil_scoped_release nogil;
               t->dat = std::make_unique<TraceDat>(file, std::move(d));
             }
             return t;
           }),
           py::arg("data"), py::arg("decompress") = py::none(),
           "parse the metadata of the file's bytes; decompress(bytes, size) -> bytes for compressed sections")
      .def_property_readonly("version", [](const PyTraceDat& t) { return t.dat->version(); })
      .def_property_readonly("big_endian", [](const PyTraceDat& t) { return t.dat->big_endian(); })
      .def_property_readonly("long_size", [](const PyTraceDat& t) { return t.dat->long_size(); })
      .def_property_readonly("page_size", [](const PyTraceDat& t) { return t.dat->page_size(); })
      .def_property_readonly("compression", [](const PyTraceDat& t) { return text(t.dat->compression()); })
      .def_property_readonly("nr_cpus", [](const PyTraceDat& t) { return t.dat->nr_cpus(); })
      .def_property_readonly("options",
                             [](const PyTraceDat& t) {
                               py::dict out;
                               for (const auto& [k, v] : t.dat->options()) out[text(k)] = text(v);
                               return out;
                             })
      .def_property_readonly("buffers",
                             [](const PyTraceDat& t) {
                               py::list out;
                               for (const DatBuffer& b : t.dat->buffers()) {
                                 out.append(py::make_tuple(text(b.name), text(b.clock), b.cpus.size()));
                               }
                               return out;
                             })
      .def_property_readonly("events",
                             [](PyTraceDat& t) {
                               py::dict out;
                               for (const EventFormat& e : t.dat->events()) {
                                 out[text(e.system + ":" + e.name)] = text(e.print ? "" : e.print_error);
                               }
                               return out;
                             })
      .def(
          "read",
          [](PyTraceDat& t, const py::str& buffer, FtraceParser& parser, bool direct, const py::object& each,
             std::int64_t rows) {
            PyObject* b = PyUnicode_AsEncodedString(buffer.ptr(), "utf-8", "surrogateescape");
            if (!b) throw py::error_already_set();
            const std::string name = py::reinterpret_steal<py::bytes>(b);
            std::function<void()> call;
            if (!each.is_none()) {
              call = [&each] {
                py::gil_scoped_acquire gil;
                each();
              };
            }
            py::gil_scoped_release nogil;
            return t.dat->read(name, parser, direct, call, rows);
          },
          py::arg("buffer"), py::arg("parser"), py::arg("direct") = true, py::arg("each") = py::none(),
          py::arg("rows") = 0,
          "decode the records of a buffer (\"\" the top one) into an FtraceParser (releases the GIL); "
          "direct=False prints and parses every record (same rows, slower); each() is called whenever "
          "the parser holds `rows` rows or more, and may take() them");
}

}  // namespace timerlab::bindings
