// governor.cpp — make_governor, the idle loop of a machine without a
// cpuidle driver (none), and the reference governors that have no kernel
// counterpart: shallowest, deepest (bounds) and oracle (the best a governor
// could do knowing each idle length in advance). menu and teo live in
// menu.cpp and teo.cpp.
//
// Simplifications vs. the kernel
//   * shallowest/deepest resemble booting with only one state enabled; they
//     ignore target residency entirely (deepest may pick a state that cannot
//     pay off: that is the point of a bound).
//   * oracle is not causal: the engine asks it after the idle length is
//     known (post_hoc), and it minimises energy only — target residency is a
//     kernel heuristic for the same thing and is not consulted.
#include <stdexcept>
#include <string>

#include "timerlab/idle.hpp"
#include "timerlab/menu.hpp"
#include "timerlab/teo.hpp"

namespace timerlab {

namespace {

int first_enabled(const IdleTable& t) {
  for (std::size_t i = 0; i < t.states.size(); ++i) {
    if (!t.states[i].disabled) return static_cast<int>(i);
  }
  return 0;  // unreachable for a validated table
}

// No cpuidle driver (kernel/sched/idle.c, cpuidle_idle_call when
// cpuidle_not_available): no governor is asked, the tick is always offered
// to stop (tick_nohz_idle_stop_tick) and the CPU runs the architecture's
// default idle (default_idle_call, x86 HLT), which halts and never polls —
// the first enabled state of the table that does not poll (any first state
// if all poll). Virtual machines without cpuidle-haltpoll run this way:
// their traces show cpu_idle state 1 only.
class NoDriverGovernor final : public Governor {
 public:
  explicit NoDriverGovernor(const GovernorParams& p) : table_(p.table) {}
  int select(IdleContext& /*ctx*/, bool* /*stop_tick*/) override {
    for (std::size_t i = 0; i < table_->states.size(); ++i) {
      const IdleState& s = table_->states[i];
      if (!s.disabled && !s.polling) return static_cast<int>(i);
    }
    return first_enabled(*table_);
  }
  void reflect(int, std::int64_t, bool) override {}
  std::int64_t predicted_ns() const override { return 0; }

 private:
  const IdleTable* table_;
};

// The first enabled state, always. A polling state keeps the tick so the
// spinning CPU still gets its periodic wakeup, as menu/teo do.
class ShallowestGovernor final : public Governor {
 public:
  explicit ShallowestGovernor(const GovernorParams& p) : table_(p.table) {}
  int select(IdleContext& /*ctx*/, bool* stop_tick) override {
    const int idx = first_enabled(*table_);
    const IdleState& s = table_->states[static_cast<std::size_t>(idx)];
    if (s.polling) *stop_tick = false;
    predicted_ns_ = s.target_residency_ns;
    return idx;
  }
  void reflect(int, std::int64_t, bool) override {}
  std::int64_t predicted_ns() const override { return predicted_ns_; }

 private:
  const IdleTable* table_;
  std::int64_t predicted_ns_ = 0;
};

// The deepest enabled state the latency limit allows, tick stopped: the
// most optimistic bound on idle power.
class DeepestGovernor final : public Governor {
 public:
  explicit DeepestGovernor(const GovernorParams& p) : table_(p.table), latency_req_ns_(p.latency_req_ns) {}
  int select(IdleContext& /*ctx*/, bool* /*stop_tick*/) override {
    int idx = -1;
    for (std::size_t i = 0; i < table_->states.size(); ++i) {
      const IdleState& s = table_->states[i];
      if (!s.disabled && s.exit_latency_ns <= latency_req_ns_) idx = static_cast<int>(i);
    }
    if (idx < 0) idx = first_enabled(*table_);  // nothing fits the limit: least latency available
    predicted_ns_ = table_->states[static_cast<std::size_t>(idx)].target_residency_ns;
    return idx;
  }
  void reflect(int, std::int64_t, bool) override {}
  std::int64_t predicted_ns() const override { return predicted_ns_; }

 private:
  const IdleTable* table_;
  std::int64_t latency_req_ns_;
  std::int64_t predicted_ns_ = 0;
};

// Picks, once the idle length is known, the state that spends the least
// energy on it. Energy in pJ: mW x ns = pJ and µJ x 1e6 = pJ. The exit
// latency is spent in the state too (the residency cpuidle measures ends
// after the exit), so it is charged at the state's power.
class OracleGovernor final : public Governor {
 public:
  explicit OracleGovernor(const GovernorParams& p) : table_(p.table), latency_req_ns_(p.latency_req_ns) {}
  // The real choice is made post hoc; the tick may stop, since the oracle
  // needs no tick to correct itself.
  int select(IdleContext& /*ctx*/, bool* /*stop_tick*/) override { return first_enabled(*table_); }
  void reflect(int, std::int64_t, bool) override {}
  std::int64_t predicted_ns() const override { return predicted_ns_; }
  bool post_hoc() const override { return true; }
  int choose_post_hoc(std::int64_t idle_ns, bool package_ok) override {
    predicted_ns_ = idle_ns;
    const double idle = idle_ns > 0 ? static_cast<double>(idle_ns) : 0.0;
    int best = -1;
    double best_pj = 0;
    for (std::size_t i = 0; i < table_->states.size(); ++i) {
      const IdleState& s = table_->states[i];
      if (s.disabled || s.exit_latency_ns > latency_req_ns_ || (s.package && !package_ok)) continue;
      const double pj = s.power_mw * (idle + static_cast<double>(s.exit_latency_ns)) + s.transition_uj * 1e6;
      // Strictly less: on a tie the shallower (earlier) state stays.
      if (best < 0 || pj < best_pj) {
        best = static_cast<int>(i);
        best_pj = pj;
      }
    }
    return best >= 0 ? best : first_enabled(*table_);
  }

 private:
  const IdleTable* table_;
  std::int64_t latency_req_ns_;
  std::int64_t predicted_ns_ = 0;
};

}  // namespace

std::unique_ptr<Governor> make_governor(const std::string& name, const GovernorParams& params) {
  static const char* const kAllowed = "'menu', 'teo', 'none', 'oracle', 'shallowest', 'deepest'";
  auto bad = [](const std::string& m) { throw std::invalid_argument("governor: " + m); };
  const bool known = name == "menu" || name == "teo" || name == "none" || name == "oracle" || name == "shallowest" ||
                     name == "deepest";
  if (!known) bad("unknown governor '" + name + "'; allowed: " + kAllowed);
  if (params.table == nullptr) bad("'" + name + "' needs an idle-state table (GovernorParams.table is null)");
  params.table->validate();
  if (params.tick_nsec <= 0) bad("tick_nsec must be > 0, got " + std::to_string(params.tick_nsec));
  if (params.latency_req_ns < 0) bad("latency_req_ns must be >= 0, got " + std::to_string(params.latency_req_ns));

  if (name == "menu") return std::make_unique<MenuGovernor>(params);
  if (name == "teo") return std::make_unique<TeoGovernor>(params);
  if (name == "none") return std::make_unique<NoDriverGovernor>(params);
  if (name == "oracle") return std::make_unique<OracleGovernor>(params);
  if (name == "shallowest") return std::make_unique<ShallowestGovernor>(params);
  return std::make_unique<DeepestGovernor>(params);
}

}  // namespace timerlab
