"""The job put together from its ranks' tables (`rank.rank_tables`, concatenated by the reduce): clocks aligned,
the straggler of each step and of the job, its cause, and what the job would gain without it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from tracekit.analysis.job import align, cause, replay, straggler, unprofiled
from tracekit.analysis.job.align import KEY
from tracekit.analysis.job.types import (
    CAUSE_GROUPS,
    COMPUTE,
    JOB_SCHEMA,
    CollectiveArrival,
    JobResult,
    JobStraggler,
    RankClock,
    RankStepCell,
    RankTimeline,
    StepStraggler,
    TimelineBar,
)


class JobError(ValueError):
    """Ranks that cannot be lined up (fewer than two, no collective in common)."""


def _clocks(summary: pl.DataFrame, offsets: pl.DataFrame) -> tuple[RankClock, ...]:
    rows = summary.join(offsets, on="rank", how="left").sort("rank")
    return tuple(
        RankClock(
            rank=row["rank"],
            offset_ns=row["offset_ns"] or 0,
            collectives=row["collectives"] or 0,
            source=row["source"],
            sampled=row["sampled"],
            missing_launches=row["missing_launches"],
            dropped_ns=row["dropped_ns"],
        )
        for row in rows.iter_rows(named=True)
    )


def _cells(late: pl.DataFrame, steps: pl.DataFrame) -> tuple[RankStepCell, ...]:
    per_step = late.group_by("rank", "step").agg(pl.col("late_ns").clip(lower_bound=0).sum())
    rows = steps.join(per_step, on=["rank", "step"], how="left").sort("step", "rank")
    return tuple(
        RankStepCell(
            r["rank"],
            r["step"],
            r["end_ns"] - r["start_ns"],
            r["late_ns"] or 0,
            r["busy_ns"],
            r["idle_ns"],
            r["dropped_ns"],
        )
        for r in rows.iter_rows(named=True)
    )


def _timelines(
    rank_timeline: Callable[[list[int], int], pl.DataFrame],
    steps: pl.DataFrame,
    offsets: pl.DataFrame,
    straggler_rank: int,
    typical: int,
    step: int,
) -> tuple[RankTimeline, ...]:
    """The straggler's and the typical rank's `step` on the reference clock, from the typical rank's step start."""
    shift = dict(zip(offsets["rank"], offsets["offset_ns"], strict=True))
    starts = steps.filter((pl.col("rank") == typical) & (pl.col("step") == step))["start_ns"]
    if starts.is_empty():
        return ()
    origin = int(starts[0]) - shift.get(typical, 0)
    bars = rank_timeline([straggler_rank, typical], step)
    found = []
    for rank, role in ((straggler_rank, "straggler"), (typical, "typical")):
        mine = bars.filter(pl.col("rank") == rank).sort("start_ns")
        moved = shift.get(rank, 0) + origin
        found.append(
            RankTimeline(
                rank=rank,
                role=role,
                step=step,
                bars=tuple(
                    TimelineBar(lane, name or "", start - moved, end - moved)
                    for lane, name, start, end in mine.select("lane", "name", "start_ns", "end_ns").iter_rows()
                ),
            )
        )
    return tuple(found)


@dataclass(frozen=True)
class _Judged:
    table: pl.DataFrame  # the collectives, `counted` for the job's straggler
    step_rows: list[StepStraggler]
    typical: int
    mine: list[StepStraggler]  # the steps whose straggler is the job's
    gain_ns: int  # the job straggler's mean gain a step (0 without one)


