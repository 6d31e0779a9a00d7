// ftrace.hpp — a fast, incremental reader of ftrace text: the `trace` file of
// tracefs and the output of `trace-cmd report`, turned into columns.
//
// Reference: shared/reference/kernel-timers.md §8 (line framing and the
// payload of every event timerlab models).
//
// Theory of operation
// -------------------
// The caller feeds the text in chunks of any size (Python decompresses .xz
// and .gz and hands over 4 MiB at a time, without the GIL). The parser cuts
// complete lines, keeps the partial last line until the next chunk (a chunk
// boundary may fall anywhere, even inside a multi-byte character), and adds
// one row per event line.
//
// One event line as tracefs prints it; trace-cmd report has no flags column,
// pads the event name to 20 columns, and prints ns with -t:
//
//   kworker/u8:0 x-1234   (   1230) [003] d.h2.   266.043228: timer_start: timer=... expires=...
//   '---- comm ---' pid   '- tgid -' cpu  flags   sec . frac   event        payload
//                         (optional)      (opt.)  6 or 9 digits
//
//   * comm may hold spaces, dashes and brackets: the `[cpu]` column is the
//     first `[digits]` whose left side reads `-pid` (+ spaces, + optional
//     tgid), so the pid is the digits after the LAST '-' before it;
//   * the flags (irqs-off, need-resched, hardirq/softirq, preempt depth,
//     ...) are kept whole as the category column `latency_flags`;
//   * the timestamp becomes integer nanoseconds exactly (no floating point);
//   * the payload is `key=value` tokens; a token `[key=value]` (timeout,
//     action) counts as one; `==>` separates the halves of sched_switch.
//
// What each event's payload holds is ONE table, ftrace_schema(): event name
// -> list of (payload key, column name, kind). Column names carry units and
// never collide with the line columns (payload `cpu=` becomes base_cpu,
// cpu_id or target_cpu by event). Kinds and the column storage they give:
//
//   kind   payload text                             column storage
//   I64    signed decimal (%d, %ld)                 Int64   (nullable)
//   U64    unsigned decimal (%lu, %llu)             UInt64  (nullable)
//   Hex    hex mask without 0x (%0x)                UInt64  (nullable)
//   Ptr    %p: hashed hex, or 0x...; (null), (nil)  UInt64  (nullable, opaque id)
//   Str    a token up to the next space             category (int32 codes)
//   Comm   a task name: may hold spaces, so it      category (int32 codes)
//          runs to where the table's next key starts
//
// Strings are interned as they are read, one open-addressing hash table per
// column, so a string column is an int32 code per row plus a short list of
// distinct values. While parsing, a column keeps only the (row, value) pairs
// of rows that have it; take() lays out the dense arrays (value + missing
// byte per row) once, at their final size. A trace uses some 60 columns and
// each row fills a handful: growing and padding dense columns row by row
// would spend most of the time on memory.
//
// Payloads that are not fully described by the table keep their raw text
// in a `payload` column: every event missing from the table, and a known
// event with a key the table does not list. Nothing of an event is lost.
//
// Non-event lines: blank lines and `#` comments (tracefs header; `#P:16`
// gives the CPU count), and trace-cmd's `cpus=16`, `version = 6`,
// `CPU 3 is empty`, and ring-buffer markers `CPU:3 [LOST 12 EVENTS]`,
// `CPU:3 [12 EVENTS DROPPED]` (counted in lost_events(), and each marker,
// `[EVENTS DROPPED]` without a count too, in loss_markers()). Any other line that
// does not frame is malformed.
//
// Errors. A malformed line (does not frame; a value that does not parse as
// its kind; a payload token without '='; a required key missing, as in a
// truncated line; a last event line without its newline, cut short
// wherever the cut fell; a line longer than kMaxLineBytes, reported in
// strict mode as soon as it is that long; a carriage return inside a line,
// i.e. CR-only line endings; an event on a CPU beyond the header's count)
// is reported with its 1-based line number and the reason. Strict: the first one stops the parse
// (error_line() != 0). Lenient: the line is counted, the first few reasons
// kept, and parsing goes on. Bad text never throws or aborts: every read is
// bounds-checked, every number overflow-checked, and the work per line is
// linear in its length whatever it holds.
//
// Simplifications vs. the tools that write the text
//   * trace-cmd's latency format (`report -l`, cpu without brackets), its
//     --ts-diff column, raw counter clocks (a timestamp without a fraction)
//     and function-tracer lines (`func <-parent`, no event name) are not read.
//   * Leading spaces of a comm cannot be told from tracefs' right alignment
//     and are dropped; the flags column (irqs-off, need-resched, ...) is
//     skipped, not kept.
//   * A key duplicated in one payload keeps its first value (the raw
//     payload keeps the rest).
//   * `%p` printed before the kernel's hashing key was ready,
//     `(____ptrval____)`, reads as missing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "timerlab/column_arena.hpp"

