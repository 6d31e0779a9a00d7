// hrtimer.cpp — the hrtimer model (see hrtimer.hpp; kernel/time/hrtimer.c):
// the timerqueue's queries, and the model for any HrtimerHost (the member
// functions are in hrtimer_impl.hpp).
#include "timerlab/hrtimer.hpp"

#include <algorithm>

#include "hrtimer_impl.hpp"

namespace timerlab {

// ---------------------------------------------------------------------------
// The timerqueue

std::int64_t HrtimerQueue::first_expires_without(const std::vector<Hrtimer>& pool, HrtimerId exclude) const {
  if (heap_.empty()) return kHrtimerNever;
  if (heap_[0] != exclude) return pool[heap_[0]].expires;
  // The next in order is one of the root's children.
  std::int64_t e = kHrtimerNever;
  for (std::size_t c = 1; c <= 2 && c < heap_.size(); ++c) e = std::min(e, pool[heap_[c]].expires);
  return e;
}

std::string HrtimerQueue::check(const std::vector<Hrtimer>& pool) const {
  for (std::size_t i = 0; i < heap_.size(); ++i) {
    if (pool[heap_[i]].heap_pos != i) return "hrtimer " + std::to_string(heap_[i]) + " has a stale queue position";
    if (i > 0 && less(pool, heap_[i], heap_[(i - 1) / 2])) return "timerqueue out of order";
  }
  return {};
}

template class HrtimersT<HrtimerHost>;

}  // namespace timerlab
