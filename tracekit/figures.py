"""Plotly figures for the dashboard and the HTML report, from frames already computed (nothing is analysed here).

Frames come from `tracekit.analysis.timeline`, in ns since the launch's first warp start; the figures draw µs.
No string from an input file is put into a figure (plotly renders a subset of HTML in its text), except region
names, escaped (see the region section).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from typing import Any

import plotly.graph_objects as go
import polars as pl

from tracekit.analysis.classification import UnitUtilization
from tracekit.analysis.roofline import Roof, Roofline
from tracekit.analysis.sweep import model_throughput
from tracekit.analysis.tail import TailEffect
from tracekit.analysis.types import LaunchAnalysis, Sweep

TIME_AXIS_TITLE = "time since the first warp started (µs)"
SIDE_COLORS = {"A": "#1f77b4", "B": "#d62728"}
BAR_COLORS = ("#1f77b4", "#ff7f0e")  # alternate by block, so neighbouring blocks' warps stay apart


def figure_spec(data: list[dict[str, Any]], layout: dict[str, Any]) -> dict[str, Any]:
    """A figure as plotly's own JSON (`data` and `layout`, titles as {"text": ...}): what the neutral sections carry
    (`tracekit.present`) and every layout draws as it is: the report embeds it, the dashboard's dcc.Graph and a
    notebook's plotly.io.to_html take it without building a figure."""
    return {"data": data, "layout": layout}


def unchecked_figure(data: list[dict[str, Any]], layout: dict[str, Any]) -> go.Figure:
    """A figure from traces and a layout written in plotly's own schema (titles as {"text": ...}), built without
    plotly's validation, which cost most of a 1,000-launch report's drawing: for figures whose values the engine
    produced and checked."""
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def plot_height(rows: int, px_per_row: int = 14) -> int:
    return max(320, min(900, 80 + px_per_row * rows))


def _time_layout(
    y_title: str, rows: int, x_range_us: tuple[float, float] | None, px_per_row: int = 14
) -> dict[str, Any]:
    """The layout of a figure over the launch's time (µs since its first warp started)."""
    xaxis: dict[str, Any] = {"title": {"text": TIME_AXIS_TITLE}, "autorange": x_range_us is None}
    if x_range_us:
        xaxis["range"] = list(x_range_us)
    return {
        "height": plot_height(rows, px_per_row),
        "margin": {"l": 70, "r": 20, "t": 30, "b": 50},
        "xaxis": xaxis,
        "yaxis": {"title": {"text": y_title}},
        "showlegend": False,
        "plot_bgcolor": "white",
    }


def to_us(ns):
    """ns to µs, for a number, a polars Series or an expression."""
    return ns / 1000.0


def sm_heatmap_spec(binned: pl.DataFrame, x_range_us: tuple[float, float] | None = None) -> dict[str, Any]:
    """Zoomed out: one row per SM, colour = mean resident warps in each time bin (from `binned_activity`)."""
    ordered = binned.sort("sm_id", "bin_start_ns")
    sm_ids = ordered["sm_id"].unique(maintain_order=True).to_list()
    first_sm = ordered.filter(pl.col("sm_id") == sm_ids[0]) if sm_ids else ordered
    centers_us = to_us((first_sm["bin_start_ns"] + first_sm["bin_end_ns"]) / 2).to_list()
    bins = len(centers_us)
    values = ordered["mean_active_warps"].to_list()
    z = [values[row * bins : (row + 1) * bins] for row in range(len(sm_ids))]
    heatmap = {
        "type": "heatmap",
        "x": centers_us,
        "y": sm_ids,
        "z": z,
        "colorscale": "Viridis",
        "zmin": 0,
        "zmax": max(max(values, default=0), 1),
        "colorbar": {"title": {"text": "mean resident warps"}},
        "hovertemplate": "SM %{y}<br>%{x:.3f} µs<br>%{z:.2f} warps resident<extra></extra>",
    }
    return figure_spec([heatmap], _time_layout("SM", len(sm_ids), x_range_us))


def _step_line(start_ns: pl.Series, warps: pl.Series, what: str) -> dict[str, Any]:
    """Warps over time as a filled step line (a bin's value holds until the next bin starts)."""
    return {
        "type": "scatter",
        "x": to_us(start_ns).to_list(),
        "y": warps.to_list(),
        "mode": "lines",
        "line": {"shape": "hv"},
        "fill": "tozeroy",
        "hovertemplate": f"%{{x:.3f}} µs: %{{y:.2f}} {what}<extra></extra>",
    }


def sm_activity_spec(binned: pl.DataFrame, sm_id: int, x_range_us: tuple[float, float] | None = None) -> dict[str, Any]:
    """Zoomed out on one SM: mean resident warps per time bin, as a step line."""
    one_sm = binned.filter(pl.col("sm_id") == sm_id).sort("bin_start_ns")
    line = _step_line(one_sm["bin_start_ns"], one_sm["mean_active_warps"], "warps resident")
    return figure_spec([line], _time_layout(f"warps resident on SM {sm_id}", 20, x_range_us))


