"""The launch page's what-if shows `tracekit.api.predict_stored`'s prediction (the function behind `tracekit
predict` and `results.predict`), on the team's H100 samples: the vector_add warp trace at 8 warps per SM with the
Nsight Compute report of the same run (which holds vector_add at four occupancies), without a browser.

Expected values are predict_stored's own for the same knobs, written through `tracekit.format`; a refusal is the
predictor's one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from dash.development.base_component import Component

from tracekit import api
from tracekit import format as display
from tracekit.analysis.predict import PredictionRefused
from tracekit.api import TraceAnalysis
from tracekit.dashboards import pages_launch
from tracekit.dashboards.analysis_cache import AnalysisCache
from tracekit.dashboards.app import create_app
from tracekit.ingest import ingest


def walk(tree) -> list:
    found = [tree]
    children = getattr(tree, "children", None) if isinstance(tree, Component) else tree
    if isinstance(children, list | tuple):
        for child in children:
            found += walk(child)
    elif isinstance(children, Component):
        found += walk(children)
    elif isinstance(children, str):
        found.append(children)
    return found


def by_id(tree, component_id: str) -> Component:
    matches = [c for c in walk(tree) if isinstance(c, Component) and getattr(c, "id", None) == component_id]
    assert len(matches) == 1, f"{component_id}: {len(matches)} components"
    return matches[0]


def text_of(tree) -> str:
    return " ".join(s for s in walk(tree) if isinstance(s, str))


def table_rows(tree, table_id: str) -> dict[str, str]:
    """A fields table's rows: label -> shown text."""
    rows = [c for c in walk(by_id(tree, table_id)) if isinstance(c, Component) and type(c).__name__ == "Tr"]
    return {row.children[0].children: row.children[1].children for row in rows}


def times(value: float) -> str:
    return f"{display.number(value, digits=3)}x"


@pytest.fixture
def traced(sqlite_store, sample_trace) -> int:
    """vector_add at 8 warps per SM (warp trace), paired with its profiled run in samples.ncu-rep."""
    ingest(sqlite_store, sample_trace("h100/vector_add_08warps.csv.gz"))
    launch_id = int(sqlite_store.launches()["id"][0])
    ingest(sqlite_store, sample_trace("h100/samples.ncu-rep.gz"))
    return launch_id


def predict_cli(store, launch_id: int, knobs: dict) -> list[str]:
    """What `tracekit predict --explain` prints for the launch and knobs, in a subprocess, one line each."""
    args = [f"--{knob}={value:g}" if isinstance(value, float) else f"--{knob}={value}" for knob, value in knobs.items()]
    done = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "predict", f"launch:{launch_id}", *args, "--explain"]
        + ["--db", store.url],
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize(
    ("typed", "knobs"),
    [
        ((256, 22, 0, None, None), {"smem": 0}),  # the launch's 227 KiB of shared memory dropped: 8 -> 64 warps
        ((256, 22, 232448, 4.0, None), {"ilp": 4.0}),  # the same occupancy, four requests in flight per warp
        ((1024, 22, 0, None, 512), {"block": 1024, "smem": 0, "grid": 512}),
    ],
)
def test_the_what_if_words_the_prediction_as_tracekit_predict_does(sqlite_store, traced, typed, knobs):
    """The panel's answer, binds, basis, Nsight line, what would narrow it and each step are the lines `tracekit
    predict --explain` prints for the same knobs (one wording, `present.prediction`); the numbers in them are
    predict_stored's, written by tracekit.format."""
    analysis = AnalysisCache(TraceAnalysis(sqlite_store)).get(traced)
    expected = api.predict_stored(sqlite_store, analysis.result, **knobs)
    body = pages_launch.what_if_view(TraceAnalysis(sqlite_store), analysis, *typed)
    printed = predict_cli(sqlite_store, traced, knobs)
    got = expected.predicted
    headline = by_id(body, "whatif-prediction").children
    assert printed[1] == f"  {headline}"
    assert headline == (
        f"{expected.change.describe()}: predicted {display.duration(got.duration_ns)} (now "
        f"{display.duration(expected.current_duration_ns)}), speed-up {times(got.speedup)} (interval "
        f"{times(got.low)} to {times(got.high)})"
    )
    rows = table_rows(body, "whatif-prediction-table")
    assert f"  binds: {rows['binds']}" == printed[2]
    assert rows["binds"].startswith("now ") and "; after the change " in rows["binds"]
    assert f"  basis: {rows['basis']}" == printed[3]
    basis = ", ".join(expected.basis)
    assert rows["basis"] == basis or "(measured)" in rows["basis"]  # a measured profile's path is cited once
    if expected.nsight is not None:
        assert f"  Nsight Compute: {rows['Nsight Compute']}" in printed
        assert f"estimates {times(expected.nsight.speedup)}" in rows["Nsight Compute"]
    else:
        assert "Nsight Compute" not in rows
    if expected.narrow:
        assert rows["to narrow it"] == expected.narrow and f"  to narrow it: {expected.narrow}" in printed
    steps = [item.children for item in by_id(body, "whatif-steps").children]
    assert [f"  - {step}" for step in steps] == [line for line in printed if line.startswith("  - ")]
    assert len(steps) == len(expected.findings)
    cited = [s for s in walk(body) if isinstance(s, str) and s.startswith("measured ceilings: ")]
    assert [f"measured ceilings: {path}" for line in cited for path in line.split(": ", 1)[1].split(", ")] == [
        line for line in printed if line.startswith("measured ceilings: ")
    ]
    new, was = expected.new, expected.current
    assert rows["occupancy after the change"].startswith(
        f"{display.number(new.theoretical_warps_per_sm)} / {display.number(new.achieved_warps_per_sm)} warps per SM"
    )
    assert rows["occupancy after the change"].endswith(f"{display.number(was.waves)} waves)")
    # The occupancy calculator's answer stays: 256 threads, 22 registers, no shared memory -> 64 warps (warps).
    if typed[:3] == (256, 22, 0):
        assert by_id(body, "whatif-occupancy").children.startswith(
            "Theoretical occupancy 64 of 64 warps per SM (100.0%), limited by warps"
        )
        assert expected.nsight is not None and "a measured sweep" in expected.basis  # the report has both


