"""The kernel's timer wheel, on its own: ``calc_wheel_index`` and ``TimerWheel``.

Models kernel/time/timer.c (reference §1); the model itself is C++
(cpp/include/timerlab/wheel.hpp). Everything here is in jiffies.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import _core
from ._checks import as_u64_array, check_hz, check_int, U64_MAX

__all__ = ["calc_wheel_index", "TimerWheel", "wheel_constants", "parse_timer_flags"]

_FLAG_BITS = {"D": _core.TIMER_DEFERRABLE, "P": _core.TIMER_PINNED, "I": _core.TIMER_IRQSAFE}
_EVENT_NAMES = ["timer_start", "timer_cancel", "timer_expire_entry"]


def calc_wheel_index(expires, clk, hz: int = 250):
    """Bucket of a timer armed for ``expires`` on a base whose clock is ``clk``.

    Models calc_wheel_index() of kernel/time/timer.c, with the unsigned long
    arithmetic of a 64-bit kernel (so deltas wrap) and the clamp of timeouts
    beyond the wheel's capacity. ``expires`` and ``clk`` are jiffies: ints or
    uint64 arrays, broadcast against each other.

    Returns ``(idx, bucket_expiry)``: the bucket index (0..575, or 0..511 at
    HZ <= 100) and the jiffy at which the wheel collects the timer. Scalars in,
    scalars out; arrays in, uint32 and uint64 arrays out.
    """
    hz = check_hz(hz)
    e = as_u64_array("expires", expires)
    c = as_u64_array("clk", clk)
    try:
        e_b, c_b = np.broadcast_arrays(e, c)
    except ValueError:
        raise ValueError(f"expires (shape {e.shape}) and clk (shape {c.shape}) cannot be broadcast together") from None
    shape = e_b.shape
    idx, bucket = _core.calc_wheel_index(np.ascontiguousarray(e_b).ravel(), np.ascontiguousarray(c_b).ravel(), hz)
    if shape == ():
        return int(idx[0]), int(bucket[0])
    return idx.reshape(shape), bucket.reshape(shape)


def bucket_expiry_from_idx(expires, timeout, idx, hz: int = 250):
    """The bucket expiry of timer_start lines that do not print it (kernels
    before 6.8), from what they do print: ``expires``, ``timeout`` (expires
    minus jiffies at the enqueue) and ``idx`` (the bucket index), following
    reference pre-6.9-kernels.md §2.2. The level is ``idx // 64`` — never
    derived from the timeout, since the base clock may be jiffies + 1 (5.4)
    or lag jiffies (an idle base). Then:

    * an expired timer (timeout < 0, level 0) sat in the slot of the base
      clock: the bucket is the latest jiffy at most jiffies + 1 whose slot is idx;
    * at the last level with a timeout near the cutoff or beyond, the timer
      was clamped to clk + WHEEL_TIMEOUT_MAX if expires - clk reached the
      cutoff, for clk in {J, J+1, J-1}: the first clock whose bucket's slot is idx;
    * otherwise the expiry rounded up to the level's granularity.

    Returns ``(bucket_expiry, ok)`` as uint64 and bool arrays; ``ok`` is False
    where no case gives idx (a vendor hook in the wheel, for instance), and
    bucket_expiry 0 there.
    """
    c = wheel_constants(hz)
    depth, cutoff, tmax = c["LVL_DEPTH"], c["WHEEL_TIMEOUT_CUTOFF"], c["WHEEL_TIMEOUT_MAX"]
    e = as_u64_array("expires", expires)
    t = np.asarray(timeout, dtype=np.int64)
    i = np.asarray(idx, dtype=np.int64)
    lvl = i // 64
    slot = (i % 64).astype(np.uint64)
    shift = (3 * lvl).astype(np.uint64)
    jiffies = e - t.astype(np.uint64)
    mask = np.uint64(63)

    def rounded_up(at):
        q = (at >> shift) + np.uint64(1)
        return q << shift, (q & mask) == slot

    out, ok = rounded_up(e)
    out = np.where(ok, out, np.uint64(0))
    expired = (t < 0) & (lvl == 0)
    after = jiffies + np.uint64(1)
    out[expired] = (after - ((after - slot) & mask))[expired]
    ok |= expired
    # Near the cutoff the clock decides whether the kernel clamped: try each.
    maybe = (lvl == depth - 1) & (t >= cutoff - 1)
    if maybe.any():
        ok &= ~maybe
        for clk in (jiffies, jiffies + np.uint64(1), jiffies - np.uint64(1)):
            clamp = (e - clk) >= np.uint64(cutoff)
            b, fits = rounded_up(np.where(clamp, clk + np.uint64(tmax), e))
            take = maybe & fits & ~ok
            out[take] = b[take]
            ok |= take
    return out, ok


def wheel_constants(hz: int = 250) -> dict:
    """The wheel's constants at this HZ: LVL_DEPTH, LVL_START, LVL_GRAN, WHEEL_TIMEOUT_MAX, ..."""
    return dict(_core.wheel_constants(check_hz(hz)))


