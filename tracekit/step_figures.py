"""The step figures (the dashboard's steps page and the HTML report draw the same ones): the step's timeline, host
threads' API calls above the GPU streams' activities and the GPU's idle gaps coloured by cause, and the
breakdown of the step's idle time by cause and its GPU time by category. Names from the trace go into plotly
only as escaped text in customdata (plotly reads a subset of HTML in hover text)."""

from __future__ import annotations

import html

import plotly.graph_objects as go
import polars as pl

from tracekit.analysis.steps.categories import CATEGORIES
from tracekit.analysis.steps.timeline import StepTimeline
from tracekit.analysis.steps.types import CAUSES, Step

CAUSE_COLORS = dict(
    zip(
        CAUSES,
        ("#d62728", "#ff9896", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f"),
        strict=True,
    )
)
CATEGORY_COLORS = dict(
    zip(
        CATEGORIES,
        ("#1f77b4", "#17becf", "#2ca02c", "#bcbd22", "#e377c2", "#aec7e8", "#98df8a", "#c7c7c7"),
        strict=True,
    )
)
CALL_COLORS = {"launch": "#1f77b4", "sync": "#9467bd", "wait": "#8c564b", "other": "#c7c7c7"}
IDLE_LANE = "GPU idle"


def _text(value: str) -> str:
    return html.escape(str(value), quote=False)


def _bars(frame: pl.DataFrame, lane: str, color: str, label: str, group: str) -> go.Bar:
    """One colour's bars: each from start to end on its lane (µs from the step's start)."""
    start_us = (frame["start_ns"] / 1000).to_list()
    width_us = ((frame["end_ns"] - frame["start_ns"]) / 1000).to_list()
    names = [_text(n) for n in frame["name"].to_list()] if "name" in frame.columns else [label] * frame.height
    return go.Bar(
        x=width_us,
        base=start_us,
        y=frame[lane].to_list() if lane in frame.columns else [lane] * frame.height,
        orientation="h",
        marker={"color": color, "line": {"width": 0}},
        name=_text(label),
        legendgroup=group,
        customdata=list(zip(names, start_us, width_us, strict=True)),
        hovertemplate="%{customdata[0]}<br>%{customdata[1]:.1f} µs, %{customdata[2]:.2f} µs long<extra></extra>",
    )


def timeline_figure(view: StepTimeline) -> go.Figure:
    figure = go.Figure()
    for call_class, color in CALL_COLORS.items():
        part = view.host.filter(pl.col("call_class") == call_class)
        if part.height:
            figure.add_trace(_bars(part, "lane", color, f"{call_class} call", "host"))
    for name in CATEGORIES:
        part = view.gpu.filter(pl.col("category") == name)
        if part.height:
            figure.add_trace(_bars(part, "lane", CATEGORY_COLORS[name], name, "gpu"))
    for cause in CAUSES:
        part = view.idle.filter(pl.col("cause") == cause)
        if part.height:
            figure.add_trace(
                _bars(
                    part.with_columns(name=pl.lit(f"idle: {cause}")),
                    IDLE_LANE,
                    CAUSE_COLORS[cause],
                    f"idle: {cause}",
                    "idle",
                )
            )
    lanes = [
        *view.host["lane"].unique(maintain_order=True).to_list(),
        *view.gpu["lane"].unique(maintain_order=True).to_list(),
    ]
    figure.update_layout(
        barmode="overlay",
        height=max(260, 60 + 40 * (len(lanes) + 1)),
        margin={"l": 110, "r": 10, "t": 30, "b": 40},
        xaxis={"title": "µs from the step's start", "range": [0, view.span_ns / 1000]},
        yaxis={"categoryorder": "array", "categoryarray": [IDLE_LANE, *reversed(lanes)], "title": None},
        legend={"orientation": "h", "y": -0.25},
        title={"text": "step timeline: host calls, GPU streams, GPU idle by cause", "font": {"size": 14}},
    )
    return figure


def breakdown_figure(step: Step) -> go.Figure:
    """Two stacked bars: the step's idle time by cause, its GPU time by category (ms)."""
    figure = go.Figure()
    for cause in step.causes:
        if cause.idle_ns:
            figure.add_trace(
                go.Bar(
                    x=[cause.idle_ns / 1e6],
                    y=["idle by cause"],
                    orientation="h",
                    name=_text(cause.cause),
                    marker={"color": CAUSE_COLORS[cause.cause]},
                    hovertemplate=f"{_text(cause.cause)}: %{{x:.3f}} ms<extra></extra>",
                )
            )
    for part in step.categories:
        figure.add_trace(
            go.Bar(
                x=[part.gpu_ns / 1e6],
                y=["GPU time by category"],
                orientation="h",
                name=_text(part.category),
                marker={"color": CATEGORY_COLORS.get(part.category, "#444444")},
                hovertemplate=f"{_text(part.category)}: %{{x:.3f}} ms<extra></extra>",
            )
        )
    figure.update_layout(
        barmode="stack",
        height=220,
        margin={"l": 150, "r": 10, "t": 30, "b": 40},
        xaxis={"title": "ms"},
        legend={"orientation": "h", "y": -0.4},
        title={"text": "where the step's time goes", "font": {"size": 14}},
    )
    return figure
