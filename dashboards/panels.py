"""The launch page's analysis panels, rendered from the "tracekit.analysis/1" result of `analyze_launch`.

Renderers only: every number is the result's own, formatted. Evidence and explanations are the analysis's
sentences, shown as text.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl
from dash import dcc, html

from . import figures

NEEDS_TRACE = "Needs per-warp timings (a warp trace recorded inside the kernel)."


def fmt(value: Any, digits: int = 2, suffix: str = "") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}{suffix}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}{suffix}"
    return f"{value}{suffix}"


def fields_table(rows: list[tuple[str, str]], table_id: str) -> html.Table:
    return html.Table(html.Tbody([html.Tr([html.Th(label), html.Td(text)]) for label, text in rows]),
                      id=table_id, className="table fields")


def _section(slot_id: str, title: str, body: list) -> html.Section:
    return html.Section([html.H3(title), *body], id=slot_id, className="analysis-slot")


def verdict_panel(result: dict[str, Any]) -> html.Section:
    verdict = result["classification"]
    headline = verdict["mode"] + (f", limited by {verdict['limiter']}" if verdict.get("limiter") else "")
    body: list = [html.P(headline, id="verdict-mode", className="verdict")]
    if verdict.get("needed_occupancy_warps_per_sm") is not None:
        body.append(html.P(f"Occupancy needed to hide latency: "
                           f"{fmt(verdict['needed_occupancy_warps_per_sm'], 1)} warps per SM"))
    if verdict.get("evidence"):
        body.append(html.Ul([html.Li(line) for line in verdict["evidence"]], id="verdict-evidence"))
    if verdict.get("flags"):
        body.append(html.P("Flags: " + ", ".join(verdict["flags"])))
    if verdict.get("advice"):
        body += [html.H4("Advice"), html.Ul([html.Li(line) for line in verdict["advice"]])]
    return _section("verdict-panel", "Verdict", body)


def occupancy_panel(result: dict[str, Any]) -> html.Section:
    occupancy, warps = result["occupancy"], result.get("warps") or {}
    limits = occupancy.get("limits_blocks_per_sm") or {}
    tail = occupancy.get("nsight_tail_estimate") or {}
    rows = [
        ("theoretical (warps per SM)", fmt(occupancy["theoretical_warps_per_sm"])),
        ("theoretical (%)", fmt(occupancy["theoretical_pct"], 1)),
        ("limited by", fmt(occupancy["limiter"])),
        ("blocks per SM allowed by registers / shared memory / warps / block slots",
         " / ".join(fmt(limits.get(key)) for key in ("registers", "shared_memory", "warps", "blocks"))),
        ("active blocks per SM", fmt(occupancy["active_blocks_per_sm"])),
        ("max warps per SM", fmt(occupancy["max_warps_per_sm"])),
        ("achieved (%, counter)", fmt(occupancy["achieved_pct"], 1)),
        ("achieved (warps per SM, counter)", fmt(occupancy["achieved_warps_per_sm"], 1)),
        ("mean resident warps per SM (trace)", fmt(warps.get("mean_occupancy_warps_per_sm"), 1)),
        ("waves per SM", fmt(occupancy["waves_per_sm"], 2)),
        ("tail effect (partial last wave)", fmt(tail.get("tail_effect"))),
    ]
    return _section("occupancy-panel", "Occupancy", [fields_table(rows, "occupancy-table")])


def occupancy_time_panel(result: dict[str, Any], curve: pl.DataFrame | None) -> html.Section:
    if curve is None:
        return _section("occupancy-time-panel", "Occupancy over time", [html.P(NEEDS_TRACE, className="hint")])
    tail = result.get("tail") or {}
    rows = [("tail (ns)", fmt(tail.get("tail_ns"), 0)), ("tail (fraction of the launch)",
                                                         fmt(tail.get("tail_fraction"), 3))]
    return _section("occupancy-time-panel", "Occupancy over time", [
        dcc.Graph(id="occupancy-time-figure", figure=figures.occupancy_time_figure(curve),
                  config={"displaylogo": False}),
        fields_table(rows, "tail-table"),
    ])


def latency_panel(result: dict[str, Any], histogram: pl.DataFrame | None) -> html.Section:
    if histogram is None:
        return _section("latency-panel", "Warp latency", [html.P(NEEDS_TRACE, className="hint")])
    warps = result["warps"]
    rows = [(label, fmt(warps.get(key), 0)) for label, key in (
        ("mean (ns)", "mean_latency_ns"), ("median (ns)", "p50_latency_ns"), ("p90 (ns)", "p90_latency_ns"),
        ("p99 (ns)", "p99_latency_ns"), ("max (ns)", "max_latency_ns"))]
    rows.append(("throughput (warps per ns per SM)", fmt(warps.get("throughput_warps_per_ns_per_sm"), 5)))
    return _section("latency-panel", "Warp latency", [
        dcc.Graph(id="latency-figure", figure=figures.latency_histogram_figure(histogram),
                  config={"displaylogo": False}),
        fields_table(rows, "latency-table"),
    ])


def littles_law_panel(result: dict[str, Any]) -> html.Section:
    law = result.get("littles_law")
    if not law:
        return _section("littles-law-panel", "Little's law", [html.P(NEEDS_TRACE, className="hint")])
    whole = law.get("whole_launch") or {}
    rows = [
        (f"window ({law['window_kind'].replace('_', ' ')}, ns)", " to ".join(fmt(v, 0) for v in law["window_ns"])),
        ("mean resident warps per SM", fmt(law["mean_occupancy"])),
        ("latency x throughput", fmt(law["latency_x_throughput"])),
        ("relative error", fmt(law["relative_error"], 3)),
        ("latency x throughput, clipped to the window", fmt(law["clipped_latency_x_throughput"])),
        ("relative error, clipped", fmt(law["clipped_relative_error"], 3)),
        ("whole launch: mean resident warps per SM", fmt(whole.get("mean_occupancy"))),
        ("whole launch: latency x throughput", fmt(whole.get("latency_x_throughput"))),
    ]
    body: list = [fields_table(rows, "littles-law-table")]
    if law.get("explanation"):
        body.append(html.P(law["explanation"], className="hint"))
    return _section("littles-law-panel", "Little's law", body)


def analysis_failed(message: str) -> list[html.Section]:
    """Every panel in its place, saying why it is empty."""
    return [_section(slot_id, title, [html.P(message, className="error")]) for slot_id, title in (
        ("verdict-panel", "Verdict"), ("occupancy-panel", "Occupancy"),
        ("occupancy-time-panel", "Occupancy over time"), ("latency-panel", "Warp latency"),
        ("littles-law-panel", "Little's law"))]
