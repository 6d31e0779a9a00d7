"""Fuzz targets of timerlab: each takes the fuzzer's bytes (or a drawn value),
runs one input through the public API and raises AssertionError on a finding:
a crash (any exception but the documented error), a silent loss (a damaged
line that is neither a row, a counted skip nor an error), a config that
passes Config but fails in the core, or an error that does not name the
option. Hangs and memory are bounded by the caller (fuzz/run.py: an alarm and
an address-space limit). See fuzz/README.md.

The same targets are driven by hypothesis in the test suite (tests/test_fuzz.py,
a bounded run), by fuzz/run.py for the measured runs (seeded random bytes,
exact counts) and by atheris for coverage-guided runs (``run.py --atheris``).
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import tempfile
import warnings
from functools import lru_cache
from pathlib import Path

import timerlab as tl
from timerlab import _core

import dat_synth  # fuzz/dat_synth.py: fuzz/ is on the path wherever targets is imported

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "data" / "traces"
SEED_TRACES = ["qemu-6.12.95-16cpu-2node-idle.trace.txt.xz", "qemu-6.1.176-16cpu-2node-mixed.trace.txt.xz",
               "vm2-fsync-sleep-hz250.trace.txt.xz"]
COMPRESSORS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}
ALPHABET = b" -[]():=.#0123456789abcdefxyz_|\t\r\n\x00\xff"
# Lines the reader rightly keeps no row for: blank, comments, trace-cmd's header.
_BENIGN = re.compile(rb"^[ \t]*$|^[ \t]*#|^[ \t]*(cpus=|version = |CPU )")


class Bytes:
    """Choices read off the fuzzer's bytes (atheris' FuzzedDataProvider, small)."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def int(self, n: int) -> int:
        """An int in [0, n)."""
        if n <= 1:
            return 0
        chunk = self.data[self.at:self.at + 4]
        self.at += 4
        return int.from_bytes(chunk.ljust(4, b"\0"), "little") % n

    def byte(self) -> int:
        return ALPHABET[self.int(len(ALPHABET))]


@lru_cache(maxsize=None)
def seed_lines(name: str) -> tuple:
    """The event lines of a real trace (with their newline)."""
    text = lzma.decompress((TRACES / name).read_bytes())
    return tuple(line + b"\n" for line in text.split(b"\n") if line and not _BENIGN.match(line))


def mutate(line: bytes, r: Bytes) -> bytes:
    """One line damaged once: a byte changed, bytes inserted, deleted or
    duplicated, digits swapped, or the line cut (never to nothing: a cut at
    the start is a deleted line, not a damaged one)."""
    body = line.rstrip(b"\n")
    at = r.int(len(body))
    op = r.int(6)
    if op == 0:
        body = body[:at] + bytes([r.byte()]) + body[at + 1:]
    elif op == 1:
        body = body[:at] + bytes(r.byte() for _ in range(1 + r.int(4))) + body[at:]
    elif op == 2:
        body = body[:at] + body[at + 1 + r.int(20):]
    elif op == 3:
        span = body[at:at + 1 + r.int(30)]
        body = body[:at] + span + body[at:]
    elif op == 4:
        digits = [i for i, c in enumerate(body) if 48 <= c <= 57]
        if digits:
            i = digits[r.int(len(digits))]
            body = body[:i] + bytes([48 + (body[i] - 47) % 10]) + body[i + 1:]
    else:
        body = body[:max(1, at)]
    return body + b"\n"


# ---------------------------------------------------------------------------
# Text lines.