namespace timerlab {

// ---------------------------------------------------------------------------
// The event schema.

enum class FieldKind : std::uint8_t { I64, U64, Hex, Ptr, Str, Comm };
enum class ColumnStorage : std::uint8_t { Int64, UInt64, Category };

constexpr ColumnStorage storage_of(FieldKind k) {
  switch (k) {
    case FieldKind::I64:
      return ColumnStorage::Int64;
    case FieldKind::U64:
    case FieldKind::Hex:
    case FieldKind::Ptr:
      return ColumnStorage::UInt64;
    case FieldKind::Str:
    case FieldKind::Comm:
      break;
  }
  return ColumnStorage::Category;
}

const char* to_string(FieldKind k);
const char* to_string(ColumnStorage s);

// Required keys are printed by every kernel and tool that emits the event;
// their absence means a damaged (typically truncated) line. Optional keys
// come and go with kernel versions (bucket_expiry, capacity) or with
// trace-cmd's plugins (its hrtimer plugin drops function and mode).
enum class Presence : std::uint8_t { Required, Optional };

struct FieldSpec {
  std::string_view key;     // as printed in the payload
  std::string_view column;  // column name, with its unit
  FieldKind kind;
  Presence presence = Presence::Required;
};

// How a payload is laid out. KeyValue is the kernel's print format;
// trace-cmd report's sched plugin prints sched_switch and sched_wakeup* in
// its own words, and those shapes accept both.
enum class PayloadShape : std::uint8_t {
  KeyValue,
  SchedSwitch,  // or `comm:pid [prio] S ==> comm:pid [prio]`
  SchedWakeup,  // or `comm:pid [prio] [success=1] CPU:002`
};

struct EventSpec {
  std::string_view name;
  PayloadShape shape;
  std::vector<FieldSpec> fields;
};

inline constexpr std::size_t kMaxFieldsPerEvent = 12;

// The table. Checked once when first built: at most kMaxFieldsPerEvent
// fields per event, no key twice in an event, and one storage per column
// name across events (std::logic_error otherwise; a unit test builds it).
const std::vector<EventSpec>& ftrace_schema();

// ---------------------------------------------------------------------------
// Interned strings.

class Interner {
 public:
  Interner() = default;
  Interner(const Interner&) = delete;
  Interner& operator=(const Interner&) = delete;
  Interner(Interner&&) = default;
  Interner& operator=(Interner&&) = default;

  std::int32_t intern(std::string_view s);
  std::size_t size() const { return values_.size(); }
  std::string_view operator[](std::size_t code) const { return values_[code]; }

 private:
  // Open addressing, linear probing, load <= 1/2: the tables are small
  // (tens to thousands of values) and looked up once per field per line.
  struct Slot {
    std::uint64_t hash = 0;
    std::int32_t code = -1;  // -1: empty
  };
  void grow();

  std::vector<Slot> slots_;
  // values_ view into storage_: a deque never moves its elements, so the
  // views (and the SSO buffers of short strings) stay valid as it grows.
  std::deque<std::string> storage_;
  std::vector<std::string_view> values_;
  // Consecutive lines repeat values (the same task, the same function):
  // one comparison saves a hash.
  std::string_view last_;
  std::int32_t last_code_ = -1;
};

// ---------------------------------------------------------------------------
// Output.

struct FtraceColumn {
  std::string name;
  ColumnStorage storage = ColumnStorage::Int64;
  // All the columns of one take() share one block (column_arena.hpp).
  ColumnVector<std::int64_t> i64;      // Int64
  ColumnVector<std::uint64_t> u64;     // UInt64
  ColumnVector<std::uint8_t> missing;  // Int64, UInt64: 1 = <NA>
  ColumnVector<std::int32_t> codes;    // Category: -1 = <NA>
  Interner strings;                   // Category: the values of the codes

