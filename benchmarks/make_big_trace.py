"""A large synthetic trace: a real trace's events repeated with shifted times,
for the scale benchmarks (bench_trace_scale.py). Written to /tmp, never
committed.

Copy k of the events is the real trace's with every time moved by k * D:
the line timestamp, the monotonic ns of hrtimer and timer_migration events
(``now=``, ``expires=``, ``softexpires=``, ``nextevt=``, ``wakeup=``, ...;
0 and KTIME_MAX mean "none" and stay) and the absolute jiffies of timer
events (``expires=``, ``now=``, ``baseclk=``) by D / TICK_NSEC, so that
every copy is as consistent as the original (relative values such as
``timeout=`` stay).

D is the trace's span rounded up to whole buckets of the coarsest wheel
level a timer can expire from within one copy (level 2, 64 jiffies, for a
15 s trace at HZ=250). Why: the wheel rounds a timer's expiry up to its
level's granularity in absolute jiffies, so a shift by a part of a bucket
moves the bucket, and the copy's timers would then be due at other times
than the copied expiries show (a shift of whole ticks cost the 16-CPU
trace's copies after the first 45 % of their expiring_cpu agreement). A
timer_start of such a level keeps its ``bucket_expiry=`` shifted by the
same jiffies (and the ``idx=`` of that bucket), whatever the kernel's base
clock was; one of a deeper level, which cannot expire within its copy, gets
what calc_wheel_index gives at jiffies (expires - timeout). The boot-time
hierarchy set-up events appear once, in copy 0.

The timers and hrtimers of copy k are other objects than those of the copy
before (their pointers, ``timer=`` and ``hrtimer=``, XORed with k << 36),
and those still pending at the end of a copy are cancelled there (a
timer_cancel or hrtimer_cancel line 1 µs after its last event, logged as
their last arm was): at a seam every CPU's state jumps back to the trace's
start, and a timer pending at the end of one copy is not the one the next
copy re-arms or expires. With the same pointers, the replay took the next
copy's expiries for the earlier arms' and fell from 0.989 to 0.80
(expiring_cpu) and from 0.999 to 0.77 (tmigr) in every copy after the
first; with pointers of their own but left pending, they stayed queued in
the wheel replay, never expiring, and held their bases' clocks back
(wheel 0.93 on the 2 GB trace). The hierarchy's groups (``group=``,
``parent=``) stay: the machine is the same.

    python benchmarks/make_big_trace.py --mb 2000 [--trace X.trace.txt.xz] [--out /tmp/...]
"""
from __future__ import annotations

import argparse
import lzma
import math
import re
from pathlib import Path

import numpy as np

import timerlab as tl

TRACES = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"
DEFAULT = TRACES / "qemu-6.12.95-16cpu-2node-mixed.trace.txt.xz"
_SETUP = (b"tmigr_group_set:", b"tmigr_connect_cpu_parent:", b"tmigr_connect_child_parent:", b"tmigr_cpu_online:")
_KTIME_MAX = (1 << 63) - 1
# (event, key) -> unit of an absolute time in the payload
_NS_KEYS = {b"nextevt", b"next_expiry", b"child_evt_expiry", b"wakeup", b"softexpires"}
_JIFFY_EVENTS = {b"timer_start", b"timer_expire_entry"}
_LINE = re.compile(rb"^(.*?\]\s+(?:\S+\s+)?)(\d+)\.(\d{6}): (\w+): (.*)$", re.S)
# A number, or a pointer as the trace prints it (16 hex digits).
_FIELD = re.compile(rb"(\w+)=([0-9a-f]{16}(?![0-9A-Za-z])|\d+)")
_POINTERS = (b"timer", b"hrtimer")  # whose pointers each copy has its own of


TS, NS, JIFFIES, KEEP, IDX, BUCKET, PTR = range(7)  # units of the values cut out of the text


def _unit(event: bytes, key: bytes):
    if event == b"timer_start":
        return {b"expires": JIFFIES, b"timeout": KEEP, b"idx": IDX, b"bucket_expiry": BUCKET}.get(key)
    if event == b"timer_expire_entry":
        return JIFFIES if key in (b"now", b"baseclk") else None
    if key in _NS_KEYS or (key in (b"now", b"expires") and event.startswith(b"hrtimer")):
        return NS
    return None


