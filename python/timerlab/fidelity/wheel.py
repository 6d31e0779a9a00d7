"""How closely timerlab's timer wheel agrees with what a real kernel recorded.

``wheel_replay(trace)`` checks the wheel model (kernel/time/timer.c) against
every ``timer_start`` and ``timer_expire_entry`` of a trace: the kernel printed
the bucket index and bucket expiry it computed at each enqueue, and the
collection clock (``baseclk``) at each expiry; timerlab recomputes them.

Two recomputations are reported for each timer_start:

* ``*_at_jiffies``: with the base clock equal to jiffies at the enqueue
  (``expires - timeout``), which is what the base of a running CPU has;
* ``*_replayed``: with the clock of a replay of that base. Every base (CPU x
  LOCAL/GLOBAL/DEF, from the timer's ``cpu=`` and flags) is rebuilt as a
  :class:`~timerlab.TimerWheel` fed with the trace's own events, in order:
  timer starts and cancels; expiries, collecting bucket by bucket as
  ``__run_timers`` catches up, so that callbacks re-arming timers see the
  clock the kernel had; the TIMER softirq, where a base whose stale
  next_expiry is due runs an empty collection; and each idle entry, where
  the idle path refreshes and forwards the LOCAL and GLOBAL bases
  (fetch_next_timer_interrupt; the DEF base is left alone). The jiffies
  value at events that do not print it comes from the tick: jiffies ==
  monotonic ns // TICK_NSEC + a constant, read off the trace.

The kernel forwards a base's clock only up to its first due bucket, so a base
holding an expired bucket not yet run (typically the DEF base of an idle CPU:
deferrable timers do not wake it) places new timers from a clock behind
jiffies. Each placement row says which case it is (``explanation``): ``clk ==
jiffies``; ``lagging clk reproduced by replay`` with the clock used; ``lagging
clk inferred`` with the range of clocks that give the kernel's answer when the
replay could not know the base (timers armed before the trace began); or
``UNEXPLAINED``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from tqdm import tqdm

from .._checks import check_hz
from ..replay.clocks import tick_jiffies_offset
from ..trace.events import CPU_IDLE_EXIT, column, expiry_detaches
from ..trace.rows import event_in, event_rows, rows, select_events, str_isin, str_test
from ..wheel import TimerWheel, calc_wheel_index

__all__ = ["wheel_replay", "wheel_placement", "base_of_flags", "WheelReplay"]

_U64 = 1 << 64
_EVENTS = ("timer_start", "timer_cancel", "timer_expire_entry", "timer_expire_exit", "cpu_idle",
           "softirq_entry", "hrtimer_expire_entry")
# What the replay and its two tables read of those events.
_COLUMNS = ("ts_ns", "line", "cpu", "timer", "function", "flags", "base_cpu", "expires_jiffies", "timeout_jiffies",
            "idx", "bucket_expiry_jiffies", "now_jiffies", "baseclk_jiffies", "now_ns", "state", "action")


def base_of_flags(flags) -> str:
    """Timer base a timer with these trace flags goes to (kernel >= 6.9, reference §2.2)."""
    letters = set(filter(None, str(flags or "").split("|")))
    if "D" in letters:
        return "DEF"
    return "LOCAL" if "P" in letters else "GLOBAL"


@dataclass
class WheelReplay:
    """Result of :func:`wheel_replay`: one row per timer_start, one per expiry."""

    placement: pd.DataFrame
    expiries: pd.DataFrame

    @property
    def placement_agreement(self) -> float:
        return float(self.placement["agrees"].mean()) if len(self.placement) else 1.0

    @property
    def expiry_agreement(self) -> float:
        known = self.expiries["baseclk_replayed"].notna()
        return float(self.expiries.loc[known, "agrees"].mean()) if known.any() else 1.0


class _Bases:
    """The replayed bases of one trace, keyed by (cpu, "LOCAL"|"GLOBAL"|"DEF")."""

    def __init__(self, hz: int):
        self.hz = hz
        self.wheels: dict[tuple, TimerWheel] = {}
        self.where: dict[int, tuple] = {}  # timer pointer -> (base key, wheel timer id)
        self.ids: dict[tuple, int] = {}  # (pointer, base key) -> wheel timer id
        self.ptr_of: dict[tuple, int] = {}  # (base key, wheel timer id) -> pointer
        self.idle_cores: dict[int, list] = {}  # CPU -> the core wheels of its LOCAL and GLOBAL bases
        # Timers collected for expiry whose timer_expire_entry is still to
        # come: pointer -> (base key, collection number, level). The kernel
        # reads baseclk when it starts a level's list, after the callbacks of
        # the lists before it (which may have forwarded clk by re-arming), so
        # the replay fixes a list's baseclk when its first timer is traced.
        self.collected: dict[int, tuple] = {}
        self.list_baseclk: dict[tuple, int] = {}
        self.collections = 0

    def _wheel(self, key, jiffies):
        w = self.wheels.get(key)
        if w is None:
            w = self.wheels[key] = TimerWheel(hz=self.hz, clk=jiffies, log=False)
            w.jiffies = jiffies
            if key[1] != "DEF":
                self.idle_cores.setdefault(key[0], []).append(w._w)
        elif jiffies > w._w.jiffies:  # an expires - timeout, in range: no check_int per start
            w._w.jiffies = jiffies
        return w

    def start(self, ptr, key, expires, jiffies):
        """timer_start: arm on its base; returns (idx, bucket_expiry, clk used)."""
        old = self.where.get(ptr)
        if old is not None and old[0] != key:
            self.wheels[old[0]]._w.del_timer(old[1])  # the core's: an id of its own, no check_int
        w = self._wheel(key, jiffies)
        t = self.ids.get((ptr, key))
        if t is None:
            t = self.ids[(ptr, key)] = w.new_timer()
            self.ptr_of[(key, t)] = ptr
        # The core wheel itself (w._w) on the paths run per event: TimerWheel's
        # argument checks and dicts cost more than the wheel on a long trace.
        w._w.mod_timer(t, expires, 0)
        self.where[ptr] = (key, t)
        self.collected.pop(ptr, None)
        _pending, _expires, idx, bucket, _flags = w._w.timer_info(t)
        return idx, bucket, w._w.clk

    def cancel(self, ptr):
        loc = self.where.get(ptr)
        if loc is not None:
            self.wheels[loc[0]]._w.del_timer(loc[1])

    def expire(self, ptr, now):
        """timer_expire_entry: run the timer's base one collection at a time
        until the timer is collected; returns the traced baseclk or None."""
        if ptr not in self.collected:
            loc = self.where.get(ptr)
            if loc is None or not self.wheels[loc[0]]._w.timer_info(loc[1])[0]:
                return None
            w = self.wheels[loc[0]]
            for _ in range(w.depth * 64):
                if not self._collect(loc[0], now) or ptr in self.collected:
                    break
        if ptr not in self.collected:
            return None
        key, number, level = self.collected.pop(ptr)
        return self.list_baseclk.setdefault((key, number, level), self.wheels[key].clk - 1)

    def expire_unknown(self, cpu, now, baseclk):
        """Expiry of a timer armed before the trace: it tells which collection
        ran. The first base of the CPU (in the kernel's order LOCAL, GLOBAL,
        DEF) whose first pending bucket is that baseclk collects it, with any
        known timers in the same collection."""
        for kind in ("LOCAL", "GLOBAL", "DEF"):
            w = self.wheels.get((cpu, kind))
            if w is not None and not w.next_expiry_recalc and w.next_expiry == baseclk <= now:
                self._collect((cpu, kind), now)
                return

    def _collect(self, key, now) -> bool:
        w = self.wheels[key]
        timers, idxs = w._collect_ids(max(now, w.jiffies))
        if not len(timers):
            return False
        self.collections += 1
        for wid, idx in zip(timers.tolist(), idxs.tolist()):
            self.collected[self.ptr_of[(key, wid)]] = (key, self.collections, idx // 64)
        return True

    def softirq(self, cpu, jiffies):
        """TIMER softirq: run the empty collections of stale, due next_expiry values."""
        for kind in ("LOCAL", "GLOBAL", "DEF"):
            w = self.wheels.get((cpu, kind))
            while w is not None and w.next_expiry_recalc and jiffies >= w.next_expiry and jiffies >= w.jiffies:
                w._collect_ids(jiffies)

    def idle_entry(self, cpu, basej):
        """Idle path: refresh and forward the LOCAL and GLOBAL bases to basej
        (each its own wheel: the order they were created in will do)."""
        for w in self.idle_cores.get(cpu, ()):
            if basej >= w.jiffies:
                w.jiffies = basej
                w.next_timer_interrupt(basej)
                w.forward(basej)


def wheel_replay(trace, *, hz: int = 250, progress: bool = False) -> WheelReplay:
    """Replay the timer events of ``trace`` through timerlab's wheel model.

    ``placement``: one row per timer_start with the kernel's idx and bucket
    expiry, timerlab's at jiffies and replayed, ``agrees`` (replayed ==
    kernel), ``clk_used``, ``clk_lag_jiffies`` and ``explanation``.
    ``expiries``: one row per timer_expire_entry with the kernel's baseclk
    and the replay's (NA where the timer was armed before the trace began).
    ``progress``: a bar of the events replayed on stderr, if a terminal.
    """
    hz = check_hz(hz)
    ev = select_events(trace.events, _EVENTS, _COLUMNS)
    tick_ns = 1_000_000_000 // hz
    acting, clock = _acting_rows(ev)
    # The tick's expiries and timer_expire_entry: all the offset reads.
    c = rows(ev, clock, ("event", "function", "now_ns", "now_jiffies"))
    offset = tick_jiffies_offset(column(c, "event"), column(c, "function", ""), column(c, "now_ns"),
                                 column(c, "now_jiffies"), tick_ns)
    detaches = _detaches(ev)
    # Python lists of the acting rows alone: most of the selection (idle exits, other softirqs and
    # hrtimers) is read only by the tables.
    a = rows(ev, acting, ("event", "cpu", "timer", "expires_jiffies", "timeout_jiffies", "now_jiffies",
                          "baseclk_jiffies", "now_ns", "flags", "base_cpu"))
    steps = zip(acting.tolist(), column(a, "event"), column(a, "cpu"), column(a, "timer"),
                column(a, "expires_jiffies"), column(a, "timeout_jiffies"), column(a, "now_jiffies"),
                column(a, "baseclk_jiffies"), column(a, "now_ns"), column(a, "flags", ""), column(a, "base_cpu"))

    bases = _Bases(hz)
    base_kind = {}  # flags -> base_of_flags(flags): a trace spells a handful
    placed, expired = [], []
    jiffies = None  # best known jiffies at the current event
    if progress:  # (a disabled bar still costs a generator step per event)
        steps = tqdm(steps, total=len(acting), desc="wheel", unit=" events", unit_scale=True, leave=False,
                     disable=None)
    for i, e, cpu, timer, expires, timeout, now, baseclk, now_ns, flags, base_cpu in steps:
        if e == "timer_start":
            jiffies = (expires - timeout) % _U64
            kind = base_kind.get(flags)
            if kind is None:
                kind = base_kind[flags] = base_of_flags(flags)
            placed.append(bases.start(timer, (base_cpu, kind), expires, jiffies))
        elif e == "timer_cancel":
            if i not in detaches:
                bases.cancel(timer)
        elif e == "timer_expire_entry":
            jiffies = now
            if timer not in bases.where and timer not in bases.collected:
                bases.expire_unknown(cpu, now, baseclk)
            expired.append(bases.expire(timer, now))
        elif jiffies is None:
            continue
        elif e == "hrtimer_expire_entry":  # the tick's
            if offset is not None:
                jiffies = max(jiffies, now_ns // tick_ns + offset)
        elif e == "cpu_idle":  # an idle entry
            bases.idle_entry(cpu, jiffies)
        else:  # the TIMER softirq
            bases.softirq(cpu, jiffies)

    return WheelReplay(_placement_frame(ev, placed, hz), _expiry_frame(ev, expired))


def _acting_rows(ev: pd.DataFrame) -> tuple:
    """(acting, clock): the positions (arrays) of the events that move the
    replay — the timer events, the tick's expiries (is_tick), idle entries
    and TIMER softirqs; the others (an idle exit, another softirq or
    hrtimer) change nothing there — and of the tick's expiries and
    timer_expire_entry. The events by their codes (event_in), not a string
    compare per row."""
    n = len(ev)
    tick = str_test(ev["function"], lambda f: f.startswith("tick_")) if "function" in ev else np.zeros(n, dtype=bool)
    entry = (ev["state"].to_numpy(dtype=np.int64, na_value=-1) != CPU_IDLE_EXIT if "state" in ev
             else np.ones(n, dtype=bool))  # a missing state is no exit
    timer_softirq = str_isin(ev["action"], ("TIMER",)) if "action" in ev else np.zeros(n, dtype=bool)
    tick &= event_in(ev, ("hrtimer_expire_entry",))
    expiry = event_in(ev, ("timer_expire_entry",))
    acting = (event_in(ev, ("timer_start", "timer_cancel")) | expiry | tick | (event_in(ev, ("cpu_idle",)) & entry)
              | (event_in(ev, ("softirq_entry",)) & timer_softirq))
    return np.flatnonzero(acting), np.flatnonzero(tick | expiry)


def _detaches(ev: pd.DataFrame) -> set:
    """expiry_detaches of the selection's timer events, as positions in it."""
    at = event_rows(ev, ("timer_start", "timer_cancel", "timer_expire_entry", "timer_expire_exit"))
    t = rows(ev, at, ("event", "cpu", "timer"))
    return set(at[sorted(expiry_detaches(column(t, "event"), column(t, "cpu"), column(t, "timer")))].tolist())


