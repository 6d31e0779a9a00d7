// ftrace_schema.cpp — the table of every event the reader models: what its
// payload prints and which column each key goes to (see ftrace.hpp).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "timerlab/ftrace.hpp"

namespace timerlab {
// ---------------------------------------------------------------------------
// The schema: what every modelled event prints, one entry per event.

namespace {

void check_schema(const std::vector<EventSpec>& schema) {
  static constexpr std::string_view kLineColumns[] = {"ts_ns", "cpu",  "task",   "pid",
                                                      "event", "line", "payload", "tgid",
                                                      "latency_flags"};
  std::unordered_map<std::string_view, ColumnStorage> storage;
  std::unordered_set<std::string_view> names;
  for (const EventSpec& e : schema) {
    const std::string where = "ftrace_schema: " + std::string(e.name);
    if (!names.insert(e.name).second) throw std::logic_error(where + " listed twice");
    if (e.fields.size() > kMaxFieldsPerEvent) throw std::logic_error(where + ": too many fields");
    std::unordered_set<std::string_view> keys;
    for (const FieldSpec& f : e.fields) {
      if (!keys.insert(f.key).second) throw std::logic_error(where + ": key " + std::string(f.key) + " twice");
      if (std::find(std::begin(kLineColumns), std::end(kLineColumns), f.column) != std::end(kLineColumns)) {
        throw std::logic_error(where + ": column " + std::string(f.column) + " collides with a line column");
      }
      const auto [it, inserted] = storage.emplace(f.column, storage_of(f.kind));
      if (!inserted && it->second != storage_of(f.kind)) {
        throw std::logic_error(where + ": column " + std::string(f.column) + " changes storage");
      }
    }
  }
}

}  // namespace

const std::vector<EventSpec>& ftrace_schema() {
  using K = FieldKind;
  constexpr auto kv = PayloadShape::KeyValue;
  constexpr auto opt = Presence::Optional;
  static const std::vector<EventSpec> schema = [&] {
    const std::vector<FieldSpec> timer_only = {{"timer", "timer", K::Ptr}};
    const std::vector<FieldSpec> hrtimer_only = {{"hrtimer", "hrtimer", K::Ptr}};
    const std::vector<FieldSpec> hrtimer_setup = {
        {"hrtimer", "hrtimer", K::Ptr}, {"clockid", "clockid", K::Str}, {"mode", "mode", K::Str}};
    const std::vector<FieldSpec> wakeup = {{"comm", "wakee_comm", K::Comm},
                                           {"pid", "wakee_pid", K::I64},
                                           {"prio", "wakee_prio", K::I64},
                                           {"target_cpu", "target_cpu", K::I64, opt}};
    const std::vector<FieldSpec> softirq = {{"vec", "vec", K::I64}, {"action", "action", K::Str}};
    const std::vector<FieldSpec> tmigr_set_cpu = {
        {"group", "group", K::Ptr},    {"lvl", "lvl", K::I64},           {"numa", "numa", K::I64},
        {"active", "active", K::Hex},  {"migrator", "migrator", K::Hex}, {"parent", "parent", K::Ptr},
        {"childmask", "childmask", K::Hex}};
    const std::vector<FieldSpec> tmigr_cpu = {
        {"cpu", "cpu_id", K::I64}, {"parent", "parent", K::Ptr}, {"wakeup", "wakeup_ns", K::U64}};
    const std::vector<FieldSpec> tmigr_cpu_idle = {{"cpu", "cpu_id", K::I64},
                                                   {"parent", "parent", K::Ptr},
                                                   {"nextevt", "nextevt_ns", K::U64},
                                                   {"wakeup", "wakeup_ns", K::U64}};

    std::vector<EventSpec> s = {
        // include/trace/events/timer.h
        {"timer_init", kv, timer_only},
        {"timer_start",
         kv,
         {{"timer", "timer", K::Ptr},
          {"function", "function", K::Str},
          {"expires", "expires_jiffies", K::U64},
          {"timeout", "timeout_jiffies", K::I64, opt},
          {"bucket_expiry", "bucket_expiry_jiffies", K::U64, opt},  // >= 6.8
          {"cpu", "base_cpu", K::I64, opt},
          {"idx", "idx", K::I64, opt},
          {"flags", "flags", K::Str, opt}}},
        {"timer_expire_entry",
         kv,
         {{"timer", "timer", K::Ptr},
          {"function", "function", K::Str},
          {"now", "now_jiffies", K::U64},
          {"baseclk", "baseclk_jiffies", K::U64, opt}}},
        {"timer_expire_exit", kv, timer_only},
        {"timer_cancel", kv, timer_only},
        {"timer_base_idle", kv, {{"is_idle", "is_idle", K::I64}, {"cpu", "cpu_id", K::I64}}},
        {"tick_stop", kv, {{"success", "success", K::I64}, {"dependency", "dependency", K::Str}}},
        {"hrtimer_setup", kv, hrtimer_setup},
        {"hrtimer_init", kv, hrtimer_setup},
        // trace-cmd's hrtimer plugin prints hrtimer_start without mode and
        // hrtimer_expire_entry without function.
        {"hrtimer_start",
         kv,
         {{"hrtimer", "hrtimer", K::Ptr},
          {"function", "function", K::Str},
          {"expires", "expires_ns", K::U64},
          {"softexpires", "softexpires_ns", K::U64},
          {"mode", "mode", K::Str, opt},
          {"was_armed", "was_armed", K::I64, opt}}},
        {"hrtimer_expire_entry",
         kv,
         {{"hrtimer", "hrtimer", K::Ptr}, {"function", "function", K::Str, opt}, {"now", "now_ns", K::U64}}},
        {"hrtimer_expire_exit", kv, hrtimer_only},
        {"hrtimer_cancel", kv, hrtimer_only},
        // include/trace/events/power.h
        {"cpu_idle", kv, {{"state", "state", K::I64}, {"cpu_id", "cpu_id", K::I64}}},
        {"cpu_idle_miss", kv, {{"cpu_id", "cpu_id", K::I64}, {"state", "state", K::I64}, {"type", "type", K::Str}}},
        {"cpu_frequency", kv, {{"state", "frequency_khz", K::I64}, {"cpu_id", "cpu_id", K::I64}}},
        // include/trace/events/sched.h
        {"sched_switch",
         PayloadShape::SchedSwitch,
         {{"prev_comm", "prev_comm", K::Comm},
          {"prev_pid", "prev_pid", K::I64},
          {"prev_prio", "prev_prio", K::I64},
          {"prev_state", "prev_state", K::Str},
          {"next_comm", "next_comm", K::Comm},
          {"next_pid", "next_pid", K::I64},
          {"next_prio", "next_prio", K::I64}}},
        {"sched_wakeup", PayloadShape::SchedWakeup, wakeup},
        {"sched_waking", PayloadShape::SchedWakeup, wakeup},
        {"sched_wakeup_new", PayloadShape::SchedWakeup, wakeup},
        {"sched_wake_idle_without_ipi", kv, {{"cpu", "target_cpu", K::I64}}},
        // include/trace/events/ipi.h
        {"ipi_send_cpu",
         kv,
         {{"cpu", "target_cpu", K::I64}, {"callsite", "callsite", K::Str}, {"callback", "callback", K::Str}}},
        {"ipi_send_cpumask",
         kv,
         {{"cpumask", "cpumask", K::Str}, {"callsite", "callsite", K::Str}, {"callback", "callback", K::Str}}},
        // include/trace/events/irq.h
        {"softirq_entry", kv, softirq},
        {"softirq_exit", kv, softirq},
        {"softirq_raise", kv, softirq},
        // include/trace/events/timer_migration.h
        {"tmigr_group_set", kv, {{"group", "group", K::Ptr}, {"lvl", "lvl", K::I64}, {"numa", "numa", K::I64}}},
        {"tmigr_connect_child_parent",
         kv,
         {{"group", "group", K::Ptr},
          {"groupmask", "groupmask", K::Hex},
          {"parent", "parent", K::Ptr},
          {"lvl", "lvl", K::I64},
          {"numa", "numa", K::I64},
          {"capacity", "capacity", K::I64, opt},  // newest kernels
          {"num_children", "num_children", K::I64}}},
        {"tmigr_connect_cpu_parent",
         kv,
         {{"cpu", "cpu_id", K::I64},
          {"groupmask", "groupmask", K::Hex},
          {"parent", "parent", K::Ptr},
          {"lvl", "lvl", K::I64},
          {"numa", "numa", K::I64},
          {"capacity", "capacity", K::I64, opt},
          {"num_children", "num_children", K::I64}}},
        {"tmigr_group_set_cpu_active", kv, tmigr_set_cpu},
        {"tmigr_group_set_cpu_inactive", kv, tmigr_set_cpu},
        {"tmigr_cpu_new_timer", kv, tmigr_cpu},
        {"tmigr_cpu_active", kv, tmigr_cpu},
        {"tmigr_cpu_online", kv, tmigr_cpu},
        {"tmigr_cpu_offline", kv, tmigr_cpu},
        {"tmigr_cpu_available", kv, tmigr_cpu},    // tmigr_cpu_online, renamed
        {"tmigr_cpu_unavailable", kv, tmigr_cpu},  // tmigr_cpu_offline, renamed
        {"tmigr_handle_remote_cpu", kv, tmigr_cpu},
        {"tmigr_cpu_idle", kv, tmigr_cpu_idle},
        {"tmigr_cpu_new_timer_idle", kv, tmigr_cpu_idle},
        {"tmigr_update_events",
         kv,
         {{"child", "child", K::Ptr},
          {"group", "group", K::Ptr},
          {"group_lvl", "group_lvl", K::I64},
          {"child_active", "child_active", K::Hex},
          {"group_active", "group_active", K::Hex},
          {"nextevt", "nextevt_ns", K::U64},
          {"next_expiry", "next_expiry_ns", K::U64},
          {"child_evt_expiry", "child_evt_expiry_ns", K::U64},
          {"child_evtcpu", "child_evtcpu", K::I64}}},
        {"tmigr_handle_remote", kv, {{"group", "group", K::Ptr}, {"lvl", "lvl", K::I64}}},
    };
    check_schema(s);
    return s;
  }();
  return schema;
}

const char* to_string(FieldKind k) {
  switch (k) {
    case FieldKind::I64:
      return "i64";
    case FieldKind::U64:
      return "u64";
    case FieldKind::Hex:
      return "hex";
    case FieldKind::Ptr:
      return "ptr";
    case FieldKind::Str:
      return "str";
    case FieldKind::Comm:
      return "comm";
  }
  return "?";
}

const char* to_string(ColumnStorage s) {
  switch (s) {
    case ColumnStorage::Int64:
      return "Int64";
    case ColumnStorage::UInt64:
      return "UInt64";
    case ColumnStorage::Category:
      return "category";
  }
  return "?";
}

}  // namespace timerlab
