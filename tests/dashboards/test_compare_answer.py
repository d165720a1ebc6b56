"""The compare page shows both launches' speed-of-light charts and rooflines on shared axes."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from dash.development.base_component import Component

from tracekit.api import TraceAnalysis, analyze_stored
from tracekit.dashboards import pages_compare
from tracekit.dashboards.analysis_cache import AnalysisCache
from tracekit.ingest import ingest

H100 = Path(__file__).resolve().parents[2] / "sample_traces" / "h100"


def components(tree) -> dict[str, Component]:
    found, stack = {}, [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Component):
            if getattr(node, "id", None):
                found[node.id] = node
            children = getattr(node, "children", None)
            stack += children if isinstance(children, list) else [children]
    return found


def test_both_sides_share_the_roofline_axes_and_show_their_own_numbers(sqlite_store):
    ingest(sqlite_store, H100 / "samples.raw.csv")
    launches = sqlite_store.launches().filter(pl.col("kernel_name").str.starts_with("vector_add("))
    first, last = launches["id"][0], launches["id"][-1]  # 8 and 64 warps per SM
    page = components(
        pages_compare.layout(
            TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), str(first), str(last)
        )
    )
    a, b = page["compare-roofline-a"].figure, page["compare-roofline-b"].figure
    assert a.layout.xaxis.range == b.layout.xaxis.range and a.layout.yaxis.range == b.layout.yaxis.range
    results = analyze_stored(sqlite_store, [first, last])
    for figure, result in ((a, results[0]), (b, results[1])):
        marks = [t.y[0] for t in figure.data if t.mode == "markers"]
        assert marks and set(marks) == {result.ceilings.roofline.achieved_flop_per_s}
    for side, result in (("a", results[0]), ("b", results[1])):
        sol = page[f"compare-sol-{side}"].figure
        assert max(sol.data[0].x) == result.classification.utilization[0].pct
        assert list(sol.layout.xaxis.range) == [0, 110]
