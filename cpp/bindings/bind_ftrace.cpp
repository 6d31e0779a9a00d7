// bind_ftrace.cpp — FtraceParser (fed chunk by chunk, without the GIL) and
// the event schema. timerlab/trace/read.py builds the DataFrame from the columns
// take() hands over; every numeric column crosses without a copy.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "timerlab/ftrace.hpp"

namespace timerlab::bindings {

namespace {

// Task names and payloads are bytes from the kernel. surrogateescape keeps
// any byte sequence and keeps distinct byte strings distinct, which the
// categories of a Categorical must be.
py::str decode(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<py::ssize_t>(s.size()), "surrogateescape");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

// Error messages quote the text they complain about, whatever its bytes.
py::str message(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<py::ssize_t>(s.size()), "backslashreplace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

py::list categories(const std::vector<std::string>& names) {
  py::list out;
  for (const std::string& s : names) out.append(decode(s));
  return out;
}

py::list categories(const Interner& in) {
  py::list out;
  for (std::size_t i = 0; i < in.size(); ++i) out.append(decode(in[i]));
  return out;
}

py::dict take(FtraceParser& p) {
  FtraceTable t;
  {
    py::gil_scoped_release nogil;
    t = p.take();
  }
  py::dict d;
  d["ts_ns"] = to_numpy(std::move(t.ts_ns));
  d["cpu"] = to_numpy(std::move(t.cpu));
  d["pid"] = to_numpy(std::move(t.pid));
  d["line"] = to_numpy(std::move(t.line));
  d["task"] = py::make_tuple(to_numpy(std::move(t.task)), categories(t.task_names));
  d["event"] = py::make_tuple(to_numpy(std::move(t.event)), categories(t.event_names));
  // (name, storage, values, missing or None, categories or None)
  py::list fields;
  for (FtraceColumn& c : t.fields) {
    switch (c.storage) {
      case ColumnStorage::Int64:
        fields.append(py::make_tuple(c.name, to_string(c.storage), to_numpy(std::move(c.i64)),
                                     to_numpy(std::move(c.missing)), py::none()));
        break;
      case ColumnStorage::UInt64:
        fields.append(py::make_tuple(c.name, to_string(c.storage), to_numpy(std::move(c.u64)),
                                     to_numpy(std::move(c.missing)), py::none()));
        break;
      case ColumnStorage::Category:
        fields.append(py::make_tuple(c.name, to_string(c.storage), to_numpy(std::move(c.codes)), py::none(),
                                     categories(c.strings)));
        break;
    }
  }
  d["fields"] = fields;
  py::list texts;
  std::size_t begin = 0;
  for (std::size_t end : t.payload_ends) {
    texts.append(decode(std::string_view(t.payload_blob).substr(begin, end - begin)));
    begin = end;
  }
  d["payload"] = py::make_tuple(to_numpy(std::move(t.payload_rows)), texts);
  // (row, cpu, lost) of each loss of the ring buffer; lost -1: not said.
  std::vector<std::int64_t> rows, lost;
  std::vector<std::int32_t> cpus;
  for (const LossMark& m : t.losses) {
    rows.push_back(m.row);
    cpus.push_back(m.cpu);
    lost.push_back(m.lost);
  }
  d["losses"] = py::make_tuple(to_numpy(std::move(rows)), to_numpy(std::move(cpus)), to_numpy(std::move(lost)));
  return d;
}

py::dict schema() {
  py::dict d;
  for (const EventSpec& e : ftrace_schema()) {
    py::list fields;
    for (const FieldSpec& f : e.fields) {
      fields.append(py::make_tuple(std::string(f.key), std::string(f.column), to_string(f.kind),
                                   f.presence == Presence::Required));
    }
    d[py::str(std::string(e.name))] = fields;
  }
  return d;
}

}  // namespace

void register_ftrace(py::module_& m) {
  py::class_<FtraceParser> parser(m, "FtraceParser",
                                  "Incremental parser of ftrace text; feed() bytes, finish(), take() columns");

  m.def("ftrace_schema", &schema,
        "event name -> [(payload key, column, kind, required)]: the payload fields the reader parses");

  parser.def(py::init<bool, std::size_t>(), py::arg("strict") = true, py::arg("max_examples") = 5)
      .def(
          "feed",
          [](FtraceParser& p, const py::bytes& chunk) {
            char* data = nullptr;
            py::ssize_t size = 0;
            if (PyBytes_AsStringAndSize(chunk.ptr(), &data, &size) != 0) throw py::error_already_set();
            // The caller holds `chunk`, so its buffer outlives the call.
            py::gil_scoped_release nogil;
            p.feed(std::string_view(data, static_cast<std::size_t>(size)));
          },
          py::arg("chunk"), "parse the complete lines of a chunk of text (releases the GIL)")
      .def("finish", &FtraceParser::finish, "end of text: parse a last line without newline")
      .def("take", &take, "move the columns out as a dict of NumPy arrays")
      .def_property_readonly("error_line", &FtraceParser::error_line)
      .def_property_readonly("error_reason", [](const FtraceParser& p) { return message(p.error_reason()); })
      .def_property_readonly("skipped_lines", &FtraceParser::skipped_lines)
      .def_property_readonly("skipped_examples",
                             [](const FtraceParser& p) {
                               py::list out;
                               for (const std::string& s : p.skipped_examples()) out.append(message(s));
                               return out;
                             })
      .def_property_readonly("lines", &FtraceParser::lines)
      .def_property_readonly("rows", &FtraceParser::rows)
      .def_property_readonly("nr_cpus", &FtraceParser::nr_cpus)
      .def_property_readonly("trace_cmd_header", &FtraceParser::trace_cmd_header)
      .def_property_readonly("lost_events", &FtraceParser::lost_events)
      .def_property_readonly("loss_markers", &FtraceParser::loss_markers);
}

}  // namespace timerlab::bindings
