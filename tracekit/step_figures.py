"""The step figures as plotly dicts (`*_spec`, as every chart in `tracekit.figures`): the step's timeline, host
threads' API calls above the GPU streams' activities and the GPU's idle gaps coloured by cause, and the breakdown
of the step's idle time by cause and its GPU time by category. The dashboard's steps page and the HTML report draw
the same dicts. Names from the trace go into plotly only as escaped text in customdata (plotly reads a subset of
HTML in hover text)."""

from __future__ import annotations

import html
from typing import Any

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


def _bars(frame: pl.DataFrame, lane: str, color: str, label: str, group: str) -> dict[str, Any]:
    """One colour's bars: each from start to end on its lane (µs from the step's start)."""
    start_us = (frame["start_ns"] / 1000).to_list()
    width_us = ((frame["end_ns"] - frame["start_ns"]) / 1000).to_list()
    names = [_text(n) for n in frame["name"].to_list()] if "name" in frame.columns else [label] * frame.height
    return {
        "type": "bar",
        "x": width_us,
        "base": start_us,
        "y": frame[lane].to_list() if lane in frame.columns else [lane] * frame.height,
        "orientation": "h",
        "marker": {"color": color, "line": {"width": 0}},
        "name": _text(label),
        "legendgroup": group,
        "customdata": [list(row) for row in zip(names, start_us, width_us, strict=True)],
        "hovertemplate": "%{customdata[0]}<br>%{customdata[1]:.1f} µs, %{customdata[2]:.2f} µs long<extra></extra>",
    }


def step_timeline_spec(view: StepTimeline) -> dict[str, Any]:
    """The step's timeline: host calls by class, GPU activities by category, the GPU's idle gaps by cause."""
    data = [
        _bars(part, "lane", color, f"{call_class} call", "host")
        for call_class, color in CALL_COLORS.items()
        if (part := view.host.filter(pl.col("call_class") == call_class)).height
    ]
    data += [
        _bars(part, "lane", CATEGORY_COLORS[name], name, "gpu")
        for name in CATEGORIES
        if (part := view.gpu.filter(pl.col("category") == name)).height
    ]
    data += [
        _bars(
            part.with_columns(name=pl.lit(f"idle: {cause}")), IDLE_LANE, CAUSE_COLORS[cause], f"idle: {cause}", "idle"
        )
        for cause in CAUSES
        if (part := view.idle.filter(pl.col("cause") == cause)).height
    ]
    lanes = [
        *view.host["lane"].unique(maintain_order=True).to_list(),
        *view.gpu["lane"].unique(maintain_order=True).to_list(),
    ]
    layout = {
        "barmode": "overlay",
        "height": max(260, 60 + 40 * (len(lanes) + 1)),
        "margin": {"l": 110, "r": 10, "t": 30, "b": 40},
        "xaxis": {"title": {"text": "µs from the step's start"}, "range": [0, view.span_ns / 1000]},
        "yaxis": {"categoryorder": "array", "categoryarray": [IDLE_LANE, *reversed(lanes)]},
        "legend": {"orientation": "h", "y": -0.25},
        "title": {"text": "step timeline: host calls, GPU streams, GPU idle by cause", "font": {"size": 14}},
    }
    return {"data": data, "layout": layout}


def _stacked(value_ms: float, row: str, name: str, color: str) -> dict[str, Any]:
    return {
        "type": "bar",
        "x": [value_ms],
        "y": [row],
        "orientation": "h",
        "name": _text(name),
        "marker": {"color": color},
        "hovertemplate": f"{_text(name)}: %{{x:.3f}} ms<extra></extra>",
    }


def step_breakdown_spec(step: Step) -> dict[str, Any]:
    """Two stacked bars: the step's idle time by cause, its GPU time by category (ms)."""
    data = [
        _stacked(cause.idle_ns / 1e6, "idle by cause", cause.cause, CAUSE_COLORS[cause.cause])
        for cause in step.causes
        if cause.idle_ns
    ]
    data += [
        _stacked(
            part.gpu_ns / 1e6, "GPU time by category", part.category, CATEGORY_COLORS.get(part.category, "#444444")
        )
        for part in step.categories
    ]
    layout = {
        "barmode": "stack",
        "height": 220,
        "margin": {"l": 150, "r": 10, "t": 30, "b": 40},
        "xaxis": {"title": {"text": "ms"}},
        "legend": {"orientation": "h", "y": -0.4},
        "title": {"text": "where the step's time goes", "font": {"size": 14}},
    }
    return {"data": data, "layout": layout}