  std::size_t size() const;
};

// The columns of a parsed trace, one entry per event line.
// A point where the ring buffer lost events: before row `row` (counted
// over every take() of the parser: a store's row groups), on CPU `cpu`;
// `lost` events, or -1 where the marker does not say how many.
struct LossMark {
  std::int64_t row = 0;
  std::int32_t cpu = 0;
  std::int64_t lost = -1;
};

struct FtraceTable {
  std::vector<std::int64_t> ts_ns;
  std::vector<std::int32_t> cpu;
  std::vector<std::int32_t> pid;
  std::vector<std::int64_t> line;  // 1-based line number in the text
  std::vector<std::int32_t> task;  // codes into task_names
  std::vector<std::int32_t> event;  // codes into event_names
  std::vector<std::string> task_names;
  std::vector<std::string> event_names;
  // Payload columns that occur, in schema order; `tgid`, then
  // `latency_flags`, first when the text had those columns.
  std::vector<FtraceColumn> fields;
  // Raw payloads: row payload_rows[i] has text
  // payload_blob[payload_ends[i-1] .. payload_ends[i]).
  std::vector<std::int64_t> payload_rows;
  std::vector<std::size_t> payload_ends;
  std::string payload_blob;
  // The ring buffer's losses met since the last take(), in order.
  std::vector<LossMark> losses;
};

// ---------------------------------------------------------------------------
// The parser.

class FtraceParser {
 public:
  // A line longer than this is malformed; it also bounds the memory the
  // partial line carried between chunks can take.
  static constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;

  explicit FtraceParser(bool strict = true, std::size_t max_examples = 5);

  // Parse every complete line of `chunk` (after the partial line left by
  // the previous chunk). Does nothing once a strict parse has failed.
  void feed(std::string_view chunk);
  // End of text: parse the last line if it had no newline.
  void finish();

  // Strict mode: 1-based line of the first malformed line, 0 if none.
  std::int64_t error_line() const { return error_line_; }
  const std::string& error_reason() const { return error_reason_; }
  // Lenient mode: malformed lines skipped, and "line N: reason" for the
  // first max_examples of them.
  std::int64_t skipped_lines() const { return skipped_lines_; }
  const std::vector<std::string>& skipped_examples() const { return skipped_examples_; }

  std::int64_t lines() const { return line_no_; }
  std::size_t rows() const { return ts_ns_.size(); }
  // From `#P:N` (tracefs) or `cpus=N` (trace-cmd), else 1 + highest cpu
  // seen, else 0.
  std::int32_t nr_cpus() const;
  // Sum of the counts in `CPU:N [LOST n EVENTS]` / `[n EVENTS DROPPED]`.
  std::int64_t lost_events() const { return lost_events_; }
  // How many such markers, `[EVENTS DROPPED]` (a loss of unknown size)
  // included: the points where the ring buffer lost events.
  std::int64_t loss_markers() const { return loss_markers_; }
  // Whether the text began with trace-cmd report's header (cpus=, version =).
  bool trace_cmd_header() const { return trace_cmd_header_; }
  // A loss of the ring buffer before the next row (a marker line, a
  // trace.dat page's missed events); lost < 0: how many is not known.
  void add_loss(std::int32_t cpu, std::int64_t lost);
  const std::vector<LossMark>& losses() const { return losses_; }

  // Move the columns out (after finish()); the parser is left empty.
  FtraceTable take();

  // A record of a binary trace (trace.dat, tracedat.hpp), framed by its
  // reader: the payload, printed as trace-cmd report prints it, is parsed as
  // a text line's would be, so both forms give the same columns. `record`
  // (1-based) stands in for the line number.
  void add_record(std::int64_t record, std::int64_t ts_ns, std::int32_t cpu, std::int32_t pid,
                  std::string_view task, std::string_view event, std::string_view payload);
  // What a binary trace's header says: the CPU count (as `cpus=` would).
  // Its losses come with add_loss, as `[LOST n EVENTS]` lines would.
  void set_binary_header(std::int32_t nr_cpus);

  // One payload field of a row, as parsed (or decoded) before it is added.
  struct Staged {
    bool set = false;
    bool missing = false;  // a value that means "no value", e.g. (____ptrval____)
    std::uint64_t bits = 0;  // Int64, UInt64 storage
    std::string_view text;   // Category storage: must live until the row is added
  };
  // Indexed like the event's fields in ftrace_schema().
  using Staging = Staged[kMaxFieldsPerEvent];

  // A record of a binary trace whose payload its reader decoded itself
  // (tracedat_decode.hpp): the same row add_record would add for the
  // payload those values print as, without the text. `event` must be in
  // ftrace_schema(); every required field of it set. `event_code` caches
  // the event's code between calls (-1 at first; the name is interned
  // when a row of it is first added, as add_record would).
  void add_staged(std::int64_t record, std::int64_t ts_ns, std::int32_t cpu, std::int32_t pid,
                  std::string_view task, std::string_view event, const Staging& st, std::int32_t& event_code);
  // `text` read as a value of `kind`, as a payload token's value is: false
  // where the text reader would call the line malformed.
  static bool parse_value(FieldKind kind, std::string_view text, Staged& s);

