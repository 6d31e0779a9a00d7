"""Distributions of times (ns) for workloads.

A plain number means a constant. Sampling happens in C++ from per-generator
random streams (cpp/include/timerlab/random.hpp), so a seed fixes a run.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

__all__ = ["Dist", "const", "uniform", "exponential", "lognormal", "as_dist"]


@dataclass(frozen=True)
class Dist:
    kind: str
    a: float
    b: float = 0.0

    def core(self) -> tuple:
        return (self.kind, float(self.a), float(self.b))

    @property
    def mean(self) -> float:
        if self.kind == "uniform":
            return (self.a + self.b) / 2
        if self.kind == "lognormal":
            return self.a * math.exp(self.b**2 / 2)
        return self.a

    def __repr__(self) -> str:
        if self.kind == "const":
            return f"{self.a:g}"
        if self.kind == "uniform":
            return f"uniform({self.a:g}, {self.b:g})"
        if self.kind == "exponential":
            return f"exponential({self.a:g})"
        return f"lognormal({self.a:g}, {self.b:g})"


# The longest time a distribution may give, ns (about 146 years): sums with
# the clock stay in int64 (the core checks the same: random.hpp).
MAX_NS = 2.0**62
MAX_SIGMA = 10.0


def _nonneg(name, x, maximum=MAX_NS) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or x < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")
    if x > maximum:
        raise ValueError(f"{name} must be <= {maximum:g}, got {x!r}")
    return float(x)


def const(x) -> Dist:
    return Dist("const", _nonneg("const", x))


def uniform(low, high) -> Dist:
    low, high = _nonneg("uniform low", low), _nonneg("uniform high", high)
    if high < low:
        raise ValueError(f"uniform: high={high:g} < low={low:g}")
    return Dist("uniform", low, high)


def exponential(mean) -> Dist:
    return Dist("exponential", _nonneg("exponential mean", mean))


def lognormal(median, sigma) -> Dist:
    median = _nonneg("lognormal median", median)
    if median == 0:
        raise ValueError("lognormal median must be > 0")
    return Dist("lognormal", median, _nonneg("lognormal sigma", sigma, MAX_SIGMA))


def as_dist(name, x) -> Dist:
    """A Dist from a Dist or a number; anything else is an error naming ``name``."""
    if isinstance(x, Dist):
        return x
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a number of ns or a timerlab.dist distribution, got {x!r}")
    return Dist("const", _nonneg(name, x))
