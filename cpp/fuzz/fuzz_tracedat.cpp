// fuzz_tracedat.cpp — fuzz target of the trace.dat reader (tracedat.hpp), in
// libFuzzer's form. The input damages a small valid trace.dat (written by
// cpp/tests/tracedat_writer.hpp: a format with every kind of print fmt
// argument, kallsyms, cmdlines, two CPUs with time extends, absolute stamps,
// padding, long records and a lost count): its bytes are (offset, xor)
// pairs, or, when the first byte is odd, the raw data of CPU 1's pages.
//
// Checks, beyond "no crash, no sanitizer report": the reader either throws
// TraceDatError, or every column has one entry per row.
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
  const std::string cpu0 = Page(1000).event(3, rec).extend(1ull << 33).padding(8).long_event(2, rec).build() +
                           Page(2'000'000'000).absolute(3'000'000'000).event(1, rec).lost(4).build();
  file = v6_file({kTestEventFormat}, "ffffffff81000000 T f\n", "42 task\n", {cpu0, cpu1});
  return file;
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
  try {
    TraceDat dat(file, nullptr);
    FtraceParser p(false);
    dat.read("", p);
    p.finish();
    const FtraceTable t = p.take();
    const std::size_t n = t.ts_ns.size();
    bool ok = t.cpu.size() == n && t.pid.size() == n && t.task.size() == n && t.event.size() == n;
    for (const FtraceColumn& c : t.fields) ok = ok && c.size() == n;
    if (!ok) {
      std::fprintf(stderr, "fuzz_tracedat: columns differ in length\n");
      std::abort();
    }
  } catch (const TraceDatError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