def trace_lines(data: bytes, lines_per_input: int = 64, mutated_per_input: int = 8) -> dict:
    """A window of a real trace with some lines damaged, parsed strict and
    lenient. Every line is a row, a counted skip, a benign line (a mutation
    may write a comment or a blank line), or the strict error; the lines left
    alone read exactly as in the undamaged text."""
    r = Bytes(data)
    lines = seed_lines(SEED_TRACES[r.int(len(SEED_TRACES))])
    start = r.int(len(lines) - lines_per_input)
    window = list(lines[start:start + lines_per_input])
    hit = sorted({r.int(len(window)) for _ in range(mutated_per_input)})
    damaged = list(window)
    for i in hit:
        damaged[i] = mutate(window[i], r)
    header = b"# entries-in-buffer/entries-written: 1/1   #P:64\n"
    text = header + b"".join(damaged)
    cut_last = r.int(4) == 0
    if cut_last:  # sometimes the last line loses its newline too (a file cut short)
        text = text[:-1]
        hit = sorted(set(hit) | {len(window) - 1})
    clean = _parse(header + b"".join(window), strict=True)
    assert clean["error_line"] == 0, clean
    lenient = _parse(text, strict=False)
    strict = _parse(text, strict=True)
    split = text.split(b"\n")
    physical = split if split[-1] else split[:-1]
    nl = len(physical)
    rows = set(lenient["line"])
    # As the parser sees them: one trailing CR dropped, any other CR is damage.
    bare = [line[:-1] if line.endswith(b"\r") else line for line in physical]
    benign = {i + 1 for i, line in enumerate(bare) if _BENIGN.match(line) and b"\r" not in line}
    lost = set(range(1, nl + 1)) - rows - benign
    # Every line that is neither a row nor could be a comment, a blank or a
    # header line must be counted (benign-looking lines may be counted too).
    assert len(lost) <= lenient["skipped"] <= len(lost) + len(benign - rows), \
        f"silent loss: lines {sorted(lost)} gave no row, {lenient['skipped']} skipped\n{text!r}"
    # Lines left alone (no newline inserted before them) read as in the clean text.
    if all(damaged[i].count(b"\n") == 1 for i in hit):
        want = {k + 2: (clean["ts"][k], clean["cpu"][k]) for k in range(len(window)) if k not in hit}
        got = dict(zip(lenient["line"], zip(lenient["ts"], lenient["cpu"])))
        for ln, v in want.items():
            assert got.get(ln) == v, f"line {ln} changed: {got.get(ln)} != {v}\n{text!r}"
    if strict["error_line"]:
        assert strict["error_line"] - 1 <= nl
        assert strict["rows"] == sum(1 for x in lenient["line"] if x < strict["error_line"])
    else:
        assert lenient["skipped"] == 0 and strict["rows"] == lenient["rows"]
    return {"lines": nl, "mutated": len(hit), "rows": lenient["rows"], "skipped": lenient["skipped"],
            "benign_mutated": sum(1 for i in hit if _BENIGN.match(damaged[i].rstrip(b"\n\r")))}


def _parse(text: bytes, strict: bool) -> dict:
    p = _core.FtraceParser(strict=strict)
    p.feed(text)
    p.finish()
    cols = p.take()
    return {"rows": len(cols["ts_ns"]), "skipped": p.skipped_lines, "error_line": p.error_line,
            "line": cols["line"].tolist(), "ts": cols["ts_ns"].tolist(), "cpu": cols["cpu"].tolist()}


# ---------------------------------------------------------------------------
# Compressed files: truncations and corruptions.

@lru_cache(maxsize=None)
def _compressed(kind: str, name: str) -> tuple:
    text = b"".join(seed_lines(name)[:3000])
    path = Path(tempfile.gettempdir()) / f"timerlab-fuzz-{os.getpid()}-ref.txt"
    path.write_bytes(text)
    ref = tl.read_ftrace(path).events
    path.unlink()
    return COMPRESSORS[kind](text), ref["ts_ns"].tolist()


