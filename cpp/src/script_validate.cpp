// script_validate.cpp — the checks of a replay script (ScriptSpec in
// workload.hpp) before a run: every item names an existing CPU, key and
// function, with values in range, in time order.
#include <stdexcept>
#include <string>

#include "timerlab/hrtimer.hpp"
#include "timerlab/timer_list.hpp"
#include "timerlab/workload.hpp"

namespace timerlab {

void ScriptSpec::validate(unsigned nr_cpus, std::size_t nr_functions) const {
  auto bad = [](std::size_t i, const std::string& m) {
    throw std::invalid_argument("script item " + std::to_string(i) + ": " + m);
  };
  if (nr_keys > (1u << 24) || nr_hrtimer_keys > (1u << 24)) {
    throw std::invalid_argument("script: nr_keys and nr_hrtimer_keys must be at most 2^24");
  }
  auto bad_hr_key = [&](std::size_t i, std::uint32_t key) {
    bad(i, "hrtimer key " + std::to_string(key) + " >= nr_hrtimer_keys " + std::to_string(nr_hrtimer_keys));
  };
  for (const auto& [name, v] : {std::pair{"initial_busy", &initial_busy}, std::pair{"initial_tick", &initial_tick}}) {
    if (!v->empty() && v->size() != nr_cpus) {
      throw std::invalid_argument(std::string("script: ") + name + " has " + std::to_string(v->size()) +
                                  " entries for " + std::to_string(nr_cpus) + " CPUs");
    }
  }
  for (std::size_t c = 0; c < initial_tick.size(); ++c) {
    if (initial_tick[c] > 2) {
      throw std::invalid_argument("script: initial_tick of CPU " + std::to_string(c) +
                                  " must be 0 (governor), 1 (keep) or 2 (stop)");
    }
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const ScriptItem& it = items[i];
    if (it.t_ns < 0 || it.t_ns > (std::int64_t{1} << 62)) bad(i, "time " + std::to_string(it.t_ns) + " ns is not in [0, 2^62]");
    if (i > 0 && it.t_ns < items[i - 1].t_ns) {
      bad(i, "times are not sorted (" + std::to_string(it.t_ns) + " ns after " + std::to_string(items[i - 1].t_ns) +
                 " ns)");
    }
    if (it.cpu >= nr_cpus) bad(i, "CPU " + std::to_string(it.cpu) + " does not exist (cpus=" + std::to_string(nr_cpus) + ")");
    switch (it.op) {
      case ScriptOp::arm:
        if (it.target_cpu >= nr_cpus) bad(i, "target CPU " + std::to_string(it.target_cpu) + " does not exist");
        if (it.place > ArmPlace::own_base) bad(i, "unknown place " + std::to_string(static_cast<int>(it.place)));
        if (it.flags & ~TIMER_INIT_FLAGS) bad(i, "flags may hold only pinned, deferrable and irqsafe");
        if (it.function >= nr_functions) bad(i, "unknown function code " + std::to_string(it.function));
        if (it.duration_ns < 0 || it.duration_ns > 1'000'000'000) bad(i, "callback duration must be in [0, 1 s]");
        [[fallthrough]];
      case ScriptOp::cancel:
        if (it.key >= nr_keys) bad(i, "timer key " + std::to_string(it.key) + " >= nr_keys " + std::to_string(nr_keys));
        break;
      case ScriptOp::external_irq:
      case ScriptOp::idle_exit:
      case ScriptOp::wake_irq:
        if (it.duration_ns < 0 || it.duration_ns > 1'000'000'000'000) bad(i, "duration_ns must be in [0, 1000 s]");
        break;
      case ScriptOp::tick_delay:
        if (it.duration_ns < 0 || it.duration_ns > 1'000'000'000'000) bad(i, "tick_delay must be in [0, 1000 s]");
        if (it.flags > kScriptStoppedTick) bad(i, "tick_delay flags must be 0 or 1 (a stopped tick's wakeup)");
        break;
      case ScriptOp::tick_policy:
        if (it.flags > 2) bad(i, "tick_policy must be 0 (governor), 1 (keep) or 2 (stop)");
        break;
      case ScriptOp::jiffies_duty:
        if (it.flags > 1) bad(i, "jiffies_duty flags must be 0 (target_cpu holds it) or 1 (nobody)");
        if (it.flags == 0 && it.target_cpu >= nr_cpus) bad(i, "jiffies_duty: CPU " + std::to_string(it.target_cpu) + " does not exist");
        break;
      case ScriptOp::busy_start:
        if (it.duration_ns < 0 || it.duration_ns > 1'000'000'000'000) bad(i, "runnable delay must be in [0, 1000 s]");
        if (it.flags > kScriptWokenByHrtimer) bad(i, "busy_start flags must be 0, 1 (woken by timer `key`) or 2 (by hrtimer `key`)");
        if (it.flags == kScriptWokenByTimer && it.key >= nr_keys) bad(i, "timer key " + std::to_string(it.key) + " >= nr_keys " + std::to_string(nr_keys));
        if (it.flags == kScriptWokenByHrtimer && it.key >= nr_hrtimer_keys) bad_hr_key(i, it.key);
        break;
      case ScriptOp::hrtimer_arm:
        if (it.flags & ~std::uint32_t{HRTIMER_MODE_PINNED | HRTIMER_MODE_SOFT | HRTIMER_MODE_HARD}) {
          bad(i, "hrtimer_arm flags: PINNED, SOFT and HARD mode bits only");
        }
        if (it.function >= nr_functions) bad(i, "unknown function code " + std::to_string(it.function));
        if (it.expires_jiffies > (std::uint64_t{1} << 62)) bad(i, "hrtimer expiry is not in [0, 2^62] ns");
        if (it.duration_ns < 0 || it.duration_ns > 1'000'000'000'000) bad(i, "hrtimer window must be in [0, 1000 s]");
        if (it.place == ArmPlace::on_cpu || it.place > ArmPlace::own_base) bad(i, "hrtimer_arm place must be policy or own_base");
        if (it.late_ns < -1 || it.late_ns > 1'000'000'000'000) bad(i, "hrtimer_arm late_ns must be -1 or in [0, 1000 s]");
        [[fallthrough]];
      case ScriptOp::hrtimer_cancel:
        if (it.key >= nr_hrtimer_keys) bad_hr_key(i, it.key);
        break;

      case ScriptOp::idle_start:
      case ScriptOp::wake_pending:
        break;
      default:
        bad(i, "unknown operation " + std::to_string(static_cast<int>(it.op)));
    }
  }
}

}  // namespace timerlab
