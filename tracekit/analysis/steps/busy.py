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
    # the windows a gap overlaps: from the first that ends after it starts to the last that starts before it ends
    lo = windows["end_ns"].search_sorted(found["gap_start_ns"], side="right").cast(pl.Int64)
    hi = windows["start_ns"].search_sorted(found["gap_end_ns"], side="left").cast(pl.Int64) - 1
    found = found.with_columns(step=lo, count=hi - lo + 1).filter(pl.col("count") > 0)
    if (found["count"] > 1).any():  # a gap across step boundaries: one row per window it overlaps (few gaps)
        import numpy as np  # here, not at import: the commands that never split a gap start faster

        counts = found["count"].to_numpy()
        rows = np.repeat(np.arange(found.height), counts)
        within = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
        found = found[rows].with_columns(pl.col("step") + pl.Series(within))
    step = found["step"]
    return found.select(
        step,
        pl.max_horizontal("gap_start_ns", windows["start_ns"].gather(step)).alias("start_ns"),
        pl.min_horizontal("gap_end_ns", windows["end_ns"].gather(step)).alias("end_ns"),
        "gap_start_ns",
        "gap_end_ns",
    ).filter(pl.col("end_ns") > pl.col("start_ns"))


def gpu_union(gpu: pl.DataFrame) -> pl.DataFrame:
    """The device's busy intervals (every stream, every kind)."""
    return merge(gpu.select("start_ns", "end_ns"))
