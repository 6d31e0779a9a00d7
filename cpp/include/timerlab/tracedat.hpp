// tracedat.hpp — a reader of trace-cmd's binary trace.dat, versions 6 and 7,
// into the same columns as the text reader (ftrace.hpp).
//
// Reference: the trace-cmd.dat.v6(5) and trace-cmd.dat.v7(5) man pages, and
// the kernel's ring-buffer page layout (the header_page and header_event
// formats the file carries).
//
// Theory of operation
// -------------------
// The whole file is one byte view (Python maps it; a .dat.xz is decompressed
// first). The metadata is read once, in the constructor:
//
//   v6:  magic "\x17\x08\x44tracing" "6\0" endian long_size page_size
//        header_page header_event | ftrace formats | event formats |
//        kallsyms | printk formats | saved cmdlines | nr_cpus
//        "options  \0" (id, size, data)... 0 | "flyrecord\0" (offset, size) per CPU
//   v7:  magic "7\0" endian long_size page_size "zstd\0" "1.5.4\0" options_offset
//        then sections anywhere, each `id flags string_id size`, found through
//        the options sections (HEADER_INFO, FTRACE_EVENTS, EVENT_FORMATS,
//        KALLSYMS, PRINTK, CMDLINES point at them; BUFFER describes each
//        instance: name, clock, page size, per-CPU offset and size; DONE
//        chains to the next options section). A section with flag 1 is
//        compressed; flyrecord data is compressed in chunks.
//
// Decompression is not done here: the caller's Decompress function does it
// (Python, with the zstandard package or zlib), and the reader checks that it
// gave the promised size.
//
// read() decodes one buffer (instance). Each CPU's data is a run of pages:
//
//   page:   u64 timestamp | commit (kernel long: data bytes, bit 31 = events
//           were lost before this page, bit 30 = their count is stored after
//           the data) | data ...
//   record: u32 header = type_len:5 | time_delta:27 (little endian order)
//           type_len 1..28  data of type_len*4 bytes follows
//           type_len 0      u32 length, then length-4 bytes of data
//           29 padding      time_delta 0: the rest of the page is empty;
//                           else skip u32 length more bytes
//           30 time extend  delta = u32 << 27 | time_delta, added to the clock
//           31 time stamp   absolute: the clock becomes u32 << 27 | time_delta
//                           (its top bits from the page's timestamp)
//
// Data records start with common_type, the event's ID in its format. The
// fields of an event the text reader's schema knows are staged straight
// into its columns (tracedat_decode.hpp, FtraceParser::add_staged); any
// other payload is printed by the format's print fmt (tracedat_format.hpp)
// and handed with the line columns to FtraceParser::add_record, to be
// parsed as a text line's. Either way the row is the one the text of
// `trace-cmd report` gives. The CPUs are
// merged by timestamp, as trace-cmd report orders them: the smallest next
// timestamp first, ties to the lower CPU.
//
// Errors. Anything that does not fit (a section, page or record beyond its
// container, an unknown event ID, a format that does not parse, a decompressed
// size other than promised, a truncated file) throws TraceDatError naming
// the section and the file offset; no read goes outside the file, and the
// work is linear in the file's size.
//
// Simplifications vs. trace-cmd
//   * Latency-format files (text instead of flyrecord) are refused.
//   * TIME_SHIFT (guest/host synchronisation) and TSC2NSEC are not applied;
//     the OFFSET option is.
//   * Big-endian files are read by the page layout above with its fields
//     swapped, untested against a real big-endian trace.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "timerlab/ftrace.hpp"
#include "timerlab/tracedat_format.hpp"

namespace timerlab {

class TraceDatError : public std::runtime_error {
 public:
  TraceDatError(std::string section, std::uint64_t offset, const std::string& what)
      : std::runtime_error(what), section_(std::move(section)), offset_(offset) {}
  const std::string& section() const { return section_; }
  std::uint64_t offset() const { return offset_; }

