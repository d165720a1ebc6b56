"""The launch page's analysis panels and the compare page, on the team's H100 samples (warp traces of vector_add
at 8, 16, 32 and 64 warps per SM, and the Nsight Compute CSV of the same run), without a browser.

Expected values come from the trace files themselves (recomputed here with polars), from the occupancy rules
worked out by hand, or from the store's own metric rows; never from the dashboard's output.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from dash.development.base_component import Component

from tests.dashboards.test_app import plotted
from tracekit import api
from tracekit import format as display
from tracekit.api import TraceAnalysis
from tracekit.dashboards import pages_compare, pages_launch
from tracekit.dashboards.analysis_cache import AnalysisCache
from tracekit.dashboards.app import create_app
from tracekit.dashboards.panels import NEEDS_COUNTERS
from tracekit.ingest import ingest
from tracekit.present.prediction import prediction_text
from tracekit.stored import analyses

VECTOR_ADD = [f"h100/vector_add_{warps:02d}warps.csv.gz" for warps in (8, 16, 32, 64)]
SM_COUNT = 132  # the traces' header: an H100 SXM


def walk(tree) -> list:
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


def text_of(tree) -> str:
    return " ".join(s for s in walk(tree) if isinstance(s, str))


def import_traces(store, sample_trace, names: list[str]) -> list[int]:
    ids = []
    for name in names:
        result, _ = ingest(store, sample_trace(name))
        ids.append(int(store.launches(import_id=result.import_id)["id"][0]))
    return ids


@pytest.fixture
def vector_add(sqlite_store, sample_trace) -> list[int]:
    """The four vector_add traces in a fresh SQLite store: launch ids at 8, 16, 32, 64 theoretical warps per SM."""
    return import_traces(sqlite_store, sample_trace, VECTOR_ADD)


def trace_facts(store, launch_id: int) -> dict[str, float]:
    """Occupancy and throughput of a launch straight from its warp records: warp-ns over (span x SMs), and warps
    over (span x SMs); the tail's marks: the last block's first warp start, the earliest SM's last warp end."""
    warps = store.warps(launch_id)
    origin, end = warps["start_ns"].min(), warps["end_ns"].max()
    span = end - origin
    return {
        "occupancy": (warps["end_ns"] - warps["start_ns"]).sum() / (span * SM_COUNT),
        "throughput": warps.height / (span * SM_COUNT),
        "last_block_start_ns": warps.group_by("block_id").agg(pl.col("start_ns").min())["start_ns"].max() - origin,
        "first_sm_idle_ns": warps.group_by("sm_id").agg(pl.col("end_ns").max())["end_ns"].min() - origin,
        "span_ns": span,
    }


def post_callback(
    client,
    output: str,
    outputs: list[tuple[str, str]],
    inputs: list[tuple[str, str, object]],
    state: list[tuple[str, str, object]],
) -> str:
    """What the browser sends when a callback's input changes; the answer as plain JSON text."""
    response = client.post(
        "/_dash-update-component",
        json={
            "output": output,
            "outputs": [{"id": i, "property": p} for i, p in outputs]
            if len(outputs) > 1
            else {"id": outputs[0][0], "property": outputs[0][1]},
            "inputs": [{"id": i, "property": p, "value": v} for i, p, v in inputs],
            "changedPropIds": [f"{inputs[0][0]}.{inputs[0][1]}"],
            "state": [{"id": i, "property": p, "value": v} for i, p, v in state],
        },
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    return json.dumps(response.get_json())


# ---- what-if ---------------------------------------------------------------------------------------------------


def test_what_if_is_prefilled_from_the_launch_and_recomputed_by_its_callback(sqlite_store, vector_add):
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), vector_add[0])
    # The trace's header: block 256,1,1; registers_per_thread 22; static 0 + dynamic 232,448 bytes.
    assert [by_id(page, i).value for i in ("whatif-block", "whatif-registers", "whatif-smem")] == [256, 22, 232448]
    assert by_id(page, "whatif-grid").value == 2048 and by_id(page, "whatif-ilp").value is None
    # 232,448 + the 1 KB reserve = 233,472 B per block = all of an H100 SM's 228 KB: 1 block of 8 warps.
    assert by_id(page, "whatif-occupancy").children.startswith(
        "Theoretical occupancy 8 of 64 warps per SM (12.5%), limited by shared memory"
    )

    client = create_app(sqlite_store.url).server.test_client()

    def ask(threads, registers, smem) -> str:
        return post_callback(
            client,
            "whatif-result.children",
            [("whatif-result", "children")],
            [
                ("whatif-block", "value", threads),
                ("whatif-registers", "value", registers),
                ("whatif-smem", "value", smem),
                ("whatif-ilp", "value", None),
                ("whatif-grid", "value", 2048),
            ],
            [("launch-id", "data", vector_add[0])],
        )

    # Without the shared memory: warps limit (64 / 8 = 8 blocks); registers allow 10 (see tests/analysis).
    assert "Theoretical occupancy 64 of 64 warps per SM (100.0%), limited by warps" in ask(256, 22, 0)
    # 64 registers: 2,048 per warp, 8 warps per sub-partition, 32 per SM.
    assert "Theoretical occupancy 32 of 64 warps per SM (50.0%), limited by registers" in ask(256, 64, 0)
    assert "a block of 2048 threads is over the 1024-thread limit" in ask(2048, 22, 0)
    assert "Enter registers per thread" in ask(256, None, 0)


