// tracedat.cpp — the trace.dat container: header, sections, options,
// buffers (see tracedat.hpp). The pages are tracedat_pages.cpp.
#include "timerlab/tracedat.hpp"

#include <cstring>

#include "tracedat_cursor.hpp"

namespace timerlab {

namespace {

constexpr std::string_view kMagic("\x17\x08\x44tracing", 10);

// Option IDs of the man pages.
enum : std::uint16_t {
  kOptDone = 0, kOptDate = 1, kOptCpuStat = 2, kOptBuffer = 3, kOptTraceClock = 4, kOptUname = 5,
  kOptOffset = 7, kOptCpuCount = 8, kOptVersion = 9, kOptHeaderInfo = 16, kOptFtraceEvents = 17,
  kOptEventFormats = 18, kOptKallsyms = 19, kOptPrintk = 20, kOptCmdlines = 21, kOptBufferText = 22,
};

// A section's text may stop at a NUL (trace-cmd writes some with one).
std::string_view until_nul(std::string_view s) {
  const std::size_t z = s.find('\0');
  return z == std::string_view::npos ? s : s.substr(0, z);
}

}  // namespace

TraceDat::TraceDat(std::string_view file, Decompress decompress) : file_(file), decompress_(std::move(decompress)) {
  Cursor c(file, 0, "file header", false);
  if (file.substr(0, kMagic.size()) != kMagic) c.fail("not a trace.dat: no \\x17\\x08\\x44tracing magic");
  c.skip(kMagic.size());
  const std::string_view ver = c.cstr(16);
  if (ver == "6") version_ = 6;
  else if (ver == "7") version_ = 7;
  else c.fail("file format version '" + std::string(ver) + "' (6 and 7 are read)");
  const std::uint8_t endian = c.u8();
  if (endian > 1) c.fail("endianness flag " + std::to_string(endian) + " (0 or 1)");
  layout_.big_endian = endian == 1;
  c.set_big_endian(layout_.big_endian);
  layout_.long_size = c.u8();
  if (layout_.long_size != 4 && layout_.long_size != 8) c.fail("long size " + std::to_string(layout_.long_size));
  page_size_ = c.u32();
  if (page_size_ < 64 || page_size_ > (1u << 24)) c.fail("page size " + std::to_string(page_size_));
  if (version_ == 6) read_v6(c);
  else read_v7(c);
  if (buffers_.empty()) c.fail("no flyrecord buffer in the file");
}

void TraceDat::header_info(Cursor& c) {
  if (c.bytes(12) != std::string_view("header_page\0", 12)) c.fail("no header_page");
  const std::uint64_t n = c.u64();
  const std::string_view page = c.bytes(n);
  // The page header's fields as the kernel describes them (commit is a
  // kernel long, so 4 bytes on 32-bit kernels).
  auto field = [&](std::string_view name, std::uint32_t& off, std::uint32_t* size) {
    const std::string key = " " + std::string(name) + ";";
    const std::size_t at = page.find(key);
    if (at == std::string_view::npos) return;
    std::size_t eol = page.find('\n', at);
    if (eol == std::string_view::npos) eol = page.size();
    const std::string line(page.substr(at, eol - at));
    std::uint32_t o = 0, s = 0;
    if (std::sscanf(line.c_str() + key.size(), " offset:%u; size:%u;", &o, &s) == 2) {
      off = o;
      if (size) *size = s;
    }
  };
  field("commit", commit_offset_, &commit_size_);
  field("data", data_offset_, nullptr);
  if ((commit_size_ != 4 && commit_size_ != 8) || commit_offset_ + commit_size_ > data_offset_ ||
      data_offset_ >= page_size_) {
    c.fail("header_page describes commit at " + std::to_string(commit_offset_) + " size " +
           std::to_string(commit_size_) + ", data at " + std::to_string(data_offset_));
  }
  if (c.bytes(13) != std::string_view("header_event\0", 13)) c.fail("no header_event");
  c.skip(c.u64());
}

void TraceDat::formats(Cursor& c, bool ftrace) {
  std::uint32_t systems = 1;
  if (!ftrace) systems = c.u32();
  for (std::uint32_t s = 0; s < systems; ++s) {
    std::string system = "ftrace";
    if (!ftrace) system = std::string(c.cstr(4096));
    const std::uint32_t count = c.u32();
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint64_t size = c.u64();
      const std::uint64_t at = c.offset();
      const std::string_view text = c.bytes(size);
      // Only the ID now; the rest when a record needs it.
      const std::size_t id_at = text.find("\nID:");
      unsigned long id = 0;
      char* end = nullptr;
      const std::string id_text(id_at == std::string_view::npos ? std::string_view() : text.substr(id_at + 4, 8));
      if (id_at != std::string_view::npos) id = std::strtoul(id_text.c_str(), &end, 10);
      if (id_at == std::string_view::npos || end == id_text.c_str() || id > 0xffff) {
        c.fail_at(at, "format of " + system + " event " + std::to_string(i) + " without a valid ID: line");
      }
      if (id >= event_index_.size()) event_index_.resize(id + 1, -1);
      if (event_index_[id] >= 0) c.fail_at(at, "event ID " + std::to_string(id) + " defined twice");
      event_index_[id] = static_cast<int>(raw_formats_.size());
      raw_formats_.push_back({text, system, at, ftrace ? "ftrace event formats" : "event formats"});
    }
  }
}

