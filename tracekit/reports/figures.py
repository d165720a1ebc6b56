"""Plotly figures the reports need and `tracekit.dashboards.figures` lacks (to merge with it later).

Built from result fields already computed; no string from an input file goes into a figure (plotly renders a
subset of HTML in titles, labels and hover text), so sides are called "A" and "B", never by kernel name.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from tracekit.dashboards.figures import SIDE_COLORS


def _model_line(sweep: dict[str, Any], extent: float) -> tuple[list[float], list[float]]:
    """min(n / L, B) as straight pieces through the knee L x B (the dashboard's private helper, kept in step)."""
    latency, bound = sweep.get("latency_ns"), sweep.get("throughput_bound_warps_per_ns_per_sm")
    if latency and bound:
        knee = latency * bound
        return [0.0, knee, max(extent, knee)], [0.0, bound, bound]
    if latency:
        return [0.0, extent], [0.0, extent / latency]
    if bound is not None:
        return [0.0, extent], [bound, bound]
    return [], []


def sweep_overlay_figure(sweeps: dict[str, dict[str, Any]]) -> go.Figure:
    """Throughput against occupancy of several sides ("A", "B"): each side's measured points and its fitted
    min(n / L, B) in the side's colour."""
    figure = go.Figure()
    extent = max((p["occupancy_warps_per_sm"] for s in sweeps.values() for p in s["points"]), default=1.0) * 1.1
    for side, sweep in sweeps.items():
        color = SIDE_COLORS.get(side, "#1f77b4")
        figure.add_trace(go.Scatter(
            x=[p["occupancy_warps_per_sm"] for p in sweep["points"]], y=[p["throughput"] for p in sweep["points"]],
            mode="markers", marker={"size": 9, "color": color}, name=f"{side} measured",
            hovertemplate=f"{side}: %{{x:.2f}} warps per SM, %{{y:.5f}} warps per ns per SM<extra></extra>"))
        model_x, model_y = _model_line(sweep, extent)
        figure.add_trace(go.Scatter(x=model_x, y=model_y, mode="lines", line={"dash": "dash", "color": color},
                                    name=f"{side} min(n / L, B)", hoverinfo="skip"))
    figure.update_layout(height=360, margin={"l": 80, "r": 20, "t": 30, "b": 50}, plot_bgcolor="white",
                         xaxis={"title": "occupancy (warps per SM)", "rangemode": "tozero"},
                         yaxis={"title": "throughput (warps per ns per SM)", "rangemode": "tozero"},
                         legend={"orientation": "h", "y": -0.2})
    return figure