def test_what_if_prediction_is_the_predictors(sqlite_store, vector_add):
    analysis = AnalysisCache(TraceAnalysis(sqlite_store)).get(vector_add[0])
    expected = api.predict_stored(sqlite_store, analysis.result, smem=0)
    body = text_of(pages_launch.what_if_view(TraceAnalysis(sqlite_store), analysis, 256, 22, 0))
    got = expected.predicted
    assert f"speed-up {got.speedup:.3g}x (interval {got.low:.3g}x to {got.high:.3g}x)" in body
    # the basis in present.prediction's words: the predictor's, a measured profile cited as "(measured)"
    assert prediction_text(expected, analysis.result).basis in body and "a measured sweep" in expected.basis


def test_sweep_panel_draws_each_launch_from_its_trace(sqlite_store, vector_add):
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), vector_add[1])
    assert by_id(page, "sweep-note").children.startswith(
        f"Sweep fitted over 4 launches (ids {vector_add[0]}, {vector_add[1]}, "
    )
    measured, model, this_launch = plotted(by_id(page, "sweep-figure").figure).data
    facts = [trace_facts(sqlite_store, launch_id) for launch_id in vector_add]
    assert list(measured.x) == pytest.approx([f["occupancy"] for f in facts], rel=1e-9)
    assert list(measured.y) == pytest.approx([f["throughput"] for f in facts], rel=1e-9)
    assert (this_launch.x[0], this_launch.y[0]) == pytest.approx((facts[1]["occupancy"], facts[1]["throughput"]))
    # The model line rises from the origin to the knee L x B, then stays at B.
    assert model.y[0] == 0 and model.y[1] == model.y[2]


def test_a_lone_launch_says_why_there_is_no_sweep_and_what_is_missing(sqlite_store, sample_trace, xss_free_trace):
    [launch_id] = import_traces(sqlite_store, sample_trace, VECTOR_ADD[:1])
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), launch_id)
    missing = [item.children for item in by_id(page, "not-recorded").children]
    assert any(
        line.startswith("No occupancy sweep: 1 launch of this kernel at this problem size on this device")
        for line in missing
    )
    assert not [c for c in walk(page) if getattr(c, "id", None) == "sweep-panel"]  # no empty sweep section
    assert by_id(page, "whatif-prediction").children.startswith(
        "No prediction: cannot tell latency-bound from throughput-bound: the launch has no Nsight Compute counters"
    )
    # A synthetic trace records neither registers nor shared memory nor the compute capability.
    page = pages_launch.layout(
        TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), xss_free_trace(sqlite_store)
    )
    assert by_id(page, "whatif-occupancy").children.startswith(
        "Enter registers per thread, dynamic shared memory per block"
    )


@pytest.fixture
def xss_free_trace(tmp_path, write_warp_trace, synthetic_warps):
    def add(store) -> int:
        result, _ = ingest(store, write_warp_trace(tmp_path / "plain.csv", "plain_kernel", synthetic_warps(16)))
        return int(store.launches(import_id=result.import_id)["id"][0])

    return add


# ---- occupancy over time, Little's law, stalls -----------------------------------------------------------------


def test_occupancy_figure_marks_the_tail_where_the_trace_puts_it(sqlite_store, vector_add):
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), vector_add[0])
    facts = trace_facts(sqlite_store, vector_add[0])
    shapes = plotted(by_id(page, "occupancy-time-figure").figure).layout.shapes
    rect = next(s for s in shapes if s.type == "rect")
    assert (rect.x0, rect.x1) == pytest.approx((facts["first_sm_idle_ns"] / 1000, facts["span_ns"] / 1000))
    lines = sorted(s.x0 for s in shapes if s.type == "line" and s.x0 == s.x1)
    assert lines == pytest.approx(sorted([facts["first_sm_idle_ns"] / 1000, facts["last_block_start_ns"] / 1000]))
    assert [s.y0 for s in shapes if s.type == "line" and s.y0 == s.y1] == [8]  # the theoretical ceiling