void TraceDat::kallsyms(Cursor& c) { symbols_.parse(c.bytes(c.u32())); }

void TraceDat::cmdlines(Cursor& c, std::uint64_t size) {
  const std::string_view text = until_nul(c.bytes(size));
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    const std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    std::int32_t pid = 0;
    const std::string pid_text(line.substr(0, sp));
    char* end = nullptr;
    const long v = std::strtol(pid_text.c_str(), &end, 10);
    if (pid_text.empty() || *end != '\0' || v < 0 || v > INT32_MAX) continue;
    pid = static_cast<std::int32_t>(v);
    comms_.emplace(pid, std::string(line.substr(sp + 1)));
  }
}

void TraceDat::register_comm(std::int32_t pid, std::string_view comm) {
  // Never overrides, as trace-cmd's registration; looked up first so that
  // the usual case (known) builds no string.
  if (comms_.find(pid) == comms_.end()) comms_.emplace(pid, std::string(comm));
}

// One option; the cursor is at its data, `size` bytes.
void TraceDat::option(std::uint16_t id, Cursor& c, std::uint32_t size, bool v7) {
  const std::uint64_t at = c.offset();
  Cursor o = c.sub(size);
  switch (id) {
    case kOptTraceClock:
      options_["trace_clock"] = std::string(until_nul(o.rest()));
      break;
    case kOptVersion:
      options_["version"] = std::string(until_nul(o.rest()));
      break;
    case kOptDate:
      options_["date"] = std::string(until_nul(o.rest()));
      break;
    case kOptOffset: {
      const std::string s(until_nul(o.rest()));
      char* end = nullptr;
      ts_offset_ = std::strtoll(s.c_str(), &end, 0);
      if (s.empty() || *end != '\0') o.fail_at(at, "OFFSET option '" + s + "' is not a number");
      options_["offset"] = s;
      break;
    }
    case kOptCpuCount: {
      const std::uint32_t n = o.u32();
      if (n > 65536) o.fail_at(at, "CPUCOUNT " + std::to_string(n));
      nr_cpus_ = static_cast<std::int32_t>(n);
      break;
    }
    case kOptBuffer:
      if (v7) {
        DatBuffer b;
        const std::uint64_t section_at = o.u64();
        b.name = std::string(o.cstr(4096));
        b.clock = std::string(o.cstr(4096));
        b.page_size = o.u32();
        if (b.page_size < 64 || b.page_size > (1u << 24)) o.fail_at(at, "buffer page size " + std::to_string(b.page_size));
        const std::uint32_t ncpu = o.u32();
        if (ncpu > 65536) o.fail_at(at, "buffer with " + std::to_string(ncpu) + " CPUs");
        for (std::uint32_t i = 0; i < ncpu; ++i) {
          DatCpu cpu;
          const std::uint32_t id32 = o.u32();
          if (id32 > 65535) o.fail_at(at, "CPU id " + std::to_string(id32));
          cpu.cpu = static_cast<std::int32_t>(id32);
          cpu.offset = o.u64();
          cpu.size = o.u64();
          b.cpus.push_back(cpu);
        }
        bool compressed = false;
        std::uint64_t data_at = 0;
        section(section_at, kOptBuffer, "buffer flyrecord", compressed, data_at);
        b.compressed = compressed;
        b.end = last_section_end_;
        buffers_.push_back(std::move(b));
      } else {
        v6_buffer_offsets_.push_back(o.u64());
        DatBuffer b;
        b.name = std::string(o.cstr(4096));
        b.page_size = page_size_;
        buffers_.push_back(std::move(b));
      }
      break;
    case kOptHeaderInfo:
    case kOptFtraceEvents:
    case kOptEventFormats:
    case kOptKallsyms:
    case kOptPrintk:
    case kOptCmdlines: {
      if (!v7) break;
      const std::uint64_t where = o.u64();
      static constexpr const char* names[] = {"header info", "ftrace event formats", "event formats",
                                              "kallsyms", "trace_printk formats", "saved cmdlines"};
      const char* what = names[id - kOptHeaderInfo];
      bool compressed = false;
      std::uint64_t data_at = 0;
      // Kept: the formats view into it.
      const std::string& owned = sections_.emplace_back(section(where, id, what, compressed, data_at));
      Cursor s = compressed ? Cursor(owned, data_at, what, layout_.big_endian, true)
                            : Cursor(file_, 0, what, layout_.big_endian).at(data_at);
      if (id == kOptHeaderInfo) header_info(s);
      else if (id == kOptFtraceEvents) formats(s, true);
      else if (id == kOptEventFormats) formats(s, false);
      else if (id == kOptKallsyms) kallsyms(s);
      else if (id == kOptPrintk) printk_.parse(s.bytes(s.u32()));
      else cmdlines(s, s.u64());
      break;
    }
    case kOptBufferText:
      o.fail_at(at, "a latency-format buffer (text, not flyrecord): not read");
    default:
      break;  // CPUSTAT, UNAME, HOOK, TRACEID, GUEST, ...: nothing the events need
  }
}

