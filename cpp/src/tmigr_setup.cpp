// tmigr_setup.cpp — building the timer-migration hierarchy as CPUs come
// online (tmigr_init, tmigr_get_group, tmigr_setup_groups,
// tmigr_connect_child_parent, tmigr_cpu_online), in the two variants the
// kernel has had (see tmigr.hpp).
#include <algorithm>
#include <bit>
#include <stdexcept>

#include "timerlab/tmigr.hpp"

namespace timerlab {

namespace {

// order_base_2: ceil(log2(n)), 0 for n <= 1.
unsigned order_base_2(unsigned n) { return n <= 1 ? 0 : static_cast<unsigned>(std::bit_width(n - 1)); }
unsigned div_round_up(unsigned a, unsigned b) { return (a + b - 1) / b; }
std::uint8_t bit(unsigned n) { return static_cast<std::uint8_t>(1u << n); }

}  // namespace

Tmigr::Tmigr(const Topology& topo, TmigrSetup setup, TmigrTracer* tracer)
    : setup_(setup), topo_(topo), tracer_(tracer ? tracer : &null_tracer_) {
  const unsigned ncpus = topo.nr_cpus(), nnodes = topo.nr_nodes();
  cpus_.resize(ncpus);
  for (unsigned c = 0; c < ncpus; ++c) cpus_[c].cpuevt.cpu = c;
  if (ncpus == 1) return;  // uniprocessor: no hierarchy, every call is a pass-through
  // Levels to hold one node's CPUs, then levels to join the nodes; CPUs are
  // assumed spread evenly over the nodes, as the kernel assumes.
  const unsigned cpus_per_node = div_round_up(ncpus, nnodes);
  const unsigned cpulvl = div_round_up(order_base_2(cpus_per_node), 3);
  const unsigned nodelvl = div_round_up(order_base_2(nnodes), 3);
  levels_ = cpulvl + nodelvl;
  crossnode_ = cpulvl;
  level_list_.resize(levels_);
  // Boot: the boot CPU is prepared and comes online first; then every other
  // CPU is prepared (by an online CPU), then they come online in order.
  const auto& order = topo.bringup_order();
  tracer_->boot_cpu(order[0]);
  add_cpu(order[0]);
  cpu_online(order[0]);
  for (std::size_t i = 1; i < order.size(); ++i) add_cpu(order[i]);
  for (std::size_t i = 1; i < order.size(); ++i) {
    tracer_->boot_cpu(order[i]);
    cpu_online(order[i]);
  }
}

int Tmigr::root() const {
  if (setup_ == TmigrSetup::fixed) return root_;
  // v6_12 does not remember it: the single group of the highest level used.
  for (auto l = level_list_.rbegin(); l != level_list_.rend(); ++l) {
    if (!l->empty()) return l->size() == 1 ? l->front() : -1;
  }
  return -1;
}

int Tmigr::get_group(int node, unsigned lvl) {
  // Join the newest group of this level with room (of the same node below
  // the crossnode level); level lists keep the newest group first.
  for (int g : level_list_[lvl]) {
    const TmigrGroup& grp = groups_[static_cast<unsigned>(g)];
    if (lvl < crossnode_ && grp.numa_node != node) continue;
    if (grp.num_children >= TMIGR_CHILDREN_PER_GROUP) continue;
    return g;
  }
  const int g = static_cast<int>(groups_.size());
  TmigrGroup grp;
  grp.level = lvl;
  grp.numa_node = lvl < crossnode_ ? node : -1;
  if (setup_ == TmigrSetup::v6_12 && level_list_[lvl].empty()) {
    // A new top level pre-sets its groupmask and, above level 0, counts the
    // previous top as its first child in advance.
    grp.groupmask = bit(0);
    if (lvl > 0) grp.num_children = 1;
  }
  groups_.push_back(grp);
  level_list_[lvl].insert(level_list_[lvl].begin(), g);
  tracer_->group_set(*this, g);
  return g;
}

void Tmigr::add_cpu(unsigned cpu) {
  TmigrCpu& tmc = cpus_[cpu];
  tmc.cpuevt = TmigrEvent{};
  tmc.cpuevt.cpu = cpu;
  tmc.remote = false;
  tmc.wakeup = KTIME_MAX;
  const int node = topo_.node_of(cpu);
  if (setup_ == TmigrSetup::v6_12) {
    setup_groups_v6_12(cpu, node);
    return;
  }
  const int old_root = root_;
  setup_groups_fixed(static_cast<int>(cpu), node, -1, false);
  // The root changed: connect the old one to the new one, through groups of
  // the old root's own node.
  if (old_root >= 0 && old_root != root_) {
    setup_groups_fixed(-1, groups_[static_cast<unsigned>(old_root)].numa_node, old_root, true);
  }
}

void Tmigr::setup_groups_v6_12(unsigned cpu, int node) {
  std::vector<int> stack(levels_, -1);
  unsigned i = 0, top = 0;
  do {
    const int g = get_group(node, i);
    top = i;
    stack[i++] = g;
    // Stop at a group already connected, at the last level, or when the
    // next level is still empty and this level has a single group.
    if (groups_[static_cast<unsigned>(g)].parent >= 0 || i == levels_ ||
        (level_list_[i].empty() && level_list_[i - 1].size() == 1)) {
      break;
    }
  } while (i < levels_);

  while (i > 0) {
    const int g = stack[--i];
    if (i == 0) {
      TmigrGroup& grp = groups_[static_cast<unsigned>(g)];
      cpus_[cpu].tmgroup = g;
      cpus_[cpu].groupmask = bit(grp.num_children++);
      tracer_->connect_cpu_parent(*this, cpu);
      continue;
    }
    connect_child_parent(stack[i - 1], g, false);
    if (top != i) continue;
    // A new top level with the new CPU's chain and the pre-counted old top:
    // adopt every parentless group of the level below (the old top),
    // whatever its node.
    if (groups_[static_cast<unsigned>(g)].num_children == 2 && level_list_[top].size() == 1) {
      const std::vector<int> below = level_list_[top - 1];
      for (int child : below) {
        if (groups_[static_cast<unsigned>(child)].parent >= 0) continue;
        connect_child_parent(child, g, true);
      }
    }
  }
}

bool Tmigr::init_root_fixed(int group, bool activate) {
  TmigrGroup& grp = groups_[static_cast<unsigned>(group)];
  (void)activate;
  if (grp.parent < 0 && group != root_) {
    grp.groupmask = bit(0);  // a new top: its mask is known before it is visible
    return true;
  }
  return false;
}

void Tmigr::setup_groups_fixed(int cpu, int node, int start, bool activate) {
  std::vector<int> stack(levels_, -1);
  unsigned start_lvl = 0;
  if (start >= 0) {
    stack[groups_[static_cast<unsigned>(start)].level] = start;
    start_lvl = groups_[static_cast<unsigned>(start)].level + 1;
  }
  const bool root_mismatch = root_ >= 0 && groups_[static_cast<unsigned>(root_)].numa_node != node;
  unsigned i = start_lvl, top = start_lvl;
  for (; i < levels_; ++i) {
    const int g = get_group(node, i);
    top = i;
    stack[i] = g;
    if (groups_[static_cast<unsigned>(g)].parent >= 0) break;
    // With a node mismatch, build this node's groups up to the crossnode
    // level even where a level holds a single group.
    if ((!root_mismatch || i >= crossnode_) && level_list_[i].size() == 1) break;
  }
  if (i >= levels_) throw std::logic_error("tmigr_setup_groups: no single root");
  for (int l = static_cast<int>(i); l >= static_cast<int>(start_lvl); --l) {
    const int g = stack[static_cast<unsigned>(l)];
    if (l == 0) {
      TmigrGroup& grp = groups_[static_cast<unsigned>(g)];
      cpus_[static_cast<unsigned>(cpu)].tmgroup = g;
      cpus_[static_cast<unsigned>(cpu)].groupmask = bit(grp.num_children++);
      init_root_fixed(g, activate);
      tracer_->connect_cpu_parent(*this, static_cast<unsigned>(cpu));
      continue;
    }
    connect_child_parent(stack[static_cast<unsigned>(l) - 1], g, activate);
  }
  if (activate) {
    // The old root was active (the CPU doing the set-up is): activate the
    // new groups above it.
    Walk data;
    data.childmask = groups_[static_cast<unsigned>(start)].groupmask;
    walk_groups_from([this](int g, int, Walk& d) { return tmigr_active_up(g, d); }, data, start,
                     groups_[static_cast<unsigned>(start)].parent);
  }
  if (level_list_[top].size() == 1) root_ = level_list_[top].front();
}

void Tmigr::connect_child_parent(int child, int parent, bool activate) {
  TmigrGroup& c = groups_[static_cast<unsigned>(child)];
  TmigrGroup& p = groups_[static_cast<unsigned>(parent)];
  if (setup_ == TmigrSetup::fixed) {
    // A new root counts the old root (or the chain leading to it) as its
    // first child in advance.
    if (init_root_fixed(parent, activate)) p.num_children = 1;
    if (p.parent < 0 && activate) {
      c.groupmask = bit(0);
    } else {
      c.groupmask = bit(p.num_children++);
    }
    c.parent = parent;
    tracer_->connect_child_parent(*this, child);
    return;
  }
  // v6_12: the old top was created with groupmask BIT(0) and pre-counted.
  if (!activate) c.groupmask = bit(p.num_children++);
  c.parent = parent;
  tracer_->connect_child_parent(*this, child);
  if (!activate) return;
  Walk data;
  data.childmask = c.groupmask;
  tmigr_active_up(parent, data);
}

void Tmigr::cpu_online(unsigned cpu) {
  TmigrCpu& tmc = cpus_[cpu];
  tracer_->cpu_online(*this, cpu);
  tmc.idle = false;  // at boot the CPU's timer base is not idle
  activate(cpu);
  tmc.online = true;
}

std::vector<unsigned> Tmigr::cpus_below(int group) const {
  std::vector<unsigned> out;
  for (unsigned c = 0; c < cpus_.size(); ++c) {
    for (int g = cpus_[c].tmgroup; g >= 0; g = groups_[static_cast<unsigned>(g)].parent) {
      if (g == group) {
        out.push_back(c);
        break;
      }
    }
  }
  return out;
}

}  // namespace timerlab
