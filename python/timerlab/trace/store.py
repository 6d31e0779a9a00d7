"""A parsed trace on disk: one Parquet file, written in row groups as the text
is parsed, so that a trace larger than memory is never whole in memory, and
re-opened lazily (:class:`StoredTrace`).

    tl.trace.convert("trace.txt.xz", "trace.parquet")   # or `timerlab convert`
    tr = tl.read_ftrace("trace.parquet")                 # milliseconds: the footer only
    tl.trace.read_store("trace.parquet", events=["timer_start"], cpus=[0, 1],
                        start_ns=..., end_ns=...)         # predicate pushdown

Layout. Every column the reader can produce is in the file's schema (the
line columns, ``tgid``, every payload column of ``_core.ftrace_schema()``,
``payload``), so that row groups parsed apart share one schema; a column no
event of the trace had is all null and costs next to nothing. Strings are
dictionary-encoded bytes (a task name need not be UTF-8; it is kept as the
reader's surrogate escapes, byte for byte). Each row group carries the
dictionary of its own rows; the file's key-value metadata ``timerlab``
(JSON, written last) holds what the rest of the file cannot: the header
facts (CPU count, lost events, skipped lines, trace-cmd or tracefs), the
columns that occurred and in which order, each categorical column's values in
the order the text reader gives them, counts per event, the time span, and
the text's size. A file without it (a convert that did not finish) is
refused. Conversion writes ``OUT.tmp`` and renames it at the end.

What reading restores is exactly the DataFrame ``read_ftrace`` builds from
the text: same columns, dtypes, categories (in the same order) and values.
"""
from __future__ import annotations

import errno
import json
import os
import stat

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from .. import _core

FORMAT_VERSION = 1
ROWS_PER_GROUP = 1 << 19  # rows taken from the parser at a time: bounds the memory of a convert
_META_KEY = b"timerlab"
_PARQUET_MAGIC = b"PAR1"
_STORAGE_TYPES = {"Int64": pa.int64(), "UInt64": pa.uint64()}
_DICT = pa.dictionary(pa.int32(), pa.binary())
_LINE_TYPES = {"ts_ns": pa.int64(), "cpu": pa.int32(), "task": _DICT, "pid": pa.int32(), "event": _DICT,
               "line": pa.int64()}
_KIND_STORAGE = {"i64": "Int64", "u64": "UInt64", "hex": "UInt64", "ptr": "UInt64", "str": "category",
                 "comm": "category"}


class StoreError(ValueError):
    """A file that is not a complete timerlab store (the message names it)."""


def _field_storages() -> dict:
    """column -> "Int64" | "UInt64" | "category", tgid and latency_flags first,
    then in the order the C++ reader lays payload columns out (the schema's
    first mention)."""
    out = {"tgid": "Int64", "latency_flags": "category"}
    for fields in _core.ftrace_schema().values():
        for _key, col, kind, _req in fields:
            out.setdefault(col, _KIND_STORAGE[kind])
    return out


def _arrow_schema() -> pa.Schema:
    fields = [pa.field(n, t) for n, t in _LINE_TYPES.items()]
    fields += [pa.field(n, _DICT if s == "category" else _STORAGE_TYPES[s]) for n, s in _field_storages().items()]
    return pa.schema(fields + [pa.field("payload", pa.binary())])


def _utf8(values) -> pa.Array:
    return pa.array([v.encode("utf-8", "surrogateescape") for v in values], pa.binary())


