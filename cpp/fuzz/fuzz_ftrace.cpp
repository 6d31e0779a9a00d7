// fuzz_ftrace.cpp — fuzz target of the ftrace text reader (ftrace.hpp), in
// libFuzzer's form: any bytes, fed in chunks of sizes the bytes choose, strict
// and lenient. Built with the standalone driver (standalone_driver.cpp) into
// the ASan + UBSan test build and run by ctest for a bounded number of inputs,
// or with clang's -fsanitize=fuzzer for coverage-guided runs (fuzz/README.md).
//
// Checks, beyond "no crash, no sanitizer report": every column has one entry
// per row; every line is a row, a counted skip or a line the parser keeps no
// row for; a strict parse stops at a line that the lenient parse skipped,
// with the same rows before it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string_view>

#include "timerlab/ftrace.hpp"

using namespace timerlab;

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_ftrace: invariant violated: %s\n", what);
    std::abort();
  }
}

FtraceTable parse(std::string_view text, bool strict, std::size_t chunk, FtraceParser& p) {
  for (std::size_t i = 0; i < text.size() && !p.error_line(); i += chunk) p.feed(text.substr(i, chunk));
  p.finish();
  return p.take();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte picks the chunk size: boundaries anywhere.
  const std::size_t chunk = 1 + data[0] % 97;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  FtraceParser lenient_p(false), strict_p(true);
  const FtraceTable lenient = parse(text, false, chunk, lenient_p);
  const FtraceTable strict = parse(text, true, text.size() + 1, strict_p);
  for (const FtraceTable* t : {&lenient, &strict}) {
    const std::size_t n = t->ts_ns.size();
    check(t->cpu.size() == n && t->pid.size() == n && t->line.size() == n && t->task.size() == n &&
              t->event.size() == n,
          "line columns differ in length");
    for (const FtraceColumn& c : t->fields) check(c.size() == n, "a payload column differs in length");
    for (std::size_t i = 1; i < n; ++i) check(t->line[i] > t->line[i - 1], "line numbers not increasing");
  }
  check(static_cast<std::int64_t>(lenient.ts_ns.size()) + lenient_p.skipped_lines() <= lenient_p.lines(),
        "more rows and skips than lines");
  if (strict_p.error_line()) {
    check(lenient_p.skipped_lines() >= 1, "strict failed where lenient skipped nothing");
    std::size_t before = 0;
    while (before < lenient.line.size() && lenient.line[before] < strict_p.error_line()) ++before;
    check(strict.ts_ns.size() == before, "strict rows differ from lenient rows before the error");
  } else {
    check(lenient_p.skipped_lines() == 0 && strict.ts_ns == lenient.ts_ns, "strict and lenient disagree");
  }
  return 0;
}
