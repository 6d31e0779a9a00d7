"""Worker processes for validate's windows: fresh Python processes that run
``fn(*args)`` tasks, one at a time each, the tasks and results pickled over
their stdin and stdout.

Not multiprocessing: its "spawn" start re-runs the caller's main script in
every worker (a notebook's or a script's without ``if __name__ ==
"__main__"``), and "fork" copies a process whose reader threads (pyarrow's)
may hold locks. A worker here starts with the caller's ``sys.path`` and
imports only what its tasks need.
"""
from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import threading

# The worker's first message is the caller's sys.path and the modules to
# import while the caller prepares the tasks; then tasks until EOF.
_BOOT = ("import importlib, pickle, struct, sys; n, = struct.unpack('<Q', sys.stdin.buffer.read(8)); "
         "sys.path[:], preload = pickle.loads(sys.stdin.buffer.read(n)); "
         "[importlib.import_module(m) for m in preload]; from timerlab.fidelity.workers import serve; serve()")


def _send(f, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<Q", len(data)))
    f.write(data)
    f.flush()


def _receive(f):
    head = f.read(8)
    if len(head) < 8:
        raise EOFError
    (n,) = struct.unpack("<Q", head)
    data = f.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)


def serve() -> None:
    """A worker's loop: each task is (fn, args); the reply ("ok", result) or ("error", exception)."""
    # The replies get their own descriptor; anything else written to the
    # standard output (a print, a library's own writes) goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    while True:
        try:
            fn, args = _receive(sys.stdin.buffer)
        except EOFError:
            return
        try:
            reply = ("ok", fn(*args))
        except Exception as e:  # handed to the caller, which raises it
            reply = ("error", e)
        try:
            _send(out, reply)
        except (pickle.PicklingError, TypeError, AttributeError):
            _send(out, ("error", RuntimeError(f"{type(reply[1]).__name__}: {reply[1]}")))


class Pool:
    """``workers`` processes, started at once (they import ``preload`` while
    the caller works on), that :meth:`run` hands tasks to; leaving the
    ``with`` block ends them (kills them after an exception)."""

    def __init__(self, workers: int, preload=()):
        self.procs = [subprocess.Popen([sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                      for _ in range(workers)]
        for p in self.procs:
            _send(p.stdin, (list(sys.path), list(preload)))

    def __enter__(self):
        return self

    def __exit__(self, kind, _value, _tb):
        if kind is not None:
            _stop(self.procs)
        for p in self.procs:
            if not p.stdin.closed:
                p.stdin.close()
            p.wait()

    def run(self, tasks: list, done=None) -> list:
        """The results of ``tasks`` ([(fn, args), ...]) in their order;
        ``done(k)`` is called as task k ends. The first task to raise stops
        the others, and its exception is raised here."""
        results = [None] * len(tasks)
        todo = list(range(len(tasks)))[::-1]
        lock = threading.Lock()
        failed = []

        def drive(proc) -> None:
            try:
                while True:
                    with lock:
                        if failed or not todo:
                            return
                        k = todo.pop()
                    _send(proc.stdin, tasks[k])
                    kind, value = _receive(proc.stdout)
                    if kind == "error":
                        raise value
                    results[k] = value
                    if done is not None:
                        with lock:
                            done(k)
            except BaseException as e:
                with lock:
                    failed.append(e)
                _stop(self.procs)  # the others' tasks are of no use now

        threads = [threading.Thread(target=drive, args=(p,), daemon=True) for p in self.procs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failed:
            e = failed[0]
            if isinstance(e, (EOFError, BrokenPipeError)):
                raise RuntimeError("a validate worker process ended without replying (killed? out of memory?)") from e
            raise e
        return results


def _stop(procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
