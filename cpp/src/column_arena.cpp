// column_arena.cpp — the block behind a parsed trace's columns (see
// column_arena.hpp).
#include "timerlab/column_arena.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace timerlab {

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
// Below this a huge page would be mostly empty (NumPy's threshold too).
constexpr std::size_t kAdviseFrom = std::size_t{4} << 20;

}  // namespace

ColumnArena::ColumnArena(std::size_t bytes) {
  if (bytes == 0) return;
  const std::size_t align = bytes >= kAdviseFrom ? kHugePage : 64;
  const std::size_t size = (bytes + align - 1) / align * align;
  base_ = std::aligned_alloc(align, size);
  if (!base_) throw std::bad_alloc();
  size_ = size;
#if defined(MADV_HUGEPAGE)
  // Advice only: without transparent huge pages it changes nothing.
  if (align == kHugePage) madvise(base_, size_, MADV_HUGEPAGE);
#endif
}

ColumnArena::~ColumnArena() { std::free(base_); }

void* ColumnArena::take(std::size_t bytes) {
  const std::size_t n = round_up(bytes);
  if (n > size_ - used_) return nullptr;
  void* p = static_cast<char*>(base_) + used_;
  used_ += n;
  return p;
}

}  // namespace timerlab
