// Tests of the trace.dat reader (tracedat.hpp) on small v6 files written by
// tracedat_writer.hpp: the record kinds the real traces do not hold (time
// extends, absolute time stamps, padding, long records, lost counts), the
// merge of CPUs, the print fmt interpreter, and errors with their section.
// The real v6/v7 files are compared with trace-cmd in tests/test_tracedat.py.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "timerlab/tracedat.hpp"
#include "tracedat_writer.hpp"

using namespace timerlab;
using namespace timerlab::testing;

namespace {

struct Read {
  FtraceTable table;
  std::int64_t lost = 0, markers = 0;
  std::int32_t nr_cpus = 0;
  std::vector<std::string> payloads;
};

Read read(const std::string& file) {
  TraceDat dat(file, nullptr);
  FtraceParser p(true);
  dat.read("", p);
  p.finish();
  EXPECT_EQ(p.error_line(), 0) << p.error_reason();
  Read r;
  r.lost = p.lost_events();
  r.markers = p.loss_markers();
  r.nr_cpus = p.nr_cpus();
  r.table = p.take();
  std::size_t begin = 0;
  for (std::size_t end : r.table.payload_ends) {
    r.payloads.push_back(r.table.payload_blob.substr(begin, end - begin));
    begin = end;
  }
  return r;
}

std::string one_cpu(const std::vector<std::string>& pages) {
  std::string d;
  for (const std::string& p : pages) d += p;
  return v6_file({kTestEventFormat}, "", "42 worker\n", {d});
}

TEST(TraceDat, RecordKindsGiveTheKernelsTimestamps) {
  const std::string rec = test_record(42, 3, "abc", -5);
  const std::string page = Page(1000)
                               .event(10, rec)            // 1010
                               .extend(1ull << 30)        // + 2^30
                               .event(5, rec)             // 1015 + 2^30
                               .padding(12)               // no time
                               .long_event(1, rec)        // 1016 + 2^30
                               .absolute(5'000'000'000)   // the clock jumps
                               .event(2, rec)             // 5e9 + 2
                               .build();
  const Read r = read(one_cpu({page}));
  ASSERT_EQ(r.table.ts_ns.size(), 4u);
  EXPECT_EQ(r.table.ts_ns[0], 1010);
  EXPECT_EQ(r.table.ts_ns[1], 1015 + (1ll << 30));
  EXPECT_EQ(r.table.ts_ns[2], 1016 + (1ll << 30));
  EXPECT_EQ(r.table.ts_ns[3], 5'000'000'002);
  EXPECT_EQ(r.table.task_names[static_cast<std::size_t>(r.table.task[0])], "worker");
  EXPECT_EQ(r.table.pid[0], 42);
  // Not an event timerlab models: its payload, as the print fmt gives it.
  ASSERT_EQ(r.payloads.size(), 4u);
  EXPECT_EQ(r.payloads[0], "value=3 name=abc delta=-5 flags=A|B hex=0x1");
}

TEST(TraceDat, CpusMergeByTimeTiesToTheLowerCpu) {
  const std::string rec = test_record(0, 0, "x", 0);
  const std::string cpu0 = Page(100).event(0, rec).event(50, rec).build();    // 100, 150
  const std::string cpu1 = Page(100).event(0, rec).event(20, rec).build();    // 100, 120
  const Read r = read(v6_file({kTestEventFormat}, "", "", {cpu0, cpu1}));
  EXPECT_EQ(r.table.ts_ns, (std::vector<std::int64_t>{100, 100, 120, 150}));
  EXPECT_EQ(r.table.cpu, (std::vector<std::int32_t>{0, 1, 1, 0}));
  EXPECT_EQ(r.table.task_names[static_cast<std::size_t>(r.table.task[0])], "<idle>");
  EXPECT_EQ(r.nr_cpus, 2);
}

TEST(TraceDat, LostEventCountsAddUp) {
  const std::string rec = test_record(1, 0, "x", 0);
  const Read r = read(one_cpu({Page(1).event(0, rec).lost(7).build(), Page(9).event(0, rec).lost(5).build()}));
  EXPECT_EQ(r.lost, 12);
  EXPECT_EQ(r.markers, 2);
  EXPECT_EQ(r.table.ts_ns.size(), 2u);
}

TEST(TraceDat, LossesAreCountedWhereTraceCmdPrintsThem) {
  // trace-cmd report prints a page's loss before its first record: "[n EVENTS DROPPED]", or "[EVENTS
  // DROPPED]" when the page does not store the count; a page without records prints none.
  const std::string rec = test_record(1, 0, "x", 0);
  const Read r = read(one_cpu({Page(1).event(0, rec).missed().build(), Page(5).lost(9).build(),
                               Page(9).event(0, rec).lost(5).build()}));
  EXPECT_EQ(r.lost, 5);
  EXPECT_EQ(r.markers, 2);
  // Before each of the two records, on CPU 0; the first page's count is not stored.
  ASSERT_EQ(r.table.losses.size(), 2u);
  EXPECT_EQ(std::make_tuple(r.table.losses[0].row, r.table.losses[0].lost), std::make_tuple(0, -1));
  EXPECT_EQ(std::make_tuple(r.table.losses[1].row, r.table.losses[1].lost), std::make_tuple(1, 5));
}

TEST(TraceDat, StarWidthsAndStringSpecsPrintAsPrintf) {
  const std::string fmt =
      "name: t3\nID: 9\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
      "\tfield:char comm[8];\toffset:8;\tsize:8;\tsigned:0;\n"
      "\tfield:int n;\toffset:16;\tsize:4;\tsigned:1;\n"
      "print fmt: \"a=%.*s b=%-6s| c=%*d d=%5s|\", REC->n, REC->comm, REC->comm, REC->n, REC->n, REC->comm\n";
  std::string rec = common_fields(9, 0) + std::string("abcdefg\0", 8);
  put(rec, 3, 4);
  put(rec, 0, 4);
  const Read r = read(v6_file({fmt}, "", "", {Page(0).event(0, rec).build()}));
  ASSERT_EQ(r.payloads.size(), 1u);
  EXPECT_EQ(r.payloads[0], "a=abc b=abcdefg| c=  3 d=abcdefg|");
}

TEST(TraceDat, FlagsSymbolsAndTernariesPrintAsTraceCmd) {
  const std::string fmt =
      "name: t2\nID: 8\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
      "\tfield:void * fn;\toffset:8;\tsize:8;\tsigned:0;\n"
      "\tfield:unsigned int st;\toffset:16;\tsize:4;\tsigned:0;\n"
      "print fmt: \"fn=%ps at=%pS p=%p st=%s vec=%s cpu=%03d\", REC->fn, REC->fn, REC->fn, "
      "REC->st ? __print_flags(REC->st, \"|\", { 0x1, \"S\" }, { 0x2, \"D\" }) : \"R\", "
      "__print_symbolic(REC->st, { 1, \"ONE\" }), (int)(REC->st - 4)\n";
  std::string rec = common_fields(8, 9);
  put(rec, 0xffffffff81000010ull, 8);
  put(rec, 6, 4);
  put(rec, 0, 4);
  const Read r = read(v6_file({fmt}, "ffffffff81000000 T first\nffffffff81000100 t second [mod]\n", "",
                              {Page(0).event(0, rec).build()}));
  ASSERT_EQ(r.payloads.size(), 1u);
  EXPECT_EQ(r.payloads[0], "fn=first at=first+0x10 p=0xffffffff81000010 st=D|0x4 vec=0x6 cpu=002");
}

// What trace-cmd does where a format leaves C: enum constants the kernel
// did not resolve, casts to typedefs, a table's NULL end, array elements,
// constant strings by address, cpumasks, shifts of 64 or more.
TEST(TraceDat, UnresolvedNamesCastsArraysAndStringsPrintAsTraceCmd) {
  const std::string fmt =
      "name: t4\nID: 10\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
      "\tfield:unsigned int mode;\toffset:8;\tsize:4;\tsigned:0;\n"
      "\tfield:unsigned int vec;\toffset:12;\tsize:4;\tsigned:0;\n"
      "\tfield:unsigned long args[2];\toffset:16;\tsize:16;\tsigned:0;\n"
      "\tfield:const char * s;\toffset:32;\tsize:8;\tsigned:0;\n"
      "\tfield:const char * t;\toffset:40;\tsize:8;\tsigned:0;\n"
      "\tfield:__data_loc unsigned long[] mask;\toffset:48;\tsize:4;\tsigned:0;\n"
      "print fmt: \"m=%s z=%s v=%s f=%s x=%lld a=%lx,%lx s=%s t=%s c=%s h=%u\", "
      "__print_symbolic(REC->mode, { MODE_ABS, \"ABS\" }, { 1, \"REL\" }), "
      "__print_symbolic(REC->vec, { MODE_ABS, \"ABS\" }), "
      "__print_symbolic(REC->vec, { TIMER_SOFTIRQ, \"TIMER\" }), "
      "__print_flags(REC->vec, \"|\", { 2, \"B\" }, { FLAG_A, \"A\" }, { 0, ((void *)0) }), "
      "((loff_t)REC->mode) << 12 | UNKNOWN, REC->args[0], REC->args[1], REC->s, REC->t, __get_cpumask(mask), "
      "1U << (REC->vec + 63)\n";
  std::string rec = common_fields(10, 0);
  put(rec, 5, 4);                    // mode
  put(rec, 1, 4);                    // vec
  put(rec, 0x10, 8);                 // args[0]
  put(rec, 0xffffffffffffffff, 8);   // args[1]
  put(rec, 0xffffffff82000040, 8);   // s: in the printk formats
  put(rec, 0xffffffff82000080, 8);   // t: not
  put(rec, (8u << 16) | 52u, 4);     // mask: 8 bytes at 52
  put(rec, 0x30000000b, 8);          // CPUs 0-1, 3, 32-33
  std::string rec2 = rec;
  rec2[12] = 2;  // vec: B matches, and the nameless A is printed after it, as trace-cmd does
  rec2.replace(32, 8, std::string("\x50\x00\x00\x82\xff\xff\xff\xff", 8));  // s: the second string
  const std::string printk = "0xffffffff82000040 : \"Start context switch\"\n"
                             "0xffffffff82000050 : \"with a newline\\n\"\n";
  const Read r = read(v6_file({fmt}, "", "", {Page(0).event(0, rec).event(1, rec2).build()}, printk));
  ASSERT_EQ(r.payloads.size(), 2u);
  EXPECT_EQ(r.payloads[0],
            "m=0x5 z=0x1 v=TIMER f=0x1 x=20480 a=10,ffffffffffffffff s=Start context switch t=ffffffff82000080 "
            "c=0-1,3,32-33 h=1");
  EXPECT_EQ(r.payloads[1],
            "m=0x5 z=0x2 v=0x2 f=BA x=20480 a=10,ffffffffffffffff s=with a newline t=ffffffff82000080 "
            "c=0-1,3,32-33 h=2");
}

TEST(TraceDat, V7BuffersAreSelectedByName) {
  const std::string rec = test_record(42, 1, "top", 0);
  const std::string inst = test_record(42, 2, "inst", 0);
  const std::string file =
      v7_file({kTestEventFormat}, "", "42 worker\n",
              {{"", {Page(10).event(0, rec).build(), Page(11).event(0, rec).build()}},
               {"inst", {Page(20).event(0, inst).event(1, inst).build()}}});
  TraceDat dat(file, nullptr);
  EXPECT_EQ(dat.version(), 7);
  ASSERT_EQ(dat.buffers().size(), 2u);
  EXPECT_EQ(dat.buffers()[1].name, "inst");
  FtraceParser top, other;
  EXPECT_EQ(dat.read("", top), 2);
  EXPECT_EQ(dat.read("inst", other), 2);
  const FtraceTable a = top.take(), b = other.take();
  EXPECT_EQ(a.ts_ns, (std::vector<std::int64_t>{10, 11}));
  EXPECT_EQ(a.cpu, (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(b.ts_ns, (std::vector<std::int64_t>{20, 21}));
  EXPECT_NE(b.payload_blob.find("name=inst"), std::string::npos) << b.payload_blob;
  EXPECT_THROW(dat.read("nope", top), std::invalid_argument);
}

// "section: message" of the error reading `file` gives, or "" if none.
std::string error_of(const std::string& file) {
  try {
    TraceDat dat(file, nullptr);  // views `file`, which outlives it
    FtraceParser p;
    dat.read("", p);
  } catch (const TraceDatError& e) {
    return e.section() + ": " + e.what();
  }
  return "";
}

TEST(TraceDat, DamageNamesTheSectionAndOffset) {
  const std::string rec = test_record(1, 0, "x", 0);
  const std::string file = one_cpu({Page(1).event(0, rec).build()});
  const std::string cut = error_of(file.substr(0, file.size() - 100));
  EXPECT_EQ(cut.rfind("CPU 0 data: ", 0), 0u) << cut;
  EXPECT_NE(cut.find("truncated"), std::string::npos) << cut;
  std::string bad = rec;
  bad[0] = 99;  // an event ID no format defines
  const std::string unknown = error_of(one_cpu({Page(1).event(0, bad).build()}));
  EXPECT_EQ(unknown.rfind("CPU 0 data: a record of event ID 99", 0), 0u) << unknown;
  // Every cut of the file is an error, never fewer rows.
  for (std::size_t at = 10; at < file.size(); at += 97) EXPECT_NE(error_of(file.substr(0, at)), "") << at;
}

}  // namespace
