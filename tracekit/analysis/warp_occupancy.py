"""Occupancy over time from per-warp records: how many warps each SM held, when, and on average.

Volkov's occupancy is the time-average of the number of resident warps per SM. From a trace it is exact: a sweep
over warp starts (+1) and ends (-1) gives the step function of active warps; its integral equals the sum of warp
latencies (each warp contributes its own duration), which is what makes Little's law close on the whole launch.

Times in every analysis module are relative to the launch's first warp start (`relative_times`); a window is a
half-open interval [start_ns, end_ns) of those relative times.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import polars as pl

from tracekit.errors import TracekitError
from tracekit.scalars import as_int

REQUIRED_COLUMNS = ("sm_id", "block_id", "warp_in_block", "start_ns", "end_ns")

Window = tuple[int, int]


def relative_times(warps: pl.DataFrame) -> pl.DataFrame:
    """`warps` with `start_rel_ns`/`end_rel_ns` added: ns since the launch's first warp start.

    A frame that already has them is returned as it is, so the analysis functions can pass it along cheaply.
    """
    if "start_rel_ns" in warps.columns and "end_rel_ns" in warps.columns:
        return warps
    missing = [name for name in REQUIRED_COLUMNS if name not in warps.columns]
    if missing:
        raise TracekitError(f"the warp records lack the column(s) {', '.join(missing)}")
    if warps.height == 0:
        raise TracekitError("the launch has no warp records")
    if warps["start_ns"].null_count() or warps["end_ns"].null_count():
        raise TracekitError("some warp records have no start or end time")
    if (warps["end_ns"] < warps["start_ns"]).any():
        raise TracekitError("some warp records end before they start")
    origin = warps["start_ns"].min()
    return warps.with_columns(
        start_rel_ns=pl.col("start_ns") - origin,
        end_rel_ns=pl.col("end_ns") - origin,
    )


def launch_span_ns(warps: pl.DataFrame) -> int:
    """From the first warp start to the last warp end."""
    return as_int(relative_times(warps)["end_rel_ns"].max())


def resolve_window(warps: pl.DataFrame, window: Window | None) -> Window:
    """`window` checked, or the whole launch [0, last end] when it is None."""
    if window is None:
        return 0, max(launch_span_ns(warps), 1)
    start_ns, end_ns = int(window[0]), int(window[1])
    if end_ns <= start_ns:
        raise TracekitError(f"the window [{start_ns}, {end_ns}) ns is empty: its end must be after its start")
    return start_ns, end_ns


def resolve_sm_count(warps: pl.DataFrame, sm_count: int | None) -> int:
    """The device's SM count, or the number of SMs that ran warps; an SM without warps still counts as idle."""
    if sm_count is not None and warps.height:
        low, high = warps.select(pl.col("sm_id").min().alias("low"), pl.col("sm_id").max().alias("high")).row(0)
        if low is not None and low >= 0 and high < sm_count:  # ids 0..sm_count-1: at most sm_count distinct
            return int(sm_count)
    seen = warps["sm_id"].n_unique()
    if sm_count is None:
        return seen
    if sm_count < seen:
        raise TracekitError(f"sm_count {sm_count} is less than the {seen} SMs that ran warps")
    return int(sm_count)


