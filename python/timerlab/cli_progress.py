"""Progress bars of the CLI's long commands (replay, validate, wheel, convert):
tqdm on stderr, shown only when stderr is a terminal (tqdm's ``disable=None``),
so that piped output and the tests see none of it.

A trace is read with a bar of the lines parsed (the size of a compressed
file's text is unknown until it is read); a store opens at once. Validate
then advances one bar step per stage (replay and simulation, the wheel, the
comparisons), the simulation being the longest.
"""
from __future__ import annotations

import contextlib

from tqdm import tqdm


def _lines_bar(desc: str):
    return tqdm(desc=desc, unit=" lines", unit_scale=True, disable=None, leave=False)


def read_trace(path):
    """tl.read_ftrace(path) with a bar of the lines parsed."""
    from .trace import read_ftrace

    with _lines_bar(f"reading {getattr(path, 'name', path)}") as bar:
        return read_ftrace(path, progress=lambda lines: bar.update(lines - bar.n))


def convert(trace, out):
    """tl.trace.convert(trace, out) with a bar of the lines parsed."""
    from .trace import convert as convert_trace

    with _lines_bar(f"converting {getattr(trace, 'name', trace)}") as bar:
        return convert_trace(trace, out, progress=lambda lines: bar.update(lines - bar.n))


@contextlib.contextmanager
def stages(total: int, desc: str):
    """A bar of ``total`` named stages: yields ``step(name)``, called as each begins."""
    with tqdm(total=total, desc=desc, unit=" stage", disable=None, leave=False,
              bar_format="{desc}: {n}/{total} {postfix} [{elapsed}]") as bar:
        started = []

        def step(name: str) -> None:
            if started:
                bar.update(1)
            started.append(name)
            bar.set_postfix_str(name)

        yield step
        if started:
            bar.update(1)
