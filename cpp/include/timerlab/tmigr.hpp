// tmigr.hpp — the timer-migration hierarchy of the "pull at expiry" model.
//
// Models kernel/time/timer_migration.c (Linux 6.9+): the hierarchy of groups
// built as CPUs come online, the per-group active/migrator state, the queues
// of child events, and the walks that run when a CPU goes idle
// (tmigr_cpu_deactivate), wakes (tmigr_cpu_activate), queues a new first
// global timer while idle (tmigr_cpu_new_timer), estimates its sleep
// (tmigr_quick_check), checks at its tick whether remote work is due
// (tmigr_requires_handle_remote), and expires idle CPUs' global timers
// (tmigr_handle_remote). Reference: kernel-timers.md §4 and §9.
//
// Theory of operation
// -------------------
// CPUs are leaves; groups hold up to 8 children (CPUs at level 0, groups
// above). Below the crossnode level a group holds children of one NUMA node
// (only after the 2025 fix, see below); above it, any.
//
//   LVL 2                         [GRP2:0]            crossnode level = 2
//                               /          \  (groups of 8)
//   LVL 1            [GRP1:0 node0]      [GRP1:1 node1]
//                   /      |      \          ...
//   LVL 0   [GRP0:0] [GRP0:1] [GRP0:2]  [GRP0:3] ...
//   CPUs      0-7      8-15    16-23      24-31
//
// Each group has a state word: `active` (bit per active child), `migrator`
// (the bit of the one child that does remote expiry for this group, or
// TMIGR_NONE) and `seq`. A CPU going idle clears its bit; if it was the
// migrator the lowest active sibling takes over, and if none is left the
// walk goes on to the parent. Its first GLOBAL timer (when earlier than its
// first LOCAL one) is queued as an event in its level-0 group, and an idle
// group's first event is queued in its parent, level by level. An event is
// never removed when its owner wakes: it is flagged `ignore` and dropped the
// next time a queue is read. The migrator, at each tick, compares `now` with
// the next_expiry of the groups it is migrator of (or that have no
// migrator), and expires the due CPUs' GLOBAL bases on its own CPU. The last
// CPU of the system to go idle gets the system's first global event back
// and programs its wakeup for it (tmigr_cpu->wakeup).
//
// Building the hierarchy (tmigr_setup_groups): levels = ceil(log8(CPUs per
// node)) + ceil(log8(nodes)), crossnode level = the first part. Each CPU, in
// bring-up order, takes at each level the newest group with room (and the
// same node below the crossnode level) or creates one; it stops at a group
// that already has a parent, or when the level holds a single group. When a
// new top level appears, the old top becomes its child 0 and is activated
// in it. Two variants, chosen by TmigrSetup:
//   * v6_12: the old top is adopted by the new top even if their nodes
//     differ, so interleaved CPU numbering mixes nodes below the crossnode
//     level (seen in real 6.12 boot traces).
//   * fixed (5eb579dfd46b, "Fix imbalanced NUMA trees"): a CPU whose node
//     differs from the root's builds its node's groups up to the crossnode
//     level, and the old root is connected upward through groups of its own
//     node; every group below the crossnode level is node-pure.
//
// Times are CLOCK_MONOTONIC ns as u64, KTIME_MAX meaning "none".
//
// Invariants (check_invariants): migrator == TMIGR_NONE <=> active == 0 in
// every group; a group is set in its parent's active mask iff it has an
// active child; active CPUs' and active groups' events are ignored; queued
// events sit in the queue of their owner's parent, sorted by expiry.
//
// Simplifications vs. the kernel
//   * Sequential: the compare-and-swap loops, locks and the races they
//     close (reference §4.3 scenarios) cannot occur; seq is kept and
//     incremented as the kernel does so traces match.
//   * No hotplug after boot, no isolation, one capacity class.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "timerlab/topology.hpp"

