"""The tail effect, measured: how long the launch ran on a falling number of warps, and how unevenly SMs finished.

Once the last block has started no new warps arrive, so from then on the active-warp count only falls: that is the
tail (`tail_ns`, from the last block start to the last warp end). An SM is idle for good once its last warp has
ended; the first such time starts the tail (`tail_ns`). A block starts when its
first warp does. SMs that ran no warp (when `sm_count` exceeds those seen) are counted in `idle_sms` and in the
GPU-wide occupancy means, not in the finish-time spread.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import polars as pl

from tracekit.analysis.warp_occupancy import relative_times, resolve_sm_count
from tracekit.scalars import as_float, as_int


def last_block_start_ns(warps: pl.DataFrame) -> int:
    """When the last block started (relative ns): the latest of the blocks' first warp starts."""
    rel = relative_times(warps)
    firsts = rel.lazy().group_by("block_id").agg(pl.col("start_rel_ns").min())
    return int(firsts.select(pl.col("start_rel_ns").max()).collect().item())


def warp_ns_in(rel: pl.DataFrame, start_ns: int, end_ns: int) -> int:
    """Warp-ns inside [start_ns, end_ns): each warp's duration clipped to it, summed."""
    clipped = pl.min_horizontal("end_rel_ns", pl.lit(end_ns)) - pl.max_horizontal("start_rel_ns", pl.lit(start_ns))
    return int(rel.select(clipped.clip(lower_bound=0).sum()).item())


@dataclass(frozen=True)
class TailEffect:
    """The one tail: from the first SM idle for good to the last warp end (`tail_ns`); from then on the GPU is not
    fully used. The time after the last block started is kept under its own name: counted that way a clean
    1.9-wave launch would show its whole second wave as tail."""

    tail_ns: int  # span - first SM idle for good
    tail_fraction: float  # of the span
    after_last_block_start_ns: int  # span - last block start: no new warps arrive any more
    after_last_block_start_fraction: float
    span_ns: int  # first warp start to last warp end
    last_block_start_ns: int
    first_sm_idle_ns: int  # earliest time an SM that ran warps went idle for good
    mean_occupancy_in_tail_warps_per_sm: float  # after the last block start
    mean_occupancy_before_tail_warps_per_sm: float
    sm_count: int
    sms_with_warps: int
    idle_sms: int
    sm_finish_min_ns: int
    sm_finish_max_ns: int
    sm_finish_mean_ns: float
    sm_finish_std_ns: float  # population standard deviation over SMs that ran warps

    def to_dict(self) -> dict:
        return asdict(self)


def measure_tail(warps: pl.DataFrame, sm_count: int | None = None) -> TailEffect:
    rel = relative_times(warps)
    sm_count = resolve_sm_count(rel, sm_count)
    span_ns = as_int(rel["end_rel_ns"].max())
    last_start = last_block_start_ns(rel)
    # Sorted so the float mean and std do not change in the last digit with group_by's order from run to run.
    finish = rel.lazy().group_by("sm_id").agg(finish_ns=pl.col("end_rel_ns").max()).sort("sm_id").collect()["finish_ns"]
    first_idle = as_int(finish.min())
    after_last_start_ns = span_ns - last_start
    tail_ns = span_ns - first_idle

    def mean_occupancy(start_ns: int, end_ns: int) -> float:
        return warp_ns_in(rel, start_ns, end_ns) / ((end_ns - start_ns) * sm_count) if end_ns > start_ns else 0.0

    return TailEffect(
        tail_ns=tail_ns,
        tail_fraction=tail_ns / span_ns if span_ns else 0.0,
        after_last_block_start_ns=after_last_start_ns,
        after_last_block_start_fraction=after_last_start_ns / span_ns if span_ns else 0.0,
        span_ns=span_ns,
        last_block_start_ns=last_start,
        first_sm_idle_ns=first_idle,
        mean_occupancy_in_tail_warps_per_sm=mean_occupancy(last_start, span_ns),
        mean_occupancy_before_tail_warps_per_sm=mean_occupancy(0, last_start),
        sm_count=sm_count,
        sms_with_warps=finish.len(),
        idle_sms=sm_count - finish.len(),
        sm_finish_min_ns=first_idle,
        sm_finish_max_ns=as_int(finish.max()),
        sm_finish_mean_ns=as_float(finish.mean()),
        sm_finish_std_ns=as_float(finish.std(ddof=0)),
    )
