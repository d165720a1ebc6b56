"""GPU time per category and per operator inside each step, and how much communication overlapped computation."""

from __future__ import annotations

import polars as pl

from tracekit.analysis.steps.categories import COMMUNICATION, COPIES, COUNTED_FIRST
from tracekit.analysis.steps.intervals import measure, merge
from tracekit.analysis.steps.types import CategoryTime, OperatorTime

TOP_OPERATORS = 10


def clipped(gpu: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Every activity assigned to the step its start falls in, its time clipped to that step: step, gpu_ns."""
    starts = windows["start_ns"]
    step = (starts.search_sorted(gpu["start_ns"], side="right") - 1).alias("step")
    frame = gpu.with_columns(step=step).filter((pl.col("step") >= 0) & (pl.col("step") < windows.height))
    frame = frame.join(windows.rename({"start_ns": "w0", "end_ns": "w1"}), on="step")
    frame = frame.filter(pl.col("start_ns") < pl.col("w1"))
    return frame.with_columns(
        gpu_ns=(pl.min_horizontal("end_ns", "w1") - pl.max_horizontal("start_ns", "w0")).clip(lower_bound=0)
    )


def categories(assigned: pl.DataFrame, steps: int) -> list[tuple[CategoryTime, ...]]:
    """Per step, each category's GPU time with time two streams were busy at once counted once, for the first
    category of COUNTED_FIRST running then: a category's time is what the union of it and the categories before it
    adds to theirs (each activity clipped to its step's window), so the times add up to at most the step's busy
    time; `count` is every activity of the category that starts in the step."""
    counts = assigned.group_by("step", "category").agg(pl.len().alias("count"))
    intervals = assigned.select(
        "step",
        rank=pl.col("category").replace_strict(COUNTED_FIRST, range(len(COUNTED_FIRST)), return_dtype=pl.Int64),
        start_ns=pl.max_horizontal("start_ns", "w0"),
        end_ns=pl.min_horizontal("end_ns", "w1"),
    )
    windows = assigned.select("step", "w0", "w1").unique("step").sort("step")
    covered_before = pl.repeat(0, windows.height, dtype=pl.Int64, eager=True)
    parts = []
    for rank, label in enumerate(COUNTED_FIRST):
        covered = measure(merge(intervals.filter(pl.col("rank") <= rank)), windows["w0"], windows["w1"])
        parts.append(
            windows.select("step", category=pl.lit(label), gpu_ns=(covered - covered_before).clip(lower_bound=0))
        )
        covered_before = covered
    totals = pl.concat(parts).join(counts, on=["step", "category"], how="inner")
    found: list[list[CategoryTime]] = [[] for _ in range(steps)]
    for step, label, gpu_ns, count in totals.sort(["gpu_ns", "category"], descending=[True, False]).iter_rows():
        found[step].append(CategoryTime(label, int(gpu_ns), int(count)))
    return [tuple(f) for f in found]


def operators(assigned: pl.DataFrame, steps: int) -> list[tuple[OperatorTime, ...]]:
    keyed = assigned.with_columns(pl.col("operator").fill_null(""), pl.col("annotation_path").fill_null(""))
    totals = keyed.group_by("step", "operator", "annotation_path").agg(pl.col("gpu_ns").sum(), pl.len().alias("count"))
    # Equal GPU times in a stable order (by name): the same trace lists the same operators every run.
    ordered = totals.sort(["gpu_ns", "operator", "annotation_path"], descending=[True, False, False])
    top = ordered.group_by("step", maintain_order=True).head(TOP_OPERATORS)
    found: list[list[OperatorTime]] = [[] for _ in range(steps)]
    for step, operator, path, gpu_ns, count in top.select(
        "step", "operator", "annotation_path", "gpu_ns", "count"
    ).iter_rows():
        found[step].append(OperatorTime(operator, path, int(gpu_ns), int(count)))
    return [tuple(f) for f in found]


def communication_overlap(
    gpu: pl.DataFrame, windows: pl.DataFrame, host_collectives: pl.DataFrame | None = None
) -> tuple[list[int], list[int]]:
    """Per step: the union of communication kernels and of the collectives run on host threads (`host_collectives`:
    start_ns, end_ns; gloo's worker ranges), and the part of it during which computation (any other kernel) ran:
    |comm| + |compute| - |comm ∪ compute|."""
    comm = gpu.filter(pl.col("category") == COMMUNICATION).select("start_ns", "end_ns")
    if host_collectives is not None and host_collectives.height:
        comm = pl.concat([comm, host_collectives.select(comm.columns).cast(comm.schema)])
    compute = gpu.filter((pl.col("category") != COMMUNICATION) & (pl.col("category") != COPIES))
    if comm.height == 0:
        return [0] * windows.height, [0] * windows.height
    a, b = windows["start_ns"], windows["end_ns"]
    in_comm = measure(merge(comm), a, b)
    in_compute = measure(merge(compute), a, b)
    in_both = measure(merge(pl.concat([comm.select("start_ns", "end_ns"), compute.select("start_ns", "end_ns")])), a, b)
    overlap = in_comm + in_compute - in_both
    return [int(x) for x in in_comm], [int(x) for x in overlap]
