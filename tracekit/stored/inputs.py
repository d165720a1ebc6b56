"""What the engine reads of stored launches: their metrics, their warps when traced, their named regions."""

from __future__ import annotations

import polars as pl

from tracekit import counters
from tracekit.analysis.engine import LaunchInput
from tracekit.analysis.warp_occupancy import REQUIRED_COLUMNS as ANALYSED_WARP_COLUMNS  # what the engine reads
from tracekit.parsed import WARP_SCHEMA, empty_frame
from tracekit.store import Store
from tracekit.store.regions import launch_regions, region_counts


def load_inputs(store: Store, launches: pl.DataFrame) -> list[LaunchInput]:
    """One `LaunchInput` per row of `launches`: its metrics and its warps when it was traced (the columns the engine
    reads: sections, units and clock reads stay compressed), its named regions."""
    launch_ids = launches["id"].to_list()
    metrics = store.metrics(launch_ids, counters.READ_COLUMNS) if launch_ids else pl.DataFrame()
    by_launch = metrics_by_launch(metrics)
    traced = store.warp_counts(launch_ids) if launch_ids else {}  # one query, not one per untraced launch
    with_regions = region_counts(store, launch_ids) if launch_ids else {}
    warnings = store.import_warnings(launches["import_id"].unique().to_list()) if launch_ids else {}
    no_warps = empty_frame({k: WARP_SCHEMA[k] for k in ANALYSED_WARP_COLUMNS})
    no_metrics, no_regions = metrics.clear(), pl.DataFrame()  # shared: frames are immutable (56k launches of a family)
    return [
        LaunchInput(
            launch={**row, "import_warnings": warnings.get(row["import_id"], [])},
            metrics=by_launch.get(row["id"], no_metrics),
            warps=store.warps(row["id"], ANALYSED_WARP_COLUMNS) if row["id"] in traced else no_warps,
            regions=launch_regions(store, row["id"]) if row["id"] in with_regions else no_regions,
        )
        for row in launches.iter_rows(named=True)
    ]


def metrics_by_launch(metrics: pl.DataFrame) -> dict[int, pl.DataFrame]:
    """Each launch's metric rows in the order listed: slices of the frame sorted stably by launch, no copy per launch
    (the store keeps them launch by launch; a store written before that interleaved a raw page's launches, and is
    sorted here: `partition_by` took ~25% longer on 1,008 launches of 2,238 metrics)."""
    found: dict[int, pl.DataFrame] = {}
    if not metrics.height:
        return found
    ordered = metrics if metrics["launch_id"].is_sorted() else metrics.sort("launch_id", maintain_order=True)
    runs = ordered.get_column("launch_id").rle()
    offset = 0
    for length, launch_id in zip(runs.struct.field("len").to_list(), runs.struct.field("value").to_list(), strict=True):
        found[launch_id] = ordered.slice(offset, length)
        offset += length
    return found
