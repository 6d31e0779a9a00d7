"""Sweeps survive faults (issue 17): SIGINT and SIGTERM to a real sweep keep
the finished runs in the cache and leave no worker behind; a SIGKILLed
worker's run is retried once, then reported; a run over the time limit is
stopped and reported. Each test sends the signal to a real sweep."""
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pandas as pd
import psutil
import pytest

import timerlab as tl

FAST, SLOW = 5_000_000, 10**14  # duration_ns: a few ms of wall time, and hours
SWEEP = textwrap.dedent("""
    import sys, timerlab as tl
    cfg = tl.Config(cpus=64, record_timers=False, record_idle=False)
    if __name__ == "__main__":
        df = tl.sweep(cfg, {{"duration_ns": [{fast}, {slow}]}}, seeds=range(4), workers=2,
                      cache=sys.argv[1], progress=False)
        print("finished", len(df), flush=True)
""")


def start_sweep(tmp_path, slow=SLOW):
    script = tmp_path / "sweep_script.py"
    script.write_text(SWEEP.format(fast=FAST, slow=slow))
    cache = tmp_path / "cache.parquet"
    p = subprocess.Popen([sys.executable, str(script), str(cache)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p, cache


def wait_for_slow_runs(p) -> list:
    """The two workers, once both hold a slow run: each has used more CPU
    than all the fast runs together (about 0.1 s each)."""
    while True:
        assert p.poll() is None, p.stderr.read().decode(errors="replace")[-2000:]
        workers = workers_of(p.pid)
        try:
            if len(workers) == 2 and all(w.cpu_times().user > 1.0 for w in workers):
                return workers
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.1)


def workers_of(pid):
    return [c for c in psutil.Process(pid).children() if c.is_running()]


def gone(proc) -> bool:
    """Reaped: no such process (a zombie would still be there)."""
    try:
        return not proc.is_running()
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, -signal.SIGINT), (signal.SIGTERM, 128 + signal.SIGTERM)])
def test_a_signal_keeps_finished_runs_and_reaps_the_workers(tmp_path, sig, status):
    p, cache = start_sweep(tmp_path)
    try:
        workers = wait_for_slow_runs(p)  # so the 4 fast runs are done
        p.send_signal(sig)
        assert p.wait(timeout=60) == status  # a hang guard, not a timing
    finally:
        p.kill()
        p.wait()
    assert all(gone(w) for w in workers), [w.status() for w in workers if not gone(w)]
    cached = pd.read_parquet(cache)
    assert len(cached) == 4 and set(cached["duration_s"]) == {FAST / 1e9}  # the 4 fast runs


def test_a_killed_worker_is_retried_and_the_sweep_finishes(tmp_path):
    p, cache = start_sweep(tmp_path, slow=300_000_000_000)  # slow: a few seconds per run
    try:
        victim = wait_for_slow_runs(p)[0]
        victim.kill()
        out, err = p.communicate(timeout=300)
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 0, err.decode()[-2000:]
    assert out.decode().strip() == "finished 8"
    assert len(pd.read_parquet(cache)) == 8


def test_a_worker_that_dies_twice_is_a_failed_run_and_the_rest_goes_on():
    """A watcher kills any worker that has used a second of CPU: each slow
    run's worker, and the one that takes it over."""
    stop = threading.Event()
    killed = []

    def watch():
        import multiprocessing as mp
        while not stop.is_set():
            for child in mp.active_children():
                try:
                    if child.name == "timerlab-sweep-worker" and child.pid not in killed and \
                            psutil.Process(child.pid).cpu_times().user > 1.0:
                        child.kill()
                        killed.append(child.pid)
                except psutil.NoSuchProcess:
                    pass
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with pytest.raises(tl.SweepError) as e:
            tl.sweep(tl.Config(cpus=64, record_timers=False, record_idle=False), {"duration_ns": [FAST, SLOW]},
                     seeds=range(3), workers=1, progress=False)
    finally:
        stop.set()
        watcher.join()
    assert len(set(killed)) == 6  # each slow run's worker, twice
    assert [(f["duration_ns"], f["seed"]) for f in e.value.failures] == [(SLOW, 0), (SLOW, 1), (SLOW, 2)]
    assert all("died running this point 2 times (killed by SIGKILL)" in f["error"] for f in e.value.failures)
    assert len(e.value.results) == 3 and set(e.value.results["duration_ns"]) == {FAST}


@pytest.mark.parametrize("backend", ["processes", "serial"])
def test_a_run_over_the_time_limit_is_stopped_and_reported(backend):
    with pytest.raises(tl.SweepError) as e:
        tl.sweep(tl.Config(cpus=64, record_timers=False, record_idle=False), {"duration_ns": [FAST, SLOW]},
                 seeds=[1], workers=2, progress=False, backend=backend, time_limit_s=1.5)
    (failure,) = e.value.failures
    assert failure["duration_ns"] == SLOW and "TimeoutError: over the time limit of 1.5 s" in failure["error"]
    assert e.value.results["duration_ns"].tolist() == [FAST]
    with pytest.raises(ValueError, match="time_limit_s"):
        tl.sweep(tl.Config(), {}, time_limit_s=0)


def test_a_full_disk_for_the_cache_keeps_the_results(tmp_path):
    """The file-size limit stands in for a full disk: writing the cache fails
    (EFBIG), the sweep still returns its runs, warns, and leaves no partial file."""
    script = tmp_path / "full.py"
    script.write_text(textwrap.dedent("""
        import resource, signal, sys, warnings, timerlab as tl
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            df = tl.sweep(tl.Config(cpus=2, duration_ns=2_000_000), {"placement": ["push", "pull"]},
                          backend="serial", cache=sys.argv[1], progress=False)
        print(len(df), [str(x.message) for x in w if x.category is RuntimeWarning])
    """))
    cache = tmp_path / "cache.parquet"
    out = subprocess.run([sys.executable, str(script), str(cache)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("2 [") and "could not be written" in out.stdout and "2 new rows" in out.stdout
    assert not cache.exists() and not list(tmp_path.glob(".cache.parquet.*"))
