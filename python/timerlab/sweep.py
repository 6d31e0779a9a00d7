"""sweep(cfg, grid): run a Config over a grid of option values and seeds —
serially, on local processes or on a dask cluster — and get one tidy
DataFrame back.

    >>> import timerlab as tl
    >>> cfg = tl.Config(cpus=8, duration_ns=50_000_000)
    >>> df = tl.sweep(cfg, {"cpus": [8, 64], "placement": ["push", "pull"],
    ...                     "overhead.enqueue_ns": [62.0, 120.0]},
    ...               seeds=range(5), backend="processes", cache="sweep.parquet")
    >>> df.groupby(["cpus", "placement"])["wakeups_per_cpu_per_s"].mean()

The frame depends only on (cfg, grid, seeds, per_cpu): it is bit-identical
across backends, worker counts, completion order and cached re-runs.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ._checks import U64_MAX, check_int
from .config import _DEFAULTS, Config
from .simulate import simulate
from .sweep_pool import WorkerPool as _WorkerPool, terminate_like_interrupt as _terminate_like_interrupt

__all__ = ["sweep", "SweepError"]

BACKENDS = ("serial", "processes", "dask")
# These differ between two runs of the same point; kept out of the frame so that it is reproducible.
WALL_CLOCK = ("wall_s", "sim_speed_x_realtime", "timer_events_per_wall_s")
CONNECT_TIMEOUT_S = 5
_CACHE_META = b"timerlab.sweep"  # Parquet metadata: which kind of rows (summary / per_cpu) a cache file holds


class SweepError(RuntimeError):
    """Some (point, seed) runs failed; the others ran (and were cached).

    ``failures``: one dict per failed run: its grid values, ``seed`` and
    ``error``. ``results``: the frame of the runs that succeeded.
    """

    def __init__(self, failures: list, results: pd.DataFrame, runs: int):
        self.failures, self.results = failures, results
        lines = [", ".join(f"{k}={v!r}" for k, v in f.items() if k != "error") + f": {f['error']}" for f in failures]
        super().__init__(f"{len(failures)} of {runs} sweep runs failed:\n  " + "\n  ".join(lines))


def sweep(cfg: Config, grid: Mapping, *, seeds=None, backend: str = "processes", workers: int | None = None,
          progress: bool = True, cache=None, per_cpu: bool = False, scheduler=None,
          time_limit_s: float | None = None) -> pd.DataFrame:
    """Run ``cfg`` once per (point, seed) of ``grid`` x ``seeds``.

    ``grid``: {option: list of values}; its cartesian product (the last
    option varying fastest) is swept, each point made by ``cfg.replace``.
    A dotted name (``"overhead.enqueue_ns"``) changes one key of a dict
    option. An empty grid sweeps ``cfg`` alone. ``seeds``: ints, each used
    as ``seed=`` of every point (default: ``cfg.seed``).

    Returns one row per (point, seed), points in grid order, seeds inner:
    the grid's names as given, ``seed``, then ``Result.summary`` without its
    wall-clock figures (an entry named like a grid option is left to the
    grid's column). ``per_cpu=True``: one row per (point, seed, cpu) with the
    ``Result.per_cpu`` columns instead of the summary. ``df.attrs``:
    ``computed`` (runs simulated by this call), ``cached`` (runs read from
    the cache), ``wall_s`` (simulator time of the computed runs).

    ``backend``: "serial", "processes" (``workers`` processes, default: one
    per CPU) or "dask": ``scheduler=None`` starts a local cluster of
    ``workers`` processes for this call; an address ("tcp://host:8786") or a
    ``distributed.Client`` uses that cluster, whose workers need timerlab.
    Worker processes may re-import the calling script: guard it with
    ``if __name__ == "__main__":``.

    ``cache``: a Parquet file of results keyed by a hash of each run's full
    configuration (and the timerlab version); a re-run computes only what is
    missing and writes back the union, also when interrupted or when some
    runs failed.

    Bad grids, seeds and cache paths raise before anything runs. A run whose
    Config is invalid or whose simulation raises does not stop the others;
    at the end a SweepError lists each with its values, seed and error.

    Faults: Ctrl-C (SIGINT) and SIGTERM stop the sweep the same way —
    finished runs are written to the cache, worker processes are killed and
    reaped; SIGTERM then exits the process (status 143). A worker process
    that dies (killed, out of memory) has its run retried once in a new
    worker, then reported as failed; the rest of the sweep goes on.
    ``time_limit_s``: wall time per run; a run over it is stopped (its
    worker killed, with "processes") and reported as failed.
    """
    if not isinstance(cfg, Config):
        raise TypeError(f"sweep takes a timerlab.Config, got {type(cfg).__name__}")
    names, values = _check_grid(cfg, grid)
    seeds = [cfg.seed] if seeds is None else [check_int("seeds", s, minimum=0, maximum=U64_MAX) for s in seeds]
    if not seeds:
        raise ValueError("seeds is empty: give at least one seed (default: cfg.seed)")
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not allowed; choose one of {', '.join(map(repr, BACKENDS))}")
    if workers is not None:
        workers = check_int("workers", workers, minimum=1)
    if scheduler is not None and backend != "dask":
        raise ValueError(f"scheduler= is for backend='dask', not {backend!r}")
    if time_limit_s is not None and (isinstance(time_limit_s, bool) or not isinstance(time_limit_s, (int, float))
                                     or not time_limit_s > 0):
        raise ValueError(f"time_limit_s must be a number of seconds > 0, got {time_limit_s!r}")
    kind = "per_cpu" if per_cpu else "summary"
    cache_path, cached = _open_cache(cache, kind) if cache is not None else (None, None)

    # Build every Config here: an invalid one is a failure to report, and the cache key needs it.
    runs = []
    for point in itertools.product(*values):
        try:
            base, error = cfg.replace(**_changes(cfg, names, point)), None
        except Exception as e:  # noqa: BLE001 — reported with the point's values at the end
            base, error = None, f"{type(e).__name__}: {e}"
        for seed in seeds:
            run = _Run({**dict(zip(names, point)), "seed": seed})
            if base is None:
                run.outcome = (None, 0.0, error)
            else:
                run_cfg = base.replace(seed=seed)
                run.args, run.key = run_cfg._args, _key(run_cfg, kind)
            runs.append(run)
    # Runs with the same full configuration (a repeated value or seed) are simulated once.
    by_key = {}
    for run in runs:
        if run.key is not None:
            by_key.setdefault(run.key, []).append(run)
    if cached is not None:
        for key, rows in cached[cached["key"].isin(list(by_key))].groupby("key", sort=False):
            outcome = (rows.drop(columns=["key", "wall_s"]).to_dict("records"), float(rows["wall_s"].iloc[0]), None)
            for run in by_key[key]:
                run.outcome = outcome
    todo = [key for key, same in by_key.items() if same[0].outcome is None]
    n_cached = len(by_key) - len(todo)

    from tqdm.auto import tqdm

    new_rows = []
    bar = tqdm(total=len(by_key), initial=n_cached, desc="sweep", unit="run", disable=not progress)

    def done(j, outcome):
        for run in by_key[todo[j]]:
            run.outcome = outcome
        records, wall_s, error = outcome
        if error is None and cache_path is not None:
            new_rows.extend({"key": todo[j], "wall_s": wall_s, **rec} for rec in records)
        bar.update()

    try:
        if todo:
            with _terminate_like_interrupt():
                _BACKENDS[backend]([(by_key[key][0].args, per_cpu, time_limit_s) for key in todo], done, workers,
                                   scheduler)
    finally:
        bar.close()
        if new_rows:  # also after Ctrl-C or a lost worker: what finished is kept
            _write_cache(cache_path, cached, new_rows, kind)

    rows, failures = [], []
    for run in runs:
        records, _, error = run.outcome
        if error is not None:
            failures.append({**run.cols, "error": error})
            continue
        rows.extend({**run.cols, **{k: v for k, v in rec.items() if k not in run.cols}} for rec in records)
    df = pd.DataFrame(rows) if rows else pd.DataFrame(columns=[*names, "seed"])
    df.attrs.update(computed=len(todo), cached=n_cached, wall_s=sum(by_key[key][0].outcome[1] for key in todo))
    if failures:
        raise SweepError(failures, df, len(runs))
    return df


@dataclass
class _Run:
    """One (point, seed): its frame columns, Config kwargs, cache key, and
    outcome (records, wall_s, error) once known."""

    cols: dict
    args: dict | None = None
    key: str | None = None
    outcome: tuple | None = None


def _check_grid(cfg: Config, grid) -> tuple[list, list]:
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid must be a dict {{option: [values]}}, got {type(grid).__name__}")
    names, values = [], []
    for name, vals in grid.items():
        if not isinstance(name, str):
            raise TypeError(f"grid: option names must be strings, got {name!r}")
        opt, dot, key = name.partition(".")
        if opt not in _DEFAULTS:
            raise ValueError(f"grid: unknown option {opt!r}; options are {sorted(_DEFAULTS)}")
        if opt == "seed":
            raise ValueError("grid: give seeds with sweep(..., seeds=[...]), not as a grid option")
        if dot:
            base = getattr(cfg, opt, cfg._args[opt])  # the resolved value (defaults filled in)
            if not isinstance(base, dict):
                raise ValueError(f"grid: {name!r}: option {opt!r} is not a dict, so it has no keys")
            if key not in base:
                raise ValueError(f"grid: {name!r}: {opt!r} has no key {key!r}; keys are {sorted(base)}")
            if opt in grid:
                raise ValueError(f"grid: give {opt!r} whole or some of its keys ({name!r}), not both")
        if isinstance(vals, np.ndarray):
            vals = vals.tolist()
        # A string or a set would be iterable too, but surely not meant (or not ordered).
        if not isinstance(vals, (list, tuple, range)):
            raise TypeError(f"grid[{name!r}] must be a list of values, got {vals!r}")
        if len(vals) == 0:
            raise ValueError(f"grid[{name!r}] is an empty list; the sweep would have no points")
        names.append(name)
        values.append(list(vals))
    return names, values


def _changes(cfg: Config, names: list, point: tuple) -> dict:
    changes = {}
    for name, value in zip(names, point):
        opt, dot, key = name.partition(".")
        if dot:  # merge into the base's dict: the other keys keep their values
            changes.setdefault(opt, dict(getattr(cfg, opt)))[key] = value
        else:
            changes[opt] = value
    return changes


def _key(cfg: Config, kind: str) -> str:
    """A key stable across processes and Python runs (not hash()): sha256 of
    canonical JSON of what the core gets, plus what only shapes the Result."""
    from . import __version__

    material = {"core": cfg.to_core(), "idle_states": cfg.idle_states.name, "kind": kind, "timerlab": __version__}
    text = json.dumps(material, sort_keys=True, default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(value):
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    raise TypeError(f"cannot key a sweep cache on {type(value).__name__} {value!r}")


def _native(value):
    return value.item() if isinstance(value, np.generic) else value


def _run(args: dict, per_cpu: bool, time_limit_s: float | None = None) -> tuple:
    """One run, in whichever process: (records, wall_s, error). Configs are
    sent as their kwargs because a Config does not pickle."""
    try:
        res = simulate(Config(**args), time_limit_s=time_limit_s)
    except Exception as e:  # noqa: BLE001 — reported by sweep with the run's values
        return None, 0.0, f"{type(e).__name__}: {e}"
    if per_cpu:
        records = res.per_cpu.to_dict("records")
    else:
        # Native Python values, like those read back from the cache, so both build the same frame.
        records = [{k: _native(v) for k, v in res.summary.items() if k not in WALL_CLOCK}]
    return records, res.wall_s, None


def _run_serial(tasks, done, workers, scheduler):
    for j, task in enumerate(tasks):
        done(j, _run(*task))


def _run_processes(tasks, done, workers, scheduler):
    _WorkerPool(min(workers or os.cpu_count() or 1, len(tasks))).run(_run, tasks, done)


def _run_dask(tasks, done, workers, scheduler):
    try:
        from distributed import Client, LocalCluster, as_completed as dask_completed
    except ImportError:
        raise ImportError('backend="dask" needs dask.distributed: pip install "timerlab[dask]"') from None
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=min(workers or os.cpu_count() or 1, len(tasks)), threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster, set_as_default=False)
    elif isinstance(scheduler, Client):
        client = scheduler
    elif isinstance(scheduler, str):
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError):
            raise ConnectionError(f"cannot reach the dask scheduler at {scheduler} (no answer within "
                                  f"{CONNECT_TIMEOUT_S} s); is it running?") from None
    else:
        raise TypeError(f"scheduler must be None, an address like 'tcp://host:8786' or a distributed.Client, "
                        f"got {scheduler!r}")
    try:
        # retries: a run whose worker died is run again once (dask counts the deaths itself too).
        futures = {client.submit(_run, *task, pure=False, retries=1): j for j, task in enumerate(tasks)}
        for fut in dask_completed(futures, loop=client.loop):
            done(futures[fut], fut.result())
    finally:
        if client is not scheduler:
            client.close()
        if cluster is not None:
            cluster.close()


_BACKENDS = {"serial": _run_serial, "processes": _run_processes, "dask": _run_dask}


def _open_cache(cache, kind: str) -> tuple[Path, pd.DataFrame | None]:
    """Check that the cache can be written (before anything runs) and read it."""
    path = Path(cache)
    if path.is_dir():
        raise ValueError(f"cache={str(path)!r} is a directory; give a file path like 'sweep.parquet'")
    if not path.parent.is_dir():
        raise ValueError(f"cache={str(path)!r}: directory {str(path.parent)!r} does not exist")
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.R_OK | os.W_OK)):
        raise ValueError(f"cache={str(path)!r} is not writable")
    if not path.exists():
        return path, None
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"cache={str(path)!r} is not a readable Parquet file: {e}") from None
    found = (table.schema.metadata or {}).get(_CACHE_META, b"").decode()
    if found != kind:
        raise ValueError(f"cache={str(path)!r} holds {found or 'no timerlab sweep'} rows, not {kind} rows; "
                         f"use another file")
    return path, table.to_pandas()


def _write_cache(path: Path, old: pd.DataFrame | None, new_rows: list, kind: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = pd.DataFrame(new_rows)
    if old is not None:
        df = pd.concat([old, df], ignore_index=True)
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _CACHE_META: kind.encode()})
    # Write aside then rename, so that an interrupted write never leaves a broken cache.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except OSError as e:  # a full disk, a quota: the runs are still returned
        tmp.unlink(missing_ok=True)
        warnings.warn(f"cache={str(path)!r} could not be written ({e}); the {len(new_rows)} new rows are returned "
                      f"but not cached, and the cache file is as it was", RuntimeWarning, stacklevel=3)
