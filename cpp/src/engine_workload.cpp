// engine_workload.cpp — the workload's runtime: tasks, timeouts, periodic
// timers, remote enqueues, and the scheduling of tasks on their CPU (see
// workload.hpp for the model).
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
    t.timeout_ns.validate(what + ".timeout_ns");
    t.cancel_after_ns.validate(what + ".cancel_after_ns");
    if (!(t.cancel_p >= 0 && t.cancel_p <= 1)) bad(what + ".cancel_p must be in [0, 1]");
    if (t.flags & ~(TIMER_PINNED | TIMER_DEFERRABLE)) bad(what + ".flags: only pinned and deferrable");
    check_fn(t.function, what);
  };
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const std::string w = "tasks[" + std::to_string(i) + "]";
    check_cpus(tasks[i].cpus, w);
    tasks[i].run_ns.validate(w + ".run_ns");
    tasks[i].sleep_ns.validate(w + ".sleep_ns");
    if (tasks[i].run_ns.mean() + tasks[i].sleep_ns.mean() <= 0) bad(w + ": run_ns + sleep_ns must be positive");
    check_fn(tasks[i].sleep_function, w);
    check_timeouts(tasks[i].timeouts, w + ".timeouts");
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
        if (spec.sleep_on_timer) ts.sleep_timer = new_timer(TimerKind::sleep, spec.sleep_function, 0, id, c);
        // Start at a random phase of the task's cycle, woken from outside.
        const double cycle = spec.run_ns.mean() + spec.sleep_ns.mean();
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
    case work_burst_end:
      task_burst_end(cpu, static_cast<int>(item.id));
      break;
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
  if (cs.act == Activity::irq || cs.act == Activity::exiting) {
    cs.need_resched = true;
  } else if (cs.act == Activity::idle) {
    send_ipi(cpu);  // try_to_wake_up on a remote idle CPU
  } else if (cs.running < 0) {
    // A CPU kept busy by background load runs the task next; it is
    // scheduled in that CPU's own step, not inside the waker's context.
    push_work(cpu, {now_, work_resched, static_cast<std::uint64_t>(task)});
  }
  if (cpu != cur_) touch(cpu);
}

void Engine::run_next_task(unsigned cpu) {
  CpuState& cs = cpus_[cpu];
  set_context(cpu);
  if (!cs.runq.empty()) {
    const int task = cs.runq.front();
    cs.runq.erase(cs.runq.begin());
    task_starts_running(cpu, task);
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
  if (cfg_.fair_server_defer_ns) cs.fair_server_at = now_ + cfg_.fair_server_defer_ns;  // dl_server_start
  set_busy(cpu, true);
  // Woken before its timeout: schedule_timeout deletes its timer.
  if (ts.sleep_timer != kNoTimer && pool_[ts.sleep_timer].pending()) del_timer(cpu, ts.sleep_timer);
  push_work(cpu, {now_ + spec.run_ns.sample_ns(ts.rng), work_burst_end, static_cast<std::uint64_t>(task)});
  arm_timeouts(cpu, spec.timeouts, ts.rng);
}

void Engine::task_burst_end(unsigned cpu, int task) {
  CpuState& cs = cpus_[cpu];
  TaskState& ts = tasks_[static_cast<std::size_t>(task)];
  const TaskSpec& spec = cfg_.workload.tasks[ts.spec];
  const std::int64_t sleep = spec.sleep_ns.sample_ns(ts.rng);
  ts.sleeping = true;
  cs.running = -1;
  cs.rcu_pending = true;  // the tick stays until the next one runs (rcu_needs_cpu, engine.hpp)
  if (spec.sleep_on_timer) {
    arm(cpu, ts.sleep_timer, jiffies() + timeout_jiffies(sleep), MOD_TIMER_NOTPENDING);  // schedule_timeout
  } else {
    push_work(cpu, {now_ + sleep, work_task_wake, static_cast<std::uint64_t>(task)});
  }
  run_next_task(cpu);
}

void Engine::arm_timeouts(unsigned cpu, const TimeoutSpec& spec, Rng& rng) {
  for (unsigned k = 0; k < spec.count; ++k) {
    const TimerId t = new_timer(TimerKind::timeout, spec.function, spec.flags, 0, cpu);
    const jiffies_t expires = jiffies() + timeout_jiffies(spec.timeout_ns.sample_ns(rng));
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
