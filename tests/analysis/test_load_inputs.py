"""`api.load_inputs` hands each launch exactly its own metrics, in the order the store lists them, whatever order the
launches are asked in (the store keeps them launch by launch; a store written before that kept a raw page's launches
interleaved, and load_inputs slices those apart too)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tracekit import api, counters
from tracekit.ingest import ingest
from tracekit.store import Store
from tracekit.stored.inputs import metrics_by_launch

H100 = Path(__file__).resolve().parents[2] / "sample_traces" / "h100"


def test_each_launch_gets_its_own_metrics_in_stored_order(tmp_path):
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite'}")
    ingest(store, H100 / "samples.raw.csv")  # ncu --page raw: one row per launch
    ingest(store, H100 / "vector_add_08warps.csv.gz")  # a trace: no metrics of its own
    catalog = store.launches()
    profiled = [i for i in catalog["id"].to_list() if store.metrics([i]).height]
    assert len(profiled) >= 3 and len(profiled) < catalog.height
    together = store.metrics(catalog["id"].to_list(), counters.READ_COLUMNS)  # what the analysis reads
    assert together["launch_id"].is_sorted()  # launch by launch
    asked = catalog.reverse()
    inputs = api.load_inputs(store, asked)
    assert [d.launch["id"] for d in inputs] == asked["id"].to_list()
    for d in inputs:
        own = store.metrics([d.launch["id"]], counters.READ_COLUMNS)
        assert d.metrics.equals(own) and d.metrics.schema == together.schema
        if d.launch["id"] in profiled:
            assert d.metrics.height == own.height > 100
            assert d.metrics["launch_id"].unique().to_list() == [d.launch["id"]]
            # the rows in the order the whole read lists them
            assert d.metrics.equals(together.filter(pl.col("launch_id") == d.launch["id"]))
        else:
            assert d.metrics.height == 0


def test_interleaved_metrics_of_an_older_store_are_sliced_per_launch():
    """Rows of several launches interleaved (metric by metric, as stores before launch-major chunks read back a raw
    page): each launch gets its own rows, in the order listed."""
    interleaved = pl.DataFrame(
        {
            "launch_id": [3, 1, 2, 3, 1, 2, 1],
            "name": ["a", "a", "a", "b", "b", "b", "c"],
            "value": [1.0, 2, 3, 4, 5, 6, 7],
        }
    )
    sliced = metrics_by_launch(interleaved)
    assert sorted(sliced) == [1, 2, 3]
    for launch_id, frame in sliced.items():
        assert frame.equals(interleaved.filter(pl.col("launch_id") == launch_id))
    assert sliced[1]["name"].to_list() == ["a", "b", "c"]