def test_littles_law_whole_launch_row_closes_on_the_traces_own_numbers(sqlite_store, vector_add):
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), vector_add[2])
    facts = trace_facts(sqlite_store, vector_add[2])
    rows = [[cell.children for cell in row.children] for row in by_id(page, "littles-law-table").children[1].children]
    assert [row[0] for row in rows] == ["steady state", "steady state, clipped to the window", "whole launch"]
    whole = rows[2]
    assert whole[1] == f"0 ns to {display.duration(facts['span_ns'])}"
    assert whole[3] == display.per_ns_rate(facts["throughput"], "warps")
    assert whole[5] == display.number(facts["occupancy"])  # mean resident warps per SM
    assert whole[4] == display.number(facts["occupancy"]) and whole[6] == "+0%"  # it closes exactly over the launch


def test_stall_panel_shows_the_nsight_stall_metrics(sqlite_store, sample_trace):
    result, _ = ingest(sqlite_store, sample_trace("h100/samples.raw.csv"))
    launch_id = int(sqlite_store.launches(import_id=result.import_id)["id"][0])
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), launch_id)
    (bars,) = plotted(by_id(page, "stall-figure").figure).data
    metrics = sqlite_store.metrics([launch_id])
    stored = metrics.filter(
        pl.col("name") == "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
    )
    assert dict(zip(bars.y, bars.x, strict=True))["long_scoreboard"] == pytest.approx(stored["value"][0])
    assert bars.y[-1] == "long_scoreboard"  # the largest, drawn on top
    # A trace of the profiled configuration borrows those counters: its page shows the same stalls.
    [traced] = import_traces(sqlite_store, sample_trace, VECTOR_ADD[:1])
    borrowed = plotted(
        by_id(
            pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), traced),
            "stall-figure",
        ).figure
    ).data
    assert dict(zip(borrowed[0].y, borrowed[0].x, strict=True))["long_scoreboard"] == pytest.approx(stored["value"][0])
    # abs_values was not profiled: nothing to borrow, and the panel says what is missing.
    [lone] = import_traces(sqlite_store, sample_trace, ["h100/abs_positive.csv.gz"])
    no_stalls = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), lone)
    assert not [c for c in walk(no_stalls) if getattr(c, "id", None) == "stall-panel"]  # no empty stall section
    assert NEEDS_COUNTERS in [item.children for item in by_id(no_stalls, "not-recorded").children]


# ---- compare ---------------------------------------------------------------------------------------------------


def test_compare_page_difference_table_and_linked_figures(sqlite_store, vector_add):
    a, b = vector_add[0], vector_add[3]
    page = pages_compare.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), str(a), str(b))
    rows = {
        row.children[0].children: [cell.children for cell in row.children[1:]]
        for row in by_id(page, "compare-diff-table").children[1].children
    }
    durations = dict(sqlite_store.launches(launch_ids=[a, b]).select("id", "duration_ns").iter_rows())
    duration_a, duration_b = int(durations[a]), int(durations[b])
    change = duration_b - duration_a
    assert rows["duration"][:3] == [
        display.duration(duration_a),
        display.duration(duration_b),
        ("+" if change >= 0 else "-") + display.duration(abs(change)),
    ]
    relative = 100 * change / duration_a
    sign = "-" if relative < 0 else "+"
    assert rows["duration"][3] == sign + f"{float(f'{abs(relative):.3g}'):g}" + "%"
    assert rows["duration"][-1] == "better"  # one launch a side: no spread, so no within-noise mark
    assert rows["occupancy limiter"][:2] == ["shared memory", "warps"]
    occupancy = plotted(by_id(page, "compare-occupancy-figure").figure)
    assert occupancy.layout.xaxis2.matches == "x"  # zooming one side zooms the other
    assert [trace.name for trace in occupancy.data] == ["A", "B"]
    latency = plotted(by_id(page, "compare-latency-figure").figure)
    assert [round(sum(trace.y), 9) for trace in latency.data] == [1.0, 1.0]  # shares of each side's warps
    assert latency.layout.barmode == "overlay"
    # Traces alone (no counters): the measured sweep's throughput still grows from 28.9 to 56.8 warps per SM, so
    # no occupancy of the four reaches a plateau: each launch, A at 8 and B at 64 warps per SM, is latency-bound.
    modes = [by_id(page, f"compare-verdict-mode-{side}").children for side in "ab"]
    assert modes == ["latency-bound", "latency-bound"]