class _Writer:
    """Row groups from the parser's columns, and what the metadata needs."""

    def __init__(self, out: str):
        self.schema = _arrow_schema()
        self.writer = pq.ParquetWriter(out, self.schema, compression="zstd")
        self.categories: dict[str, dict] = {}  # column -> {value: None}, in order of first appearance
        self.occurred: set = set()
        self.counts: dict[str, int] = {}
        self.rows = 0
        self.ts_min = self.ts_max = None
        self.losses: list = []  # [row, cpu, lost] over every row group

    def _dictionary(self, name, codes, values) -> pa.Array:
        seen = self.categories.setdefault(name, {})
        for v in values:
            seen.setdefault(v, None)
        indices = pa.array(codes, pa.int32(), mask=codes < 0)  # code -1: <NA>
        return pa.DictionaryArray.from_arrays(indices, _utf8(values))

    def write(self, cols: dict) -> None:
        self.losses += [list(x) for x in zip(*(a.tolist() for a in cols["losses"]))]
        n = len(cols["ts_ns"])
        if not n:
            return
        arrays = {"ts_ns": pa.array(cols["ts_ns"]), "cpu": pa.array(cols["cpu"]), "pid": pa.array(cols["pid"]),
                  "line": pa.array(cols["line"]), "task": self._dictionary("task", *cols["task"]),
                  "event": self._dictionary("event", *cols["event"])}
        codes, names = cols["event"]
        for name, count in zip(names, np.bincount(codes, minlength=len(names)).tolist()):
            self.counts[name] = self.counts.get(name, 0) + count
        for name, storage, values, missing, categories in cols["fields"]:
            self.occurred.add(name)
            if storage == "category":
                arrays[name] = self._dictionary(name, values, categories)
            else:
                arrays[name] = pa.array(values, mask=missing.view(np.bool_))
        rows, texts = cols["payload"]
        if len(rows):
            self.occurred.add("payload")
            payload = [None] * n
            for r, t in zip(rows.tolist(), texts):
                payload[r] = t.encode("utf-8", "surrogateescape")
            arrays["payload"] = pa.array(payload, pa.binary())
        table = pa.table([arrays.get(f.name) if f.name in arrays else pa.nulls(n, f.type) for f in self.schema],
                         schema=self.schema)
        self.writer.write_table(table, row_group_size=n)
        ts = cols["ts_ns"]
        lo, hi = int(ts.min()), int(ts.max())
        self.ts_min = lo if self.ts_min is None else min(self.ts_min, lo)
        self.ts_max = hi if self.ts_max is None else max(self.ts_max, hi)
        self.rows += n

    def close(self, facts: dict) -> None:
        order = [c for c in _field_storages() if c in self.occurred]
        meta = {"format": FORMAT_VERSION, "rows": self.rows, "ts_min_ns": self.ts_min, "ts_max_ns": self.ts_max,
                "columns": list(_LINE_TYPES) + order + (["payload"] if "payload" in self.occurred else []),
                "categories": {k: list(v) for k, v in self.categories.items()},
                "event_counts": self.counts, "losses": self.losses, **facts}
        # ensure_ascii: a surrogate escape (a byte that was not UTF-8) survives JSON as \\udcXX.
        self.writer.add_key_value_metadata({_META_KEY: json.dumps(meta, ensure_ascii=True)})
        self.writer.close()


