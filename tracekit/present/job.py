"""A job's cross-rank analysis as every view words it (`tracekit job`, the job page, the reports' job section, the
API's repr): the straggler and its cause, each step's last rank, the clocks, the ranks-by-step heat map and the
straggler's step beside a typical rank's, numbers formatted by `tracekit.format`. Names from the traces (kernels,
files) are plain text here; each renderer escapes them for its medium."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tracekit import figures
from tracekit import format as fmt
from tracekit.analysis.job.straggler import MIN_STEPS
from tracekit.analysis.job.types import TIMELINE_LANES, JobResult, StepStraggler
from tracekit.analysis.job.unprofiled import REPLAY_ERROR_PCT
from tracekit.present.sections import Figure, Table

STEP_COLUMNS = ("step", "span", "last rank", "late by", "noise", "cause", "gain")


def program_line(result: JobResult) -> str:
    """Which program the figures describe: the job without the profiler (and its step beside the traced one), or
    as traced."""
    if not result.unprofiled:
        return f"as traced: step {fmt.duration(result.traced_step_ns)} (the profiler's own cost left in)"
    return (
        f"without the profiler: step {fmt.duration(result.step_ns)} ({fmt.duration(result.traced_step_ns)} traced); "
        f"recorded with {result.setting or 'an unknown setting'}, profiler cost taken out per "
        f"{result.calibration or 'no calibration'}"
    )


def headline(result: JobResult) -> str:
    """The job in one line: the rank late at the collectives step after step beyond its own step-to-step spread
    (a one-sided t test, `analysis.job.straggler`), or why none is named."""
    found = result.straggler
    job = f"{fmt.plural(result.ranks, 'rank')}, {fmt.plural(result.steps, 'step')}"
    late = f"{fmt.duration(found.late_per_step_ns)} late a step, t {found.t:.2f} against {found.t_needed:.2f} needed"
    if found.rank is None:
        if result.steps < MIN_STEPS:
            return f"{job}: no straggler (too few steps to tell a late rank from its own variation)"
        if found.withheld_gain_ns:
            step = result.step_ns or 1
            return (
                f"{job}: no straggler (the latest rank, {found.candidate}, is {late}, but it would save "
                f"{fmt.duration(found.withheld_gain_ns)} a step ({fmt.percent(100 * found.withheld_gain_ns / step)}), "
                f"within the replay's own error without the profiler ({fmt.percent(REPLAY_ERROR_PCT)} of the step))"
            )
        return (
            f"{job}: no straggler (the latest rank, {found.candidate}, is {late}: within its own step-to-step "
            "variation)"
        )
    cause = f", cause: {found.cause}" if found.cause else ""
    return (
        f"{job}: rank {found.rank} holds the job back ({late}; the straggler of "
        f"{fmt.plural(found.steps_named, 'step')}){cause}; without it each step would save "
        f"{fmt.duration(found.gain_ns)} ({fmt.percent(found.gain_pct)})"
    )


def step_rows(result: JobResult) -> list[dict[str, str]]:
    rows = []
    for step in result.step_stragglers:
        values = (
            str(step.step),
            fmt.duration(step.span_ns),
            "-" if step.rank is None else str(step.rank),
            fmt.duration(step.late_ns) if step.rank is not None else "-",
            fmt.duration(step.noise_ns),
            step.cause or "-",
            fmt.duration(step.gain_ns) if step.rank is not None else "-",
        )
        rows.append(dict(zip(STEP_COLUMNS, values, strict=True)))
    return rows


def cause_line(step: StepStraggler) -> str:
    """The straggler's excess of each kind in one step, and the kernels that ran longer."""
    parts = [f"{share.cause} {fmt.duration(share.excess_ns)}" for share in step.causes if share.excess_ns > 0]
    line = f"step {step.step}, rank {step.rank}: more than the median rank: " + (", ".join(parts) or "nothing")
    if step.longer_kernels:
        kernels = "; ".join(f"{k.name[:80]} +{fmt.duration(k.excess_ns)}" for k in step.longer_kernels[:3])
        line += f"; kernels that ran longer: {kernels}"
    return line


def clock_lines(result: JobResult) -> list[str]:
    lines = []
    for clock in result.clocks:
        sampled = ""
        if clock.sampled:
            sampled = (
                f"; SAMPLED: {clock.missing_launches} launches without GPU activity, "
                f"{fmt.duration(clock.dropped_ns)} dropped (not counted idle)"
            )
        lines.append(
            f"rank {clock.rank}: clock offset {fmt.duration(clock.offset_ns)} from "
            f"{fmt.plural(clock.collectives, 'collective')}{sampled}"
        )
    return lines


CLOCK_COLUMNS = ("rank", "clock offset", "collectives", "sampled", "dropped (not idle)", "trace")
LANE_WORDS = {
    "compute": "computation kernels",
    "collective": "collectives (NCCL)",
    "loader": "GPU idle: data loading",
    "sync": "GPU idle: host sync",
    "host": "GPU idle: host (Python)",
    "dropped": "dropped by the profiler (not idle)",
}
CAUSE_LINES_SHOWN = 5


def title(result: JobResult) -> str:
    return f"Job: {fmt.plural(result.ranks, 'rank')}, {fmt.plural(result.steps, 'step')}"


def step_table(result: JobResult) -> Table:
    rows = [list(row.values()) for row in step_rows(result)]
    return Table(
        "Each step's straggler",
        list(STEP_COLUMNS),
        rows,
        note="late by: its arrivals after the median rank's, summed over the collectives it was last to reach beyond "
        "the noise (the ranks' own step-to-step variation); gain: the step's time saved were it at the median",
    )


