"""Shared fixtures: the real kernel traces in tests/data/traces (see its README)."""
from pathlib import Path

import pytest

TRACE_DIR = Path(__file__).parent / "data" / "traces"
RECORDINGS = sorted(TRACE_DIR.glob("*.trace.txt.xz"))
BOOT_TRACES = sorted(TRACE_DIR.glob("*.boot.txt.xz"))


@pytest.fixture(scope="session")
def trace_dir() -> Path:
    return TRACE_DIR