def _judged(
    late: pl.DataFrame, spans: pl.DataFrame, kernel_time: Callable[[list[int]], pl.DataFrame], job_rank: int | None
) -> _Judged:
    """Each step's straggler, its cause and gain, given the job's straggler (None: none)."""
    table = straggler.counted(straggler.collective_table(late), job_rank)
    per_step = straggler.step_stragglers(table).join(spans, on="step", how="left")
    typical = _typical_rank(late, job_rank)
    named = sorted({int(r) for r in per_step["rank"].drop_nulls()})
    kernels = kernel_time(sorted({*named, typical}))
    step_rows = []
    for row in per_step.iter_rows(named=True):
        rank = row["rank"]
        shares = cause.excess_by_cause(late, table, rank, row["step"]) if rank is not None else ()
        found = cause.cause_of(shares)
        in_step = late.join(table.filter(pl.col("step") == row["step"]).select(KEY), on=KEY)
        step_rows.append(
            StepStraggler(
                step=row["step"],
                span_ns=round(row["span_ns"] or 0),
                rank=rank,
                late_ns=row["late_ns"],
                collectives_last=row["collectives_last"],
                spread_ns=row["spread_ns"],
                noise_ns=row["noise_ns"],
                cause=found,
                causes=shares,
                longer_kernels=cause.longer_kernels(kernels, rank, row["step"]) if found == COMPUTE else (),
                gain_ns=replay.step_gain_ns(in_step, rank, found) if rank is not None else 0,
            )
        )
    mine = [s for s in step_rows if job_rank is not None and s.rank == job_rank]
    gain = round(sum(s.gain_ns for s in mine) / len(step_rows)) if step_rows else 0
    return _Judged(table, step_rows, typical, mine, gain)


def _typical_rank(late: pl.DataFrame, exclude: int | None) -> int:
    """The rank whose arrivals stay nearest the median."""
    distance = late.group_by("rank").agg(pl.col("late_ns").abs().sum()).sort("late_ns", "rank")
    ranks = [r for r in distance["rank"] if r != exclude]
    return int(ranks[0] if ranks else distance["rank"][0])


