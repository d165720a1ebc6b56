"""A launch's timeline as slices, for `tracekit export`'s Chrome and Perfetto traces: its named regions, else its
warps, in ns relative to the launch's first slice."""

from __future__ import annotations

from typing import Any

import polars as pl

from tracekit.errors import TracekitError
from tracekit.store import Store
from tracekit.store.regions import launch_regions


def launch_slices(store: Store, launch: dict[str, Any], what: str, clock_hz: float | None) -> tuple[pl.DataFrame, str]:
    """The launch's slices: sm_id, block_id, warp_in_block, name, start_ns, end_ns (relative), and the time note."""
    regions = launch_regions(store, launch["id"]) if what in ("auto", "regions") else None
    if regions is not None and regions.height:
        frame = regions.rename({"region": "name"})
    else:
        if what == "regions":
            raise TracekitError(f"launch {launch['id']} has no regions to export (--what warps exports its warps)")
        frame = store.warps(launch["id"]).with_columns(pl.lit("warp").alias("name"))
        if frame.height == 0:
            raise TracekitError(f"launch {launch['id']} has neither regions nor warp records to export")
    note = "ns"
    if frame["start_ns"].null_count() or frame["end_ns"].null_count():
        clock = clock_hz or launch.get("sm_clock_hz")
        scale = 1e9 / clock if clock else 1.0
        note = f"cycles converted at {clock:.6g} Hz" if clock else "cycles written as ns (clock unknown: 1 GHz assumed)"
        frame = frame.with_columns(
            (pl.col("start_cycles") * scale).round().cast(pl.Int64).alias("start_ns"),
            (pl.col("end_cycles") * scale).round().cast(pl.Int64).alias("end_ns"),
        )
    origin = frame["start_ns"].min()
    frame = frame.select(
        pl.col("sm_id").fill_null(-1).cast(pl.Int64),
        pl.col("block_id").cast(pl.Int64),
        pl.col("warp_in_block").cast(pl.Int64),
        pl.col("name").cast(pl.Utf8),
        (pl.col("start_ns") - origin).alias("start_ns"),
        (pl.col("end_ns") - origin).alias("end_ns"),
    )
    return frame.sort(
        ["sm_id", "block_id", "warp_in_block", "start_ns", "end_ns"], descending=[False] * 4 + [True]
    ), note
