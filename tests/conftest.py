"""Shared fixtures: the real kernel traces in tests/data/traces (see its README)."""
from pathlib import Path

import pytest

TRACE_DIR = Path(__file__).parent / "data" / "traces"
RECORDINGS = sorted(TRACE_DIR.glob("*.trace.txt.xz"))
BOOT_TRACES = sorted(TRACE_DIR.glob("*.boot.txt.xz"))


@pytest.fixture(scope="session")
def trace_dir() -> Path:
    return TRACE_DIR


IDLE16 = TRACE_DIR / "qemu-6.12.95-16cpu-2node-idle.trace.txt.xz"


@pytest.fixture(scope="session")
def idle16():
    """The 6.12 trace of an almost idle 16-CPU guest."""
    import timerlab as tl

    return tl.read_ftrace(IDLE16)
