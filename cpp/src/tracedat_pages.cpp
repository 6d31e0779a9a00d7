// tracedat_pages.cpp — walking the ring-buffer pages of each CPU and merging
// the CPUs by time (see tracedat.hpp for the page and record layout).
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "timerlab/tracedat.hpp"
#include "tracedat_cursor.hpp"
#include "tracedat_decode.hpp"

namespace timerlab {

namespace {

constexpr std::uint32_t kTypePadding = 29, kTypeTimeExtend = 30, kTypeTimeStamp = 31;
constexpr std::uint64_t kMissedEvents = 1ull << 31, kMissedStored = 1ull << 30;
// An absolute time stamp carries 59 bits; the top bits come from the page.
constexpr std::uint64_t kTsMsb = 0xfull << 59;

}  // namespace

// The records of one CPU, in order.
class CpuPages {
 public:
  CpuPages(const TraceDat& dat, const DatBuffer& b, const DatCpu& cpu) : dat_(dat), cpu_(cpu.cpu) {
    owned_ = dat.cpu_data(b, cpu, data_);
    if (b.compressed) {
      data_ = owned_;
      inflated_ = true;
    }
    file_offset_ = cpu.offset;
    page_size_ = b.page_size;
    section_ = "CPU " + std::to_string(cpu.cpu) + " data" + (b.name.empty() ? "" : " of buffer " + b.name);
    if (data_.size() % page_size_ != 0) {
      fail(data_.size() - data_.size() % page_size_,
           std::to_string(data_.size()) + " bytes are not a whole number of " + std::to_string(page_size_) +
               "-byte pages: truncated?");
    }
  }

  // Advance to the next data record; false at the end.
  bool next() {
    for (;;) {
      if (pos_ >= end_) {
        if (!next_page()) return false;
        continue;
      }
      const std::uint64_t header = u32(pos_);
      const std::uint32_t type_len = dat_.layout_.big_endian ? static_cast<std::uint32_t>(header >> 27)
                                                             : static_cast<std::uint32_t>(header & 31);
      const std::uint64_t delta = dat_.layout_.big_endian ? header & ((1u << 27) - 1) : header >> 5;
      const std::size_t at = pos_;
      if (type_len == kTypePadding) {
        if (delta == 0) {  // the rest of the page is unused
          pos_ = end_;
          continue;
        }
        const std::uint64_t len = u32(at + 4);
        advance(at, 4 + len, "padding");
        continue;
      }
      if (type_len == kTypeTimeExtend || type_len == kTypeTimeStamp) {
        const std::uint64_t high = u32(at + 4);
        const std::uint64_t v = (high << 27) | delta;
        advance(at, 8, "time record");
        if (type_len == kTypeTimeExtend) {
          ts_ += v;
        } else {
          std::uint64_t abs = v;
          if (page_ts_ & kTsMsb) {
            abs |= page_ts_ & kTsMsb;
            if (abs < page_ts_) abs += 1ull << 59;
          }
          ts_ = abs;
        }
        continue;
      }
      std::uint64_t len = 0, data_at = 0;
      if (type_len == 0) {
        len = u32(at + 4);
        if (len < 4) fail(at, "record length " + std::to_string(len) + " (at least 4)");
        len -= 4;
        data_at = at + 8;
      } else {
        len = type_len * 4ull;
        data_at = at + 4;
      }
      advance(at, data_at - at + len, "record");
      ts_ += delta;
      record_ = data_.substr(data_at, len);
      record_offset_ = at;
      // trace-cmd report prints a page's loss before its first record: a
      // page without records shows none.
      loss_before_ = page_missed_;
      page_missed_ = false;
      return true;
    }
  }

