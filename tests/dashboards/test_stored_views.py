"""The launch page of a big launch draws from its figure aggregates kept in the store: a second server process
builds the page without reading the warps, the same figures as from the warps, and reads them only to zoom."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.dashboards.test_app import by_id, walk
from tracekit.analysis import timeline
from tracekit.api import MAX_WARP_BARS, TraceAnalysis
from tracekit.dashboards import pages_launch
from tracekit.dashboards.analysis_cache import AnalysisCache
from tracekit.dashboards.pages_launch import timeline_view
from tracekit.ingest import ingest
from tracekit.store import Store, schema
from tracekit.stored.aggregates import AGGREGATES_VERSION

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "h100" / "vector_add_16warps.csv.gz"


def view_chunks(store: Store) -> int:
    with store.engine.connect() as connection:
        return connection.scalar(
            select(func.count())
            .select_from(schema.bulk_chunks)
            .where(schema.bulk_chunks.c.kind.like(f"view{AGGREGATES_VERSION}:%"))
        )


def test_a_second_process_draws_the_page_from_stored_aggregates(sqlite_store: Store, monkeypatch) -> None:
    result, _ = ingest(sqlite_store, SAMPLE)
    launch_id = int(sqlite_store.launches(import_id=result.import_id)["id"][0])
    warps = timeline.relative_times(sqlite_store.warps(launch_id))
    assert warps.height > MAX_WARP_BARS  # the binned view
    first = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), launch_id)
    assert view_chunks(sqlite_store) == 4

    def no_warps(self, launch_id):
        raise AssertionError("the page read the warps")

    monkeypatch.setattr(Store, "warps", no_warps)
    page = pages_launch.layout(
        TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), launch_id
    )  # a fresh process's cache
    expected, note = timeline_view(warps, None, None)
    drawn = by_id(page, "warp-timeline").figure
    assert drawn == expected == by_id(first, "warp-timeline").figure  # plotly dicts, drawn as they are
    assert note in walk(by_id(page, "timeline-note"))
    for figure_id in ("occupancy-time-figure", "latency-figure"):
        assert by_id(page, figure_id).figure == by_id(first, figure_id).figure
    sm_options = by_id(page, "timeline-sm").options
    assert [o["value"] for o in sm_options[1:]] == [str(s) for s in sorted(warps["sm_id"].unique().to_list())]
    monkeypatch.undo()

    # detail on zoom: the warps in the window, read then
    cache = AnalysisCache(TraceAnalysis(sqlite_store))
    span = int(warps["end_rel_ns"].max())
    zoomed, zoom_note = timeline_view(cache.warps.get(launch_id), None, (span // 2, span // 2 + span // 200))
    assert "warps in view, each drawn" in zoom_note and len(zoomed["data"]) >= 1

    sqlite_store.delete_import(result.import_id)
    assert view_chunks(sqlite_store) == 0


@pytest.mark.parametrize("bins_rows", [1, 50, 132, 2000])
def test_full_view_keeps_the_heatmap_payload_bounded(bins_rows: int) -> None:
    from tracekit.stored.aggregates import MAX_HEATMAP_CELLS, full_view_bins

    bins = full_view_bins(bins_rows)
    assert 10 <= bins <= 400 and (bins_rows * bins <= MAX_HEATMAP_CELLS or bins == 10)
