"""A comparison of two sides (A against B) as every view shows it: `tracekit compare`'s table and gate messages,
as display strings, and its charts as plotly dicts (`comparison_charts`). The CLI, the reports, the dashboard's
compare page and the notebook lay these out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracekit import format as fmt
from tracekit.analysis.comparison import Comparison, FieldChange, GateOutcome, GateResult
from tracekit.analysis.source_line_changes import LineChanges
from tracekit.analysis.types import LaunchAnalysis
from tracekit.present.launch import TAIL_NOTE, TraceFrames
from tracekit.present.sections import Figure, Table
from tracekit.present.verdict import limit_label

MISSING = fmt.MISSING
number = fmt.number
percent = fmt.percent
fraction = fmt.fraction
duration = fmt.duration

FIELD_LABELS = {
    "duration_ns": ("duration", ""),
    "theoretical_occupancy_pct": ("occupancy, theoretical", "%"),
    "achieved_occupancy_pct": ("occupancy, achieved (Nsight)", "%"),
    "trace_occupancy_warps_per_sm": ("occupancy, from the trace", "warps/SM"),
    "throughput_warps_per_ns_per_sm": ("throughput per SM", ""),
    "mean_latency_ns": ("warp latency, mean", ""),
    "p50_latency_ns": ("warp latency, p50", ""),
    "p99_latency_ns": ("warp latency, p99", ""),
    "littles_law_relative_error": ("Little's law relative error", ""),
    "tail_ns": ("tail", ""),
    "tail_fraction": ("tail fraction", ""),
    "latency_stall_cycles_per_issue": ("latency stalls", "cycles/issue"),
    "bandwidth_stall_cycles_per_issue": ("bandwidth stalls", "cycles/issue"),
    "needed_occupancy_warps_per_sm": ("needed occupancy (sweep)", "warps/SM"),
}
UNCHANGED_BELOW = 1e-9  # relative change
FRACTION_FIELDS = {"littles_law_relative_error", "tail_fraction"}


def field_value(field_name: str, value: float | None) -> str:
    """A compared field's value in its display unit: times as durations, rates per µs, fractions as %."""
    if field_name in FRACTION_FIELDS:
        return fraction(value)
    if field_name.endswith("_pct"):
        return percent(value)
    if field_name.endswith("_ns"):
        return duration(value)
    if field_name.endswith("_per_ns_per_sm"):
        return fmt.per_ns_rate(value, "warps")
    return number(value)


def _value(change: FieldChange, value: float | None) -> str:
    return field_value(change.field, value)


def _signed(change: FieldChange) -> str:
    """The absolute change; for a percentage or fraction, in percentage points (12.5% -> 100% is +87.5 pts, not
    +87.5%, which would read as a relative change)."""
    if change.absolute_change is None:
        return MISSING
    sign = "+" if change.absolute_change >= 0 else "-"
    if change.field.endswith("_pct"):
        return f"{sign}{fmt.significant(abs(change.absolute_change), fmt.PERCENT_DIGITS)} pts"
    if change.field in FRACTION_FIELDS:
        return f"{sign}{fmt.significant(abs(change.absolute_change) * 100, fmt.PERCENT_DIGITS)} pts"
    return sign + _value(change, abs(change.absolute_change))


def change_note(change: FieldChange) -> str:
    if change.absolute_change is None:
        return ""
    if change.within_noise:
        return "within run-to-run spread"
    if change.relative_change is not None and abs(change.relative_change) < UNCHANGED_BELOW:
        return "unchanged"  # rounding noise of the float arithmetic, not a change anyone could see
    if change.improved is None:
        return "" if change.absolute_change == 0 else "changed"
    return "better" if change.improved else "worse"


def comparison_table(comparison: Comparison) -> Table:
    """One row per compared field; spreads are max - min over each side's launches."""
    rows = []
    for change in comparison.fields:
        if change.a is None and change.b is None:
            continue
        label, unit = FIELD_LABELS.get(change.field, (change.field, ""))
        rows.append(
            [
                label + (f" ({unit})" if unit and unit != "%" else ""),
                _value(change, change.a),
                _value(change, change.b),
                _signed(change),
                fraction(change.relative_change, signed=True),
                _value(change, change.spread_a) if change.spread_a is not None else MISSING,
                _value(change, change.spread_b) if change.spread_b is not None else MISSING,
                change_note(change),
            ]
        )
    for name, a, b in comparison.text_fields:
        shown_a, shown_b = (limit_label(a), limit_label(b)) if name == "occupancy_limiter" else (a, b)
        row = [name.replace("_", " "), shown_a or MISSING, shown_b or MISSING, "" if a == b else "changed"]
        rows.append([*row, "", "", "", ""])
    return Table(
        "A against B",
        ["field", "A", "B", "change", "relative", "spread A", "spread B", "note"],
        rows,
        note=f"A: {fmt.plural(comparison.launches_a, 'launch')}, B: {fmt.plural(comparison.launches_b, 'launch')}; "
        "a change no larger than either side's spread (max - min) is within the run-to-run spread.",
    )