def occupancy_steps(warps: pl.DataFrame, per_sm: bool = True) -> pl.DataFrame:
    """The active-warp step function: (sm_id,) time_ns, active_warps from time_ns until the next row.

    One row per distinct event time (per SM when `per_sm`), in relative ns, sorted (and flagged sorted: sm_id
    per SM, time_ns GPU-wide, so that a group-by on it takes polars' sorted path). At equal timestamps ends
    are applied before starts, so a warp ending at t and one starting at t never count as resident together;
    the row holds the count after all events at that time. The last row of each SM is 0.
    """
    rel = relative_times(warps)
    # One integer sort key per event, [sm_id | time_ns | 0 for an end, 1 for a start]: a single-column sort is
    # several times faster than sorting (sm_id, time_ns, delta), and it puts ends before starts at equal times.
    time_bits = as_int(rel["end_rel_ns"].max()).bit_length() + 1
    sm_bits = as_int(rel["sm_id"].max()).bit_length() if per_sm else 0
    if time_bits + sm_bits > 62 or (per_sm and as_int(rel["sm_id"].min()) < 0):
        raise TracekitError("warp times or SM ids out of range: SM ids must be >= 0 and the launch under ~50 days")
    # A key that fits 32 bits (GPU-wide, a launch under ~2 s) sorts as UInt32: half the bytes to move.
    dtype = pl.UInt32 if time_bits + sm_bits <= 32 else pl.Int64
    sm_key = pl.col("sm_id").cast(dtype) * pl.lit(1 << time_bits, dtype) if per_sm else pl.lit(0, dtype)
    events = rel.lazy()
    place = pl.col("key") // pl.lit(2, dtype)  # sm_id and time together
    time_unit = pl.lit(1 << (time_bits - 1), dtype)
    steps = (
        pl.concat(
            [
                events.select(key=sm_key + pl.col("end_rel_ns").cast(dtype) * pl.lit(2, dtype)),
                events.select(key=sm_key + pl.col("start_rel_ns").cast(dtype) * pl.lit(2, dtype) + pl.lit(1, dtype)),
            ]
        )
        .sort("key")
        .select(
            place=place,
            # Every SM's events sum to zero, so one running sum over the SM-sorted events restarts at 0 on each SM.
            active_warps=((pl.col("key") & pl.lit(1, dtype)).cast(pl.Int32) * 2 - 1).cum_sum(),
            last_at_time=(place.shift(-1) != place).fill_null(True),
        )
        .filter("last_at_time")
    )
    time_ns = (pl.col("place") % time_unit).cast(pl.Int64)
    if per_sm:  # sorted by (sm_id, time_ns): sm_id is sorted, time_ns only within each SM
        columns = [(pl.col("place") // time_unit).cast(pl.Int32).set_sorted().alias("sm_id"), time_ns.alias("time_ns")]
    else:
        columns = [time_ns.set_sorted().alias("time_ns")]
    return steps.select(*columns, active_warps="active_warps").collect()


def gpu_steps_from_per_sm(per_sm_steps: pl.DataFrame) -> pl.DataFrame:
    """The GPU-wide step function summed from the per-SM one, without sorting the warp events again.

    Equal to `occupancy_steps(warps, per_sm=False)`, row for row: the per-SM rows' distinct times are the launch's
    distinct event times, and each SM's change in active warps at a time, summed over SMs and run through a
    cumulative sum in time order, is the GPU-wide count. Grouping ~N rows by time is several times cheaper than
    sorting 2N events.
    """
    active = pl.col("active_warps")
    # The last row of each SM is 0, so the previous row's count is the right base at each SM's first row too.
    change = active - active.shift(1).fill_null(0)
    return (
        per_sm_steps.lazy()
        .select("time_ns", change=change)
        .group_by("time_ns")
        .agg(pl.col("change").sum())
        .sort("time_ns")
        .select("time_ns", active_warps=pl.col("change").cum_sum().cast(pl.Int32))
        .collect()
    )


@dataclass(frozen=True, eq=False)
class LaunchSteps:
    """A launch's active-warp step functions, per SM and GPU-wide (see `occupancy_steps`), from one event sort.

    Sorting the 2N warp events is most of what the occupancy, Little's law and steady-state analyses cost, and they
    all need the same step functions: compute them once with `launch_steps` and pass them on (the `steps=` /
    `gpu_steps=` parameters) rather than letting each function sort again.
    """

    per_sm: pl.DataFrame  # sm_id, time_ns, active_warps
    gpu: pl.DataFrame  # time_ns, active_warps


def launch_steps(warps: pl.DataFrame) -> LaunchSteps:
    """Both step functions of `warps`: the per-SM sweep, and the GPU-wide one from its own sort of the events
    (on 10M warps, polars 2.1 and 2 cores: 1.2 s of CPU against 2.2 s for `gpu_steps_from_per_sm`'s group-by
    of the per-SM rows; both give the same rows)."""
    per_sm = occupancy_steps(warps, per_sm=True)
    return LaunchSteps(per_sm=per_sm, gpu=occupancy_steps(warps, per_sm=False))


def step_segments(steps: pl.DataFrame, window: Window) -> pl.LazyFrame:
    """`steps` with `length_ns`: how long each step's value holds inside `window` (0 outside it); lazy, so that
    the caller's aggregation runs in the same pass (materialized, the column cost a second on 10M warps).

    The last step of an SM is 0 warps, so its length (which runs into the next SM's rows) never matters.
    """
    start_ns, end_ns = window
    next_time = pl.col("time_ns").shift(-1).fill_null(end_ns)
    length = pl.min_horizontal(next_time, pl.lit(end_ns)) - pl.max_horizontal(pl.col("time_ns"), pl.lit(start_ns))
    return steps.lazy().with_columns(length_ns=length.clip(lower_bound=0))


def occupancy_integral(steps: pl.DataFrame, window: Window) -> int:
    """Warp-ns inside `window`: the integral of the active-warp step function (exact, integer)."""
    segments = step_segments(steps, window)
    return int(segments.select((pl.col("active_warps").cast(pl.Int64) * pl.col("length_ns")).sum()).collect().item())


@dataclass(frozen=True, eq=False)
class OccupancyOverTime:
    """Time-weighted occupancy over a window, GPU-wide and per SM (warps per SM)."""

    window_ns: Window
    sm_count: int
    mean_occupancy_warps_per_sm: float  # GPU-wide: warp-ns / (window * sm_count)
    variance_over_time: float  # of the GPU-wide curve (active warps / sm_count), time-weighted, warps^2
    variance_across_sms: float  # of the per-SM means, idle SMs as 0 (population variance)
    mean_warps_per_active_sm: float  # averaged only over the time each SM held >= 1 warp (what ncu's counter does)
    max_active_warps_per_sm: int
    per_sm: pl.DataFrame  # sm_id, mean_active_warps, variance_active_warps, active_ns, max_active_warps

    def to_dict(self) -> dict:
        result = {field.name: getattr(self, field.name) for field in fields(self)}
        result["window_ns"] = list(self.window_ns)
        result["per_sm"] = self.per_sm.to_dicts()
        return result


def mean_occupancy(
    warps: pl.DataFrame, window: Window | None = None, sm_count: int | None = None, steps: LaunchSteps | None = None
) -> OccupancyOverTime:
    """Mean and variance of the number of active warps per SM over `window` (default: the whole launch).

    `steps` (from `launch_steps` on the same warps) saves the event sweep when the caller already has it.
    """
    rel = relative_times(warps)
    steps = launch_steps(rel) if steps is None else steps
    window = resolve_window(rel, window)
    sm_count = resolve_sm_count(rel, sm_count)
    duration_ns = window[1] - window[0]

    active = pl.col("active_warps").cast(pl.Int64)
    length = pl.col("length_ns")
    per_sm = (
        step_segments(steps.per_sm, window)
        # Per-row terms first, then plain sums and a max per SM: cheaper than filtering inside the aggregation.
        .select(
            "sm_id",
            warp_ns=active * length,
            warp_ns_squared=active.cast(pl.Float64) ** 2 * length,
            active_ns=pl.when(active > 0).then(length).otherwise(0),
            max_active_warps=pl.when(length > 0).then(active).otherwise(0),  # counts are >= 0: 0 when none
        )
        .group_by("sm_id")
        .agg(pl.col("warp_ns", "warp_ns_squared", "active_ns").sum(), pl.col("max_active_warps").max())
        .sort("sm_id")
        .with_columns(mean_active_warps=pl.col("warp_ns") / duration_ns)
        .with_columns(
            variance_active_warps=pl.col("warp_ns_squared") / duration_ns - pl.col("mean_active_warps") ** 2,
        )
        .collect()
        .rechunk()  # one chunk (the sorted group-by gives one per SM): the float sums below in one fixed order
    )
    total_warp_ns = int(per_sm["warp_ns"].sum())
    total_active_ns = int(per_sm["active_ns"].sum())
    gpu_mean = total_warp_ns / (duration_ns * sm_count)
    means = per_sm["mean_active_warps"]
    variance_across_sms = float((means**2).sum()) / sm_count - (float(means.sum()) / sm_count) ** 2

    gpu = step_segments(steps.gpu, window)
    gpu_squared = float(gpu.select((pl.col("active_warps").cast(pl.Float64) ** 2 * length).sum()).collect().item())
    variance_over_time = gpu_squared / duration_ns / sm_count**2 - gpu_mean**2

    return OccupancyOverTime(
        window_ns=window,
        sm_count=sm_count,
        mean_occupancy_warps_per_sm=gpu_mean,
        variance_over_time=max(variance_over_time, 0.0),
        variance_across_sms=max(variance_across_sms, 0.0),
        mean_warps_per_active_sm=total_warp_ns / total_active_ns if total_active_ns else 0.0,
        max_active_warps_per_sm=as_int(per_sm["max_active_warps"].max()),
        per_sm=per_sm.select("sm_id", "mean_active_warps", "variance_active_warps", "active_ns", "max_active_warps"),
    )


def trace_vs_counter(trace_mean_warps_per_sm: float, max_warps_per_sm: int, counter_pct: float) -> dict:
    """The trace's occupancy next to ncu's `sm__warps_active.avg.pct_of_peak_sustained_active`.

    The counter averages over the cycles an SM is active, so compare it with
    `OccupancyOverTime.mean_warps_per_active_sm`. It is usually higher than the trace: it counts the time a warp
    holds its slot outside the clock reads that bound a traced warp (launch before the first read, exit after
    the last, waiting for the rest of its block), and it comes from another run of the kernel (ncu replays it).
    """
    if max_warps_per_sm <= 0:
        raise TracekitError(f"max warps per SM must be positive, not {max_warps_per_sm}")
    trace_pct = 100.0 * trace_mean_warps_per_sm / max_warps_per_sm
    counter_warps = counter_pct / 100.0 * max_warps_per_sm
    return {
        "max_warps_per_sm": max_warps_per_sm,
        "trace_warps_per_sm": trace_mean_warps_per_sm,
        "trace_pct": trace_pct,
        "counter_warps_per_sm": counter_warps,
        "counter_pct": counter_pct,
        "difference_warps_per_sm": counter_warps - trace_mean_warps_per_sm,  # counter minus trace
        "difference_pct_points": counter_pct - trace_pct,
    }