def convert(trace, out, *, strict: bool = True, rows_per_group: int = ROWS_PER_GROUP, progress=None) -> str:
    """Parse the ftrace text file or trace.dat ``trace`` (as :func:`read_ftrace` reads it)
    into the store ``out`` (one Parquet file), a row group at a time: memory
    stays bounded by ``rows_per_group`` rows, whatever the trace's size.
    ``progress(lines)``, if given, is called after each chunk of text (each
    row group of a trace.dat) with the lines (records) read so far.
    Returns ``out``. Raises what read_ftrace raises for the text."""
    from .dat import is_trace_dat
    from .read import _parse, _parse_dat

    if not isinstance(strict, bool):
        raise TypeError(f"strict must be True or False, not {strict!r}")
    if not isinstance(rows_per_group, int) or isinstance(rows_per_group, bool) or rows_per_group < 1:
        raise ValueError(f"rows_per_group={rows_per_group!r}: a positive number of rows")
    name, out = os.fspath(trace), os.fspath(out)
    if os.path.abspath(name) == os.path.abspath(out):
        raise ValueError(f"out={out!r} is the trace itself")
    os.stat(name)  # FileNotFoundError names the trace before anything is written
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise FileNotFoundError(errno.ENOENT, "no such directory for the store", folder)
    tmp = out + ".tmp"
    w = _Writer(tmp)

    def each(parser):
        if parser.rows >= rows_per_group:
            w.write(parser.take())
        if progress is not None:
            progress(parser.lines)

    try:
        if is_trace_dat(name):  # a row group taken whenever the decoder has rows_per_group rows
            parser, skipped, examples = _parse_dat(name, strict, stacklevel=4, each=each, rows=rows_per_group)
            dat = True
        else:
            parser, skipped, examples = _parse(name, strict, each, stacklevel=3)
            dat = False
        w.write(parser.take())
        w.close({"nr_cpus": int(parser.nr_cpus), "lost_events": int(parser.lost_events),
                 "loss_markers": int(parser.loss_markers),
                 "skipped_lines": int(skipped), "skipped_examples": list(examples),
                 "source": "trace-cmd report" if dat or parser.trace_cmd_header else "tracefs",
                 "text_path": os.path.abspath(name), "file_bytes": os.path.getsize(name)})
        os.replace(tmp, out)
    except BaseException:
        w.writer.close()
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return out