@dataclass
class ComparedPair:
    """One matched pair of launch groups: what the comparison renderers draw from."""

    reference_a: str  # the command-line reference of side A (a path or an id)
    reference_b: str
    comparison: Comparison
    results_a: Sequence[LaunchAnalysis]
    results_b: Sequence[LaunchAnalysis]
    views_a: dict[str, Any] | None = None  # launch_aggregates of one traced launch of A, for the overlaid figures
    views_b: dict[str, Any] | None = None
    names: fmt.NameStyle = fmt.NameStyle.base  # how kernel names are shown
    lines: LineChanges | None = None  # A/B by source line, where both sides' launches have source samples


def _launch_ids(results: Sequence[LaunchAnalysis]) -> str:
    ids = ", ".join(number(r.launch_id) for r in results)
    return f"launch{'es' if len(results) != 1 else ''} {ids}"


def pair_heading(pair: ComparedPair) -> str:
    name_a = fmt.kernel_name(pair.comparison.kernel_a, pair.names)
    name_b = fmt.kernel_name(pair.comparison.kernel_b, pair.names)
    return f"A: {name_a} ({_launch_ids(pair.results_a)}) against B: {name_b} ({_launch_ids(pair.results_b)})"


def gate_message(result: GateResult) -> str:
    """What a gate found, in display units: "duration_ns>+5%: FAILED: duration changed by +20% (3 µs -> 3.6 µs)".
    A gate whose field is missing on a side cannot pass; the message says which side lacks it."""
    gate, change = result.gate, result.field_change
    if result.outcome is GateOutcome.NOT_EVALUATED:
        sides = result.missing_sides
        where = "both sides" if len(sides) == 2 else f"side {sides[0]}" if sides else "one side"
        return (
            f"{gate.text}: FAILED: cannot be evaluated, {gate.field} is missing on {where} "
            f"(a gate on a metric the inputs do not give fails; drop the gate or give inputs that have it)"
        )
    label = FIELD_LABELS.get(change.field, (gate.field.replace("_", " "), ""))[0]
    shown = fraction(result.change, signed=True) if gate.relative else _signed(change)
    noise = " (within the run-to-run spread)" if change.within_noise else ""
    return (
        f"{gate.text}: {'FAILED' if result.outcome is GateOutcome.FAILED else 'passed'}: {label} changed by {shown} "
        f"({field_value(change.field, change.a)} -> {field_value(change.field, change.b)}){noise}"
    )


@dataclass(frozen=True)
class ComparisonCharts:
    """The charts of A against B (`figures` in page order), and `note` where a side has no per-warp timings."""

    figures: list[Figure]
    note: str | None


def side_launch(results: Sequence[LaunchAnalysis]) -> LaunchAnalysis | None:
    """The launch that stands for a side in its charts: its first traced one (whose figure frames are drawn), else
    its first (its sweep); None for an empty side."""
    return next((r for r in results if r.warps is not None), results[0] if results else None)


def comparison_charts(
    results: Mapping[str, LaunchAnalysis | None], frames: Mapping[str, TraceFrames | None]
) -> ComparisonCharts:
    """A against B drawn: each side's occupancy over time in its own row, the time axes linked (its tail marked),
    the warp latency histograms overlaid as shares of each side's warps (the sides with `frames`: per-warp
    timings), and each side's sweep with its fitted min(n / L, B). `results` and `frames` by side ("A", "B"),
    in order: the launch that stands for the side (the traced one whose frames these are)."""
    from tracekit import figures  # plotly only where a chart is drawn (the text and Markdown views draw none)

    traced = {side: found for side, found in frames.items() if found is not None}
    charts: list[Figure] = []
    note = None
    if not traced:
        note = "Neither side has per-warp timings: no occupancy over time or latency histogram."
    elif len(traced) < len(frames):
        missing = " and ".join(side for side in frames if side not in traced)
        note = f"{missing} has no per-warp timings: only {' and '.join(traced)} is drawn."
    if traced:
        sides = " and ".join(traced)
        curves = {side: found.occupancy_curve for side, found in traced.items()}
        tails = {side: result.tail if (result := results.get(side)) is not None else None for side in traced}
        marks = (["Time axes linked: zoom one row and the other follows"] if len(traced) > 1 else []) + (
            [TAIL_NOTE] if any(tails.values()) else []
        )
        charts.append(
            Figure(
                "occupancy",
                f"Occupancy over time, {sides}",
                figures.compare_occupancy_spec(curves, tails),
                ". ".join(marks) + "." if marks else None,
            )
        )
        histograms = {side: found.latency_histogram for side, found in traced.items()}
        charts.append(
            Figure(
                "latency",
                f"Warp latency, {sides}",
                figures.overlay_latency_spec(histograms),
                "Each side's warps as a share of its own warps, overlaid.",
            )
        )
    sweeps = {side: sweep for side, result in results.items() if result is not None and (sweep := result.sweep)}
    if sweeps:
        charts.append(
            Figure(
                "sweep",
                f"Throughput against occupancy, {' and '.join(sweeps)}",
                figures.sweep_overlay_spec(sweeps),
                "Each side's measured launches (points) and its fitted min(n / L, B) (dashed).",
            )
        )
    return ComparisonCharts(charts, note)
