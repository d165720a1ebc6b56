"""A result displays itself in a notebook: `_repr_html_` holds the headline, the speed-of-light chart's and the
roofline's data and What to try first, nothing from the input as markup; `figure(name)` gives plotly figures."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import plotly.graph_objects as go
import pytest

from tracekit.api import analyze_stored
from tracekit.ingest import ingest
from tracekit.store import Store

H100 = Path(__file__).resolve().parents[1] / "sample_traces" / "h100"
XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """vector_add traced at 64 warps per SM, its counters borrowed from the profiled run (the raw page)."""
    store = Store.open(f"sqlite:///{tmp_path_factory.mktemp('nb') / 'store.sqlite'}")
    ingest(store, H100 / "samples.raw.csv")
    result, _ = ingest(store, H100 / "vector_add_64warps.csv.gz")
    launch_id = int(store.launches(import_id=result.import_id)["id"][0])
    return analyze_stored(store, [launch_id])[0]


def plotly_data(page: str) -> list[list[dict]]:
    """Each figure's traces as embedded by plotly's to_html (`Plotly.newPlot(id, [traces], layout, config)`)."""
    figures = []
    for call in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\])\s*,\s*\{", page, re.S):
        figures.append(json.loads(call.group(1)))
    return figures


def test_repr_html_holds_the_headline_the_charts_data_and_what_to_try(traced):
    page = traced._repr_html_()
    assert traced.classification.headline and traced.classification.headline in page
    sol, roofline = plotly_data(page)
    units = traced.classification.utilization
    assert sorted(sol[0]["x"], reverse=True)[0] == pytest.approx(units[0].pct)
    assert any(label.startswith(units[0].label) for label in sol[0]["y"])
    marks = [t["y"][0] for t in roofline if t.get("mode") == "markers"]
    assert marks and all(y == pytest.approx(traced.ceilings.roofline.achieved_flop_per_s) for y in marks)
    assert "What to try first" in page and "<li><b>ILP" in page
    assert "https://cdn.plot.ly/" in page and page.count("<script charset") == 1  # plotly.js once, from its CDN


def test_repr_html_escapes_what_came_from_the_input(traced):
    odd = dataclasses.replace(traced, kernel=dataclasses.replace(traced.kernel, name=XSS))
    page = odd._repr_html_()
    assert XSS not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_figures_by_name(traced):
    for name in ("speed_of_light", "roofline", "occupancy"):
        assert isinstance(traced.figure(name), go.Figure)
    occupancy = traced.figure("occupancy").data[0]
    assert traced.occupancy.theoretical_warps_per_sm in occupancy.x
    with pytest.raises(ValueError, match="no figure 'gantt'"):
        traced.figure("gantt")
