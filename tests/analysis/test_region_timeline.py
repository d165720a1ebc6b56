"""The region figures' frames (tracekit.analysis.region_timeline) against hand computations, the real
warp-specialized sample, and the figures and report built from them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import plotly.graph_objects as go
import polars as pl
import pytest

from tracekit import figures
from tracekit.analysis.region_timeline import (
    region_layout,
    region_occupancy_curves,
    region_timeline,
    warp_groups,
)
from tracekit.importers import read_file
from tracekit.parsed import REGION_SCHEMA, conform

REPO = Path(__file__).resolve().parents[2]
WS_PIPELINE = REPO / "sample_traces" / "regions" / "ws_pipeline.v2.gz"


def regions(rows: list[tuple[int, int, int, str, int, int, int]]) -> pl.DataFrame:
    """(sm, block, warp, region, depth, start_ns, end_ns) rows as the store holds them."""
    frame = pl.DataFrame(
        rows, schema=["sm_id", "block_id", "warp_in_block", "region", "depth", "start_ns", "end_ns"], orient="row"
    )
    return conform(frame.with_columns(pl.lit(0).alias("launch_key")), REGION_SCHEMA)


HAND = regions(
    [
        (0, 0, 0, "A", 0, 1000, 1100),  # warp 0 of block 0: A, with B nested in 23..57
        (0, 0, 0, "B", 1, 1023, 1057),
        (0, 0, 1, "C", 0, 1000, 1100),  # warp 1 of block 0: C throughout
        (1, 1, 0, "D", 0, 1000, 1050),  # warp 0 of block 1 (another SM): D in the first half
    ]
)


def test_binned_cells_take_the_region_holding_most_exclusive_time():
    layout = region_layout(HAND)
    assert layout.names == ("A", "C", "D", "B") and layout.span == 100
    # Rows in SM, block, warp order.
    assert layout.rows.select("row", "sm_id", "block_id", "warp_in_block").rows() == [
        (0, 0, 0, 0),
        (1, 0, 0, 1),
        (2, 1, 1, 0),
    ]
    one_each = region_timeline(layout, max_slices=0, max_cells=30, max_rows=100)
    assert one_each.mode == "binned"
    cells = {(y, b): (r, s) for y, b, r, s in one_each.cells.select("y", "bin", "region", "share").iter_rows()}
    y_of = dict(one_each.groups.select("row", "y").iter_rows())
    # Ten bins of 10 ns (the fewest drawn). Warp 0: A alone, then bin 2 (20..30) holds A 3 and B 7 -> B at 70%,
    # B alone in 30..50, bin 5 again B 7 of 10, A alone after 60.
    warp0 = [cells[(y_of[0], b)] for b in range(10)]
    assert warp0 == [("A", 1.0)] * 2 + [("B", 0.7), ("B", 1.0), ("B", 1.0), ("B", 0.7)] + [("A", 1.0)] * 4
    assert [cells[(y_of[1], b)] for b in range(10)] == [("C", 1.0)] * 10
    assert [cells.get((y_of[2], b)) for b in range(10)] == [("D", 1.0)] * 5 + [None] * 5  # no region: no cell
    # Warps at the same block position share a row when rows are few: warp 0 of blocks 0 and 1 together. Bin 2
    # holds A 3, B 7, D 10 of their 2 x 10 ns -> D at 50%; bin 5: A 3, B 7 -> B at 35%; bin 6: A at 50%.
    gathered = region_timeline(layout, max_slices=0, max_cells=20, max_rows=2)
    groups = gathered.groups
    assert groups.filter(pl.col("row") == 0)["y"].item() == groups.filter(pl.col("row") == 2)["y"].item()
    assert groups["y"].n_unique() == 2
    y = groups.filter(pl.col("row") == 0)["y"].item()
    mine = dict(
        (b, (r, s)) for b, r, s in gathered.cells.filter(pl.col("y") == y).select("bin", "region", "share").iter_rows()
    )
    assert mine[2] == ("D", 0.5) and mine[5] == ("B", 0.35) and mine[6] == ("A", 0.5)


def test_bars_when_few_are_in_view_window_and_rows():
    layout = region_layout(HAND)
    every = region_timeline(layout)
    assert every.mode == "slices" and every.in_view == 4 and every.cells is None
    assert sorted(every.slices.select("region", "start", "end").rows()) == [
        ("A", 0, 100),
        ("B", 23, 57),
        ("C", 0, 100),
        ("D", 0, 50),
    ]
    late = region_timeline(layout, window=(57, 100))
    assert sorted(late.slices["region"].to_list()) == ["A", "C"]  # B ends at 57, D at 50
    one_warp = region_timeline(layout, row_range=(2, 2))
    assert one_warp.slices["region"].to_list() == ["D"] and one_warp.rows["block_id"].to_list() == [1]
    with pytest.raises(ValueError):
        region_timeline(layout, window=(50, 50))


def test_occupancy_curves_integrate_to_each_regions_time():
    curves = region_occupancy_curves(HAND, sm_count=4, bins=10)
    width = curves["bin_end"][0] - curves["bin_start"][0]
    area = curves.group_by("region").agg((pl.col("mean_warps_per_sm") * width * 4).sum())
    assert dict(area.iter_rows()) == pytest.approx({"A": 100, "B": 34, "C": 100, "D": 50})
    # Every bin of every region is present, zero where no warp was inside.
    assert curves.group_by("region").len()["len"].to_list() == [10] * 4
    d = curves.filter(pl.col("region") == "D").sort("bin")["mean_warps_per_sm"].to_list()
    assert d == [0.25] * 5 + [0.0] * 5


def test_real_sample_rows_keep_roles_apart():
    parsed = read_file(WS_PIPELINE)
    layout = region_layout(parsed.regions)
    timeline = region_timeline(layout)
    assert timeline.mode == "binned" and timeline.in_view == parsed.regions.height
    groups = timeline.groups
    assert groups.height == 528 * 5 and groups["row"].n_unique() == groups.height  # every warp in one row
    assert groups.group_by("y").agg(pl.col("warp_in_block").n_unique())["warp_in_block"].max() == 1
    assert groups["y"].n_unique() <= 200
    assert timeline.cells.height <= 20_000
    # The producer's rows (warp 0) are mostly load_tile; consumers' never are.
    producer = set(groups.filter(pl.col("warp_in_block") == 0)["y"].to_list())
    by_role = timeline.cells.with_columns(pl.col("y").is_in(list(producer)).alias("producer"))
    assert by_role.filter(~pl.col("producer"))["region"].is_in(["load_tile", "wait_empty"]).sum() == 0
    top = by_role.filter(pl.col("producer"))["region"].value_counts(sort=True)["region"][0]
    assert top == "load_tile"
    assert warp_groups(layout.rows, 10)["y"].n_unique() == 10  # 2 runs x 5 positions


def test_figures_show_names_only_as_escaped_text():
    odd = "<b>x</b> & %{y}"
    frame = HAND.with_columns(pl.col("region").replace({"A": odd}))
    layout = region_layout(frame)
    for timeline in (region_timeline(layout), region_timeline(layout, max_slices=0)):
        figure = figures.region_timeline_spec(timeline)
        go.Figure(figure)  # a dict plotly accepts (it is built without plotly's validation)
        text = json.dumps(figure)
        spec = json.loads(text)
        legend = [t["name"] for t in spec["data"] if t.get("name")]
        assert "&lt;b&gt;x&lt;/b&gt; &amp; %{y}" in legend and odd not in legend
        templates = " ".join(t.get("hovertemplate", "") for t in spec["data"])
        assert "<b>x" not in templates and "&lt;b&gt;" not in templates  # names never enter a template
        assert odd not in text
    curves = region_occupancy_curves(frame)
    occupancy = figures.region_occupancy_spec(curves, layout.names, layout.time_unit)
    go.Figure(occupancy)
    assert {t["name"] for t in occupancy["data"]} == {figures.region_text(n) for n in layout.names}


def test_region_charts_draw_the_frames_under_one_title_and_note():
    """`present.regions.region_charts`: the hand-made regions' bars (each instance's start and end) and each
    region's occupancy curve, under the titles every view writes; the note says bars or binned, and how to zoom
    only where the view redraws for a zoom."""
    from tracekit.present.regions import region_charts

    layout = region_layout(HAND)
    timeline, curves = region_timeline(layout), region_occupancy_curves(HAND)
    drawn, occupancy = region_charts(timeline, curves, layout.names, layout.time_unit)
    assert (drawn.title, occupancy.title) == ("Warp timeline by region", "Warps in each region per SM over time")
    assert drawn.note is not None and "each a bar" in drawn.note and "Double-click" not in drawn.note
    bars = sorted(
        (x0, x1)
        for trace in drawn.spec["data"]
        if trace.get("mode") == "lines"
        for x0, x1 in zip(trace["x"][::3], trace["x"][1::3], strict=True)
    )
    first = HAND["start_ns"].min()  # the axis: µs since the first region started
    expected = sorted(
        ((start - first) / 1000, (end - first) / 1000) for start, end in HAND.select("start_ns", "end_ns").iter_rows()
    )
    assert [x for bar in bars for x in bar] == pytest.approx([x for bar in expected for x in bar])
    lines = {t["name"]: t["y"] for t in occupancy.spec["data"]}
    for name in layout.names:
        expected = curves.filter(pl.col("region") == name).sort("bin")["mean_warps_per_sm"].to_list()
        assert lines[name] == expected, name
    zoomable = region_charts(region_timeline(layout, max_slices=0), curves, layout.names, layout.time_unit, True)
    assert zoomable[0].note is not None and "binned" in zoomable[0].note and "Zoom in (drag a box)" in zoomable[0].note


def test_html_report_draws_the_region_figures(tmp_path):
    db = tmp_path / "store.sqlite"
    out = tmp_path / "report.html"
    for args in (["import", str(WS_PIPELINE)], ["report", "1", "-o", str(out)]):
        done = subprocess.run(
            [sys.executable, "-m", "tracekit.cli.main", *args, "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert "<h3>Warp timeline by region</h3>" in page and "<h3>Warps in each region per SM over time</h3>" in page
    specs = [
        json.loads(chunk.split(">", 1)[1].split("</script>", 1)[0])
        for chunk in page.split('<script type="application/json"')[1:]
    ]
    heatmaps = [s for s in specs if any(t.get("type") == "heatmap" and t.get("text") for t in s["data"])]
    assert len(heatmaps) == 1  # the binned region timeline (the warp heatmap has no text)
    names = {"setup", "mainloop", "wait_empty", "load_tile", "wait_full", "compute", "epilogue"}
    legend = {t["name"] for t in heatmaps[0]["data"] if t.get("name")}
    assert legend == names


def test_html_report_draws_regions_recorded_in_cycles_only(tmp_path):
    """A Proton trace without the SM clock has regions in cycles and no warp records: the report still draws
    its region figures, on a cycle axis, and no warp timeline."""
    db = tmp_path / "store.sqlite"
    out = tmp_path / "report.html"
    source = REPO / "sample_traces" / "regions" / "proton_matmul.chrome_trace.gz"
    for args in (["import", str(source)], ["report", "1", "-o", str(out)]):
        done = subprocess.run(
            [sys.executable, "-m", "tracekit.cli.main", *args, "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert page.count("<h3>Warp timeline by region</h3>") == 1 and "Warp timeline per SM" not in page
    assert page.count("SM cycles since the first region started") == 2  # both region figures' axes
