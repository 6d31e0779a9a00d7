// tmigr.cpp — the walks of the timer-migration hierarchy (see tmigr.hpp):
// going idle, waking, new timers while idle, remote expiry, quick check.
#include <algorithm>
#include <bit>
#include <climits>
#include <sstream>
#include <stdexcept>

#include "timerlab/tmigr.hpp"

namespace timerlab {

namespace {

constexpr int kNoEvent = INT_MIN;

// Debug builds check the hierarchy's invariants after every entry point
// (reference §4.9); release builds leave that to Config(check_invariants=True).
#ifdef NDEBUG
#define TMIGR_DEBUG_CHECK() ((void)0)
#else
#define TMIGR_DEBUG_CHECK()                                                              \
  do {                                                                                   \
    const std::string problem_ = check_invariants();                                     \
    if (!problem_.empty()) throw std::logic_error("tmigr invariant violated: " + problem_); \
  } while (0)
#endif

bool check_migrator(const TmigrGroup& g, std::uint8_t childmask) {
  return g.state.migrator == childmask || g.state.migrator == TMIGR_NONE;
}

bool lonely(const TmigrGroup& g) { return std::popcount(g.state.active) <= 1; }

}  // namespace

// ---------------------------------------------------------------------------
// Event queues: at most 8 entries (one per child), kept sorted.

bool Tmigr::queue_add(TmigrGroup& g, int owner) {
  TmigrEvent& evt = event_of(owner);
  // Equal expiries queue after the ones already there (timerqueue order).
  auto pos = std::upper_bound(g.events.begin(), g.events.end(), evt.expires,
                              [this](std::uint64_t e, int o) { return e < event_of(o).expires; });
  const bool first = pos == g.events.begin();
  g.events.insert(pos, owner);
  evt.queued = true;
  return first;
}

bool Tmigr::queue_del(TmigrGroup& g, int owner) {
  g.events.erase(std::find(g.events.begin(), g.events.end(), owner));
  event_of(owner).queued = false;
  return !g.events.empty();
}

int Tmigr::tmigr_next_groupevt(int group) {
  TmigrGroup& g = groups_[static_cast<unsigned>(group)];
  g.next_expiry = KTIME_MAX;
  while (!g.events.empty()) {
    const int owner = g.events.front();
    const TmigrEvent& evt = event_of(owner);
    if (!evt.ignore) {
      g.next_expiry = evt.expires;
      return owner;
    }
    // Ignored events (their owner woke up) are dropped when a queue is read.
    queue_del(g, owner);
  }
  return kNoEvent;
}

int Tmigr::tmigr_next_expired_groupevt(int group, std::uint64_t now) {
  const int owner = tmigr_next_groupevt(group);
  if (owner == kNoEvent || now < event_of(owner).expires) return kNoEvent;
  queue_del(groups_[static_cast<unsigned>(group)], owner);
  tmigr_next_groupevt(group);
  return owner;
}

// ---------------------------------------------------------------------------
// Becoming active.

bool Tmigr::tmigr_active_up(int group, Walk& data) {
  TmigrGroup& g = groups_[static_cast<unsigned>(group)];
  bool walk_done = true;
  if (g.state.migrator == TMIGR_NONE) {
    // Nobody did remote expiry here: the waking child takes it on, and the
    // change must reach the parent.
    g.state.migrator = data.childmask;
    walk_done = false;
  }
  g.state.active |= data.childmask;
  ++g.state.seq;
  tracer_->group_set_cpu_active(*this, group, data.childmask);
  // The group's event may stay queued in the parent; it is ignored now that
  // this group's migrator covers it.
  g.groupevt.ignore = true;
  return walk_done;
}

void Tmigr::activate(unsigned cpu) {
  TmigrCpu& tmc = cpus_[cpu];
  Walk data;
  data.childmask = tmc.groupmask;
  tracer_->cpu_active(*this, cpu);
  tmc.cpuevt.ignore = true;
  tmc.wakeup = KTIME_MAX;
  walk_groups([this](int g, int, Walk& d) { return tmigr_active_up(g, d); }, data, cpu);
}

void Tmigr::tmigr_cpu_activate(unsigned cpu) {
  TmigrCpu& tmc = cpus_[cpu];
  if (tmc.tmgroup < 0 || !tmc.online || !tmc.idle) return;
  tmc.idle = false;
  activate(cpu);
  TMIGR_DEBUG_CHECK();
}

// ---------------------------------------------------------------------------
// Propagating events (tmigr_update_events): the only place a group event's
// expiry is set.

bool Tmigr::tmigr_update_events(int group, int child, Walk& data) {
  TmigrGroup& g = groups_[static_cast<unsigned>(group)];
  TmigrState childstate, groupstate;
  childstate.migrator = 0;
  const bool remote = data.remote;
  bool walk_done = false, ignore;
  std::uint64_t nextexp;
  int owner, first_owner;

  if (child >= 0) {
    TmigrGroup& c = groups_[static_cast<unsigned>(child)];
    childstate = c.state;
    groupstate = g.state;
    if (childstate.active) return true;  // the child woke meanwhile: its migrator covers it
    first_owner = tmigr_next_groupevt(child);
    nextexp = c.next_expiry;
    owner = ~child;
    ignore = nextexp == KTIME_MAX;
    c.groupevt.ignore = ignore;
  } else {
    nextexp = data.nextexp;
    owner = first_owner = data.evt_owner;
    ignore = event_of(owner).ignore;
    // An ignored CPU event need not be touched here when a parent exists:
    // the parent's update drops it. After a remote expiry the walk must go
    // on regardless, not to lose events queued in idle groups.
    if (ignore && !remote && g.parent >= 0) return true;
    childstate.active = 0;
    groupstate = g.state;
  }

  TmigrEvent& evt = event_of(owner);
  bool skip_to_top = false;
  if (evt.queued) {
    if (evt.expires == nextexp && !ignore) {
      // Same expiry: only make sure the CPU to expire is the current one.
      evt.cpu = event_of(first_owner).cpu;
      skip_to_top = true;
    } else if (!queue_del(g, owner)) {
      g.next_expiry = KTIME_MAX;
    }
  }
  if (!skip_to_top) {
    if (ignore) {
      if (!remote || groupstate.active) walk_done = true;
    } else {
      evt.expires = nextexp;
      evt.cpu = event_of(first_owner).cpu;
      if (queue_add(g, owner)) g.next_expiry = nextexp;
    }
  }
  if (g.parent < 0 && groupstate.migrator == TMIGR_NONE) {
    walk_done = true;
    // The top is idle: hand its first event back so that a CPU wakes for it
    // (not during remote handling, which computes that itself).
    if (remote) return walk_done;
    const int first = tmigr_next_groupevt(group);
    data.firstexp = first == kNoEvent ? KTIME_MAX : event_of(first).expires;
  }
  tracer_->update_events(*this, child, group, childstate, groupstate, nextexp);
  return walk_done;
}

std::uint64_t Tmigr::tmigr_new_timer(unsigned cpu, std::uint64_t nextexp) {
  TmigrCpu& tmc = cpus_[cpu];
  if (tmc.remote) return KTIME_MAX;
  tracer_->cpu_new_timer(*this, cpu);
  tmc.cpuevt.ignore = false;
  Walk data;
  data.nextexp = nextexp;
  data.evt_owner = static_cast<int>(cpu);
  data.childmask = tmc.groupmask;
  walk_groups([this](int g, int c, Walk& d) { return tmigr_update_events(g, c, d); }, data, cpu);
  return data.firstexp;
}

std::uint64_t Tmigr::tmigr_cpu_new_timer(unsigned cpu, std::uint64_t nextexp) {
  TmigrCpu& tmc = cpus_[cpu];
  if (tmc.tmgroup < 0 || !tmc.online) return nextexp;
  std::uint64_t ret = tmc.wakeup;
  if (nextexp != KTIME_MAX && (nextexp != tmc.cpuevt.expires || tmc.cpuevt.ignore)) {
    ret = tmigr_new_timer(cpu, nextexp);
    tmc.wakeup = ret;
  }
  tracer_->cpu_new_timer_idle(*this, cpu, nextexp);
  TMIGR_DEBUG_CHECK();
  return ret;
}

// ---------------------------------------------------------------------------
// Going idle.

bool Tmigr::tmigr_inactive_up(int group, int child, Walk& data) {
  TmigrGroup& g = groups_[static_cast<unsigned>(group)];
  const std::uint8_t childmask = data.childmask;
  const std::uint8_t child_active = child >= 0 ? groups_[static_cast<unsigned>(child)].state.active : 0;
  bool walk_done = true;
  if (!child_active) g.state.active &= static_cast<std::uint8_t>(~childmask);
  if (g.state.migrator == childmask && !child_active) {
    // Hand the migrator role to the lowest active sibling, or to nobody —
    // then the parent must learn this group went idle.
    if (g.state.active) {
      g.state.migrator = static_cast<std::uint8_t>(1u << std::countr_zero(g.state.active));
    } else {
      g.state.migrator = TMIGR_NONE;
      walk_done = false;
    }
  }
  ++g.state.seq;
  tracer_->group_set_cpu_inactive(*this, group, childmask);
  data.remote = false;
  tmigr_update_events(group, child, data);
  return walk_done;
}

std::uint64_t Tmigr::deactivate(unsigned cpu, std::uint64_t nextexp) {
  TmigrCpu& tmc = cpus_[cpu];
  Walk data;
  data.nextexp = nextexp;
  data.evt_owner = static_cast<int>(cpu);
  data.childmask = tmc.groupmask;
  // KTIME_MAX: the local timer comes first, or there is no global timer.
  if (nextexp != KTIME_MAX) tmc.cpuevt.ignore = false;
  walk_groups([this](int g, int c, Walk& d) { return tmigr_inactive_up(g, c, d); }, data, cpu);
  return data.firstexp;
}

std::uint64_t Tmigr::tmigr_cpu_deactivate(unsigned cpu, std::uint64_t nextexp) {
  TmigrCpu& tmc = cpus_[cpu];
  if (tmc.tmgroup < 0 || !tmc.online) return nextexp;
  const std::uint64_t ret = deactivate(cpu, nextexp);
  tmc.idle = true;
  tmc.wakeup = ret;
  tracer_->cpu_idle(*this, cpu, nextexp);
  TMIGR_DEBUG_CHECK();
  return ret;
}

std::uint64_t Tmigr::tmigr_quick_check(unsigned cpu, std::uint64_t nextevt) const {
  const TmigrCpu& tmc = cpus_[cpu];
  if (tmc.tmgroup < 0 || !tmc.online || tmc.idle) return nextevt;
  const TmigrGroup* g = &groups_[static_cast<unsigned>(tmc.tmgroup)];
  if (!(check_migrator(*g, tmc.groupmask) && lonely(*g))) return KTIME_MAX;
  // Lone migrator all the way up: the first event is the lowest next_expiry
  // met on the way (events are not sorted bottom-up while this CPU is active).
  for (;;) {
    if (!lonely(*g)) return KTIME_MAX;
    nextevt = std::min(nextevt, g->next_expiry);
    if (g->parent < 0) return nextevt;
    g = &groups_[static_cast<unsigned>(g->parent)];
  }
}

// ---------------------------------------------------------------------------
// Remote expiry.

bool Tmigr::tmigr_requires_handle_remote(unsigned cpu, std::uint64_t now) const {
  const TmigrCpu& tmc = cpus_[cpu];
  if (tmc.tmgroup < 0 || !tmc.online) return false;
  if (tmc.idle) return now >= tmc.wakeup;
  std::uint8_t childmask = tmc.groupmask;
  for (int group = tmc.tmgroup; group >= 0;) {
    const TmigrGroup& g = groups_[static_cast<unsigned>(group)];
    if (!check_migrator(g, childmask)) return false;
    if (now >= g.next_expiry) return true;
    childmask = g.groupmask;
    group = g.parent;
  }
  return false;
}

bool Tmigr::tmigr_handle_remote_cpu(unsigned cpu, std::uint64_t now, TmigrHost& host) {
  TmigrCpu& tmc = cpus_[cpu];
  // Offline, already being handled, awake again, or its event moved later:
  // nothing to do.
  if (!tmc.online || tmc.remote || tmc.cpuevt.ignore || now < tmc.cpuevt.expires) return false;
  tracer_->handle_remote_cpu(*this, cpu);
  tmc.remote = true;
  tmc.wakeup = KTIME_MAX;
  if (cpu != current_cpu_ || remote_expires_self_) host.timer_expire_remote(cpu);
  if (tmc.online && tmc.idle) {
    // Re-queue the CPU's next global event; walk even for an ignored event
    // so that events queued in idle groups above are not lost.
    Walk data;
    data.nextexp = host.fetch_next_global_remote(cpu);
    data.evt_owner = static_cast<int>(cpu);
    data.childmask = tmc.groupmask;
    data.remote = true;
    walk_groups([this](int g, int c, Walk& d) { return tmigr_update_events(g, c, d); }, data, cpu);
  }
  tmc.remote = false;
  return true;
}

bool Tmigr::tmigr_handle_remote_up(int group, Walk& data, TmigrHost& host, unsigned& handled) {
  tracer_->handle_remote(*this, group);
  for (;;) {
    // Only this group's migrator (or anyone, if it has none) handles it.
    if (!check_migrator(groups_[static_cast<unsigned>(group)], data.childmask)) return true;
    const int owner = tmigr_next_expired_groupevt(group, data.now);
    if (owner == kNoEvent) break;
    if (tmigr_handle_remote_cpu(event_of(owner).cpu, data.now, host)) ++handled;
    if (host.remote_yield()) {
      // Back later for the rest: the CPU keeps the duty for the expired event.
      data.firstexp = groups_[static_cast<unsigned>(group)].next_expiry;
      return true;
    }
  }
  data.firstexp = groups_[static_cast<unsigned>(group)].next_expiry;
  return false;
}

unsigned Tmigr::tmigr_handle_remote(unsigned cpu, std::uint64_t now, TmigrHost& host) {
  TmigrCpu& tmc = cpus_[cpu];
  if (tmc.tmgroup < 0 || !tmc.online) return 0;
  // Not the migrator and no wakeup duty: nothing to chase.
  if (!check_migrator(groups_[static_cast<unsigned>(tmc.tmgroup)], tmc.groupmask) && tmc.wakeup == KTIME_MAX) {
    return 0;
  }
  Walk data;
  data.childmask = tmc.groupmask;
  data.now = now;
  unsigned handled = 0;
  current_cpu_ = cpu;
  walk_groups([&](int g, int, Walk& d) { return tmigr_handle_remote_up(g, d, host, handled); }, data, cpu);
  tmc.wakeup = data.firstexp;
  TMIGR_DEBUG_CHECK();
  return handled;
}

// ---------------------------------------------------------------------------
// Invariants (reference §4.9, items 1-3).

std::string Tmigr::check_invariants() const {
  std::ostringstream err;
  for (unsigned gi = 0; gi < groups_.size(); ++gi) {
    const TmigrGroup& g = groups_[gi];
    if ((g.state.migrator == TMIGR_NONE) != (g.state.active == 0)) {
      err << "group " << gi << ": migrator " << int(g.state.migrator) << " with active mask " << int(g.state.active);
      return err.str();
    }
    if (g.state.migrator != TMIGR_NONE && !(g.state.migrator & g.state.active)) {
      err << "group " << gi << ": migrator " << int(g.state.migrator) << " is not active";
      return err.str();
    }
    if (g.parent >= 0) {
      const bool in_parent = groups_[static_cast<unsigned>(g.parent)].state.active & g.groupmask;
      if (in_parent != (g.state.active != 0)) {
        err << "group " << gi << " has active " << int(g.state.active) << " but its bit in group " << g.parent
            << " is " << in_parent;
        return err.str();
      }
      if (g.state.active && !g.groupevt.ignore) {
        err << "active group " << gi << " has a non-ignored event";
        return err.str();
      }
    }
    for (std::size_t k = 0; k < g.events.size(); ++k) {
      const int owner = g.events[k];
      const int owner_parent = owner >= 0 ? cpus_[static_cast<unsigned>(owner)].tmgroup
                                          : groups_[static_cast<unsigned>(~owner)].parent;
      if (owner_parent != static_cast<int>(gi) || !event_of(owner).queued) {
        err << "group " << gi << " queues an event of a child it does not have";
        return err.str();
      }
      if (k && event_of(g.events[k - 1]).expires > event_of(owner).expires) {
        err << "group " << gi << ": events out of order";
        return err.str();
      }
    }
  }
  for (unsigned c = 0; c < cpus_.size(); ++c) {
    const TmigrCpu& tmc = cpus_[c];
    if (tmc.tmgroup < 0 || !tmc.online) continue;
    const bool in_group = groups_[static_cast<unsigned>(tmc.tmgroup)].state.active & tmc.groupmask;
    if (in_group == tmc.idle) {
      err << "CPU " << c << " idle=" << tmc.idle << " but its bit in group " << tmc.tmgroup << " is " << in_group;
      return err.str();
    }
    if (!tmc.idle && !tmc.cpuevt.ignore) {
      err << "active CPU " << c << " has a non-ignored event";
      return err.str();
    }
  }
  return {};
}

}  // namespace timerlab
