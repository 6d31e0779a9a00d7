"""Long fuzz runs of timerlab, with exact counts (fuzz/README.md).

    python fuzz/run.py                      # every target, the issue-17 counts
    python fuzz/run.py lines --n 100000     # one target, another count
    python fuzz/run.py lines --atheris      # coverage-guided, until stopped (pip install atheris)

Targets: configs (valid configs from tests/strategies.any_options: they run),
invalid (one option made invalid: Config refuses it, naming it), lines
(mutated real trace lines: a row, a counted skip or an error, never a silent
loss), compressed (truncated or corrupted .gz/.bz2/.xz), files (damaged
config files), replay (damaged real traces replayed), dat (a small trace.dat
cut or with bits flipped: an error naming section and offset). Inputs are seeded
random bytes (--seed), or hypothesis' draws for the config targets; each
input runs under an alarm (a hang) and the process under an address-space
limit (memory). Prints one line of counts per target and exits 1 on a
finding, with the input that made it.
"""
from __future__ import annotations

import argparse
import collections
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import targets  # noqa: E402

COUNTS = {"configs": 10_000, "invalid": 10_000, "lines": 130_000, "compressed": 10_000, "files": 10_000,
          "replay": 300, "dat": 20_000}
HANG_S = 120  # an input that takes longer is a hang


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"no answer within {HANG_S} s")


BYTE_TARGETS = {"lines": (targets.trace_lines, False), "compressed": (targets.compressed_file, True),
                "files": (targets.config_file, True), "replay": (targets.replay, True),
                "dat": (targets.trace_dat, True)}  # (target, needs a workdir)


def _call(name: str, data: bytes, workdir: Path):
    target, in_dir = BYTE_TARGETS[name]
    return target(data, workdir) if in_dir else target(data)


def _bytes_inputs(name: str, n: int, seed: int, workdir: Path):
    rng = random.Random(seed)
    for _ in range(n):
        data = rng.randbytes(256)
        yield data, (lambda d=data: _call(name, d, workdir))


def _hypothesis_inputs(strategy, call, n: int, seed: int):
    """n draws of a hypothesis strategy (generation only, no shrinking)."""
    from hypothesis import HealthCheck, Phase, given, seed as hseed, settings

    drawn = []

    @hseed(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(x=strategy)
    def collect(x):
        drawn.append(x)

    collect()
    for x in drawn:
        yield x, (lambda x=x: call(x))


def inputs(name: str, n: int, seed: int, workdir: Path):
    import strategies

    if name == "configs":
        return _hypothesis_inputs(strategies.any_options(), targets.config_runs, n, seed)
    if name == "invalid":
        return _hypothesis_inputs(strategies.invalid_options(), lambda c: targets.config_refused(*c), n, seed)
    return _bytes_inputs(name, n, seed, workdir)


def run(name: str, n: int, seed: int) -> bool:
    workdir = Path(tempfile.mkdtemp(prefix=f"timerlab-fuzz-{name}-"))
    outcomes, findings = collections.Counter(), []
    t0, slowest = time.perf_counter(), (0.0, None)
    signal.signal(signal.SIGALRM, _alarm)
    for k, (x, call) in enumerate(inputs(name, n, seed, workdir)):
        t = time.perf_counter()
        signal.alarm(HANG_S)
        try:
            out = call()
            outcomes[_summary(name, out)] += 1
        except (AssertionError, Hang, Exception) as e:  # noqa: BLE001 — every exception is a finding
            findings.append((x, f"{type(e).__name__}: {e}", traceback.format_exc(limit=-3)))
            outcomes["FINDING"] += 1
        finally:
            signal.alarm(0)
        dt = time.perf_counter() - t
        if dt > slowest[0]:
            slowest = (dt, k)
        if (k + 1) % 500 == 0:  # so that a long run stopped early still tells what it saw
            print(f"  {name}: {k + 1} inputs, {time.perf_counter() - t0:.0f} s: {dict(outcomes.most_common())}",
                  flush=True)
    wall = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{name}: {n} inputs in {wall:.0f} s, slowest {slowest[0]:.2f} s, peak RSS {rss_mb:.0f} MB: "
          f"{dict(outcomes.most_common())}", flush=True)
    for x, what, tb in findings[:5]:
        print(f"  FINDING {what[:500]}\n  input: {x!r}"[:3000] + f"\n{tb}", flush=True)
    return not findings


def _summary(name: str, out) -> str:
    if name == "lines":
        run.lines = getattr(run, "lines", 0) + out["mutated"]
        return "benign-mutated" if out["benign_mutated"] else "ok"
    if name == "configs":
        return f"ran ({'>=1024' if out['cpus'] >= 1024 else '<1024'} CPUs)"
    return str(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", nargs="*", help=f"any of {', '.join(COUNTS)} (default: all)")
    ap.add_argument("--n", type=int, help="inputs per target (default: the issue-17 counts)")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--memory-gb", type=float, default=8, help="address-space limit of this process")
    ap.add_argument("--atheris", action="store_true", help="coverage-guided with atheris (byte targets)")
    args = ap.parse_args(argv)
    limit = int(args.memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    names = args.target or list(COUNTS)
    unknown = sorted(set(names) - set(COUNTS))
    if unknown:
        ap.error(f"unknown target(s) {unknown}; choose from {', '.join(COUNTS)}")
    if args.atheris and names[0] not in BYTE_TARGETS:
        ap.error(f"--atheris drives the byte targets: {', '.join(BYTE_TARGETS)}")
    if args.atheris:
        return _atheris(names[0])
    ok = True
    for name in names:
        ok &= run(name, args.n or COUNTS[name], args.seed)
        if name == "lines":
            print(f"lines: {run.lines} mutated lines", flush=True)
            run.lines = 0
    return 0 if ok else 1


def _atheris(name: str) -> int:
    import atheris  # pip install atheris

    workdir = Path(tempfile.mkdtemp(prefix="timerlab-atheris-"))

    def one(data: bytes):
        _call(name, data, workdir)

    atheris.Setup([sys.argv[0], *[a for a in sys.argv[1:] if a.startswith("-") and a != "--atheris"]], one)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