 private:
  struct Framed {
    std::string_view task;
    std::int32_t pid = 0;
    std::int32_t cpu = 0;
    bool has_tgid = false;
    bool tgid_missing = false;  // `(-------)`
    std::int64_t tgid = 0;
    std::int64_t ts_ns = 0;
    std::string_view latency_flags;  // tracefs' `dNh1.` column; empty in trace-cmd report's text
    std::string_view event;
    std::string_view payload;
  };
  // A column while parsing: only the rows that have a value, so that adding
  // a row costs nothing in the (many) columns it does not use; take() lays
  // out the dense arrays once, at their final size.
  struct SparseColumn {
    std::string name;
    ColumnStorage storage = ColumnStorage::Int64;
    std::vector<std::uint64_t> rows;
    std::vector<std::uint64_t> values;  // bits of the int64/uint64, or the category code
    Interner strings;
  };

  void process_line(std::string_view line);
  void add_framed(const Framed& f);
  static Framed binary_framed(std::int64_t ts_ns, std::int32_t cpu, std::int32_t pid, std::string_view task,
                              std::string_view event, std::string_view payload);
  // False (and the line malformed) for a CPU beyond the header's count.
  bool cpu_in_header(std::int32_t cpu);
  // The event name's code; the first time, its schema entry too.
  std::size_t event_code_of(std::string_view event);
  bool frame(std::string_view line, Framed& f, std::string& why) const;
  bool header_line(std::string_view line);
  bool parse_payload(const EventSpec& spec, std::string_view payload, Staging& st, bool& extra,
                     std::string& why) const;
  bool parse_key_value(const EventSpec& spec, std::string_view payload, Staging& st, bool& extra,
                       std::string& why) const;
  bool parse_sched_switch_plugin(const EventSpec& spec, std::string_view payload, Staging& st,
                                 std::string& why) const;
  bool parse_sched_wakeup_plugin(const EventSpec& spec, std::string_view payload, Staging& st,
                                 bool& extra, std::string& why) const;
  bool stage(const EventSpec& spec, std::size_t idx, std::string_view value, Staging& st,
             std::string& why) const;
  bool stage_key(const EventSpec& spec, std::string_view key, std::string_view value, Staging& st,
                 std::string& why) const;
  void commit(const Framed& f, std::int32_t event_code, int spec_idx, const Staging& st, bool keep_payload);
  SparseColumn& column_for(int spec_idx, std::size_t field_idx) {
    SparseColumn* c = column_of_field_[static_cast<std::size_t>(spec_idx)][field_idx];
    return c ? *c : first_column_for(spec_idx, field_idx);
  }
  SparseColumn& first_column_for(int spec_idx, std::size_t field_idx);
  SparseColumn& new_column(std::string_view name, ColumnStorage storage);
  void malformed(std::string reason);
  static std::string overlong_reason(bool has_cr);

  bool strict_;
  std::size_t max_examples_;

  // Input state.
  std::string carry_;  // partial last line of the previous chunk
  bool carry_overlong_ = false;
  bool carry_cr_ = false;  // the over-long carried line held a carriage return
  std::int64_t line_no_ = 0;
  bool failed_ = false;

  // Event name -> schema index (-1: not in the schema): once per name
  // through the map, then by event code.
  std::unordered_map<std::string_view, int> schema_index_;
  std::vector<int> spec_of_code_;
  // Per schema event and field: its column (in columns_), null until first used.
  std::vector<std::vector<SparseColumn*>> column_of_field_;
  std::unordered_map<std::string_view, int> column_by_name_;

  // Output.
  std::vector<std::int64_t> ts_ns_;
  std::vector<std::int32_t> cpu_;
  std::vector<std::int32_t> pid_;
  std::vector<std::int64_t> line_;
  std::vector<std::int32_t> task_;
  std::vector<std::int32_t> event_;
  Interner task_names_;
  // Every event name framed, also on lines that then failed: take() drops
  // names without rows.
  Interner event_names_;
  std::deque<SparseColumn> columns_;  // deque: references stay valid as it grows
  int tgid_column_ = -1;
  int latency_flags_column_ = -1;
  std::vector<std::int64_t> payload_rows_;
  std::vector<std::size_t> payload_ends_;
  std::string payload_blob_;

  std::int32_t header_nr_cpus_ = -1;
  bool trace_cmd_header_ = false;
  std::int32_t max_cpu_ = -1;
  std::int64_t lost_events_ = 0;
  std::int64_t loss_markers_ = 0;
  std::vector<LossMark> losses_;
  std::int64_t rows_taken_ = 0;  // rows handed out by earlier take()s
  std::int64_t error_line_ = 0;
  std::string error_reason_;
  std::int64_t skipped_lines_ = 0;
  std::vector<std::string> skipped_examples_;
};

}  // namespace timerlab
