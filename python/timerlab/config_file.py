"""Configs in TOML files, for the command line (``timerlab run/sweep/export``).

Top-level keys are Config options; ``[[workload]]`` tables are the workload's
generators (``kind`` = a function of timerlab.workloads, the other keys its
parameters); ``[sweep]`` holds the options of tl.sweep: ``grid``, ``seeds``,
``backend``, ``cache``, ``workers``, ``scheduler``, ``per_cpu``, ``progress``,
``time_limit_s``.
A distribution is a table with one key: ``{exponential = 2e6}``,
``{uniform = [1e6, 2e7]}``, ``{lognormal = [1e6, 0.5]}``, ``{const = 4e6}``.

    cpus = 64
    nodes = 2
    placement = "pull"
    duration_ns = 2_000_000_000

    [[workload]]
    kind = "server"
    rate_hz = 400

    [[workload]]
    kind = "devfreq"
    cpu = 3

    [sweep]
    grid = { placement = ["push", "pull"], cpus = [16, 64] }
    seeds = [1, 2, 3]
"""
from __future__ import annotations

import sys
from pathlib import Path

from . import dist as _dist
from . import workloads as _workloads
from .config import Config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - older Pythons
    import tomli as tomllib

__all__ = ["load_config", "ConfigFile"]

_DISTS = {"exponential": _dist.exponential, "uniform": _dist.uniform, "lognormal": _dist.lognormal,
          "const": _dist.const}
_SWEEP_KEYS = {"grid", "seeds", "backend", "cache", "workers", "scheduler", "per_cpu", "progress", "time_limit_s"}


class ConfigFile:
    """A parsed file: the Config and the sweep settings (empty without [sweep])."""

    def __init__(self, config: Config, sweep: dict, path: Path):
        self.config, self.sweep, self.path = config, sweep, path


def _value(where: str, v):
    if isinstance(v, dict):
        if len(v) != 1 or next(iter(v)) not in _DISTS:
            raise ValueError(f"{where}: a distribution is one of {sorted(_DISTS)} as a one-key table, got {v!r}")
        name, args = next(iter(v.items()))
        try:
            return _DISTS[name](*args) if isinstance(args, list) else _DISTS[name](args)
        except (TypeError, ValueError) as e:  # a wrong number of parameters, or bad ones
            raise ValueError(f"{where}: {e}") from None
    return v


def _workload(path: Path, tables) -> _workloads.Workload:
    if not isinstance(tables, list):
        raise ValueError(f"{path}: workload must be an array of tables ([[workload]])")
    total = _workloads.Workload()
    for i, table in enumerate(tables):
        where = f"{path}: workload[{i}]"
        if not isinstance(table, dict):
            raise ValueError(f"{where}: a workload is a table with kind = ..., got {table!r}")
        table = dict(table)
        kind = table.pop("kind", None)
        if kind not in _workloads.__all__ or kind in ("Workload", "SERVER_TIMERS"):
            raise ValueError(f"{where}: kind={kind!r}; choose one of "
                             f"{sorted(k for k in _workloads.__all__ if k not in ('Workload', 'SERVER_TIMERS'))}")
        params = {k: _value(f"{where}.{k}", v) for k, v in table.items()}
        try:
            total = total + getattr(_workloads, kind)(**params)
        except (TypeError, ValueError) as e:  # an unknown parameter, or a bad value (server.rate_hz = 0)
            raise ValueError(f"{where}: {e}") from None
    return total


def load_config(path) -> ConfigFile:
    """Read a TOML config file; errors name the file and the key."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:  # TOML is UTF-8 text
        raise ValueError(f"{path}: not valid TOML: {e}") from None
    sweep = data.pop("sweep", {})
    if not isinstance(sweep, dict):
        raise ValueError(f"{path}: sweep must be a table ([sweep]), got {sweep!r}")
    unknown = set(sweep) - _SWEEP_KEYS
    if unknown:
        raise ValueError(f"{path}: [sweep] has unknown key(s) {sorted(unknown)}; known: {sorted(_SWEEP_KEYS)}")
    if "workload" in data:
        data["workload"] = _workload(path, data["workload"])
    try:
        cfg = Config(**{k: _value(f"{path}: {k}", v) for k, v in data.items()})
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: {e}") from None
    return ConfigFile(cfg, sweep, path)
