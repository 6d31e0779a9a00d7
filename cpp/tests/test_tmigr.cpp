// Tests of the timer-migration hierarchy model (tmigr.hpp): the shape of the
// hierarchy (kernel-timers.md §4.2), the regression scenarios of §9 (items
// 1, 2, 3, 4 and 11) with the outcome the reference states, and a randomized
// run of idle/active transitions checking the invariants of §4.9.
//
// The model is driven only through its per-CPU entry points. The timer side
// it needs for remote expiry (TmigrHost) is made of real timerlab parts: one
// TimerBase per CPU standing for that CPU's BASE_GLOBAL, all in one
// TimerPool, timers armed with internal_add_timer and expired with
// run_timers. Time: HZ=1000, jiffies start at the kernel's INITIAL_JIFFIES
// value J0 and ns = (jiffies - J0) * TICK_NSEC, so `now` of the hierarchy is
// always the ns of a jiffies update, as get_jiffies_update() gives it.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <iostream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "timerlab/tmigr.hpp"
#include "timerlab/topology.hpp"
#include "timerlab/wheel.hpp"

using namespace timerlab;

namespace {

constexpr unsigned kHz = 1000;
constexpr std::uint64_t TICK_NSEC = 1'000'000'000ull / kHz;
constexpr jiffies_t kJ0 = (jiffies_t{1} << 32) - 300 * kHz;  // INITIAL_JIFFIES

constexpr std::uint64_t ns_of(jiffies_t j) { return (j - kJ0) * TICK_NSEC; }

TopologySpec spec_of(unsigned cpus, unsigned nodes = 1, std::vector<int> node_of_cpu = {},
                     std::vector<unsigned> bringup = {}) {
  TopologySpec s;
  s.nr_cpus = cpus;
  s.nr_nodes = nodes;
  s.node_of_cpu = std::move(node_of_cpu);
  s.bringup_order = std::move(bringup);
  return s;
}

std::vector<int> interleaved(unsigned cpus, unsigned nodes) {
  std::vector<int> n(cpus);
  for (unsigned c = 0; c < cpus; ++c) n[c] = static_cast<int>(c % nodes);
  return n;
}

// Records which CPUs tmigr_handle_remote_cpu expired, in order.
class RemoteCpuLog final : public TmigrTracer {
 public:
  void handle_remote_cpu(const Tmigr&, unsigned cpu) override { cpus.push_back(cpu); }
  std::vector<unsigned> cpus;
};

struct Fired {
  TimerId timer;
  unsigned base_cpu;  // whose BASE_GLOBAL held it
  unsigned ran_on;    // the CPU whose softirq ran it
  jiffies_t jiffies;  // when
  jiffies_t baseclk;  // the bucket it was collected from
  jiffies_t bucket;   // its bucket expiry when it was armed
};

// A machine: topology, hierarchy, and one global timer base per CPU. It is
// the TmigrHost of the hierarchy. Every mutating call into the hierarchy is
// followed by check_invariants().
class Rig : public TmigrHost {
 public:
  explicit Rig(const TopologySpec& spec, TmigrSetup setup = TmigrSetup::fixed, TmigrTracer* tracer = nullptr)
      : topo_(spec), tm_(topo_, setup, tracer), hw_(topo_.nr_cpus(), KTIME_MAX), idle_(topo_.nr_cpus(), false) {
    bases_.reserve(topo_.nr_cpus());
    for (unsigned c = 0; c < topo_.nr_cpus(); ++c) bases_.emplace_back(pool_, kHz, kJ0, c);
  }

  Tmigr& tm() { return tm_; }
  const Tmigr& tm() const { return tm_; }
  unsigned ncpus() const { return topo_.nr_cpus(); }
  jiffies_t jiffies() const { return jiffies_; }
  std::uint64_t now() const { return ns_of(jiffies_); }
  bool idle(unsigned cpu) const { return idle_[cpu]; }
  // What the CPU programmed in its clock event device when it last went
  // idle or re-evaluated its idle sleep (the value the hierarchy returned).
  std::uint64_t hw(unsigned cpu) const { return hw_[cpu]; }
  const std::vector<Fired>& fired() const { return fired_; }

  std::string invariants() const {
    const std::string s = tm_.check_invariants();
    return s.empty() ? s : "hierarchy: " + s;
  }

  // --- the timer side -----------------------------------------------------

  // mod_timer of a new global timer on `cpu` for jiffies + delta: forward
  // the base clock, enqueue. Returns the bucket expiry.
  jiffies_t arm(unsigned cpu, jiffies_t delta) {
    TimerBase& b = bases_[cpu];
    const TimerId t = pool_.alloc(0, cpu);
    pool_[t].expires = jiffies_ + delta;
    b.forward_timer_base(jiffies_);
    const EnqueueResult r = b.internal_add_timer(t);
    EXPECT_EQ(b.check_invariants(), "") << "base of CPU " << cpu;
    if (bucket_of_.size() <= t) bucket_of_.resize(t + 1);
    bucket_of_[t] = r.bucket_expiry;
    ++armed_;
    return r.bucket_expiry;
  }

  // The first global event of a CPU in ns (tevt.global), KTIME_MAX if none.
  std::uint64_t next_global_ns(unsigned cpu) {
    TimerBase& b = bases_[cpu];
    jiffies_t n = b.next_timer_interrupt(jiffies_);
    if (!b.timers_pending()) return KTIME_MAX;
    if (time_before(n, jiffies_)) n = jiffies_;
    return ns_of(n);
  }

  // __run_timers of `base_cpu`'s global base, on the current CPU.
  std::size_t run_base(unsigned base_cpu) {
    const std::size_t n = bases_[base_cpu].run_timers(jiffies_, [&](TimerId t, jiffies_t baseclk) {
      fired_.push_back({t, base_cpu, current_cpu_, jiffies_, baseclk, bucket_of_[t]});
      pool_.free(t);
    });
    if (n) EXPECT_EQ(bases_[base_cpu].check_invariants(), "") << "base of CPU " << base_cpu;
    return n;
  }

  void timer_expire_remote(unsigned cpu) override {
    ++remote_expiries_;
    run_base(cpu);
  }
  std::uint64_t fetch_next_global_remote(unsigned cpu) override { return next_global_ns(cpu); }

  // --- the CPUs -------------------------------------------------------------

  // Tick stop on idle entry: hand the first global event to the hierarchy
  // (no LOCAL timers in these tests, so the global one is always first).
  std::uint64_t go_idle(unsigned cpu) {
    EXPECT_FALSE(idle_[cpu]) << "CPU " << cpu;
    const std::uint64_t ret = tm_.tmigr_cpu_deactivate(cpu, next_global_ns(cpu));
    idle_[cpu] = true;
    hw_[cpu] = ret;
    EXPECT_EQ(invariants(), "") << "after CPU " << cpu << " went idle";
    return ret;
  }

  // Idle exit (timer_clear_idle).
  void wake(unsigned cpu) {
    EXPECT_TRUE(idle_[cpu]) << "CPU " << cpu;
    tm_.tmigr_cpu_activate(cpu);
    idle_[cpu] = false;
    hw_[cpu] = KTIME_MAX;
    EXPECT_EQ(invariants(), "") << "after CPU " << cpu << " woke";
  }

