"""Checks of user input: the options and values of the public API.

Every public option is checked here before it reaches the C++ core, and a bad
value raises ValueError (bad value) or TypeError (bad type) naming the option
and what is allowed.
"""
from __future__ import annotations

import numbers

import numpy as np

SUPPORTED_HZ = (100, 250, 300, 1000)
U64_MAX = (1 << 64) - 1


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an int, or raise naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_hz(hz) -> int:
    """HZ must be one of the values the kernel's Kconfig offers."""
    if isinstance(hz, (bool, np.bool_)) or not isinstance(hz, numbers.Integral):
        raise TypeError(f"hz must be an integer, one of {SUPPORTED_HZ}; got {hz!r}")
    if int(hz) not in SUPPORTED_HZ:
        raise ValueError(f"hz={hz} is not a kernel HZ; allowed: {', '.join(map(str, SUPPORTED_HZ))}")
    return int(hz)


def check_choice(name: str, value, allowed) -> str:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not allowed; choose one of {', '.join(map(repr, allowed))}")
    return value


def as_u64_array(name: str, value) -> np.ndarray:
    """Convert jiffies-like input (int, sequence or array) to a uint64 array.

    Jiffies are the kernel's ``unsigned long``: integers in [0, 2**64).
    Floats, booleans, negative and too large values are refused by name.
    """
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind == "u":
        return arr.astype(np.uint64, copy=False)
    if kind == "i":
        if arr.size and arr.min() < 0:
            raise ValueError(f"{name} must be non-negative jiffies (unsigned long); got {arr.min()}")
        return arr.astype(np.uint64)
    if kind == "O":
        flat = arr.ravel()
        for v in flat:
            check_int(name, v, minimum=0, maximum=U64_MAX)
        return np.array([int(v) for v in flat], dtype=np.uint64).reshape(arr.shape)
    raise TypeError(f"{name} must hold integers (jiffies), got dtype {arr.dtype}")