def analyze_job(
    summary: pl.DataFrame,
    steps: pl.DataFrame,
    collectives: pl.DataFrame,
    kernel_time: Callable[[list[int]], pl.DataFrame],
    rank_timeline: Callable[[list[int], int], pl.DataFrame] | None = None,
) -> JobResult:
    """`summary`, `steps`, `collectives`: the ranks' tables concatenated; `kernel_time(ranks)`: rank, step, name,
    gpu_ns of the ranks asked (the stragglers and a typical rank), read only for them; `rank_timeline(ranks, step)`:
    rank, lane (`TIMELINE_LANES`), name, start_ns, end_ns of those ranks' GPU work and idle gaps in the step, on
    their own clocks (None: no timelines)."""
    ranks = summary["rank"].n_unique()
    if ranks < 2:
        raise JobError(f"a job needs two ranks or more, got {ranks}")
    shared = align.matched(collectives)
    if shared.height == 0:
        raise JobError("the ranks share no collective (process group, kind and sequence): not one job's traces")
    offsets = align.clock_offsets(shared)
    aligned = align.corrected(shared, offsets)
    replayed = unprofiled.has_replay(shared)
    traced_periods = unprofiled.step_periods(aligned)
    if replayed:
        aligned = unprofiled.without_profiler(aligned)
    periods = unprofiled.step_periods(aligned)
    late = straggler.arrivals(aligned)
    ranked = straggler.consistency(late)
    candidate = ranked.row(0, named=True)
    spans = steps.group_by("step").agg((pl.col("end_ns") - pl.col("start_ns")).median().alias("span_ns"))
    if replayed:  # a step's span is the loop's period, less what the replay saved (the first step: no period)
        spans = spans.join(periods, on="step", how="left").select(
            "step", pl.coalesce("period_ns", "span_ns").alias("span_ns")
        )
    median_step = float(spans["span_ns"].median() or 0)  # type: ignore[arg-type]
    job_rank = straggler.job_straggler(ranked)
    judged = _judged(late, spans, kernel_time, job_rank)
    withheld = 0
    if replayed and job_rank is not None and judged.gain_ns < unprofiled.REPLAY_ERROR_PCT / 100 * median_step:
        # late step after step, but by less than the replay itself errs: not told from the profiler's remains
        withheld, job_rank = judged.gain_ns, None
        judged = _judged(late, spans, kernel_time, None)
    table, step_rows, typical, mine, gain = judged.table, judged.step_rows, judged.typical, judged.mine, judged.gain_ns
    causes = Counter(s.cause for s in mine if s.cause)
    job_cause = causes.most_common(1)[0][0] if causes else None
    job = JobStraggler(
        rank=job_rank,
        share=straggler.share(table, job_rank),
        steps_named=len(mine),
        cause=job_cause,
        cause_group=CAUSE_GROUPS.get(job_cause) if job_cause else None,
        gain_ns=gain,
        gain_pct=100.0 * gain / median_step if median_step else 0.0,
        candidate=int(candidate["rank"]),
        late_per_step_ns=round(candidate["late_per_step_ns"]),
        t=float(candidate["t"]),
        t_needed=float(candidate["t_needed"]),
        withheld_gain_ns=withheld,
    )
    arrivals = tuple(
        CollectiveArrival(
            step=r["step"],
            process_group=r["process_group"],
            collective=r["collective"],
            sequence=r["sequence"],
            ranks=r["ranks"],
            last_rank=r["last_rank"],
            late_ns=r["late_ns"],
            noise_ns=r["noise_ns"],
            significant=r["significant"],
            counted=r["counted"],
        )
        for r in table.iter_rows(named=True)
    )
    clocks = _clocks(summary, offsets)
    timelines: tuple[RankTimeline, ...] = ()
    if rank_timeline is not None and job_rank is not None and job_rank != typical:
        theirs = late.filter(pl.col("rank") == job_rank).group_by("step").agg(pl.col("late_ns").sum())
        worst = int(theirs.sort("late_ns", "step", descending=[True, False])["step"][0])
        timelines = _timelines(rank_timeline, steps, offsets, job_rank, typical, worst)
    warnings = [
        f"rank {c.rank} ({c.source}): {c.missing_launches} launches have no GPU activity in the trace (sampled "
        f"or dropped events); {c.dropped_ns} ns of GPU gaps they would fill are not counted as idle"
        for c in clocks
        if c.sampled
    ]
    unmatched = sorted(set(summary["rank"]) - set(offsets["rank"]))
    if unmatched:
        warnings.append(f"ranks {unmatched} share no collective with the others and are left out")
    if candidate["steps"] < straggler.MIN_STEPS:
        warnings.append(
            f"{candidate['steps']} steps matched: too few to judge a rank's lateness against its step-to-step "
            f"variation ({straggler.MIN_STEPS} needed), so no job straggler is named; each step's last rank stands "
            "alone"
        )
    by_order = "order" in set(summary["matched_by"])
    if by_order:
        warnings.append("collectives matched by their order in each step (the traces carry no sequence numbers)")
    groups = summary["process_groups"] if "process_groups" in summary.columns else None
    if groups is not None and (groups.drop_nulls() > 1).any():
        warnings.append(
            "host collectives carry no process group: matched by kind and order over all the process groups"
        )
    return JobResult(
        schema=JOB_SCHEMA,
        ranks=ranks,
        steps=len(step_rows),
        matched_by="order" if by_order else "sequence",
        clocks=clocks,
        straggler=job,
        step_stragglers=tuple(step_rows),
        collectives=arrivals,
        cells=_cells(late, steps),
        typical_rank=typical,
        timelines=timelines,
        warnings=tuple(warnings),
        unprofiled=replayed,
        setting=_one(summary, "setting"),
        calibration=_one(summary, "calibration"),
        step_ns=_median(periods["period_ns"]) or round(median_step),
        traced_step_ns=_median(traced_periods["period_ns"]) or round(median_step),
    )


def _one(summary: pl.DataFrame, column: str) -> str | None:
    """The ranks' one value of `column` (the most common, where ranks differ), None where none has one."""
    if column not in summary.columns:
        return None
    found = summary[column].drop_nulls()
    return str(found.mode().sort()[0]) if found.len() else None


def _median(values: pl.Series) -> int:
    found = values.drop_nulls()
    return round(float(found.median())) if found.len() else 0  # type: ignore[arg-type]
