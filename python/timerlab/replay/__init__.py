"""timerlab.replay: a real trace -> a script workload -> a Config the simulator runs.

``to_workload(trace)`` turns a trace into a workload (kind ``"script"``, the
core's ScriptSpec in cpp/include/timerlab/workload.hpp) and ``to_config(trace)``
into a whole :class:`~timerlab.Config` with the trace's CPUs, NUMA nodes, HZ,
kernel release, start and length::

    tr = tl.read_ftrace("trace.txt.xz")
    res = tl.simulate(tr.to_config(placement="pull", deferrable="global"))

What is replayed (the script) and what is simulated:

* **timer operations** — every ``timer_start`` (timer pointer, arming CPU =
  the event's CPU, flags, absolute expiry in jiffies, callback name, and how
  it was asked for: mod_timer, add_timer_on or a re-arm from its own
  callback, ``arms.py``; how long its callback ran when it expired,
  timerlab.callbacks) and every ``timer_cancel`` that is a delete (not the
  detach the kernel logs just before running an expired timer), at their
  recorded times. Placement (push or pull), wakeups, expiry and the
  hierarchy are the simulation's.
* **tasks** — when each CPU runs a task and when its idle task runs, from
  ``sched_switch`` to and from ``swapper/N`` (pid 0); where the switch away
  from the idle task is missing (CPU 1 of the 2-CPU VM), the first event
  another task logs there. A task woken by the interrupt that ends an idle
  period runs from that interrupt (the kernel's idle loop does not enter
  idle again). A task woken by a timer's callback (a process_timeout of
  schedule_timeout; not a deferrable timer) runs when the simulation
  expires that timer — remotely, late or early as the policy makes it —
  and its run moves with it (engine_replay.cpp). The idle loop itself
  (idle entries, governor, tick stop) is the simulation's (with its tick
  model, ``Config(rcu_needs_cpu=True)``: the tick kept from a task
  switching out to the CPU's next tick, where the trace shows the kernel
  keeping it there — not on cyclictest's, whose sleeps queue no RCU
  callbacks: rcu_needs_cpu="auto") — unless ``tick="kept"``, which
  keeps the tick at the idle entries where the kernel kept it for reasons
  no trace records and the tick model does not cover (RCU callbacks waiting
  for a grace period, irq_work: entries after the CPU's first tick since a
  task ran; on a CPU that logs no cpu_idle, when its tick was re-armed
  periodically while swapper ran) and simulates the rest (the tick model
  included, which can keep a tick the kernel stopped), or ``tick="trace"``,
  which imposes every decision (on a CPU that logs no cpu_idle, as "kept":
  its stops do not show). A decision is in force from two ticks before its
  entry.
* **the state at the start** — which idle CPUs' tick runs (``initial_tick``:
  they tick within two periods), who holds the jiffies-update duty.
* **hrtimers** — every hrtimer_start and real hrtimer_cancel other than the
  tick's is a script item (``hrtimer_arm``: absolute soft expiry, window,
  PINNED/SOFT/HARD; ``hrtimer_cancel``), placed by the simulation's hrtimer
  model (get_nohz_timer_target, the first-timer rule), so a what-if can move,
  pin or slack them; each instance carries its traced lateness to its
  handler. Replayed expiries end idle periods themselves. A task woken by
  ``hrtimer_wakeup`` runs at its traced time (``hrtimer_wakeups="trace"``)
  or when the simulation expires its hrtimer (``"causal"``); a woken task
  makes its CPU non-idle for get_nohz_timer_target at once (``wake_pending``).
* **device interrupts** — an idle period whose first event is not the tick
  (``hrtimer_expire_entry`` of ``tick_nohz_handler``/``tick_sched_timer``),
  a replayed hrtimer, nor a task wakeup that then runs a task — e.g. a
  function-call IPI (``softirq SCHED``: nohz idle
  balancing), or nothing visible — ends with an external interrupt at the
  time of that first event, keeping the CPU awake until it idles again or
  runs a task. Where the CPU then left the idle loop without running a task
  (need-resched with nothing to run, 6.12's fair-server ``dl_task_timer``:
  ``timer_base_idle is_idle=0`` / ``tmigr_cpu_active`` before it idles
  again), an ``idle_exit`` instead: the simulated CPU leaves the loop too
  (tick_nohz_idle_exit, tmigr_cpu_activate) and idles afresh. Only CPUs that
  log ``cpu_idle`` show these.
* **how long interrupts kept an idle CPU awake** — an external interrupt
  until the CPU idles again, and each clock wakeup (the tick, a stopped
  tick's programmed wakeup) after which it idles again until its handler and
  the softirqs it raised (timer callbacks, RCU, nohz idle balancing) were
  done: cpu_idle's exit (``wake_irq`` items; p10-p90 12-99 µs on the 16-CPU
  qemu trace, 23-200 µs on the idle one, 5-17 µs on the 2-CPU VM). CPUs
  woken by one tick go inactive in the hierarchy in the order their
  interrupts end, as the kernel's did (with every interrupt ``irq_ns`` long
  they went in the order their ticks fired, and the migrator changed hands
  where the kernel's did not).

Where the trace cannot show something — a CPU that logs no ``cpu_idle``
(its device interrupts, idle entries and tick stops), timers armed before the
trace began (only the global ones an idle CPU reports to the hierarchy are
armed, as phantoms) — the script and the report say so (``Script.notes``,
``FidelityReport.notes``).

Clocks: trace timestamps are the trace clock, not CLOCK_MONOTONIC. The
offset between them is read off ``hrtimer_expire_entry`` (its ``now=`` is
monotonic); the simulation runs in monotonic time, ``start_ns`` being the
monotonic time of the trace's first replayed event, and its jiffies equal the
trace's: jiffies = monotonic // TICK_NSEC + a constant read off the trace as
:func:`timerlab.fidelity.wheel_replay` does (``SimConfig.initial_jiffies``).
Each tick fires as late as traced (``tick_delay`` items, measured from the
grid point its hrtimer was programmed for to when its handler ran — the
tick's work, the jiffies update included, is the handler's: a tick a period
or more late swallowed that grid point's tick), and so does each stopped tick's
programmed wakeup: a simulated stopped tick programmed for the same time on
the same CPU arrives as late as the kernel's, and one the kernel did not have
draws its lateness from that CPU's traced ones (``Config.wake_latency``,
timerlab.wake_latency) — races of several idle duty holders for one event
are settled by the trace's own wake order. The kernel's jiffies lag the grid when
its ticks run late (under qemu, at a fifth of the timer starts, by 1-4
jiffies): only the CPU holding the jiffies-update duty advances them at its
tick. ``jiffies="kernel"`` models that (``SimConfig.jiffies_duty``; the
holder at the start and each hand-over as the recorded jiffies show them:
``jiffies_duty`` items), ``"grid"`` keeps jiffies on the grid, and
``"auto"`` (default) picks the one that reproduces more of the jiffies values
the kernel recorded (98.7 % vs 78.7 % on the 16-CPU qemu trace: "kernel";
the 2-CPU VM: "grid").

Idle: a trace whose cpu_idle events all say state 1 comes from a machine
without a cpuidle driver (``governor="none"``); see :func:`to_config`.

Modules: ``script.py`` (the Script and how it is built from a trace),
``arms.py`` (how each timer_start was asked for), ``phantoms.py`` (global
timers armed before the trace, read off the hierarchy's reports),
``activity.py`` (tasks, idle periods, device interrupts, tick decisions read
off the trace, how long interrupts kept idle CPUs awake), ``clocks.py``
(clock offset, HZ, jiffies, tick lateness),
``config.py`` (the whole Config).

Not here: reading the trace (:mod:`timerlab.trace`), comparing a replay with
the kernel (:mod:`timerlab.fidelity`: ``tl.validate(trace)`` replays the
trace under the kernel's own policy and compares).
"""
from .config import to_config
from .ops import OP_ARM, OP_BUSY, OP_CANCEL, OP_DELAY, OP_DUTY, OP_EXIT, OP_IDLE, OP_IRQ, OP_NAMES, OP_TICK, OP_WAKE_IRQ
from .script import (JIFFIES_MODES, REQUIRED_EVENTS, TICK_MODES, VALIDATE_EVENTS, Script, build_script,
                     require_events, script_of, to_workload)

__all__ = ["Script", "build_script", "to_workload", "to_config", "script_of", "require_events", "REQUIRED_EVENTS",
           "VALIDATE_EVENTS", "JIFFIES_MODES", "TICK_MODES", "OP_ARM", "OP_BUSY", "OP_CANCEL", "OP_DELAY", "OP_DUTY",
           "OP_EXIT", "OP_IDLE", "OP_IRQ", "OP_NAMES", "OP_TICK", "OP_WAKE_IRQ"]

