"""GPU time per category and per operator inside each step, and how much communication overlapped computation."""

from __future__ import annotations

import polars as pl

from tracekit.analysis.steps.categories import COMMUNICATION, COPIES
from tracekit.analysis.steps.intervals import merge
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
    totals = assigned.group_by("step", "category").agg(pl.col("gpu_ns").sum(), pl.len().alias("count"))
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


def communication_overlap(gpu: pl.DataFrame, windows: pl.DataFrame) -> tuple[list[int], list[int]]:
    """Per step: the union of communication kernels, and the part of it during which computation (any other
    kernel) ran: |comm| + |compute| - |comm ∪ compute|."""
    from tracekit.analysis.steps.intervals import measure

    comm = gpu.filter(pl.col("category") == COMMUNICATION)
    compute = gpu.filter((pl.col("category") != COMMUNICATION) & (pl.col("category") != COPIES))
    if comm.height == 0:
        return [0] * windows.height, [0] * windows.height
    a, b = windows["start_ns"], windows["end_ns"]
    in_comm = measure(merge(comm), a, b)
    in_compute = measure(merge(compute), a, b)
    in_both = measure(merge(pl.concat([comm.select("start_ns", "end_ns"), compute.select("start_ns", "end_ns")])), a, b)
    overlap = in_comm + in_compute - in_both
    return [int(x) for x in in_comm], [int(x) for x in overlap]
