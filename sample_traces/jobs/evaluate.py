"""The whole-job analysis on the 2-GPU NCCL recordings (`h200x2_nccl/`), judged against each job's step timed
without the profiler (CUDA events, `timings.csv`, recorded before the traces): the job's step replayed without the
profiler and as traced (the trivial answer), the straggler each names, and the gain against what the injection
costs the job unprofiled (its step less the same model's baseline step).

    python sample_traces/jobs/evaluate.py [FOLDER]
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

from dask.distributed import Client, LocalCluster

from tracekit.api import job as run_job

HERE = Path(__file__).resolve().parent


def timed_ms(folder: Path) -> float:
    with open(folder / "timings.csv", newline="") as handle:
        return statistics.median(float(row["median_ms"]) for row in csv.DictReader(handle))


def injected_rank(folder: Path) -> int | None:
    with open(folder / "timings.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    variant = rows[0]["variant"]
    return (
        None
        if variant in ("baseline", "p2p_disabled", "item_sync")
        else next(int(r["rank"]) for r in rows if r["injected"] == "1")
    )


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "h200x2_nccl"
    jobs = sorted(p for p in root.iterdir() if (p / "timings.csv").is_file())
    baseline = {p.name.split(".")[0]: timed_ms(p) for p in jobs if p.name.endswith(".baseline")}
    header = ("job", "timed", "replayed", "err", "traced", "err", "injected", "named", "cause", "gain", "cost")
    print(" ".join(f"{h:>9}" if i else f"{h:<24}" for i, h in enumerate(header)))
    errors: dict[str, list[float]] = {"replayed": [], "traced": []}
    right = {"replayed": 0, "traced": 0}
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, Client(cluster) as client:
        for folder in jobs:
            truth = timed_ms(folder)
            files = sorted(folder.glob("rank*.pt.trace.json.gz"))
            results = {"replayed": run_job(files, client=client), "traced": run_job(files, client=client, traced=True)}
            expected = injected_rank(folder)
            for mode, result in results.items():
                errors[mode].append(abs(result.step_ns / 1e6 - truth) / truth)
                right[mode] += result.straggler.rank == expected
            shown = results["replayed"]
            model = folder.name.split(".")[0]
            cost = truth - baseline.get(model, truth)
            print(
                f"{folder.name:<24} {truth:9.2f} {shown.step_ns / 1e6:9.2f} {errors['replayed'][-1]:9.1%} "
                f"{results['traced'].step_ns / 1e6:9.2f} {errors['traced'][-1]:9.1%} {str(expected):>9} "
                f"{str(shown.straggler.rank):>9} {str(shown.straggler.cause):>9} "
                f"{shown.straggler.gain_ns / 1e6:9.2f} {cost:9.2f}"
            )
    for mode in ("replayed", "traced"):
        found = errors[mode]
        print(
            f"{mode}: step within 10% on {sum(e <= 0.10 for e in found)}/{len(found)} jobs, median error "
            f"{statistics.median(found):.1%}; the injected rank (or none) named on {right[mode]}/{len(found)}"
        )


if __name__ == "__main__":
    main()