def template(text: bytes):
    """(header, pieces, values, units, starts, span_us, setup lines): the event
    lines cut at every number a copy changes, the timers and hrtimers still
    pending at the end cancelled there; ``starts``: per
    timer_start the positions in ``values`` of its expires, timeout, idx and
    bucket_expiry."""
    header, pieces, values, units, starts, setup = [], [b""], [], [], [], []
    t_min = t_max = None
    last = {}  # (timer or hrtimer, pointer) -> (its last event, the head of the line that armed it)

    def add(head, ts_us, event, payload):
        pieces[-1] += head
        values.append(ts_us)
        units.append(TS)
        pieces.append(b": " + event + b": ")
        at, where = 0, {}
        for f in _FIELD.finditer(payload):
            key, raw = f.group(1), f.group(2)
            if key in _POINTERS and len(raw) == 16:
                unit, value = PTR, int(raw, 16)
                last[key, value] = (event, head if event.endswith(b"_start") else last.get((key, value), (0, head))[1])
            elif raw.isdigit():
                value = int(raw)
                unit = _unit(event, key)
            else:
                continue
            if unit is None or (unit == NS and value in (0, _KTIME_MAX)):
                continue
            pieces[-1] += payload[at:f.start(2)]
            where[unit] = len(values)
            values.append(value)
            units.append(unit)
            pieces.append(b"")
            at = f.end(2)
        pieces[-1] += payload[at:]
        if event == b"timer_start" and all(u in where for u in (JIFFIES, KEEP, IDX, BUCKET)):
            starts.append([where[JIFFIES], where[KEEP], where[IDX], where[BUCKET]])

    for line in text.splitlines(keepends=True):
        m = _LINE.match(line)
        if m is None:
            header.append(line)
            continue
        if any(s in line for s in _SETUP):
            setup.append(line)
            continue
        head, sec, usec, event, payload = m.groups()
        ts_us = int(sec) * 1_000_000 + int(usec)
        t_min = ts_us if t_min is None else min(t_min, ts_us)
        t_max = ts_us if t_max is None else max(t_max, ts_us)
        add(head, ts_us, event, payload)
    for (key, pointer), (event, head) in list(last.items()):
        if event.endswith(b"_start"):
            add(head, t_max + 1, key + b"_cancel", b"%s=%016x\n" % (key, pointer))
    return (b"".join(header), pieces, np.array(values, dtype=np.uint64), np.array(units), np.array(starts),
            t_max + 1 - t_min, b"".join(setup))


def aligned_levels(span_jiffies: int, wheel: dict) -> int:
    """How many wheel levels a timer can expire from within span_jiffies of
    its arm: those whose first delta (``wheel``'s LVL_START) is within it."""
    return sum(1 for start in wheel["LVL_START"][:wheel["LVL_DEPTH"]] if start <= span_jiffies)


def write(out: Path, text: bytes, copies: int, hz: int) -> int:
    header, pieces, values, units, starts, span_us, setup = template(text)
    tick_us = 1_000_000 // hz
    wheel = tl.wheel.wheel_constants(hz)
    size, shift = wheel["LVL_SIZE"], wheel["LVL_CLK_SHIFT"]
    levels = aligned_levels(span_us // tick_us + 2, wheel)
    bucket_us = tick_us * wheel["LVL_GRAN"][levels - 1]
    shift_us = (span_us // tick_us + 2) * tick_us
    shift_us = -(-shift_us // bucket_us) * bucket_us
    with open(out, "wb") as f:
        f.write(header + setup)
        for k in range(copies):
            d_us = k * shift_us
            d_jiffies = d_us // tick_us
            v = values + np.array([d_us, d_us * 1000, d_jiffies, 0, 0, 0, 0], dtype=np.uint64)[units]
            v[units == PTR] ^= np.uint64(k << 36)
            if k and len(starts):
                level = values[starts[:, 2]] // np.uint64(size)
                near = level < levels
                # Whole buckets of these levels: the bucket the kernel chose, shifted.
                bucket = values[starts[near, 3]] + np.uint64(d_jiffies)
                v[starts[near, 3]] = bucket
                v[starts[near, 2]] = level[near] * np.uint64(size) + ((bucket >> (level[near] * np.uint64(shift)))
                                                                       & np.uint64(size - 1))
                far = starts[~near]
                expires = v[far[:, 0]]
                idx, bucket = tl.calc_wheel_index(expires, expires - v[far[:, 1]], hz=hz)
                v[far[:, 2]], v[far[:, 3]] = idx, bucket
            parts = [pieces[0]]
            for value, unit, piece in zip(v.tolist(), units.tolist(), pieces[1:]):
                parts.append(b"%d.%06d" % divmod(value, 1_000_000) if unit == TS else b"%016x" % value if unit == PTR
                             else b"%d" % value)
                parts.append(piece)
            f.write(b"".join(parts))
        return f.tell()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT, help="the real trace to repeat (.txt or .xz)")
    ap.add_argument("--mb", type=float, default=2000, help="size to reach, MB of text (default 2000)")
    ap.add_argument("--hz", type=int, default=250, help="HZ of the traced kernel (default 250)")
    ap.add_argument("--out", type=Path, help="default /tmp/<trace name>-<MB>mb.trace.txt")
    args = ap.parse_args()
    raw = args.trace.read_bytes()
    text = lzma.decompress(raw) if raw.startswith(b"\xfd7zXZ") else raw
    copies = max(1, math.ceil(args.mb * 1e6 / len(text)))
    # The release stays in the name: validate reads it from there.
    out = args.out or Path(f"/tmp/{args.trace.name.split('.trace')[0]}-{int(args.mb)}mb.trace.txt")
    size = write(out, text, copies, args.hz)
    print(f"wrote {out}: {copies} copies of {args.trace.name}, {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
