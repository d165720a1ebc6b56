"""A step's GPU busy time: the union of its kernels, copies and sets on every stream (time two streams overlap
counts once), and the idle gaps that remain, split at step boundaries."""

from __future__ import annotations

import polars as pl

from tracekit.analysis.steps.intervals import gaps, measure, merge


def window_frame(starts_ns: tuple[int, ...], ends_ns: tuple[int, ...]) -> pl.DataFrame:
    """The windows as a frame: step, start_ns, end_ns."""
    return pl.DataFrame(
        {"step": list(range(len(starts_ns))), "start_ns": starts_ns, "end_ns": ends_ns},
        schema={"step": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64},
    )


def busy_per_window(merged: pl.DataFrame, windows: pl.DataFrame) -> pl.Series:
    """The union's length inside each window."""
    return measure(merged, windows["start_ns"], windows["end_ns"]).alias("busy_ns")


def idle_pieces(merged: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Every idle gap inside the windows, split at their boundaries: step, start_ns, end_ns, the whole gap's
    gap_start_ns, and gap_end_ns, when the GPU next became busy (the start of the activity that ended the gap;
    past the last window for a trailing gap)."""
    if windows.height == 0:
        columns = ("step", "start_ns", "end_ns", "gap_start_ns", "gap_end_ns")
        return pl.DataFrame(schema=dict.fromkeys(columns, pl.Int64))
    first, last = int(windows["start_ns"].min()), int(windows["end_ns"].max())  # type: ignore[arg-type]
    # gaps over the whole union, so a gap that crosses a boundary keeps the activity that ended it
    after = merged.filter(pl.col("start_ns") >= last).head(1)
    horizon = int(after["start_ns"][0]) if after.height else last
    found = gaps(merged, first, horizon)
    pieces = found
    # the windows a gap overlaps: from the first that ends after it starts to the last that starts before it ends
    lo = windows["end_ns"].search_sorted(pieces["gap_start_ns"], side="right")
    hi = windows["start_ns"].search_sorted(pieces["gap_end_ns"], side="left") - 1
    pieces = pieces.with_columns(lo=lo.cast(pl.Int64), hi=hi.cast(pl.Int64))
    pieces = pieces.filter(pl.col("hi") >= pl.col("lo")).with_columns(step=pl.int_ranges("lo", pl.col("hi") + 1))
    pieces = pieces.explode("step").join(windows.rename({"start_ns": "w0", "end_ns": "w1"}), on="step")
    return pieces.select(
        "step",
        pl.max_horizontal("gap_start_ns", "w0").alias("start_ns"),
        pl.min_horizontal("gap_end_ns", "w1").alias("end_ns"),
        "gap_start_ns",
        "gap_end_ns",
    ).filter(pl.col("end_ns") > pl.col("start_ns"))


def gpu_union(gpu: pl.DataFrame) -> pl.DataFrame:
    """The device's busy intervals (every stream, every kind)."""
    return merge(gpu.select("start_ns", "end_ns"))
