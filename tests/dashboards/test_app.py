"""The dashboard without a browser: uploads into a real SQLite store, page layouts, the timeline's choices,
and the Dash callback endpoint as the browser calls it."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import plotly.graph_objects as go
import polars as pl
import pytest
from dash.development.base_component import Component

from tracekit import format as display
from tracekit.analysis import timeline
from tracekit.api import TraceAnalysis, analyze_stored
from tracekit.dashboards import analysis_cache, pages_compare, pages_launch
from tracekit.dashboards.analysis_cache import AnalysisCache
from tracekit.dashboards.app import create_app
from tracekit.dashboards.pages_launch import MAX_WARP_BARS, timeline_view, window_from_relayout
from tracekit.dashboards.pages_upload import import_upload
from tracekit.dashboards.panels import NOT_SHOWN_TRACE
from tracekit.ingest import ingest

XSS_KERNEL = "<img src=x onerror=alert(1)>"
NSYS_ONE_KERNEL = "nsys_2025.5.2_RTX3060_perfsandbox_report1.sqlite"  # README: 1 kernel (kernVectorAdd)


def data_url(raw: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(raw).decode()


def walk(tree) -> list:
    """Every component and string in a Dash layout, depth first."""
    found = [tree]
    children = getattr(tree, "children", None) if isinstance(tree, Component) else tree
    if isinstance(children, list | tuple):
        for child in children:
            found += walk(child)
    elif isinstance(children, Component | str):
        found += walk(children) if isinstance(children, Component) else [children]
    return found


def by_id(tree, component_id: str) -> Component:
    matches = [c for c in walk(tree) if isinstance(c, Component) and getattr(c, "id", None) == component_id]
    assert len(matches) == 1, f"{component_id}: {len(matches)} components"
    return matches[0]


def plotted(spec: dict | go.Figure) -> go.Figure:
    """A page's figure, a plotly dict drawn as it is, read through plotly's validation (a dict plotly would refuse
    fails here)."""
    return go.Figure(spec)


def point_count(figure: go.Figure) -> int:
    return sum(len(trace.x) for trace in figure.data)


# ---- uploads ---------------------------------------------------------------------------------------------------


def test_upload_imports_a_real_export_then_reports_it_already_stored(sqlite_store, real_export):
    raw = real_export(NSYS_ONE_KERNEL).read_bytes()
    first = import_upload(TraceAnalysis(sqlite_store), NSYS_ONE_KERNEL, data_url(raw), 200_000_000)
    assert (first.outcome, first.launch_count) == ("imported", 1)
    assert first.message == f"{NSYS_ONE_KERNEL} imported as import {first.import_id} with 1 launch"
    imports = sqlite_store.imports()
    assert imports["name"].to_list() == [NSYS_ONE_KERNEL]
    assert imports["size_bytes"].to_list() == [len(raw)]
    again = import_upload(TraceAnalysis(sqlite_store), NSYS_ONE_KERNEL, data_url(raw), 200_000_000)
    assert (again.outcome, again.import_id) == ("already stored", first.import_id)
    assert sqlite_store.imports().height == 1


def test_garbage_upload_is_an_error_naming_the_file_and_stores_nothing(sqlite_store):
    status = import_upload(
        TraceAnalysis(sqlite_store), "garbage.txt", data_url(b"this is not a profile\x01\x02\n42\n"), 10**6
    )
    assert status.outcome == "error"
    assert status.message.startswith("garbage.txt")
    assert "tracekit-upload-" not in status.message  # the temporary path is replaced by the user's file name
    assert sqlite_store.imports().height == 0


def test_upload_over_the_size_limit_is_refused_with_the_sizes(
    sqlite_store, write_warp_trace, synthetic_warps, tmp_path
):
    raw = write_warp_trace(tmp_path / "t.csv", "k", synthetic_warps(4)).read_bytes()
    status = import_upload(TraceAnalysis(sqlite_store), "t.csv", data_url(raw), max_upload_bytes=len(raw) - 1)
    assert status.outcome == "error"
    assert "over the upload limit" in status.message and "tracekit import" in status.message
    assert sqlite_store.imports().height == 0
    assert (
        import_upload(TraceAnalysis(sqlite_store), "t.csv", data_url(raw), max_upload_bytes=len(raw)).outcome
        == "imported"
    )


def test_upload_of_data_that_is_not_base64_is_an_error(sqlite_store):
    status = import_upload(TraceAnalysis(sqlite_store), "x.csv", "data:text/csv;base64,@@@not base64@@@", 10**6)
    assert status.outcome == "error" and "not base64" in status.message
    assert sqlite_store.imports().height == 0


def test_upload_file_name_cannot_escape_the_temporary_folder(sqlite_store, write_warp_trace, synthetic_warps, tmp_path):
    raw = write_warp_trace(tmp_path / "t.csv", "k", synthetic_warps(2)).read_bytes()
    status = import_upload(TraceAnalysis(sqlite_store), "../../etc/evil.csv", data_url(raw), 10**6)
    assert status.outcome == "imported"
    assert Path(sqlite_store.imports()["source_path"][0]).name == "evil.csv"
    assert not Path("/etc/evil.csv").exists()


# ---- launch page -----------------------------------------------------------------------------------------------


@pytest.fixture
def xss_launch(sqlite_store, write_warp_trace, synthetic_warps, tmp_path) -> tuple[int, list]:
    warps = synthetic_warps(64)  # 256 warps: few enough to draw each
    result, _ = ingest(sqlite_store, write_warp_trace(tmp_path / "xss.csv", XSS_KERNEL, warps))
    launch_id = sqlite_store.launches(import_id=result.import_id)["id"][0]
    return launch_id, warps


def test_launch_page_shows_user_strings_as_text_only(sqlite_store, xss_launch):
    launch_id, _ = xss_launch
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), launch_id)
    table_strings = [s for s in walk(by_id(page, "launch-table")) if isinstance(s, str)]
    assert XSS_KERNEL in table_strings
    for component in walk(page):
        if isinstance(component, Component):
            assert type(component).__name__ != "Markdown"
            assert not getattr(component, "dangerously_allow_html", False)
    figure = plotted(by_id(page, "warp-timeline").figure)
    assert XSS_KERNEL not in figure.to_json()  # plotly renders some HTML in its text: keep names out


def test_launch_page_draws_every_warp_when_few(sqlite_store, xss_launch):
    launch_id, warps = xss_launch
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), launch_id)
    figure = plotted(by_id(page, "warp-timeline").figure)
    assert point_count(figure) == 3 * len(warps)  # start, end and a gap per warp
    drawn_us = sorted(x for trace in figure.data for x in trace.x if x is not None)
    assert drawn_us[0] == 0.0
    assert drawn_us[-1] == pytest.approx(max(end for *_, end in warps) / 1000)
    assert by_id(page, "timeline-note").children.startswith(f"{len(warps)} warps in view")


def test_a_launch_above_the_defer_threshold_is_laid_out_before_its_analysis(sqlite_store, xss_launch, monkeypatch):
    """Not analysed yet and above the threshold: the page holds the figures its warps give and a place-holder,
    nothing of the verdict, and asks for the analysis (`analysis-pending`); once stored, the page is whole."""
    launch_id, warps = xss_launch
    monkeypatch.setattr(analysis_cache, "DEFER_ANALYSIS_WARPS", len(warps) - 1)
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), launch_id)
    assert f"{len(warps):,} warps" in by_id(page, "analysis-running").children
    assert by_id(page, "analysis-pending").data == {"pair": None}
    assert sum(plotted(by_id(page, "latency-figure").figure).data[0].y) == len(warps)
    assert (
        plotted(by_id(page, "occupancy-time-figure").figure).layout.shapes == ()
    )  # no tail marked without the analysis
    assert by_id(page, "pairing-evidence").children == "Analysing..."
    ids = {getattr(c, "id", None) for c in walk(page) if isinstance(c, Component)}
    assert not ids & {"verdict-mode", "verdict-evidence", "tail-table", "latency-table", "littles-law-table"}
    analyze_stored(sqlite_store, [launch_id])  # what the page's request computes
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), launch_id)
    assert by_id(page, "analysis-pending").data is None
    assert by_id(page, "verdict-mode").children
    assert plotted(by_id(page, "occupancy-time-figure").figure).layout.shapes  # the tail, marked


def test_launch_page_analysis_panels_render_the_analysis_result(sqlite_store, xss_launch):
    launch_id, warps = xss_launch
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), launch_id)
    result = analyze_stored(sqlite_store, [launch_id])[0]
    verdict = result.classification
    assert by_id(page, "verdict-mode").children.startswith(verdict.mode)
    assert [item.children for item in by_id(page, "verdict-evidence").children] == verdict.evidence
    latency = plotted(by_id(page, "latency-figure").figure)
    assert sum(latency.data[0].y) == len(warps)  # every warp in one latency bin
    law_strings = [s for s in walk(by_id(page, "littles-law-table")) if isinstance(s, str)]
    assert display.number(result.littles_law.mean_occupancy) in law_strings
    curve = plotted(by_id(page, "occupancy-time-figure").figure)
    # 8 SMs, each holding 2 blocks of 4 warps at the busiest: the curve peaks at 8 warps per SM.
    assert max(curve.data[0].y) == pytest.approx(8, abs=0.5)


def test_timeline_bins_when_zoomed_out_and_draws_warps_when_zoomed_in(synthetic_warps):
    rows = synthetic_warps(2000)  # 8000 warps, more than one view draws
    assert len(rows) > MAX_WARP_BARS
    warps = timeline.relative_times(
        pl.DataFrame(rows, schema=["sm_id", "block_id", "warp_in_block", "start_ns", "end_ns"], orient="row")
    )
    spec, note = timeline_view(warps, None, None)
    figure = plotted(spec)
    (heatmap,) = figure.data
    assert heatmap.type == "heatmap"
    assert list(heatmap.y) == list(range(8))
    assert point_count(figure) * len(heatmap.y) <= 20_000
    # Each SM holds 2 blocks of 4 warps nearly all the time: the mean over the launch is close to 8.
    assert 7 < sum(sum(row) for row in heatmap.z) / (len(heatmap.z) * len(heatmap.z[0])) <= 8
    assert note.startswith(f"More than {MAX_WARP_BARS:,} warps in view")
    # The hint names controls that exist: box zoom on the figure (plotly's default drag mode, not turned off),
    # the page's "Show" SM menu, and double-click to reset.
    assert "Drag a box over the figure to zoom in" in note and "the Show menu" in note and "double-click" in note
    assert figure.layout.dragmode in (None, "zoom") and not figure.layout.xaxis.fixedrange

    window = window_from_relayout({"xaxis.range[0]": 2.0, "xaxis.range[1]": 5.5})
    assert window == (2000, 5500)
    expected = sum(1 for _, _, _, start, end in rows if end > 2000 and start < 5500)
    spec, note = timeline_view(warps, None, window)
    figure = plotted(spec)
    assert {trace.type for trace in figure.data} == {"scatter"}
    assert point_count(figure) == 3 * expected
    assert list(figure.layout.xaxis.range) == [2.0, 5.5]

    on_sm_3 = sum(1 for sm, _, _, start, end in rows if sm == 3 and end > 2000 and start < 5500)
    figure = plotted(timeline_view(warps, 3, window)[0])
    assert point_count(figure) == 3 * on_sm_3
    slots = {y for trace in figure.data for y in trace.y if y is not None}
    assert slots == set(range(8))  # two blocks of four warps at a time on SM 3


def test_relayout_events_map_to_windows():
    assert window_from_relayout(None) is False
    assert window_from_relayout({"autosize": True}) is False
    assert window_from_relayout({"yaxis.range[0]": 1, "yaxis.range[1]": 2}) is False
    assert window_from_relayout({"xaxis.autorange": True, "yaxis.autorange": True}) is None
    assert window_from_relayout({"xaxis.range": [0.0015, 1.0]}) == (1, 1000)


def test_launch_without_warps_says_so(sqlite_store, real_export):
    result, _ = ingest(sqlite_store, real_export(NSYS_ONE_KERNEL))
    launch_id = sqlite_store.launches(import_id=result.import_id)["id"][0]
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), launch_id)
    # No empty timeline or trace panels: one line says what would add them.
    ids = {getattr(c, "id", None) for c in walk(page) if isinstance(c, Component)}
    assert not ids & {"warp-timeline", "timeline-panel", "latency-panel", "occupancy-time-panel", "littles-law-panel"}
    assert NOT_SHOWN_TRACE in walk(by_id(page, "not-recorded"))
    strings = [s for s in walk(by_id(page, "launch-table")) if isinstance(s, str)]
    assert "kernVectorAdd(const float *, const float *, float *, int)" in strings


# ---- compare ---------------------------------------------------------------------------------------------------


def test_compare_page_reports_missing_and_malformed_ids(sqlite_store, xss_launch):
    launch_id, _ = xss_launch
    page = pages_compare.layout(
        TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), str(launch_id), "999999"
    )
    assert any(isinstance(s, str) and "No launch B = 999999" in s for s in walk(page))
    page = pages_compare.layout(
        TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), "1; drop table", str(launch_id)
    )
    assert any(isinstance(s, str) and "is not a launch id" in s for s in walk(page))


# ---- the Dash endpoint, as the browser calls it ----------------------------------------------------------------


def route(client, pathname: str, search: str = "") -> str:
    response = client.post(
        "/_dash-update-component",
        json={
            "output": "page.children",
            "outputs": {"id": "page", "property": "children"},
            "inputs": [
                {"id": "url", "property": "pathname", "value": pathname},
                {"id": "url", "property": "search", "value": search},
            ],
            "changedPropIds": ["url.pathname"],
            "state": [],
        },
    )
    assert response.status_code == 200
    return json.dumps(response.get_json())  # plain JSON: Dash's own encoding escapes "/"


def test_router_pages_and_not_found(tmp_path):
    app = create_app(f"sqlite:///{tmp_path / 'app.sqlite'}")
    client = app.server.test_client()
    assert client.get("/").status_code == 200
    assert "The store is empty" in route(client, "/library")
    assert "Drag and drop files here" in route(client, "/upload")
    assert "is not a launch id" in route(client, "/launch/abc")
    assert "no launch 5 in the store" in route(client, "/launch/5")
    assert "no page at /nowhere" in route(client, "/nowhere")
    assert "Pick two launch ids" in route(client, "/compare")
    # The page shell loads nothing from the internet.
    html = client.get("/").get_data(as_text=True)
    assert "https://" not in html and "http://" not in html.replace("http://www.w3.org", "")
