// idle.hpp — CPU idle states and the interface of the idle governors.
//
// Models the cpuidle core (drivers/cpuidle/cpuidle.c, include/linux/cpuidle.h):
// a table of idle states per CPU, the governor's select/reflect protocol, and
// the residency bookkeeping cpuidle_enter_state does after each idle period
// (usage, time, and the above/below "misses" traced as cpu_idle_miss).
// Reference: kernel-timers.md §6 (governors) and §7 (state tables).
//
// Theory of operation
// -------------------
// State 0 is the shallowest (POLL on x86, added by the cpuidle core); deeper
// states have larger exit latency and target residency and lower power.
//
//   select(ctx, &stop_tick) -> idx   the governor; it may ask for the sleep
//                                    length (tick_nohz_get_sleep_length),
//                                    which runs the NOHZ next-event path
//   enter state idx (a package state only if the whole package idles)
//   ... the CPU wakes: the interrupt is served after the state's exit latency
//   last_residency_ns = entry to end of exit (as the kernel measures it)
//   above: residency < target residency and a shallower state is enabled
//   below: residency - exit latency >= the next deeper enabled state's target
//   reflect(idx, got_tick) -> the governor learns at its next select
//
// Energy (µJ) = busy power x busy time + state power x residency + a per
// entry transition energy. Power figures are model parameters, not kernel
// data: the kernel does not know them (see the presets' documentation).
//
// Simplifications vs. the kernel
//   * No PM QoS requests other than one latency limit per run.
//   * A package state is allowed at entry if every CPU of the package is
//     idle then; a later wakeup of a sibling does not demote it.
//   * The POLL state's poll_time_limit safety net is not modelled (a polling
//     CPU wakes when its interrupt comes).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace timerlab {

inline constexpr std::int64_t RESIDENCY_THRESHOLD_NS = 15'000;  // drivers/cpuidle/governors/gov.h

struct IdleState {
  std::string name;
  std::int64_t exit_latency_ns = 0;
  std::int64_t target_residency_ns = 0;
  double power_mw = 0;       // while in the state
  double transition_uj = 0;  // per entry + exit
  bool polling = false;      // CPUIDLE_FLAG_POLLING
  bool package = false;      // only when the whole package idles
  bool disabled = false;     // states_usage[i].disable
};

struct IdleTable {
  std::vector<IdleState> states;
  double busy_power_mw = 0;
  // Throws std::invalid_argument naming the state and the problem.
  void validate() const;
  // An empty table stands for "no cpuidle driver" and is valid.
  void validate_or_empty() const {
    if (!states.empty()) validate();
  }
};

// What a governor may ask of the CPU at select time.
class IdleContext {
 public:
  virtual ~IdleContext() = default;
  // tick_nohz_get_sleep_length: time from the idle entry to the next timer
  // event; *delta_tick: time to the next event programmed now (the tick, if
  // it runs). Runs the NOHZ next-event path: call at most once per select.
  virtual std::int64_t get_sleep_length(std::int64_t* delta_tick) = 0;
  virtual bool tick_stopped() const = 0;  // tick_nohz_tick_stopped()
};

struct GovernorParams {
  const IdleTable* table = nullptr;
  std::int64_t tick_nsec = 4'000'000;
  std::int64_t latency_req_ns = INT64_MAX;  // cpuidle_governor_latency_req
  bool teo_tick_intercepts_fixed = true;    // late-2025 fix of teo_update (reference §9 item 9)
};

// One governor instance per CPU (the kernel's per-CPU governor data).
class Governor {
 public:
  virtual ~Governor() = default;
  // Choose a state; *stop_tick starts true and the governor may clear it.
  virtual int select(IdleContext& ctx, bool* stop_tick) = 0;
  // After the period: the entered state, the residency cpuidle measured
  // (entry to end of exit, ns), whether the wakeup was the tick
  // (tick_nohz_idle_got_tick), and whether the sleep length was computed.
  virtual void reflect(int entered, std::int64_t last_residency_ns, bool got_tick) = 0;
  // The predicted idle duration behind the last choice (for results), ns.
  virtual std::int64_t predicted_ns() const = 0;
  // Post-hoc governors (oracle) pick the state when the idle length is
  // known; package states only if the package was idle at entry (the same
  // test the engine applies to every other governor's choice).
  virtual bool post_hoc() const { return false; }
  virtual int choose_post_hoc(std::int64_t /*idle_ns*/, bool /*package_ok*/) { return 0; }
};

// "menu", "teo", "none" (no cpuidle driver), "oracle", "shallowest", "deepest". Throws
// std::invalid_argument for an unknown name.
std::unique_ptr<Governor> make_governor(const std::string& name, const GovernorParams& params);

}  // namespace timerlab