def warp_bars_spec(
    warps: pl.DataFrame, sm_id: int | None = None, x_range_us: tuple[float, float] | None = None
) -> dict[str, Any]:
    """Zoomed in: each warp a horizontal bar from its start to its end.

    `warps` is `timeline.warps_in_window` output (relative times and a `slot` per warp). With `sm_id` the y axis
    is the warp slot on that SM (Volkov's figure); without it each SM's row is split into its slots. Three points
    per warp.
    """
    if sm_id is not None:
        warps = warps.filter(pl.col("sm_id") == sm_id)
    top_slot = warps["slot"].max()  # an Int32 column: an int, or None when no warp is shown
    slot_count = top_slot + 1 if isinstance(top_slot, int) else 1
    if sm_id is not None:
        row = pl.col("slot").cast(pl.Float64)
        y_title, slot_rows = f"warp slot on SM {sm_id}", slot_count
    else:
        row = pl.col("sm_id") - 0.45 + (pl.col("slot") + 0.5) * (0.9 / slot_count)
        y_title = "SM (each row split into warp slots)"
        slot_rows = (warps["sm_id"].n_unique() if warps.height else 1) * slot_count
    # Bars as thick as their row allows, so neighbouring slots never merge.
    bar_px = max(1.0, min(8.0, 0.6 * (plot_height(slot_rows, 6) - 80) / slot_rows))
    drawn = warps.with_columns(
        row.alias("y"), to_us(pl.col("start_rel_ns")).alias("x0"), to_us(pl.col("end_rel_ns")).alias("x1")
    )
    traces = []
    for parity in (0, 1):
        part = drawn.filter(pl.col("block_id") % 2 == parity)
        bars = (
            (x0, x1, y, [sm, block, warp, x0, x1])
            for x0, x1, y, sm, block, warp in part.select(
                "x0", "x1", "y", "sm_id", "block_id", "warp_in_block"
            ).iter_rows()
        )
        traces.append(
            _bar_trace(
                bars,
                line={"width": bar_px, "color": BAR_COLORS[parity]},
                hovertemplate=(
                    "SM %{customdata[0]}, block %{customdata[1]}, warp %{customdata[2]}<br>"
                    "%{customdata[3]:.3f} to %{customdata[4]:.3f} µs<extra></extra>"
                ),
            )
        )
    return figure_spec(traces, _time_layout(y_title, slot_rows, x_range_us, px_per_row=6))


def occupancy_time_spec(
    curve: pl.DataFrame, tail: TailEffect | None = None, theoretical_warps_per_sm: float | None = None
) -> dict[str, Any]:
    """GPU-wide mean resident warps per SM over time (`aggregates.occupancy_over_time`), as a step line.

    With the result's `tail`: the tail shaded from the first SM idle for good (dotted) to the last warp's end, and
    a dashed line where the last block started. With the theoretical occupancy: a grey line at that ceiling.
    """
    line = {"name": "occupancy", **_step_line(curve["bin_start_ns"], curve["mean_active_warps_per_sm"], "warps per SM")}
    layout = {**_time_layout("mean resident warps per SM", 0, None), "height": 320}
    shapes, notes = tail_marks(tail) if tail else ([], [])
    if theoretical_warps_per_sm:
        shapes.append(_line(0, 1, theoretical_warps_per_sm, theoretical_warps_per_sm, "dash", "gray", "x domain", "y"))
        notes.append(_note("theoretical", 0, theoretical_warps_per_sm, "left", "top", "x domain", "y"))
    if shapes:
        layout.update(shapes=shapes, annotations=notes)
    return figure_spec([line], layout)


def _line(x0: float, x1: float, y0: float, y1: float, dash: str, color: str, xref: str, yref: str) -> dict[str, Any]:
    return {
        "type": "line",
        "xref": xref,
        "yref": yref,
        "x0": x0,
        "x1": x1,
        "y0": y0,
        "y1": y1,
        "line": {"dash": dash, "color": color},
    }


def _note(text: str, x: float, y: float, xanchor: str, yanchor: str, xref: str, yref: str) -> dict[str, Any]:
    return {
        "text": text,
        "x": x,
        "y": y,
        "xref": xref,
        "yref": yref,
        "xanchor": xanchor,
        "yanchor": yanchor,
        "showarrow": False,
    }


