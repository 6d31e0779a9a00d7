"""Read and validate throughput and peak memory, text vs store, small and large traces.

For each trace (the shared real traces, and synthetic ones made by
make_big_trace.py: a real trace repeated with shifted times), each step runs
in a fresh child process, which reports its wall time and its peak RSS
(``resource.getrusage`` of the child, or the RSS of the child and its own
children summed, sampled every 0.2 s, if larger: validate's worker
processes):

* read          ``tl.read_ftrace(text)`` (the events in pandas)
* validate      ``tl.validate(tl.read_ftrace(text))``: the in-memory path, end to end
* validate path ``tl.validate(text)``: the same from the file's name (the reader's
                columns that replay and validate do not read are dropped at once;
                a trace of more than a million events is replayed in windows,
                a text over 512 MB read window by window, by two worker processes)
* base validate the same with the base commit's Python code (``--base REV``,
                default the merge base with main; same C++ core), today's path
* convert       ``tl.trace.convert(text, store)``, once
* reopen        ``tl.open_trace(store)`` (footer only)
* store validate ``tl.validate(tl.open_trace(store))``: the path of a trace parsed once

Throughput is MB of trace text per second (the decompressed text, whatever
the file's compression) and events per second.

    python benchmarks/bench_trace_scale.py [--big-mb 0 250 2000] [--base REV] [--quick]
        [--shared NAME ...] [--text BIG.trace.txt ...] [--steps read "base validate" ...] [--skip-base-above-mb MB]

A benchmark, not a test: nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TRACES = ROOT / "tests" / "data" / "traces"
SHARED = ["qemu-6.12.95-16cpu-2node-mixed.trace.txt.xz", "qemu-6.12.95-32cpu-2node-mixed.trace.txt.xz",
          "vm2-idle-hz250.trace.txt.xz"]

_CHILD = r"""
import json, os, resource, sys, time
base = os.environ.get("TIMERLAB_BASE")
if base:  # the base commit's package first: an editable install's finder would win over PYTHONPATH
    sys.meta_path = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path.insert(0, base)
import timerlab as tl
if base:
    assert tl.__file__.startswith(base), tl.__file__
step, text, store = sys.argv[1:4]
import threading
def tree_rss():  # this process and its descendants (validate's worker processes), summed
    kids = {}
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            kids.setdefault(int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]), []).append(int(p))
        except (OSError, IndexError, ValueError):
            pass
    total, todo = 0, [os.getpid()]
    while todo:
        q = todo.pop()
        todo += kids.get(q, [])
        try:
            total += next(int(l.split()[1]) for l in open(f"/proc/{q}/status") if l.startswith("VmRSS")) * 1024
        except (OSError, StopIteration):
            pass
    return total
tree_peak = [0]
def sample():
    while True:
        tree_peak[0] = max(tree_peak[0], tree_rss())
        time.sleep(0.2)
threading.Thread(target=sample, daemon=True).start()
t0 = time.perf_counter()
events = None
if step == "read":
    events = len(tl.read_ftrace(text).events)
elif step == "validate":
    tl.validate(tl.read_ftrace(text))
elif step == "validate_path":
    tl.validate(text)
elif step == "convert":
    tl.trace.convert(text, store)
elif step == "reopen":
    repr(tl.read_ftrace(store))
elif step == "store_validate":
    tl.validate(tl.read_ftrace(store))
seconds = time.perf_counter() - t0
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, tree_peak[0])
print(json.dumps({"seconds": seconds, "peak_rss_mb": peak / 2**20, "events": events}))
"""


STEPS = ["read", "base validate", "validate", "validate path", "convert", "reopen", "store_validate"]


def child(step: str, text: Path, store: Path, base: str | None = None) -> dict:
    env = dict(os.environ)
    if base:
        env["TIMERLAB_BASE"] = base
    r = subprocess.run([sys.executable, "-c", _CHILD, step, str(text), str(store)], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"seconds": float("nan"), "peak_rss_mb": float("nan"), "events": None,
                "error": (r.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def base_source(rev: str, into: Path) -> str:
    """A PYTHONPATH with the base commit's timerlab package (Python only) and
    this install's C++ core beside it."""
    import timerlab._core as core

    pkg = into / "timerlab"
    into.mkdir(parents=True)
    archive = into / "base.tar"
    with open(archive, "wb") as f:
        subprocess.run(["git", "-C", str(ROOT), "archive", rev, "python/timerlab"], stdout=f, check=True)
    with tarfile.open(archive) as t:
        t.extractall(into, filter="data")
    (into / "python" / "timerlab").rename(pkg)
    os.symlink(core.__file__, pkg / os.path.basename(core.__file__))
    return str(into)