def clock_table(result: JobResult) -> Table:
    rows = [
        [
            str(c.rank),
            fmt.duration(c.offset_ns),
            f"{c.collectives:,}",
            f"yes: {c.missing_launches:,} launches without GPU activity" if c.sampled else "no",
            fmt.duration(c.dropped_ns) if c.sampled else "-",
            c.source,
        ]
        for c in result.clocks
    ]
    return Table(
        "Clocks",
        list(CLOCK_COLUMNS),
        rows,
        note=f"offsets from rank {result.clocks[0].rank}'s clock, from the ends of the collectives the ranks share "
        f"(matched by {result.matched_by})"
        if result.clocks
        else None,
    )


def cause_lines(result: JobResult) -> list[str]:
    """The straggler's excess in its first steps, and the typical rank it is set against."""
    lines = [cause_line(s) for s in result.step_stragglers if s.rank is not None][:CAUSE_LINES_SHOWN]
    return [*lines, f"typical rank (for comparison): {result.typical_rank}"]


def heatmap_figure(result: JobResult) -> Figure:
    """Ranks by step, coloured by how late each rank reached the step's collectives (after the median rank)."""
    ranks = sorted({c.rank for c in result.cells})
    steps = sorted({c.step for c in result.cells})
    at = {(c.rank, c.step): c for c in result.cells}
    values: list[list[float | None]] = []
    hover: list[list[str]] = []
    for rank in ranks:
        row_values: list[float | None] = []
        row_hover: list[str] = []
        for step in steps:
            cell = at.get((rank, step))
            row_values.append(cell.late_ns / 1e6 if cell else None)
            row_hover.append(
                f"rank {rank}, step {step}: late {fmt.duration(cell.late_ns)}; step {fmt.duration(cell.span_ns)}, "
                f"GPU busy {fmt.duration(cell.busy_ns)}, idle {fmt.duration(cell.idle_ns)}"
                + (f", dropped {fmt.duration(cell.dropped_ns)}" if cell.dropped_ns else "")
                if cell
                else f"rank {rank}, step {step}: no such step"
            )
        values.append(row_values)
        hover.append(row_hover)
    spec = figures.job_heatmap_spec(ranks, steps, values, hover, "late (ms)")
    return Figure(
        "ranks_by_step",
        "Ranks by step: how late each rank reached the step's collectives",
        spec,
        note="colour: the rank's arrivals at the step's collectives after the median rank's, summed (clocks "
        "corrected); hover for its step time, GPU busy and idle",
    )


def _row_label(rank: int, role: str) -> str:
    return f"rank {rank} ({role})"


def timeline_figure(result: JobResult) -> Figure | None:
    """The straggler's worst step beside the typical rank's same step, on one clock; None without a straggler."""
    if not result.timelines:
        return None
    groups = []
    for lane in TIMELINE_LANES:
        rows: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        names: list[str] = []
        for timeline in result.timelines:
            for bar in timeline.bars:
                if bar.lane == lane:
                    rows.append(_row_label(timeline.rank, timeline.role))
                    starts.append(bar.start_ns)
                    ends.append(bar.end_ns)
                    names.append(bar.name or LANE_WORDS[lane])
        if rows:
            groups.append(figures.TimelineGroup(lane, LANE_WORDS[lane], rows, starts, ends, names))
    order = [_row_label(t.rank, t.role) for t in result.timelines]
    first = result.timelines[0]
    typical = result.timelines[-1]
    heading = f"Step {first.step}: rank {first.rank} (straggler) beside rank {typical.rank} (typical)"
    spec = figures.job_timeline_spec(groups, order)
    return Figure(
        "straggler_timeline",
        heading,
        spec,
        note="the straggler's step where it was latest; both on the reference clock (offsets corrected), from the "
        "typical rank's step start; idle gaps coloured by what the host was doing",
    )


def job_figures(result: JobResult) -> list[Figure]:
    timeline = timeline_figure(result)
    return [heatmap_figure(result), *([timeline] if timeline else [])]


@dataclass(frozen=True)
class JobContent:
    """A job's section, as every renderer lays it out."""

    title: str
    headline: str
    lines: list[str]  # the straggler's cause step by step, the typical rank
    figures: list[Figure]
    tables: list[Table]
    warnings: list[str]


def job_content(
    result: JobResult, with_figures: bool = True, shown_names: Mapping[str, str] | None = None
) -> JobContent:
    """The section; `shown_names`: the name to show for a trace's path (the dashboard's uploads: the file's name,
    not the scratch copy's path)."""

    def shown(text: str) -> str:
        for path, name in (shown_names or {}).items():
            text = text.replace(path, name)
        return text

    clocks = clock_table(result)
    clocks = dataclasses.replace(clocks, rows=[[shown(cell) for cell in row] for row in clocks.rows])
    return JobContent(
        title=title(result),
        headline=headline(result),
        lines=[program_line(result), *cause_lines(result)],
        figures=job_figures(result) if with_figures else [],
        tables=[step_table(result), clocks],
        warnings=[shown(w) for w in result.warnings],
    )


def job_dict(result: JobResult) -> dict[str, Any]:
    """The job's one JSON shape (`tracekit.job/1`): `tracekit job --json`, the reports' JSON, the API."""
    return dataclasses.asdict(result)