  std::uint64_t ts() const { return ts_; }
  std::string_view record() const { return record_; }
  std::int32_t cpu() const { return cpu_; }
  // Whether trace-cmd prints a loss before this record; its size (-1: not stored).
  bool loss_before() const { return loss_before_; }
  std::int64_t page_lost() const { return page_lost_; }
  [[noreturn]] void fail(std::size_t pos, const std::string& why) const {
    std::string msg = why;
    std::uint64_t off = file_offset_ + pos;
    if (inflated_) {
      msg += " (byte " + std::to_string(pos) + " of the CPU's decompressed data, page " +
             std::to_string(pos / page_size_) + ")";
      off = file_offset_;
    }
    throw TraceDatError(section_, off, msg);
  }
  std::size_t record_offset() const { return record_offset_; }

 private:
  std::uint64_t u32(std::size_t at) const {
    if (at + 4 > end_) fail(at, "record header beyond the page's data (commit " + std::to_string(end_ - page_ - dat_.data_offset_) + ")");
    return num(at, 4);
  }
  std::uint64_t num(std::size_t at, int n) const {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      const int k = dat_.layout_.big_endian ? i : n - 1 - i;
      v = (v << 8) | static_cast<unsigned char>(data_[at + static_cast<std::size_t>(k)]);
    }
    return v;
  }
  void advance(std::size_t at, std::uint64_t n, const char* what) {
    if (n > end_ - at) {
      fail(at, std::string(what) + " of " + std::to_string(n) + " bytes runs past the page's data (" +
                   std::to_string(end_ - at) + " bytes left)");
    }
    pos_ = at + n;
  }
  bool next_page() {
    if (started_) page_ += page_size_;
    started_ = true;
    if (page_ >= data_.size()) return false;
    page_ts_ = num(page_, 8);
    ts_ = page_ts_;
    const std::uint64_t commit = num(page_ + dat_.commit_offset_, static_cast<int>(dat_.commit_size_));
    const std::uint64_t size = commit & ~(kMissedEvents | kMissedStored);
    const std::uint32_t room = page_size_ - dat_.data_offset_;
    if (size > room) {
      fail(page_ + dat_.commit_offset_, "page commit of " + std::to_string(size) + " bytes, the page holds " +
                                            std::to_string(room));
    }
    pos_ = page_ + dat_.data_offset_;
    end_ = pos_ + size;
    page_missed_ = (commit & kMissedEvents) != 0;
    page_lost_ = -1;
    if ((commit & kMissedEvents) && (commit & kMissedStored)) {
      if (size + dat_.layout_.long_size > room) fail(page_, "lost-event count beyond the page");
      page_lost_ = static_cast<std::int64_t>(num(end_, static_cast<int>(dat_.layout_.long_size)) & INT32_MAX);
    }
    return true;
  }

  const TraceDat& dat_;
  std::int32_t cpu_;
  std::string owned_;
  std::string_view data_;
  bool inflated_ = false;
  std::uint64_t file_offset_ = 0;
  std::uint32_t page_size_ = 0;
  std::string section_;
  bool started_ = false;
  std::size_t page_ = 0, pos_ = 0, end_ = 0, record_offset_ = 0;
  std::uint64_t page_ts_ = 0, ts_ = 0;
  std::string_view record_;
  bool loss_before_ = false;
  bool page_missed_ = false;  // the page's loss is not told yet
  std::int64_t page_lost_ = 0;  // -1: not stored
};

