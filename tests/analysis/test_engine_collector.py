"""`engine.analyze` runs with Python's cyclic garbage collector paused and leaves it as it found it, on or off, also
when the analysis fails; the results are the same either way."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from tracekit import api
from tracekit.analysis import engine
from tracekit.ingest import ingest
from tracekit.store import Store

H100 = Path(__file__).resolve().parents[2] / "sample_traces" / "h100"


@pytest.fixture
def inputs(tmp_path):
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite'}")
    ingest(store, H100 / "samples.raw.csv")
    ingest(store, H100 / "vector_add_32warps.csv.gz")
    return api.load_inputs(store, store.launches())


def test_the_collector_is_paused_during_analysis_and_restored(inputs):
    seen: list[bool] = []

    def ceilings_for(device):
        seen.append(gc.isenabled())
        return api.device_ceilings(device)

    assert gc.isenabled()
    paused = engine.analyze(inputs, ceilings_for=ceilings_for)
    assert gc.isenabled() and seen and not any(seen)
    gc.disable()
    try:
        seen.clear()
        off = engine.analyze(inputs, ceilings_for=ceilings_for)
        assert not gc.isenabled() and seen and not any(seen)
    finally:
        gc.enable()
    assert off == paused and len(paused) == len(inputs)


def test_a_failing_analysis_restores_the_collector(inputs):
    def ceilings_for(device):
        raise RuntimeError("no ceilings")

    with pytest.raises(RuntimeError, match="no ceilings"):
        engine.analyze(inputs, ceilings_for=ceilings_for)
    assert gc.isenabled()


def _generations_collected(work) -> list[int]:
    seen: list[int] = []

    def record(phase, info):
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(record)
    try:
        work()
    finally:
        gc.callbacks.remove(record)
    return seen


def test_the_pause_ends_with_a_young_collection_or_a_full_one_after_many_objects():
    kept: list[dict[int, int]] = []

    def make(count: int):
        def work():
            with engine._collector_paused():
                assert not gc.isenabled()
                kept.extend({i: i} for i in range(count))  # tracked objects that outlive the pause

        return work

    assert _generations_collected(make(100))[:1] == [1]  # a few objects: the young generations only
    many = max(engine._MANY_OBJECTS, len(gc.get_objects(2)) // 4) + 10_000
    assert _generations_collected(make(many))[:1] == [2]  # more than a quarter of the old generation: a full one
    assert gc.isenabled() and len(kept) == 100 + many
