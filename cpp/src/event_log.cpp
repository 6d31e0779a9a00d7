// event_log.cpp — the schema of the simulator's tracepoints and the tracer
// that writes the timer_migration ones (see event_log.hpp).
#include "timerlab/event_log.hpp"

namespace timerlab {

const std::vector<SimEventSpec>& sim_event_schema() {
  using K = SlotKind;
  static const std::vector<SimEventSpec> schema = [] {
    const std::vector<SlotSpec> timer_only = {{"timer", K::ptr, 0}};
    const std::vector<SlotSpec> group_state = {{"group", K::ptr, 0},  {"lvl", K::i64, 1},      {"numa", K::i64, 2},
                                               {"active", K::hex, 3}, {"migrator", K::hex, 4}, {"parent", K::ptr, 5},
                                               {"childmask", K::hex, 6}};
    const std::vector<SlotSpec> tmigr_cpu = {{"cpu_id", K::i64, 0}, {"parent", K::ptr, 1}, {"wakeup_ns", K::u64, 2}};
    const std::vector<SlotSpec> tmigr_cpu_nextevt = {
        {"cpu_id", K::i64, 0}, {"parent", K::ptr, 1}, {"nextevt_ns", K::u64, 2}, {"wakeup_ns", K::u64, 3}};
    std::vector<SimEventSpec> s(static_cast<std::size_t>(SimEvent::count_));
    auto set = [&](SimEvent e, std::string_view name, std::vector<SlotSpec> slots) {
      s[static_cast<std::size_t>(e)] = {name, std::move(slots)};
    };
    set(SimEvent::timer_start, "timer_start",
        {{"timer", K::ptr, 0},
         {"function", K::function, 1},
         {"expires_jiffies", K::u64, 2},
         {"timeout_jiffies", K::i64, 3},
         {"bucket_expiry_jiffies", K::u64, 4},
         {"base_cpu", K::i64, 5},
         {"idx", K::i64, 6},
         {"flags", K::timer_flags, 7}});
    set(SimEvent::timer_cancel, "timer_cancel", timer_only);
    set(SimEvent::timer_expire_entry, "timer_expire_entry",
        {{"timer", K::ptr, 0}, {"function", K::function, 1}, {"now_jiffies", K::u64, 2}, {"baseclk_jiffies", K::u64, 3}});
    set(SimEvent::timer_expire_exit, "timer_expire_exit", timer_only);
    set(SimEvent::timer_base_idle, "timer_base_idle", {{"is_idle", K::i64, 0}, {"cpu_id", K::i64, 1}});
    set(SimEvent::tick_stop, "tick_stop", {{"success", K::i64, 0}});
    set(SimEvent::cpu_idle, "cpu_idle", {{"state", K::i64, 0}, {"cpu_id", K::i64, 1}});
    set(SimEvent::ipi_send_cpu, "ipi_send_cpu", {{"target_cpu", K::i64, 0}});
    set(SimEvent::sched_wakeup, "sched_wakeup", {{"wakee_pid", K::i64, 0}, {"target_cpu", K::i64, 1}});
    set(SimEvent::tmigr_group_set, "tmigr_group_set", {{"group", K::ptr, 0}, {"lvl", K::i64, 1}, {"numa", K::i64, 2}});
    set(SimEvent::tmigr_connect_child_parent, "tmigr_connect_child_parent",
        {{"group", K::ptr, 0},
         {"groupmask", K::hex, 1},
         {"parent", K::ptr, 2},
         {"lvl", K::i64, 3},
         {"numa", K::i64, 4},
         {"num_children", K::i64, 5}});
    set(SimEvent::tmigr_connect_cpu_parent, "tmigr_connect_cpu_parent",
        {{"cpu_id", K::i64, 0},
         {"groupmask", K::hex, 1},
         {"parent", K::ptr, 2},
         {"lvl", K::i64, 3},
         {"numa", K::i64, 4},
         {"num_children", K::i64, 5}});
    set(SimEvent::tmigr_group_set_cpu_active, "tmigr_group_set_cpu_active", group_state);
    set(SimEvent::tmigr_group_set_cpu_inactive, "tmigr_group_set_cpu_inactive", group_state);
    set(SimEvent::tmigr_cpu_online, "tmigr_cpu_online", tmigr_cpu);
    set(SimEvent::tmigr_cpu_active, "tmigr_cpu_active", tmigr_cpu);
    set(SimEvent::tmigr_cpu_new_timer, "tmigr_cpu_new_timer", tmigr_cpu);
    set(SimEvent::tmigr_handle_remote_cpu, "tmigr_handle_remote_cpu", tmigr_cpu);
    set(SimEvent::tmigr_cpu_idle, "tmigr_cpu_idle", tmigr_cpu_nextevt);
    set(SimEvent::tmigr_cpu_new_timer_idle, "tmigr_cpu_new_timer_idle", tmigr_cpu_nextevt);
    set(SimEvent::tmigr_update_events, "tmigr_update_events",
        {{"child", K::ptr, 0},
         {"group", K::ptr, 1},
         {"group_lvl", K::i64, 2},
         {"child_active", K::hex, 3},
         {"group_active", K::hex, 4},
         {"nextevt_ns", K::u64, 5},
         {"next_expiry_ns", K::u64, 6},
         {"child_evt_expiry_ns", K::u64, 7},
         {"child_evtcpu", K::i64, 8}});
    set(SimEvent::tmigr_handle_remote, "tmigr_handle_remote", {{"group", K::ptr, 0}, {"lvl", K::i64, 1}});
    // Pointer ids of hrtimers: id + 1 (the tick's are CPU + 1: set up first).
    set(SimEvent::hrtimer_start, "hrtimer_start",
        {{"hrtimer", K::ptr, 0},
         {"function", K::function, 1},
         {"expires_ns", K::u64, 2},
         {"softexpires_ns", K::u64, 3},
         {"mode", K::hrtimer_mode, 4},
         {"was_armed", K::i64, 5}});
    set(SimEvent::hrtimer_cancel, "hrtimer_cancel", {{"hrtimer", K::ptr, 0}});
    set(SimEvent::hrtimer_expire_entry, "hrtimer_expire_entry",
        {{"hrtimer", K::ptr, 0}, {"function", K::function, 1}, {"now_ns", K::u64, 2}});
    set(SimEvent::hrtimer_expire_exit, "hrtimer_expire_exit", {{"hrtimer", K::ptr, 0}});
    return s;
  }();
  return schema;
}

namespace {

std::uint64_t i64(long long v) { return static_cast<std::uint64_t>(v); }

const TmigrGroup& group_of(const Tmigr& t, int g) { return t.groups()[static_cast<std::size_t>(g)]; }

}  // namespace

void TmigrLogTracer::group_set(const Tmigr& t, int group) {
  const TmigrGroup& g = group_of(t, group);
  log_.add(SimEvent::tmigr_group_set, {group_ptr(group), g.level, i64(g.numa_node)});
}

void TmigrLogTracer::connect_child_parent(const Tmigr& t, int child) {
  const TmigrGroup& c = group_of(t, child);
  const TmigrGroup& p = group_of(t, c.parent);
  log_.add(SimEvent::tmigr_connect_child_parent,
           {group_ptr(child), c.groupmask, group_ptr(c.parent), p.level, i64(p.numa_node), p.num_children});
}

void TmigrLogTracer::connect_cpu_parent(const Tmigr& t, unsigned cpu) {
  const TmigrCpu& tmc = t.cpu(cpu);
  const TmigrGroup& p = group_of(t, tmc.tmgroup);
  log_.add(SimEvent::tmigr_connect_cpu_parent,
           {cpu, tmc.groupmask, group_ptr(tmc.tmgroup), p.level, i64(p.numa_node), p.num_children});
}

void TmigrLogTracer::group_state_event(const Tmigr& t, SimEvent e, int group, std::uint8_t childmask) {
  const TmigrGroup& g = group_of(t, group);
  log_.add(e, {group_ptr(group), g.level, i64(g.numa_node), g.state.active, g.state.migrator, group_ptr(g.parent),
               childmask});
}

void TmigrLogTracer::update_events(const Tmigr& t, int child, int group, TmigrState child_state,
                                   TmigrState group_state, std::uint64_t nextexp) {
  const TmigrGroup& g = group_of(t, group);
  const TmigrEvent* cevt = child >= 0 ? &group_of(t, child).groupevt : nullptr;
  log_.add(SimEvent::tmigr_update_events,
           {group_ptr(child), group_ptr(group), g.level, child_state.active, group_state.active, nextexp,
            g.next_expiry, cevt ? cevt->expires : 0, cevt ? cevt->cpu : 0});
}

void TmigrLogTracer::cpu_event(const Tmigr& t, SimEvent e, unsigned cpu) {
  const TmigrCpu& tmc = t.cpu(cpu);
  log_.add(e, {cpu, group_ptr(tmc.tmgroup), tmc.wakeup});
}

void TmigrLogTracer::cpu_nextevt_event(const Tmigr& t, SimEvent e, unsigned cpu, std::uint64_t nextevt) {
  const TmigrCpu& tmc = t.cpu(cpu);
  log_.add(e, {cpu, group_ptr(tmc.tmgroup), nextevt, tmc.wakeup});
}

void TmigrLogTracer::handle_remote(const Tmigr& t, int group) {
  log_.add(SimEvent::tmigr_handle_remote, {group_ptr(group), group_of(t, group).level});
}

}  // namespace timerlab