def tail_marks(tail: TailEffect, axis: str = "") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The tail shaded (the first SM idle for good to the last warp's end: the GPU no longer fully used) and the
    last block's start marked (from then on no new warps arrive), as layout shapes and annotations on the axes
    x{axis}, y{axis} ("" for a figure's first)."""
    xref, yref = f"x{axis}", f"y{axis} domain"
    idle_us, end_us, last_us = to_us(tail.first_sm_idle_ns), to_us(tail.span_ns), to_us(tail.last_block_start_ns)
    rect = {
        "type": "rect",
        "xref": xref,
        "yref": yref,
        "x0": idle_us,
        "x1": end_us,
        "y0": 0,
        "y1": 1,
        "fillcolor": "orange",
        "opacity": 0.2,
        "line": {"width": 0},
    }
    shapes = [
        rect,
        _line(idle_us, idle_us, 0, 1, "dot", "firebrick", xref, yref),
        _line(last_us, last_us, 0, 1, "dash", "darkorange", xref, yref),
    ]
    notes = [
        _note("tail", end_us, 1, "right", "top", xref, yref),
        _note("first SM idle", idle_us, 0, "right", "bottom", xref, yref),
        _note("last block start", last_us, 1, "right", "top", xref, yref),
    ]
    return shapes, notes


def latency_histogram_spec(histogram: pl.DataFrame) -> dict[str, Any]:
    """Warps per latency bin (`aggregates.latency_histogram`), bars spanning their bins."""
    low_us, high_us = to_us(histogram["latency_lo_ns"]), to_us(histogram["latency_hi_ns"])
    bars = {
        "type": "bar",
        "x": ((low_us + high_us) / 2).to_list(),
        "y": histogram["warps"].to_list(),
        "width": (high_us - low_us).to_list(),
        "hovertemplate": "%{x:.3f} µs: %{y} warps<extra></extra>",
    }
    return figure_spec(
        [bars],
        {
            "height": 300,
            "margin": {"l": 70, "r": 20, "t": 30, "b": 50},
            "showlegend": False,
            "plot_bgcolor": "white",
            "bargap": 0,
            "xaxis": {"title": {"text": "warp latency (µs)"}},
            "yaxis": {"title": {"text": "warps"}},
        },
    )


def message_spec(message: str) -> dict[str, Any]:
    """An empty plot carrying one of our own messages (never a string from an input file)."""
    return figure_spec(
        [],
        {
            "annotations": [_note(message, 0.5, 0.5, "center", "middle", "paper", "paper")],
            "height": 200,
            "xaxis": {"visible": False},
            "yaxis": {"visible": False},
            "plot_bgcolor": "white",
        },
    )


def sweep_spec(sweep: Sweep, launch_point: tuple[float, float] | None = None) -> dict[str, Any]:
    """Throughput against occupancy: the sweep's measured points, the fitted min(n / L, B) drawn through its knee
    and this launch's point."""
    points = sweep.points
    xs = [p.occupancy_warps_per_sm for p in points]
    traces: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "x": xs,
            "y": [p.throughput for p in points],
            "mode": "markers",
            "name": "measured launches",
            "marker": {"size": 9, "color": "#1f77b4"},
            "hovertemplate": "%{x:.2f} warps per SM: %{y:.5f} warps per ns per SM<extra></extra>",
        }
    ]
    extent = max([*xs, *([launch_point[0]] if launch_point else [])], default=1.0) * 1.1
    model_x, model_y = _model_line(sweep, extent)
    traces.append(
        {
            "type": "scatter",
            "x": model_x,
            "y": model_y,
            "mode": "lines",
            "name": "min(n / L, B)",
            "line": {"dash": "dash", "color": "gray"},
            "hoverinfo": "skip",
        }
    )
    if launch_point:
        traces.append(
            {
                "type": "scatter",
                "x": [launch_point[0]],
                "y": [launch_point[1]],
                "mode": "markers",
                "name": "this launch",
                "marker": {"size": 14, "color": "#ff7f0e", "symbol": "circle-open", "line": {"width": 3}},
                "hovertemplate": "this launch: %{x:.2f} warps per SM, %{y:.5f}<extra></extra>",
            }
        )
    return figure_spec(traces, _sweep_layout())


def _bar_trace(bars: Iterable[tuple[float, float, float, list[Any]]], **style: Any) -> dict[str, Any]:
    """Horizontal bars (x0, x1, y, hover data) as one line trace: each bar a segment, the segments apart by a None
    (one trace draws thousands of bars); `style`: the trace's line, hover template, legend group."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    custom: list[list[Any] | None] = []
    for x0, x1, y, info in bars:
        xs += [x0, x1, None]
        ys += [y, y, None]
        custom += [info, info, None]
    return {"type": "scatter", "x": xs, "y": ys, "customdata": custom, "mode": "lines", "connectgaps": False} | style


def _sweep_layout() -> dict[str, Any]:
    """Throughput against occupancy: one launch's sweep and A against B's."""
    return {
        "height": 360,
        "margin": {"l": 80, "r": 20, "t": 30, "b": 50},
        "plot_bgcolor": "white",
        "xaxis": {"title": {"text": "occupancy (warps per SM)"}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "throughput (warps per ns per SM)"}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.2},
    }


def _model_line(sweep: Sweep, extent: float) -> tuple[list[float], list[float]]:
    """The fitted min(n / L, B) as straight pieces: from 0 through the knee L x B (the result's needed occupancy)
    to the right edge, evaluated by the model's one definition."""
    knee = sweep.needed_occupancy_warps_per_sm
    xs = [0.0, knee, max(extent, knee)] if knee else [0.0, extent]
    ys = [model_throughput(x, sweep.latency_ns, sweep.throughput_bound_warps_per_ns_per_sm) for x in xs]
    if any(y is None for y in ys):
        return [], []
    return xs, [float(y) for y in ys if y is not None]


def stall_spec(by_reason: dict[str, float]) -> dict[str, Any]:
    """Warp cycles per issued instruction by stall reason (`result.stalls.by_reason`), largest on top."""
    ranked = sorted(by_reason.items(), key=lambda item: item[1])
    bar = {
        "type": "bar",
        "x": [v for _, v in ranked],
        "y": [r for r, _ in ranked],
        "orientation": "h",
        "hovertemplate": "%{y}: %{x:.3f} cycles per issue<extra></extra>",
    }
    return figure_spec(
        [bar],
        {
            "height": max(300, 60 + 20 * len(ranked)),
            "margin": {"l": 160, "r": 20, "t": 30, "b": 50},
            "plot_bgcolor": "white",
            "showlegend": False,
            "xaxis": {"title": {"text": "warp cycles per issued instruction"}},
        },
    )


def _stacked_rows(rows: int, spacing: float) -> list[tuple[float, float]]:
    """The y domains of `rows` rows stacked top to bottom with `spacing` between them, as plotly's make_subplots
    lays them out (the same floats)."""
    heights = [(1.0 - spacing * (rows - 1)) / rows] * rows
    domains = []
    for row in range(rows):  # 0 is the top row
        below = rows - 1 - row
        start = sum(heights[:below]) + below * spacing
        domains.append((min(max(start, 0.0), 1.0), min(max(start + heights[below], 0.0), 1.0)))
    return domains


def compare_occupancy_spec(curves: dict[str, pl.DataFrame], tails: dict[str, TailEffect | None]) -> dict[str, Any]:
    """Occupancy over time of each side in its own row, the rows' time axes linked (`matches`): zooming one zooms
    the other, so A and B are read at the same time since their first warp. With a side's tail: its tail marked
    (`tail_marks`) on its row."""
    sides = list(curves)
    rows = len(sides)
    traces: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    titles: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    layout: dict[str, Any] = {}
    for row, ((y0, y1), side) in enumerate(zip(_stacked_rows(rows, 0.08), sides, strict=True), start=1):
        axis = "" if row == 1 else str(row)
        curve = curves[side]
        line = {"shape": "hv", **({"color": SIDE_COLORS[side]} if side in SIDE_COLORS else {})}
        traces.append(
            {
                "type": "scatter",
                "x": to_us(curve["bin_start_ns"]).to_list(),
                "y": curve["mean_active_warps_per_sm"].to_list(),
                "name": side,
                "mode": "lines",
                "line": line,
                "fill": "tozeroy",
                "hovertemplate": f"{side}: %{{x:.3f}} µs, %{{y:.2f}} warps per SM<extra></extra>",
                "xaxis": f"x{axis}",
                "yaxis": f"y{axis}",
            }
        )
        if tail := tails.get(side):
            tail_shapes, tail_notes = tail_marks(tail, axis)
            shapes += tail_shapes
            notes += tail_notes
        xaxis: dict[str, Any] = {"anchor": f"y{axis}", "domain": [0.0, 1.0]}
        if row < rows:  # the rows above the last: linked to it, their tick labels left to the last row's axis
            xaxis.update(matches=f"x{rows}", showticklabels=False)
        if row > 1:  # and the last rows to the first (zooming A zooms B)
            xaxis["matches"] = "x"
        if row == rows:
            xaxis["title"] = {"text": TIME_AXIS_TITLE}
        layout[f"xaxis{axis}"] = xaxis
        layout[f"yaxis{axis}"] = {
            "anchor": f"x{axis}",
            "domain": [y0, y1],
            "title": {"text": "warps per SM"},
            "rangemode": "tozero",
        }
        titles.append(
            {
                "text": f"{side}: mean resident warps per SM",
                "x": 0.5,
                "y": y1,
                "xref": "paper",
                "yref": "paper",
                "xanchor": "center",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 16},
            }
        )
    layout.update(
        annotations=titles + notes,
        height=220 + 200 * rows,
        margin={"l": 70, "r": 20, "t": 40, "b": 50},
        showlegend=False,
        plot_bgcolor="white",
    )
    if shapes:
        layout["shapes"] = shapes
    return figure_spec(traces, layout)