void TraceDat::read_v6(Cursor& c) {
  c.set_section("header info");
  header_info(c);
  c.set_section("ftrace event formats");
  formats(c, true);
  c.set_section("event formats");
  formats(c, false);
  c.set_section("kallsyms");
  kallsyms(c);
  c.set_section("trace_printk formats");
  printk_.parse(c.bytes(c.u32()));
  c.set_section("saved cmdlines");
  cmdlines(c, c.u64());
  c.set_section("options");
  const std::uint32_t ncpu = c.u32();
  if (ncpu > 65536) c.fail("CPU count " + std::to_string(ncpu));
  nr_cpus_ = static_cast<std::int32_t>(ncpu);
  std::string_view kind = c.bytes(10);
  if (kind == std::string_view("options  \0", 10)) {
    for (;;) {
      const std::uint16_t id = c.u16();
      if (id == kOptDone) break;
      const std::uint32_t size = c.u32();
      option(id, c, size, false);
      c.skip(size);
    }
    kind = c.bytes(10);
  }
  if (kind == std::string_view("latency  \0", 10)) c.fail("a latency-format trace (text, not flyrecord): not read");
  if (kind != std::string_view("flyrecord\0", 10)) c.fail("neither options, latency nor flyrecord");
  c.set_section("flyrecord");
  // Per-CPU (offset, size) of the top buffer here; the BUFFER options'
  // instances have the same table at their offset.
  DatBuffer top;
  top.page_size = page_size_;
  top.clock = options_.count("trace_clock") ? options_["trace_clock"] : "";
  auto cpu_table = [&](Cursor& t, DatBuffer& b) {
    for (std::uint32_t i = 0; i < ncpu; ++i) {
      DatCpu cpu;
      cpu.cpu = static_cast<std::int32_t>(i);
      cpu.offset = t.u64();
      cpu.size = t.u64();
      if (cpu.size) b.cpus.push_back(cpu);
    }
  };
  cpu_table(c, top);
  for (std::size_t i = 0; i < v6_buffer_offsets_.size(); ++i) {
    Cursor t = Cursor(file_, 0, "buffer " + buffers_[i].name, layout_.big_endian).at(v6_buffer_offsets_[i]);
    if (t.peek(10) == std::string_view("flyrecord\0", 10)) t.skip(10);
    cpu_table(t, buffers_[i]);
  }
  buffers_.insert(buffers_.begin(), std::move(top));
}

// The bytes of the section at `offset` with ID `id`: decompressed into the
// result, or (not compressed) left in the file at data_offset.
std::string TraceDat::section(std::uint64_t offset, std::uint16_t id, const char* what, bool& compressed,
                              std::uint64_t& data_offset) {
  Cursor c = Cursor(file_, 0, std::string(what) + " section header", layout_.big_endian).at(offset);
  const std::uint16_t got = c.u16();
  if (got != id) c.fail_at(offset, "section ID " + std::to_string(got) + " where " + std::to_string(id) + " was expected");
  const std::uint16_t flags = c.u16();
  c.u32();  // description: an ID into the strings section
  const std::uint64_t size = c.u64();
  compressed = (flags & 1) != 0;
  data_offset = c.offset();
  if (size > file_.size() - data_offset) {
    c.fail("section of " + std::to_string(size) + " bytes runs past the end of the file (" +
           std::to_string(file_.size()) + " bytes): truncated?");
  }
  last_section_end_ = data_offset + size;
  if (!compressed || id == kOptBuffer) return {};
  c.set_section(what);
  const std::uint32_t csize = c.u32();
  const std::uint32_t usize = c.u32();
  const std::uint64_t at = c.offset();
  const std::string_view in = c.bytes(csize);
  return c.decompress(decompress_, in, usize, at);
}

