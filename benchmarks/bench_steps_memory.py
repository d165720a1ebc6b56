"""Step analysis on a large generated trace: peak memory against the file size, time against polars reading the
same events (issue 28's targets: peak below 2x the file, time within 5x polars' read), for the traced analysis
(`tracekit step --traced`) and for what `tracekit step` runs by default (the replay without the profiler, its
interval's two replays and the analysis of both timelines).

    python benchmarks/bench_steps_memory.py [--kernels N]          # default 2,000,000 kernels (~1 GB of JSON)
    python benchmarks/bench_steps_memory.py --nsys [--kernels N]   # an Nsight Systems SQLite export of N kernels

The trace is written here (ProfilerStep#N ranges, one launch call, one operator and one kernel per launch, a
sync at each step's end); each measurement runs in its own process so its peak RSS is its own. (The step figures'
accuracy against the programs as they run is `bench_steps.py`'s.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tracekit.allocator import MALLOC_VARIABLE, RETURN_FREED_PAGES

PER_STEP = 1000


def write_trace(path: Path, kernels: int) -> None:
    with open(path, "w") as out:
        out.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],\n')
        out.write('  "traceEvents": [')
        ts, first = 1_000_000.0, True
        for k in range(kernels):
            events = []
            if k % PER_STEP == 0:
                events.append(
                    {
                        "ph": "X",
                        "cat": "user_annotation",
                        "name": f"ProfilerStep#{k // PER_STEP}",
                        "pid": 1,
                        "tid": 1,
                        "ts": ts,
                        "dur": PER_STEP * 10.0,
                    }
                )
            events.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": ts, "dur": 6.0})
            events.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 1,
                    "tid": 1,
                    "ts": ts + 1,
                    "dur": 4.0,
                    "args": {"correlation": k},
                }
            )
            events.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": "void at::native::vectorized_elementwise_kernel",
                    "pid": 0,
                    "tid": 7,
                    "ts": ts + 6,
                    "dur": 3.0,
                    "args": {"device": 0, "stream": 7, "correlation": k, "grid": [1, 1, 1], "block": [128, 1, 1]},
                }
            )
            for e in events:  # laid out as libkineto writes it: one event per block of lines
                out.write(("" if first else ",") + "\n  {\n    " + json.dumps(e)[1:-1] + "\n  }")
                first = False
            ts += 10.0
        out.write('\n  ],\n  "traceName": "bench"\n}')


def write_nsys(path: Path, kernels: int) -> None:
    """A minimal Nsight Systems export: StringIds, one runtime call and one kernel per launch (correlated)."""
    import sqlite3

    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, contextId INT, streamId INT,"
        " correlationId INT, globalPid INT, demangledName INT, shortName INT, gridX INT, gridY INT, gridZ INT,"
        " blockX INT, blockY INT, blockZ INT, registersPerThread INT, staticSharedMemory INT,"
        " dynamicSharedMemory INT);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, eventClass INT, globalTid INT,"
        " correlationId INT, nameId INT, returnValue INT, callchainId INT);"
    )
    names = [(1, "cudaLaunchKernel_v7000")] + [(2 + i, f"kernel_{i}") for i in range(PER_STEP)]
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", names)  # a step launches PER_STEP different kernels
    pid = 4242 << 24
    step = 10_000
    for first in range(0, kernels, 500_000):
        rows = range(first, min(kernels, first + 500_000))
        db.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, 1, 0, 0)",
            ((k * step, k * step + 4000, pid + 1, k) for k in rows),
        )
        db.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 7, ?, ?, ?, ?, 1, 1, 1, 128, 1, 1, 32, 0, 0)",
            ((k * step + 6000, k * step + 9000, k, pid, 2 + k % PER_STEP, 2 + k % PER_STEP) for k in rows),
        )
    db.commit()
    db.close()


def child(mode: str, path: str) -> None:
    start = time.perf_counter()
    if mode == "polars-sqlite":
        import sqlite3

        import polars as pl

        with sqlite3.connect(path) as db:
            count = pl.read_database("SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL", db).height
            count += pl.read_database("SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME", db).height
    elif mode == "polars":
        import polars as pl

        from tracekit.importers.kineto import HOST_HEADER_SCHEMA

        frame = pl.read_json(path, schema=HOST_HEADER_SCHEMA).select(pl.col("traceEvents").explode())
        count = frame.height
    elif mode == "read":
        from tracekit.steps import read_events

        count = read_events(path).gpu.height
    elif mode == "steps":
        from tracekit.steps import steps_of

        count = len(steps_of(path).steps)
    else:
        from tracekit.steps import program_of

        count = len(program_of(path).unprofiled.steps)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"mode": mode, "seconds": elapsed, "peak_bytes": peak, "count": count}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernels", type=int, default=2_000_000)
    parser.add_argument("--nsys", action="store_true", help="an Nsight Systems SQLite export instead of Kineto")
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("big.sqlite" if args.nsys else "big.pt.trace.json")
        (write_nsys if args.nsys else write_trace)(path, args.kernels)
        size = path.stat().st_size
        runs = {}
        for mode in ("polars-sqlite" if args.nsys else "polars", "read", "steps", "program"):
            # tracekit's runs with its CLI's allocator setting (`tracekit.allocator`), polars' own read with polars'
            env = os.environ if mode.startswith("polars") else {**os.environ, MALLOC_VARIABLE: RETURN_FREED_PAGES}
            done = subprocess.run(
                [sys.executable, __file__, "--child", mode, str(path)],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            )
            runs[mode] = json.loads(done.stdout)
    steps, polars = runs["steps"], runs["polars-sqlite" if args.nsys else "polars"]
    print(
        f"{args.kernels:,} kernels, {size / 1e6:.0f} MB of {'SQLite' if args.nsys else 'JSON'}, {steps['count']} steps"
    )
    print(f"polars read: {polars['seconds']:.2f} s, peak {polars['peak_bytes'] / 1e6:.0f} MB")
    print(f"events read: {runs['read']['seconds']:.2f} s, peak {runs['read']['peak_bytes'] / 1e6:.0f} MB")
    for mode, words in (("steps", "steps, traced"), ("program", "steps, replayed")):
        run = runs[mode]
        print(
            f"{words + ':':17s}{run['seconds']:.2f} s ({run['seconds'] / polars['seconds']:.1f}x polars; target 5x), "
            f"peak {run['peak_bytes'] / 1e6:.0f} MB ({run['peak_bytes'] / size:.2f}x the file; target 2x)"
        )


if __name__ == "__main__":
    main()
