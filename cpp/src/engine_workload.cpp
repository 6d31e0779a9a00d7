// engine_workload.cpp — the workload's runtime: tasks, timeouts, periodic
// timers, remote enqueues, and the scheduling of tasks on their CPU (see
// workload.hpp for the model).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine_impl.hpp"

namespace timerlab {

namespace {

// Stream ids keep each generator's random numbers independent of the others
// (and of the kernel policy being simulated).
constexpr std::uint64_t kTaskStream = 1ull << 40, kStreamStream = 2ull << 40, kPeriodicStream = 3ull << 40,
                        kRemoteStream = 4ull << 40;

std::int64_t exp_interval(Rng& rng, double rate_hz) {
  return Dist{Dist::Kind::exponential, 1e9 / rate_hz, 0}.sample_ns(rng) + 1;
}

}  // namespace

void WorkloadSpec::validate(unsigned nr_cpus) const {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  auto check_cpus = [&](const std::vector<unsigned>& cpus, const std::string& what) {
    for (unsigned c : cpus) {
      if (c >= nr_cpus) bad(what + ": CPU " + std::to_string(c) + " does not exist (cpus=" + std::to_string(nr_cpus) + ")");
    }
  };
  auto check_fn = [&](unsigned f, const std::string& what) {
    if (f >= function_names.size()) bad(what + ": unknown function code " + std::to_string(f));
  };
  auto check_timeouts = [&](const TimeoutSpec& t, const std::string& what) {
    if (t.count > kMaxPerOccasion) bad(what + ".count must be <= " + std::to_string(kMaxPerOccasion));
    t.timeout_ns.validate(what + ".timeout_ns");
    t.cancel_after_ns.validate(what + ".cancel_after_ns");
    if (!(t.cancel_p >= 0 && t.cancel_p <= 1)) bad(what + ".cancel_p must be in [0, 1]");
    if (t.flags & ~(TIMER_PINNED | TIMER_DEFERRABLE)) bad(what + ".flags: only pinned and deferrable");
    check_fn(t.function, what);
  };
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const std::string w = "tasks[" + std::to_string(i) + "]";
    check_cpus(tasks[i].cpus, w);
    if (tasks[i].per_cpu < 1 || tasks[i].per_cpu > kMaxPerOccasion) {
      bad(w + ".per_cpu must be in [1, " + std::to_string(kMaxPerOccasion) + "]");
    }
    tasks[i].run_ns.validate(w + ".run_ns");
    tasks[i].sleep_ns.validate(w + ".sleep_ns");
    if (!(tasks[i].run_ns.mean() + tasks[i].sleep_ns.mean() >= kMinTaskCycleNs)) {
      bad(w + ": run_ns + sleep_ns must average at least " + std::to_string(kMinTaskCycleNs) + " ns");
    }
    check_fn(tasks[i].sleep_function, w);
    check_timeouts(tasks[i].timeouts, w + ".timeouts");
    if (tasks[i].sleep > SleepKind::timerlat) bad(w + ": unknown sleep kind");
    if (tasks[i].rt_priority > 99) bad(w + ".rt_priority must be in [0, 99]");
    if (tasks[i].nice < -20 || tasks[i].nice > 19) bad(w + ".nice must be in [-20, 19]");
    if (tasks[i].timer_slack_ns < 0 || tasks[i].timer_slack_ns > 1'000'000'000) bad(w + ".timer_slack_ns must be in [0, 1 s]");
    if (tasks[i].range_ns < 0 || tasks[i].range_ns > 1'000'000'000) bad(w + ".range_ns must be in [0, 1 s]");
    if (tasks[i].measure > Measure::timerlat) bad(w + ": unknown measure");
  }
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const std::string w = "timeouts[" + std::to_string(i) + "]";
    check_cpus(streams[i].cpus, w);
    if (!(streams[i].rate_hz > 0 && streams[i].rate_hz <= 1e7)) bad(w + ".rate_hz must be in (0, 1e7]");
    check_timeouts(streams[i].timeouts, w);
  }
  for (std::size_t i = 0; i < periodic.size(); ++i) {
    const std::string w = "periodic[" + std::to_string(i) + "]";
    check_cpus(periodic[i].cpus, w);
    periodic[i].period_ns.validate(w + ".period_ns");
    check_fn(periodic[i].function, w);
  }
  for (std::size_t i = 0; i < loops.size(); ++i) {
    const std::string w = "loop[" + std::to_string(i) + "]";
    check_cpus({loops[i].cpu}, w);
    loops[i].timeout_ns.validate(w + ".timeout_ns");
    check_fn(loops[i].function, w);
  }
  for (std::size_t i = 0; i < remote.size(); ++i) {
    const std::string w = "remote[" + std::to_string(i) + "]";
    check_cpus({remote[i].from_cpu}, w);
    check_cpus(remote[i].to_cpus, w);
    if (remote[i].to_cpus.empty()) bad(w + ".to_cpus is empty");
    if (!(remote[i].rate_hz > 0 && remote[i].rate_hz <= 1e7)) bad(w + ".rate_hz must be in (0, 1e7]");
    remote[i].timeout_ns.validate(w + ".timeout_ns");
    check_fn(remote[i].function, w);
  }
  check_cpus(busy_cpus, "busy");
  if (irq_ns < 0) bad("irq_ns must be >= 0");
  script.validate(nr_cpus, function_names.size());
}

jiffies_t Engine::timeout_jiffies(std::int64_t ns) const {
  // msecs_to_jiffies and friends round up.
  return (static_cast<std::uint64_t>(ns) + tick_nsec_ - 1) / tick_nsec_;
}

void Engine::push_work(unsigned cpu, WorkItem item) {
  cpus_[cpu].work.push(item);
  if (cpu != cur_) touch(cpu);
}

void Engine::start_workload() {
  const WorkloadSpec& w = cfg_.workload;
  start_script();  // first: script timer `key` gets TimerId `key`
  for (unsigned c : w.busy_cpus) cpus_[c].always_busy = true;
  for (unsigned s = 0; s < w.tasks.size(); ++s) {
    const TaskSpec& spec = w.tasks[s];
    for (unsigned c : spec.cpus) {
      for (unsigned k = 0; k < spec.per_cpu; ++k) {
        const auto id = static_cast<std::uint32_t>(tasks_.size());
        tasks_.push_back({c, s, true, kNoTimer, Rng(cfg_.seed, kTaskStream + id)});
        TaskState& ts = tasks_.back();
        ts.prio = spec.rt_priority;
        if (spec.sleep == SleepKind::timeout) ts.sleep_timer = new_timer(TimerKind::sleep, spec.sleep_function, 0, id, c);
        if (spec.hrtimer_sleep()) {
          set_context(c);  // hrtimer_setup_sleeper on the task's CPU
          ts.sleeper = new_hrtimer(HrtimerKind::sleeper, spec.sleep_function, id, false);
        }
        // Start at a random phase of the task's cycle, woken from outside.
        // (Capped: a lognormal's mean may exceed any time; the cast must not overflow.)
        const double cycle = std::min(spec.run_ns.mean() + spec.sleep_ns.mean(), 0x1p62);
        push_work(c, {now_ + static_cast<std::int64_t>(cycle * ts.rng.uniform()), work_task_wake, id});
      }
    }
  }
  for (unsigned s = 0; s < w.streams.size(); ++s) {
    for (unsigned c : w.streams[s].cpus) {
      const auto id = static_cast<std::uint32_t>(stream_rng_.size());
      stream_rng_.emplace_back(cfg_.seed, kStreamStream + id);
      push_work(c, {now_ + exp_interval(stream_rng_.back(), w.streams[s].rate_hz), work_stream,
                    (std::uint64_t{s} << 32) | id});
    }
  }
  for (unsigned s = 0; s < w.periodic.size(); ++s) {
    const PeriodicSpec& spec = w.periodic[s];
    for (unsigned c : spec.cpus) {
      const auto id = static_cast<std::uint32_t>(periodic_rng_.size());
      periodic_rng_.emplace_back(cfg_.seed, kPeriodicStream + id);
      const TimerId t = new_timer(TimerKind::periodic, spec.function, spec.flags, id, c);
      info_[t].owner = (s << 20) | id;  // spec and stream, for the re-arm
      const jiffies_t period = timeout_jiffies(spec.period_ns.sample_ns(periodic_rng_.back()));
      arm(c, t, jiffies() + 1 + periodic_rng_.back().below(period), MOD_TIMER_NOTPENDING);
    }
  }
  for (unsigned s = 0; s < w.loops.size(); ++s) {
    push_work(w.loops[s].cpu, {now_, work_loop, s});
    cpus_[w.loops[s].cpu].always_busy = true;  // the benchmark runs in task context
  }
  for (unsigned s = 0; s < w.remote.size(); ++s) {
    remote_rng_.emplace_back(cfg_.seed, kRemoteStream + s);
    push_work(w.remote[s].from_cpu, {now_ + exp_interval(remote_rng_.back(), w.remote[s].rate_hz), work_remote, s});
    cpus_[w.remote[s].from_cpu].always_busy = true;  // the enqueuing driver runs there
  }
}

void Engine::work(unsigned cpu, const WorkItem& item) {
  switch (item.kind) {
    case work_burst_end: {
      // (generation << 32) | task: a preempted burst's old end is stale.
      const auto task = static_cast<int>(item.id & 0xFFFFFFFFu);
      if (tasks_[static_cast<std::size_t>(task)].burst_gen == (item.id >> 32) && cpus_[cpu].running == task) {
        task_burst_end(cpu, task);
      }
      break;
    }
    case work_task_wake:
      interrupt(cpu);  // the event that ends the sleep arrives as an interrupt
      wake_task(static_cast<int>(item.id));
      break;
    case work_stream:
      stream_arrival(cpu, item.id);
      break;
    case work_resched:
      if (cpus_[cpu].act == Activity::run && cpus_[cpu].running < 0) run_next_task(cpu);
      break;
    case work_preempt:
      preempt(cpu);
      break;
    case work_cancel:
      cancel_timeout(cpu, item.id);
      break;
    case work_remote:
      remote_enqueue(cpu, static_cast<std::uint32_t>(item.id));
      break;
    case work_loop:
      enqueue_dequeue_loop(cpu, static_cast<std::uint32_t>(item.id));
      break;
    case work_script:
      script_op(cpu, static_cast<std::size_t>(item.id));
      break;
    case work_script_step:
      script_step(cpu, item);
      break;
    default:
      break;
  }
}

void Engine::interrupt(unsigned cpu) {
  // Work items run only on an awake CPU (an idle one was woken and paid its
  // exit latency first): an interrupt taken from idle keeps it awake longer.
  CpuState& cs = cpus_[cpu];
  if (cs.act == Activity::irq) cs.irq_end = std::max(cs.irq_end, now_ + cfg_.workload.irq_ns);
  set_context(cpu);
}

void Engine::wake_task(int task) {
  TaskState& ts = tasks_[static_cast<std::size_t>(task)];
  if (!ts.sleeping) return;
  ts.sleeping = false;
  const unsigned cpu = ts.cpu;
  CpuState& cs = cpus_[cpu];
  ++res_.cpus[cpu].tasks_woken;
  if (cfg_.record_events) log_.add(SimEvent::sched_wakeup, {static_cast<std::uint64_t>(task), cpu});
  cs.runq.push_back(task);
  if (cs.act != Activity::run) set_wake_pending(cpu, true);
  if (cs.act == Activity::irq || cs.act == Activity::exiting) {
    cs.need_resched = true;
  } else if (cs.act == Activity::idle) {
    send_ipi(cpu);  // try_to_wake_up on a remote idle CPU
  } else if (cs.running < 0) {
    // A CPU kept busy by background load runs the task next; it is
    // scheduled in that CPU's own step, not inside the waker's context.
    push_work(cpu, {now_, work_resched, static_cast<std::uint64_t>(task)});
  } else if (ts.prio > tasks_[static_cast<std::size_t>(cs.running)].prio) {
    // wakeup_preempt -> resched_curr: on this CPU when the waking interrupt
    // returns, on another once its reschedule IPI arrives.
    if (cpu == cur_ && in_clock_irq_) {
      cs.preempt_pending = true;  // clock_interrupt knows when it returns
    } else if (cpu == cur_) {
      push_work(cpu, {now_, work_preempt, static_cast<std::uint64_t>(task)});
    } else {
      push_work(cpu, {log_.ts_ns() + cfg_.ipi_latency_ns, work_preempt, static_cast<std::uint64_t>(task)});
      send_ipi(cpu);
    }
  }
  if (cpu != cur_) touch(cpu);
}

int Engine::pick_next_task(unsigned cpu) {
  // The highest priority first; among equals, the first to become runnable.
  std::vector<int>& q = cpus_[cpu].runq;
  std::size_t best = 0;
  for (std::size_t i = 1; i < q.size(); ++i) {
    if (tasks_[static_cast<std::size_t>(q[i])].prio > tasks_[static_cast<std::size_t>(q[best])].prio) best = i;
  }
  const int task = q[best];
  q.erase(q.begin() + static_cast<std::ptrdiff_t>(best));
  return task;
}

void Engine::preempt(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  if (cs.act != Activity::run || cs.running < 0 || cs.runq.empty()) return;
  TaskState& cur = tasks_[static_cast<std::size_t>(cs.running)];
  unsigned top = 0;
  for (const int t : cs.runq) top = std::max(top, tasks_[static_cast<std::size_t>(t)].prio);
  if (top <= cur.prio) return;
  // The running task keeps the rest of its burst and waits at the head of the queue.
  ++res_.cpus[cpu].preemptions;
  cur.remaining_ns = std::max<std::int64_t>(0, cur.burst_end - now_);
  ++cur.burst_gen;
  cs.runq.insert(cs.runq.begin(), cs.running);
  cs.running = -1;
  task_starts_running(cpu, pick_next_task(cpu));
}

void Engine::extend_burst(unsigned cpu, std::int64_t ns) {
  // The running task's burst ends later (its old end is stale).
  TaskState& ts = tasks_[static_cast<std::size_t>(cpus_[cpu].running)];
  ts.burst_end += ns;
  ++ts.burst_gen;
  push_work(cpu, {ts.burst_end, work_burst_end, (std::uint64_t{ts.burst_gen} << 32) | static_cast<unsigned>(cpus_[cpu].running)});
}

void Engine::run_next_task(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  set_context(cpu);
  if (!cs.runq.empty()) {
    task_starts_running(cpu, pick_next_task(cpu));
  } else if (cs.always_busy || cs.script_busy) {
    account(cpu);
    cs.act = Activity::run;
    set_busy(cpu, true);
  } else {
    account(cpu);
    cs.act = Activity::run;  // idle_enter accounts from here
    idle_enter(cpu);
  }
}

void Engine::task_starts_running(unsigned cpu, int task) {
  CpuState& cs = cpus_[cpu];
  TaskState& ts = tasks_[static_cast<std::size_t>(task)];
  const TaskSpec& spec = cfg_.workload.tasks[ts.spec];
  account(cpu);
  cs.act = Activity::run;
  cs.running = task;
  set_busy(cpu, true);
  latency_done(cpu, task);  // a measured wakeup: the task runs now
  if (ts.remaining_ns >= 0) {  // back after a preemption: the rest of its burst
    ts.burst_end = now_ + ts.remaining_ns;
    ts.remaining_ns = -1;
    push_work(cpu, {ts.burst_end, work_burst_end, (std::uint64_t{ts.burst_gen} << 32) | static_cast<unsigned>(task)});
    return;
  }
  if (cfg_.fair_server_defer_ns && ts.prio == 0) {
    // dl_server_start: a fair task runs; the server's timer is armed at its zero-laxity point.
    if (cs.fair_server == kNoHrtimer) cs.fair_server = new_hrtimer(HrtimerKind::fair_server, cfg_.fair_server_function, cpu, false);
    hr_.start(cs.fair_server, now_ + cfg_.fair_server_defer_ns, HRTIMER_MODE_ABS | HRTIMER_MODE_HARD);
  }
  // Woken before its timeout: schedule_timeout deletes its timer.
  if (ts.sleep_timer != kNoTimer && pool_[ts.sleep_timer].pending()) del_timer(cpu, ts.sleep_timer);
  // A periodic sleeper's next boundary, missed ones skipped (cyclictest; timerlat's wait_next_period).
  if (spec.sleep == SleepKind::clock_nanosleep || spec.sleep == SleepKind::timerlat) {
    const std::int64_t period = std::max<std::int64_t>(1, spec.sleep_ns.sample_ns(ts.rng));
    ts.next_abs = ts.next_abs == 0 ? now_ + period : ts.next_abs + period;
    if (ts.next_abs <= now_) ts.next_abs += ((now_ - ts.next_abs) / period + 1) * period;
  }
  ts.burst_end = now_ + spec.run_ns.sample_ns(ts.rng);
  push_work(cpu, {ts.burst_end, work_burst_end, (std::uint64_t{ts.burst_gen} << 32) | static_cast<unsigned>(task)});
  arm_timeouts(cpu, spec.timeouts, ts.rng);
}

void Engine::task_burst_end(unsigned cpu, int task) {
  CpuState& cs = cpus_[cpu];
  TaskState& ts = tasks_[static_cast<std::size_t>(task)];
  const TaskSpec& spec = cfg_.workload.tasks[ts.spec];
  ts.sleeping = true;
  cs.running = -1;
  cs.rcu_pending = true;  // the tick stays until the next one runs (rcu_needs_cpu, engine.hpp)
  if (spec.sleep == SleepKind::timeout) {
    const std::int64_t sleep = spec.sleep_ns.sample_ns(ts.rng);
    arm(cpu, ts.sleep_timer, jiffies() + timeout_jiffies(sleep), MOD_TIMER_NOTPENDING);  // schedule_timeout
  } else if (spec.sleep == SleepKind::external) {
    push_work(cpu, {now_ + spec.sleep_ns.sample_ns(ts.rng), work_task_wake, static_cast<std::uint64_t>(task)});
  } else {
    hrtimer_sleep(cpu, task);
  }
  run_next_task(cpu);
}

void Engine::hrtimer_sleep(unsigned /*cpu*/, int task) {
  // The sleep's window by its kind (hrtimers-and-latency.md §A.2); an RT
  // task's is 0 (its timer_slack_ns, and schedule_hrtimeout_range since 6.12).
  TaskState& ts = tasks_[static_cast<std::size_t>(task)];
  const TaskSpec& spec = cfg_.workload.tasks[ts.spec];
  const std::int64_t slack = spec.slack_ns();
  const bool rt = spec.rt_priority > 0;
  std::int64_t at = 0, delta = 0;
  std::uint8_t mode = HRTIMER_MODE_ABS;
  switch (spec.sleep) {
    case SleepKind::nanosleep:
      at = spec.sleep_ns.sample_ns(ts.rng);
      delta = slack;
      mode = HRTIMER_MODE_REL;
      break;
    case SleepKind::clock_nanosleep:
      at = ts.next_abs;
      delta = slack;
      break;
    case SleepKind::poll: {
      // select_estimate_accuracy: 0.1 % of the timeout (0.5 % when niced),
      // at most 100 ms, at least the task's slack.
      const std::int64_t timeout = spec.sleep_ns.sample_ns(ts.rng);
      at = now_ + timeout;
      delta = rt ? 0 : std::max(slack, std::min(timeout / (spec.nice > 0 ? 200 : 1000), kMaxPollSlackNs));
      break;
    }
    case SleepKind::usleep_range:
      at = now_ + spec.sleep_ns.sample_ns(ts.rng);
      delta = rt ? 0 : spec.range_ns;
      break;
    case SleepKind::timerlat:
      at = ts.next_abs;
      mode = HRTIMER_MODE_ABS | HRTIMER_MODE_PINNED | HRTIMER_MODE_HARD;
      break;
    default:
      return;
  }
  hr_.start_range_ns(ts.sleeper, at, delta, mode);
}

void Engine::arm_timeouts(unsigned cpu, const TimeoutSpec& spec, Rng& rng) {
  const jiffies_t now_j = jiffies();  // arming moves neither the clock nor jiffies
  for (unsigned k = 0; k < spec.count; ++k) {
    const TimerId t = new_timer(TimerKind::timeout, spec.function, spec.flags, 0, cpu);
    const jiffies_t expires = now_j + timeout_jiffies(spec.timeout_ns.sample_ns(rng));
    const bool cancel = rng.bernoulli(spec.cancel_p);
    const std::int64_t cancel_at = now_ + spec.cancel_after_ns.sample_ns(rng);
    arm(cpu, t, expires, MOD_TIMER_NOTPENDING);
    if (cancel) push_work(cpu, {cancel_at, work_cancel, (std::uint64_t{info_[t].generation} << 32) | t});
  }
}

void Engine::cancel_timeout(unsigned cpu, std::uint64_t id) {
  const auto t = static_cast<TimerId>(id & 0xFFFFFFFFu);
  // The timeout may have expired (and its id been reused) since.
  if (info_[t].generation != (id >> 32) || info_[t].kind != TimerKind::timeout || !pool_[t].pending()) return;
  interrupt(cpu);  // the completion that makes the timeout unnecessary
  del_timer(cpu, t);
  release_timer(t);
}

void Engine::stream_arrival(unsigned cpu, std::uint64_t id) {
  const TimeoutStreamSpec& spec = cfg_.workload.streams[id >> 32];
  Rng& rng = stream_rng_[id & 0xFFFFFFFFu];
  interrupt(cpu);  // the arrival is an interrupt: it wakes an idle CPU
  arm_timeouts(cpu, spec.timeouts, rng);
  push_work(cpu, {now_ + exp_interval(rng, spec.rate_hz), work_stream, id});
}

void Engine::remote_enqueue(unsigned cpu, std::uint32_t s) {
  const RemoteEnqueueSpec& spec = cfg_.workload.remote[s];
  Rng& rng = remote_rng_[s];
  const unsigned target = spec.to_cpus[rng.below(spec.to_cpus.size())];
  const TimerId t = new_timer(TimerKind::remote, spec.function, 0, s, cpu);
  const jiffies_t expires = jiffies() + timeout_jiffies(spec.timeout_ns.sample_ns(rng));
  set_context(cpu);
  add_timer_on(*this, t, expires, target);
  push_work(cpu, {now_ + exp_interval(rng, spec.rate_hz), work_remote, s});
}

void Engine::enqueue_dequeue_loop(unsigned cpu, std::uint32_t s) {
  const LoopSpec& spec = cfg_.workload.loops[s];
  Rng rng(cfg_.seed, kRemoteStream + 0x10000 + s);
  const TimerId t = new_timer(TimerKind::timeout, spec.function, 0, s, cpu);
  for (unsigned i = 0; i < spec.pairs; ++i) {
    arm(cpu, t, jiffies() + timeout_jiffies(spec.timeout_ns.sample_ns(rng)), 0);
    del_timer(cpu, t);
  }
  release_timer(t);
}

void Engine::timer_callback(TimerId t) {
  const TimerInfo& info = info_[t];
  switch (info.kind) {
    case TimerKind::sleep:
      wake_task(static_cast<int>(info.owner));  // process_timeout -> wake_up_process
      break;
    case TimerKind::periodic: {
      const unsigned spec = info.owner >> 20, id = info.owner & 0xFFFFF;
      const jiffies_t period = timeout_jiffies(cfg_.workload.periodic[spec].period_ns.sample_ns(periodic_rng_[id]));
      arm(cur_, t, jiffies() + period, 0);
      break;
    }
    case TimerKind::script:
      script_timer_fired(info.owner);  // a replayed task asleep on it wakes
      break;
    default:
      break;  // an expired timeout or remote timer: nothing more happens
  }
}

}  // namespace timerlab