def is_store(path) -> bool:
    """Whether ``path`` is a regular file that starts like Parquet (a FIFO or
    a device is not opened: opening a FIFO waits for a writer)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as f:
            return f.read(4) == _PARQUET_MAGIC
    except OSError:
        return False


def store_metadata(path) -> dict:
    """The store's ``timerlab`` metadata (module doc); StoreError if ``path``
    is not a complete store, FileNotFoundError if it does not exist."""
    name = os.fspath(path)
    if os.path.isdir(name):
        raise StoreError(f"{name}: a directory, not a timerlab store (one .parquet file from `timerlab convert`)")
    try:
        meta = pq.ParquetFile(name).metadata
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError) as e:
        raise StoreError(f"{name}: not a readable Parquet file ({e}); convert the trace again "
                         f"(`timerlab convert TRACE {name}`)") from e
    kv = meta.metadata or {}
    if _META_KEY not in kv:
        raise StoreError(f"{name}: a Parquet file without timerlab's metadata: not written by `timerlab convert`")
    try:
        m = json.loads(kv[_META_KEY])
    except ValueError as e:
        raise StoreError(f"{name}: timerlab metadata is not valid JSON ({e})") from e
    if m.get("format") != FORMAT_VERSION:
        raise StoreError(f"{name}: store format {m.get('format')!r}, this timerlab reads {FORMAT_VERSION}: "
                         "convert the trace again")
    return m


def _filter(meta, events, cpus, start_ns, end_ns):
    """The pyarrow filter expression of the restrictions (None: none)."""
    conds = []
    if events is not None:
        events = [events] if isinstance(events, str) else list(events)
        known = set(meta["event_counts"]) | set(_core.ftrace_schema())
        bad = [e for e in events if not isinstance(e, str) or e not in known]
        if bad:
            raise ValueError(f"events={bad!r} not in the trace; events there: {sorted(meta['event_counts'])}")
        conds.append(pc.field("event").isin(pa.array([e.encode() for e in events], pa.binary())))
    if cpus is not None:
        cpus = [cpus] if isinstance(cpus, (int, np.integer)) else list(cpus)
        if any(not isinstance(c, (int, np.integer)) or isinstance(c, bool) or c < 0 for c in cpus):
            raise ValueError(f"cpus={cpus!r}: CPU numbers (non-negative integers)")
        conds.append(pc.field("cpu").isin(pa.array(cpus, pa.int32())))
    for opt, value, op in (("start_ns", start_ns, "__ge__"), ("end_ns", end_ns, "__lt__")):
        if value is not None:
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                raise TypeError(f"{opt} must be an integer timestamp in ns, not {value!r}")
            conds.append(getattr(pc.field("ts_ns"), op)(int(value)))
    expr = None
    for c in conds:
        expr = c if expr is None else expr & c
    return expr


def read_store(path, *, columns=None, events=None, cpus=None, start_ns=None, end_ns=None) -> pd.DataFrame:
    """The events of a store as the DataFrame :func:`read_ftrace` gives (before
    its feature detection), restricted to ``events`` (names), ``cpus`` and
    the window ``start_ns <= ts_ns < end_ns``; only the row groups and
    columns needed are read. ``columns``: the columns to keep (default all
    the trace has); those the trace lacks are left out."""
    name = os.fspath(path)
    meta = store_metadata(name)
    have = meta["columns"]
    if columns is None:
        columns = have
    else:
        unknown = [c for c in columns if c not in _arrow_schema().names]
        if unknown:
            raise ValueError(f"columns={unknown!r}: not columns of a trace; the trace has {have}")
        columns = [c for c in have if c in set(columns)]
    expr = _filter(meta, events, cpus, start_ns, end_ns)
    try:
        # Batch by batch: a restricted read holds what it keeps, not every
        # row group's columns before filtering (row groups the statistics of
        # ts_ns exclude are not read at all).
        dataset = ds.dataset(name, format="parquet")
        schema = pa.schema([dataset.schema.field(c) for c in columns])
        # One row group ahead at most: the default read-ahead of 4 x 16 batches
        # doubles the peak memory of a restricted read of a 2 GB trace.
        batches = dataset.to_batches(columns=columns, filter=expr, batch_readahead=1, fragment_readahead=1)
        table = pa.Table.from_batches(list(batches), schema=schema)
    except (pa.ArrowException, OSError) as e:
        raise StoreError(f"{name}: corrupt store ({e}); convert the trace again") from e
    return _to_frame(table, meta)


def _to_frame(table: pa.Table, meta: dict) -> pd.DataFrame:
    data = {}
    for name in table.column_names:
        # Each Arrow column is let go once converted, so that the table and
        # the frame are never both whole in memory.
        col = table.column(name)
        table = table.drop_columns([name])
        if name in _LINE_TYPES and name not in ("task", "event"):
            data[name] = col.to_numpy()
        elif pa.types.is_dictionary(col.type):
            data[name] = _categorical(col, meta["categories"].get(name, []))
        elif name == "payload":
            values = np.full(len(col), None, dtype=object)
            for i, v in enumerate(col.to_pylist()):
                if v is not None:
                    values[i] = v.decode("utf-8", "surrogateescape")
            data[name] = pd.Series(values, dtype=object, copy=False)
        else:
            mask = col.is_null().to_numpy(zero_copy_only=False)
            values = pc.fill_null(col, 0).to_numpy()
            data[name] = pd.arrays.IntegerArray(np.ascontiguousarray(values), mask)
    pa.default_memory_pool().release_unused()  # Arrow's allocator keeps freed pages otherwise
    return pd.DataFrame(data, copy=False)


def _categorical(col: pa.ChunkedArray, categories: list) -> pd.Categorical:
    """Codes into the trace's own category list (the order the text reader
    gives), from row groups that each carry their own dictionary."""
    from .read import category_index

    index = category_index(categories)
    position = {c: i for i, c in enumerate(categories)}
    parts = []
    for chunk in col.chunks:
        values = [v.decode("utf-8", "surrogateescape") for v in chunk.dictionary.to_pylist()]
        remap = np.array([position[v] for v in values] + [-1], dtype=np.int32)  # -1: <NA> stays <NA>
        codes = pc.fill_null(chunk.indices, -1).to_numpy().astype(np.int64)
        parts.append(remap[codes])
    codes = np.concatenate(parts) if parts else np.zeros(0, np.int32)
    return pd.Categorical.from_codes(codes, categories=index)
