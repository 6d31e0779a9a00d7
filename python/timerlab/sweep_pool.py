"""The worker processes of ``sweep(backend="processes")``, and what a sweep
does on a fault.

concurrent.futures' pool cannot do what a long sweep needs: one dead worker
breaks the whole pool (BrokenProcessPool), and a run cannot be stopped
without breaking it either. Here each worker is a process with a pipe; the
parent hands it one run at a time and waits on the pipes and the processes
together, so that it knows which run a dead worker held:

=================  ===========================================================
fault              what happens
=================  ===========================================================
a worker dies      its run goes to a new worker once more; a second death
                   makes it a failed run ("worker process died ...")
time limit         the worker running over ``time_limit_s`` is killed and a
                   new one started; the run is a failed run (TimeoutError)
SIGINT, SIGTERM    KeyboardInterrupt / SystemExit(143) in the parent: workers
                   are killed and reaped, the sweep's finished runs are
                   written to its cache (sweep.py), and the exception goes on
=================  ===========================================================

Workers ignore SIGINT (Ctrl-C in a terminal reaches the whole process
group): the parent decides, and stops them itself.
"""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import sys
import threading
import time
from collections import deque
from multiprocessing.connection import wait

__all__ = ["WorkerPool", "terminate_like_interrupt"]

RETRIES = 1  # runs again after its worker died, before it is reported as failed


def _worker(conn, fn) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        try:
            task = conn.recv()
        except EOFError:  # the parent is gone
            return
        conn.send(fn(*task))


def _death(exitcode) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


class _Slot:
    """A worker process, its end of the pipe, and the run it holds (if any)."""

    def __init__(self, ctx, fn):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, fn), name="timerlab-sweep-worker", daemon=True)
        self.proc.start()
        child.close()
        self.job, self.started = None, 0.0

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()  # reaped: no zombie left behind
        self.conn.close()


class WorkerPool:
    def __init__(self, workers: int):
        self.workers = workers

    def run(self, fn, tasks: list, done) -> None:
        """fn(*tasks[j]) in the workers; done(j, outcome) with fn's (records,
        wall_s, error) or a failure of the same shape. tasks[j][-1] is the
        run's time limit (s) or None."""
        ctx = mp.get_context()
        todo, deaths = deque(range(len(tasks))), {}
        slots = []
        try:
            slots = [_Slot(ctx, fn) for _ in range(self.workers)]
            left = len(tasks)
            while left:
                for i, slot in enumerate(slots):
                    if slot.job is None and todo:
                        if not slot.proc.is_alive():  # died while idle: no run lost
                            slot.stop()
                            slots[i] = slot = _Slot(ctx, fn)
                        slot.job, slot.started = todo.popleft(), time.monotonic()
                        try:
                            slot.conn.send(tasks[slot.job])
                        except OSError:  # died just now: the loop below sees it
                            pass
                busy = [s for s in slots if s.job is not None]
                ready = set(wait([s.conn for s in busy] + [s.proc.sentinel for s in busy], self._timeout(tasks, busy)))
                for i, slot in enumerate(slots):
                    if slot.job is None:
                        continue
                    j, limit = slot.job, tasks[slot.job][-1]
                    outcome = None
                    if slot.conn in ready:
                        try:
                            outcome = slot.conn.recv()
                        except (EOFError, OSError):
                            pass  # died while sending: handled as a death below
                    if outcome is not None:
                        slot.job = None
                    elif slot.proc.sentinel in ready or not slot.proc.is_alive():
                        slot.proc.join()
                        deaths[j] = deaths.get(j, 0) + 1
                        why = _death(slot.proc.exitcode)
                        slot.stop()
                        slots[i] = _Slot(ctx, fn)
                        if deaths[j] <= RETRIES:
                            todo.appendleft(j)
                            continue
                        outcome = (None, 0.0, f"WorkerDied: the worker process died running this point "
                                              f"{deaths[j]} times ({why})")
                    elif limit is not None and time.monotonic() - slot.started > limit:
                        slot.stop()
                        slots[i] = _Slot(ctx, fn)
                        outcome = (None, 0.0, f"TimeoutError: over the time limit of {limit:g} s; its worker was "
                                              "killed")
                    else:
                        continue
                    left -= 1
                    done(j, outcome)
        finally:
            for slot in slots:
                slot.stop()

    @staticmethod
    def _timeout(tasks, busy) -> float | None:
        """How long to wait before a busy worker reaches its time limit."""
        ends = [s.started + tasks[s.job][-1] for s in busy if tasks[s.job][-1] is not None]
        return max(0.0, min(ends) - time.monotonic()) + 0.01 if ends else None


@contextlib.contextmanager
def terminate_like_interrupt():
    """SIGTERM handled like Ctrl-C while a sweep runs: the handler raises
    SystemExit(128 + SIGTERM) where the parent is, so that the same finally
    blocks stop the workers and write the cache, and the process then exits.
    Left alone when not in the main thread, or when the program has its own
    SIGTERM handler."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def handler(signum, frame):
        print("timerlab.sweep: SIGTERM: stopping the workers; finished runs go to the cache", file=sys.stderr)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