def compressed_file(data: bytes, workdir: Path) -> str:
    """A compressed trace cut short or with bytes changed. Strict: the same rows
    or an error. Lenient: the same rows, an error, or a prefix of them with
    the loss counted in skipped_lines. Returns what happened."""
    r = Bytes(data)
    kind = sorted(COMPRESSORS)[r.int(len(COMPRESSORS))]
    blob, ref = _compressed(kind, SEED_TRACES[r.int(len(SEED_TRACES))])
    damaged = bytearray(blob)
    if r.int(2):
        damaged = damaged[:r.int(len(damaged))]
        what = "cut"
    else:
        for _ in range(1 + r.int(8)):
            damaged[r.int(len(damaged))] ^= 1 + r.int(255)
        what = "corrupt"
    path = workdir / f"f.txt.{kind}"
    path.write_bytes(bytes(damaged))
    try:
        ts = tl.read_ftrace(path).events["ts_ns"].tolist()
        assert ts == ref, f"{what} {kind}: read without error but {len(ts)} rows differ from the {len(ref)}"
        strict = "same"
    except tl.TraceFormatError as e:
        assert str(path) in str(e), e
        strict = "error"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = tl.read_ftrace(path, strict=False)
        ts = t.events["ts_ns"].tolist()
        if ts != ref:
            # Rows lost at the end are counted; a row may only be missing or
            # cut, never changed: what was read is a prefix of the reference.
            assert t.skipped_lines >= 1, f"silent loss: {what} {kind}, {len(ts)} of {len(ref)} rows, none skipped"
            assert ts == ref[:len(ts)] or t.skipped_lines >= 1, f"{what} {kind}: rows changed"
    except tl.TraceFormatError as e:
        assert str(path) in str(e), e
    return f"{what} {kind}: {strict}"


# ---------------------------------------------------------------------------
# trace.dat (issue 16).

def small_v6(data: bytes, pages: int = 2) -> bytes:
    """A valid v6 trace.dat of the first `pages` pages of each CPU of `data`
    (a v6 file), for fuzzing at thousands of inputs a second: the header
    walked as trace-cmd.dat.v6(5) describes it, the CPU table rewritten."""
    lay = dat_synth.layout(data)
    return dat_synth.with_cpu_data(data, [data[off:off + min(size, pages * lay["page"])]
                                          for off, size in lay["cpu_data"]])


@lru_cache(maxsize=None)
def small_trace_dat() -> bytes:
    """The v6 trace.dat of tests/data/traces cut to two pages per CPU (a few
    hundred records): the input of trace_dat."""
    return small_v6(lzma.decompress((TRACES / "vm2-cyclictest-laptop.v6.dat.xz").read_bytes()))


@lru_cache(maxsize=None)
def _small_dat_ts() -> tuple:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "small.dat"
        path.write_bytes(small_trace_dat())
        return tuple(tl.read_ftrace(path).events["ts_ns"].tolist())


def trace_dat(data: bytes, workdir: Path) -> str:
    """The small trace.dat cut short, or with bits flipped. A cut is always an
    error (it loses data); a flip gives an error or a trace. An error names
    the file and where: a section and a byte offset, or the record whose
    payload its columns refuse (a flip in the magic makes the file text,
    refused at its first line). Returns what happened."""
    r = Bytes(data)
    blob = bytearray(small_trace_dat())
    cut = r.int(2) == 0
    if cut:
        blob = blob[:10 + r.int(len(blob) - 10)]
    else:
        # Most of the file is the formats of events it never records (read
        # only if used): aim a third of the flips at the pages (the last 4
        # pages) and a third at the file header and header_page.
        region = r.int(3)
        lo, hi = ((0, len(blob)), (len(blob) - 4 * 4096, len(blob)), (0, 400))[region]
        for _ in range(1 + r.int(4)):
            blob[lo + r.int(hi - lo)] ^= 1 << r.int(8)
    path = workdir / "damaged.dat"
    path.write_bytes(bytes(blob))
    try:
        ts = tl.read_ftrace(path).events["ts_ns"].tolist()
    except tl.TraceFormatError as e:
        msg = str(e)
        assert (f"{path}: " in msg and (" at byte " in msg or ": record " in msg)) or f"{path}:1: " in msg, msg
        return "cut: error" if cut else "flip: error"
    assert not cut, f"a cut at byte {len(blob)} read without error ({len(ts)} rows)"
    return "flip: same rows" if tuple(ts) == _small_dat_ts() else "flip: read"


