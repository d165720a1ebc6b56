"""Step what-if: the step replayed (critical_path.replay) with the launches of one kernel lasting what the
per-launch predictor says after a change, and an interval that holds the two uncertainties present.

- The kernel's duration: the predictor's interval is a range (the alternatives its model cannot tell apart, plus
  the effects it cannot see), not a distribution with a stated coverage. It maps through the replay, not through
  the kernel's own saving: the step is replayed with every changed launch at its shortest and at its longest
  predicted duration (the step gains only what its critical path gains).
- The step's own variation: the same step takes a different time every time it runs (clocks, queueing, the host).
  Its half-width is the 95% prediction interval of one new step from the trace's n step spans, t(0.975, n-1) x s x
  sqrt(1 + 1/n) (s: their sample standard deviation; Hahn and Meeker, *Statistical Intervals*, 2nd ed., sec. 4.4;
  NIST/SEMATECH e-Handbook 7.1.4), assuming normal step-to-step variation.

The two combine by adding the half-widths (the union, over every kernel duration in the predictor's range, of the
step's 95% interval around its replay), not in quadrature: a quadrature sum (GUM) needs each part as a standard
deviation, and a range of model alternatives is none (treating it as uniform would invent a distribution the
predictor never claimed). So: if the kernel's duration lies inside the predictor's range, one step of the changed
program lies inside the interval with 95% probability.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tracekit.analysis.steps.analysis import device_events
from tracekit.analysis.steps.calls import call_class
from tracekit.analysis.steps.critical_path import Op, StepTimeline, replay, timeline
from tracekit.analysis.steps.types import Step
from tracekit.host_events import KERNEL, HostEvents

# Student's t, 0.975 quantile (two-sided 95%), by degrees of freedom 1..30 (any table of the t distribution,
# e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2); beyond 30 the Cornish-Fisher expansion around the normal's 1.959964
# (Abramowitz and Stegun 26.7.5) is within 0.001 of it.
T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
Z_975 = 1.959964


def t_975(dof: int) -> float:
    """Student's t 0.975 quantile for `dof` >= 1 degrees of freedom."""
    if dof < 1:
        raise ValueError("Student's t needs at least one degree of freedom")
    if dof <= len(T_975):
        return T_975[dof - 1]
    z = Z_975
    return z + (z**3 + z) / (4 * dof) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * dof**2)


def step_spread_ns(spans_ns: Sequence[int]) -> int:
    """Half-width of the 95% prediction interval of one more step, from the spans of the steps recorded (0 with
    fewer than two: one step says nothing of how steps vary)."""
    n = len(spans_ns)
    if n < 2:
        return 0
    return math.ceil(t_975(n - 1) * statistics.stdev(spans_ns) * math.sqrt(1 + 1 / n))


@dataclass(frozen=True)
class LaunchSpeedup:
    """What the per-launch prediction says for one launch (by its launch call's correlation id)."""

    speedup: float
    low: float
    high: float


@dataclass(frozen=True)
class StepWhatIf:
    step: int
    label: str
    kernel: str
    change: str
    current_ns: int
    predicted_ns: int
    low_ns: int  # the step replayed at the prediction's high speed-up, less the step's own spread
    high_ns: int  # ... at its low speed-up, plus the spread
    spread_ns: int  # half-width of the 95% prediction interval of one step, from the trace's step spans
    spread_steps: int  # how many step spans it was estimated from
    kernel_ns: int  # the changed launches' GPU time in the step now
    kernel_predicted_ns: int
    launches: int


def step_line(events: HostEvents, step: Step) -> StepTimeline:
    """The step's activities on its device (the one its steps were measured on) with their launch calls: built
    once and replayed for every change."""
    gpu, _ = device_events(events)
    return timeline(gpu, call_class(events.calls, gpu), step)


def step_what_if(
    line: StepTimeline,
    step: Step,
    speedups: Mapping[int, LaunchSpeedup],
    kernel: str,
    change: str,
    spans_ns: Sequence[int] = (),
) -> StepWhatIf:
    """`step` (its timeline `line`, `step_line`) replayed with each launch in `speedups` (by correlation id) sped
    up; the interval as the module says, the step's spread from `spans_ns` (the trace's step spans)."""
    changed = [o for o in line.ops if o.kind == KERNEL and o.correlation in speedups]

    def run(pick: str) -> int:
        def duration(op: Op) -> int:
            found = speedups.get(op.correlation) if op.kind == KERNEL and op.correlation is not None else None
            if found is None:
                return op.end - op.start
            return round((op.end - op.start) / getattr(found, pick))

        result = replay(line, duration)
        return result.end_ns - result.start_ns

    spread = step_spread_ns(spans_ns)
    base = replay(line)
    current = base.end_ns - base.start_ns
    kernel_ns = sum(o.end - o.start for o in changed)
    predicted_kernel = sum(round((o.end - o.start) / speedups[int(o.correlation or 0)].speedup) for o in changed)
    predicted = run("speedup")
    return StepWhatIf(
        step=step.index,
        label=step.label,
        kernel=kernel,
        change=change,
        current_ns=current,
        predicted_ns=predicted,
        low_ns=min(run("high"), predicted) - spread,
        high_ns=max(run("low"), predicted) + spread,
        spread_ns=spread,
        spread_steps=len(spans_ns),
        kernel_ns=kernel_ns,
        kernel_predicted_ns=predicted_kernel,
        launches=len(changed),
    )
