"""The neutral pieces a view of a launch is built from: a `Table` of display strings (numbers already written by
`tracekit.format`) and a `Figure` (a chart as plotly's own JSON), built once here and laid out by each renderer (the
report's HTML and Markdown, the dashboard's panels, the notebook, the terminal)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracekit import format as fmt
from tracekit.analysis.types import LaunchAnalysis
from tracekit.present.rules.notes import littles_law_explanation


@dataclass(frozen=True)
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str | None = None


@dataclass(frozen=True)
class Figure:
    """A chart as a plain plotly dict (`{"data": [...], "layout": {...}}`, `tracekit.figures.figure_spec`): the report
    embeds it as JSON, the dashboard's dcc.Graph and a notebook's plotly.io.to_html draw it as it is; none rebuilds
    it. `key` names it for a layout's ids ("speed_of_light", "roofline", "occupancy_time", ...); `note` says how
    to read it, where its marks need saying."""

    key: str
    title: str
    spec: dict[str, Any]
    note: str | None = None


LITTLES_LAW_COLUMNS = [
    "window",
    "from / to",
    "mean warp latency",
    "throughput per SM",
    "latency x throughput",
    "mean resident warps per SM",
    "relative error",
]


def _span(window: tuple[float, float] | list[float]) -> str:
    return f"{fmt.duration(window[0])} to {fmt.duration(window[1])}"


def littles_law_table(result: LaunchAnalysis) -> Table | None:
    """Both sides of occupancy = latency x throughput: in the steady-state window, the same with each warp counted
    only for its time inside the window, and over the whole launch (where it closes exactly: every warp lies
    inside). None for a launch without a warp trace."""
    law, warps = result.littles_law, result.warps
    if not law:
        return None
    detail, whole = law.detail, law.whole_launch
    kind = law.window_kind.replace("_", " ")

    def rate(per_ns: float | None) -> str:
        return fmt.per_ns_rate(per_ns, "warps")

    rows = [
        [
            kind,
            _span(law.window_ns),
            fmt.duration(detail.get("mean_latency_ns")),
            rate(detail.get("arrival_throughput_warps_per_ns_per_sm")),
            fmt.number(law.latency_x_throughput),
            fmt.number(law.mean_occupancy),
            fmt.fraction(law.relative_error, signed=True),
        ],
        [
            f"{kind}, clipped to the window",
            _span(law.window_ns),
            fmt.duration(detail.get("mean_clipped_latency_ns")),
            rate(detail.get("clipped_throughput_warps_per_ns_per_sm")),
            fmt.number(law.clipped_latency_x_throughput),
            fmt.number(law.mean_occupancy),
            fmt.fraction(law.clipped_relative_error, signed=True),
        ],
        [
            "whole launch",
            _span(whole.window_ns),
            fmt.duration(warps.mean_latency_ns if warps else None),
            rate(warps.throughput_warps_per_ns_per_sm if warps else None),
            fmt.number(whole.latency_x_throughput),
            fmt.number(whole.mean_occupancy),
            fmt.fraction(whole.relative_error, signed=True),
        ],
    ]
    return Table(
        "Little's law: occupancy = latency x throughput", LITTLES_LAW_COLUMNS, rows, note=littles_law_explanation(law)
    )
