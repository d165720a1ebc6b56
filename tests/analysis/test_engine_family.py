"""A launch's result does not depend on which other launches of its family were asked for: the engine skips
measuring family members that have neither warps nor counters (an Nsight Systems timeline's thousands of
launches), and that must change nothing."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tracekit import api
from tracekit.analysis import engine
from tracekit.analysis.types import LeftOutKind
from tracekit.ingest import ingest
from tracekit.present.rules.notes import LEFT_OUT
from tracekit.store import Store

H100 = Path(__file__).resolve().parents[2] / "sample_traces" / "h100"


def test_results_are_the_same_whether_the_family_is_asked_for_or_not(tmp_path):
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite'}")
    for name in ("vector_add_08warps.csv.gz", "vector_add_16warps.csv.gz", "vector_add_32warps.csv.gz"):
        ingest(store, H100 / name)
    ingest(store, H100 / "samples.sqlite")  # vector_add launches timed only: no warps, no counters
    catalog = store.launches()
    inputs = api.load_inputs(store, catalog)
    dataless = [d for d in inputs if not d.warps.height and not d.metrics.height]
    assert len(dataless) >= 12  # the timeline's launches of the same kernel: skipped when not asked for
    every = {r.launch_id: r for r in engine.analyze(inputs)}  # all asked for: every member measured
    traced = catalog.filter(pl.col("format") == "warp-trace")["id"].to_list()
    assert len(traced) == 3
    for launch_id in traced + [int(dataless[0].launch["id"])]:
        (alone,) = engine.analyze(inputs, targets={launch_id})
        assert alone == every[launch_id]
    vector_add = every[traced[0]]
    assert vector_add.sweep is not None and len(vector_add.sweep.points) == 3  # the traces' points, fitted
    # one entry per reason, ids only: the timeline's vector_add launches have no occupancy or throughput measured
    reasons = {out.kind: out.launch_ids for out in vector_add.sweep.left_out}
    assert len(reasons) == len(vector_add.sweep.left_out)
    unmeasured = reasons[LeftOutKind.UNMEASURED]
    # the JSON words each kind (present.rules.notes), `reason` first as it always was
    shown = api.AnalysisResults((vector_add,)).to_dicts()[0]["sweep"]["left_out"]
    assert [(list(e)[0], e["reason"], e["kind"]) for e in shown] == [
        ("reason", LEFT_OUT[out.kind], out.kind) for out in vector_add.sweep.left_out
    ]
    assert LEFT_OUT[LeftOutKind.UNMEASURED] in [e["reason"] for e in shown]
    assert len(unmeasured) == len(set(unmeasured)) and int(dataless[0].launch["id"]) in unmeasured
    assert not set(unmeasured) & set(vector_add.sweep.launch_ids)