def wheel_placement(trace, *, hz: int = 250) -> pd.DataFrame:
    """The ``placement`` table of :func:`wheel_replay`."""
    return wheel_replay(trace, hz=hz).placement


def _placement_frame(ev: pd.DataFrame, placed: list, hz: int) -> pd.DataFrame:
    s = ev[ev["event"] == "timer_start"]
    expires = s["expires_jiffies"].to_numpy(dtype=np.uint64)
    jiffies = expires - s["timeout_jiffies"].to_numpy(dtype=np.int64).astype(np.uint64)
    out = pd.DataFrame({
        "line": s["line"].to_numpy(),
        "ts_ns": s["ts_ns"].to_numpy(),
        "cpu": s["cpu"].to_numpy(),
        "timer": s["timer"].to_numpy(dtype=np.uint64),
        "function": s["function"].astype(str).to_numpy(),
        "flags": s["flags"].astype(str).to_numpy(),
        "base": [base_of_flags(f) for f in s["flags"].astype(str)],
        "base_cpu": s["base_cpu"].to_numpy(dtype=np.int64),
        "jiffies": jiffies,
        "expires_jiffies": expires,
        "timeout_jiffies": s["timeout_jiffies"].to_numpy(dtype=np.int64),
        "idx_kernel": s["idx"].to_numpy(dtype=np.int64),
        "bucket_expiry_kernel": s["bucket_expiry_jiffies"].to_numpy(dtype=np.uint64),
    })
    idx_j, bucket_j = calc_wheel_index(expires, jiffies, hz=hz)
    out["idx_at_jiffies"] = idx_j.astype(np.int64)
    out["bucket_expiry_at_jiffies"] = bucket_j
    replayed = np.array(placed, dtype=np.uint64).reshape(-1, 3)
    out["idx_replayed"] = replayed[:, 0].astype(np.int64)
    out["bucket_expiry_replayed"] = replayed[:, 1]
    out["clk_replayed"] = replayed[:, 2]
    out["agrees"] = ((out["idx_replayed"] == out["idx_kernel"])
                     & (out["bucket_expiry_replayed"] == out["bucket_expiry_kernel"]))
    at_jiffies = ((out["idx_at_jiffies"] == out["idx_kernel"])
                  & (out["bucket_expiry_at_jiffies"] == out["bucket_expiry_kernel"])).to_numpy()
    out["clk_used"], out["clk_lag_jiffies"], out["explanation"] = _explain(out, at_jiffies, hz)
    return out