# ---------------------------------------------------------------------------
# Configs: dicts of options (any_options / invalid_options) and TOML files.

def config_runs(options: dict) -> dict:
    """A valid set of options: Config accepts it and the core runs it to the end."""
    cfg = tl.Config(**options)
    res = tl.simulate(cfg)
    cpu = res.per_cpu
    assert ((cpu["busy_ns"] + cpu["idle_ns"]) == cfg.duration_ns).all(), "busy + idle != duration"
    return {"cpus": cfg.topology.cpus, "steps": int(res.summary["steps"])}


def config_refused(options: dict, name: str) -> str:
    """One option made invalid: Config (or the workload builder) refuses it,
    naming the option, before anything runs."""
    try:
        tl.Config(**options)
    except (ValueError, TypeError) as e:
        msg = str(e)
        assert name.split(".")[-1] in msg or name in msg, f"{name}: the error does not name it: {msg}"
        return type(e).__name__
    raise AssertionError(f"Config accepted {name}={options[name]!r}")


BASE_TOML = b"""cpus = 8
nodes = 2
placement = "pull"
duration_ns = 2_000_000
governor = "teo"

[[workload]]
kind = "server"
rate_hz = 400

[[workload]]
kind = "tasks"
run_ns = {exponential = 2e5}
sleep_ns = {uniform = [1e6, 2e7]}

[sweep]
grid = { placement = ["push", "pull"], cpus = [4, 8] }
seeds = [1, 2]
"""


def config_file(data: bytes, workdir: Path) -> str:
    """A config file with bytes damaged: load_config gives a Config (that runs)
    or a ValueError naming the file; nothing else."""
    r = Bytes(data)
    text = BASE_TOML
    for _ in range(1 + r.int(4)):
        text = mutate(text, r) if r.int(3) else text
    path = workdir / "fuzz.toml"
    path.write_bytes(text)
    try:
        cf = tl.config_file.load_config(path)
    except ValueError as e:
        assert str(path) in str(e), f"the error does not name the file: {e}"
        return "refused"
    tl.simulate(cf.config.replace(duration_ns=min(cf.config.duration_ns, 2_000_000),
                                  cpus=min(cf.config.topology.cpus, 64)))
    return "ran"


# ---------------------------------------------------------------------------
# Replay of mutated real traces.

def replay(data: bytes, workdir: Path) -> str:
    """A real trace with lines damaged, read leniently, replayed and validated:
    a Trace, a Config and a run, or a clear error (TraceFormatError or
    ValueError); never a crash or a runaway."""
    r = Bytes(data)
    name = SEED_TRACES[r.int(len(SEED_TRACES))]
    text = lzma.decompress((TRACES / name).read_bytes()).split(b"\n")
    head = [i for i, line in enumerate(text) if line.startswith(b"#")]
    body = max(head) + 1 if head else 0
    end = min(len(text), body + 4000)
    lines = text[:end]
    for _ in range(1 + r.int(20)):
        i = body + r.int(end - body)
        lines[i] = mutate(lines[i] + b"\n", r)[:-1]
    path = workdir / name.replace(".xz", "")
    path.write_bytes(b"\n".join(lines) + b"\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tr = tl.read_ftrace(path, strict=False)
            cfg = tr.to_config()
        except (tl.TraceFormatError, ValueError) as e:
            assert str(e), "an error without a message"
            return "refused"
    try:
        tl.simulate(cfg)
    except ValueError as e:
        # The core's own check of the script (a damaged timestamp can make a
        # negative time): a clear error, though by script item, not trace line.
        assert str(e).startswith("script item"), f"{type(e).__name__}: {e}"
        return "refused by the core"
    return "replayed"