def overlay_latency_spec(histograms: dict[str, pl.DataFrame]) -> dict[str, Any]:
    """Each side's warp latency histogram as a share of its warps, overlaid on one latency axis."""
    traces = []
    for side, histogram in histograms.items():
        total = max(int(histogram["warps"].sum()), 1)
        low_us, high_us = to_us(histogram["latency_lo_ns"]), to_us(histogram["latency_hi_ns"])
        traces.append(
            {
                "type": "bar",
                "x": ((low_us + high_us) / 2).to_list(),
                "y": (histogram["warps"] / total).to_list(),
                "width": (high_us - low_us).to_list(),
                "name": side,
                "opacity": 0.55,
                "marker": {"color": SIDE_COLORS[side]} if side in SIDE_COLORS else {},
                "hovertemplate": f"{side}: %{{x:.3f}} µs, %{{y:.2%}} of its warps<extra></extra>",
            }
        )
    return figure_spec(
        traces,
        {
            "barmode": "overlay",
            "bargap": 0,
            "height": 320,
            "margin": {"l": 70, "r": 20, "t": 30, "b": 50},
            "plot_bgcolor": "white",
            "xaxis": {"title": {"text": "warp latency (µs)"}},
            "yaxis": {"title": {"text": "share of the side's warps"}, "tickformat": ".0%"},
        },
    )


def sweep_overlay_spec(sweeps: dict[str, Sweep]) -> dict[str, Any]:
    """Throughput against occupancy of several sides ("A", "B"): each side's measured points and its fitted
    min(n / L, B) in the side's colour."""
    traces: list[dict[str, Any]] = []
    extent = max((p.occupancy_warps_per_sm for s in sweeps.values() for p in s.points), default=1.0) * 1.1
    for side, sweep in sweeps.items():
        color = SIDE_COLORS.get(side, "#1f77b4")
        model_x, model_y = _model_line(sweep, extent)
        traces += [
            {
                "type": "scatter",
                "x": [p.occupancy_warps_per_sm for p in sweep.points],
                "y": [p.throughput for p in sweep.points],
                "mode": "markers",
                "marker": {"size": 9, "color": color},
                "name": f"{side} measured",
                "hovertemplate": f"{side}: %{{x:.2f}} warps per SM, %{{y:.5f}} warps per ns per SM<extra></extra>",
            },
            {
                "type": "scatter",
                "x": model_x,
                "y": model_y,
                "mode": "lines",
                "line": {"dash": "dash", "color": color},
                "name": f"{side} min(n / L, B)",
                "hoverinfo": "skip",
            },
        ]
    return figure_spec(traces, _sweep_layout())


# ---- named regions (`tracekit.analysis.region_timeline` frames) ---------------------------------------------------
# Region names come from the input file: they are shown, but only as text. Plotly reads a subset of HTML in legend
# and hover text, so names go in with &, < and > as entities (shown as the characters themselves), and never into
# a hovertemplate (where %{...} would be read): hover labels take them from customdata.

