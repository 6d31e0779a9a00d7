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
  if (n_ == 0) return kHrtimerNever;
  if (heap_[0].id != exclude) return heap_[0].expires;
  // The next in order is one of the root's children.
  std::int64_t e = kHrtimerNever;
  for (std::uint32_t c = 1; c <= 2 && c < n_; ++c) e = std::min(e, heap_[c].expires);
  return e;
}

void HrtimerQueue::grow() {
  // Twice the places, the old ones copied (from inline_ the first time).
  const std::uint32_t cap = cap_ * 2;
  std::unique_ptr<Entry[]> bigger(new Entry[cap]);
  std::copy(heap_, heap_ + n_, bigger.get());
  spill_ = std::move(bigger);
  heap_ = spill_.get();
  cap_ = cap;
}

std::string HrtimerQueue::check(const std::vector<Hrtimer>& pool) const {
  for (std::uint32_t i = 0; i < n_; ++i) {
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
