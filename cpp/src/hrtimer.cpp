// hrtimer.cpp — the hrtimer model (see hrtimer.hpp; kernel/time/hrtimer.c):
// the timerqueue's queries, and the model for any HrtimerHost (the member
// functions are in hrtimer_impl.hpp).
#include "timerlab/hrtimer.hpp"

#include <algorithm>

#include "hrtimer_impl.hpp"

namespace timerlab {

// ---------------------------------------------------------------------------
// The timerqueue

std::int64_t HrtimerQueue::first_expires_without(HrtimerId exclude) const {
  if (heap_.empty()) return kHrtimerNever;
  if (heap_[0].id != exclude) return heap_[0].expires;
  // The next in order is one of the root's children.
  std::int64_t e = kHrtimerNever;
  for (std::size_t c = 1; c <= 2 && c < heap_.size(); ++c) e = std::min(e, heap_[c].expires);
  return e;
}

std::string HrtimerQueue::check(const std::vector<Hrtimer>& pool) const {
  for (std::size_t i = 0; i < heap_.size(); ++i) {
    const Entry& e = heap_[i];
    if (pool[e.id].heap_pos != i) return "hrtimer " + std::to_string(e.id) + " has a stale queue position";
    const Hrtimer& h = pool[e.id];
    if (h.expires != e.expires || h.softexpires != e.softexpires || h.seq != e.seq) {
      return "hrtimer " + std::to_string(e.id) + " changed its key while queued";
    }
    if (i > 0 && less(e, heap_[(i - 1) / 2])) return "timerqueue out of order";
  }
  return {};
}

template class HrtimersT<HrtimerHost>;

}  // namespace timerlab
