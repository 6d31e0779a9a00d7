// fuzz_tracedat.cpp — fuzz target of the trace.dat reader (tracedat.hpp), in
// libFuzzer's form. The input damages a small valid trace.dat (written by
// cpp/tests/tracedat_writer.hpp: a format with every kind of print fmt
// argument, kallsyms, cmdlines, two CPUs with time extends, absolute stamps,
// padding, long records and a lost count): its bytes are (offset, xor)
// pairs, or, when the first byte is odd, the raw data of CPU 1's pages.
//
// Checks, beyond "no crash, no sanitizer report": the reader either throws
// TraceDatError, or every column has one entry per row; and decoding the
// schema's events directly gives what printing and parsing them gives (the
// same table, or the same error).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../tests/tracedat_writer.hpp"
#include "timerlab/tracedat.hpp"

using namespace timerlab;
using namespace timerlab::testing;

namespace {

const std::string& base_file(const std::string& cpu1) {
  static std::string file;
  const std::string rec = test_record(42, 7, "name", -3);
  // Events of the schema too: their records are decoded directly.
  const std::string cpu0 = Page(1000).event(3, rec).extend(1ull << 33).padding(8).long_event(2, rec).build() +
                           Page(2'000'000'000).absolute(3'000'000'000).event(1, rec).lost(4).build() +
                           Page(4'000'000'000)
                               .event(1, sched_switch_record("task", 120, 1, "next"))
                               .event(1, timer_start_record(1, 0xffffffff81000010ull, 100, 90, 0x40001))
                               .event(1, cpu_idle_record(1, 0))
                               .build();
  file = v6_file({kTestEventFormat, kSchedSwitchFormat, kTimerStartFormat, kCpuIdleFormat}, "ffffffff81000000 T f\n",
                 "42 task\n", {cpu0, cpu1});
  return file;
}

// A read's result: the table, or the error (rows = -1).
struct Outcome {
  std::int64_t rows = -1;
  std::int64_t skipped = 0;
  std::string error;
  FtraceTable table;
};

Outcome read(const std::string& file, bool direct) {
  Outcome o;
  try {
    TraceDat dat(file, nullptr);
    FtraceParser p(false);
    dat.read("", p, direct);
    p.finish();
    o.skipped = p.skipped_lines();
    o.table = p.take();
    o.rows = static_cast<std::int64_t>(o.table.ts_ns.size());
  } catch (const TraceDatError& e) {
    o.error = e.what();
  } catch (const std::invalid_argument& e) {
    o.error = e.what();
  }
  return o;
}

// The direct decoder must give what printing and parsing gives, damage or not.
bool same(const Outcome& a, const Outcome& b) {
  if (a.rows != b.rows || a.skipped != b.skipped || a.error != b.error) return false;
  const FtraceTable& x = a.table;
  const FtraceTable& y = b.table;
  if (x.ts_ns != y.ts_ns || x.task != y.task || x.event != y.event || x.event_names != y.event_names ||
      x.payload_blob != y.payload_blob || x.fields.size() != y.fields.size()) {
    return false;
  }
  for (std::size_t i = 0; i < x.fields.size(); ++i) {
    const FtraceColumn& c = x.fields[i];
    const FtraceColumn& d = y.fields[i];
    if (c.name != d.name || c.i64 != d.i64 || c.u64 != d.u64 || c.missing != d.missing || c.codes != d.codes ||
        c.strings.size() != d.strings.size()) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string file;
  if (data[0] & 1) {
    std::string pages(reinterpret_cast<const char*>(data) + 1, size - 1);
    pages.resize((pages.size() + 4095) / 4096 * 4096, '\0');
    file = base_file(pages);
  } else {
    const std::string rec = test_record(1, 0, "x", 0);
    file = base_file(Page(1500).event(0, rec).build());
    for (std::size_t i = 1; i + 2 < size; i += 3) {
      const std::size_t at = (static_cast<std::size_t>(data[i]) << 8 | data[i + 1]) * 7 % file.size();
      file[at] = static_cast<char>(file[at] ^ data[i + 2]);
    }
  }
  const Outcome direct = read(file, true);
  const Outcome printed = read(file, false);
  if (direct.rows >= 0) {
    const FtraceTable& t = direct.table;
    const auto n = static_cast<std::size_t>(direct.rows);
    bool ok = t.cpu.size() == n && t.pid.size() == n && t.task.size() == n && t.event.size() == n;
    for (const FtraceColumn& c : t.fields) ok = ok && c.size() == n;
    if (!ok) {
      std::fprintf(stderr, "fuzz_tracedat: columns differ in length\n");
      std::abort();
    }
  }
  if (!same(direct, printed)) {
    std::fprintf(stderr, "fuzz_tracedat: decoding directly differs from printing and parsing\n");
    std::abort();
  }
  return 0;
}
