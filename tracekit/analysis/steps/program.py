"""The steps as the program runs them, not as the profiler recorded them.

A traced step runs 1.15-3.4x slower than the program: the profiler's host work per event is part of every gap the
trace shows. `analyze_program` replays the trace without it (`unprofiled.replay_without_profiler`, the costs of the
setting the trace was recorded with from a `Calibration`), and analyses the replayed timeline exactly as it
analyses a trace: every figure the views lead with (step time, GPU busy share, idle by cause, critical path, what
to try) comes from that one replay; the traced analysis is kept beside it.

The interval of the unprofiled step is the replay with the costs at a third and at twice the calibration's (the
profiler's cost is a draw per process: the scale that put each of the set's 112 traced processes on its program's
step ranged that far around the fitted one, 12th to 92nd percentile), its ends moved by GPU_VARIATION for the GPU
work itself (the set's steps called GPU-bound ran within 1.5% below their replays, one at 4.1%, and up to 3% above
where the host had no part: kernels vary from process to process), widened to where the median of the
recorded steps that stand for the run could lie (`analysis.median_bounds_ns`: their range, of five or fewer). On
the set it holds the program's step on 90% of the processes, and on 95% of those of another machine it was not
fitted on (`benchmarks/bench_steps.py`). Not a t interval of one more step: a profiler schedule records two or
three steps, and from two a 95% interval is 15 times their difference (0 to 134 ms around ConvNeXt's 29 ms step).
Given the user's own step time (`anchor_ns`: a training log's figure), the replay is pinned to it: the cost scale
is the one at which the replayed median step equals it (bisection; the replay's step falls as the scale grows), and
how far the replay alone was from it is reported.

A step busy >= GPU_BOUND_PCT of its time without the profiler is GPU-bound: its idle is no longer where the time
goes, and what to try is about the kernels (the top kernels by GPU time in the step). Collectives with no
computation beside them do not count as busy there: on one rank of a job their kernels last until the last rank
arrives, so that time is the others' (`tracekit job` says whose), and a rank waiting in them is not GPU-bound.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl

from tracekit.analysis.steps.analysis import analyze_steps, median_bounds_ns, median_step_ns, standing_for_the_run
from tracekit.analysis.steps.profiler_cost import SETTINGS, UNCALIBRATED, AfterTrace, Calibration, setting_of
from tracekit.analysis.steps.types import StepsResult, Suggestion
from tracekit.analysis.steps.unprofiled import replay_without_profiler
from tracekit.host_events import KERNEL, HostEvents

PROGRAM_SCHEMA = "tracekit.program-steps/1"
GPU_BOUND_PCT = 90.0
COST_LOW, COST_HIGH = 0.33, 2.0  # the cost scales the interval is replayed at, times the calibration's (see the module)
GPU_VARIATION = 0.03  # the GPU work's own spread around the replay's, each way (see the module)
MAX_SCALE = 16.0  # the anchor's bisection searches scales up to this (past it the host's own work is all that is left)
ANCHOR_ITERATIONS = 10
TOP_KERNELS = 3
KERNEL_FIX = (
    "{share} of the step's GPU time, and the step is GPU-bound without the profiler: speed this kernel up "
    "(`tracekit step --kernel NAME --ncu PROFILE` predicts what a change buys the step)"
)


@dataclass(frozen=True)
class ProgramSteps:
    """One trace's steps without the profiler (`unprofiled`, what the views lead with) and as traced."""

    schema: str
    setting: str  # the profiler setting the trace was recorded with (profiler_cost.SETTINGS)
    calibration: str  # which calibration's per-event costs were taken out (or why none were)
    calibrated: bool  # whether any cost was taken out (an Nsight Systems trace: none is calibrated)
    cost_scale: float  # the costs' scale used: 1, or the one that meets the anchor
    unprofiled: StepsResult
    traced: StepsResult
    median_step_ns: int  # the unprofiled median step
    low_ns: int  # its interval (see the module)
    high_ns: int
    traced_step_ns: int
    gpu_bound: bool
    busy_pct: float  # the unprofiled representative step's GPU busy share
    # of its busy time, collectives with no computation beside them (on a rank of a job: waiting for the others)
    exposed_communication_ns: int = 0
    anchor_ns: int | None = None  # the user's own step time, if given
    replay_alone_ns: int | None = None  # the replay at the calibration's costs (scale 1), when anchored
    # what the profiler leaves behind once its trace ends, where it slows this program: a torch.profiler trace of a
    # step that is not GPU-bound (a GPU-bound program's later steps ran as before), with a calibration that has it
    after_trace: AfterTrace | None = None

    @property
    def profiler_slowdown(self) -> float:
        return self.traced_step_ns / self.median_step_ns if self.median_step_ns else 1.0


