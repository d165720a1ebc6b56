"""Step figures against the program as it runs (issue 41): on the set of workloads written by others recorded on an
H200 (`sample_traces/steps/h200_programs/`, README there), each traced at several torch.profiler settings and timed
without the profiler first (CUDA events), print per trace:

- the trivial answer: the traced step taken as the step (what every trace reader reports);
- the replay without the profiler at the micro-benchmarks' per-event costs (scale 1);
- the replay at each setting's fitted scale, in sample (fitted on every workload) and held out (fitted on the other
  workloads, one workload left out at a time);
- the program checks: no "what to try" saving above the unprofiled step's idle time; a step >= 90% busy unprofiled
  called GPU-bound; the replay's interval holding the program's step.

- on a second recording (`sample_traces/steps/h200_programs_2/`: a second process of each program and setting,
  and three programs added after the fit), every trace held out at the first recording's scales, beside the
  noise floor: the first recording's unprofiled step of the same program and setting taken as the answer.

    python benchmarks/bench_steps.py [DIR] [--grid-csv PATH] [--second DIR2] [--second-grid-csv PATH]

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
from tracekit.analysis.steps.calibration import SCALES, best_scales, held_out_scales, shipped
from tracekit.analysis.steps.profiler_cost import fit, setting_of
from tracekit.analysis.steps.program import GPU_BOUND_PCT, analyze_program
from tracekit.analysis.steps.unprofiled import replay_without_profiler
from tracekit.steps import read_events

HERE = Path(__file__).resolve().parent
DEFAULT_DIR = HERE.parent / "sample_traces" / "steps" / "h200_programs"
SECOND_DIR = HERE.parent / "sample_traces" / "steps" / "h200_programs_2"


def grid(directory: Path, out: Path | None) -> list[dict[str, object]]:
    """Each trace replayed at every scale: its median step (ms). With `out`, rows already there are kept and each
    trace's rows are appended as soon as it is done (a long run can be resumed)."""
    cost_csv = DEFAULT_DIR / "profiler_cost.csv"  # the micro-benchmarks' per-event costs, on the same machine
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


def truths(directory: Path) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], float]]:
    """Per (workload, setting): the median step timed without the profiler, and the period (the mean step).
    Like with like: the replay's median step is judged against the median (the loaders' few slow steps pull the
    period 10-60% above it); the period is printed beside."""
    timings = list(csv.DictReader((directory / "timings.csv").read_text().splitlines()))
    median = {(r["workload"], r["setting"]): float(r["median_event_ms"]) for r in timings}
    period = {(r["workload"], r["setting"]): float(r["period_ms"]) for r in timings}
    return median, period


def summary(title: str, table: dict[str, list[float]]) -> None:
    print(f"\n{title}:")
    for name, values in table.items():
        if not values:
            continue
        within = sum(v <= 0.10 for v in values)
        print(
            f"{name:22s}: within 10% on {within} of {len(values)} ({100 * within / len(values):.0f}%), "
            f"median error {100 * statistics.median(values):.1f}%"
        )


def by_trace(rows: list[dict[str, object]]) -> dict[tuple[str, str], dict[float, float]]:
    """Each trace's replayed median step (ms) at each scale."""
    found: dict[tuple[str, str], dict[float, float]] = {}
    for r in rows:
        found.setdefault((str(r["workload"]), str(r["trace"])), {})[float(r["scale"])] = float(r["replayed_ms"])
    return found


def trace_facts(rows: list[dict[str, object]]) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], str]]:
    """Each trace's traced median step (ms) and the profiler setting it was recorded with."""
    traced = {(str(r["workload"]), str(r["trace"])): float(str(r["traced_ms"])) for r in rows}
    settings = {(str(r["workload"]), str(r["trace"])): str(r["setting"]) for r in rows}
    return traced, settings


def first_recording(rows: list[dict[str, object]], truth: dict, mean_truth: dict) -> dict[str, float]:
    """The fit on the first recording, in sample and each workload held out; returns the in-sample scales."""
    fitted = best_scales(rows, truth)  # in sample: every workload
    held = held_out_scales(rows, truth)
    print(f"scales fitted in sample (per setting): {fitted}")
    print(f"{'trace':44s} {'real ms':>8s} {'traced':>8s} {'scale 1':>8s} {'in-sample':>10s} {'held out':>9s}")
    errors: dict[str, list[float]] = {"traced": [], "scale 1": [], "in-sample": [], "held out": []}
    mean_errors: dict[str, list[float]] = {name: [] for name in errors}
    traced_of, setting_of_trace = trace_facts(rows)
    for key, replays in sorted(by_trace(rows).items()):
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
    summary("against the median unprofiled step", errors)
    summary("against the period", mean_errors)
    return fitted


