"""Where each step begins and ends.

Three sources, in this order: the range the user names (`--step NAME`, a record_function or NVTX range), the
PyTorch profiler's own `ProfilerStep#N` annotations, or the repeating pattern of the kernels a training or
inference loop launches. Each gives the host's range of a step; the step's window is what a CUDA-event timing of
the step measures (an event recorded on the stream before the step's host code, one after it): it begins when
the host starts the step or, if the GPU is still running the previous step's work then, when that work ends, and
it ends when the GPU work launched inside the range ends or the host leaves the range, whichever is later. In a
GPU-bound loop the host runs ahead and the windows follow the GPU; in a host-bound one they follow the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from tracekit.analysis.steps.calls import OTHER

if TYPE_CHECKING:
    import numpy as np

PROFILER_STEP = r"^ProfilerStep#\d+$"
MIN_REPEATS = 2  # a pattern must repeat at least twice to be a loop
MATCH_FRACTION = 0.95  # of launches that repeat one period later (dynamic shapes may change a few kernels)
MAX_PERIOD = 20_000  # launches per step searched (a large model's training step launches a few thousand)
PATTERN_SAMPLE = 200_000  # launches the period is found on


@dataclass(frozen=True)
class Windows:
    detected_by: str
    labels: tuple[str, ...]
    starts_ns: tuple[int, ...]  # step i is [starts_ns[i], ends_ns[i]); sorted, disjoint
    ends_ns: tuple[int, ...]
    host_ends_ns: tuple[int, ...]  # when the host left step i's range


def detect(
    gpu: pl.DataFrame, calls: pl.DataFrame, ranges: pl.DataFrame, step: str | None = None, by_pattern: bool = True
) -> Windows:
    """The steps' windows (see the module docstring); `step`: the name of the range that marks one step; `by_pattern`:
    whether a repeating pattern of kernels may be taken for steps (a training or inference loop's)."""
    if step is not None:
        pattern = f"^{pl.escape_regex(step)}([#\\s]\\d+)?$"
        chosen = ranges.filter(pl.col("name").str.contains(pattern))
        if chosen.height == 0:
            raise LookupError(f"no range named {step!r} in the trace")
        return _from_ranges(f"range {step}", chosen, gpu, calls)
    marked = ranges.filter(pl.col("name").str.contains(PROFILER_STEP))
    if marked.height:
        return _from_ranges("ProfilerStep", marked, gpu, calls)
    found = _from_pattern(gpu, calls) if by_pattern else None
    if found is not None:
        return found
    start = min(_min(gpu["start_ns"]), _min(calls["start_ns"]))
    end = max(_max(gpu["end_ns"]), _max(calls["end_ns"]))
    last_call = _max(calls["end_ns"])
    return Windows("whole trace", ("trace",), (start,), (max(end, start),), (max(last_call, start),))


def windows_of(
    how: str, labels: list[str], starts: list[int], ends: list[int], gpu: pl.DataFrame, calls: pl.DataFrame
) -> Windows:
    """The steps' windows from their host ranges (see the module docstring)."""
    host = pl.DataFrame(
        {"step": range(len(starts)), "range_start": starts}, schema={"step": pl.Int64, "range_start": pl.Int64}
    )
    issued = calls.filter(pl.col("correlation_id").is_not_null()).select("correlation_id", "start_ns").sort("start_ns")
    issued = issued.join_asof(host.sort("range_start"), left_on="start_ns", right_on="range_start", strategy="backward")
    launched = issued.filter(pl.col("step").is_not_null()).join(
        gpu.select("correlation_id", pl.col("start_ns").alias("op_start"), "end_ns"), on="correlation_id"
    )
    ends_of = launched.group_by("step").agg(pl.col("end_ns").max())
    gpu_end = dict(ends_of.iter_rows())
    found_starts, found_ends = [], []
    # work queued before the first step (the profiler's warm-up steps, recorded running but not launching) delays
    # the first step's start as a CUDA event's would be
    first_op = launched.filter(pl.col("step") == 0)["op_start"].min()
    backlog = gpu.filter(~pl.col("correlation_id").is_in(launched["correlation_id"].implode()).fill_null(False))
    backlog = backlog.filter(pl.col("start_ns") < first_op) if first_op is not None else backlog.clear()
    previous = _max(backlog["end_ns"])
    for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
        in_range = issued.height and gpu_end.get(i)
        launched_end = int(gpu_end[i]) if in_range else previous
        window_start = max(start, previous)
        window_end = max(end, launched_end, window_start)
        found_starts.append(window_start)
        found_ends.append(window_end)
        previous = window_end
    return Windows(how, tuple(labels), tuple(found_starts), tuple(found_ends), tuple(int(e) for e in ends))


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
    starts, ends = chosen["start_ns"].to_list(), chosen["end_ns"].to_list()
    return windows_of(how, chosen["name"].to_list(), starts, ends, gpu, calls)


def _from_pattern(gpu: pl.DataFrame, calls: pl.DataFrame) -> Windows | None:
    """The loop's period: the smallest number of launches after which the sequence of kernel names repeats
    (MATCH_FRACTION of them). A step is one whole period of launches: where the launches are a whole number of
    periods, the recording began and ended at a step's edge (a profiler schedule records whole steps); otherwise
    steps start where the host paused longest within one period, and the partial periods at either end are left
    out."""
    kernels = gpu.filter(pl.col("kind") == "kernel")
    launch_calls = calls.select(
        "correlation_id", "thread", pl.col("start_ns").alias("at_ns"), pl.col("end_ns").alias("left_ns")
    )
    launches = kernels.join(launch_calls, on="correlation_id", how="inner")
    if launches.height:  # kernels whose launch the trace missed (queued before it began) would shuffle the order
        launches = launches.unique("correlation_id", keep="first", maintain_order=True)  # a graph: one launch
    else:  # a trace of the GPU alone: its kernels in the order they ran
        launches = kernels.with_columns(at_ns=pl.col("start_ns"), left_ns=pl.col("start_ns"), thread=pl.lit(None))
    launches = launches.sort("at_ns")
    n = launches.height
    if n < 2 * MIN_REPEATS:
        return None
    import numpy as np  # here, not at import: only a trace without step ranges needs it

    codes = launches["name"].cast(pl.Categorical).to_physical().to_numpy()[:PATTERN_SAMPLE]
    size = len(codes)
    period, settled = None, 0
    for p in range(1, min(MAX_PERIOD, size // MIN_REPEATS) + 1):
        found = _settled(codes[p:] == codes[:-p], p)
        if found is not None:
            period, settled = p, found
            break
    if period is None or (n - settled) // period < MIN_REPEATS:
        return None
    at = launches["at_ns"].to_numpy()
    left = launches["left_ns"].to_numpy()
    # a warm-up before the loop settled (its first calls load modules, create handles, take other branches) is not
    # a step: the steps are whole periods after it, beginning where the host paused longest (as where the launches
    # are not a whole number of periods)
    steady = n - settled
    phase = 0
    if settled or steady % period:
        pause = np.diff(at, prepend=at[0])[settled:]
        usable = (steady // period) * period
        phase = int(np.argmax(pause[:usable].reshape(-1, period).mean(axis=0)))
    begin = settled + phase
    whole = (n - begin) // period
    firsts = [int(at[begin + k * period]) for k in range(whole)]
    # Between one step's last launch and the next step's first, the host finishes the step (a sync, a copy back)
    # and begins the next (data loading, a copy in): the step changes where the host paused longest.
    # Its pauses are read between the calls that put work on the GPU or wait for it: a loop that loads its data on
    # the host makes cheap queries all through the loading (cudaStreamIsCapturing for each tensor it makes), which
    # would split the loading's pause and put the edge near its end. Where no launch precedes a step, it begins
    # with the host's first call of any kind before its first launch.
    thread = launches["thread"][0]
    host = calls.filter(pl.col("thread") == thread).sort("start_ns") if thread is not None else calls.clear()
    work = host.filter(pl.col("call_class") != OTHER)
    every = (host["start_ns"].to_numpy(), host["end_ns"].to_numpy())
    issuing = (work["start_ns"].to_numpy(), work["end_ns"].to_numpy())
    edges = [int(left[begin + k * period - 1]) if begin + k * period > 0 else None for k in range(whole + 1)]
    nexts = [*firsts, int(at[begin + whole * period]) if begin + whole * period < n else None]
    starts = [
        _host_edge(*(every if edges[k] is None else issuing), edges[k], nexts[k], firsts[k]) for k in range(whole)
    ]
    last = _host_edge(*issuing, edges[whole], nexts[whole], None)
    ends = [*starts[1:], max(last, firsts[-1])]
    labels = [str(i) for i in range(len(firsts))]  # headed "step 2" as a ProfilerStep#N is "step ProfilerStep#N"
    return windows_of("repeating pattern", labels, starts, ends, gpu, calls)


def _settled(matches: np.ndarray, period: int) -> int | None:
    """Where a loop of this period settles: the first launch from which MATCH_FRACTION of the launches repeat one
    period later, with at least half of the launches and MIN_REPEATS periods after it (a warm-up, or the program's
    set-up, may come first); None where it never does."""
    import numpy as np  # as `_from_pattern`: only a trace without step ranges needs it

    size = len(matches)
    misses = np.cumsum(~matches[::-1])[::-1]  # mismatches from each launch on
    after = size - np.arange(size)
    enough = (misses <= (1 - MATCH_FRACTION) * after) & (
        after + period >= max(MIN_REPEATS * period, (size + period) / 2)
    )
    found = np.flatnonzero(enough)
    return int(found[0]) if len(found) else None


def _host_edge(
    starts_at: np.ndarray, ends_at: np.ndarray, after: int | None, before: int | None, first: int | None
) -> int:
    """Where the host left one step for the next, between the previous step's last launch returning (`after`) and
    the next step's first launch (`before`): at the start of its longest pause between calls there. Without a
    previous launch in the trace, the next step begins with the first call before its first launch (`first`);
    without a next launch, the step ends with the host's last call."""
    import numpy as np  # as `_from_pattern`: only a trace without step ranges needs it

    lo = np.searchsorted(starts_at, after if after is not None else -(2**62), side="left")
    hi = np.searchsorted(starts_at, before if before is not None else 2**62, side="left")
    between_start, between_end = starts_at[lo:hi], ends_at[lo:hi]
    if after is None:
        return int(between_start[0]) if len(between_start) else int(first if first is not None else 0)
    if before is None:
        return int(max(after, between_end.max())) if len(between_end) else after
    # the pauses: from `after` to the first call, between calls, from the last call to `before`
    lefts = np.concatenate(([after], np.maximum.accumulate(between_end))) if len(between_end) else np.array([after])
    rights = np.concatenate((between_start, [before]))
    pauses = rights - lefts
    return int(lefts[int(np.argmax(pauses))])
