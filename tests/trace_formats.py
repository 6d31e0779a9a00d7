"""Real tracefs lines rewritten the way other releases and trace-cmd print
the same events (reference pre-6.9-kernels.md §1): for tests that every
step from the reader onward takes traces of any release in any of the two
text forms. The events stay the real kernel's; only their printing changes.

* ``as_release(line, "5.4")``: a 4-character irq-flags column (before the
  migrate-disable column, ~5.13), HARD hrtimer modes in hex (before the 2023
  decode fix), no ``was_armed=`` (before the 2026 change);
* ``as_release(line, "6.6")``: no ``was_armed=`` (6.6 before 6.6.141);
* ``as_trace_cmd(line)``: what Debian's trace-cmd 3.1.6 prints: no flags
  column, event names padded, real-looking pointers, the hrtimer plugin's
  ``function=sym/0x0`` and argument order, the sched plugin's task form,
  and libtraceevent's ``flags=D|P|I`` on every timer_start.

Module symbols (``function=sym [module]``) are made by ``with_module``.
"""
from __future__ import annotations

import re

_LINE = re.compile(r"^(\s*.*?-\d+\s+\[\d+\]) (\S+)\s+(\d+\.\d+): (\w+): (.*)$")
_HARD_HEX = {"ABS|HARD": "0x8", "REL|HARD": "0x9", "ABS|PINNED|HARD": "0xa", "REL|PINNED|HARD": "0xb"}


def as_release(line: str, release: str) -> str:
    m = _LINE.match(line)
    if not m:
        return line
    head, flags, ts, event, payload = m.groups()
    payload = re.sub(r" was_armed=\d", "", payload)
    if release == "5.4":
        flags = flags[:4]
        payload = re.sub(r"mode=(\S+)", lambda mm: "mode=" + _HARD_HEX.get(mm.group(1), mm.group(1)), payload)
    return f"{head} {flags}  {ts}: {event}: {payload}"


def with_module(line: str, function: str, module: str) -> str:
    return line.replace(f"function={function} ", f"function={function} [{module}] ")


def _fields(payload: str) -> dict:
    return dict(re.findall(r"\[?(\w+)=([^\s\]]*)\]?", payload))


def _ptr(v: str) -> str:
    return f"0xffff8880{int(v, 16) & 0xffffffff:08x}" if int(v, 16) else "(nil)"


def sched_plugin_payload(event: str, f: dict) -> str | None:
    """sched_switch / sched_wakeup as trace-cmd's sched plugin prints them (None: another event)."""
    if event == "sched_switch":
        return (f"{f['prev_comm']}:{f['prev_pid']} [{f['prev_prio']}] {f['prev_state'].rstrip('+')} ==> "
                f"{f['next_comm']}:{f['next_pid']} [{f['next_prio']}]")
    if event == "sched_wakeup":
        return f"{f['comm']}:{f['pid']} [{f['prio']}] CPU:{f['target_cpu']}"
    return None


def as_trace_cmd(line: str) -> str:
    m = _LINE.match(line)
    if not m:
        return line
    head, _flags, ts, event, payload = m.groups()
    f = _fields(payload)
    if event in ("sched_switch", "sched_wakeup"):
        payload = sched_plugin_payload(event, f)
    elif event == "hrtimer_start":
        payload = (f"hrtimer={_ptr(f['hrtimer'])} function={f['function']}/0x0 expires={f['expires']} "
                   f"softexpires={f['softexpires']}")
    elif event == "hrtimer_expire_entry":
        payload = f"hrtimer={_ptr(f['hrtimer'])} now={f['now']} function={f['function']}/0x0"
    else:
        for key in ("timer", "hrtimer", "group", "parent", "child"):
            if key in f:
                payload = payload.replace(f"{key}={f[key]}", f"{key}={_ptr(f[key])}")
        if event == "timer_start":
            payload = re.sub(r"flags=\S*$", "flags=D|P|I", payload)
    pad = " " * max(0, 20 - len(event))
    return f"{head} {ts}: {event}: {pad}{payload}"


def rewrite(text: str, convert, header=None) -> str:
    """Every event line of tracefs text converted; header lines kept, or
    replaced by ``header`` (a list of lines)."""
    lines = text.splitlines()
    body = [convert(ln) for ln in lines if ln and not ln.startswith("#")]
    head = header if header is not None else [ln for ln in lines if ln.startswith("#")]
    return "\n".join(head + body) + "\n"