def parse_timer_flags(flags) -> int:
    """Timer init flags from ``"D|P|I"`` letters (as in trace output) or an int."""
    if isinstance(flags, str):
        bits = 0
        for letter in filter(None, flags.split("|")):
            if letter not in _FLAG_BITS:
                raise ValueError(f"flags={flags!r}: unknown letter {letter!r}; allowed D (deferrable), P (pinned), I (irqsafe)")
            bits |= _FLAG_BITS[letter]
        return bits
    bits = check_int("flags", flags, minimum=0)
    if bits & ~(sum(_FLAG_BITS.values())):
        raise ValueError(f"flags={flags:#x} may only combine TIMER_DEFERRABLE, TIMER_PINNED and TIMER_IRQSAFE")
    return bits


def _flags_text(bits: int) -> str:
    return "|".join(letter for letter, bit in _FLAG_BITS.items() if bits & bit)


class TimerWheel:
    """One timer base (``struct timer_base``) of kernel/time/timer.c, for notebooks.

    ``clk`` is the jiffies value at creation (the kernel initialises a base's
    clock to jiffies). Timers are small integers handed out by
    :meth:`add_timer` / :meth:`new_timer`. Operations follow the kernel to the
    bucket: the base clock is forwarded at every arm (never past a due bucket),
    ``mod_timer`` takes the same-bucket shortcut, deleting the last timer of a
    bucket only marks ``next_expiry`` stale, and :meth:`run` expires bucket by
    bucket exactly like ``__run_timers``. Every traced operation is logged in
    :attr:`events` with the fields of the kernel's tracepoints (``log=False``:
    none is, for long replays).

    The wheel's "now" is :attr:`jiffies`; it only moves forward (assign it,
    or pass ``jiffies=`` to :meth:`run`).
    """

    def __init__(self, *, hz: int = 250, clk: int = 0, log: bool = True):
        self._hz = check_hz(hz)
        self._w = _core.StandaloneWheel(self._hz, check_int("clk", clk, minimum=0, maximum=U64_MAX))
        if not isinstance(log, bool):
            raise TypeError(f"log must be True or False, not {log!r}")
        # log=False: no event log is kept (events stays empty), so that a
        # replay of a long trace neither grows it without bound nor reads it
        # whole at every run (each run would then cost the whole history).
        self._log = log

    # -- state -----------------------------------------------------------
    hz = property(lambda self: self._hz, doc="HZ of the modelled kernel")
    clk = property(lambda self: self._w.clk, doc="base->clk (jiffies)")
    next_expiry = property(lambda self: self._w.next_expiry, doc="cached base->next_expiry (may be stale, see next_expiry_recalc)")
    next_expiry_recalc = property(lambda self: self._w.next_expiry_recalc, doc="True when next_expiry is stale")
    timers_pending = property(lambda self: self._w.timers_pending, doc="base->timers_pending (valid when not stale)")
    pending_count = property(lambda self: self._w.pending_count, doc="number of timers queued")
    depth = property(lambda self: self._w.depth, doc="LVL_DEPTH: 9 levels, 8 at HZ <= 100")

    @property
    def jiffies(self) -> int:
        """The wheel's current jiffies (the kernel's global ``jiffies``)."""
        return self._w.jiffies

    @jiffies.setter
    def jiffies(self, value: int) -> None:
        self._w.jiffies = check_int("jiffies", value, minimum=0, maximum=U64_MAX)

    # -- timer API --------------------------------------------------------
    def new_timer(self, *, flags="") -> int:
        """A new timer, not armed (``timer_setup``); flags ``"D|P|I"`` or bits."""
        return self._w.new_timer(parse_timer_flags(flags))

    def add_timer(self, expires: int, *, flags="") -> int:
        """Create a timer and arm it for ``expires`` (``add_timer``); returns its id."""
        t = self.new_timer(flags=flags)
        self._w.mod_timer(t, self._expires(expires), _core.MOD_TIMER_NOTPENDING)
        return t

    def mod_timer(self, timer: int, expires: int) -> int:
        """``mod_timer``: (re)arm; returns 1 if the timer was pending, else 0."""
        return self._w.mod_timer(self._timer(timer), self._expires(expires), 0)

    def mod_timer_pending(self, timer: int, expires: int) -> int:
        """``mod_timer_pending``: re-arm only a pending timer."""
        return self._w.mod_timer(self._timer(timer), self._expires(expires), _core.MOD_TIMER_PENDING_ONLY)

    def timer_reduce(self, timer: int, expires: int) -> int:
        """``timer_reduce``: re-arm only if that makes the timer expire earlier."""
        return self._w.mod_timer(self._timer(timer), self._expires(expires), _core.MOD_TIMER_REDUCE)

    def del_timer(self, timer: int) -> int:
        """``timer_delete``: returns 1 if the timer was pending."""
        return self._w.del_timer(self._timer(timer))

    def timer(self, timer: int) -> dict:
        """State of one timer: pending, expires_jiffies, idx, level, bucket_expiry_jiffies, flags."""
        pending, expires, idx, bucket, flags = self._w.timer_info(self._timer(timer))
        return {
            "pending": pending,
            "expires_jiffies": expires,
            "idx": idx,
            "level": idx // 64,
            "bucket_expiry_jiffies": bucket,
            "flags": _flags_text(flags),
        }

    # -- clock and expiry -------------------------------------------------
    def forward(self, basej: int) -> None:
        """``__forward_timer_base``: move clk to basej, never past a due bucket."""
        self._w.forward(check_int("basej", basej, minimum=0, maximum=U64_MAX))

    def next_timer_interrupt(self, basej: int) -> int:
        """``next_timer_interrupt``: refresh a stale next_expiry; empty -> basej + TIMER_NEXT_MAX_DELTA."""
        return self._w.next_timer_interrupt(check_int("basej", basej, minimum=0, maximum=U64_MAX))

    def run(self, jiffies: int | None = None, *, callback=None) -> pd.DataFrame:
        """Advance to ``jiffies`` and expire every due timer, as ``__run_timers``.

        ``callback(timer, baseclk)`` is called for each expired timer in the
        kernel's order, with the base clock one ahead (so a timer re-armed for
        "now" lands in the next jiffy). Returns the expired timers in order.
        """
        return self._run(jiffies, callback, one_collection=False)

    def collect_next(self, jiffies: int | None = None, *, callback=None) -> pd.DataFrame:
        """Like :meth:`run`, but only the first due collection (one loop of ``__run_timers``)."""
        return self._run(jiffies, callback, one_collection=True)

    @property
    def events(self) -> pd.DataFrame:
        """Log of timer_start, timer_cancel and timer_expire_entry, in order."""
        d = self._w.events()
        return pd.DataFrame({
            "event": pd.Categorical.from_codes(d["kind"].astype(np.int8), categories=_EVENT_NAMES),
            "timer": d["timer"],
            "jiffies": d["jiffies"],
            "expires_jiffies": d["expires"],
            "bucket_expiry_jiffies": d["bucket_expiry"],
            "idx": d["idx"],
        })

    def check_invariants(self) -> None:
        """Raise AssertionError if the wheel's internal invariants do not hold."""
        problem = self._w.check_invariants()
        if problem:
            raise AssertionError(problem)

    def __repr__(self) -> str:
        return (f"TimerWheel(hz={self._hz}, jiffies={self.jiffies}, clk={self.clk}, "
                f"pending={self.pending_count}, next_expiry={self.next_expiry}"
                f"{' (stale)' if self.next_expiry_recalc else ''})")

    # -- helpers ----------------------------------------------------------
    def _run(self, jiffies, callback, one_collection):
        j = self.jiffies if jiffies is None else check_int("jiffies", jiffies, minimum=0, maximum=U64_MAX)
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable, got {callback!r}")
        d = self._expiries(j, one_collection, callback)
        return pd.DataFrame({
            "timer": d["timer"], "expires_jiffies": d["expires"], "baseclk_jiffies": d["bucket_expiry"],
            "idx": d["idx"], "now_jiffies": d["jiffies"],
        })

    def _expiries(self, jiffies, one_collection, callback) -> dict:
        """Run the wheel to ``jiffies``; the event columns of the expiries it
        logged (the rest of the log kept only with log=True)."""
        if not self._log:
            self._w.clear_events()
        start = len(self._w.events()["kind"]) if self._log else 0
        self._w.run(jiffies, one_collection, callback)
        d = self._w.events()
        if not self._log:
            self._w.clear_events()
        expired = d["kind"][start:] == _EVENT_NAMES.index("timer_expire_entry")
        return {k: d[k][start:][expired] for k in ("timer", "expires", "bucket_expiry", "idx", "jiffies")}

    def _collect_ids(self, jiffies: int) -> tuple:
        """collect_next(jiffies) as (timer ids, idx) arrays, without building a
        DataFrame: the trace's wheel replay (fidelity/wheel.py) collects once
        per traced expiry, and a frame each time cost more than the wheel."""
        d = self._expiries(jiffies, True, None)
        return d["timer"], d["idx"]

    def _timer(self, timer) -> int:
        t = check_int("timer", timer, minimum=0)
        if t >= 2**32 - 1:
            raise ValueError(f"timer={t} does not belong to this wheel")
        return t

    @staticmethod
    def _expires(expires) -> int:
        return check_int("expires", expires, minimum=0, maximum=U64_MAX)
