// engine.cpp — the event loop, the timer API glue (placement, remote
// wakeups, traces, results), the tick and the TIMER softirq. See engine.hpp.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine_impl.hpp"
#include "timerlab/nohz.hpp"

namespace timerlab {

// ---------------------------------------------------------------------------
// Set-up and the loop

void SimConfig::validate() const {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  checked_lvl_depth(hz);
  idle.validate_or_empty();
  if (latency_req_ns < 0) bad("latency_req_ns must be >= 0");
  if (duration_ns <= 0) bad("duration_ns must be positive, got " + std::to_string(duration_ns));
  if (start_ns < 0) bad("start_ns must be >= 0, got " + std::to_string(start_ns));
  if (duration_ns > (std::int64_t{1} << 62) - start_ns) bad("duration_ns is too long");
  for (std::size_t f = 0; f < callback_ns.size(); ++f) {
    if (callback_ns[f] < 0 || callback_ns[f] > 1'000'000'000) {
      bad("callback_ns of function " + std::to_string(f) + " must be in [0, 1 s]");
    }
  }
  if (ipi_latency_ns < 0) bad("ipi_latency_ns must be >= 0");
  if (fair_server_defer_ns < 0) bad("fair_server_defer_ns must be >= 0");
  const std::size_t nf = workload.function_names.size();
  if (tick_function >= nf || fair_server_function >= nf) bad("tick_function / fair_server_function: unknown function code");
  for (const auto& [v, name] : {std::pair{latency.irq_entry_ns, "irq_entry_ns"},
                                std::pair{latency.context_switch_ns, "context_switch_ns"},
                                std::pair{latency.return_to_user_ns, "return_to_user_ns"}}) {
    if (v < 0 || v > 1'000'000'000) bad(std::string(name) + " must be in [0, 1 s]");
  }
  if (!resume_latency_ns.empty() && resume_latency_ns.size() != topology.nr_cpus) {
    bad("resume_latency_ns has " + std::to_string(resume_latency_ns.size()) + " entries for " +
        std::to_string(topology.nr_cpus) + " CPUs");
  }
  for (std::int64_t v : resume_latency_ns) {
    if (v < 0) bad("resume_latency_ns must be >= 0");
  }
  wake_latency.validate(topology.nr_cpus);
  if (deferrable != DeferrablePolicy::legacy && !pull_model) {
    bad("deferrable policies other than 'legacy' need the pull model (a timer migration hierarchy)");
  }
  workload.validate(topology.nr_cpus);
}

Engine::Engine(const SimConfig& cfg)
    : cfg_((cfg.validate(), cfg)),
      topo_(cfg.topology),
      tick_nsec_((1'000'000'000ull + cfg.hz / 2) / cfg.hz),
      initial_jiffies_(cfg.initial_jiffies.value_or((jiffies_t{1} << 32) - jiffies_t{300} * cfg.hz)),
      queue_(topo_.nr_cpus()),
      busy_(topo_.nr_cpus()),
      nonidle_(topo_.nr_cpus()),
      pulled_(topo_.nr_cpus()),
      hr_(topo_.nr_cpus(), HrtimerPolicy{cfg.timer_migration, cfg.hrtimer_keep_local}, *this) {
  const unsigned n = topo_.nr_cpus();
  now_ = cfg_.start_ns;
  end_ns_ = cfg_.start_ns + cfg_.duration_ns;
  jiffies_now_ = jiffies_at(now_);
  cpu_timers_.reserve(n);
  HardGlobalEvents* hard = cfg_.deferrable == DeferrablePolicy::global_nowake ? this : nullptr;
  for (unsigned c = 0; c < n; ++c) cpu_timers_.emplace_back(pool_, cfg_.hz, jiffies_at(now_), c, hard);
  log_.set_context(now_, topo_.bringup_order()[0]);
  tmigr_ = std::make_unique<Tmigr>(topo_, cfg_.tmigr_setup, cfg_.record_events && cfg_.pull_model ? &tracer_ : nullptr);
  tmigr_->set_remote_expires_self(cfg_.remote_expires_self);
  cpus_.resize(n);
  res_.cpus.resize(n);
  if (cfg_.idle.states.empty()) {
    // No table: the default idle of a machine without a cpuidle driver.
    cfg_.idle.states.push_back({"default", 0, 0, 0, 0, false, false, false});
  }
  GovernorParams gp;
  gp.table = &cfg_.idle;
  gp.tick_nsec = static_cast<std::int64_t>(tick_nsec_);
  gp.teo_tick_intercepts_fixed = cfg_.teo_tick_intercepts_fixed;
  for (unsigned c = 0; c < n; ++c) {
    // cpuidle_governor_latency_req: the CPU's resume-latency QoS, if tighter.
    gp.latency_req_ns = cfg_.latency_req_ns;
    if (!cfg_.resume_latency_ns.empty()) gp.latency_req_ns = std::min(gp.latency_req_ns, cfg_.resume_latency_ns[c]);
    cpus_[c].governor = make_governor(cfg_.governor, gp);
  }
  constexpr std::uint64_t kWakeStream = 5ull << 40;  // beside engine_workload.cpp's streams
  for (unsigned c = 0; c < n; ++c) wake_rng_.emplace_back(cfg_.seed, kWakeStream + c);
  res_.usage.assign(n, std::vector<StateUsage>(cfg_.idle.states.size()));
  node_idle_.assign(topo_.nr_nodes(), 0);
  node_size_.assign(topo_.nr_nodes(), 0);
  for (unsigned c = 0; c < n; ++c) ++node_size_[static_cast<unsigned>(topo_.node_of(c))];
}

jiffies_t Engine::jiffies_at(std::int64_t ns) const {
  return initial_jiffies_ + static_cast<std::uint64_t>(ns) / tick_nsec_;
}

std::uint64_t Engine::basem_of(jiffies_t j) const { return (j - initial_jiffies_) * tick_nsec_; }

std::int64_t Engine::next_tick_after(std::int64_t ns) const {
  const auto t = static_cast<std::uint64_t>(ns);
  return static_cast<std::int64_t>((t / tick_nsec_ + 1) * tick_nsec_);
}

// Defined inline: the run loop below is its only caller, and GCC warns of an
// always_inline function defined out of line.
inline void Engine::step(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  set_context(cpu);
  if (cs.act == Activity::exiting) {
    finish_exit(cpu);
    return;
  }
  const std::int64_t clock = clock_at(cpu);
  const WakeSource src = cs.ipi_at <= now_ ? WakeSource::ipi : clock <= now_ ? WakeSource::clock : WakeSource::device;
  if (cs.act == Activity::idle && src == WakeSource::device && script_runs_in_idle(cpu)) return;
  if (cs.act == Activity::idle) {
    // The interrupt wakes the CPU; it is served once the state's exit
    // latency has passed.
    begin_exit(cpu, src);
    return;
  }
  if (src == WakeSource::ipi) {
    cs.ipi_at = INT64_MAX;
    ++res_.cpus[cpu].ipis_received;
    // A reschedule IPI: a CPU in its idle loop leaves it (and re-enters it if
    // no task is waiting); a running CPU has nothing to do.
    if (cs.act == Activity::irq) cs.need_resched = true;
  } else if (src == WakeSource::clock) {
    clock_interrupt(cpu);
  } else if (cs.irq_end <= now_ && !(cs.irq_for_work && !cs.work.empty() && cs.work.top().t <= now_)) {
    // (An interrupt from idle ends only after the work item that woke the
    // CPU: finish_exit.)
    cs.irq_end = INT64_MAX;
    cs.irq_for_work = false;
    irq_done(cpu);
  } else {
    next_work(cpu);
  }
}

void Engine::next_work(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  const WorkItem item = cs.work.top();
  cs.work.pop();
  cs.irq_for_work = false;
  work(cpu, item);
}

SimResult Engine::run() {
  const unsigned n = topo_.nr_cpus();
  // Every CPU has just booted and runs; its periodic tick is on the grid.
  for (unsigned c = 0; c < n; ++c) {
    set_context(c);
    cpus_[c].tick_timer = new_hrtimer(HrtimerKind::tick, cfg_.tick_function, c, false);
    tick_program(c, next_tick_after(now_));
    cpus_[c].since = now_;
    busy_.set(c);
  }
  start_workload();
  for (unsigned c = 0; c < n; ++c) {
    set_context(c);
    run_next_task(c);
  }
  for (unsigned c = 0; c < n; ++c) touch(c);

  guard_steps_limit_ = cfg_.guard.steps_per_instant(n);
  const bool check = cfg_.check_invariants;  // read once: the compiler cannot hoist it past step()
  while (queue_.top_time() <= end_ns_) {
    const unsigned c = queue_.top();
    now_ = queue_.top_time();
    guard_instant();
    // Everything this CPU has due now, before the queue is re-keyed.
    std::int64_t next;
    const std::uint64_t walks = tmigr_->walk_steps();
    do {
      guard_step(c);  // a model must make progress (guard.hpp)
      step(c);
      ++res_.steps;
      if (check) check_invariants();
      next = next_time(c);
    } while (next <= now_);
    // Most batches walk no hierarchy: skip the floating-point add then.
    if (const std::uint64_t w = tmigr_->walk_steps() - walks; w != 0) {
      res_.cpus[c].timer_overhead_ns += cfg_.overhead.tmigr_level_ns * static_cast<double>(w);
    }
    queue_.update(c, next);
  }
  now_ = end_ns_;
  for (unsigned c = 0; c < n; ++c) {
    account(c);
    // An idle period still open at the end counts its residency so far (no
    // hit, no transition: it has not ended), so that residency + busy time
    // is the run's duration on every CPU.
    const CpuState& cs = cpus_[c];
    if (cs.act == Activity::idle) choose_post_hoc(c);  // the oracle knows the idle lasts at least this long
    if (in_idle_period(cs.act)) {
      const IdleState& st = cfg_.idle.states[static_cast<std::size_t>(cs.state)];
      res_.usage[c][static_cast<std::size_t>(cs.state)].time_ns += now_ - cs.idle_entry;
      res_.cpus[c].energy_uj += st.power_mw * static_cast<double>(now_ - cs.idle_entry) * 1e-6;
    }
    // Busy time at busy power (mW x ns = 1e-6 µJ).
    res_.cpus[c].energy_uj += cfg_.idle.busy_power_mw * static_cast<double>(res_.cpus[c].busy_ns) * 1e-6;
  }
  for (unsigned c = 0; c < n; ++c) {
    const HrtimerCpuBase& b = hr_.base(c);
    CpuCounters& cc = res_.cpus[c];
    cc.hrtimer_interrupts = b.nr_events;
    cc.hrtimer_retries = b.nr_retries;
    cc.hrtimer_hangs = b.nr_hangs;
    cc.hrtimer_max_hang_ns = b.max_hang_time_ns;
  }
  res_.end_ns = end_ns_;
  res_.pending_at_end = pending_;
  if (cfg_.record_events) {
    log_.sort_by_time();
    res_.events = log_.take();
  }
  return std::move(res_);
}

void Engine::account(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  const std::int64_t d = now_ - cs.since;
  if (in_idle_period(cs.act)) {
    res_.cpus[cpu].idle_ns += d;
  } else {
    res_.cpus[cpu].busy_ns += d;
  }
  cs.since = now_;
}

void Engine::set_busy(unsigned cpu, bool busy) {
  if (busy) {
    busy_.set(cpu);
    cpus_[cpu].wake_pending = false;  // the woken task runs
  } else {
    busy_.clear(cpu);
  }
  update_nonidle(cpu);
}

void Engine::set_wake_pending(unsigned cpu, bool pending) {
  if (cpus_[cpu].wake_pending == pending) return;
  cpus_[cpu].wake_pending = pending;
  update_nonidle(cpu);
}

void Engine::update_nonidle(unsigned cpu) {
  if (busy_.test(cpu) || cpus_[cpu].wake_pending) {
    nonidle_.set(cpu);
  } else {
    nonidle_.clear(cpu);
  }
}

// ---------------------------------------------------------------------------
// The tick (tick_nohz_handler -> update_process_times -> run_local_timers)
// and the TIMER softirq (run_timer_softirq).

std::int64_t Engine::tick_expires(unsigned cpu) const {
  const Hrtimer& h = hr_[cpus_[cpu].tick_timer];
  return h.queued() ? h.expires : INT64_MAX;
}

void Engine::tick_program(unsigned cpu, std::int64_t expires) {
  // hrtimer_start(&ts->sched_timer, expires, HRTIMER_MODE_ABS_PINNED_HARD), or
  // hrtimer_cancel for no event; on the tick's own CPU.
  const HrtimerId t = cpus_[cpu].tick_timer;
  if (expires == INT64_MAX) {
    hr_.cancel(t);
  } else {
    hr_.start(t, expires, HRTIMER_MODE_ABS | HRTIMER_MODE_PINNED | HRTIMER_MODE_HARD);
  }
}

HrtimerRestart Engine::tick_nohz_handler(unsigned cpu, std::int64_t now) {
  // The tick's callback (tick_sched_timer before 6.10): the tick's work,
  // then forward past the interrupt's clock to the next grid point
  // (hrtimer_forward) unless the tick is stopped (the idle loop programs a
  // stopped tick's next wakeup).
  tick(cpu);
  CpuState& cs = cpus_[cpu];
  if (cs.tick_stopped) return HrtimerRestart::norestart;
  Hrtimer& h = hr_[cs.tick_timer];
  h.expires = h.softexpires = next_tick_after(now) + cs.tick_delay_ns;  // on the grid, even after an exit latency
  return HrtimerRestart::restart;
}

void Engine::tick(unsigned cpu) {
  ++res_.cpus[cpu].ticks;
  cpus_[cpu].rcu_pending = false;  // the traces' window ends at the first tick (rcu_needs_cpu)
  if (cfg_.jiffies_duty) {  // tick_sched_do_timer
    if (do_timer_cpu_ < 0) do_timer_cpu_ = static_cast<int>(cpu);
    if (do_timer_cpu_ == static_cast<int>(cpu)) update_jiffies();
    if (cfg_.jiffies_stall_check) jiffies_stall_check(cpu);
  }
  const jiffies_t j = jiffies();
  bool raise = cpu_timers_[cpu].any_base_due(j, cfg_.pull_model);
  if (!raise && cfg_.pull_model) raise = tmigr_->tmigr_requires_handle_remote(cpu, basem_of(j));
  if (raise) cpus_[cpu].timer_softirq_raised = true;  // runs at the interrupt's exit
}

void Engine::jiffies_stall_check(unsigned cpu) {
  // A CPU whose own ticks saw jiffies unchanged MAX_STALLED_JIFFIES times
  // (the duty holder stopped by a hypervisor, say) brings them up to date.
  CpuState& cs = cpus_[cpu];
  if (cs.last_tick_jiffies != jiffies_now_) {
    cs.last_tick_jiffies = jiffies_now_;
    cs.stalled_jiffies = 0;
  } else if (++cs.stalled_jiffies == kMaxStalledJiffies) {
    update_jiffies();
    cs.last_tick_jiffies = jiffies_now_;
    cs.stalled_jiffies = 0;
  }
}

void Engine::run_timer_softirq(unsigned cpu) {
  ++res_.cpus[cpu].softirqs;
  TimerCpu& tc = cpu_timers_[cpu];
  // A softirq does not run twice at once: this one starts after the last,
  // and after the hard interrupt that raised it.
  softirq_ns_ = std::max<std::int64_t>(hardirq_ns_, cpus_[cpu].softirq_end - now_);
  // The owner's own bases first (its global one too), then the remote ones.
  run_base(tc.base(BASE_LOCAL));
  if (cfg_.pull_model) run_base(tc.base(BASE_GLOBAL));
  run_base(tc.base(BASE_DEF));
  if (cfg_.pull_model) {
    run_base(tc.base(BASE_GDEF));  // empty unless global_nowake
    handle_remote(cpu);
  }
  softirq_done(cpu);
}

void Engine::handle_remote(unsigned cpu) {
  log_.set_context(now_ + softirq_ns_, cpu);
  const unsigned handled = tmigr_->tmigr_handle_remote(cpu, basem_of(jiffies()), *this);
  res_.cpus[cpu].timer_overhead_ns += cfg_.overhead.remote_cpu_ns * handled;
}

void Engine::softirq_done(unsigned cpu) {
  // An awake idle CPU stays in its interrupt until the callbacks are done.
  CpuState& cs = cpus_[cpu];
  cs.softirq_end = now_ + softirq_ns_;
  if (softirq_ns_ > 0 && cs.act == Activity::irq) {
    // (No interrupt end yet: a continuation from irq_done.)
    cs.irq_end = cs.irq_end == INT64_MAX ? now_ + softirq_ns_ : std::max(cs.irq_end, now_ + softirq_ns_);
  }
  set_context(cpu);
}

bool Engine::remote_yield() {
  // Only an idle CPU woken for the duty lets go (a busy migrator's softirq
  // interrupts its task; it takes them all): others may wake meanwhile.
  CpuState& cs = cpus_[cur_];
  if (softirq_ns_ <= hardirq_ns_ || cs.act != Activity::irq) return false;  // no callback took time
  cs.remote_more = true;
  return true;
}

void Engine::run_base(TimerBase& base) {
  const jiffies_t j = jiffies();
  if (time_before(j, base.next_expiry())) return;
  base.run_timers(j, [this, &base](TimerId t, jiffies_t baseclk) { expire_timer(base, t, baseclk); });
}

void Engine::timer_expire_remote(unsigned cpu) {
  run_base(cpu_timers_[cpu].base(BASE_GLOBAL));
  run_base(cpu_timers_[cpu].base(BASE_GDEF));  // empty unless global_nowake
}

std::uint64_t Engine::first_hard_global(jiffies_t basej, std::uint64_t basem) {
  // O(CPUs), but only when the last CPU goes idle under global_nowake.
  std::uint64_t first = KTIME_MAX;
  for (TimerCpu& tc : cpu_timers_) first = std::min(first, tc.next_hard_global(basej, basem, tick_nsec_));
  return first;
}

std::uint64_t Engine::fetch_next_global_remote(unsigned cpu) {
  const jiffies_t j = jiffies();
  TimerEvents tevt;
  cpu_timers_[cpu].fetch_next_timer_interrupt(j, basem_of(j), tevt, tick_nsec_);
  return tevt.global;
}

void Engine::expire_timer(TimerBase& base, TimerId t, jiffies_t baseclk) {
  --pending_;
  ++res_.timer_events;
  TimerInfo& info = info_[t];
  const unsigned owner = base.cpu();
  if (owner == cur_) {
    ++res_.cpus[cur_].timers_expired_local;
  } else {
    ++res_.cpus[owner].timers_expired_remote;
    ++res_.cpus[cur_].remote_expiries_done;
  }
  res_.cpus[cur_].timer_overhead_ns += cfg_.overhead.expire_ns;
  // The callback starts when the softirq's earlier ones are done.
  const std::int64_t at = now_ + softirq_ns_;
  const std::int64_t took = info.callback_ns >= 0 ? info.callback_ns
                            : info.function < cfg_.callback_ns.size() ? cfg_.callback_ns[info.function]
                                                                       : 0;
  if (info.row >= 0) {
    TimerRow& row = res_.timers[static_cast<std::size_t>(info.row)];
    row.outcome = TimerOutcome::expired;
    row.end_ns = at;
    row.callback_ns = took;
    row.cpu_expired = static_cast<std::int32_t>(cur_);
    row.exit_latency_ns = static_cast<std::int32_t>(cpus_[cur_].wake_exit_latency);
    info.row = -1;
  }
  const std::uint64_t ptr = std::uint64_t{t} + 1;
  log_.set_context(at, cur_);
  if (cfg_.record_events) {
    log_.add(SimEvent::timer_cancel, {ptr});
    log_.add(SimEvent::timer_expire_entry, {ptr, info.function, jiffies(), baseclk});
  }
  timer_callback(t);
  softirq_ns_ += took;
  log_.set_context(at + took, cur_);
  if (cfg_.record_events) log_.add(SimEvent::timer_expire_exit, {ptr});
  if (!pool_[t].pending() && (info.kind == TimerKind::timeout || info.kind == TimerKind::remote)) release_timer(t);
}

// ---------------------------------------------------------------------------
// The timer API: arming, placement, wakeups, trace records.

TimerId Engine::new_timer(TimerKind kind, std::uint16_t function, std::uint32_t flags, std::uint32_t owner,
                          unsigned cpu) {
  const TimerId t = pool_.alloc(flags, cpu);
  if (info_.size() <= t) info_.resize(static_cast<std::size_t>(t) + 1);
  TimerInfo& info = info_[t];
  info.generation++;
  info.kind = kind;
  info.function = function;
  info.owner = owner;
  info.row = -1;
  info.callback_ns = -1;  // a reused TimerId must not keep a replayed instance's duration
  return t;
}

void Engine::release_timer(TimerId t) {
  info_[t].kind = TimerKind::none;
  pool_.free(t);
}

void Engine::arm(unsigned cpu, TimerId t, jiffies_t expires, unsigned options) {
  set_context(cpu);
  res_.cpus[cpu].timer_overhead_ns += cfg_.overhead.enqueue_ns;
  in_mod_timer_ = true;
  __mod_timer(*this, t, expires, options);
  in_mod_timer_ = false;
  // The same-bucket shortcut changes only timer->expires: keep the row's.
  const TimerInfo& info = info_[t];
  if (info.row >= 0) res_.timers[static_cast<std::size_t>(info.row)].expires_jiffies = pool_[t].expires;
}

void Engine::del_timer(unsigned cpu, TimerId t) {
  set_context(cpu);
  if (timer_delete(*this, t)) res_.cpus[cpu].timer_overhead_ns += cfg_.overhead.dequeue_ns;
}

TimerBase& Engine::target_base(TimerId t, TimerBase& current) {
  if (keep_base_) return current;
  const std::uint32_t flags = pool_[t].flags;
  const unsigned idx = timer_base_index(flags, cfg_.pull_model, cfg_.deferrable);
  if (cfg_.pull_model || (flags & TIMER_PINNED)) return cpu_timers_[cur_].base(idx);
  return cpu_timers_[get_nohz_timer_target(cur_)].base(idx);
}

unsigned Engine::get_nohz_timer_target(unsigned cpu) {
  // A busy CPU keeps its timers; an idle one (a timer armed from an
  // interrupt) hands them to the nearest busy CPU, smallest domain first,
  // lowest CPU number within a domain. idle_cpu() is false for a CPU running
  // a task, and for one a task was just woken onto (nr_running, ttwu_pending).
  double& overhead = res_.cpus[cpu].timer_overhead_ns;
  overhead += cfg_.overhead.push_target_ns;
  const CpuMask& busy = any_pulled_ ? placement_busy() : nonidle_;
  if (busy.test(cpu)) return cpu;
  for (const CpuMask* span : topo_.domains_of(cpu)) {
    overhead += cfg_.overhead.push_domain_ns;
    const int i = span->first_and_not(busy, cpu);
    if (i >= 0) return static_cast<unsigned>(i);
  }
  return cpu;
}

const CpuMask& Engine::placement_busy() {
  // A replayed CPU that pulled its task (busy_start with a runnable delay)
  // runs the simulation's idle-loop exit at once, but the kernel's rq had no
  // task yet: idle_cpu() stays true until the trace's need-resched.
  placement_busy_ = nonidle_;
  any_pulled_ = false;
  for (unsigned c = 0; c < topo_.nr_cpus(); ++c) {
    if (!pulled_.test(c)) continue;
    if (now_ < cpus_[c].idle_cpu_until_ns) {
      placement_busy_.clear(c);
      any_pulled_ = true;
    } else {
      pulled_.clear(c);
    }
  }
  return placement_busy_;
}

void Engine::trigger_dyntick_cpu(TimerBase& base, TimerId t, bool new_first) {
  if (!cfg_.first_timer_by_bucket && cfg_.lazy_wakeup) {
    // Before 5.9, at every enqueue: a base marked idle is woken when the
    // requested expiry precedes the next_expiry its idle path computed,
    // which the wakeup then lowers to that expiry (never below clk).
    if ((pool_[t].flags & TIMER_DEFERRABLE) || !base.is_idle()) return;
    jiffies_t& next = cpus_[base.cpu()].next_expiry_pre59;
    const jiffies_t expires = pool_[t].expires;
    if (!time_before(expires, next)) return;
    next = time_before(expires, base.clk()) ? base.clk() : expires;
    wake_up_nohz_cpu(base.cpu());
    return;
  }
  if (cfg_.lazy_wakeup && !new_first) return;
  // Deferrable timers do not wake an idle CPU (before 6.8 only nohz_full
  // ones, which are not modelled).
  if (pool_[t].flags & TIMER_DEFERRABLE) return;
  // Lazy (the kernel since 2015): only a base marked idle, i.e. a CPU whose
  // tick is stopped (6.9+) or that expects to sleep over a tick (before).
  // Always (before 2015): every enqueue.
  if (!cfg_.lazy_wakeup || base.is_idle()) wake_up_nohz_cpu(base.cpu());
}

void Engine::wake_up_nohz_cpu(unsigned cpu) {
  if (cpu == cur_) return;
  send_ipi(cpu);
}

void Engine::send_ipi(unsigned to) {
  ++res_.cpus[cur_].ipis_sent;
  if (cfg_.record_events) log_.add(SimEvent::ipi_send_cpu, {to});
  CpuState& cs = cpus_[to];
  // Sent from where the sender is (a callback late in its softirq sends late).
  cs.ipi_at = std::min(cs.ipi_at, log_.ts_ns() + cfg_.ipi_latency_ns);
  touch(to);
}

void Engine::trace_timer_start(TimerBase& base, TimerId t, const EnqueueResult& r) {
  ++pending_;
  res_.peak_pending = std::max<std::uint64_t>(res_.peak_pending, pending_);
  ++res_.timer_events;
  ++res_.cpus[base.cpu()].timers_armed;
  TimerInfo& info = info_[t];
  const TimerList& tl = pool_[t];
  const std::uint32_t flags = tl.flags & (TIMER_PINNED | TIMER_DEFERRABLE | TIMER_IRQSAFE);
  if (cfg_.record_timers) {
    info.row = static_cast<std::int64_t>(res_.timers.size());
    res_.timers.push_back({t, info.function, flags, static_cast<std::int32_t>(cur_),
                           static_cast<std::int32_t>(base.cpu()), -1, now_, -1, tl.expires, r.bucket_expiry, 0,
                           TimerOutcome::pending});
  }
  if (cfg_.record_events) {
    log_.add(SimEvent::timer_start, {std::uint64_t{t} + 1, info.function, tl.expires, tl.expires - jiffies(),
                                     r.bucket_expiry, base.cpu(), r.idx, flags});
  }
}

void Engine::trace_timer_cancel(TimerBase& base, TimerId t) {
  --pending_;
  ++res_.timer_events;
  if (!in_mod_timer_) ++res_.cpus[base.cpu()].timers_cancelled;
  TimerInfo& info = info_[t];
  if (info.row >= 0) {
    TimerRow& row = res_.timers[static_cast<std::size_t>(info.row)];
    row.outcome = in_mod_timer_ ? TimerOutcome::rearmed : TimerOutcome::cancelled;
    row.end_ns = now_;
    info.row = -1;
  }
  if (cfg_.record_events) log_.add(SimEvent::timer_cancel, {std::uint64_t{t} + 1});
}

void Engine::check_invariants() {
  const std::string t = tmigr_->check_invariants();
  if (!t.empty()) throw std::logic_error("timer migration invariant violated at " + std::to_string(now_) + ": " + t);
  const std::string h = hr_.check_invariants();
  if (!h.empty()) throw std::logic_error("hrtimer invariant violated at " + std::to_string(now_) + ": " + h);
  for (unsigned c = 0; c < topo_.nr_cpus(); ++c) {
    if (cpus_[c].device_next != hr_.base(c).device_next) {
      throw std::logic_error("CPU " + std::to_string(c) + "'s copy of its device's next event is stale");
    }
  }
  for (const TimerCpu& tc : cpu_timers_) {
    for (unsigned b = 0; b < NR_BASES; ++b) {
      const std::string w = tc.base(b).check_invariants();
      if (!w.empty()) throw std::logic_error("wheel invariant violated on CPU " + std::to_string(tc.cpu()) + ": " + w);
    }
  }
}

SimResult simulate(const SimConfig& cfg) { return Engine(cfg).run(); }

}  // namespace timerlab
