// tracedat_decode.cpp — staging one record's values by its DirectDecoder
// (tracedat_decode.hpp): numbers as they are, strings printed alone.
#include <bit>
#include <cstring>

#include "tracedat_decode.hpp"
#include "tracedat_print.hpp"

namespace timerlab {

namespace {

bool has_blank(std::string_view s) {
  return std::memchr(s.data(), ' ', s.size()) || std::memchr(s.data(), '\t', s.size());
}

void set_bits(FtraceParser::Staged& s, std::uint64_t bits) {
  s.set = true;
  s.missing = false;
  s.bits = bits;
}

// The value the text reader would read from what conversion c prints for
// v, without printing it; false where that is not simply v (then it is
// printed and read).
bool number_as_read(const detail::Conv& c, std::uint64_t v, FieldKind kind, std::uint64_t& bits) {
  if (c.conv == 'p') {  // 0x<hex>, or (nil) for 0
    if (kind == FieldKind::Ptr || (kind == FieldKind::Hex && v != 0)) {
      bits = v;
      return true;
    }
    return false;
  }
  const bool is_signed = c.conv == 'd';
  const std::uint64_t w = detail::cut(v, c.bits, is_signed);
  const bool hex = c.conv == 'x' || c.conv == 'X';
  switch (kind) {
    case FieldKind::I64:  // decimal, in int64
      if (hex || (!is_signed && w > static_cast<std::uint64_t>(INT64_MAX))) return false;
      break;
    case FieldKind::U64:  // decimal, not negative
      if (hex || (is_signed && static_cast<std::int64_t>(w) < 0)) return false;
      break;
    case FieldKind::Hex:
    case FieldKind::Ptr:  // hex digits
      if (!hex) return false;
      break;
    case FieldKind::Str:
    case FieldKind::Comm:
      return false;
  }
  bits = w;
  return true;
}

}  // namespace

bool DirectDecoder::decode(const EventFormat& ev, std::string_view rec, const PrintContext& ctx, DecodeScratch& ds,
                           FtraceParser::Staging& st) const {
  // A field outside the record is an error render_payload words.
  if (rec.size() < min_size_) return false;
  for (std::size_t k = 0; k < spec_->fields.size(); ++k) st[k].set = false;
  return plugin_ ? decode_plugin(ev, rec, ctx, ds, st) : decode_print(ev, rec, ctx, ds, st);
}

bool DirectDecoder::decode_print(const EventFormat& ev, std::string_view rec, const PrintContext& ctx,
                                 DecodeScratch& ds, FtraceParser::Staging& st) const {
  const PrintFormat& pf = *ev.print;
  for (const Slot& s : slots_) {
    FtraceParser::Staged& out = st[static_cast<std::size_t>(s.field)];
    if (s.number >= 0) {
      const detail::Conv& c = pf.convs[static_cast<std::size_t>(s.number)];
      detail::Val v;
      if (s.field_of_number >= 0) {
        read_field(ev.fields[static_cast<std::size_t>(s.field_of_number)], rec, ctx.layout, v.n);
        if (s.cast_bits >= 0) v.n = detail::cut(v.n, s.cast_bits, s.cast_signed);
      } else {
        v = pf.eval(c.arg, ev, rec, ctx, ds.scratch);
      }
      std::uint64_t bits = 0;
      if (!v.is_str && number_as_read(c, v.n, s.kind, bits)) {
        set_bits(out, bits);
        continue;
      }
    }
    std::string& text = ds.text[static_cast<std::size_t>(s.field)];
    text.clear();
    for (const Piece& p : s.pieces) {
      if (p.conv < 0) text.append(p.text);
      else pf.render_conv(static_cast<std::size_t>(p.conv), ev, rec, ctx, text, ds.scratch, ds.starred);
    }
    if (has_blank(text) || !FtraceParser::parse_value(s.kind, text, out)) return false;
  }
  return true;
}

bool DirectDecoder::decode_plugin(const EventFormat& ev, std::string_view rec, const PrintContext& ctx,
                                  DecodeScratch& ds, FtraceParser::Staging& st) const {
  const RecordLayout& l = ctx.layout;
  auto field = [&](std::size_t k) -> const EventField& {
    return ev.fields[static_cast<std::size_t>(ev.plugin_fields[k])];
  };
  // As the sched plugin reads a field (detail::as_plugin_reads).
  auto number = [&](std::size_t k) {
    std::uint64_t v = 0;
    read_field(field(k), rec, l, v);  // inside the record: checked by decode()
    return detail::as_plugin_reads(v, field(k).size);
  };
  auto slot = [&](std::size_t k) -> FtraceParser::Staged& {
    return st[static_cast<std::size_t>(plugin_slot_[k])];
  };
  // "comm:pid [prio]": the comm must read back whole (no blank: the text
  // reader cuts there; no '=': a payload starting `comm=` reads as key=value).
  auto task = [&](std::size_t comm, std::size_t pid, std::size_t prio) {
    std::string_view name;
    if (!detail::field_bytes(field(comm), rec, l, name)) return false;
    name = detail::c_string(name);
    if (has_blank(name) || name.find('=') != std::string_view::npos) return false;
    const std::uint64_t p = number(pid);
    FtraceParser::Staged& c = slot(comm);
    c.set = true;
    c.missing = false;
    c.text = name;
    set_bits(slot(pid), p);
    // sched_switch prints its prios as (int), sched_wakeup as read.
    set_bits(slot(prio), ev.plugin == Plugin::SchedSwitch
                             ? std::bit_cast<std::uint64_t>(std::int64_t{static_cast<std::int32_t>(number(prio))})
                             : number(prio));
    if (ctx.register_comm) ctx.register_comm(ctx.self, static_cast<std::int32_t>(p), name);
    return true;
  };
  auto function = [&](std::size_t k) {
    std::string& text = ds.text[static_cast<std::size_t>(plugin_slot_[k])];
    text.clear();
    detail::put_plugin_function(text, number(k), ctx.symbols);
    FtraceParser::Staged& s = slot(k);
    s.set = true;
    s.missing = false;
    s.text = text;
  };
  switch (ev.plugin) {
    case Plugin::SchedSwitch: {
      // The comms are checked before either is registered, as printing
      // would register both only if it got that far.
      std::string_view prev, next;
      if (!detail::field_bytes(field(0), rec, l, prev) || !detail::field_bytes(field(4), rec, l, next)) return false;
      for (std::string_view n : {detail::c_string(prev), detail::c_string(next)}) {
        if (has_blank(n) || n.find('=') != std::string_view::npos) return false;
      }
      task(0, 1, 2);
      std::string& state = ds.text[static_cast<std::size_t>(plugin_slot_[3])];
      state.clear();
      detail::put_state(state, number(3));
      slot(3).set = true;
      slot(3).missing = false;
      slot(3).text = state;
      task(4, 5, 6);
      return true;
    }
    case Plugin::SchedWakeup: {
      if (!task(0, 1, 2)) return false;
      set_bits(slot(4), number(4));  // CPU:%03llu
      return true;
    }
    case Plugin::HrtimerStart:
      set_bits(slot(0), number(0));
      function(1);
      set_bits(slot(2), number(2));
      set_bits(slot(3), number(3));
      return true;
    case Plugin::HrtimerExpireEntry:
      set_bits(slot(0), number(0));
      set_bits(slot(1), number(1));
      function(2);
      return true;
    case Plugin::TlbFlush:  // these two are not in the schema: never bound
    case Plugin::SysEnterFutex:
    case Plugin::None:
      break;
  }
  return false;
}

}  // namespace timerlab
