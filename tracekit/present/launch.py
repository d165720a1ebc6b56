"""One launch as every view shows it, as display strings: its headline, findings, What to try first, tables
(numbers written by `tracekit.format`) and the answer's charts as plotly dicts. The report's HTML and Markdown, the
dashboard and the notebook lay this out.

Everything here formats values that the analysis already computed; nothing is derived. Strings are raw: each
renderer escapes them for its own medium, so a kernel name is escaped exactly once, where it is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tracekit import format as fmt
from tracekit.analysis.regions import RegionAnalysis
from tracekit.analysis.tail import TailEffect
from tracekit.analysis.types import Kernel, LaunchAnalysis, Stalls, Sweep, Warps
from tracekit.present.prediction import PredictionTables, prediction_tables
from tracekit.present.rules.ceilings import unit_sentences
from tracekit.present.rules.notes import counters_evidence, fitted_note
from tracekit.present.sections import Figure, Table, littles_law_table
from tracekit.present.try_first import Tries, TryFirst, try_first
from tracekit.present.verdict import BLOCK_LIMITS, limit_label
from tracekit.present.verdict import verdict_text as verdict_text  # the one verdict line

MISSING = fmt.MISSING


@dataclass
class LaunchContent:
    """One launch's section: the verdict first, the answer's charts (`answer_figures`, when asked), then its
    tables."""

    anchor: str  # "launch-12", unique within a report
    launch_id: int | None
    kernel_name: str
    verdict: str  # "latency-bound by ..." as in classification.mode / limiter
    flags: list[str]
    evidence: list[str]
    advice: list[str]
    tables: list[Table] = field(default_factory=list)
    headline: str | None = None  # the engine's: what costs the most time (the launch page's first line)
    findings: list[tuple[float, str]] = field(default_factory=list)  # (share of SM time, sentence), largest first
    try_first: TryFirst | None = None  # What to try first: the predicted changes, or why there are none
    predictions: PredictionTables | None = None  # What to try first's changes, each as `tracekit predict`'s table
    figures: list[Figure] = field(default_factory=list)  # answer_figures, then launch_figures: plotly dicts


# ---- number formatting: tracekit.format, re-exported for the renderers ----------------------------------------

number = fmt.number
percent = fmt.percent
fraction = fmt.fraction
dims = fmt.dims
duration = fmt.duration


def warp_rate(per_ns: float | None) -> str:
    """Warps per ns per SM, read per µs: 0.4755 warps/µs per SM."""
    return MISSING if per_ns is None else f"{fmt.per_ns_rate(per_ns, 'warps')} per SM"


# ---- one launch -------------------------------------------------------------------------------------------------


def shared_memory(kernel: Kernel) -> str:
    """Shared memory per block, with its static and dynamic parts where both are recorded (the dynamic part is what
    the launch passes, the what-if's input)."""
    total, static, dynamic = (
        kernel.shared_mem_per_block_bytes,
        kernel.static_shared_mem_per_block_bytes,
        kernel.dynamic_shared_mem_per_block_bytes,
    )
    if static is None or dynamic is None:
        return fmt.size(total)
    return f"{fmt.size(total)} ({fmt.size(static)} static, {fmt.size(dynamic)} dynamic)"


def launch_table(result: LaunchAnalysis) -> Table:
    """What ran: the kernel, where it was read from, on which device, its launch configuration and duration."""
    kernel, source, device = result.kernel, result.source, result.kernel.device
    signature = fmt.kernel_name(kernel.name or kernel.mangled_name, fmt.NameStyle.full)
    rows = [
        ["kernel", fmt.kernel_name(kernel.name or kernel.mangled_name, fmt.NameStyle.base)],
        ["signature", signature],
    ]
    if kernel.mangled_name and kernel.mangled_name != signature:
        rows.append(["mangled name", kernel.mangled_name])
    rows += [
        ["launch id", number(result.launch_id)],
        [
            "source",
            f"{source.import_name or source.path or MISSING} "
            f"(import {number(source.import_id)}, {source.format or MISSING})",
        ],
        ["device", f"{device.name or MISSING} (CC {device.cc or MISSING}, {number(device.sm_count)} SMs)"],
        ["grid", dims(kernel.grid)],
        ["block", dims(kernel.block)],
        ["registers per thread", number(kernel.registers_per_thread)],
        ["shared memory per block", shared_memory(kernel)],
        ["duration", duration(result.duration_ns)],
        ["counters", counters_evidence(result)],
    ]
    if kernel.nvtx_path:
        rows.append(["NVTX ranges", kernel.nvtx_path])
    return Table("Launch", ["field", "value"], rows)


def occupancy_table(result: LaunchAnalysis) -> Table:
    occupancy, warps = result.occupancy, result.warps
    limits = occupancy.limits_blocks_per_sm
    limiter = occupancy.limiter
    rows = [
        [
            "theoretical",
            f"{percent(occupancy.theoretical_pct)} "
            f"({number(occupancy.theoretical_warps_per_sm)} of {number(occupancy.max_warps_per_sm)}"
            f" warps per SM)",
        ],
        ["limiter", limit_label(limiter)],
    ]
    for key in BLOCK_LIMITS:
        mark = " (limiter)" if key == limiter else ""
        rows.append([f"block limit: {limit_label(key)}", f"{number(getattr(limits, key))} blocks per SM{mark}"])
    rows += [
        ["active blocks per SM", number(occupancy.active_blocks_per_sm)],
        [
            "achieved (Nsight)",
            f"{percent(occupancy.achieved_pct)} ({number(occupancy.achieved_warps_per_sm)} warps per SM)",
        ],
        [
            "from the warp trace",
            f"{number(warps.mean_occupancy_warps_per_sm)} warps per SM" if warps else MISSING,
        ],
        ["waves per SM", number(occupancy.waves_per_sm)],
    ]
    return Table("Occupancy", ["field", "value"], rows)


def warps_table(warps: Warps) -> Table:
    return Table(
        "Warps (trace)",
        ["field", "value"],
        [
            ["warps", number(warps.count)],
            ["SMs", number(warps.sm_count)],
            ["span", duration(warps.span_ns)],
            ["latency mean", duration(warps.mean_latency_ns)],
            [
                "latency p50 / p90 / p99",
                " / ".join(duration(v) for v in (warps.p50_latency_ns, warps.p90_latency_ns, warps.p99_latency_ns)),
            ],
            ["latency max", duration(warps.max_latency_ns)],
            ["mean occupancy", f"{number(warps.mean_occupancy_warps_per_sm)} warps per SM"],
            [
                "throughput",
                f"{warp_rate(warps.throughput_warps_per_ns_per_sm)} "
                f"({number(warps.throughput_warps_per_cycle_per_sm)} warps per cycle per SM)",
            ],
        ],
    )


def tail_table(tail: TailEffect) -> Table:
    """The headline tail runs from when the first SM went idle for good to the last warp end; the time after the
    last block start (when no new warps arrive) is shown beside it."""
    return Table(
        "Tail",
        ["field", "value"],
        [
            [
                "tail (first SM idle to last warp end)",
                f"{duration(tail.tail_ns)} ({fraction(tail.tail_fraction)} of the span)",
            ],
            ["first SM idle for good", duration(tail.first_sm_idle_ns)],
            ["last block started", duration(tail.last_block_start_ns)],
            [
                "after the last block start",
                f"{duration(tail.after_last_block_start_ns)} ({fraction(tail.after_last_block_start_fraction)})",
            ],
            [
                "occupancy before / in the tail",
                f"{number(tail.mean_occupancy_before_tail_warps_per_sm)} / "
                f"{number(tail.mean_occupancy_in_tail_warps_per_sm)} warps per SM",
            ],
            [
                "SM finish times",
                f"{duration(tail.sm_finish_min_ns)} to {duration(tail.sm_finish_max_ns)} "
                f"(std {duration(tail.sm_finish_std_ns)})",
            ],
            ["SMs idle the whole launch", number(tail.idle_sms)],
        ],
    )


def stalls_table(stalls: Stalls) -> Table | None:
    if not stalls.by_reason:
        return None
    rows = [[reason, number(cycles)] for reason, cycles in sorted(stalls.by_reason.items(), key=lambda rv: -rv[1])]
    groups = (
        f"latency {number(stalls.latency_cycles_per_issue)}, bandwidth {number(stalls.bandwidth_cycles_per_issue)}, "
        f"other {number(stalls.other_cycles_per_issue)}"
    )
    return Table(
        "Stalls (warp cycles per issued instruction)",
        ["reason", "cycles per issue"],
        rows,
        note=f"groups: {groups}; total {number(stalls.total_cycles_per_issue)} (source: {stalls.source or MISSING})",
    )


def sweep_table(sweep: Sweep) -> Table:
    rows = [
        [
            number(p.launch_id),
            number(p.occupancy_warps_per_sm),
            fmt.per_ns_rate(p.throughput, "warps"),
            fmt.per_ns_rate(p.predicted_throughput, "warps"),
            str(p.regime or MISSING),
        ]
        for p in sweep.points
    ]
    return Table(
        "Occupancy sweep: throughput = min(n / L, B)",
        ["launch", "occupancy (warps/SM)", "throughput per SM", "model", "regime"],
        rows,
        note=f"L = {duration(sweep.latency_ns)}, B = "
        f"{warp_rate(sweep.throughput_bound_warps_per_ns_per_sm)}, needed occupancy "
        f"L x B = {number(sweep.needed_occupancy_warps_per_sm)} warps per SM, "
        f"largest gap near the knee {fraction(sweep.knee_gap_fraction)}. {fitted_note(sweep)}",
    )


def region_table(regions: RegionAnalysis) -> Table:
    """Per named region: latency, exclusive time, throughput and Little's law (warps in region = latency x
    throughput), in the trace's own unit (ns, or SM cycles when no clock converted them)."""
    unit = regions.time_unit
    rows = [
        [
            stats.region,
            number(stats.count),
            duration(stats.latency.mean) if unit == "ns" else number(stats.latency.mean, unit),
            fraction(stats.share_of_warp_time),
            number(stats.throughput_per_sm),
            number(stats.littles_law.mean_warps_in_region_per_sm),
            number(stats.littles_law.latency_x_throughput),
            fraction(stats.littles_law.relative_error, signed=True),
        ]
        for stats in regions.regions
    ]
    tail = regions.tail
    note = f"{regions.time_note}. {fmt.plural(regions.warp_count, 'warp')} on {fmt.plural(regions.sm_count, 'SM')}."
    if tail.dominant_region:
        note += f" The tail ({fraction(tail.tail_fraction)} of the span) is mostly {tail.dominant_region}."
    return Table(
        "Regions inside the kernel",
        [
            "region",
            "instances",
            "mean latency",
            "share of warp time (exclusive)",
            f"throughput (per {unit} per SM)",
            "mean warps in region per SM",
            "latency x throughput",
            "Little's law error",
        ],
        rows,
        note=note,
    )


ANSWER_FIGURE_HEIGHT = 300  # px: the launch page, the report and a notebook cell draw the answer's charts alike


def answer_figures(result: LaunchAnalysis, height: int = ANSWER_FIGURE_HEIGHT) -> list[Figure]:
    """The charts of the one-screen answer: each unit against its peak (speed of light) and the roofline under the
    ceilings that judged the launch; none for a launch without counters or without FLOPs (the roofline)."""
    from tracekit import figures  # plotly only where a chart is drawn (the Markdown report and the CLI draw none)

    found: list[Figure] = []
    sol = figures.speed_of_light_spec(result, height, unit_sentences(result.ceilings))
    if sol is not None:
        found.append(Figure("speed_of_light", "Speed of light", sol))
    roofline = result.ceilings.roofline if result.ceilings else None
    roof: dict[str, Any] | None = figures.roofline_spec(roofline, height=height) if roofline is not None else None
    if roof is not None and roofline is not None:
        found.append(Figure("roofline", f"Roofline ({roofline.ceilings_source.split(':')[0]} ceilings)", roof))
    return found


# ---- the trace's figures, the stalls and the sweep ----------------------------------------------------------------


@dataclass(frozen=True)
class TraceFrames:
    """A traced launch's figure aggregates, its warps reduced for its figures (`analysis/aggregates.py`): the report's
    (`api.launch_aggregates`) and the launch page's (`api.figure_aggregates`) are the same frames."""

    occupancy_curve: pl.DataFrame  # bin_start_ns, bin_end_ns, mean_active_warps_per_sm
    latency_histogram: pl.DataFrame  # latency_lo_ns, latency_hi_ns, warps
    activity: pl.DataFrame | None = None  # the whole launch binned on every SM (the warp timeline zoomed out)


def trace_frames(aggregates: Mapping[str, Any] | None) -> TraceFrames | None:
    """`api.launch_aggregates`' frames (the report's, a notebook's) as `TraceFrames`; None for a launch without
    warps (or with only regions in SM cycles)."""
    if not aggregates or "occupancy_over_time" not in aggregates:
        return None
    return TraceFrames(
        aggregates["occupancy_over_time"], aggregates["latency_histogram"], aggregates.get("activity_by_sm")
    )


TAIL_NOTE = (
    "Shaded: the tail, from the first SM idle for good (dotted) to the last warp's end; dashed: the last block's "
    "start (no new warps arrive after it)"
)
# The theoretical occupancy is drawn as a line unless it lies this far above the curve's peak (it would flatten
# the curve; the occupancy table gives it).
THEORETICAL_LINE_MAX_RATIO = 2.0


def timeline_chart(activity: pl.DataFrame) -> Figure:
    """The warps on the SMs zoomed out: mean resident warps per SM and time bin."""
    from tracekit import figures

    return Figure("warp_timeline", "Warps on the SMs", figures.sm_heatmap_spec(activity))


def occupancy_chart(curve: pl.DataFrame, result: LaunchAnalysis | None = None) -> Figure:
    """Mean resident warps per SM over time; with the analysis (`result`) the tail marked and the theoretical
    occupancy drawn where it does not flatten the curve."""
    from tracekit import figures

    tail = result.tail if result is not None else None
    theoretical = result.occupancy.theoretical_warps_per_sm if result is not None else None
    peak = curve["mean_active_warps_per_sm"].max() if curve.height else None
    if theoretical and theoretical > THEORETICAL_LINE_MAX_RATIO * float(peak or 0.0):  # type: ignore[arg-type]
        theoretical = None
    marks = ([TAIL_NOTE] if tail else []) + (["grey: the theoretical occupancy"] if theoretical else [])
    return Figure(
        "occupancy_time",
        "Occupancy over time",
        figures.occupancy_time_spec(curve, tail, theoretical),
        "; ".join(marks) + "." if marks else None,
    )


def latency_chart(histogram: pl.DataFrame) -> Figure:
    """Warps per latency bin."""
    from tracekit import figures

    return Figure("latency", "Warp latency", figures.latency_histogram_spec(histogram))


def stall_chart(result: LaunchAnalysis) -> Figure | None:
    """Warp cycles per issued instruction by stall reason; None without Nsight's stall metrics."""
    from tracekit import figures

    by_reason = result.stalls.by_reason
    return Figure("stalls", "Stall breakdown", figures.stall_spec(by_reason)) if by_reason else None


def launch_point(result: LaunchAnalysis) -> tuple[float, float] | None:
    """This launch's point in its kernel's sweep (or the one of the traced run that stands for it)."""
    if result.sweep is None:
        return None
    for point in result.sweep.points:
        if point.launch_id == result.launch_id:
            return point.occupancy_warps_per_sm, point.throughput
    return None


def sweep_chart(result: LaunchAnalysis) -> Figure | None:
    """Throughput against occupancy over the kernel's launches, the fitted min(n / L, B) and this launch's point;
    None without a sweep."""
    from tracekit import figures

    if result.sweep is None:
        return None
    spec = figures.sweep_spec(result.sweep, launch_point(result))
    return Figure("sweep", "Throughput against occupancy", spec)


def launch_figures(result: LaunchAnalysis, frames: TraceFrames | None) -> list[Figure]:
    """The launch's charts past the answer, in page order: its warps on the SMs (where `frames` hold the binned
    timeline), occupancy over time and warp latency (a traced launch), the stalls and the sweep (where recorded)."""
    found: list[Figure] = []
    if frames is not None:
        if frames.activity is not None and frames.activity.height:
            found.append(timeline_chart(frames.activity))
        found += [occupancy_chart(frames.occupancy_curve, result), latency_chart(frames.latency_histogram)]
    found += [chart for chart in (stall_chart(result), sweep_chart(result)) if chart is not None]
    return found


def launch_content(
    result: LaunchAnalysis,
    index: int = 0,
    names: fmt.NameStyle = fmt.NameStyle.base,
    tables: bool = True,
    tries: Tries = None,
    figures: bool = False,
    frames: TraceFrames | None = None,
) -> LaunchContent:
    """The display form of one analysis (without its tables when `tables` is False: a summary row's needs).
    `tries`: `api.what_to_try_for` of the launch (None: not predicted for this view), each predicted change also as
    `tracekit predict`'s table; `figures`: with its charts (a view that draws them), the trace's from `frames`."""
    verdict = result.classification
    launch_id = result.launch_id
    content = LaunchContent(
        anchor=f"launch-{launch_id}" if launch_id is not None else f"launch-n{index}",
        launch_id=launch_id,
        kernel_name=fmt.kernel_name(result.kernel.name or result.kernel.mangled_name, names),
        verdict=verdict_text(verdict),
        flags=list(verdict.flags),
        evidence=list(verdict.evidence),
        advice=list(verdict.advice),
        headline=verdict.headline,
        findings=[(f.sm_time_fraction, f.text) for f in verdict.findings],
    )
    if not tables:
        return content
    content.try_first = try_first(result, tries)
    if tries and not isinstance(tries, str):
        content.predictions = prediction_tables(tries, result, content.kernel_name)
    if figures:
        content.figures = answer_figures(result) + launch_figures(result, frames)
    content.tables = launch_tables(result)
    return content


def launch_tables(result: LaunchAnalysis) -> list[Table]:
    """The launch's tables in reading order, the ones its data has: launch, occupancy, warps, Little's law, tail,
    stalls, sweep, regions. Every view that shows a launch's tables shows these."""
    found = [launch_table(result), occupancy_table(result)]
    found += [warps_table(result.warps)] if result.warps else []
    found += [table for table in (littles_law_table(result),) if table is not None]
    found += [tail_table(result.tail)] if result.tail else []
    found += [table for table in (stalls_table(result.stalls),) if table is not None]
    found += [sweep_table(result.sweep)] if result.sweep else []
    found += [region_table(result.regions)] if result.regions else []
    return found


def index_table(results: Sequence[LaunchAnalysis], contents: list[LaunchContent]) -> Table:
    """The report's index; the first column is the launch's anchor, for renderers that link."""
    rows = []
    for result, content in zip(results, contents, strict=True):
        rows.append(
            [
                content.anchor,
                number(result.launch_id),
                content.kernel_name,
                duration(result.duration_ns),
                percent(result.occupancy.theoretical_pct),
                percent(result.occupancy.achieved_pct),
                content.verdict,
            ]
        )
    return Table(
        "Launches",
        ["anchor", "launch", "kernel", "duration", "theoretical occupancy", "achieved occupancy", "verdict"],
        rows,
    )
