"""The ``timerlab`` command line.

    timerlab demo                 push vs pull, lazy vs always wakeups on a 2-node machine
    timerlab run CONFIG.toml      one simulation: summary, per-CPU table, figures
    timerlab sweep CONFIG.toml    the [sweep] grid x seeds of a config, one table
    timerlab export CONFIG.toml   a simulated run as ftrace text
    timerlab replay TRACE         a real trace replayed under other policies
    timerlab validate TRACE       how closely the simulator agrees with a trace
    timerlab wheel [TRACE]        a trace's timer_start events through the wheel
    timerlab convert TRACE OUT    a trace parsed once into a Parquet store, re-opened in milliseconds

Config files: timerlab.config_file. A user mistake (missing file, bad option
or value) prints one line and exits with status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import cli_commands as commands
from .config import GOVERNORS
from .sweep import SweepError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="timerlab", description="Simulate the Linux kernel timer subsystem.",
                                     epilog="`timerlab COMMAND --help` for each command.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name, help_, out_default=None):
        p = sub.add_parser(name, help=help_, description=help_)
        if out_default:
            p.add_argument("--out", type=Path, default=Path(out_default), help=f"output (default {out_default})")
        return p

    d = command("demo", "push vs pull and lazy vs always wakeups on a 2-node machine: table and figures",
                "timerlab-demo")
    d.add_argument("--cpus", type=int, default=32, help="CPUs (default 32)")
    d.add_argument("--nodes", type=int, default=2, help="NUMA nodes (default 2)")
    d.add_argument("--seconds", type=float, default=2.0, help="simulated time per run (default 2)")
    d.add_argument("--seeds", type=int, default=3, help="seeds per configuration (default 3)")
    d.add_argument("--no-plot", action="store_true", help="print the table only")
    r = command("run", "run the simulation a TOML config describes", "timerlab-run")
    r.add_argument("config", type=Path)
    r.add_argument("--no-plot", action="store_true", help="tables only")
    s = command("sweep", "run the [sweep] grid of a TOML config", "sweep.parquet")
    s.add_argument("config", type=Path)
    s.add_argument("--backend", choices=["serial", "processes", "dask"], help="overrides the file's")
    s.add_argument("--scheduler", help="dask scheduler address (tcp://host:port)")
    e = command("export", "simulate a TOML config and write the run as ftrace text", "sim.trace.txt")
    e.add_argument("config", type=Path)
    p = command("replay", "replay a real trace under other policies and compare", "timerlab-replay")
    p.add_argument("trace", type=Path)
    p.add_argument("--placement", choices=["push", "pull"], action="append", help="repeat for several")
    p.add_argument("--deferrable", choices=["legacy", "global", "global_nowake"], action="append")
    p.add_argument("--governor", choices=GOVERNORS, action="append")
    v = command("validate", "compare the simulator with what the kernel recorded in a trace")
    v.add_argument("trace", type=Path)
    v.add_argument("--tick", choices=["kept", "simulated", "trace"], default="kept",
                   help="the kernel's tick decisions in idle: the kept ones read off the trace (default), "
                        "all simulated, or all imposed")
    v.add_argument("--no-rcu-tick", action="store_true",
                   help="timers alone decide when the tick stops (Config rcu_needs_cpu=False): no tick kept "
                        "from a task switching out to the CPU's next tick (default: kept unless the trace's "
                        "kernel mostly stopped it there)")
    v.add_argument("--window-events", type=int, default=None, metavar="N",
                   help="replay a trace of more than N events in windows of time of about N events, one at a "
                        "time, in bounded memory (default 1000000; 0: whole, however large)")
    q = command("predict", "predict another kernel from a trace and check it against that kernel's real run",
                "timerlab-predict")
    q.add_argument("trace", type=Path)
    q.add_argument("--kernel", required=True, help="the release to predict, e.g. 6.12 (or 6.1 from a 6.12 trace)")
    q.add_argument("--against", type=Path, help="a trace of that kernel on the same machine and workload")
    q.add_argument("--no-plot", action="store_true", help="print the tables only")
    w = command("wheel", "replay a trace's timer events through the wheel and show the slack it adds",
                "timerlab-wheel")
    w.add_argument("trace", type=Path, nargs="?", help="ftrace text (.txt, .xz, .gz); default: a bundled trace")
    w.add_argument("--hz", type=int, default=250, help="HZ of the traced kernel (default 250)")
    w.add_argument("--no-plot", action="store_true", help="print the tables only")
    c = command("convert", "parse a trace once into a Parquet store (OUT.parquet), which every command "
                           "taking a TRACE then opens at once; written in row groups, for traces larger than memory")
    c.add_argument("trace", type=Path, help="ftrace text (.txt, .xz, .gz, .bz2)")
    c.add_argument("out", type=Path, help="the store to write, e.g. trace.parquet")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return getattr(commands, args.command)(args)
    except BrokenPipeError:  # output piped into `head`: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError) as e:
        print(f"timerlab: {e.filename or e}: {e.strerror or e}", file=sys.stderr)
    except (ValueError, TypeError, ImportError, ConnectionError, SweepError) as e:  # these name the option or file
        lines = str(e).splitlines()
        # A SweepError lists every failed run: the count and the first one make the line.
        print(f"timerlab: {lines[0]}{' ' + lines[1].strip() if isinstance(e, SweepError) and len(lines) > 1 else ''}",
              file=sys.stderr)
    except KeyboardInterrupt:
        print("timerlab: interrupted", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
