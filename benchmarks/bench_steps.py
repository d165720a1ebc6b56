"""Step figures against the program as it runs (issue 41): on the set of workloads written by others recorded on an
H200 (`sample_traces/steps/h200_programs/`, README there), each traced at several torch.profiler settings and timed
without the profiler first (CUDA events), print per trace:

- the trivial answer: the traced step taken as the step (what every trace reader reports);
- the replay without the profiler at the micro-benchmarks' per-event costs (scale 1);
- the replay at each setting's fitted scale, in sample (fitted on every workload) and held out (fitted on the other
  workloads, one workload left out at a time);
- the savings check: no "what to try" saving above the unprofiled step's idle time; a step >= 90% busy unprofiled
  called GPU-bound.

    python benchmarks/bench_steps.py [DIR] [--grid-csv PATH]

The scales searched and the fit are `tracekit.analysis.steps.calibration`'s; the shipped calibration is this fit.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

from tracekit.analysis.steps import analyze_steps
from tracekit.analysis.steps.calibration import SCALES, best_scales, held_out_scales
from tracekit.analysis.steps.profiler_cost import fit, setting_of
from tracekit.analysis.steps.unprofiled import replay_without_profiler
from tracekit.steps import read_events

HERE = Path(__file__).resolve().parent
DEFAULT_DIR = HERE.parent / "sample_traces" / "steps" / "h200_programs"


def grid(directory: Path, out: Path | None) -> list[dict[str, object]]:
    """Each trace replayed at every scale: its median step (ms). With `out`, rows already there are kept and each
    trace's rows are appended as soon as it is done (a long run can be resumed)."""
    cost_csv = directory / "profiler_cost.csv"
    calibration = fit(csv.DictReader(cost_csv.read_text().splitlines()), str(cost_csv))
    fields = ["workload", "trace", "setting", "scale", "traced_ms", "replayed_ms"]
    done = list(csv.DictReader(out.read_text().splitlines())) if out and out.exists() else []
    seen = {(r["workload"], r["trace"]) for r in done}
    rows: list[dict[str, object]] = [dict(r) for r in done]
    for path in sorted(directory.glob("*.pt.trace.json.gz")):
        workload, trace_setting = path.name.split(".")[:2]
        if (workload, trace_setting) in seen:
            continue
        started = time.perf_counter()
        events = read_events(path)
        setting = setting_of(events)
        traced = analyze_steps(events).median_step_ns / 1e6
        found = []
        for scale in SCALES:
            replayed = analyze_steps(replay_without_profiler(events, calibration.for_setting(setting), scale))
            found.append(
                dict(
                    zip(
                        fields,
                        (workload, trace_setting, setting, scale, traced, replayed.median_step_ns / 1e6),
                        strict=True,
                    )
                )
            )
        rows += found
        if out:
            new = not out.exists()
            with open(out, "a", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=fields)
                if new:
                    writer.writeheader()
                writer.writerows(found)
        print(f"  {path.name}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    return [
        {**r, "scale": float(r["scale"]), "traced_ms": float(r["traced_ms"]), "replayed_ms": float(r["replayed_ms"])}
        for r in rows
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("directory", nargs="?", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--grid-csv", type=Path, help="keep the replays at every scale here (and resume from it)")
    args = parser.parse_args()
    rows = grid(args.directory, args.grid_csv)
    timings = list(csv.DictReader((args.directory / "timings.csv").read_text().splitlines()))
    # like with like: the replay's median step against the median of the steps timed without the profiler (the
    # period, the mean step, is printed beside: the loaders' few slow steps pull it 10-60% above the median)
    truth = {(r["workload"], r["setting"]): float(r["median_event_ms"]) for r in timings}
    mean_truth = {(r["workload"], r["setting"]): float(r["period_ms"]) for r in timings}
    fitted = best_scales(rows, truth)  # in sample: every workload
    held = held_out_scales(rows, truth)
    print(f"scales fitted in sample (per setting): {fitted}")
    print(f"{'trace':44s} {'real ms':>8s} {'traced':>8s} {'scale 1':>8s} {'in-sample':>10s} {'held out':>9s}")
    errors: dict[str, list[float]] = {"traced": [], "scale 1": [], "in-sample": [], "held out": []}
    mean_errors: dict[str, list[float]] = {name: [] for name in errors}
    by_trace: dict[tuple[str, str], dict[float, float]] = {}
    for r in rows:
        by_trace.setdefault((str(r["workload"]), str(r["trace"])), {})[float(r["scale"])] = float(r["replayed_ms"])
    traced_of = {(str(r["workload"]), str(r["trace"])): float(r["traced_ms"]) for r in rows}
    setting_of_trace = {(str(r["workload"]), str(r["trace"])): str(r["setting"]) for r in rows}
    for key, replays in sorted(by_trace.items()):
        real = truth[key]
        setting = setting_of_trace[key]
        figures = {
            "traced": traced_of[key],
            "scale 1": replays[1.0],
            "in-sample": replays[fitted[setting]],
            "held out": replays[held[key[0]][setting]],
        }
        for name, value in figures.items():
            errors[name].append(abs(value / real - 1))
            mean_errors[name].append(abs(value / mean_truth[key] - 1))
        print(
            f"{key[0] + '.' + key[1]:44s} {real:8.2f} "
            + " ".join(f"{figures[n]:8.2f}" if n != "in-sample" else f"{figures[n]:10.2f}" for n in figures)
        )
    for title, table in (("against the median unprofiled step", errors), ("against the period", mean_errors)):
        print(f"\n{title}:")
        for name, values in table.items():
            within = sum(v <= 0.10 for v in values)
            print(
                f"{name:10s}: within 10% on {within} of {len(values)} ({100 * within / len(values):.0f}%), "
                f"median error {100 * statistics.median(values):.1f}%"
            )


if __name__ == "__main__":
    main()
