// tracedat_decode.hpp — internal: a trace.dat record's fields staged straight
// into the text reader's columns, without printing its payload.
//
// Theory of operation
// -------------------
// The text reader (ftrace.hpp) reads a payload as tokens separated by
// spaces, `key=value` or `[key=value]`, and the schema says which column and
// kind each key has. A trace.dat record prints as such a payload (its print
// fmt, or one of trace-cmd's plugins, tracedat_format.hpp); printing it and
// parsing the text back gives the row, but costs most of the time of a read.
// A DirectDecoder gives the same staged values without the text. It is
// bound once per event format:
//
//   print fmt  "timer=%p function=%ps expires=%lu [timeout=%ld] flags=%s"
//   tokens      timer=<c0> function=<c1> expires=<c2> [timeout=<c3>] flags=<c4>
//   slots       timer: c0 as Ptr   function: print c1   expires: c2 as U64 ...
//
// A slot of a numeric column whose value is one plain conversion (%d %u %x
// %p, no flags but zero padding) takes the number itself; any other slot
// prints its pieces into a buffer and reads that as the text reader reads a
// token. The plugins' payloads (sched_switch, sched_wakeup, hrtimer_start,
// hrtimer_expire_entry) are shapes written by this reader, decoded by shape.
//
// Exactness. The result must be the row print-then-parse gives, or its
// error. So binding refuses (the event stays on print + parse) any format
// whose text the reader could cut otherwise: a token without a key, a key
// the schema lacks or twice, a required key missing, a task name whose
// next key is not the next token. And decode() returns false, for the
// caller to print and parse that record, whenever a value would not be one
// plain token (a space or tab in a printed string, a task name with '=')
// or a number would not read back as itself (e.g. a negative %d into an
// unsigned column), or a field lies outside the record.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "timerlab/ftrace.hpp"
#include "timerlab/tracedat_format.hpp"

namespace timerlab {

// Work space of decode(), one per reader: the printed text of string slots
// must live until the row is added.
struct DecodeScratch {
  std::string text[kMaxFieldsPerEvent];
  std::string scratch, starred;
};

class DirectDecoder {
 public:
  // A piece of a token's value: literal text, or what conversion `conv`
  // prints.
  struct Piece {
    int conv = -1;
    std::string text;
  };
  // Where a schema field's value comes from.
  struct Slot {
    int field = -1;    // index into the schema event's fields (and the Staging)
    FieldKind kind = FieldKind::I64;
    int number = -1;   // a numeric column read from this conversion's value, if it allows
    // When that value is a numeric field of the record (REC->x, or a cast
    // of it): the field, read without the expression evaluator.
    int field_of_number = -1;
    int cast_bits = -1;  // -1: no cast
    bool cast_signed = false;
    std::vector<Piece> pieces;  // otherwise: printed from these
  };

  // The decoder of `ev`'s records, or null: the event is not in the
  // schema, or its payload cannot be decoded exactly (see above).
  static std::unique_ptr<const DirectDecoder> bind(const EventFormat& ev);

  // Stage the values of record `rec` of `ev` (the format it was bound to);
  // false: print and parse this record instead. Registers task names as
  // the sched plugin's printing does.
  bool decode(const EventFormat& ev, std::string_view rec, const PrintContext& ctx, DecodeScratch& ds,
              FtraceParser::Staging& st) const;

 private:
  bool decode_print(const EventFormat& ev, std::string_view rec, const PrintContext& ctx, DecodeScratch& ds,
                    FtraceParser::Staging& st) const;
  bool decode_plugin(const EventFormat& ev, std::string_view rec, const PrintContext& ctx, DecodeScratch& ds,
                     FtraceParser::Staging& st) const;

  const EventSpec* spec_ = nullptr;
  bool plugin_ = false;
  std::uint64_t min_size_ = 0;  // every fixed field lies within this many bytes
  std::vector<Slot> slots_;      // print fmt
  std::vector<int> plugin_slot_;  // plugin: schema field of each plugin output, -1 if none
};

}  // namespace timerlab