REGION_COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)  # fmt: skip


def region_text(name: str) -> str:
    """A region name as plotly text that shows exactly the name."""
    return html.escape(str(name), quote=False)


def region_color(names: tuple[str, ...], name: str) -> str:
    return REGION_COLORS[names.index(name) % len(REGION_COLORS)] if name in names else "#444444"


def region_axis(time_unit: str) -> tuple[str, float]:
    """The x axis title and the divisor from the analysis unit: ns are drawn in µs, cycles as they are."""
    if time_unit == "ns":
        return "time since the first region started (µs)", 1000.0
    return "SM cycles since the first region started", 1.0


def _region_legend(names: tuple[str, ...]) -> list[dict[str, Any]]:
    """One legend entry per region of the launch, in its colour order (the same colours in every view)."""
    return [
        {
            "type": "scatter",
            "x": [None],
            "y": [None],
            "mode": "markers",
            "marker": {"size": 12, "symbol": "square", "color": region_color(names, name)},
            "name": region_text(name),
            "legendgroup": region_text(name),
            "hoverinfo": "skip",
        }
        for name in names
    ]


def region_timeline_spec(timeline) -> dict[str, Any]:
    """Each warp a row, each region instance a bar in its region's colour (nested ones thinner, on top); or, when
    binned, rows of warps at the same position in their blocks over time bins, each cell in the colour of the
    region that held most of those warps' time there. `timeline` is a `region_timeline.RegionTimeline`."""
    x_title, scale = region_axis(timeline.time_unit)
    names = timeline.names
    traces: list[dict[str, Any]] = []
    yaxis: dict[str, Any] = {}
    if timeline.mode == "slices":
        slices = timeline.slices
        rows = timeline.rows.height
        bar_px = max(1.0, min(10.0, 0.7 * (plot_height(rows, 10) - 80) / max(rows, 1)))
        max_depth = int(slices["depth"].max() or 0) if slices.height else 0
        for (name, depth), part in slices.partition_by(["region", "depth"], as_dict=True, maintain_order=True).items():
            bars = (
                (x0, x1, row, [region_text(name), sm, block, warp, x0, x1, x1 - x0])
                for row, start, end, sm, block, warp in part.select(
                    "row", "start", "end", "sm_id", "block_id", "warp_in_block"
                ).iter_rows()
                for x0, x1 in ((start / scale, end / scale),)
            )
            traces.append(
                _bar_trace(
                    bars,
                    line={
                        "width": max(1.0, bar_px * (1.0 - 0.35 * depth / max(max_depth, 1))),
                        "color": region_color(names, str(name)),
                    },
                    legendgroup=region_text(str(name)),
                    showlegend=False,
                    hovertemplate=(
                        "%{customdata[0]}<br>SM %{customdata[1]}, block %{customdata[2]}, warp %{customdata[3]}<br>"
                        "%{customdata[4]:.3f} to %{customdata[5]:.3f} (%{customdata[6]:.3f})<extra></extra>"
                    ),
                )
            )
        y_title = "warp (rows in SM, block, warp order)"
        height = plot_height(rows, 10)
    else:
        cells = timeline.cells
        groups = timeline.groups.unique("y").sort("y")
        n = max(len(names), 1)
        codes = {name: i for i, name in enumerate(names)}
        bin_starts = cells.select("bin", "bin_start", "bin_end").unique("bin").sort("bin")
        bin_index = {b: i for i, b in enumerate(bin_starts["bin"].to_list())}
        centers = ((bin_starts["bin_start"] + bin_starts["bin_end"]) / 2 / scale).to_list()
        z: list[list[float | None]] = [[None] * len(centers) for _ in range(groups.height)]
        text: list[list[str]] = [[""] * len(centers) for _ in range(groups.height)]
        labels = {
            y: f"warp {w}, SM {a}" + (f"-{b}" if b != a else "")
            for y, w, a, b in groups.select("y", "warp_in_block", "sm_min", "sm_max").iter_rows()
        }
        escaped = {name: region_text(name) for name in names}
        for y, b, name, share in cells.select("y", "bin", "region", "share").iter_rows():
            column = bin_index[b]
            z[y][column] = codes.get(name, 0) + 0.5
            text[y][column] = f"{escaped.get(name, '')} {share:.0%} · {labels[y]}"
        stride = max(1, -(-groups.height // 30))
        scale_steps = []
        for i in range(n):
            color = REGION_COLORS[i % len(REGION_COLORS)]
            scale_steps += [[i / n, color], [(i + 1) / n, color]]
        traces.append(
            {
                "type": "heatmap",
                "x": centers,
                "y": groups["y"].to_list(),
                "z": z,
                "text": text,
                "zmin": 0,
                "zmax": n,
                "colorscale": scale_steps,
                "showscale": False,
                "hovertemplate": "%{x:.3f}: %{text} (share of the row's warp time)<extra></extra>",
            }
        )
        ticks = groups["y"].to_list()[::stride]
        yaxis = {"tickvals": ticks, "ticktext": [labels[y] for y in ticks]}
        y_title = "warps at one position in their blocks, by SM"
        height = plot_height(groups.height, 4)
    lo, hi = timeline.window
    return figure_spec(
        traces + _region_legend(names),
        {
            "height": height,
            "margin": {"l": 70, "r": 20, "t": 30, "b": 50},
            "xaxis": {"title": {"text": x_title}, "range": [lo / scale, hi / scale]},
            "yaxis": {**yaxis, "title": {"text": y_title}, "autorange": "reversed"},
            "showlegend": True,
            "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
            "plot_bgcolor": "white",
        },
    )


def region_occupancy_spec(curves: pl.DataFrame, names: tuple[str, ...], time_unit: str) -> dict[str, Any]:
    """Mean warps inside each region per SM over time (`region_timeline.region_occupancy_curves`), a step line
    per region; an enclosing region's line counts the warps inside its nested regions too."""
    x_title, scale = region_axis(time_unit)
    traces = []
    for name in names:
        curve = curves.filter(pl.col("region") == name).sort("bin")
        if curve.height == 0:
            continue
        label = region_text(name)
        traces.append(
            {
                "type": "scatter",
                "x": (curve["bin_start"] / scale).to_list(),
                "y": curve["mean_warps_per_sm"].to_list(),
                "customdata": [label] * curve.height,
                "mode": "lines",
                "line": {"shape": "hv", "color": region_color(names, name), "width": 2},
                "name": label,
                "hovertemplate": "%{customdata}: %{y:.2f} warps per SM at %{x:.3f}<extra></extra>",
            }
        )
    return figure_spec(
        traces,
        {
            "height": 340,
            "margin": {"l": 70, "r": 20, "t": 30, "b": 50},
            "xaxis": {"title": {"text": x_title}},
            "yaxis": {"title": {"text": "mean warps in the region per SM"}, "rangemode": "tozero"},
            "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
            "plot_bgcolor": "white",
        },
    )


# ---- the launch's answer: speed of light and roofline ------------------------------------------------------------

BINDING_COLOR = "#d62728"
UNIT_COLOR = "#1f77b4"
ACHIEVABLE_COLOR = "#2ca02c"
SOL_ROWS = 8  # the units drawn: the busiest ones (the result lists them highest first), the binding one always
# The ceilings section names units by what it measured; the verdict by the limiter it names.
CEILING_LIMITERS = {"dram": "dram", "l2": "l2", "shared": "l1/shared", "fp32": "fma", "fp64": "fp64"}
TENSOR_FLOPS = "tensor-flops"  # the speed-of-light row of the tensor cores' FLOP/s


def speed_of_light_figure(
    result: LaunchAnalysis, height: int = 300, unit_words: Mapping[str, str] | None = None
) -> go.Figure | None:
    """`speed_of_light_spec` as a plotly figure (a notebook's `result.figure("speed_of_light")`, the compare page)."""
    spec = speed_of_light_spec(result, height, unit_words)
    return None if spec is None else unchecked_figure(spec["data"], spec["layout"])


def speed_of_light_spec(
    result: LaunchAnalysis, height: int = 300, unit_words: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """Each unit's utilization in % of its nominal peak (Nsight's speed of light, `classification.utilization`),
    the measured achievable peak where the ceilings give one (a tick at ceiling / nominal), the binding unit in
    red. None without counters (no unit has a utilization). `unit_words`: each ceiling unit's sentence by its name
    (`tracekit.present.rules.ceilings.unit_sentences`), shown on hover."""
    words = unit_words or {}
    classification = result.classification
    units = list(classification.utilization)
    if not units:
        return None
    binding = classification.limiter
    shown = units[:SOL_ROWS]
    shown += [u for u in units[SOL_ROWS:] if u.limiter == binding]
    achievable = {}
    for unit in result.ceilings.units if result.ceilings else ():
        limiter = CEILING_LIMITERS.get(unit.unit)
        if limiter is not None:
            achievable[limiter] = unit
    # the tensor cores' FLOP/s of the launch's input type against its tensor roof (issue 26): a row of its own, since
    # the tensor pipe's row counts busy cycles, not FLOPs (the roof's tick would not compare with it)
    tensor = next((u for u in (result.ceilings.units if result.ceilings else ()) if u.unit.startswith("tensor_")), None)
    if tensor is not None and tensor.of_nominal is not None:
        kind = tensor.unit.removeprefix("tensor_")
        flops = UnitUtilization(f"Tensor {kind} FLOP/s", TENSOR_FLOPS, tensor.ceiling_name, 100.0 * tensor.of_nominal)
        achievable[TENSOR_FLOPS] = tensor
        shown.insert(next((i + 1 for i, u in enumerate(shown) if u.limiter == "tensor"), 0), flops)
    rows = list(reversed(shown))  # plotly draws the first row at the bottom: the busiest on top

    def binds(u: UnitUtilization) -> bool:
        return u.limiter == binding or (u.limiter == TENSOR_FLOPS and binding == "tensor")

    labels = [u.label + (" (binds)" if binds(u) else "") for u in rows]
    hover = [
        f"{u.label}: {u.pct:.1f}% of peak ({u.metric})"
        + (
            f"<br>{html.escape(words[found.unit])}"
            if (found := achievable.get(u.limiter)) and found.unit in words
            else ""
        )
        for u in rows
    ]
    traces: list[dict[str, Any]] = [
        {
            "type": "bar",
            "x": [u.pct for u in rows],
            "y": labels,
            "orientation": "h",
            "name": "% of nominal peak",
            "marker": {"color": [BINDING_COLOR if binds(u) else UNIT_COLOR for u in rows]},
            "text": [f"{u.pct:.1f}%" for u in rows],
            "textposition": "outside",
            "cliponaxis": False,
            "hovertext": hover,
            "hoverinfo": "text",
        }
    ]
    ticks = [
        (label, 100.0 * ceiling.ceiling_value / nominal, u.limiter)
        for u, label in zip(rows, labels, strict=True)
        if (ceiling := achievable.get(u.limiter)) is not None and (nominal := ceiling.nominal)
    ]
    if ticks:
        traces.append(
            {
                "type": "scatter",
                "x": [x for _, x, _ in ticks],
                "y": [label for label, _, _ in ticks],
                "mode": "markers",
                "name": "measured achievable peak",
                "marker": {"symbol": "line-ns", "size": 18, "line": {"width": 3, "color": ACHIEVABLE_COLOR}},
                "hovertext": [html.escape(words.get(achievable[limiter].unit, "")) for _, _, limiter in ticks],
                "hoverinfo": "text",
            }
        )
    return figure_spec(
        traces,
        {
            "height": height,
            "margin": {"l": 150, "r": 20, "t": 30, "b": 40},
            "plot_bgcolor": "white",
            "showlegend": bool(ticks),
            "legend": {"orientation": "h", "y": 1.12, "x": 0},
            "xaxis": {"title": {"text": "% of the unit's nominal peak"}, "range": [0, 110], "gridcolor": "#eee"},
            "bargap": 0.25,
        },
    )


ROOF_STYLES = {"memory": "solid", "compute": "dash"}
LEVEL_COLORS = {"dram": "#d62728", "l2": "#ff7f0e", "shared": "#2ca02c"}


def roofline_axes(rooflines: list[Roofline]) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """Shared log10 ranges (x: FLOP per byte, y: FLOP/s) that hold every point and the ridge of every roofline."""
    xs, ys = [], []
    placed = [
        r for r in rooflines if r.achieved_flop_per_s and any(p.arithmetic_intensity_flop_per_byte for p in r.points)
    ]
    for roofline in placed:
        for point in roofline.points:
            if point.arithmetic_intensity_flop_per_byte and roofline.achieved_flop_per_s:
                xs.append(point.arithmetic_intensity_flop_per_byte)
                ys.append(roofline.achieved_flop_per_s)
        memory = [r.value for r in roofline.roofs if r.kind == "memory"]
        compute = [r.value for r in _drawn_compute_roofs(roofline)]
        if memory and compute:
            xs.append(max(compute) / min(memory))  # the right-most ridge point
            ys.append(max(compute))
    if not xs:
        return None
    return (
        (math.log10(min(xs)) - 1.0, math.log10(max(xs)) + 1.0),
        (math.log10(min(ys)) - 1.0, math.log10(max(ys)) + 0.5),
    )


def _drawn_compute_roofs(roofline: Roofline) -> list[Roof]:
    """FP32 and FP64, and the tensor roof of the FLOPs' type when the launch's FLOPs are tensor ones."""
    kind = roofline.flop_kind or ""
    return [r for r in roofline.roofs if r.kind == "compute" and (r.name in ("fp32", "fp64") or r.name.endswith(kind))]


def roofline_figure(
    roofline: Roofline,
    axes: tuple[tuple[float, float], tuple[float, float]] | None = None,
    height: int = 300,
    name: str = "",
) -> go.Figure | None:
    """`roofline_spec` as a plotly figure (a notebook's `result.figure("roofline")`, the compare page)."""
    spec = roofline_spec(roofline, axes, height, name)
    return None if spec is None else unchecked_figure(spec["data"], spec["layout"])


def roofline_spec(
    roofline: Roofline,
    axes: tuple[tuple[float, float], tuple[float, float]] | None = None,
    height: int = 300,
    name: str = "",
) -> dict[str, Any] | None:
    """FLOP/s against FLOP per byte (log-log): the launch's point at each memory level under the roofs the
    engine chose (measured achievable ceilings, or nominal ones, said so). None when no FLOP was counted.
    `axes`: shared log10 ranges (`roofline_axes`), so that two launches are drawn on the same axes."""
    axes = axes or roofline_axes([roofline])
    if axes is None:
        return None
    (x_low, x_high), (y_low, y_high) = axes
    x_edges = [10**x_low, 10**x_high]
    traces: list[dict[str, Any]] = []
    labels: list[dict[str, Any]] = []
    for roof in roofline.roofs:
        if roof.kind == "memory":
            if roof.name.startswith("dram") and roof.name != roofline.dram_roof:
                continue  # the DRAM roof of this access pattern only
            xs, ys = x_edges, [roof.value * x for x in x_edges]
        elif roof in _drawn_compute_roofs(roofline):
            xs, ys = x_edges, [roof.value, roof.value]
        else:
            continue
        traces.append(
            {
                "type": "scatter",
                "x": xs,
                "y": ys,
                "mode": "lines",
                "name": f"{roof.name} roof",
                "line": {"color": "#888", "dash": ROOF_STYLES[roof.kind], "width": 1.5},
                "hovertext": f"{roof.name}: {roof.value:.4g} {'byte/s' if roof.kind == 'memory' else 'FLOP/s'} "
                f"({html.escape(roof.source)})",
                "hoverinfo": "text",
                "showlegend": False,
            }
        )
        # The label where the roof leaves the drawn area (a memory roof's right end may lie above it).
        label_x = math.log10(xs[-1])
        if roof.kind == "memory":
            label_x = min(label_x, y_high - 0.15 - math.log10(roof.value))
        labels.append(
            {
                "x": label_x,
                "y": math.log10(roof.value * 10**label_x) if roof.kind == "memory" else math.log10(ys[-1]),
                "text": roof.name,
                "showarrow": False,
                "xanchor": "right",
                "yanchor": "bottom",
                "font": {"size": 10, "color": "#666"},
            }
        )
    for point in roofline.points:
        if not point.arithmetic_intensity_flop_per_byte or not roofline.achieved_flop_per_s:
            continue
        traces.append(
            {
                "type": "scatter",
                "x": [point.arithmetic_intensity_flop_per_byte],
                "y": [roofline.achieved_flop_per_s],
                "mode": "markers",
                "name": f"{name} {point.level}".strip(),
                "marker": {"size": 11, "color": LEVEL_COLORS.get(point.level, "#1f77b4")},
                "hovertext": f"{point.level}: {point.arithmetic_intensity_flop_per_byte:.4g} FLOP/byte, "
                f"{roofline.achieved_flop_per_s:.4g} FLOP/s, {point.bytes_per_s:.4g} byte/s",
                "hoverinfo": "text",
            }
        )
    return figure_spec(
        traces,
        {
            "annotations": labels,
            "height": height,
            "margin": {"l": 70, "r": 20, "t": 30, "b": 45},
            "plot_bgcolor": "white",
            "legend": {"orientation": "h", "y": 1.12, "x": 0},
            "xaxis": {
                "type": "log",
                "title": {"text": "arithmetic intensity (FLOP per byte)"},
                "range": [x_low, x_high],
            },
            "yaxis": {"type": "log", "title": {"text": "FLOP/s"}, "range": [y_low, y_high]},
        },
    )


def occupancy_spec(result: LaunchAnalysis) -> dict[str, Any] | None:
    """Warps per SM: theoretical (the calculator), achieved (the counter), resident on average (the trace) and the
    occupancy that hides latency (the verdict's latency x throughput), against the device's warp slots."""
    occupancy = result.occupancy
    rows = [
        ("theoretical", occupancy.theoretical_warps_per_sm),
        ("achieved (counter)", occupancy.achieved_warps_per_sm),
        ("resident, mean (trace)", result.warps.mean_occupancy_per_active_sm_warps if result.warps else None),
        ("needed to hide latency", result.classification.needed_occupancy_warps_per_sm),
    ]
    shown = [(label, value) for label, value in rows if value is not None]
    if not shown:
        return None
    bar = {
        "type": "bar",
        "x": [value for _, value in shown],
        "y": [label for label, _ in shown],
        "orientation": "h",
        "text": [f"{value:.1f}" for _, value in shown],
        "textposition": "outside",
        "cliponaxis": False,
        "marker": {"color": UNIT_COLOR},
        "hovertemplate": "%{y}: %{x:.2f} warps per SM<extra></extra>",
    }
    layout: dict[str, Any] = {
        "height": 260,
        "margin": {"l": 170, "r": 30, "t": 30, "b": 45},
        "plot_bgcolor": "white",
        "xaxis": {"title": {"text": "warps per SM"}, "rangemode": "tozero"},
        "showlegend": False,
    }
    if occupancy.max_warps_per_sm:
        slots = occupancy.max_warps_per_sm
        layout["shapes"] = [_line(slots, slots, 0, 1, "dot", "#888", "x", "y domain")]
    return figure_spec([bar], layout)


# ---- HTA's trace analyses: the launch queue and copy bandwidth over time (tracekit.analysis.trace_features) -------

TRACE_TIME_TITLE = "time since the first launch (ms)"


def _trace_series_spec(
    frame: pl.DataFrame, group: str, value: str, label: str, y_title: str, hover: str, start_ns: int
) -> dict[str, Any]:
    """A step line per group over the trace's time (ms since `start_ns`)."""
    start = start_ns
    traces = []
    for (key,), part in frame.sort(group, "time_ns").group_by([group], maintain_order=True):
        name = html.escape(label.format(key))
        traces.append(
            {
                "type": "scatter",
                "x": ((part["time_ns"] - start) / 1e6).to_list(),
                "y": part[value].to_list(),
                "mode": "lines",
                "line": {"shape": "hv", "width": 1.5},
                "name": name,
                "hovertemplate": f"{name}: {hover} at %{{x:.3f}} ms<extra></extra>",
            }
        )
    return figure_spec(
        traces,
        {
            "height": 320,
            "margin": {"l": 70, "r": 20, "t": 30, "b": 50},
            "xaxis": {"title": {"text": TRACE_TIME_TITLE}},
            "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
            "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
            "plot_bgcolor": "white",
        },
    )


def queue_length_spec(chart: pl.DataFrame, start_ns: int) -> dict[str, Any]:
    """Each stream's launch queue over the trace (`TraceFeatures.queue_chart`: stream_id, time_ns, queue_length)."""
    return _trace_series_spec(
        chart, "stream_id", "queue_length", "stream {}", "launches queued", "%{y} queued", start_ns
    )


def copy_bandwidth_spec(chart: pl.DataFrame, start_ns: int) -> dict[str, Any]:
    """Each copy kind's bandwidth over the trace (`TraceFeatures.bandwidth_chart`: kind, time_ns, bandwidth_gbps)."""
    return _trace_series_spec(chart, "kind", "bandwidth_gbps", "{}", "bandwidth (GB/s)", "%{y:.3g} GB/s", start_ns)


# The whole-step figures (the steps page and the HTML report): drawn in tracekit/step_figures.py.
# A job's figures (the job page and the reports' job section): drawn in tracekit/job_figures.py.
from tracekit.job_figures import TimelineGroup as TimelineGroup  # noqa: E402
from tracekit.job_figures import job_heatmap_spec as job_heatmap_spec  # noqa: E402
from tracekit.job_figures import job_timeline_spec as job_timeline_spec  # noqa: E402
from tracekit.step_figures import step_breakdown_spec as step_breakdown_spec  # noqa: E402
from tracekit.step_figures import step_timeline_spec as step_timeline_spec  # noqa: E402
