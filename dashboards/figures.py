"""Plotly figures for the dashboard, built from frames that are already computed (nothing is analysed here).

Frames come from `tracekit.analysis.timeline`, in ns since the launch's first warp start; the figures draw µs.
No string from an input file is put into a figure: plotly renders a subset of HTML in its text.
"""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl

TIME_AXIS_TITLE = "time since the first warp started (µs)"
BAR_COLORS = ("#1f77b4", "#ff7f0e")  # alternate by block, so neighbouring blocks' warps stay apart


def plot_height(rows: int, px_per_row: int = 14) -> int:
    return max(320, min(900, 80 + px_per_row * rows))


def _layout(figure: go.Figure, y_title: str, rows: int, x_range_us: tuple[float, float] | None,
            px_per_row: int = 14) -> go.Figure:
    figure.update_layout(
        height=plot_height(rows, px_per_row),
        margin={"l": 70, "r": 20, "t": 30, "b": 50},
        xaxis={"title": TIME_AXIS_TITLE, "range": list(x_range_us) if x_range_us else None,
               "autorange": x_range_us is None},
        yaxis={"title": y_title},
        showlegend=False,
        plot_bgcolor="white",
    )
    return figure


def to_us(ns):
    """ns to µs, for a number, a polars Series or an expression."""
    return ns / 1000.0


def sm_heatmap_figure(binned: pl.DataFrame, x_range_us: tuple[float, float] | None = None) -> go.Figure:
    """Zoomed out: one row per SM, colour = mean resident warps in each time bin (from `binned_activity`)."""
    ordered = binned.sort("sm_id", "bin_start_ns")
    sm_ids = ordered["sm_id"].unique(maintain_order=True).to_list()
    first_sm = ordered.filter(pl.col("sm_id") == sm_ids[0]) if sm_ids else ordered
    centers_us = to_us((first_sm["bin_start_ns"] + first_sm["bin_end_ns"]) / 2).to_list()
    bins = len(centers_us)
    values = ordered["mean_active_warps"].to_list()
    z = [values[row * bins:(row + 1) * bins] for row in range(len(sm_ids))]
    figure = go.Figure(go.Heatmap(
        x=centers_us, y=sm_ids, z=z, colorscale="Viridis", zmin=0, zmax=max(max(values, default=0), 1),
        colorbar={"title": {"text": "mean resident warps"}},
        hovertemplate="SM %{y}<br>%{x:.3f} µs<br>%{z:.2f} warps resident<extra></extra>",
    ))
    return _layout(figure, "SM", len(sm_ids), x_range_us)


def sm_activity_figure(binned: pl.DataFrame, sm_id: int,
                       x_range_us: tuple[float, float] | None = None) -> go.Figure:
    """Zoomed out on one SM: mean resident warps per time bin, as a step line."""
    one_sm = binned.filter(pl.col("sm_id") == sm_id).sort("bin_start_ns")
    figure = go.Figure(go.Scatter(
        x=to_us(one_sm["bin_start_ns"]).to_list(), y=one_sm["mean_active_warps"].to_list(),
        mode="lines", line={"shape": "hv"}, fill="tozeroy",
        hovertemplate="%{x:.3f} µs: %{y:.2f} warps resident<extra></extra>",
    ))
    return _layout(figure, f"warps resident on SM {sm_id}", 20, x_range_us)


def warp_bars_figure(warps: pl.DataFrame, sm_id: int | None = None,
                     x_range_us: tuple[float, float] | None = None) -> go.Figure:
    """Zoomed in: each warp a horizontal bar from its start to its end.

    `warps` is `timeline.warps_in_window` output (relative times and a `slot` per warp). With `sm_id` the y axis
    is the warp slot on that SM (Volkov's figure); without it each SM's row is split into its slots. Three points
    per warp.
    """
    if sm_id is not None:
        warps = warps.filter(pl.col("sm_id") == sm_id)
    slot_count = int(warps["slot"].max()) + 1 if warps.height else 1
    if sm_id is not None:
        row = pl.col("slot").cast(pl.Float64)
        y_title, rows, slot_rows = f"warp slot on SM {sm_id}", slot_count, slot_count
    else:
        row = pl.col("sm_id") - 0.45 + (pl.col("slot") + 0.5) * (0.9 / slot_count)
        y_title, rows = "SM (each row split into warp slots)", warps["sm_id"].n_unique() if warps.height else 1
        slot_rows = rows * slot_count
    # Bars as thick as their row allows, so neighbouring slots never merge.
    bar_px = max(1.0, min(8.0, 0.6 * (plot_height(slot_rows, 6) - 80) / slot_rows))
    drawn = warps.with_columns(row.alias("y"), to_us(pl.col("start_rel_ns")).alias("x0"),
                               to_us(pl.col("end_rel_ns")).alias("x1"))
    figure = go.Figure()
    for parity in (0, 1):
        part = drawn.filter(pl.col("block_id") % 2 == parity)
        xs: list[float | None] = []
        ys: list[float | None] = []
        custom: list[list[float] | None] = []
        for x0, x1, y, sm, block, warp in part.select("x0", "x1", "y", "sm_id", "block_id",
                                                      "warp_in_block").iter_rows():
            xs += [x0, x1, None]
            ys += [y, y, None]
            info = [sm, block, warp, x0, x1]
            custom += [info, info, None]
        figure.add_trace(go.Scatter(
            x=xs, y=ys, customdata=custom, mode="lines", line={"width": bar_px, "color": BAR_COLORS[parity]},
            hovertemplate=("SM %{customdata[0]}, block %{customdata[1]}, warp %{customdata[2]}<br>"
                           "%{customdata[3]:.3f} to %{customdata[4]:.3f} µs<extra></extra>"),
            connectgaps=False,
        ))
    return _layout(figure, y_title, slot_rows, x_range_us, px_per_row=6)


def occupancy_time_figure(curve: pl.DataFrame) -> go.Figure:
    """GPU-wide mean resident warps per SM over time (`views.occupancy_over_time`), as a step line."""
    figure = go.Figure(go.Scatter(
        x=to_us(curve["bin_start_ns"]).to_list(), y=curve["mean_active_warps_per_sm"].to_list(),
        mode="lines", line={"shape": "hv"}, fill="tozeroy",
        hovertemplate="%{x:.3f} µs: %{y:.2f} warps per SM<extra></extra>",
    ))
    figure = _layout(figure, "mean resident warps per SM", 0, None)
    figure.update_layout(height=300)
    return figure


def latency_histogram_figure(histogram: pl.DataFrame) -> go.Figure:
    """Warps per latency bin (`views.latency_histogram`), bars spanning their bins."""
    low_us, high_us = to_us(histogram["latency_lo_ns"]), to_us(histogram["latency_hi_ns"])
    figure = go.Figure(go.Bar(
        x=((low_us + high_us) / 2).to_list(), y=histogram["warps"].to_list(), width=(high_us - low_us).to_list(),
        hovertemplate="%{x:.3f} µs: %{y} warps<extra></extra>",
    ))
    figure.update_layout(height=300, margin={"l": 70, "r": 20, "t": 30, "b": 50}, showlegend=False,
                         plot_bgcolor="white", bargap=0, xaxis={"title": "warp latency (µs)"},
                         yaxis={"title": "warps"})
    return figure


def message_figure(message: str) -> go.Figure:
    """An empty plot carrying one of our own messages (never a string from an input file)."""
    figure = go.Figure()
    figure.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    figure.update_layout(height=200, xaxis={"visible": False}, yaxis={"visible": False}, plot_bgcolor="white")
    return figure
