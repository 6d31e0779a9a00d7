// cpu_queue.hpp — the engine's queue of CPUs: which CPU has the earliest
// next source time, ties to the lower CPU. Simulator machinery, no kernel
// model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace timerlab {

// A tournament (winner) tree: leaf c holds CPU c's time, every inner node
// the winner of its two children, the root the CPU to run next. Each step
// of the event loop re-keys one CPU (nearly always the root's), which costs
// one compare per level on the way up and no data-dependent branch; a
// heap's sift-down compares several children per level and mispredicts
// where the key stops (at 256 CPUs the 4-ary heap it replaces was a fifth
// of the engine's instructions and half of its branch misses).
class CpuQueue {
 public:
  explicit CpuQueue(unsigned n) {
    while (leaves_ < n) leaves_ *= 2;
    // Padding leaves never win: they are never due and lose ties (they
    // come after every CPU).
    node_.resize(2 * leaves_);
    for (std::size_t c = 0; c < leaves_; ++c) node_[leaves_ + c] = {INT64_MAX, static_cast<unsigned>(c)};
    for (std::size_t i = leaves_ - 1; i >= 1; --i) node_[i] = node_[2 * i];
  }

  unsigned top() const { return node_[1].cpu; }
  std::int64_t top_time() const { return node_[1].t; }

  void update(unsigned cpu, std::int64_t t) {
    // The winner so far stays in registers: each level loads only the
    // sibling, so the chain of dependent operations per level is a load, a
    // compare and a select (reading back the node just written would put a
    // store-to-load forward on it). Masks rather than ?: keep the compiler
    // from branching.
    std::size_t i = leaves_ + cpu;
    std::int64_t win_t = t;
    unsigned win_cpu = cpu;
    node_[i] = {t, cpu};
    for (; i > 1; i /= 2) {
      // Every CPU under a left child is lower than those under its right
      // sibling: a left sibling wins a tie in time, a right one loses it.
      const Node& sib = node_[i ^ 1];
      const bool take = (sib.t < win_t) | ((sib.t == win_t) & static_cast<bool>(i & 1));
      const std::int64_t mask = -static_cast<std::int64_t>(take);
      win_t ^= (win_t ^ sib.t) & mask;
      win_cpu ^= (win_cpu ^ sib.cpu) & static_cast<unsigned>(mask);
      node_[i / 2] = {win_t, win_cpu};
    }
  }

 private:
  struct Node {
    std::int64_t t;
    unsigned cpu;
  };
  std::size_t leaves_ = 1;  // a power of two >= the CPUs
  std::vector<Node> node_;  // node_[1] the root, node_[i]'s children 2i and 2i + 1
};

}  // namespace timerlab
