// engine_guard.cpp — the runaway guard's slow paths: the checks made every
// kGuardCheckSteps steps and the errors it raises (guard.hpp).
#include <string>

#include "engine_impl.hpp"

namespace timerlab {

namespace {

const char* work_kind_name(std::uint8_t kind) {
  static const char* const names[] = {"work_resched", "work_burst_end", "work_task_wake", "work_stream",
                                      "work_cancel",  "work_remote",    "work_loop",      "work_script",
                                      "work_script_step"};
  return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "work item";
}

const char* activity_name(Activity a) {
  switch (a) {
    case Activity::run:
      return "running";
    case Activity::irq:
      return "in an interrupt";
    case Activity::idle:
      return "idle";
    default:
      return "leaving an idle state";
  }
}

}  // namespace

std::string Engine::due_source(unsigned cpu) const {
  // The source step() takes next on this CPU, in step()'s order.
  const CpuState& cs = cpus_[cpu];
  std::string what;
  if (cs.act == Activity::exiting) {
    what = "the end of an idle state's exit latency";
  } else if (cs.ipi_at <= now_) {
    what = "an IPI";
  } else if (clock_at(cpu) <= now_) {
    // The clock event: the hrtimer its device is programmed for.
    const HrtimerId next = hr_.base(cpu).next_timer;
    what = next == cs.tick_timer ? (cs.tick_stopped ? "the stopped tick's programmed wakeup" : "the periodic tick")
           : next == kNoHrtimer   ? "the clock event"
                                  : "an hrtimer (" + cfg_.workload.function_names[hr_[next].function] + ")";
  } else if (cs.irq_end <= now_ && !(cs.irq_for_work && !cs.work.empty() && cs.work.top().t <= now_)) {
    what = "the end of an interrupt";
  } else if (!cs.work.empty()) {
    what = work_kind_name(cs.work.top().kind);
  } else {
    what = "nothing";
  }
  return what + " (the CPU is " + activity_name(cs.act) + ")";
}

void Engine::runaway_no_progress(unsigned cpu) {
  throw RunawayError("simulation stopped making progress: " + std::to_string(guard_steps_) +
                     " steps without simulated time advancing, at t=" + std::to_string(now_) + " ns on CPU " +
                     std::to_string(cpu) + ", processing " + due_source(cpu) +
                     " (a model loops; please report it with the config)");
}

std::uint64_t Engine::memory_bytes() const {
  std::uint64_t b = res_.timers.capacity() * sizeof(TimerRow) + log_.rows().capacity() * sizeof(EventRow) +
                    info_.capacity() * sizeof(TimerInfo) + pool_.size() * sizeof(TimerList);
  const IdlePeriods& p = res_.idle_periods;
  b += p.cpu.capacity() * (2 * sizeof(std::int32_t) + 3 * sizeof(std::int64_t) + 3 * sizeof(std::uint8_t));
  for (const CpuState& cs : cpus_) b += cs.work.size() * sizeof(WorkItem) + cs.runq.capacity() * sizeof(int);
  return b;
}

void Engine::guard_check(unsigned cpu) {
  std::uint64_t items = 0, most = 0;
  unsigned most_cpu = cpu;
  for (unsigned c = 0; c < cpus_.size(); ++c) {
    const std::uint64_t k = cpus_[c].work.size();
    items += k;
    if (k > most) {
      most = k;
      most_cpu = c;
    }
  }
  const std::uint64_t limit = cfg_.guard.pending_limit(static_cast<unsigned>(cpus_.size()));
  const std::string where = " at t=" + std::to_string(now_) + " ns on CPU " + std::to_string(cpu) + ", processing " +
                            due_source(cpu);
  // A replay queues its trace's clock items up front: those are input, not a
  // runaway (a 2 GB trace queues millions of them).
  items = items > script_queued_ ? items - script_queued_ : 0;
  if (pending_ + items > limit) {
    throw RunawayError("runaway queue: " + std::to_string(pending_) + " timers pending and " + std::to_string(items) +
                       " work items queued besides the replayed trace's (the most, all kinds, on CPU " +
                       std::to_string(most_cpu) + ": " + std::to_string(most) +
                       "), over the limit of " + std::to_string(limit) + where +
                       " (the workload arms timers or work faster than they end)");
  }
  const std::uint64_t bytes = memory_bytes();
  if (cfg_.guard.max_memory_bytes && bytes > cfg_.guard.max_memory_bytes) {
    throw RunawayError("the run's memory reached " + std::to_string(bytes >> 20) + " MiB, over max_memory_bytes=" +
                       std::to_string(cfg_.guard.max_memory_bytes) + where +
                       " (shorten duration_ns, or record less: record_events, record_timers, record_idle)");
  }
}

}  // namespace timerlab