def test_the_callback_passes_ilp_and_grid_to_the_predictor(sqlite_store, traced):
    analysis = AnalysisCache(TraceAnalysis(sqlite_store)).get(traced)
    expected = api.predict_stored(sqlite_store, analysis.result, ilp=2.0, grid=4096)
    client = create_app(sqlite_store.url).server.test_client()
    values = {"block": 256, "registers": 22, "smem": 232448, "ilp": 2.0, "grid": 4096}
    response = client.post(
        "/_dash-update-component",
        json={
            "output": "whatif-result.children",
            "outputs": {"id": "whatif-result", "property": "children"},
            "inputs": [{"id": f"whatif-{k}", "property": "value", "value": v} for k, v in values.items()],
            "changedPropIds": ["whatif-ilp.value"],
            "state": [{"id": "launch-id", "property": "data", "value": traced}],
        },
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    answer = json.dumps(response.get_json(), ensure_ascii=False)
    got = expected.predicted
    assert expected.change.describe() == "ILP 2, grid 4096"
    assert f"ILP 2, grid 4096: predicted {display.duration(got.duration_ns)}" in answer
    assert f"speed-up {times(got.speedup)} (interval {times(got.low)} to {times(got.high)})" in answer


@pytest.mark.parametrize(("typed", "knobs"), [((2048, 22, 0), {"block": 2048}), ((256, 22, 300000), {"smem": 300000})])
def test_a_config_the_device_cannot_run_is_the_predictors_one_line(sqlite_store, traced, typed, knobs):
    analysis = AnalysisCache(TraceAnalysis(sqlite_store)).get(traced)
    with pytest.raises(PredictionRefused) as refused:
        api.predict_stored(sqlite_store, analysis.result, **knobs)
    body = pages_launch.what_if_view(TraceAnalysis(sqlite_store), analysis, *typed)
    assert len(body) == 1 and body[0].id == "whatif-occupancy"
    assert body[0].children == str(refused.value)
    assert body[0].children.startswith("the device cannot run this configuration: ")
    assert "\n" not in body[0].children


def test_a_launch_without_counters_or_sweep_says_what_is_missing(sqlite_store, sample_trace):
    ingest(sqlite_store, sample_trace("h100/vector_add_08warps.csv.gz"))
    launch_id = int(sqlite_store.launches()["id"][0])
    cache = AnalysisCache(TraceAnalysis(sqlite_store))
    analysis = cache.get(launch_id)
    with pytest.raises(PredictionRefused) as refused:
        api.predict_stored(sqlite_store, analysis.result, smem=0)
    body = pages_launch.what_if_view(TraceAnalysis(sqlite_store), analysis, 256, 22, 0)
    assert by_id(body, "whatif-prediction").children == f"No prediction: {refused.value}"
    assert "no Nsight Compute counters" in str(refused.value) and "no occupancy sweep" in str(refused.value)
    # The occupancy calculator still answers.
    assert by_id(body, "whatif-occupancy").children.startswith("Theoretical occupancy 64 of 64 warps per SM")
    # And the page's What to try first is absent (api.what_to_try_for gives the reason, not a list).
    assert isinstance(api.what_to_try_for(sqlite_store, analysis.result, top=3), str)
    page = pages_launch.layout(TraceAnalysis(sqlite_store), cache, launch_id)
    assert not [c for c in walk(page) if getattr(c, "id", None) == "what-to-try-list"]


def test_what_to_try_first_is_what_to_try_for(sqlite_store, traced):
    cache = AnalysisCache(TraceAnalysis(sqlite_store))
    expected = api.what_to_try_for(sqlite_store, cache.get(traced).result, top=3)
    assert isinstance(expected, list) and expected
    page = pages_launch.layout(TraceAnalysis(sqlite_store), cache, traced)
    items = by_id(page, "what-to-try-list").children
    assert [text_of(item).split(":")[0].strip() for item in items] == [p.change.describe() for p in expected]
