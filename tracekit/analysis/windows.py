"""The steady-state window of a launch: after the ramp-up, before the tail, where Little's law is usually checked.

Rule, on the GPU-wide active-warp curve (occupancy_steps, per_sm=False):
- the steady level is the time-weighted median of the curve before the last block starts (the whole launch when
  every block started at once);
- ramp-up ends when the curve first reaches `level_fraction` (0.9) of that level;
- the tail starts at the earlier of the last block start (no warp arrives after it, so the count can only fall)
  and the end of the last stretch at or above `level_fraction` of the level (occupancy falls for good).
When that leaves no time (a single short wave, a handful of warps), or less than one mean warp latency (no warp
turns over inside it, so Little's law there measures only its edges: a one-wave kernel whose blocks start within a
few hundred ns has no steady state), the window is the whole launch and `SteadyState.whole_launch` says so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import polars as pl

from tracekit.analysis.tail import last_block_start_ns
from tracekit.analysis.warp_occupancy import Window, occupancy_steps, relative_times, step_segments
from tracekit.scalars import as_float, as_int

MIN_LATENCIES = 1.0  # a steady-state window spans at least one mean warp latency: warps turn over in it


@dataclass(frozen=True)
class SteadyState:
    window_ns: Window
    steady_level_warps: float  # GPU-wide active warps (all SMs together)
    ramp_up_end_ns: int
    tail_start_ns: int
    last_block_start_ns: int
    whole_launch: bool  # no steady state was found; window_ns is the whole launch

    def to_dict(self) -> dict:
        result = asdict(self)
        result["window_ns"] = list(self.window_ns)
        return result


def describe_steady_state(
    warps: pl.DataFrame, level_fraction: float = 0.9, gpu_steps: pl.DataFrame | None = None
) -> SteadyState:
    """The steady state and how it was found; `gpu_steps` saves the sweep when the caller already has it."""
    rel = relative_times(warps)
    span_ns = as_int(rel["end_rel_ns"].max())
    last_start = last_block_start_ns(rel)
    steps = occupancy_steps(rel, per_sm=False) if gpu_steps is None else gpu_steps
    level_window = (0, last_start) if last_start > 0 else (0, max(span_ns, 1))
    by_level = (  # the time spent at each level, levels in order (a few hundred rows, not a sort of every step)
        step_segments(steps, level_window)
        .filter(pl.col("length_ns") > 0)
        .group_by("active_warps")
        .agg(pl.col("length_ns").sum())
        .sort("active_warps")
        .with_columns(cumulative_ns=pl.col("length_ns").cum_sum())
        .collect()
    )
    if by_level.height == 0:
        level = as_float(steps["active_warps"].max())
    else:
        half = by_level["cumulative_ns"][-1] / 2
        level = float(by_level.filter(pl.col("cumulative_ns") >= half)["active_warps"][0])
    threshold = level_fraction * level
    # Each step holds from its time_ns to the next step's time_ns; only the first and last high steps are needed
    # (lazy: the until column of every step is never materialized).
    first_high_ns, last_high_until_ns = (
        steps.lazy()
        .with_columns(until_ns=pl.col("time_ns").shift(-1).fill_null(span_ns))
        .filter(pl.col("active_warps") >= threshold)
        .select(pl.col("time_ns").first(), pl.col("until_ns").last())
        .collect()
        .row(0)
    )
    ramp_end, falls_for_good = as_int(first_high_ns), as_int(last_high_until_ns)
    tail_start = min(last_start, falls_for_good)
    mean_latency_ns = float(rel.select((pl.col("end_rel_ns") - pl.col("start_rel_ns")).mean()).item() or 0.0)
    whole = tail_start - ramp_end < max(1.0, MIN_LATENCIES * mean_latency_ns)
    window = (0, max(span_ns, 1)) if whole else (ramp_end, tail_start)
    return SteadyState(
        window_ns=window,
        steady_level_warps=level,
        ramp_up_end_ns=ramp_end,
        tail_start_ns=tail_start,
        last_block_start_ns=last_start,
        whole_launch=whole,
    )


def steady_state_window(warps: pl.DataFrame) -> Window:
    """[start_ns, end_ns) in relative ns: from the end of ramp-up to the start of the tail (see the module doc)."""
    return describe_steady_state(warps).window_ns
