"""A whole job through a Dask LocalCluster: wall time against polars reading the same files in one process, each
worker's peak memory against 1.5x the largest rank file, and the same job with 1 and 2 workers (issue 44).

A worker's peak is its fixed part (a bare Dask worker, then polars, numpy and tracekit loaded and warmed on a small
rank as the job runs: about 170 MB whatever the ranks) and what the ranks add past it (the figure that grows with
rank size); both are printed. On the 2-core CI machine, 2026-11-30, 64 ranks of 101 MB (6.46 GB): polars reading them
in one process 84.4 s (peak 1,530 MB). As `tracekit job` runs by default (each rank replayed without the profiler):
2 workers 298.1 s (3.5x), peak 303 MB a worker, 130 MB of it past the fixed part (1.29x the largest file); 1 worker
532.8 s (6.3x: 2 workers run it 1.8x faster on the 2 cores), 305 MB, 129 MB past it (1.28x). As traced
(`--traced`): 2 workers 203.3 s (2.4x), 263 MB, 95 MB past the fixed part (0.94x). The injected straggler (rank 32)
found by each. The evening before, the default path took 717.3 s and grew a worker by 428 MB (4.24x the file): the
replay kept an object per GPU activity and its rank's whole host timeline with the kernels' names
(`tracekit/job/read.py` and `analysis/steps/unprofiled.py` say what it holds now).

    python benchmarks/bench_job.py [--ranks 64] [--mb 100] [--folder /tmp/tracekit-bench-job]
                                   [--runs default:2,traced:2,default:1]

The ranks are SYNTHETIC (tracekit.job.synthetic: the recorded DDP rank's step, a loader straggler on one rank,
clock offsets up to 500 us, a cpu_op and a flow event beside every launch as a full Kineto trace has, the host
paying the profiler's cost of its events), plain JSON of about --mb MB each, written to --folder and deleted at the
end. Prints figures; asserts nothing. The job is run as `tracekit job` runs it by default (each rank read with its
host timeline and replayed without the profiler), on 2 workers and on 1, and as traced (`--traced`) on 2.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

SCRIPT_FLOOR = """
import sys, time, polars as pl
from tracekit.importers.kineto import HOST_HEADER_SCHEMA
start = time.perf_counter()
rows = 0
for path in sys.argv[1:]:
    rows += pl.read_json(path, schema=HOST_HEADER_SCHEMA).select(pl.col("traceEvents").explode()).height
import resource
print(time.perf_counter() - start, rows, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def peak_rss_bytes() -> int:
    """The process's own peak (VmHWM: ru_maxrss survives exec, so a spawned worker would report its parent's)."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def current_rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        import os

        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def write(folder: Path, ranks: int, mb: float) -> tuple[list[Path], Path]:
    """The job's rank files, and a small rank to warm the workers with."""
    from tracekit.job.synthetic import SyntheticJob, load_template, write_job

    template = load_template()
    small = write_job(SyntheticJob(ranks=2, steps=2, host_ops=True), folder / "small", template, compress=False)[0]
    probe = SyntheticJob(ranks=2, steps=2, cause="loader", straggler=1, host_ops=True)
    sized = write_job(probe, folder / "probe", template, compress=False)
    per_step = sized[0].stat().st_size / 2
    shutil.rmtree(folder / "probe")
    steps = max(3, round(mb * 1e6 / per_step))
    job = SyntheticJob(ranks=ranks, steps=steps, cause="loader", straggler=ranks // 2, host_ops=True)
    return write_job(job, folder / "ranks", template, compress=False), small


def warm(path: str, traced: bool) -> int:
    """A worker's RSS once it has imported and run the map on a small rank as the job will (polars, numpy and
    tracekit loaded, their pools started): what every worker holds whatever the ranks' size, so that the growth past
    it is the ranks'."""
    import tempfile

    from tracekit.job.run import map_rank
    from tracekit.steps import calibration_of

    with tempfile.TemporaryDirectory() as folder:
        map_rank(path, 0, folder, None if traced else calibration_of())
    return current_rss_bytes()


def run(files: list[Path], workers: int, small: Path, traced: bool) -> dict[str, float]:
    from tracekit.job.run import dask_client, run_job

    with dask_client(workers=workers) as client:
        client.wait_for_workers(workers)
        bare = client.run(current_rss_bytes)
        idle = client.run(warm, str(small), traced)
        start = time.perf_counter()
        result = run_job(files, client=client, traced=traced)
        seconds = time.perf_counter() - start
        peaks = client.run(peak_rss_bytes)
    return {
        "seconds": seconds,
        "bare": max(bare.values()),
        "warm": max(idle.values()),
        "peak": max(peaks.values()),
        "growth": max(peaks[w] - idle[w] for w in peaks),
        "straggler": result.straggler.rank if result.straggler.rank is not None else -1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--folder", default="/tmp/tracekit-bench-job")
    parser.add_argument(
        "--runs",
        default="default:2,traced:2,default:1",
        help="which jobs to time, MODE:WORKERS (traced or default) separated by commas",
    )
    args = parser.parse_args()
    runs = [(int(workers), mode == "traced") for mode, workers in (r.split(":") for r in args.runs.split(","))]
    folder = Path(args.folder)
    shutil.rmtree(folder, ignore_errors=True)
    try:
        start = time.perf_counter()
        files, small = write(folder, args.ranks, args.mb)
        sizes = [p.stat().st_size for p in files]
        print(
            f"SYNTHETIC job: {len(files)} ranks, {sum(sizes) / 1e9:.2f} GB of Kineto JSON, largest rank file "
            f"{max(sizes) / 1e6:.0f} MB (written in {time.perf_counter() - start:.0f} s)"
        )
        floor = subprocess.run(
            [sys.executable, "-c", SCRIPT_FLOOR, *map(str, files)], capture_output=True, text=True, check=True
        ).stdout.split()
        print(
            f"floor: polars read_json of the same files in one process: {float(floor[0]):.1f} s "
            f"({int(floor[1])} events), peak {int(floor[2]) / 1e6:.0f} MB"
        )
        for workers, traced in runs:
            found = run(files, workers, small, traced)
            mode = "--traced" if traced else "(default: each rank replayed without the profiler)"
            print(
                f"tracekit job {mode}, LocalCluster of {workers} worker{'s' if workers > 1 else ''}: "
                f"{found['seconds']:.1f} s "
                f"({found['seconds'] / float(floor[0]):.1f}x the floor); peak RSS per worker {found['peak'] / 1e6:.0f} "
                f"MB: {found['bare'] / 1e6:.0f} MB a bare Dask worker, {found['warm'] / 1e6:.0f} MB with tracekit "
                f"loaded and warm, {found['growth'] / 1e6:.0f} MB grown past that during the job "
                f"({found['growth'] / max(sizes):.2f}x the largest file; target < 1.5x: "
                f"{1.5 * max(sizes) / 1e6:.0f} MB); straggler found: rank {int(found['straggler'])}"
            )
        print(f"client peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6:.0f} MB")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