namespace timerlab {

inline constexpr std::uint64_t KTIME_MAX = 0x7FFFFFFFFFFFFFFFull;
inline constexpr unsigned TMIGR_CHILDREN_PER_GROUP = 8;
inline constexpr std::uint8_t TMIGR_NONE = 0xFF;

enum class TmigrSetup : std::uint8_t { v6_12 = 0, fixed = 1 };

struct TmigrState {
  std::uint8_t active = 0;
  std::uint8_t migrator = TMIGR_NONE;
  std::uint16_t seq = 0;
};

// An event a child (CPU or group) queues in its parent group.
struct TmigrEvent {
  std::uint64_t expires = KTIME_MAX;
  unsigned cpu = 0;  // the CPU whose global timers are due
  bool ignore = true;
  bool queued = false;
};

struct TmigrGroup {
  int parent = -1;
  unsigned level = 0;
  int numa_node = -1;  // -1 (NUMA_NO_NODE) at and above the crossnode level
  unsigned num_children = 0;
  std::uint8_t groupmask = 0;  // this group's bit in its parent
  TmigrState state;
  TmigrEvent groupevt;
  std::uint64_t next_expiry = KTIME_MAX;
  // Queued child events, ordered by expiry, equal expiries first-in first.
  // An entry is a CPU number (>= 0) or ~group (< 0) naming whose event it is.
  std::vector<int> events;
};

struct TmigrCpu {
  bool online = false;
  bool idle = false;
  bool remote = false;  // another CPU is expiring this CPU's timers
  int tmgroup = -1;
  std::uint8_t groupmask = 0;
  std::uint64_t wakeup = KTIME_MAX;
  TmigrEvent cpuevt;
};

// What the hierarchy needs from the timer code of kernel/time/timer.c.
class TmigrHost {
 public:
  virtual ~TmigrHost() = default;
  // timer_expire_remote: run `cpu`'s BASE_GLOBAL on the current CPU.
  virtual void timer_expire_remote(unsigned cpu) = 0;
  // The first global event of an idle `cpu` after remote expiry, in ns
  // (fetch_next_timer_interrupt_remote's tevt.global), or KTIME_MAX.
  virtual std::uint64_t fetch_next_global_remote(unsigned cpu) = 0;
  // After each remote CPU handled: whether the current CPU lets go of the
  // hierarchy here (its callbacks took time; the group lock is dropped
  // between events, so another CPU may take the next one meanwhile) and
  // comes back later. Never: handle every expired event at once.
  virtual bool remote_yield() { return false; }
};

class Tmigr;

// The timer_migration tracepoints (include/trace/events/timer_migration.h);
// each hook gets the hierarchy to read the fields the tracepoint prints.
class TmigrTracer {
 public:
  virtual ~TmigrTracer() = default;
  // At boot, the CPU the following events happen on: set-up runs on the
  // boot CPU, each CPU's online step on that CPU (cpuhp/N).
  virtual void boot_cpu(unsigned /*cpu*/) {}
  virtual void group_set(const Tmigr&, int /*group*/) {}
  virtual void connect_child_parent(const Tmigr&, int /*child*/) {}
  virtual void connect_cpu_parent(const Tmigr&, unsigned /*cpu*/) {}
  virtual void group_set_cpu_active(const Tmigr&, int /*group*/, std::uint8_t /*childmask*/) {}
  virtual void group_set_cpu_inactive(const Tmigr&, int /*group*/, std::uint8_t /*childmask*/) {}
  virtual void update_events(const Tmigr&, int /*child*/, int /*group*/, TmigrState /*child_state*/,
                             TmigrState /*group_state*/, std::uint64_t /*nextexp*/) {}
  virtual void cpu_online(const Tmigr&, unsigned /*cpu*/) {}
  virtual void cpu_active(const Tmigr&, unsigned /*cpu*/) {}
  virtual void cpu_idle(const Tmigr&, unsigned /*cpu*/, std::uint64_t /*nextevt*/) {}
  virtual void cpu_new_timer(const Tmigr&, unsigned /*cpu*/) {}
  virtual void cpu_new_timer_idle(const Tmigr&, unsigned /*cpu*/, std::uint64_t /*nextevt*/) {}
  virtual void handle_remote(const Tmigr&, int /*group*/) {}
  virtual void handle_remote_cpu(const Tmigr&, unsigned /*cpu*/) {}
};

class Tmigr {
 public:
  // tmigr_init + bring-up of every CPU in the topology's order: each is
  // added (tmigr_setup_groups) and comes online active, as after boot.
  Tmigr(const Topology& topo, TmigrSetup setup, TmigrTracer* tracer = nullptr);

  unsigned hierarchy_levels() const { return levels_; }
  unsigned crossnode_level() const { return crossnode_; }
  const std::vector<TmigrGroup>& groups() const { return groups_; }
  const std::vector<TmigrCpu>& cpus() const { return cpus_; }
  const TmigrCpu& cpu(unsigned c) const { return cpus_[c]; }
  int root() const;
  void set_tracer(TmigrTracer* t) { tracer_ = t ? t : &null_tracer_; }
  // Whether remote handling also expires the handling CPU's own global base
  // when its own event is due: the 2026 livelock fix (reference §9 item 7);
  // kernels before it skip their own CPU.
  void set_remote_expires_self(bool on) { remote_expires_self_ = on; }

