// tracedat_bind.cpp — binding an event format to the schema: which
// conversion of its print fmt, or which plugin output, gives each column
// (tracedat_decode.hpp). Runs once per event format a trace uses.
#include <algorithm>
#include <cstring>

#include "tracedat_decode.hpp"
#include "tracedat_print.hpp"

namespace timerlab {

namespace {

constexpr bool is_blank(char c) { return c == ' ' || c == '\t'; }  // the text reader's token separators

const EventSpec* spec_of(std::string_view name) {
  for (const EventSpec& e : ftrace_schema()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

int key_index(const EventSpec& spec, std::string_view key) {
  for (std::size_t k = 0; k < spec.fields.size(); ++k) {
    if (spec.fields[k].key == key) return static_cast<int>(k);
  }
  return -1;
}

using Piece = DirectDecoder::Piece;
using Token = std::vector<Piece>;

// The print fmt cut where the text reader cuts it: at blanks of the literal
// text (a conversion's output is checked for blanks per record).
std::vector<Token> tokens_of(const PrintFormat& pf) {
  std::vector<Token> out;
  Token cur;
  auto literal = [&](std::string_view text) {
    for (char ch : text) {
      if (is_blank(ch)) {
        if (!cur.empty()) out.push_back(std::move(cur));
        cur.clear();
        continue;
      }
      if (cur.empty() || cur.back().conv >= 0) cur.push_back(Piece{});
      cur.back().text.push_back(ch);
    }
  };
  for (std::size_t i = 0; i < pf.convs.size(); ++i) {
    literal(pf.convs[i].before);
    cur.push_back(Piece{static_cast<int>(i), {}});
  }
  literal(pf.tail);
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// Whether a numeric column may take conversion c's value as it is, without
// printing: a plain integer conversion whose text is only digits (zero
// padding allowed), or %p without an extension.
bool plain_number(const detail::Conv& c) {
  if (c.stars[0] >= 0 || !std::strchr("duxXp", c.conv) || (c.conv == 'p' && c.pext)) return false;
  if (c.spec.empty()) return true;
  return c.spec[0] == '0' && std::all_of(c.spec.begin() + 1, c.spec.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

bool is_text_field(const EventField* f) {
  return f && (f->kind == EventField::Kind::CharArray || f->kind == EventField::Kind::DataLoc ||
               f->kind == EventField::Kind::RelLoc);
}

bool is_number_field(const EventField* f) { return f && f->kind == EventField::Kind::Number; }

}  // namespace

std::unique_ptr<const DirectDecoder> DirectDecoder::bind(const EventFormat& ev) {
  const EventSpec* spec = spec_of(ev.name);
  if (!spec) return nullptr;
  auto d = std::unique_ptr<DirectDecoder>(new DirectDecoder());
  d->spec_ = spec;
  for (const EventField& f : ev.fields) d->min_size_ = std::max<std::uint64_t>(d->min_size_, std::uint64_t{f.offset} + f.size);

  // trace-cmd's plugins: render_payload prints with them when their fields
  // are there (it may still fall back per record: decode() then does too).
  if (ev.plugin != Plugin::None) {
    auto field = [&](int k) {
      const int i = ev.plugin_fields[static_cast<std::size_t>(k)];
      return i < 0 ? nullptr : &ev.fields[static_cast<std::size_t>(i)];
    };
    std::vector<std::string_view> keys;
    bool fits = false;
    switch (ev.plugin) {
      case Plugin::SchedSwitch:
        keys = {"prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio"};
        fits = spec->shape == PayloadShape::SchedSwitch && is_text_field(field(0)) && is_number_field(field(1)) &&
               is_number_field(field(2)) && is_number_field(field(3)) && is_text_field(field(4)) &&
               is_number_field(field(5)) && is_number_field(field(6));
        break;
      case Plugin::SchedWakeup:
        // With a numeric success field (old kernels) the plugin prints
        // success=, which the text reader keeps in the raw payload: not here.
        keys = {"comm", "pid", "prio", "", "target_cpu"};
        fits = spec->shape == PayloadShape::SchedWakeup && is_text_field(field(0)) && is_number_field(field(1)) &&
               is_number_field(field(2)) && !is_number_field(field(3)) && is_number_field(field(4));
        break;
      case Plugin::HrtimerStart:
        keys = {"hrtimer", "function", "expires", "softexpires"};
        fits = is_number_field(field(0)) && is_number_field(field(1)) && is_number_field(field(2)) &&
               is_number_field(field(3));
        break;
      case Plugin::HrtimerExpireEntry:
        keys = {"hrtimer", "now", "function"};
        fits = is_number_field(field(0)) && is_number_field(field(1)) && is_number_field(field(2));
        break;
      case Plugin::TlbFlush:  // these two are not in the schema
      case Plugin::SysEnterFutex:
      case Plugin::None:
        break;
    }
    if (fits) {
      for (std::string_view k : keys) d->plugin_slot_.push_back(k.empty() ? -1 : key_index(*spec, k));
      // Every required key must be printed, and every printed one known.
      for (std::size_t k = 0; k < keys.size(); ++k) {
        if (!keys[k].empty() && d->plugin_slot_[k] < 0) return nullptr;
      }
      for (std::size_t k = 0; k < spec->fields.size(); ++k) {
        if (spec->fields[k].presence == Presence::Required &&
            std::find(d->plugin_slot_.begin(), d->plugin_slot_.end(), static_cast<int>(k)) == d->plugin_slot_.end()) {
          return nullptr;
        }
      }
      d->plugin_ = true;
      return d;
    }
  }
  if (!ev.print) return nullptr;  // printed field=value: left to the text reader

  const std::vector<Token> tokens = tokens_of(*ev.print);
  // The sched events' own shapes are told apart by how the payload starts.
  if (spec->shape != PayloadShape::KeyValue) {
    const std::string lead = std::string(spec->fields[0].key) + "=";
    const std::string& first = ev.print->convs.empty() ? ev.print->tail : ev.print->convs[0].before;
    if (first.compare(0, lead.size(), lead) != 0) return nullptr;
  }
  std::vector<int> token_of_field(spec->fields.size(), -1);
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const Token& tok = tokens[t];
    const bool literal_only = std::all_of(tok.begin(), tok.end(), [](const Piece& p) { return p.conv < 0; });
    if (literal_only && tok.size() == 1 && tok[0].text == "==>") continue;  // sched_switch's separator
    if (literal_only || tok.front().conv >= 0) return nullptr;
    const std::string& head = tok.front().text;
    const bool bracket = head[0] == '[';
    const std::size_t eq = head.find('=');
    if (eq == std::string::npos) return nullptr;
    if (bracket && (tok.back().conv >= 0 || tok.back().text.back() != ']')) return nullptr;
    const int k = key_index(*spec, std::string_view(head).substr(bracket ? 1 : 0, eq - (bracket ? 1 : 0)));
    if (k < 0 || token_of_field[static_cast<std::size_t>(k)] >= 0) return nullptr;
    token_of_field[static_cast<std::size_t>(k)] = static_cast<int>(t);

    Slot s;
    s.field = k;
    s.kind = spec->fields[static_cast<std::size_t>(k)].kind;
    for (std::size_t i = 0; i < tok.size(); ++i) {
      Piece p = tok[i];
      if (i == 0) p.text.erase(0, eq + 1);
      if (bracket && i + 1 == tok.size()) p.text.pop_back();
      if (p.conv >= 0 || !p.text.empty()) s.pieces.push_back(std::move(p));
    }
    if (s.kind != FieldKind::Str && s.kind != FieldKind::Comm && s.pieces.size() == 1 && s.pieces[0].conv >= 0 &&
        plain_number(ev.print->convs[static_cast<std::size_t>(s.pieces[0].conv)])) {
      s.number = s.pieces[0].conv;
      const auto& nodes = ev.print->nodes;
      const detail::Node* n = &nodes[static_cast<std::size_t>(ev.print->convs[static_cast<std::size_t>(s.number)].arg)];
      if (n->op == detail::Op::Cast) {
        s.cast_bits = n->bits;
        s.cast_signed = n->sign;
        n = &nodes[static_cast<std::size_t>(n->a)];
      }
      if (n->op == detail::Op::Field && ev.fields[static_cast<std::size_t>(n->field)].kind == EventField::Kind::Number) {
        s.field_of_number = n->field;
      } else {
        s.cast_bits = -1;
      }
    }
    d->slots_.push_back(std::move(s));
  }
  for (std::size_t k = 0; k < spec->fields.size(); ++k) {
    const int t = token_of_field[k];
    if (t < 0) {
      if (spec->fields[k].presence == Presence::Required) return nullptr;
      continue;
    }
    // A task name runs to " <next key>=": that must be the next token.
    if (spec->fields[k].kind == FieldKind::Comm && k + 1 < spec->fields.size()) {
      const int next = token_of_field[k + 1];
      if (next >= 0 && (next != t + 1 || tokens[static_cast<std::size_t>(next)].front().text[0] == '[')) return nullptr;
    }
  }
  return d;
}

}  // namespace timerlab
