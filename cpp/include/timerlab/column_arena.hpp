// column_arena.hpp — one memory block for all the dense columns of a parsed
// trace, and the allocator that hands out its pieces.
//
// Why: a trace of 100 k rows and 50 payload columns is some 35 MB of
// columns, allocated afresh by every read. In 4 KiB pages that is ~9 000
// page faults, each zeroing its page: measured, more time than decoding a
// trace.dat. One block, 2 MiB aligned and advised as a transparent huge
// page candidate (what NumPy does for its own arrays of 4 MiB and more),
// takes some twenty faults. Memory use is the same; the block is freed when
// the last column cut from it is (the NumPy arrays own their vectors, the
// vectors their allocator, the allocator the block).
//
// ArenaAllocator<T> default-constructed (no arena) is plain operator new, so
// a column vector can be built and grown as any other. Within an arena,
// deallocation is a no-op and the arena does not grow: FtraceParser::take()
// sizes it exactly, and a request beyond it falls back to operator new.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace timerlab {

class ColumnArena {
 public:
  explicit ColumnArena(std::size_t bytes);
  ~ColumnArena();
  ColumnArena(const ColumnArena&) = delete;
  ColumnArena& operator=(const ColumnArena&) = delete;

  // `bytes` from the block (64-byte aligned), or nullptr when it is full.
  void* take(std::size_t bytes);
  bool owns(const void* p) const {
    return p >= base_ && p < static_cast<const char*>(base_) + size_;
  }

  // Pieces are cache-line aligned: columns start on their own lines.
  static constexpr std::size_t round_up(std::size_t bytes) { return (bytes + 63) & ~std::size_t{63}; }

 private:
  void* base_ = nullptr;
  std::size_t size_ = 0;
  std::size_t used_ = 0;
};

template <class T>
class ArenaAllocator {
 public:
  using value_type = T;
  // A vector moved or swapped takes its block with it (never copies).
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using propagate_on_container_copy_assignment = std::true_type;

  ArenaAllocator() = default;
  explicit ArenaAllocator(std::shared_ptr<ColumnArena> arena) : arena_(std::move(arena)) {}
  template <class U>
  ArenaAllocator(const ArenaAllocator<U>& o) : arena_(o.arena()) {}

  T* allocate(std::size_t n) {
    if (arena_) {
      if (void* p = arena_->take(n * sizeof(T))) return static_cast<T*>(p);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t) {
    if (arena_ && arena_->owns(p)) return;  // freed with the arena
    ::operator delete(p);
  }

  const std::shared_ptr<ColumnArena>& arena() const { return arena_; }
  template <class U>
  bool operator==(const ArenaAllocator<U>& o) const {
    return arena_ == o.arena();
  }

 private:
  std::shared_ptr<ColumnArena> arena_;
};

template <class T>
using ColumnVector = std::vector<T, ArenaAllocator<T>>;

}  // namespace timerlab
