"""Step what-if: the step replayed (critical_path.replay) with the launches of one kernel lasting what the
per-launch predictor says after a change; its interval from the prediction's own (the low and high speed-ups
replayed the same way)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tracekit.analysis.steps.calls import call_class
from tracekit.analysis.steps.critical_path import Op, replay, timeline
from tracekit.analysis.steps.types import Step
from tracekit.host_events import KERNEL, HostEvents


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
    low_ns: int  # the step time at the prediction's high speed-up, less the steps' own spread
    high_ns: int  # ... at its low speed-up, plus the spread
    spread_ns: int  # half the range of the trace's step spans: how much the same step varies run to run
    kernel_ns: int  # the changed launches' GPU time in the step now
    kernel_predicted_ns: int
    launches: int


def step_what_if(
    events: HostEvents,
    step: Step,
    speedups: Mapping[int, LaunchSpeedup],
    kernel: str,
    change: str,
    spans_ns: tuple[int, ...] = (),
) -> StepWhatIf:
    """The step replayed with each launch in `speedups` (by correlation id) sped up. The interval is the replay at
    the prediction's low and high speed-ups, widened by half the range of `spans_ns` (the trace's step spans): a
    step varies from run to run by that much whatever the kernel does."""
    calls = call_class(events.calls, events.gpu)
    line = timeline(events.gpu, calls, step)
    index, label = step.index, step.label
    changed = [o for o in line.ops if o.kind == KERNEL and o.correlation in speedups]

    def run(pick: str) -> int:
        def duration(op: Op) -> int:
            found = speedups.get(op.correlation) if op.kind == KERNEL and op.correlation is not None else None
            if found is None:
                return op.end - op.start
            return round((op.end - op.start) / getattr(found, pick))

        result = replay(line, duration)
        return result.end_ns - result.start_ns

    spread = (max(spans_ns) - min(spans_ns)) // 2 if spans_ns else 0
    base = replay(line)
    current = base.end_ns - base.start_ns
    kernel_ns = sum(o.end - o.start for o in changed)
    predicted_kernel = sum(round((o.end - o.start) / speedups[int(o.correlation or 0)].speedup) for o in changed)
    return StepWhatIf(
        step=index,
        label=label,
        kernel=kernel,
        change=change,
        current_ns=current,
        predicted_ns=run("speedup"),
        low_ns=run("high") - spread,
        high_ns=run("low") + spread,
        spread_ns=spread,
        kernel_ns=kernel_ns,
        kernel_predicted_ns=predicted_kernel,
        launches=len(changed),
    )
