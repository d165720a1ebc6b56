"""A job's cross-rank analysis as every view words it (`tracekit job`, the API's repr): the straggler and its
cause, each step's last rank, the clocks, numbers formatted by `tracekit.format`. Names from the traces (kernels,
files) are plain text here; each renderer escapes them for its medium."""

from __future__ import annotations

from tracekit import format as fmt
from tracekit.analysis.job.types import JobResult, StepStraggler

STEP_COLUMNS = ("step", "span", "last rank", "late by", "noise", "cause", "gain")


def headline(result: JobResult) -> str:
    found = result.straggler
    if found.rank is None:
        return (
            f"{fmt.plural(result.ranks, 'rank')}, {fmt.plural(result.steps, 'step')}: no straggler (no rank was last "
            "at most of the collectives late beyond the ranks' own step-to-step variation)"
        )
    cause = f", cause: {found.cause}" if found.cause else ""
    return (
        f"{fmt.plural(result.ranks, 'rank')}, {fmt.plural(result.steps, 'step')}: rank {found.rank} holds the job "
        f"back (last at {fmt.percent(100 * found.share)} of the late collectives, the straggler of "
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
