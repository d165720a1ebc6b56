"""Little's law on a trace: mean occupancy = mean warp latency x warp throughput (Volkov, ch. 3).

Occupancy comes from the sweep over warp events (warp_occupancy); latency and throughput from the warps. Two ways to
treat warps that cross the window's edges:
- clipped: every warp resident in the window, its latency clipped to the window, throughput = those warps per ns
  per SM. The clipped latencies sum to the occupancy integral, so the law holds exactly; it is the check that the
  sweep and the warps agree.
- whole (the usual way, and the reported `latency_x_throughput`): warps that start in the window, with their full
  latencies, throughput = their arrival rate. The gap to the occupancy is exactly
  (spilled_out_warp_ns - carried_in_warp_ns) / (window x sm_count): warp time after the window's end of warps that
  started in it, minus warp time inside the window of warps that started before it. In a stationary window those
  two cancel on average; `occupancy_drift` (second half minus first half of the window, relative to the mean)
  shows when they cannot because the window is not stationary. (`tracekit.present.rules.notes` says which explains
  a result's gap.)
Over the whole launch [first start, last end] both ways count every warp whole and the law closes exactly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import polars as pl

from tracekit.analysis.throughput import completed_in, started_in
from tracekit.analysis.warp_occupancy import (
    Window,
    occupancy_integral,
    occupancy_steps,
    relative_times,
    resolve_sm_count,
    resolve_window,
)
from tracekit.analysis.windows import describe_steady_state


@dataclass(frozen=True)
class LittlesLaw:
    window_ns: Window
    window_kind: str  # "launch", "steady_state" or "given" ("launch" too when no steady state was found)
    sm_count: int
    mean_occupancy: float  # warps per SM, from the sweep
    # Whole warps that start in the window (the reported check).
    latency_x_throughput: float
    relative_error: float  # (latency_x_throughput - mean_occupancy) / mean_occupancy
    warps_started: int
    mean_latency_ns: float
    arrival_throughput_warps_per_ns_per_sm: float
    # Warps clipped to the window (closes exactly).
    warps_resident: int
    mean_clipped_latency_ns: float
    clipped_throughput_warps_per_ns_per_sm: float
    clipped_latency_x_throughput: float
    clipped_relative_error: float
    # What explains the gap of the whole-warp check.
    warps_straddling_start: int
    warps_straddling_end: int
    carried_in_warp_ns: int
    spilled_out_warp_ns: int
    completion_throughput_warps_per_ns_per_sm: float  # warps ending in the window, for comparison
    occupancy_drift: float  # (mean of second half - mean of first half) / mean

    def to_dict(self) -> dict:
        result = asdict(self)
        result["window_ns"] = list(self.window_ns)
        return result


def check_littles_law(
    warps: pl.DataFrame,
    window: Window | Literal["launch", "steady_state"] | None = None,
    sm_count: int | None = None,
    gpu_steps: pl.DataFrame | None = None,
) -> LittlesLaw:
    """Little's law over `window`: None or "steady_state" for the steady state, "launch" for the whole launch.

    `gpu_steps` (`occupancy_steps(warps, per_sm=False)` or `launch_steps(warps).gpu`) saves the event sweep when
    the caller already has it.
    """
    rel = relative_times(warps)
    sm_count = resolve_sm_count(rel, sm_count)
    if gpu_steps is None:
        gpu_steps = occupancy_steps(rel, per_sm=False)
    if window is None or window == "steady_state":
        state = describe_steady_state(rel, gpu_steps=gpu_steps)
        kind, window = ("launch" if state.whole_launch else "steady_state"), state.window_ns
    elif window == "launch":
        kind, window = "launch", resolve_window(rel, None)
    else:
        kind, window = "given", resolve_window(rel, window)
    start_ns, end_ns = window
    capacity_ns = (end_ns - start_ns) * sm_count  # warp-ns of one warp per SM over the window

    occupancy = occupancy_integral(gpu_steps, window) / capacity_ns

    start, end = pl.col("start_rel_ns"), pl.col("end_rel_ns")
    middle_ns = start_ns + (end_ns - start_ns) // 2

    def clipped(lower_ns: int, upper_ns: int) -> pl.Expr:
        """Each warp's time inside [lower_ns, upper_ns), 0 when it lies outside."""
        overlap = pl.min_horizontal(end, pl.lit(upper_ns)) - pl.max_horizontal(start, pl.lit(lower_ns))
        return overlap.clip(lower_bound=0)

    def where(condition: pl.Expr, value: pl.Expr | int = 1) -> pl.Expr:
        return pl.when(condition).then(value).otherwise(0).sum()

    starts_inside = started_in(window)
    straddles_start = (start < start_ns) & (end > start_ns)
    resident = (start < end_ns) & ((end > start_ns) | (start >= start_ns))  # zero-length warps inside count
    sums = (
        rel.lazy()
        .select(
            started=where(starts_inside),
            started_warp_ns=where(starts_inside, end - start),
            spilled_out_warp_ns=where(starts_inside & (end > end_ns), end - end_ns),
            carried_in_warp_ns=where(straddles_start, clipped(start_ns, end_ns)),
            resident=where(resident),
            resident_warp_ns=clipped(start_ns, end_ns).sum(),
            first_half_warp_ns=clipped(start_ns, middle_ns).sum(),
            second_half_warp_ns=clipped(middle_ns, end_ns).sum(),
            straddling_start=where(straddles_start),
            straddling_end=where((start < end_ns) & (end > end_ns)),
            completed=where(completed_in(window)),
        )
        .collect()
        .row(0, named=True)
    )
    sums = {name: int(value or 0) for name, value in sums.items()}

    whole = sums["started_warp_ns"] / capacity_ns
    clipped_product = sums["resident_warp_ns"] / capacity_ns
    first_half = sums["first_half_warp_ns"] / ((middle_ns - start_ns) or 1)
    second_half = sums["second_half_warp_ns"] / (end_ns - middle_ns)
    mean_active = (sums["resident_warp_ns"] / (end_ns - start_ns)) or 1.0

    def relative(product: float) -> float:
        return (product - occupancy) / occupancy if occupancy else 0.0

    return LittlesLaw(
        window_ns=window,
        window_kind=kind,
        sm_count=sm_count,
        mean_occupancy=occupancy,
        latency_x_throughput=whole,
        relative_error=relative(whole),
        warps_started=sums["started"],
        mean_latency_ns=sums["started_warp_ns"] / sums["started"] if sums["started"] else 0.0,
        arrival_throughput_warps_per_ns_per_sm=sums["started"] / capacity_ns,
        warps_resident=sums["resident"],
        mean_clipped_latency_ns=sums["resident_warp_ns"] / sums["resident"] if sums["resident"] else 0.0,
        clipped_throughput_warps_per_ns_per_sm=sums["resident"] / capacity_ns,
        clipped_latency_x_throughput=clipped_product,
        clipped_relative_error=relative(clipped_product),
        warps_straddling_start=sums["straddling_start"],
        warps_straddling_end=sums["straddling_end"],
        carried_in_warp_ns=sums["carried_in_warp_ns"],
        spilled_out_warp_ns=sums["spilled_out_warp_ns"],
        completion_throughput_warps_per_ns_per_sm=sums["completed"] / capacity_ns,
        occupancy_drift=(second_half - first_half) / mean_active,
    )