  // The per-CPU entry points, as their kernel namesakes. `nextexp` is the
  // CPU's first global expiry if it precedes its first local one, else
  // KTIME_MAX. They return the wakeup the CPU must program (or KTIME_MAX).
  std::uint64_t tmigr_cpu_deactivate(unsigned cpu, std::uint64_t nextexp);
  void tmigr_cpu_activate(unsigned cpu);
  std::uint64_t tmigr_cpu_new_timer(unsigned cpu, std::uint64_t nextexp);
  std::uint64_t tmigr_quick_check(unsigned cpu, std::uint64_t nextevt) const;
  bool tmigr_requires_handle_remote(unsigned cpu, std::uint64_t now) const;
  // Returns the number of CPUs whose timers were expired remotely.
  unsigned tmigr_handle_remote(unsigned cpu, std::uint64_t now, TmigrHost& host);

  // Groups visited by walks so far (for the overhead model).
  std::uint64_t walk_steps() const { return walk_steps_; }

  // "" when the structural invariants hold, else the first violation.
  std::string check_invariants() const;
  // The CPUs below a group (for drawings and for tests of node purity).
  std::vector<unsigned> cpus_below(int group) const;

 private:
  struct Walk {
    std::uint64_t nextexp = KTIME_MAX;
    std::uint64_t firstexp = KTIME_MAX;
    int evt_owner = 0;  // owner of the event to queue at level 0: a CPU
    std::uint8_t childmask = 0;
    bool remote = false;
    std::uint64_t now = 0;
    bool check = false;
    bool tmc_active = false;
  };

  // Setup (both variants).
  int get_group(int node, unsigned lvl);
  void add_cpu(unsigned cpu);
  void setup_groups_v6_12(unsigned cpu, int node);
  void setup_groups_fixed(int cpu, int node, int start, bool activate);
  bool init_root_fixed(int group, bool activate);
  void connect_child_parent(int child, int parent, bool activate);
  void cpu_online(unsigned cpu);

  // Walks.
  template <class Up>
  void walk_groups_from(Up&& up, Walk& data, int child, int group);
  template <class Up>
  void walk_groups(Up&& up, Walk& data, unsigned cpu) { walk_groups_from(up, data, -1, cpus_[cpu].tmgroup); }
  bool tmigr_active_up(int group, Walk& data);
  bool tmigr_inactive_up(int group, int child, Walk& data);
  bool tmigr_update_events(int group, int child, Walk& data);
  bool tmigr_handle_remote_up(int group, Walk& data, TmigrHost& host, unsigned& handled);
  std::uint64_t tmigr_new_timer(unsigned cpu, std::uint64_t nextexp);
  std::uint64_t deactivate(unsigned cpu, std::uint64_t nextexp);
  void activate(unsigned cpu);
  bool tmigr_handle_remote_cpu(unsigned cpu, std::uint64_t now, TmigrHost& host);

  // Event queues.
  TmigrEvent& event_of(int owner) { return owner >= 0 ? cpus_[static_cast<unsigned>(owner)].cpuevt : groups_[static_cast<unsigned>(~owner)].groupevt; }
  const TmigrEvent& event_of(int owner) const {
    return owner >= 0 ? cpus_[static_cast<unsigned>(owner)].cpuevt : groups_[static_cast<unsigned>(~owner)].groupevt;
  }
  bool queue_add(TmigrGroup& g, int owner);  // true if it became the first
  bool queue_del(TmigrGroup& g, int owner);  // true if the queue is not empty after
  int tmigr_next_groupevt(int group);        // first non-ignored owner or INT_MIN; drops ignored
  int tmigr_next_expired_groupevt(int group, std::uint64_t now);

  unsigned levels_ = 0, crossnode_ = 0;
  TmigrSetup setup_;
  const Topology& topo_;
  std::vector<TmigrGroup> groups_;
  std::vector<std::vector<int>> level_list_;  // per level, newest group first
  std::vector<TmigrCpu> cpus_;
  int root_ = -1;  // the fixed variant remembers it (tmigr_root)
  unsigned current_cpu_ = 0;  // the CPU running tmigr_handle_remote
  std::uint64_t walk_steps_ = 0;
  bool remote_expires_self_ = true;
  TmigrTracer null_tracer_;
  TmigrTracer* tracer_;
};

// __walk_groups_from: call up(group, child, data) from `group` upward until
// it returns true or the top is passed; data.childmask follows the walk.
template <class Up>
void Tmigr::walk_groups_from(Up&& up, Walk& data, int child, int group) {
  while (group >= 0) {
    ++walk_steps_;
    if (up(group, child, data)) break;
    child = group;
    group = groups_[static_cast<unsigned>(group)].parent;
    data.childmask = groups_[static_cast<unsigned>(child)].groupmask;
  }
}

}  // namespace timerlab