  // The idle loop re-evaluates its sleep with the tick stopped
  // (tick_nohz_next_event -> tmigr_cpu_new_timer) and reprograms.
  std::uint64_t idle_reevaluate(unsigned cpu) {
    EXPECT_TRUE(idle_[cpu]) << "CPU " << cpu;
    const std::uint64_t ret = tm_.tmigr_cpu_new_timer(cpu, next_global_ns(cpu));
    hw_[cpu] = ret;
    EXPECT_EQ(invariants(), "") << "after CPU " << cpu << " re-evaluated its idle sleep";
    return ret;
  }

  // The tick (or, for an idle CPU, its programmed wakeup) on `cpu` at the
  // current jiffies: run_local_timers raises the timer softirq if the CPU's
  // own base is due or tmigr_requires_handle_remote says so; the softirq
  // runs the own base, then tmigr_handle_remote. Returns the number of CPUs
  // whose timers were expired remotely.
  unsigned tick(unsigned cpu) {
    const bool own_due = time_after_eq(jiffies_, bases_[cpu].next_expiry());
    const bool remote = tm_.tmigr_requires_handle_remote(cpu, now());
    if (!own_due && !remote) return 0;
    current_cpu_ = cpu;
    run_base(cpu);
    const unsigned n = tm_.tmigr_handle_remote(cpu, now(), *this);
    EXPECT_EQ(invariants(), "") << "after the timer softirq of CPU " << cpu;
    return n;
  }

  // An idle CPU's programmed wakeup fired: tick, then back to idle sleep.
  unsigned idle_wakeup(unsigned cpu) {
    const unsigned n = tick(cpu);
    idle_reevaluate(cpu);
    return n;
  }

  void set_jiffies(jiffies_t j) { jiffies_ = j; }

  std::size_t armed_count() const { return armed_; }
  std::size_t remote_expiries() const { return remote_expiries_; }