# ---- the analysis cache ----------------------------------------------------------------------------------------


def test_a_launch_is_analysed_once_for_its_page_callbacks_and_compare(sqlite_store, sample_trace, monkeypatch):
    """The engine's results are cached in the store: page builds and callbacks recompute nothing until the
    launch's context changes (here: two more occupancies of its kernel make a sweep)."""
    calls: list[list[int]] = []
    real = analyses.analyze

    def counting(inputs, targets=None, overrides=None, **options):
        calls.append(sorted(targets or []))
        return real(inputs, targets=targets, overrides=overrides, **options)

    monkeypatch.setattr(analyses, "analyze", counting)
    ids = import_traces(sqlite_store, sample_trace, VECTOR_ADD[:2])
    cache = AnalysisCache(TraceAnalysis(sqlite_store))
    pages_launch.layout(TraceAnalysis(sqlite_store), cache, ids[0])
    pages_launch.what_if_view(TraceAnalysis(sqlite_store), cache.get(ids[0]), 128, 22, 0)
    pages_compare.layout(TraceAnalysis(sqlite_store), cache, str(ids[0]), str(ids[1]))
    assert calls == [[ids[0]], [ids[1]]]  # each launch analysed once
    assert cache.get(ids[0]).result.sweep is None

    ids += import_traces(sqlite_store, sample_trace, VECTOR_ADD[2:])
    calls.clear()
    assert cache.get(ids[0]).result.sweep is not None
    assert cache.get(ids[0]).result.sweep is not None
    assert calls == [[ids[0]]]  # its context changed: recomputed once, then read from the store


def test_launch_page_names_the_counters_source_and_takes_an_override(sqlite_store, sample_trace):
    """The pairing rule's choice is shown with its evidence; `?pair=` (the page's form) overrides it as `--pair`
    does on the command line, and the API serves the same."""
    [random_trace] = import_traces(sqlite_store, sample_trace, ["h100/permute_random.csv.gz"])
    ingest(sqlite_store, sample_trace("h100/samples.ncu-rep.gz"))
    profiled = sqlite_store.launches().filter(pl.col("kernel_name").str.starts_with("permute("))
    identity, random = sorted(profiled.iter_rows(named=True), key=lambda row: row["duration_ns"])
    cache = AnalysisCache(TraceAnalysis(sqlite_store))
    page = pages_launch.layout(TraceAnalysis(sqlite_store), cache, random_trace)
    assert "durations agree" in by_id(page, "pairing-evidence").children
    assert cache.result(random_trace).counters_from.launch_id == random["id"]
    forced = pages_launch.layout(TraceAnalysis(sqlite_store), cache, random_trace, pair=identity["id"])
    assert by_id(forced, "pairing-evidence").children == f"paired by the user (--pair {random_trace}={identity['id']})"
    client = create_app(sqlite_store.url).server.test_client()
    served = client.get(f"/api/launches/{random_trace}/analysis?pair={identity['id']}").get_json()
    assert served["counters_from"]["launch_id"] == identity["id"] and served["pairing"]["status"] == "override"
    assert client.get(f"/api/launches/{random_trace}/analysis?pair=x").status_code == 400


def test_region_panel_shows_each_named_region_of_the_warp_specialized_sample(sqlite_store, sample_trace):
    """The per-region numbers the page shows are the engine's (ws_pipeline: a producer warp and consumer warps)."""
    result, _ = ingest(sqlite_store, sample_trace("regions/ws_pipeline.v2.gz"))
    launch_id = int(sqlite_store.launches(import_id=result.import_id)["id"][0])
    page = pages_launch.layout(TraceAnalysis(sqlite_store), AnalysisCache(TraceAnalysis(sqlite_store)), launch_id)
    regions = AnalysisCache(TraceAnalysis(sqlite_store)).result(launch_id).regions
    rows = [[cell.children for cell in row.children] for row in by_id(page, "region-table").children[1].children]
    assert [row[0] for row in rows] == [stats.region for stats in regions.regions]
    assert [row[1] for row in rows] == [f"{stats.count:,}" for stats in regions.regions]
    assert {"load_tile", "compute"} <= {row[0] for row in rows}