def _replayed(
    events: HostEvents, calibration: Calibration, setting: str, scale: float, step: str | None
) -> StepsResult:
    return analyze_steps(replay_without_profiler(events, calibration.for_setting(setting), scale), step)


def _replayed_median_ns(
    events: HostEvents, calibration: Calibration, setting: str, scale: float, step: str | None
) -> int:
    """The replay's median step alone (the interval's ends and the anchor's search read nothing else)."""
    return median_step_ns(replay_without_profiler(events, calibration.for_setting(setting), scale), step)


def _anchored_scale(
    events: HostEvents, calibration: Calibration, setting: str, step: str | None, anchor_ns: int
) -> float:
    """The cost scale whose replay's median step is nearest `anchor_ns` (bisection over [0, MAX_SCALE])."""
    low, high = 0.0, MAX_SCALE
    best = (float("inf"), 1.0)
    for _ in range(ANCHOR_ITERATIONS):
        middle = (low + high) / 2
        median = _replayed_median_ns(events, calibration, setting, middle, step)
        if abs(median - anchor_ns) < best[0]:
            best = (abs(median - anchor_ns), middle)
        if median > anchor_ns:
            low = middle  # still slower than the program: take more cost out
        else:
            high = middle
    return best[1]


def kernel_suggestions(events: HostEvents, traced: StepsResult) -> tuple[Suggestion, ...]:
    """A GPU-bound step's advice: its top kernels by GPU time over the recorded steps, each with its share (the
    saving is unknown until a change is predicted for it: 0 here; `tracekit step --kernel` replays one)."""
    if not traced.steps:
        return ()
    start, end = traced.steps[0].start_ns, traced.steps[-1].end_ns
    kernels = (
        events.gpu.filter((pl.col("kind") == KERNEL) & (pl.col("start_ns") >= start) & (pl.col("start_ns") < end))
        .group_by("name")
        .agg(gpu_ns=(pl.col("end_ns") - pl.col("start_ns")).sum())
        .sort("gpu_ns", "name", descending=[True, False])
    )
    total = kernels["gpu_ns"].sum() or 1
    return tuple(
        Suggestion("kernel", name or "", KERNEL_FIX.format(share=f"{100 * gpu_ns / total:.0f}%"), 0, 0, 0)
        for name, gpu_ns in kernels.head(TOP_KERNELS).iter_rows()
    )


def analyze_program(
    events: HostEvents, calibration: Calibration, step: str | None = None, anchor_ns: int | None = None
) -> ProgramSteps:
    """The trace's steps without the profiler and as traced (see the module)."""
    setting = setting_of(events)
    cost = calibration.for_setting(setting)
    traced = analyze_steps(events, step)
    alone = _replayed(events, calibration, setting, 1.0, step)
    scale = 1.0 if anchor_ns is None else _anchored_scale(events, calibration, setting, step, anchor_ns)
    unprofiled = alone if scale == 1.0 else _replayed(events, calibration, setting, scale, step)
    fast = _replayed_median_ns(events, calibration, setting, scale * COST_HIGH, step)
    slow = _replayed_median_ns(events, calibration, setting, scale * COST_LOW, step)
    shortest, longest = median_bounds_ns([s.span_ns for s in standing_for_the_run(unprofiled.steps)])
    shown = unprofiled.steps[unprofiled.representative_step] if unprofiled.representative_step is not None else None
    busy_pct = shown.busy_pct if shown else 0.0
    # a collective's kernel lasts until every rank has arrived: the part no computation ran beside is the GPU
    # waiting on the other ranks (or on the link), not busy with this rank's work
    exposed = shown.communication_ns - shown.communication_overlap_ns if shown else 0
    computing_pct = 100.0 * (shown.busy_ns - exposed) / shown.span_ns if shown and shown.span_ns else 0.0
    gpu_bound = computing_pct >= GPU_BOUND_PCT
    if gpu_bound:
        unprofiled = replace(unprofiled, what_to_try=kernel_suggestions(events, traced))
    median = unprofiled.median_step_ns
    return ProgramSteps(
        schema=PROGRAM_SCHEMA,
        setting=setting,
        calibration=cost.source if cost.cost_ns else UNCALIBRATED.format(setting=setting),
        calibrated=bool(cost.cost_ns),
        cost_scale=scale,
        unprofiled=unprofiled,
        traced=traced,
        median_step_ns=median,
        low_ns=min(round(fast * (1 - GPU_VARIATION)), median, shortest or median),
        high_ns=max(round(slow * (1 + GPU_VARIATION)), median, longest),
        traced_step_ns=traced.median_step_ns,
        gpu_bound=gpu_bound,
        busy_pct=busy_pct,
        exposed_communication_ns=exposed,
        anchor_ns=anchor_ns,
        replay_alone_ns=alone.median_step_ns if anchor_ns is not None else None,
        after_trace=calibration.after_trace if setting in SETTINGS and not gpu_bound else None,
    )