 private:
  Topology topo_;
  Tmigr tm_;
  TimerPool pool_;
  std::vector<TimerBase> bases_;
  std::vector<std::uint64_t> hw_;
  std::vector<bool> idle_;
  std::vector<Fired> fired_;
  std::vector<jiffies_t> bucket_of_;  // by timer id (ids are reused once fired)
  std::size_t armed_ = 0;
  jiffies_t jiffies_ = kJ0;
  unsigned current_cpu_ = 0;
  std::size_t remote_expiries_ = 0;
};

// ---------------------------------------------------------------------------
// Structure of the hierarchy.

// The structural facts every built hierarchy must satisfy; returns "" or the
// first violation. With `allow_forest`, several parentless groups are
// accepted if they all sit on the last computed level: the 6.12 set-up stops
// there whatever the level holds (see Item11ForestBeforeTheFix).
std::string check_structure(const Tmigr& tm, const Topology& topo, bool allow_forest = false) {
  std::ostringstream err;
  const auto& groups = tm.groups();
  const unsigned ncpus = topo.nr_cpus();
  if (ncpus == 1) {
    if (!groups.empty() || tm.hierarchy_levels() != 0) return "a uniprocessor has no hierarchy";
    return "";
  }
  std::vector<std::uint32_t> child_masks(groups.size(), 0);  // OR of the children's groupmasks
  std::vector<unsigned> child_count(groups.size(), 0);
  for (unsigned c = 0; c < ncpus; ++c) {
    const TmigrCpu& tmc = tm.cpu(c);
    if (tmc.tmgroup < 0 || tmc.tmgroup >= static_cast<int>(groups.size())) {
      err << "CPU " << c << " has no level-0 group";
      return err.str();
    }
    const TmigrGroup& g = groups[static_cast<unsigned>(tmc.tmgroup)];
    if (g.level != 0) {
      err << "CPU " << c << " hangs from a level-" << g.level << " group";
      return err.str();
    }
    if (std::popcount(tmc.groupmask) != 1 || (child_masks[static_cast<unsigned>(tmc.tmgroup)] & tmc.groupmask)) {
      err << "CPU " << c << " has groupmask " << int(tmc.groupmask) << " (not one bit, or taken)";
      return err.str();
    }
    child_masks[static_cast<unsigned>(tmc.tmgroup)] |= tmc.groupmask;
    ++child_count[static_cast<unsigned>(tmc.tmgroup)];
    if (!tmc.online || tmc.idle) {
      err << "CPU " << c << " is not online and active after boot";
      return err.str();
    }
  }
  int roots = 0;
  unsigned top_level = 0;
  for (unsigned gi = 0; gi < groups.size(); ++gi) {
    const TmigrGroup& g = groups[gi];
    top_level = std::max(top_level, g.level);
    if (g.level >= tm.hierarchy_levels()) {
      err << "group " << gi << " at level " << g.level << " of " << tm.hierarchy_levels();
      return err.str();
    }
    if (g.parent < 0) {
      ++roots;
      if (static_cast<int>(gi) != tm.root() && !(allow_forest && g.level + 1 == tm.hierarchy_levels())) {
        err << "group " << gi << " (level " << g.level << ") has no parent but the root is " << tm.root();
        return err.str();
      }
      continue;
    }
    const TmigrGroup& p = groups[static_cast<unsigned>(g.parent)];
    if (p.level != g.level + 1) {
      err << "group " << gi << " (level " << g.level << ") has a parent at level " << p.level;
      return err.str();
    }
    if (std::popcount(g.groupmask) != 1 || (child_masks[static_cast<unsigned>(g.parent)] & g.groupmask)) {
      err << "group " << gi << " has groupmask " << int(g.groupmask) << " (not one bit, or taken)";
      return err.str();
    }
    child_masks[static_cast<unsigned>(g.parent)] |= g.groupmask;
    ++child_count[static_cast<unsigned>(g.parent)];
  }
  if (roots < 1 || (roots > 1 && !allow_forest)) {
    err << roots << " groups without a parent";
    return err.str();
  }
  if (roots == 1 && groups[static_cast<unsigned>(tm.root())].level != top_level) return "the root is not the top group";
  for (unsigned gi = 0; gi < groups.size(); ++gi) {
    const TmigrGroup& g = groups[gi];
    if (g.num_children > TMIGR_CHILDREN_PER_GROUP || g.num_children != child_count[gi] ||
        child_masks[gi] != (1u << g.num_children) - 1) {
      err << "group " << gi << ": num_children " << g.num_children << ", " << child_count[gi]
          << " children, masks " << child_masks[gi];
      return err.str();
    }
    // After boot every CPU is active, so every child is active in its parent.
    if (g.state.active != child_masks[gi] || !(g.state.migrator & g.state.active)) {
      err << "group " << gi << ": active " << int(g.state.active) << " migrator " << int(g.state.migrator)
          << " after boot";
      return err.str();
    }
    if (tm.cpus_below(static_cast<int>(gi)).empty()) {
      err << "group " << gi << " has no CPU below it";
      return err.str();
    }
  }
  return "";
}

// Groups per level, bottom up.
std::vector<unsigned> groups_per_level(const Tmigr& tm) {
  std::vector<unsigned> n;
  for (const TmigrGroup& g : tm.groups()) {
    if (n.size() <= g.level) n.resize(g.level + 1, 0);
    ++n[g.level];
  }
  return n;
}

// Whether every group below the crossnode level holds CPUs of one node only
// (and is labelled with that node).
bool node_pure_below_crossnode(const Tmigr& tm, const Topology& topo) {
  for (unsigned gi = 0; gi < tm.groups().size(); ++gi) {
    const TmigrGroup& g = tm.groups()[gi];
    if (g.level >= tm.crossnode_level()) continue;
    for (unsigned c : tm.cpus_below(static_cast<int>(gi))) {
      if (topo.node_of(c) != g.numa_node) return false;
    }
  }
  return true;
}

struct LevelCase {
  unsigned cpus, nodes, levels, crossnode;
  std::vector<unsigned> per_level;  // groups per level after a full boot (empty: not checked)
};

TEST(TmigrTopology, LevelsAndCrossnodeOfReference4_2) {
  const LevelCase cases[] = {
      {2, 1, 1, 1, {1}},
      {4, 1, 1, 1, {1}},
      {8, 1, 1, 1, {1}},
      {9, 1, 2, 2, {2, 1}},
      {24, 1, 2, 2, {3, 1}},
      {64, 1, 2, 2, {8, 1}},
      {65, 1, 3, 3, {9, 2, 1}},
      {512, 1, 3, 3, {64, 8, 1}},
      {513, 1, 4, 4, {65, 9, 2, 1}},
      {16, 2, 2, 1, {2, 1}},             // 2 nodes x 8
      {48, 2, 3, 2, {6, 2, 1}},          // 2 nodes x 24: the kernel's own example
      {256, 2, 4, 3, {32, 4, 2, 1}},     // 2 nodes x 128
      {72, 9, 3, 1, {9, 2, 1}},          // 9 nodes x 8: two levels to join the nodes
      {1, 1, 0, 0, {}},                  // uniprocessor: no hierarchy
  };
  for (const auto& k : cases) {
    for (TmigrSetup setup : {TmigrSetup::v6_12, TmigrSetup::fixed}) {
      SCOPED_TRACE(::testing::Message() << k.cpus << " CPUs, " << k.nodes << " nodes, setup "
                                        << static_cast<int>(setup));
      const Topology topo(spec_of(k.cpus, k.nodes));
      const Tmigr tm(topo, setup);
      EXPECT_EQ(tm.hierarchy_levels(), k.levels);
      EXPECT_EQ(tm.crossnode_level(), k.crossnode);
      EXPECT_EQ(tm.check_invariants(), "");
      EXPECT_EQ(check_structure(tm, topo), "");
      EXPECT_EQ(groups_per_level(tm), k.per_level);
      // Contiguous node blocks are node-pure with or without the 2025 fix.
      EXPECT_TRUE(node_pure_below_crossnode(tm, topo));
    }
  }
}

// The kernel's example (timer_migration.c, 2 nodes x 24 CPUs): GRP0:0-2 hold
// CPUs 0-23 below GRP1:0 (node 0), GRP0:3-5 CPUs 24-47 below GRP1:1 (node 1),
// and GRP2:0 joins the nodes.
TEST(TmigrTopology, TwoNodesOf24CpusMatchTheKernelDiagram) {
  for (TmigrSetup setup : {TmigrSetup::v6_12, TmigrSetup::fixed}) {
    const Topology topo(spec_of(48, 2));
    const Tmigr tm(topo, setup);
    ASSERT_EQ(check_structure(tm, topo), "");
    const auto& groups = tm.groups();
    const TmigrGroup& root = groups[static_cast<unsigned>(tm.root())];
    EXPECT_EQ(root.level, 2u);
    EXPECT_EQ(root.numa_node, -1);  // NUMA_NO_NODE at and above the crossnode level
    EXPECT_EQ(root.num_children, 2u);
    for (unsigned c = 0; c < 48; ++c) {
      const int g0 = tm.cpu(c).tmgroup;
      const TmigrGroup& lvl0 = groups[static_cast<unsigned>(g0)];
      // CPUs fill level-0 groups in bring-up order: 0-7, 8-15, ...
      EXPECT_EQ(tm.cpus_below(g0).front(), c / 8 * 8) << c;
      EXPECT_EQ(tm.cpu(c).groupmask, 1u << (c % 8)) << c;
      EXPECT_EQ(lvl0.numa_node, static_cast<int>(c / 24)) << c;
      const TmigrGroup& lvl1 = groups[static_cast<unsigned>(lvl0.parent)];
      EXPECT_EQ(lvl1.level, 1u);
      EXPECT_EQ(lvl1.numa_node, static_cast<int>(c / 24)) << c;
      EXPECT_EQ(lvl1.parent, tm.root());
      EXPECT_EQ(tm.cpus_below(lvl0.parent).size(), 24u);
    }
  }
}

// A new top level takes the old top as child 0 (its mask pre-set to BIT(0))
// and the new CPU's chain as child 1; the old top is active in it.
TEST(TmigrTopology, OldTopBecomesChildZeroOfTheNewTop) {
  for (TmigrSetup setup : {TmigrSetup::v6_12, TmigrSetup::fixed}) {
    const Topology topo(spec_of(9));
    const Tmigr tm(topo, setup);
    ASSERT_EQ(check_structure(tm, topo), "");
    const int first = tm.cpu(0).tmgroup, second = tm.cpu(8).tmgroup;
    const auto& g = tm.groups();
    EXPECT_EQ(g[static_cast<unsigned>(first)].groupmask, 1u);
    EXPECT_EQ(g[static_cast<unsigned>(second)].groupmask, 2u);
    EXPECT_EQ(g[static_cast<unsigned>(first)].parent, tm.root());
    EXPECT_EQ(g[static_cast<unsigned>(second)].parent, tm.root());
    // CPU 0 activated first, so its group became migrator of the top.
    EXPECT_EQ(g[static_cast<unsigned>(tm.root())].state.migrator, 1u);
    EXPECT_EQ(g[static_cast<unsigned>(tm.root())].state.active, 3u);
  }
}

TEST(TmigrTopology, RandomBringupOrdersKeepTheStructure) {
  std::mt19937_64 rng(11);
  for (int run = 0; run < 120; ++run) {
    const unsigned cpus = 1 + static_cast<unsigned>(rng() % 600);
    const unsigned nodes = 1 + static_cast<unsigned>(rng() % std::min(cpus, 12u));
    std::vector<int> node_of;
    if (rng() % 2) node_of = interleaved(cpus, nodes);
    std::vector<unsigned> order(cpus);
    std::iota(order.begin(), order.end(), 0u);
    if (rng() % 2) std::shuffle(order.begin(), order.end(), rng);
    const Topology topo(spec_of(cpus, nodes, node_of, order));
    for (TmigrSetup setup : {TmigrSetup::v6_12, TmigrSetup::fixed}) {
      const Tmigr tm(topo, setup);
      ASSERT_EQ(tm.check_invariants(), "") << cpus << " CPUs " << nodes << " nodes";
      ASSERT_EQ(check_structure(tm, topo, setup == TmigrSetup::v6_12), "")
          << cpus << " CPUs " << nodes << " nodes setup " << static_cast<int>(setup);
      if (setup == TmigrSetup::fixed) {
        ASSERT_TRUE(node_pure_below_crossnode(tm, topo)) << cpus << " CPUs " << nodes << " nodes";
      }
    }
  }
}

// ---------------------------------------------------------------------------
// §9 item 11: imbalanced NUMA trees (5eb579dfd46b).

TEST(TmigrRegression, Item11InterleavedNodesMixBelowCrossnodeBeforeTheFix) {
  const Topology topo(spec_of(32, 2, interleaved(32, 2)));
  {
    const Tmigr tm(topo, TmigrSetup::v6_12);
    ASSERT_EQ(check_structure(tm, topo), "");
    EXPECT_EQ(tm.hierarchy_levels(), 3u);
    EXPECT_EQ(tm.crossnode_level(), 2u);
    EXPECT_FALSE(node_pure_below_crossnode(tm, topo));
    // The level-0 group of CPU 0 (CPUs 0, 2, ..., 14 of node 0) was adopted
    // by node 1's level-1 group when CPU 1 came up.
    const auto& g = tm.groups();
    const int grp0 = tm.cpu(0).tmgroup;
    const std::vector<unsigned> even = {0, 2, 4, 6, 8, 10, 12, 14};
    EXPECT_EQ(tm.cpus_below(grp0), even);
    const TmigrGroup& parent = g[static_cast<unsigned>(g[static_cast<unsigned>(grp0)].parent)];
    EXPECT_EQ(parent.level, 1u);
    EXPECT_EQ(parent.numa_node, 1);
    EXPECT_EQ(g[static_cast<unsigned>(tm.cpu(1).tmgroup)].parent, g[static_cast<unsigned>(grp0)].parent);
    // ... so node-1 CPUs are migrators for node-0 timers below the crossnode level.
    const auto below = tm.cpus_below(g[static_cast<unsigned>(grp0)].parent);
    EXPECT_TRUE(std::any_of(below.begin(), below.end(), [&](unsigned c) { return topo.node_of(c) == 0; }));
    EXPECT_TRUE(std::any_of(below.begin(), below.end(), [&](unsigned c) { return topo.node_of(c) == 1; }));
  }
  {
    const Tmigr tm(topo, TmigrSetup::fixed);
    ASSERT_EQ(check_structure(tm, topo), "");
    EXPECT_EQ(tm.hierarchy_levels(), 3u);
    EXPECT_TRUE(node_pure_below_crossnode(tm, topo));
    EXPECT_EQ(groups_per_level(tm), (std::vector<unsigned>{4, 2, 1}));
    for (unsigned c = 0; c < 32; ++c) {
      const TmigrGroup& lvl0 = tm.groups()[static_cast<unsigned>(tm.cpu(c).tmgroup)];
      EXPECT_EQ(lvl0.numa_node, static_cast<int>(c % 2));
      EXPECT_EQ(tm.groups()[static_cast<unsigned>(lvl0.parent)].numa_node, static_cast<int>(c % 2));
    }
  }
}

// Before the fix, the adoptions across nodes can overfill a node's groups so
// that the last computed level needs a second group; the 6.12 set-up loop
// stops at the last level regardless, leaving two parentless groups (a forest
// of two hierarchies; 6.12.y only warns "Assert single root"). The fixed
// set-up builds node-pure groups and a single root.
TEST(TmigrRegression, Item11ForestBeforeTheFix) {
  const Topology topo(spec_of(512, 8, interleaved(512, 8)));
  {
    const Tmigr tm(topo, TmigrSetup::v6_12);
    EXPECT_EQ(tm.hierarchy_levels(), 3u);
    EXPECT_EQ(tm.check_invariants(), "");
    EXPECT_EQ(check_structure(tm, topo, /*allow_forest=*/true), "");
    EXPECT_NE(check_structure(tm, topo), "");
    EXPECT_EQ(tm.root(), -1);
    std::vector<unsigned> tops;
    for (const TmigrGroup& g : tm.groups()) {
      if (g.parent < 0) tops.push_back(g.level);
    }
    EXPECT_EQ(tops, (std::vector<unsigned>{2, 2}));
  }
  {
    const Tmigr tm(topo, TmigrSetup::fixed);
    EXPECT_EQ(check_structure(tm, topo), "");
    EXPECT_TRUE(node_pure_below_crossnode(tm, topo));
    EXPECT_EQ(groups_per_level(tm), (std::vector<unsigned>{64, 8, 1}));
  }
}

// The fixed set-up unfolds the new node up to the crossnode level as soon as
// its first CPU comes up (the commit's stage 2 layout), even with 2 CPUs.
TEST(TmigrRegression, Item11FixUnfoldsTheNewNodeToTheCrossnodeLevel) {
  const Topology full(spec_of(32, 2, interleaved(32, 2)));
  const Tmigr tm(full, TmigrSetup::fixed);
  const auto& g = tm.groups();
  // Groups in creation order: GRP0:0 (CPU 0), then for CPU 1: its level-0
  // and level-1 groups of node 1 and the crossnode top, then node 0's
  // level-1 group above the old root.
  ASSERT_GE(g.size(), 5u);
  EXPECT_EQ(g[0].level, 0u);
  EXPECT_EQ(g[0].numa_node, 0);
  EXPECT_EQ(g[1].level, 0u);
  EXPECT_EQ(g[1].numa_node, 1);
  EXPECT_EQ(g[2].level, 1u);
  EXPECT_EQ(g[2].numa_node, 1);
  EXPECT_EQ(g[3].level, 2u);
  EXPECT_EQ(g[3].numa_node, -1);
  EXPECT_EQ(g[4].level, 1u);
  EXPECT_EQ(g[4].numa_node, 0);
  EXPECT_EQ(g[0].parent, 4);
  EXPECT_EQ(g[4].parent, 3);
  EXPECT_EQ(g[4].groupmask, 1u);  // the old root's chain is child 0 of the new root
  EXPECT_EQ(g[2].groupmask, 2u);
}

// ---------------------------------------------------------------------------
// §9 item 1: the last CPU going idle must arm the earliest global event.

TEST(TmigrRegression, Item1LastIdleCpuArmsSiblingTimerSingleLevel) {
  for (TmigrSetup setup : {TmigrSetup::v6_12, TmigrSetup::fixed}) {
    Rig r(spec_of(8), setup);
    ASSERT_EQ(r.tm().hierarchy_levels(), 1u);
    for (unsigned c = 2; c < 8; ++c) EXPECT_EQ(r.go_idle(c), KTIME_MAX);
    const jiffies_t t1 = r.arm(1, 10);
    // CPU 0 is still active and migrator: CPU 1's event is covered.
    EXPECT_EQ(r.go_idle(1), KTIME_MAX);
    // CPU 0 has no global timer of its own and is the last to go idle: it
    // must arm T1 (the buggy early return made it arm nothing).
    EXPECT_EQ(r.go_idle(0), ns_of(t1));
    EXPECT_EQ(r.tm().cpu(0).wakeup, ns_of(t1));
    // CPU 0 wakes at T1 and expires CPU 1's timer remotely.
    r.set_jiffies(t1 - 1);
    EXPECT_FALSE(r.tm().tmigr_requires_handle_remote(0, r.now()));
    r.set_jiffies(t1);
    ASSERT_GE(r.now(), r.hw(0));
    EXPECT_EQ(r.idle_wakeup(0), 1u);
    ASSERT_EQ(r.fired().size(), 1u);
    EXPECT_EQ(r.fired()[0].base_cpu, 1u);
    EXPECT_EQ(r.fired()[0].ran_on, 0u);
    EXPECT_EQ(r.fired()[0].baseclk, t1);
    // Nothing left anywhere: nobody needs to wake.
    for (unsigned c = 0; c < 8; ++c) EXPECT_EQ(r.tm().cpu(c).wakeup, KTIME_MAX) << c;
    EXPECT_EQ(r.hw(0), KTIME_MAX);
  }
}

TEST(TmigrRegression, Item1LastIdleCpuArmsMinOfBothGroupsMultiLevel) {
  for (TmigrSetup setup : {TmigrSetup::v6_12, TmigrSetup::fixed}) {
    Rig r(spec_of(16), setup);
    ASSERT_EQ(r.tm().hierarchy_levels(), 2u);
    // GRP0:1 (CPUs 8-15) goes idle with T2 on CPU 9: its event reaches the top.
    const jiffies_t t2 = r.arm(9, 50);
    for (unsigned c = 8; c < 16; ++c) EXPECT_EQ(r.go_idle(c), KTIME_MAX);
    // In GRP0:0, CPU 1 idles with T1 < T2 while CPU 0 (migrator) is active.
    for (unsigned c = 2; c < 8; ++c) r.go_idle(c);
    const jiffies_t t1 = r.arm(1, 20);
    ASSERT_LT(t1, t2);
    EXPECT_EQ(r.go_idle(1), KTIME_MAX);
    // CPU 0 goes idle last without a global timer: it must arm min(T1, T2).
    EXPECT_EQ(r.go_idle(0), ns_of(t1));
    const TmigrGroup& top = r.tm().groups()[static_cast<unsigned>(r.tm().root())];
    EXPECT_EQ(top.next_expiry, ns_of(t1));
    // At T1 CPU 0 expires T1 and then sleeps until T2, which it expires too.
    r.set_jiffies(t1);
    EXPECT_EQ(r.idle_wakeup(0), 1u);
    EXPECT_EQ(r.hw(0), ns_of(t2));
    r.set_jiffies(t2);
    EXPECT_EQ(r.idle_wakeup(0), 1u);
    ASSERT_EQ(r.fired().size(), 2u);
    EXPECT_EQ(r.fired()[0].base_cpu, 1u);
    EXPECT_EQ(r.fired()[1].base_cpu, 9u);
    EXPECT_EQ(r.fired()[1].baseclk, t2);
    EXPECT_EQ(r.hw(0), KTIME_MAX);
  }
}

// ---------------------------------------------------------------------------
// §9 item 2: no endless requeue after the former last-idle CPU's wakeup.

TEST(TmigrRegression, Item2FormerIdleMigratorDropsItsStaleWakeup) {
  for (bool cpu1_runs_first : {true, false}) {
    SCOPED_TRACE(cpu1_runs_first ? "CPU 1 runs T1 before CPU 0's interrupt" : "CPU 0's interrupt comes first");
    Rig r(spec_of(2));
    const jiffies_t t1 = r.arm(1, 10);
    EXPECT_EQ(r.go_idle(1), KTIME_MAX);
    EXPECT_EQ(r.go_idle(0), ns_of(t1));  // CPU 0 is last: it holds T1
    // CPU 1 wakes before T1 and becomes migrator; it runs T1 itself.
    r.set_jiffies(t1 - 5);
    r.wake(1);
    EXPECT_EQ(r.tm().groups()[0].state.migrator, r.tm().cpu(1).groupmask);
    r.set_jiffies(t1);
    if (cpu1_runs_first) r.tick(1);
    // CPU 0's timer interrupt fires for the stale T1: one spurious wakeup.
    ASSERT_GE(r.now(), r.hw(0));
    EXPECT_TRUE(r.tm().tmigr_requires_handle_remote(0, r.now()));
    EXPECT_EQ(r.idle_wakeup(0), 0u);
    if (!cpu1_runs_first) r.tick(1);
    // It is not the migrator: its wakeup is reset to KTIME_MAX instead of
    // being handed back ("now") by every idle re-evaluation.
    EXPECT_EQ(r.tm().cpu(0).wakeup, KTIME_MAX);
    EXPECT_EQ(r.hw(0), KTIME_MAX);
    for (int i = 0; i < 20; ++i) {
      r.set_jiffies(t1 + 1 + static_cast<jiffies_t>(i));
      EXPECT_FALSE(r.tm().tmigr_requires_handle_remote(0, r.now()));
      EXPECT_EQ(r.idle_reevaluate(0), KTIME_MAX);
      r.tick(1);
    }
    ASSERT_EQ(r.fired().size(), 1u);
    EXPECT_EQ(r.fired()[0].base_cpu, 1u);
    EXPECT_EQ(r.fired()[0].ran_on, 1u);
  }
}

// ---------------------------------------------------------------------------
// §9 item 3: the quick check reports the minimum over all levels.

TEST(TmigrRegression, Item3QuickCheckReportsMinOverAllLevels) {
  // The commit's scenario with groups of 8: CPU 0 and CPU 1 in GRP0:0, CPU 8
  // (the commit's CPU 2) in GRP0:1; T0 < T1 < T2.
  Rig r(spec_of(16));
  ASSERT_EQ(r.tm().hierarchy_levels(), 2u);
  const jiffies_t t0 = r.arm(0, 10), t1 = r.arm(1, 20), t2 = r.arm(8, 30);
  ASSERT_LT(t0, t1);
  ASSERT_LT(t1, t2);
  for (unsigned c = 2; c < 16; ++c) r.go_idle(c);
  r.go_idle(1);
  // 0) The whole system is idle; CPU 0 was last and holds T0.
  EXPECT_EQ(r.go_idle(0), ns_of(t0));
  // 1) CPU 0 becomes active: its events up to the top are ignored.
  r.set_jiffies(kJ0 + 2);
  r.wake(0);
  // 2) At T0 its softirq runs its own T0 and tmigr_handle_remote, which
  //    expires nothing but drops the ignored events; the top now shows T2.
  r.set_jiffies(t0);
  EXPECT_EQ(r.tick(0), 0u);
  ASSERT_EQ(r.fired().size(), 1u);
  const auto& g = r.tm().groups();
  EXPECT_EQ(g[static_cast<unsigned>(r.tm().cpu(0).tmgroup)].next_expiry, ns_of(t1));
  EXPECT_EQ(g[static_cast<unsigned>(r.tm().root())].next_expiry, ns_of(t2));
  // 3) CPU 0 is about to idle with no global timer: the quick check must
  //    say T1 (the minimum over the levels), not the top's T2.
  EXPECT_EQ(r.tm().tmigr_quick_check(0, KTIME_MAX), ns_of(t1));
  // ... and its own earlier event still wins the min.
  EXPECT_EQ(r.tm().tmigr_quick_check(0, ns_of(t0 + 3)), ns_of(t0 + 3));
  // Going idle for real arms T1 as well.
  EXPECT_EQ(r.go_idle(0), ns_of(t1));
  // A CPU that is not alone in its level-0 group gets KTIME_MAX.
  r.wake(0);
  r.wake(2);
  EXPECT_EQ(r.tm().tmigr_quick_check(0, KTIME_MAX), KTIME_MAX);
}

// ---------------------------------------------------------------------------
// §9 item 4: an equal-expiry update must refresh the group event's CPU.

TEST(TmigrRegression, Item4EqualExpiryUpdateRefreshesCpu) {
  // 72 CPUs on one node: three levels. GRP1:0 holds CPUs 0-63, GRP1:1 holds
  // GRP0:8 (CPUs 64-71); CPU 64 stays active, migrator of GRP1:1 and the top.
  RemoteCpuLog log;
  Rig r(spec_of(72), TmigrSetup::fixed, &log);
  ASSERT_EQ(r.tm().hierarchy_levels(), 3u);
  for (unsigned c = 2; c < 64; ++c) r.go_idle(c);
  for (unsigned c = 65; c < 72; ++c) r.go_idle(c);
  const jiffies_t t0 = r.arm(0, 10), t1 = r.arm(1, 10);
  ASSERT_EQ(t0, t1);
  EXPECT_EQ(r.go_idle(0), KTIME_MAX);
  EXPECT_EQ(r.go_idle(1), KTIME_MAX);
  const auto& g = r.tm().groups();
  const int grp00 = r.tm().cpu(0).tmgroup;
  const int grp10 = g[static_cast<unsigned>(grp00)].parent;
  // 0) GRP0:0 queues T0 then T1 (equal expiry, first in first); its event
  //    and GRP1:0's event point to CPU 0.
  ASSERT_EQ(g[static_cast<unsigned>(grp00)].events, (std::vector<int>{0, 1}));
  EXPECT_EQ(g[static_cast<unsigned>(grp00)].groupevt.cpu, 0u);
  EXPECT_EQ(g[static_cast<unsigned>(grp10)].groupevt.cpu, 0u);
  EXPECT_EQ(g[static_cast<unsigned>(grp10)].parent, r.tm().root());
  // 1)-5) At T0 the migrator expires CPU 0's timer, re-walks from CPU 0:
  //    GRP0:0's event keeps its expiry but must now name CPU 1, and so must
  //    GRP1:0's event requeued in the top — so T1 is expired in the same
  //    softirq instead of being left until CPU 0 or 1 wakes.
  r.set_jiffies(t0);
  EXPECT_EQ(r.tick(64), 2u);
  EXPECT_EQ(log.cpus, (std::vector<unsigned>{0, 1}));
  ASSERT_EQ(r.fired().size(), 2u);
  EXPECT_EQ(r.fired()[0].base_cpu, 0u);
  EXPECT_EQ(r.fired()[1].base_cpu, 1u);
  for (const Fired& f : r.fired()) {
    EXPECT_EQ(f.ran_on, 64u);
    EXPECT_EQ(f.jiffies, t0);
  }
  // Nothing is due anywhere any more.
  EXPECT_FALSE(r.tm().tmigr_requires_handle_remote(64, r.now()));
}

// The single-level variant of item 4 (the commit: "some other bad scenario
// may involve trees with just two levels"): a group event refreshed in place.
TEST(TmigrRegression, Item4EqualExpiryTwoLevels) {
  RemoteCpuLog log;
  Rig r(spec_of(16), TmigrSetup::fixed, &log);
  for (unsigned c = 2; c < 8; ++c) r.go_idle(c);
  for (unsigned c = 9; c < 16; ++c) r.go_idle(c);
  const jiffies_t t0 = r.arm(0, 7), t1 = r.arm(1, 7);
  ASSERT_EQ(t0, t1);
  r.go_idle(0);
  r.go_idle(1);
  r.set_jiffies(t0);
  EXPECT_EQ(r.tick(8), 2u);
  EXPECT_EQ(log.cpus, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(r.fired().size(), 2u);
}

// ---------------------------------------------------------------------------
// Basic walks.

TEST(TmigrWalks, NotLastCpuGetsMaxAndWakingCpuBecomesMigratorUpward) {
  Rig r(spec_of(24));
  for (unsigned c = 0; c < 24; ++c) {
    if (c == 17) continue;
    EXPECT_EQ(r.go_idle(c), KTIME_MAX) << c;
  }
  // Only CPU 17 is active: it is migrator all the way up.
  const auto& g = r.tm().groups();
  std::uint8_t mask = r.tm().cpu(17).groupmask;
  for (int grp = r.tm().cpu(17).tmgroup; grp >= 0; grp = g[static_cast<unsigned>(grp)].parent) {
    EXPECT_EQ(g[static_cast<unsigned>(grp)].state.migrator, mask);
    EXPECT_EQ(g[static_cast<unsigned>(grp)].state.active, mask);
    mask = g[static_cast<unsigned>(grp)].groupmask;
  }
  // A timer on an idle CPU of another group reaches the top through idle
  // groups and CPU 17's tick finds it due at its expiry.
  const jiffies_t t = r.arm(3, 40);
  EXPECT_EQ(r.idle_reevaluate(3), KTIME_MAX);  // an active migrator covers it
  r.set_jiffies(t - 1);
  EXPECT_FALSE(r.tm().tmigr_requires_handle_remote(17, r.now()));
  r.set_jiffies(t);
  EXPECT_TRUE(r.tm().tmigr_requires_handle_remote(17, r.now()));
  EXPECT_EQ(r.tick(17), 1u);
  ASSERT_EQ(r.fired().size(), 1u);
  EXPECT_EQ(r.fired()[0].ran_on, 17u);
  // The last CPU going idle gets KTIME_MAX back: nothing is pending.
  EXPECT_EQ(r.go_idle(17), KTIME_MAX);
}

// ---------------------------------------------------------------------------
// Randomized runs: random topologies, both set-ups, random idle/active
// transitions and global timers; invariants after every call, and §4.9 item
// 4 "no missed global timer" after every step.

struct RandomParams {
  unsigned cpus, nodes;
  int layout;  // 0 contiguous, 1 interleaved, 2 random assignment
  bool shuffled_bringup;
  TmigrSetup setup;
  bool expires_self;
  double idle_bias;  // how strongly CPUs tend to idle
  std::vector<int> node_of_cpu = {};  // if given, overrides `layout`
};

std::string describe(const RandomParams& p) {
  std::ostringstream s;
  s << p.cpus << " CPUs, " << p.nodes << " nodes, layout " << p.layout << ", shuffled " << p.shuffled_bringup
    << ", setup " << static_cast<int>(p.setup) << ", expires_self " << p.expires_self << ", idle_bias "
    << p.idle_bias;
  return s.str();
}

class RandomRun {
 public:
  RandomRun(const RandomParams& p, std::uint64_t seed) : p_(p), rng_(seed), rig_(make_spec(p, rng_), p.setup) {
    rig_.tm().set_remote_expires_self(p.expires_self);
    const auto& groups = rig_.tm().groups();
    children_.resize(groups.size());
    cpus_of_.resize(groups.size());
    for (unsigned gi = 0; gi < groups.size(); ++gi) {
      if (groups[gi].parent >= 0) children_[static_cast<unsigned>(groups[gi].parent)].push_back(static_cast<int>(gi));
    }
    root_of_.assign(rig_.ncpus(), 0);
    for (unsigned c = 0; c < rig_.ncpus(); ++c) {
      int g = rig_.tm().cpu(c).tmgroup;
      if (g < 0) continue;
      cpus_of_[static_cast<unsigned>(g)].push_back(c);
      while (groups[static_cast<unsigned>(g)].parent >= 0) g = groups[static_cast<unsigned>(g)].parent;
      root_of_[c] = static_cast<unsigned>(g);
    }
  }

  // Returns "" or the first violated property.
  std::string run(unsigned steps) {
    const unsigned n = rig_.ncpus();
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (unsigned step = 0; step < steps; ++step) {
      const double op = u(rng_);
      if (op < 0.02) {
        // Everyone goes idle, in random order, then time runs: the
        // all-idle case of "no missed global timer".
        std::vector<unsigned> order(n);
        std::iota(order.begin(), order.end(), 0u);
        std::shuffle(order.begin(), order.end(), rng_);
        for (unsigned c : order) {
          if (!rig_.idle(c)) rig_.go_idle(c);
          if (auto e = check("all going idle, CPU " + std::to_string(c)); !e.empty()) return e;
        }
        if (auto e = skip_ahead(rig_.jiffies() + 1 + rng_() % 300); !e.empty()) return e;
      } else if (op < 0.75) {
        const unsigned c = static_cast<unsigned>(rng_() % n);
        std::string what;
        if (!rig_.idle(c)) {
          if (u(rng_) < p_.idle_bias) {
            rig_.go_idle(c);
            what = "idle";
          } else {
            rig_.arm(c, delta());
            what = "arm while active";
          }
        } else if (u(rng_) < 1.0 - p_.idle_bias) {
          rig_.wake(c);
          what = "wake";
        } else {
          // A timer armed from an interrupt on the idle CPU; on irq exit the
          // idle path hands the (maybe new) first event to the hierarchy.
          rig_.arm(c, delta());
          rig_.idle_reevaluate(c);
          what = "arm while idle";
        }
        if (auto e = check(what + " on CPU " + std::to_string(c)); !e.empty()) return e;
      } else {
        if (auto e = advance(1 + rng_() % 12); !e.empty()) return e;
      }
      if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) return "see failures above";
    }
    // Let everything pending expire and check that every timer fired once,
    // exactly at its bucket expiry.
    if (auto e = drain(); !e.empty()) return e;
    if (auto e = check_all_fired(); !e.empty()) return e;
    return "";
  }

  std::size_t fired() const { return rig_.fired().size(); }
  const Tmigr& tm() const { return rig_.tm(); }
  std::size_t remote_expiries() const { return rig_.remote_expiries(); }
  std::size_t all_idle_checks() const { return all_idle_checks_; }
  std::size_t quick_checks() const { return quick_checks_; }
  std::size_t remote_checks() const { return remote_checks_; }

 private:
  static TopologySpec make_spec(const RandomParams& p, std::mt19937_64& rng) {
    std::vector<int> node_of = p.node_of_cpu;
    if (!node_of.empty()) return spec_of(p.cpus, p.nodes, node_of);
    if (p.layout == 1) node_of = interleaved(p.cpus, p.nodes);
    if (p.layout == 2) {
      node_of.resize(p.cpus);
      for (unsigned c = 0; c < p.cpus; ++c) node_of[c] = static_cast<int>(c < p.nodes ? c : rng() % p.nodes);
      std::shuffle(node_of.begin(), node_of.end(), rng);
    }
    std::vector<unsigned> order;
    if (p.shuffled_bringup) {
      order.resize(p.cpus);
      std::iota(order.begin(), order.end(), 0u);
      std::shuffle(order.begin(), order.end(), rng);
    }
    return spec_of(p.cpus, p.nodes, node_of, order);
  }

  jiffies_t delta() {
    const auto k = rng_() % 8;
    if (k == 0) return 1 + rng_() % 3000;  // a level-1/2 timer: lands on a coarser bucket
    return 1 + rng_() % 60;
  }

  // Advance jiffy by jiffy; at each, every active CPU ticks and every idle
  // CPU whose programmed wakeup is due handles it.
  std::string advance(jiffies_t ticks) {
    const unsigned n = rig_.ncpus();
    for (jiffies_t k = 0; k < ticks; ++k) {
      rig_.set_jiffies(rig_.jiffies() + 1);
      const unsigned first = static_cast<unsigned>(rng_() % n);  // no CPU is always served first
      for (unsigned i = 0; i < n; ++i) {
        const unsigned c = (first + i) % n;
        if (!rig_.idle(c)) {
          rig_.tick(c);
        } else if (rig_.now() >= rig_.hw(c)) {
          rig_.idle_wakeup(c);
          // No endless requeue (§9 item 2): after handling its wakeup, an
          // idle CPU must not be left with a wakeup that is already due.
          if (rig_.hw(c) <= rig_.now() || (n > 1 && rig_.tm().cpu(c).wakeup <= rig_.now())) {
            return "CPU " + std::to_string(c) + " keeps a due wakeup " + std::to_string(rig_.hw(c)) + " at " +
                   std::to_string(rig_.now());
          }
        }
      }
      // No global timer may be left pending past its bucket expiry.
      for (unsigned c = 0; c < n; ++c) {
        const std::uint64_t e = rig_.next_global_ns(c);
        if (e <= rig_.now()) {
          return "a global timer of CPU " + std::to_string(c) + " due at " + std::to_string(e) +
                 " is still pending at " + std::to_string(rig_.now()) + (rig_.idle(c) ? " (idle)" : " (active)");
        }
      }
      if (auto e = check("tick"); !e.empty()) return e;
    }
    return "";
  }

  // The active CPU responsible for group `g`: follow the migrator bits down.
  int migrator_cpu(int g) const {
    const auto& groups = rig_.tm().groups();
    for (;;) {
      const TmigrGroup& grp = groups[static_cast<unsigned>(g)];
      if (grp.state.migrator == TMIGR_NONE) return -1;
      if (grp.level == 0) {
        for (unsigned c : cpus_of_[static_cast<unsigned>(g)]) {
          if (rig_.tm().cpu(c).groupmask == grp.state.migrator) return static_cast<int>(c);
        }
        return -1;
      }
      int next = -1;
      for (int ch : children_[static_cast<unsigned>(g)]) {
        if (groups[static_cast<unsigned>(ch)].groupmask == grp.state.migrator) next = ch;
      }
      if (next < 0) return -1;
      g = next;
    }
  }

  // The next jiffy at which a timer is due on some base or an idle CPU's
  // programmed wakeup fires; ~0 if none.
  jiffies_t next_due_jiffy() {
    jiffies_t next = ~jiffies_t{0};
    for (unsigned c = 0; c < rig_.ncpus(); ++c) {
      const std::uint64_t e = rig_.next_global_ns(c);
      if (e != KTIME_MAX) next = std::min(next, kJ0 + e / TICK_NSEC);
      if (rig_.idle(c) && rig_.hw(c) != KTIME_MAX) next = std::min(next, kJ0 + (rig_.hw(c) + TICK_NSEC - 1) / TICK_NSEC);
    }
    return next;
  }

  // Run time up to `until`, jumping over jiffies at which nothing is due
  // (no timer on any base, no programmed wakeup): a tick there could not
  // expire anything.
  std::string skip_ahead(jiffies_t until) {
    while (rig_.jiffies() < until) {
      const jiffies_t next = std::min(next_due_jiffy(), until);
      rig_.set_jiffies(std::max(next, rig_.jiffies() + 1) - 1);
      if (auto e = advance(1); !e.empty()) return e;
    }
    return "";
  }

  // Until every armed timer has fired.
  std::string drain() {
    for (int guard = 0; guard < 100000; ++guard) {
      if (rig_.fired().size() == rig_.armed_count()) return "";
      const jiffies_t next = next_due_jiffy();
      if (next == ~jiffies_t{0}) return "timers are pending but nothing will expire them";
      if (auto e = skip_ahead(next); !e.empty()) return e;
    }
    return "the drain did not finish";
  }

  // §4.9 item 4, for every idle CPU with a pending global timer at E: if
  // some ancestor group is active, the active CPU that is migrator down to
  // that group sees the timer at E (tmigr_requires_handle_remote); if its
  // whole chain is idle (so its whole tree is: everything when the tree is
  // one hierarchy), some idle CPU of the tree has its wakeup armed at <= E.
  std::string check(const std::string& after) {
    std::string inv = rig_.invariants();
    if (!inv.empty()) return inv + " (after " + after + ")";
    const unsigned n = rig_.ncpus();
    const auto& groups = rig_.tm().groups();
    std::vector<std::uint64_t> min_wakeup(std::max<std::size_t>(groups.size(), 1), KTIME_MAX);
    std::vector<std::uint64_t> min_hw(min_wakeup.size(), KTIME_MAX);
    bool all_idle = true;
    unsigned active = 0, last_active = 0;
    std::uint64_t earliest = KTIME_MAX;
    next_ns_.assign(n, KTIME_MAX);
    for (unsigned c = 0; c < n; ++c) {
      if (!rig_.idle(c)) {
        all_idle = false;
        ++active;
        last_active = c;
        continue;
      }
      next_ns_[c] = rig_.next_global_ns(c);
      earliest = std::min(earliest, next_ns_[c]);
      min_wakeup[root_of_[c]] = std::min(min_wakeup[root_of_[c]], rig_.tm().cpu(c).wakeup);
      min_hw[root_of_[c]] = std::min(min_hw[root_of_[c]], rig_.hw(c));
    }
    // §9 item 3: the lone active CPU's quick check (the governor's sleep
    // estimate) is no later than any idle CPU's first global timer.
    if (active == 1 && n > 1 && rig_.tm().root() >= 0) {
      ++quick_checks_;
      const std::uint64_t q = rig_.tm().tmigr_quick_check(last_active, KTIME_MAX);
      if (q > earliest) {
        return "quick check of the last active CPU " + std::to_string(last_active) + " says " + std::to_string(q) +
               " but an idle CPU's timer is due at " + std::to_string(earliest) + " (after " + after + ")";
      }
    }
    for (unsigned c = 0; c < n; ++c) {
      const std::uint64_t e = next_ns_[c];  // KTIME_MAX for active CPUs
      if (e == KTIME_MAX) continue;
      int g = rig_.tm().cpu(c).tmgroup;
      while (g >= 0 && groups[static_cast<unsigned>(g)].state.active == 0) g = groups[static_cast<unsigned>(g)].parent;
      if (g < 0) {
        ++(all_idle ? all_idle_checks_ : idle_tree_checks_);
        const unsigned r = root_of_[c];
        if (min_hw[r] > e || (n > 1 && min_wakeup[r] > e)) {
          return "idle CPU " + std::to_string(c) + "'s timer at " + std::to_string(e) +
                 " under an idle hierarchy, but the earliest armed wakeup is " + std::to_string(min_hw[r]) +
                 " and the earliest tmc->wakeup " + std::to_string(min_wakeup[r]) + " (after " + after + ")";
        }
        continue;
      }
      ++remote_checks_;
      const int m = migrator_cpu(g);
      if (m < 0 || rig_.idle(static_cast<unsigned>(m))) {
        return "group " + std::to_string(g) + " has no active migrator CPU";
      }
      if (!rig_.tm().tmigr_requires_handle_remote(static_cast<unsigned>(m), e)) {
        return "idle CPU " + std::to_string(c) + "'s timer at " + std::to_string(e) + " is not seen by migrator CPU " +
               std::to_string(m) + " of group " + std::to_string(g) + " (after " + after + ")";
      }
    }
    return "";
  }

  std::string check_all_fired() {
    if (rig_.fired().size() != rig_.armed_count()) {
      return std::to_string(rig_.armed_count()) + " timers armed but " + std::to_string(rig_.fired().size()) +
             " fired";
    }
    for (const Fired& f : rig_.fired()) {
      if (f.jiffies != f.bucket || f.baseclk != f.bucket) {
        return "a timer of CPU " + std::to_string(f.base_cpu) + " with bucket expiry " + std::to_string(f.bucket) +
               " fired at " + std::to_string(f.jiffies) + " from bucket " + std::to_string(f.baseclk);
      }
    }
    return "";
  }

  RandomParams p_;
  std::mt19937_64 rng_;
  Rig rig_;
  std::vector<std::vector<int>> children_;
  std::vector<std::vector<unsigned>> cpus_of_;
  std::vector<unsigned> root_of_;  // the root group above each CPU (0 without a hierarchy)
  std::vector<std::uint64_t> next_ns_;  // scratch: each idle CPU's first global event
  std::size_t all_idle_checks_ = 0, idle_tree_checks_ = 0, remote_checks_ = 0, quick_checks_ = 0;
};

TEST(TmigrRandom, NoMissedGlobalTimerOnRandomTopologies) {
  std::mt19937_64 rng(2024);
  const unsigned boundary[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 72, 128, 129, 256, 300};
  std::size_t fired = 0, all_idle = 0, remote = 0, remote_expiries = 0, quick = 0;
  const int kRuns = 36;
  for (int run = 0; run < kRuns; ++run) {
    RandomParams p{};
    const auto pick = rng() % 4;
    if (pick == 0) {
      p.cpus = boundary[rng() % std::size(boundary)];
    } else if (pick == 1) {
      p.cpus = 1 + static_cast<unsigned>(rng() % 20);
    } else {
      p.cpus = 1 + static_cast<unsigned>(rng() % 300);
    }
    p.nodes = 1 + static_cast<unsigned>(rng() % std::min(p.cpus, 8u));
    p.layout = static_cast<int>(rng() % 3);
    p.shuffled_bringup = rng() % 4 == 0;
    p.setup = run % 2 ? TmigrSetup::fixed : TmigrSetup::v6_12;
    p.expires_self = rng() % 4 != 0;
    p.idle_bias = 0.5 + 0.45 * static_cast<double>(rng() % 1000) / 1000.0;
    // Fewer steps for big machines: each tick visits every CPU.
    const unsigned steps = p.cpus > 100 ? 160 : 600;
    SCOPED_TRACE(describe(p) + ", run " + std::to_string(run));
    RandomRun r(p, rng());
    const std::string err = r.run(steps);
    ASSERT_EQ(err, "");
    fired += r.fired();
    all_idle += r.all_idle_checks();
    remote += r.remote_checks();
    remote_expiries += r.remote_expiries();
    quick += r.quick_checks();
  }
  // The runs exercised what they claim to.
  EXPECT_GT(fired, 5000u);
  EXPECT_GT(all_idle, 200u);
  EXPECT_GT(remote, 5000u);
  EXPECT_GT(remote_expiries, 1000u);
  EXPECT_GT(quick, 500u);
  std::cout << "[          ] " << fired << " timers fired (" << remote_expiries << " remote expiries), " << all_idle
            << " all-idle checks, " << remote << " migrator-reachability checks, " << quick << " quick checks\n";
}

}  // namespace

namespace {

// A 6.12 forest (see Item11ForestBeforeTheFix) at run time: 72 CPUs on 8
// nodes, node 0's first CPU adopted by node 1, whose 57 CPUs then overflow
// the top level. Each of the two trees must still expire every timer in
// time: its last idle CPU holds its first event.
TEST(TmigrRandom, ForestOf612StillExpiresEveryTimer) {
  std::vector<int> node_of = {0, 1, 2, 3, 4, 5, 6, 7};
  node_of.insert(node_of.end(), 8, 0);
  node_of.insert(node_of.end(), 56, 1);
  std::mt19937_64 rng(612);
  for (int run = 0; run < 6; ++run) {
    RandomParams p{72, 8, 0, false, run % 2 ? TmigrSetup::fixed : TmigrSetup::v6_12, true, 0.6 + 0.06 * run, node_of};
    SCOPED_TRACE(describe(p));
    RandomRun r(p, rng());
    EXPECT_EQ(r.tm().root() < 0, p.setup == TmigrSetup::v6_12);  // two roots before the fix
    ASSERT_EQ(r.run(500), "");
    EXPECT_GT(r.fired(), 100u);
  }
}

}  // namespace
