"""Several ranks of one data-parallel job: each rank's trace cut into steps, aligned by step label (the
profiler's ProfilerStep#N is the same iteration on every rank) or, without labels in common, by order.

In a data-parallel step every rank waits in the gradient all-reduce for the slowest one, so step times even out
and the straggler shows as the rank that spent least time in communication (NCCL's kernels, or gloo's collectives
on host threads: the others' extra time there is waiting for it); each rank's wait is its communication time minus
the least any rank spent in that step.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracekit.analysis.steps.types import StepsResult


@dataclass(frozen=True)
class RankStep:
    rank: int
    span_ns: int
    busy_ns: int
    communication_ns: int
    communication_wait_ns: int


@dataclass(frozen=True)
class AlignedStep:
    label: str
    ranks: tuple[RankStep, ...]
    straggler: int | None  # the rank the others waited for; None when no rank communicated
    spread_ns: int  # longest minus shortest step span over the ranks


def align(results: list[StepsResult]) -> tuple[AlignedStep, ...]:
    """The steps every rank has, in order (ranks numbered as their traces say, else by position)."""
    ranks = [r.rank if r.rank is not None else i for i, r in enumerate(results)]
    by_label = [{s.label: s for s in r.steps} for r in results]
    common = [s.label for s in results[0].steps if all(s.label in labels for labels in by_label)]
    if len(set(common)) != len(common) or not common:  # repeated labels ("0" of patterns): by order
        count = min(len(r.steps) for r in results)
        rows = [[r.steps[i] for r in results] for i in range(count)]
        labels = [results[0].steps[i].label for i in range(count)]
    else:
        rows = [[labels[label] for labels in by_label] for label in common]
        labels = common
    aligned = []
    for label, steps in zip(labels, rows, strict=True):
        least = min(s.communication_ns for s in steps)
        per_rank = tuple(
            RankStep(rank, s.span_ns, s.busy_ns, s.communication_ns, s.communication_ns - least)
            for rank, s in zip(ranks, steps, strict=True)
        )
        communicated = any(s.communication_ns for s in steps)
        straggler = min(per_rank, key=lambda r: (r.communication_ns, -r.busy_ns)).rank if communicated else None
        spans = [s.span_ns for s in steps]
        aligned.append(AlignedStep(label, per_rank, straggler, max(spans) - min(spans)))
    return tuple(aligned)
