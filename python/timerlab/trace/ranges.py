"""A plain text trace read in pieces: byte ranges of whole lines, each parsed
on its own (in another process, say) into the Trace of its lines.

``text_ranges(path, rows)`` cuts the file at line ends into ranges of about
``rows`` event lines each (sized from the lines of its first megabyte), and
before the ring buffer's loss markers (``min_rows``: of a burst of markers
closer than that, before the last one), so that a replay of a range starts
after a loss (timerlab.fidelity.windows);
``read_range(r)`` parses one: the file's header lines (tracefs' comments,
trace-cmd's ``cpus=N``) first, so that the parser knows the CPU count and the
format, then the range's bytes; the ``line`` column and any error name the
line of the whole file. The ranges' rows together are the file's rows.

Not here: compressed files (they cannot be entered in the middle: a large
one goes through a store, :func:`timerlab.trace.convert`).
"""
from __future__ import annotations

import mmap
import os
import re
from dataclasses import dataclass

from .. import _core
from .source import KINDS

_HEAD_BYTES = 1 << 20
_READ_BYTES = 4 << 20
_COUNT_BYTES = 64 << 20
# The ring buffer's loss markers (ftrace.cpp reads the same three), as a line of their own.
_LOSS = re.compile(rb"CPU:\d+ \[(?:LOST \d+ EVENTS|\d+ EVENTS DROPPED|EVENTS DROPPED)\]")


@dataclass(frozen=True)
class TextRange:
    """Bytes ``start`` .. ``end`` of the plain text file ``path`` (whole lines),
    whose first line is line ``first_line`` (1-based) of the file; ``header``:
    the file's header lines, parsed before the range when it does not begin
    the file."""

    path: str
    start: int
    end: int
    first_line: int
    header: bytes
    after_loss: bool = False  # begins with a loss marker


def is_plain(path) -> bool:
    """Whether ``path`` is a regular file that is not compressed (it can be entered anywhere)."""
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        head = f.read(8)
    return not any(head.startswith(magic) for magic, _new, _pad in KINDS.values())


def _head(name: str) -> tuple:
    """(the file's header lines, bytes per event line in its first
    megabyte or None if it shows no event)."""
    with open(name, "rb") as f:
        head = f.read(_HEAD_BYTES)
    head = head[:head.rfind(b"\n") + 1]
    parser = _core.FtraceParser(strict=False)
    parser.feed(head)
    parser.finish()
    lines = parser.take()["line"]
    header_lines = int(lines[0]) - 1 if len(lines) else head.count(b"\n")
    header = b"".join(head.splitlines(keepends=True)[:header_lines])
    return header, (len(head) - len(header)) / len(lines) if len(lines) else None


def estimated_rows(path, head=None) -> int:
    """The event lines of a plain text file, estimated from its first
    megabyte (``head``: what _head gave for it, if already read)."""
    name = os.fspath(path)
    header, per_row = head or _head(name)
    return round((os.path.getsize(name) - len(header)) / per_row) if per_row else 0


def text_ranges(path, rows: int, min_rows: int | None = None) -> list:
    """The file cut at line ends into :class:`TextRange` of about ``rows``
    event lines, and before its loss markers if ``min_rows`` is given (see
    the module doc)."""
    name = os.fspath(path)
    size = os.path.getsize(name)
    head = _head(name)
    header, per_row = head
    n = max(1, -(-estimated_rows(name, head) // rows))
    by_size = {_line_end(name, size * k // n) for k in range(1, n)}
    losses = set()
    if min_rows is not None:
        marks, gap, last = _loss_lines(name), min_rows * per_row, len(header)
        for m, after in zip(marks, marks[1:] + [size]):
            if after - m >= gap and m - last >= gap and size - m >= gap:  # a burst: its last; not at the ends
                losses.add(m)
                last = m
        # A cut by size next to a loss's would leave a range of a few lines: the loss's stays.
        by_size = {c for c in by_size if all(abs(c - m) >= gap for m in losses)}
    cuts = sorted({0, size} | by_size | losses)
    firsts = _lines_before(name, cuts[:-1])
    return [TextRange(name, a, b, first, header, a in losses) for a, b, first in zip(cuts[:-1], cuts[1:], firsts)]


def _loss_lines(name: str) -> list:
    """The offsets of the file's loss marker lines, in order: searched in
    place, through a memory map of a window of the file at a time (no copy
    of the text, and no more of it resident at once than a window)."""
    size, out = os.path.getsize(name), []
    step = _COUNT_BYTES  # a multiple of mmap.ALLOCATIONGRANULARITY
    with open(name, "rb") as f:
        for off in range(0, size, step):
            # A marker is one short line: a window holds those whose newline before lies in it.
            length = min(step + 256, size - off)
            with mmap.mmap(f.fileno(), length, access=mmap.ACCESS_READ, offset=off) as text:
                if off == 0 and _LOSS.match(text, 0):
                    out.append(0)
                at = text.find(b"\nCPU:", 0, min(step + 4, length))
                while at >= 0:
                    if _LOSS.match(text, at + 1):
                        out.append(off + at + 1)
                    at = text.find(b"\nCPU:", at + 1, min(step + 4, length))
    return out


def _line_end(name: str, at: int) -> int:
    """The offset just after the first newline at or after ``at`` (the file's size if none)."""
    with open(name, "rb") as f:
        f.seek(at)
        while True:
            block = f.read(1 << 16)
            if not block:
                return f.tell()
            nl = block.find(b"\n")
            if nl >= 0:
                return at + nl + 1
            at += len(block)


def _lines_before(name: str, offsets: list) -> list:
    """For each offset (ascending), 1 + the newlines before it: the line it begins."""
    out, count, pos = [], 0, 0
    with open(name, "rb") as f:
        for off in offsets:
            while pos < off:
                block = f.read(min(_COUNT_BYTES, off - pos))
                count += block.count(b"\n")
                pos += len(block)
            out.append(count + 1)
    return out


def read_range(r: TextRange, *, kernel=None):
    """The :class:`~timerlab.trace.Trace` of the lines of ``r``; a malformed
    line raises TraceFormatError naming ``file:line`` of the whole file."""
    from .read import Trace, TraceFormatError, _frame

    parser = _core.FtraceParser(strict=True)
    shift = r.first_line - 1
    if r.start:
        parser.feed(r.header)
        shift -= r.header.count(b"\n")
    with open(r.path, "rb") as f:
        f.seek(r.start)
        left = r.end - r.start
        while left > 0 and not parser.error_line:
            block = f.read(min(_READ_BYTES, left))
            if not block:
                raise TraceFormatError(f"{r.path}: the file shrank while it was read (byte {r.end - left})")
            parser.feed(block)
            left -= len(block)
    parser.finish()
    if parser.error_line:
        raise TraceFormatError(f"{r.path}:{parser.error_line + shift}: {parser.error_reason}")
    cols = parser.take()
    cols["line"] += shift
    return Trace(r.path, _frame(cols), parser.nr_cpus, 0, (), parser.lost_events,
                 source="trace-cmd report" if parser.trace_cmd_header else "tracefs", kernel=kernel,
                 loss_markers=parser.loss_markers, losses=cols["losses"])
