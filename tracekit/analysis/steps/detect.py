"""Where each step begins and ends.

Three sources, in this order: the range the user names (`--step NAME`, a record_function or NVTX range), the
PyTorch profiler's own `ProfilerStep#N` annotations, or the repeating pattern of the kernels a training or
inference loop launches. Steps are contiguous windows: step i runs from its range's start to the next step's
start (in a loop, that is the period a CUDA-event timing of the step measures: the GPU work a step queues may run
into the next step's host time); the last step ends at its range's end or when the GPU work launched inside it
ends, whichever is later.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

PROFILER_STEP = r"^ProfilerStep#\d+$"
MIN_REPEATS = 2  # a pattern must repeat at least twice to be a loop
MATCH_FRACTION = 0.95  # of launches that repeat one period later (dynamic shapes may change a few kernels)
MAX_PERIOD = 20_000  # launches per step searched (a large model's training step launches a few thousand)
PATTERN_SAMPLE = 200_000  # launches the period is found on


@dataclass(frozen=True)
class Windows:
    detected_by: str
    labels: tuple[str, ...]
    bounds_ns: tuple[int, ...]  # len(labels) + 1 boundaries: step i is [bounds[i], bounds[i + 1])


def detect(gpu: pl.DataFrame, calls: pl.DataFrame, ranges: pl.DataFrame, step: str | None = None) -> Windows:
    """The steps' windows (see the module docstring); `step`: the name of the range that marks one step."""
    if step is not None:
        pattern = f"^{_escape(step)}(#\\d+)?$"
        chosen = ranges.filter(pl.col("name").str.contains(pattern))
        if chosen.height == 0:
            raise LookupError(f"no range named {step!r} in the trace")
        return _from_ranges(f"range {step}", chosen, gpu, calls)
    marked = ranges.filter(pl.col("name").str.contains(PROFILER_STEP))
    if marked.height:
        return _from_ranges("ProfilerStep", marked, gpu, calls)
    found = _from_pattern(gpu, calls)
    if found is not None:
        return found
    start = min(_min(gpu["start_ns"]), _min(calls["start_ns"]))
    end = max(_max(gpu["end_ns"]), _max(calls["end_ns"]))
    return Windows("whole trace", ("trace",), (start, max(end, start)))


def _escape(text: str) -> str:
    return "".join("\\" + c if not c.isalnum() and c not in " _-" else c for c in text)


def _min(series: pl.Series) -> int:
    value = series.min()
    return int(value) if isinstance(value, int) else 2**62  # type: ignore[arg-type]


def _max(series: pl.Series) -> int:
    value = series.max()
    return int(value) if isinstance(value, int) else -(2**62)  # type: ignore[arg-type]


def _from_ranges(how: str, ranges: pl.DataFrame, gpu: pl.DataFrame, calls: pl.DataFrame) -> Windows:
    """One step per range on the thread that holds most of them, nested repeats dropped."""
    thread = ranges.group_by("thread").len().sort("len", "thread", descending=[True, False])["thread"][0]
    chosen = ranges.filter(pl.col("thread") == thread).sort("start_ns")
    chosen = chosen.filter(pl.col("start_ns") >= pl.col("end_ns").cum_max().shift(1).fill_null(-(2**62)))
    starts = chosen["start_ns"].to_list()
    last_start, last_end = starts[-1], int(chosen["end_ns"][-1])
    launched = calls.filter((pl.col("start_ns") >= last_start) & (pl.col("start_ns") < last_end))
    ids = launched["correlation_id"].drop_nulls()
    tail = gpu.filter(pl.col("correlation_id").is_in(ids.implode()))
    end = max(last_end, _max(tail["end_ns"]))
    return Windows(how, tuple(chosen["name"].to_list()), (*starts, end))


def _from_pattern(gpu: pl.DataFrame, calls: pl.DataFrame) -> Windows | None:
    """The loop's period: the smallest number of launches after which the sequence of kernel names repeats
    (MATCH_FRACTION of them), steps starting where the host paused longest within one period."""
    launches = (
        gpu.filter(pl.col("kind") == "kernel")
        .join(calls.select("correlation_id", pl.col("start_ns").alias("call_ns")), on="correlation_id", how="left")
        .with_columns(at_ns=pl.coalesce("call_ns", "start_ns"))
        .unique("correlation_id", keep="first", maintain_order=True)  # a graph's kernels: one launch
        .sort("at_ns")
    )
    n = launches.height
    if n < 2 * MIN_REPEATS:
        return None
    codes = launches["name"].cast(pl.Categorical).to_physical().to_numpy()[:PATTERN_SAMPLE]
    size = len(codes)
    period = None
    for p in range(1, min(MAX_PERIOD, size // MIN_REPEATS) + 1):
        if np.mean(codes[p:] == codes[:-p]) >= MATCH_FRACTION:
            period = p
            break
    if period is None or n // period < MIN_REPEATS:
        return None
    at = launches["at_ns"].to_numpy()
    pause = np.diff(at, prepend=at[0])
    usable = (len(pause) // period) * period
    phase = int(np.argmax(pause[:usable].reshape(-1, period).mean(axis=0)))
    firsts = at[phase::period]
    ends = launches["end_ns"].to_numpy()
    bounds = [int(x) for x in firsts]
    last = int(ends[phase + (len(firsts) - 1) * period :].max())
    labels = tuple(f"step {i}" for i in range(len(bounds)))
    return Windows("repeating pattern", labels, (*bounds, max(last, bounds[-1])))