std::int64_t TraceDat::read(std::string_view name, FtraceParser& out, bool direct, const std::function<void()>& each,
                            std::int64_t rows) {
  const DatBuffer* buf = nullptr;
  for (const DatBuffer& b : buffers_) {
    if (b.name == name) buf = &b;
  }
  if (!buf) throw std::invalid_argument("no buffer named '" + std::string(name) + "'");
  std::vector<std::unique_ptr<CpuPages>> cpus;
  std::vector<std::uint8_t> live;
  std::int32_t max_cpu = -1;
  for (const DatCpu& c : buf->cpus) {
    cpus.push_back(std::make_unique<CpuPages>(*this, *buf, c));
    live.push_back(cpus.back()->next());
    max_cpu = std::max(max_cpu, c.cpu);
  }
  out.set_binary_header(std::max(nr_cpus_, max_cpu + 1));

  PrintContext ctx;
  ctx.layout = layout_;
  ctx.symbols = &symbols_;
  ctx.printk = &printk_;
  ctx.self = this;
  ctx.register_comm = [](void* self, std::int32_t pid, std::string_view comm) {
    static_cast<TraceDat*>(self)->register_comm(pid, comm);
  };
  std::string payload, why;
  // Per format, bound when its first record comes: most records skip the
  // payload text (tracedat_decode.hpp).
  std::vector<std::unique_ptr<const DirectDecoder>> decoders(raw_formats_.size());
  // Each format parsed when its first record comes (events_ is sized then:
  // the pointers stay valid).
  std::vector<const EventFormat*> formats(raw_formats_.size(), nullptr);
  std::vector<std::int32_t> codes(raw_formats_.size(), -1);  // event name codes in `out`
  DecodeScratch scratch;
  FtraceParser::Staging staged;
  std::int64_t n = 0;
  for (;;) {
    // The CPU with the earliest record; a tie goes to the first (lower) CPU.
    int best = -1;
    for (std::size_t i = 0; i < cpus.size(); ++i) {
      if (live[i] && (best < 0 || cpus[i]->ts() < cpus[static_cast<std::size_t>(best)]->ts())) best = static_cast<int>(i);
    }
    if (best < 0) break;
    CpuPages& p = *cpus[static_cast<std::size_t>(best)];
    const std::string_view rec = p.record();
    if (rec.size() < 2) p.fail(p.record_offset(), "a record of " + std::to_string(rec.size()) + " bytes has no event ID");
    const std::uint64_t id = layout_.big_endian
                                 ? (static_cast<std::uint64_t>(static_cast<unsigned char>(rec[0])) << 8) | static_cast<unsigned char>(rec[1])
                                 : (static_cast<std::uint64_t>(static_cast<unsigned char>(rec[1])) << 8) | static_cast<unsigned char>(rec[0]);
    if (id >= event_index_.size() || event_index_[id] < 0) {
      p.fail(p.record_offset(), "a record of event ID " + std::to_string(id) + ", which no format defines");
    }
    const auto raw = static_cast<std::size_t>(event_index_[id]);
    if (!formats[raw]) {
      formats[raw] = &format(raw);
      if (direct) decoders[raw] = DirectDecoder::bind(*formats[raw]);
    }
    const EventFormat& ev = *formats[raw];
    std::uint64_t pid64 = 0;
    if (!read_field(ev.fields[static_cast<std::size_t>(ev.pid_field)], rec, layout_, pid64)) {
      p.fail(p.record_offset(), ev.name + " record of " + std::to_string(rec.size()) + " bytes has no common_pid");
    }
    const auto pid = static_cast<std::int32_t>(pid64);
    // The task as trace-cmd names it, looked up before the record's own
    // plugin registers names.
    // (A view: the map's elements stay where they are as it grows.)
    const auto it = comms_.find(pid);
    const std::string_view task = pid == 0 ? "<idle>" : it != comms_.end() ? std::string_view(it->second) : "<...>";
    const auto ts = static_cast<std::int64_t>(p.ts() + static_cast<std::uint64_t>(ts_offset_));
    if (p.loss_before()) out.add_loss(p.cpu(), p.page_lost());
    if (decoders[raw] && decoders[raw]->decode(ev, rec, ctx, scratch, staged)) {
      out.add_staged(++n, ts, p.cpu(), pid, task, ev.name, staged, codes[raw]);
    } else {
      payload.clear();
      if (!render_payload(ev, rec, ctx, payload, why)) p.fail(p.record_offset(), why);
      out.add_record(++n, ts, p.cpu(), pid, task, ev.name, payload);
    }
    live[static_cast<std::size_t>(best)] = p.next();
    if (each && rows > 0 && static_cast<std::int64_t>(out.rows()) >= rows) {
      each();
      // A take() starts the parser's event names afresh: the cached codes are stale.
      std::fill(codes.begin(), codes.end(), -1);
    }
  }
  return n;
}

}  // namespace timerlab
