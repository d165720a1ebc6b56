"""The job figures as plotly dicts (`*_spec`, as every chart in `tracekit.figures`): the ranks-by-step heat map and
the straggler's step beside a typical rank's. They lay out what `tracekit.present.job` decided and worded (labels,
hover lines, colours' meaning); names from the traces go into plotly only as escaped text in customdata (plotly reads
a subset of HTML in hover text)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

HEAT_COLORS = [[0.0, "#f7fbff"], [0.5, "#fd8d3c"], [1.0, "#a50f15"]]
LANE_COLORS = {
    "compute": "#1f77b4",
    "collective": "#2ca02c",
    "loader": "#ff7f0e",
    "sync": "#9467bd",
    "host": "#d62728",
    "dropped": "#7f7f7f",
}


def _text(value: str) -> str:
    return html.escape(str(value), quote=False)


def job_heatmap_spec(
    ranks: Sequence[int],
    steps: Sequence[int],
    values_ms: Sequence[Sequence[float | None]],
    hover: Sequence[Sequence[str]],
    value_title: str,
) -> dict[str, Any]:
    """One row per rank, one column per step, colour = `values_ms[rank row][step column]` (None: no such step on the
    rank); `hover`: the worded cell, the same shape."""
    return {
        "data": [
            {
                "type": "heatmap",
                "x": [str(s) for s in steps],
                "y": [str(r) for r in ranks],
                "z": [list(row) for row in values_ms],
                "customdata": [[_text(cell) for cell in row] for row in hover],
                "hovertemplate": "%{customdata}<extra></extra>",
                "colorscale": HEAT_COLORS,
                "zmin": 0,
                "colorbar": {"title": {"text": _text(value_title)}},
            }
        ],
        "layout": {
            "height": max(260, min(900, 90 + 16 * len(ranks))),
            "margin": {"l": 60, "r": 10, "t": 10, "b": 40},
            "xaxis": {"title": {"text": "step"}, "type": "category"},
            "yaxis": {"title": {"text": "rank"}, "type": "category", "autorange": "reversed"},
        },
    }


@dataclass(frozen=True)
class TimelineGroup:
    """The bars of one legend entry: `lane` picks the colour, `label` the legend's words."""

    lane: str
    label: str
    rows: list[str]  # the rank's row label, per bar
    start_ns: list[int]
    end_ns: list[int]
    names: list[str]  # hover text per bar


def job_timeline_spec(groups: Sequence[TimelineGroup], row_order: Sequence[str]) -> dict[str, Any]:
    """Each rank's step as horizontal bars on its row (µs from the typical rank's step start, on one clock)."""
    data = []
    for group in groups:
        start_us = [s / 1000 for s in group.start_ns]
        width_us = [(e - s) / 1000 for s, e in zip(group.start_ns, group.end_ns, strict=True)]
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "x": width_us,
                "base": start_us,
                "y": group.rows,
                "name": _text(group.label),
                "marker": {"color": LANE_COLORS.get(group.lane, "#444444"), "line": {"width": 0}},
                "customdata": [[_text(n), s, w] for n, s, w in zip(group.names, start_us, width_us, strict=True)],
                "hovertemplate": "%{customdata[0]}<br>%{customdata[1]:.1f} µs, %{customdata[2]:.2f} µs long"
                "<extra></extra>",
            }
        )
    return {
        "data": data,
        "layout": {
            "barmode": "overlay",
            "height": 300,
            "margin": {"l": 150, "r": 10, "t": 10, "b": 40},
            "xaxis": {"title": {"text": "µs from the typical rank's step start (one clock)"}},
            "yaxis": {"type": "category", "categoryorder": "array", "categoryarray": list(reversed(row_order))},
            "legend": {"orientation": "h", "y": -0.3},
        },
    }