def second_recording(
    rows: list[dict[str, object]], truth: dict, fitted: dict[str, float], first_truth: dict, first_workloads: set
) -> None:
    """A second process of each program and setting, and programs added after the fit: every figure here is held
    out (the scales are the first recording's). The noise floor: the first recording's unprofiled step of the same
    program and setting taken as this process's, the best any reading of another process can do."""
    print(f"\nsecond recording, at the first recording's scales {fitted} (every trace held out):")
    print(f"{'trace':44s} {'real ms':>8s} {'traced':>8s} {'scale 1':>8s} {'replayed':>9s} {'other process':>14s}")
    groups = ("same programs", "new programs")
    errors = {f"{name} ({group})": [] for group in groups for name in ("traced", "replayed", "other process")}
    traced_of, setting_of_trace = trace_facts(rows)
    for key, replays in sorted(by_trace(rows).items()):
        real = truth[key]
        group = groups[0] if key[0] in first_workloads else groups[1]
        replayed = replays[fitted[setting_of_trace[key]]]
        other = first_truth.get(key)
        figures = {"traced": traced_of[key], "replayed": replayed, "other process": other}
        for name, value in figures.items():
            if value is not None:
                errors[f"{name} ({group})"].append(abs(value / real - 1))
        print(
            f"{key[0] + '.' + key[1]:44s} {real:8.2f} {traced_of[key]:8.2f} {replays[1.0]:8.2f} {replayed:9.2f} "
            + (f"{other:14.2f}" if other is not None else f"{'-':>14s}")
        )
    summary("second recording, against its own median unprofiled step", errors)


def program_checks(directory: Path, truth: dict) -> None:
    """At the shipped calibration: no "what to try" saving above the idle the program really has (its unprofiled
    median step less the GPU's busy time in the step, give or take 10% of it and 1% of the step), and a step >= 90%
    busy unprofiled called GPU-bound with kernel advice only; and how often the replay's interval holds the program's
    step."""
    calibration = shipped()
    fits, bound_right, held, misses = 0, 0, 0, []
    for path in sorted(directory.glob("*.pt.trace.json.gz")):
        workload, setting = path.name.split(".")[:2]
        real_ns = truth[(workload, setting)] * 1e6
        found = analyze_program(read_events(path), calibration)
        held += found.low_ns <= real_ns <= found.high_ns
        shown = found.unprofiled.steps[found.unprofiled.representative_step]
        idle_ns = max(0.0, real_ns - shown.busy_ns)
        if all(s.saves_high_ns <= idle_ns * 1.10 + 0.01 * real_ns for s in found.unprofiled.what_to_try):
            fits += 1
        else:
            misses.append(f"{workload}.{setting}")
        busy = shown.busy_ns / real_ns >= GPU_BOUND_PCT / 100
        kernels_only = {s.kind for s in found.unprofiled.what_to_try} <= {"kernel"}
        bound_right += busy == found.gpu_bound and (not busy or kernels_only)
    count = len(list(directory.glob("*.pt.trace.json.gz")))
    print(f"\n{directory.name}: savings within the program's idle on {fits} of {count} (misses: {', '.join(misses)})")
    print(f"{directory.name}: GPU-bound called right (>= {GPU_BOUND_PCT}% busy unprofiled) on {bound_right} of {count}")
    print(f"{directory.name}: the replay's interval holds the program's median step on {held} of {count}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("directory", nargs="?", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--grid-csv", type=Path, help="keep the replays at every scale here (and resume from it)")
    parser.add_argument(
        "--second", type=Path, default=SECOND_DIR, help="a second recording, judged at the first one's scales"
    )
    parser.add_argument("--second-grid-csv", type=Path, help="the second recording's replays (and resume from it)")
    args = parser.parse_args()
    rows = grid(args.directory, args.grid_csv)
    truth, mean_truth = truths(args.directory)
    fitted = first_recording(rows, truth, mean_truth)
    program_checks(args.directory, truth)
    if args.second and args.second.exists():
        second_rows = grid(args.second, args.second_grid_csv)
        second_truth, _ = truths(args.second)
        workloads = {str(r["workload"]) for r in rows}
        second_recording(second_rows, second_truth, fitted, truth, workloads)
        program_checks(args.second, second_truth)


if __name__ == "__main__":
    main()
