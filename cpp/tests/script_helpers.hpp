// script_helpers.hpp — small replay scripts for the C++ tests of the
// script workload (test_replay.cpp, test_replay_hrtimer.cpp).
#pragma once

#include "timerlab/engine.hpp"

namespace timerlab::test {

inline constexpr std::int64_t kMs = 1'000'000;
inline constexpr jiffies_t kJ0 = 5'000'000;  // a replay's own jiffies at monotonic 0

inline SimConfig replay_config(unsigned cpus) {
  SimConfig c;
  c.topology.nr_cpus = cpus;
  c.topology.nr_nodes = 1;
  c.hz = 250;
  c.pull_model = true;
  c.start_ns = 1000 * kMs;
  c.duration_ns = 200 * kMs;
  c.initial_jiffies = kJ0;
  c.record_events = true;
  c.workload.function_names = {"process_timeout", "delayed_work_timer_fn"};
  c.workload.script.nr_keys = 2;
  c.workload.script.initial_busy.assign(cpus, 0);
  return c;
}

inline ScriptItem arm(std::int64_t t, unsigned cpu, std::uint32_t key, jiffies_t expires, std::uint32_t flags = 0) {
  ScriptItem it;
  it.t_ns = t;
  it.cpu = cpu;
  it.op = ScriptOp::arm;
  it.key = key;
  it.expires_jiffies = expires;
  it.flags = flags;
  it.target_cpu = cpu;
  return it;
}

inline ScriptItem op(std::int64_t t, unsigned cpu, ScriptOp o, std::uint32_t key = 0) {
  ScriptItem it;
  it.t_ns = t;
  it.cpu = cpu;
  it.op = o;
  it.key = key;
  it.duration_ns = 10'000;
  return it;
}


}  // namespace timerlab::test
