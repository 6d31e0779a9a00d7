"""The columns of a trace that replay and validate read: a trace opened over a
store (timerlab.trace.lazy) loads these alone, not every field of every
event (a third of a qemu trace's columns are fields nothing here reads:
sched_switch's comms and priorities, the hierarchy's masks, ...).

The list is every column name the replay, fidelity and feature-detection
code names; tests/test_store.py checks that validate over a store so
narrowed gives the report of the whole text.
"""
from __future__ import annotations

TRACE_COLUMNS = (
    "ts_ns", "cpu", "task", "pid", "event", "line", "tgid", "latency_flags", "payload",
    "timer", "function", "expires_jiffies", "timeout_jiffies", "bucket_expiry_jiffies", "base_cpu", "idx", "flags",
    "now_jiffies", "baseclk_jiffies", "is_idle", "cpu_id", "success", "dependency", "hrtimer", "mode",
    "expires_ns", "softexpires_ns", "was_armed", "now_ns", "state", "prev_pid", "next_pid", "wakee_pid",
    "target_cpu", "callsite", "action", "group", "lvl", "numa", "migrator", "nextevt_ns",
)


def narrowed(trace):
    """``trace`` itself, or, for a store not yet loaded, the same trace
    loading only TRACE_COLUMNS."""
    if getattr(trace, "loaded", True):
        return trace
    return trace.narrowed(TRACE_COLUMNS)
