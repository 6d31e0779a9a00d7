// topology.cpp — see topology.hpp.
#include "timerlab/topology.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "timerlab/timer_list.hpp"

namespace timerlab {

int CpuMask::first_and_not(const CpuMask& other, unsigned except) const {
  const std::size_t n = std::min(words_.size(), other.words_.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t w = words_[i] & other.words_[i];
    if (except / 64 == i) w &= ~(std::uint64_t{1} << (except % 64));
    if (w) return static_cast<int>(i * 64 + static_cast<std::size_t>(std::countr_zero(w)));
  }
  return -1;
}

namespace {

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

// Ids of `chunk`-sized runs of each node's CPUs (in CPU order), numbered
// across nodes: used for SMT cores and LLCs.
std::vector<int> chunk_ids(const std::vector<int>& node_of_cpu, unsigned nr_nodes, unsigned chunk) {
  std::vector<int> ids(node_of_cpu.size());
  int next = 0;
  for (unsigned node = 0; node < nr_nodes; ++node) {
    unsigned in_chunk = 0;
    for (std::size_t cpu = 0; cpu < node_of_cpu.size(); ++cpu) {
      if (node_of_cpu[cpu] != static_cast<int>(node)) continue;
      if (in_chunk == chunk) {
        in_chunk = 0;
        ++next;
      }
      ids[cpu] = next;
      ++in_chunk;
    }
    ++next;
  }
  return ids;
}

std::vector<CpuMask> masks_of(const std::vector<int>& id_of_cpu, unsigned nr_cpus) {
  const int n = id_of_cpu.empty() ? 0 : *std::max_element(id_of_cpu.begin(), id_of_cpu.end()) + 1;
  std::vector<CpuMask> masks(static_cast<std::size_t>(n), CpuMask(nr_cpus));
  for (unsigned cpu = 0; cpu < nr_cpus; ++cpu) masks[static_cast<std::size_t>(id_of_cpu[cpu])].set(cpu);
  return masks;
}

}  // namespace

Topology::Topology(const TopologySpec& spec) : nr_cpus_(spec.nr_cpus), nr_nodes_(spec.nr_nodes) {
  if (nr_cpus_ < 1) bad("cpus must be at least 1, got " + std::to_string(nr_cpus_));
  if (nr_cpus_ > TIMER_CPUMASK + 1) bad("cpus=" + std::to_string(nr_cpus_) + " exceeds the kernel's 2^18 CPUs");
  if (nr_nodes_ < 1) bad("nodes must be at least 1, got " + std::to_string(nr_nodes_));
  if (nr_nodes_ > nr_cpus_) {
    bad("nodes=" + std::to_string(nr_nodes_) + " exceeds cpus=" + std::to_string(nr_cpus_) +
        ": every node needs a CPU");
  }
  if (spec.node_of_cpu.empty()) {
    // Contiguous, as even as possible: CPU c on node floor(c * nodes / cpus).
    node_of_cpu_.resize(nr_cpus_);
    for (unsigned c = 0; c < nr_cpus_; ++c) {
      node_of_cpu_[c] = static_cast<int>(std::uint64_t{c} * nr_nodes_ / nr_cpus_);
    }
  } else {
    if (spec.node_of_cpu.size() != nr_cpus_) {
      bad("node_of_cpu has " + std::to_string(spec.node_of_cpu.size()) + " entries for cpus=" +
          std::to_string(nr_cpus_));
    }
    node_of_cpu_ = spec.node_of_cpu;
  }
  std::vector<unsigned> per_node(nr_nodes_, 0);
  for (unsigned c = 0; c < nr_cpus_; ++c) {
    const int n = node_of_cpu_[c];
    if (n < 0 || n >= static_cast<int>(nr_nodes_)) {
      bad("node_of_cpu[" + std::to_string(c) + "]=" + std::to_string(n) + " is not a node in [0, " +
          std::to_string(nr_nodes_) + ")");
    }
    ++per_node[static_cast<std::size_t>(n)];
  }
  for (unsigned n = 0; n < nr_nodes_; ++n) {
    if (!per_node[n]) bad("node " + std::to_string(n) + " has no CPU in node_of_cpu");
  }
  if (spec.smt < 1) bad("smt must be at least 1, got " + std::to_string(spec.smt));
  const unsigned llc = spec.llc_size ? spec.llc_size : nr_cpus_;
  if (llc % spec.smt) {
    // Named by what the user set: with llc_size=0 the LLC is cut from all CPUs.
    bad(spec.llc_size ? "llc_size=" + std::to_string(llc) + " is not a multiple of smt=" + std::to_string(spec.smt) +
                            ": a core would span two LLCs"
                      : "smt=" + std::to_string(spec.smt) + " does not divide cpus=" + std::to_string(nr_cpus_) +
                            ": the CPUs form whole cores of smt threads");
  }
  core_of_cpu_ = chunk_ids(node_of_cpu_, nr_nodes_, spec.smt);
  llc_of_cpu_ = chunk_ids(node_of_cpu_, nr_nodes_, llc);

  if (spec.bringup_order.empty()) {
    bringup_order_.resize(nr_cpus_);
    for (unsigned c = 0; c < nr_cpus_; ++c) bringup_order_[c] = c;
  } else {
    std::vector<bool> seen(nr_cpus_, false);
    if (spec.bringup_order.size() != nr_cpus_) bad("bringup_order must list every CPU once");
    for (unsigned c : spec.bringup_order) {
      if (c >= nr_cpus_ || seen[c]) bad("bringup_order must list every CPU once");
      seen[c] = true;
    }
    bringup_order_ = spec.bringup_order;
  }

  core_mask_ = masks_of(core_of_cpu_, nr_cpus_);
  llc_mask_ = masks_of(llc_of_cpu_, nr_cpus_);
  node_mask_ = masks_of(node_of_cpu_, nr_cpus_);
  system_mask_ = CpuMask(nr_cpus_);
  for (unsigned c = 0; c < nr_cpus_; ++c) system_mask_.set(c);
  domains_of_.resize(nr_cpus_);
  for (unsigned c = 0; c < nr_cpus_; ++c) {
    const CpuMask* spans[] = {&core_mask_[static_cast<std::size_t>(core_of_cpu_[c])],
                              &llc_mask_[static_cast<std::size_t>(llc_of_cpu_[c])],
                              &node_mask_[static_cast<std::size_t>(node_of_cpu_[c])], &system_mask_};
    const CpuMask* below = nullptr;
    for (const CpuMask* s : spans) {
      unsigned members = 0;
      for (std::uint64_t w : s->words()) members += static_cast<unsigned>(std::popcount(w));
      // A single-CPU span holds no other CPU to ask; a span equal to the one
      // below adds nothing (the kernel removes such degenerate domains).
      if (members == 1 || (below && below->words() == s->words())) continue;
      domains_of_[c].push_back(s);
      below = s;
    }
  }
}

}  // namespace timerlab
