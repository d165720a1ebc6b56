"""Two traces of one step, before and after a change the user made (pinned memory, a sync removed, a CUDA graph,
a kernel's configuration): what each part of the step took in each and what moved, largest change first.

One trace says which cause is largest; a habit that costs little can be real and still smaller than the GPU's own
latency between kernels, which every version of the step pays. Set against the step without the change, the part
that grew is the change's cost, and a part that did not move is not the change's. A part grew only by more than one
step of the baseline varies (the 95% prediction interval of one more step, as the step what-if states it): less is
the trace's own noise. Each part is its mean over the trace's steps (a step's idle causes sum to its idle, so the
idle parts' changes sum to the idle's change); GPU time by category counts overlapping work on each stream, so those
changes add up to the busy change only where the streams do not overlap."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean

from tracekit.analysis.steps.types import StepsResult
from tracekit.analysis.steps.whatif import step_spread_ns

COMPARE_SCHEMA = "tracekit.step-compare/1"
IDLE, GPU = "idle", "GPU"


@dataclass(frozen=True)
class PartChange:
    """One part of the step: an idle cause (kind "idle") or a category's GPU time (kind "GPU"), per step."""

    kind: str
    part: str
    before_ns: int
    after_ns: int
    change_ns: int  # after - before


@dataclass(frozen=True)
class StepComparison:
    schema: str
    before_source: str | None
    after_source: str | None
    before_step_ns: int  # the median step
    after_step_ns: int
    before_busy_ns: int  # means per step
    after_busy_ns: int
    before_idle_ns: int
    after_idle_ns: int
    before_pageable_copy_ns: int
    after_pageable_copy_ns: int
    noise_ns: int  # how much one step of the baseline varies (half-width of its 95% prediction interval)
    changes: tuple[PartChange, ...]  # every part either trace has, the largest change (either way) first
    grew_most: PartChange | None  # the part that grew most; None when none grew by more than noise_ns


def _mean(values: list[int]) -> int:
    return round(fmean(values)) if values else 0


def _parts(result: StepsResult) -> dict[tuple[str, str], int]:
    """(kind, part) -> its mean per step; a part missing from a step counts 0 there."""
    totals: dict[tuple[str, str], int] = {}
    for step in result.steps:
        for cause in step.causes:
            key = (IDLE, cause.cause)
            totals[key] = totals.get(key, 0) + cause.idle_ns
        for category in step.categories:
            key = (GPU, category.category)
            totals[key] = totals.get(key, 0) + category.gpu_ns
    count = max(1, len(result.steps))
    return {key: round(total / count) for key, total in totals.items()}


def compare_steps(before: StepsResult, after: StepsResult) -> StepComparison:
    """The step without the change (`before`) set against the step with it (`after`)."""
    was, now = _parts(before), _parts(after)
    changes = sorted(
        (
            PartChange(kind, part, was.get(key, 0), now.get(key, 0), now.get(key, 0) - was.get(key, 0))
            for key in dict.fromkeys([*was, *now])
            for kind, part in [key]
            if was.get(key, 0) or now.get(key, 0)
        ),
        key=lambda c: (-abs(c.change_ns), c.kind, c.part),
    )
    noise = step_spread_ns([s.span_ns for s in before.steps])
    grew = max(changes, key=lambda c: c.change_ns, default=None)
    return StepComparison(
        schema=COMPARE_SCHEMA,
        before_source=before.source,
        after_source=after.source,
        before_step_ns=before.median_step_ns,
        after_step_ns=after.median_step_ns,
        before_busy_ns=_mean([s.busy_ns for s in before.steps]),
        after_busy_ns=_mean([s.busy_ns for s in after.steps]),
        before_idle_ns=_mean([s.idle_ns for s in before.steps]),
        after_idle_ns=_mean([s.idle_ns for s in after.steps]),
        before_pageable_copy_ns=_mean([s.pageable_copy_ns for s in before.steps]),
        after_pageable_copy_ns=_mean([s.pageable_copy_ns for s in after.steps]),
        noise_ns=noise,
        changes=tuple(changes),
        grew_most=grew if grew is not None and grew.change_ns > max(noise, 0) else None,
    )