void TraceDat::read_v7(Cursor& c) {
  compression_ = std::string(c.cstr(64));
  options_["compression_version"] = std::string(c.cstr(64));
  if (compression_ != "none" && !decompress_) c.fail("compressed with " + compression_ + " and no decompressor given");
  options_["compression"] = compression_;
  const std::uint64_t first = c.u64();
  options_v7(first);
  if (raw_formats_.empty()) c.fail("no event formats section");
}

void TraceDat::options_v7(std::uint64_t offset) {
  // Options sections chain through DONE; a loop would be a corrupt file.
  std::vector<std::uint64_t> seen;
  while (offset != 0) {
    for (std::uint64_t s : seen) {
      if (s == offset) throw TraceDatError("options", offset, "the options sections loop");
    }
    seen.push_back(offset);
    bool compressed = false;
    std::uint64_t data_at = 0;
    const std::string owned = section(offset, 0, "options", compressed, data_at);
    Cursor c = compressed ? Cursor(owned, data_at, "options", layout_.big_endian, true)
                          : Cursor(file_, 0, "options", layout_.big_endian).at(data_at);
    std::uint64_t next = 0;
    for (;;) {
      const std::uint16_t id = c.u16();
      const std::uint32_t size = c.u32();
      if (id == kOptDone) {
        next = size >= 8 ? c.u64() : 0;
        break;
      }
      if (size > c.remaining()) c.fail("option " + std::to_string(id) + " of " + std::to_string(size) + " bytes runs past its section");
      option(id, c, size, true);
      c.skip(size);
    }
    offset = next;
  }
}

std::string TraceDat::cpu_data(const DatBuffer& b, const DatCpu& cpu, std::string_view& view) const {
  const std::string where = "CPU " + std::to_string(cpu.cpu) + " data" + (b.name.empty() ? "" : " of buffer " + b.name);
  Cursor c(file_, 0, where, layout_.big_endian);
  if (cpu.offset > file_.size() || cpu.size > file_.size() - cpu.offset) {
    c.fail_at(std::min<std::uint64_t>(cpu.offset, file_.size()),
              std::to_string(cpu.size) + " bytes at offset " + std::to_string(cpu.offset) + " run past the end of the file (" +
                  std::to_string(file_.size()) + " bytes): truncated?");
  }
  if (!b.compressed) {
    view = file_.substr(cpu.offset, cpu.size);
    return {};
  }
  // The size recorded for compressed data leaves out the chunk count: the
  // chunks are bounded by the flyrecord section instead.
  std::string out;
  if (cpu.size == 0) return out;
  if (b.end > file_.size() || cpu.offset >= b.end) {
    c.fail_at(cpu.offset, "compressed CPU data outside its flyrecord section (ends at " + std::to_string(b.end) + ")");
  }
  Cursor d = Cursor(file_.substr(0, b.end), 0, where, layout_.big_endian).at(cpu.offset);
  const std::uint32_t chunks = d.u32();
  for (std::uint32_t i = 0; i < chunks; ++i) {
    const std::uint32_t csize = d.u32();
    const std::uint32_t usize = d.u32();
    const std::uint64_t at = d.offset();
    out += d.decompress(decompress_, d.bytes(csize), usize, at);
  }
  // A damaged chunk count would otherwise drop (or invent) data unnoticed.
  const std::uint64_t used = d.offset() - cpu.offset;
  if (used != cpu.size && used != cpu.size + 4) {
    d.fail(std::to_string(chunks) + " compressed chunks take " + std::to_string(used) + " bytes, the buffer option says " +
           std::to_string(cpu.size));
  }
  return out;  // the caller views it
}

const EventFormat& TraceDat::format(std::size_t raw) {
  if (events_.size() != raw_formats_.size()) {
    events_.resize(raw_formats_.size());
    parsed_.assign(raw_formats_.size(), 0);
  }
  if (!parsed_[raw]) {
    const RawFormat& r = raw_formats_[raw];
    try {
      events_[raw] = parse_event_format(r.text, r.system, layout_.long_size);
    } catch (const std::invalid_argument& e) {
      throw TraceDatError(r.where, r.offset, "format of a " + r.system + " event: " + e.what());
    }
    parsed_[raw] = 1;
  }
  return events_[raw];
}

const std::vector<EventFormat>& TraceDat::events() {
  for (std::size_t i = 0; i < raw_formats_.size(); ++i) format(i);
  return events_;
}

}  // namespace timerlab