 private:
  std::string section_;
  std::uint64_t offset_;
};

// (compressed bytes, size promised) -> decompressed bytes; throws on bad data.
using Decompress = std::function<std::string(std::string_view, std::uint64_t)>;

struct DatCpu {
  std::int32_t cpu = 0;
  std::uint64_t offset = 0;  // file offset of its data
  std::uint64_t size = 0;    // bytes in the file
};

struct DatBuffer {
  std::string name;  // "" for the top instance
  std::string clock;
  std::uint32_t page_size = 0;
  bool compressed = false;
  std::uint64_t end = 0;  // v7: end of its flyrecord section (compressed CPU data may not pass it)
  std::vector<DatCpu> cpus;
};

class TraceDat {
 public:
  // Reads the metadata; throws TraceDatError. `file` is viewed, not copied:
  // it must outlive the reader.
  TraceDat(std::string_view file, Decompress decompress);

  int version() const { return version_; }
  bool big_endian() const { return layout_.big_endian; }
  std::uint32_t long_size() const { return layout_.long_size; }
  std::uint32_t page_size() const { return page_size_; }
  const std::string& compression() const { return compression_; }
  std::int32_t nr_cpus() const { return nr_cpus_; }
  const std::vector<DatBuffer>& buffers() const { return buffers_; }
  // Every format of the file, parsed (read() parses only those it meets).
  const std::vector<EventFormat>& events();
  const std::unordered_map<std::string, std::string>& options() const { return options_; }

  // Decode buffer `name` into `out`; returns the number of records. Throws
  // TraceDatError (std::invalid_argument for a name not in buffers()).
  // Records of the schema's events are decoded straight into the columns
  // (tracedat_decode.hpp); direct=false prints and parses every record
  // instead, which gives the same rows, slower (the tests compare them).
  // `each`, if given, is called whenever `out` holds `rows` rows or more
  // (rows > 0), between records: it may take() them (a store's row groups:
  // the columns of a large trace never all in memory).
  std::int64_t read(std::string_view name, FtraceParser& out, bool direct = true,
                    const std::function<void()>& each = {}, std::int64_t rows = 0);

 private:
  class Cursor;
  friend class CpuPages;

  void read_v6(Cursor& c);
  void read_v7(Cursor& c);
  void header_info(Cursor& c);
  void formats(Cursor& c, bool ftrace);
  void kallsyms(Cursor& c);
  void cmdlines(Cursor& c, std::uint64_t size);
  void options_v6(Cursor& c);
  void options_v7(std::uint64_t offset);
  std::string section(std::uint64_t offset, std::uint16_t id, const char* what, bool& compressed,
                      std::uint64_t& data_offset);
  void option(std::uint16_t id, Cursor& c, std::uint32_t size, bool v7);
  std::string cpu_data(const DatBuffer& b, const DatCpu& cpu, std::string_view& view) const;
  void register_comm(std::int32_t pid, std::string_view comm);

  std::string_view file_;
  Decompress decompress_;
  int version_ = 0;
  RecordLayout layout_;
  std::uint32_t page_size_ = 0;
  std::string compression_ = "none";
  std::int32_t nr_cpus_ = 0;
  std::int64_t ts_offset_ = 0;
  // header_page: where commit and data sit, commit's size.
  std::uint32_t commit_offset_ = 8, commit_size_ = 8, data_offset_ = 16;
  // A format file as stored: parsed when its first record is met (a file
  // holds thousands, a trace uses a few dozen).
  struct RawFormat {
    std::string_view text;
    std::string system;
    std::uint64_t offset = 0;  // in the file (of the section, if compressed)
    std::string where;         // section name, for errors
  };
  const EventFormat& format(std::size_t raw);
  std::vector<RawFormat> raw_formats_;
  std::vector<EventFormat> events_;     // parallel to raw_formats_
  std::vector<std::uint8_t> parsed_;    // parallel to raw_formats_
  std::vector<int> event_index_;        // ID -> index into raw_formats_, -1 if none
  std::deque<std::string> sections_;    // decompressed sections the formats view
  Symbols symbols_;
  PrintkStrings printk_;
  std::unordered_map<std::int32_t, std::string> comms_;
  std::unordered_map<std::string, std::string> options_;  // printable options: clock, version, ...
  std::vector<DatBuffer> buffers_;
  std::vector<std::uint64_t> v6_buffer_offsets_;
  std::uint64_t last_section_end_ = 0;
};

}  // namespace timerlab
