// topology.hpp — the machine: CPUs, NUMA nodes, SMT cores, last-level caches.
//
// Models what the timer code asks of the topology: the NUMA node of each CPU
// (the timer-migration hierarchy groups CPUs per node, kernel/time/
// timer_migration.c), the order CPUs come online (groups fill in bring-up
// order), and the scheduler domains SMT < LLC < NODE < SYSTEM that the pre-6.9
// push heuristic walks (get_nohz_timer_target, kernel/sched/core.c).
//
// Theory of operation
// -------------------
// A CPU belongs to one core (SMT siblings share it), one LLC and one node.
// Each of those is a sched-domain span, stored as a bitset so that "the
// lowest-numbered busy CPU of this span other than me" is a word-wise AND
// with the busy mask — the push heuristic asks that on every timer armed
// from an idle CPU, so it must not scan 4096 CPUs one by one.
//
//   SYSTEM  [0 ........................................ N-1]
//   NODE    [node 0 CPUs]               [node 1 CPUs]          (any numbering)
//   LLC     [llc 0] [llc 1]             [llc 2] [llc 3]
//   SMT     [c0][c1] ...                                        (siblings)
//
// Invariants (checked by the constructor, which throws std::invalid_argument
// naming the option): at least one CPU; every node id in [0, nr_nodes) and
// every node populated; a core never spans two LLCs, an LLC never spans two
// nodes; the bring-up order is a permutation of the CPUs.
//
// Simplifications vs. the kernel
//   * Domains are exactly these four levels (no NUMA distance levels beyond
//     "same node" / "system", no asymmetric capacities).
//   * Every CPU is possible and online (no hotplug after boot).
#pragma once

#include <cstdint>
#include <vector>

namespace timerlab {

// A set of CPUs as 64-bit words.
class CpuMask {
 public:
  CpuMask() = default;
  explicit CpuMask(unsigned nr_cpus) : words_((nr_cpus + 63) / 64, 0) {}
  void set(unsigned cpu) { words_[cpu / 64] |= std::uint64_t{1} << (cpu % 64); }
  void clear(unsigned cpu) { words_[cpu / 64] &= ~(std::uint64_t{1} << (cpu % 64)); }
  bool test(unsigned cpu) const { return (words_[cpu / 64] >> (cpu % 64)) & 1; }
  const std::vector<std::uint64_t>& words() const { return words_; }
  // Lowest CPU set in both this and `other`, other than `except`; -1 if none.
  int first_and_not(const CpuMask& other, unsigned except) const;

 private:
  std::vector<std::uint64_t> words_;
};

struct TopologySpec {
  unsigned nr_cpus = 1;
  unsigned nr_nodes = 1;
  std::vector<int> node_of_cpu;        // empty: contiguous blocks of CPUs per node
  unsigned smt = 1;                    // threads per core (consecutive CPUs of a node)
  unsigned llc_size = 0;               // CPUs per LLC (0: one LLC per node)
  std::vector<unsigned> bringup_order; // empty: 0, 1, ..., nr_cpus-1
};

class Topology {
 public:
  explicit Topology(const TopologySpec& spec);

  unsigned nr_cpus() const { return nr_cpus_; }
  unsigned nr_nodes() const { return nr_nodes_; }
  int node_of(unsigned cpu) const { return node_of_cpu_[cpu]; }
  int core_of(unsigned cpu) const { return core_of_cpu_[cpu]; }
  int llc_of(unsigned cpu) const { return llc_of_cpu_[cpu]; }
  const std::vector<unsigned>& bringup_order() const { return bringup_order_; }
  const std::vector<int>& node_of_cpu() const { return node_of_cpu_; }

  // The sched-domain spans of `cpu`, smallest first (SMT, LLC, NODE, SYSTEM);
  // a level whose span equals the one below it is skipped, as the kernel
  // degenerates such domains.
  const std::vector<const CpuMask*>& domains_of(unsigned cpu) const { return domains_of_[cpu]; }

 private:
  unsigned nr_cpus_, nr_nodes_;
  std::vector<int> node_of_cpu_, core_of_cpu_, llc_of_cpu_;
  std::vector<unsigned> bringup_order_;
  std::vector<CpuMask> core_mask_, llc_mask_, node_mask_;
  CpuMask system_mask_;
  std::vector<std::vector<const CpuMask*>> domains_of_;
};

}  // namespace timerlab
