"""timerlab: a simulator of the Linux kernel's timer subsystem.

Public API (see DESIGN.md): ``Config``, ``simulate`` / ``Result``, ``sweep``,
``workloads``, ``dist``, ``idle_states``, ``latency``, ``hierarchy``, ``Topology``,
``calc_wheel_index``, ``TimerWheel``, ``read_ftrace`` / ``Trace``, ``validate``,
``predict``.
"""
from .wheel import TimerWheel, calc_wheel_index, parse_timer_flags, wheel_constants
from .trace import Trace, TraceFormatError, open_trace, read_ftrace
from .topology import Topology
from .hierarchy import Hierarchy, hierarchy
from . import callbacks, config_file, dist, idle_states, latency, plot, trace, workloads
from .config import Config
from .wake_latency import WakeLatency, wake_latency_of
from .simulate import Result, RunawayError, simulate
from .sweep import SweepError, sweep
from . import replay
from .fidelity import FidelityReport, Prediction, predict, validate

__version__ = "0.1.0"


def example_trace():
    """Path of the bundled real trace (Linux 6.18, 2 CPUs, HZ=250, fsync'ed writes between 30 ms sleeps)."""
    from .cli_wheel import bundled_trace

    return bundled_trace()

__all__ = [
    "Config",
    "WakeLatency",
    "wake_latency_of",
    "FidelityReport",
    "Hierarchy",
    "Result",
    "RunawayError",
    "SweepError",
    "callbacks",
    "dist",
    "example_trace",
    "plot",
    "idle_states",
    "latency",
    "simulate",
    "sweep",
    "workloads",
    "TimerWheel",
    "Topology",
    "hierarchy",
    "Trace",
    "TraceFormatError",
    "calc_wheel_index",
    "parse_timer_flags",
    "predict",
    "Prediction",
    "read_ftrace",
    "open_trace",
    "replay",
    "validate",
    "wheel_constants",
]
