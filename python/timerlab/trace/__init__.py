"""timerlab.trace: real kernel traces in, and the simulator's runs out, as ftrace.

* ``read.py`` — :func:`read_ftrace`: tracefs or ``trace-cmd report`` text
  (plain or compressed) into a :class:`Trace`, one DataFrame of events with
  units in the column names (the parsing is C++, ``_core.FtraceParser``);
* ``events.py`` — the event vocabulary shared by traces and the simulator's
  log (constants, column helpers, the simulator's log as a trace-shaped frame);
* ``features.py`` — what a trace shows of its machine and kernel (NUMA nodes,
  idle driver, release);
* ``hrtimers.py`` — :func:`hrtimer_table`: a trace's hrtimers, one row per
  instance with its expiry's latency (both trace forms);
* ``store.py``, ``lazy.py`` — :func:`convert`: a trace to an on-disk Parquet
  store, written in row groups (traces larger than memory); :func:`read_store`
  reads chosen events, CPUs, a time window; :func:`open_trace` (and
  ``read_ftrace`` on a store) opens it lazily as a :class:`StoredTrace`;
* ``export.py`` — a simulated run written as tracefs text
  (``Result.to_ftrace``).

Not here: turning a trace into a simulation (:mod:`timerlab.replay`) or
judging the simulator against one (:mod:`timerlab.fidelity`).
"""
from .hrtimers import hrtimer_table
from .lazy import StoredTrace, open_trace
from .read import Trace, TraceFormatError, read_ftrace
from .store import StoreError, convert, read_store, store_metadata

__all__ = ["Trace", "TraceFormatError", "read_ftrace", "hrtimer_table", "convert", "read_store", "open_trace",
           "StoredTrace", "StoreError", "store_metadata"]
