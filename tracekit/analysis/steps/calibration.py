"""The profiler calibration the step replay uses, and how its scale per setting is fitted.

The per-event costs come from micro-benchmarks (`profiler_cost.fit`): loops of one small operator, hot in cache.
In a real model the profiler costs more per event (more arguments and shapes to record, colder caches, larger
buffers to grow), so the replay scales each setting's costs by one factor fitted on whole training and inference
steps: the scale, on a grid, at which the replayed median steps of a set of workloads are nearest (mean relative
error) to the same workloads timed without the profiler. `benchmarks/bench_steps.py` prints the fit in sample, with
each recording and with each program held out; the shipped calibration below is the in-sample fit on three
recordings of 13 programs on an H200 (`sample_traces/steps/h200_programs*/`: 112 traces, each process's program one
draw of the profiler's cost, which varies from process to process by more than the events the trace counts say).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace

from tracekit.analysis.steps.profiler_cost import (
    CPU_CUDA,
    CUDA_ONLY,
    MEMORY,
    SHAPES,
    STACK,
    AfterTrace,
    Calibration,
    ProfilerCost,
)

SCALES = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0)
# one replay of a trace at one scale (benchmarks/bench_steps.py's grid): recording, workload, trace (its setting's
# name in the file), setting (read from the trace), scale, replayed_ms
GridRow = Mapping[str, object]
Truth = Mapping[tuple[str, str, str], float]  # (recording, workload, trace) -> the program's unprofiled step, ms


def _key(row: GridRow) -> tuple[str, str, str]:
    return str(row["recording"]), str(row["workload"]), str(row["trace"])


def _error(rows: Sequence[GridRow], truth: Truth, setting: str, scale: float) -> float:
    errors = [
        abs(float(r["replayed_ms"]) / truth[_key(r)] - 1)  # type: ignore[arg-type]
        for r in rows
        if r["setting"] == setting and float(r["scale"]) == scale  # type: ignore[arg-type]
    ]
    return statistics.fmean(errors) if errors else float("inf")


def best_scales(rows: Sequence[GridRow], truth: Truth) -> dict[str, float]:
    """Per setting, the grid's scale with the least mean relative error over `rows` (the smaller on a tie)."""
    settings = sorted({str(r["setting"]) for r in rows})
    return {s: min(SCALES, key=lambda scale: (_error(rows, truth, s, scale), scale)) for s in settings}


def held_out_scales(rows: Sequence[GridRow], truth: Truth, by: str) -> dict[str, dict[str, float]]:
    """For each value of `by` ("workload" or "recording"), the scales fitted on the rows of every other value: a
    program, or a whole recording, judged at a fit it took no part in."""
    values = sorted({str(r[by]) for r in rows})
    return {v: best_scales([r for r in rows if str(r[by]) != v], truth) for v in values}


# ---- the shipped calibration --------------------------------------------------------------------------------------

SHIPPED_SOURCE = (
    "shipped: NVIDIA H200, Intel Xeon (16 cores), torch 2.11.0+cu130, 2026-11-30; per-event costs from "
    "sample_traces/steps/h200_programs/profiler_cost.csv, scaled per setting to 13 programs' unprofiled steps "
    "in 112 processes (benchmarks/bench_steps.py)"
)
# micro-benchmark costs (profiler_cost.fit of profiler_cost.csv), ns per event
_MEASURED_NS: dict[str, dict[str, float]] = {
    CUDA_ONLY: {"cuda_runtime": 3108.0},
    CPU_CUDA: {"cpu_op": 700.0, "user_annotation": 9136.0, "cuda_runtime": 2324.0},
    SHAPES: {"cpu_op": 1271.0, "user_annotation": 8711.0, "cuda_runtime": 5767.0},
    MEMORY: {"user_annotation": 7435.0, "cuda_runtime": 3029.0, "memory": 1078.0},
    STACK: {"cpu_op": 1364.0, "python_function": 298.0, "user_annotation": 563.0, "cuda_runtime": 1316.0},
}
# what each event stands for in the bare program (profiler_cost.fit of the same loops' bare runs), ns per event: the
# replay's floor, not scaled (it is the program's own time, not the profiler's)
_BARE_NS: dict[str, float] = {
    "cpu_op": 709.0,
    "python_function": 108.0,
    "user_annotation": 10677.0,
    "cuda_runtime": 7549.0,
    "memory": 813.0,
}
# the scale per setting fitted in sample on the three recordings by benchmarks/bench_steps.py, with the bare floor
# (without it 5, 5, 3, 4, 6; on the first recording alone 4, 5, 3, 1 and 5: its two profile_memory traces set the 1)
SHIPPED_SCALES: dict[str, float] = {CUDA_ONLY: 5.0, CPU_CUDA: 6.0, SHAPES: 3.0, MEMORY: 4.0, STACK: 6.0}


# the programs' unprofiled steps after their trace over before it, the host-bound ones (those whose replay is not
# GPU-bound; the GPU-bound ones ran at 1.00x, CUPTI kept or not): CUPTI kept, the first two recordings (38 processes,
# quartiles 1.02-1.31); torn down, the third (28 processes, quartiles 0.91-1.03); benchmarks/bench_steps.py prints them
SHIPPED_AFTER_TRACE = AfterTrace(
    slowdown=1.17,
    torn_down=0.99,
    source="NVIDIA H200, torch 2.11.0+cu130: sample_traces/steps/h200_programs*/timings_after.csv",
)


# What CUPTI's record of one GPU activity costs the GPU (ns): the steps replayed from CUDA graphs, whose host has no
# part in their step (GPT-2 training from a graph, all three recordings at every setting: 418-509 ns an activity,
# the median 428), ran that much faster per activity than their traced GPU work; benchmarks/bench_steps.py prints it
SHIPPED_GPU_ACTIVITY_NS = 428.0


def with_gpu_activity(calibration: Calibration, gpu_activity_ns: float) -> Calibration:
    """The calibration with this GPU cost per recorded activity at every setting."""
    return Calibration(
        calibration.name,
        {s: replace(cost, gpu_activity_ns=gpu_activity_ns) for s, cost in calibration.costs.items()},
        calibration.after_trace,
    )


def scaled_like_shipped(measured: Calibration) -> Calibration:
    """A machine's micro-benchmark costs (`profiler_cost.fit`) scaled per setting as the shipped ones are: the loops
    measure an event's cost hot in cache, the programs pay the scale more (`tracekit calibrate --profiler`); the
    GPU's cost per activity is the shipped one (the loops measure the host's)."""
    return Calibration(
        measured.name,
        {
            setting: ProfilerCost(
                setting,
                {kind: ns * SHIPPED_SCALES.get(setting, 1.0) for kind, ns in cost.cost_ns.items()},
                cost.source,
                cost.bare_ns,
                SHIPPED_GPU_ACTIVITY_NS,
            )
            for setting, cost in measured.costs.items()
        },
        measured.after_trace,
    )


def shipped() -> Calibration:
    return Calibration(
        SHIPPED_SOURCE,
        {
            setting: ProfilerCost(
                setting,
                {kind: ns * SHIPPED_SCALES[setting] for kind, ns in costs.items()},
                SHIPPED_SOURCE,
                _BARE_NS,
                SHIPPED_GPU_ACTIVITY_NS,
            )
            for setting, costs in _MEASURED_NS.items()
        },
        SHIPPED_AFTER_TRACE,
    )