def plain_text(path: Path, tmp: Path) -> Path:
    if path.suffix != ".xz":
        return path
    out = tmp / path.name.removesuffix(".xz")
    out.write_bytes(lzma.decompress(path.read_bytes()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big-mb", type=float, nargs="*", default=[250.0],
                    help="synthetic traces to make and measure, MB of text (default 250)")
    ap.add_argument("--base", default=None, help="the commit whose validate is today's path "
                                                 "(default: the merge base with main)")
    ap.add_argument("--quick", action="store_true", help="the first shared trace only, no synthetic trace")
    ap.add_argument("--skip-base-above-mb", type=float, default=1e9,
                    help="do not run the base path on traces larger than this (its memory)")
    ap.add_argument("--shared", nargs="*", default=SHARED,
                    help="shared traces to measure (tests/data/traces names; none: --shared alone)")
    ap.add_argument("--text", type=Path, nargs="*", default=[],
                    help="trace texts already made (e.g. by make_big_trace.py) to measure as well")
    ap.add_argument("--steps", nargs="*", default=None, choices=STEPS,
                    help=f"the steps to run (default all: {', '.join(STEPS)})")
    args = ap.parse_args()
    rev = args.base or subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"],
                                      capture_output=True, text=True, check=True).stdout.strip()
    shared = args.shared[:1] if args.quick else args.shared
    sizes = [] if args.quick else args.big_mb
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp_:
        tmp = Path(tmp_)
        base = base_source(rev, tmp / "base")
        texts = [plain_text(TRACES / n, tmp) for n in shared]
        for mb in sizes:
            out = tmp / f"qemu-6.12.95-16cpu-2node-mixed-{int(mb)}mb.trace.txt"
            subprocess.run([sys.executable, str(HERE / "make_big_trace.py"), "--mb", str(mb), "--out", str(out)],
                           check=True, stdout=subprocess.DEVNULL)
            texts.append(out)
        texts += args.text
        print(f"base {rev[:10]} (today's path) vs this tree; each step in a fresh process; MB = MB of text")
        header = (f"{'trace':<44} {'MB':>7} {'events':>10} | {'step':<15} {'s':>8} {'MB/s':>7} "
                  f"{'events/s':>9} {'peak RSS MB':>11}")
        print(header)
        print("-" * len(header))
        for text in texts:
            mb = text.stat().st_size / 1e6
            store = tmp / (text.name + ".parquet")
            rows = {}
            for step in args.steps or STEPS:
                if step == "base validate" and mb > args.skip_base_above_mb:
                    continue
                if step in ("reopen", "store_validate") and not store.exists():
                    continue
                r = child("validate" if step == "base validate" else step.replace(" ", "_"), text, store,
                          base if step == "base validate" else None)
                rows[step] = r
                events = rows["read"]["events"] if "read" in rows else None
                line = (f"{text.name[:44]:<44} {mb:7.1f} {events or 0:10d} | {step:<15} {r['seconds']:8.2f} "
                        f"{mb / r['seconds']:7.1f} {(events or 0) / r['seconds']:9.3g} {r['peak_rss_mb']:11.0f}")
                print(line + (f"  ({r['error']})" if "error" in r else ""), flush=True)
                with open(results / "trace_scale.jsonl", "a") as f:
                    f.write(json.dumps({"trace": text.name, "text_mb": mb, "step": step, "base": rev, **r}) + "\n")
            for step in ("validate", "validate path", "store_validate"):
                if "base validate" in rows and step in rows and rows[step]["seconds"] > 0:
                    speedup = rows["base validate"]["seconds"] / rows[step]["seconds"]
                    print(f"{'':<44} {'':>7} {'':>10} | {step} vs base validate: {speedup:.2f}x MB/s")
            store.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