def _expiry_frame(ev: pd.DataFrame, expired: list) -> pd.DataFrame:
    x = ev[ev["event"] == "timer_expire_entry"]
    replayed = pd.array([None if b is None else int(b) for b in expired], dtype="UInt64")
    out = pd.DataFrame({
        "line": x["line"].to_numpy(),
        "cpu": x["cpu"].to_numpy(),
        "timer": x["timer"].to_numpy(dtype=np.uint64),
        "function": x["function"].astype(str).to_numpy(),
        "now_jiffies": x["now_jiffies"].to_numpy(dtype=np.uint64),
        "baseclk_kernel": x["baseclk_jiffies"].to_numpy(dtype=np.uint64),
        "baseclk_replayed": replayed,
    })
    out["agrees"] = (out["baseclk_replayed"] == out["baseclk_kernel"]).fillna(False).astype(bool)
    return out


def _explain(out: pd.DataFrame, at_jiffies: np.ndarray, hz: int):
    """The clock the kernel must have used for each row, and why."""
    clk_used = out["jiffies"].to_numpy().copy()
    lag = np.zeros(len(out), dtype=np.int64)
    why = np.where(at_jiffies, "clk == jiffies", "").astype(object)
    for k in np.flatnonzero(~at_jiffies):
        j, expires = int(out["jiffies"].iat[k]), int(out["expires_jiffies"].iat[k])
        want_idx, want_bucket = int(out["idx_kernel"].iat[k]), int(out["bucket_expiry_kernel"].iat[k])
        if out["agrees"].iat[k]:
            clk = int(out["clk_replayed"].iat[k])
            why[k] = (f"lagging clk reproduced by replay: the {out['base'].iat[k]} base's first pending "
                      f"bucket ({clk}) was due but not yet run, so clk stopped there")
            clk_used[k], lag[k] = clk, j - clk
            continue
        # A base clock never runs ahead of jiffies at an enqueue: search behind
        # (only here: the search costs two evaluations per jiffy of timeout).
        span = max(64, 2 * abs(expires - j))
        clks = np.arange(max(0, j - span), j + 1, dtype=np.uint64)
        idx, bucket = calc_wheel_index(np.full_like(clks, expires), clks, hz=hz)
        fits = clks[(idx == want_idx) & (bucket == want_bucket)]
        if len(fits):
            clk = int(fits.max())
            why[k] = f"lagging clk inferred (base state before the trace unknown): clk in [{int(fits.min())}, {clk}]"
        else:
            why[k] = "UNEXPLAINED"
            continue
        clk_used[k] = clk
        lag[k] = j - clk
    return clk_used, lag, why
