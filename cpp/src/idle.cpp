// idle.cpp — validation of idle-state tables (see idle.hpp).
#include "timerlab/idle.hpp"

#include <cmath>
#include <stdexcept>

namespace timerlab {

void IdleTable::validate() const {
  auto bad = [](const std::string& m) { throw std::invalid_argument("idle_states: " + m); };
  if (states.empty()) bad("the table has no state");
  if (states.size() > 16) bad("at most 16 states (CPUIDLE_STATE_MAX is 10 in the kernel; 16 here)");
  if (!(std::isfinite(busy_power_mw) && busy_power_mw >= 0)) bad("busy_power_mw must be a finite number >= 0");
  bool any_enabled = false;
  for (std::size_t i = 0; i < states.size(); ++i) {
    const IdleState& s = states[i];
    const std::string who = "state " + std::to_string(i) + " (" + s.name + ")";
    if (s.exit_latency_ns < 0) bad(who + ": exit_latency must be >= 0");
    if (s.target_residency_ns < 0) bad(who + ": target_residency must be >= 0");
    if (!(std::isfinite(s.power_mw) && s.power_mw >= 0)) bad(who + ": power_mw must be a finite number >= 0");
    if (!(std::isfinite(s.transition_uj) && s.transition_uj >= 0)) bad(who + ": transition_uj must be >= 0");
    if (i > 0) {
      const IdleState& p = states[i - 1];
      // Governors walk the table shallow to deep and stop at the first state
      // that does not fit: the table must be ordered by depth.
      if (s.target_residency_ns < p.target_residency_ns || s.exit_latency_ns < p.exit_latency_ns) {
        bad(who + " is shallower than state " + std::to_string(i - 1) +
            ": states must be ordered by depth (exit latency and target residency not decreasing)");
      }
    }
    if (s.polling && i != 0) bad(who + ": only state 0 may poll");
    any_enabled = any_enabled || !s.disabled;
  }
  if (!any_enabled) bad("every state is disabled");
}

}  // namespace timerlab
