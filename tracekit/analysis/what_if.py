"""What if the launch used another block size, register count or shared memory per block?

The new theoretical occupancy comes from `theoretical_occupancy` with the launch's compute capability. Where an
occupancy sweep of the kernel has been fitted to Volkov's throughput = min(n / L, B), the model also predicts the
throughput at the new warps per SM. The sweep's points are measured occupancies (trace or Nsight's achieved), which
lie below the theoretical ceilings, so the prediction compares the model at the new theoretical occupancy with the
model at the launch's current theoretical occupancy: the ratio of the two is what the model claims, not the
absolute value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tracekit.analysis.model import model_throughput
from tracekit.analysis.occupancy import (
    Cliff,
    OccupancyResult,
    nearest_cliffs,
    occupancy_cliffs,
    theoretical_occupancy,
    waves_per_sm,
)
from tracekit.analysis.types import LaunchAnalysis, Sweep
from tracekit.errors import TracekitError


@dataclass(frozen=True)
class ThroughputPrediction:
    """The fitted min(n / L, B) at one occupancy."""

    warps_per_sm: float
    throughput_warps_per_ns_per_sm: float
    regime: str  # "latency": n / L, below the knee L x B; "throughput": at the bound B
    within_measured_range: bool  # n lies between the sweep's lowest and highest measured occupancy


def predict_throughput(sweep: Sweep, warps_per_sm: float) -> ThroughputPrediction | None:
    """throughput = min(n / L, B) of a result's `sweep` (`latency_ns`, `throughput_bound_warps_per_ns_per_sm`).

    A fit with only a rising part (no plateau measured) predicts n / L, and one with only a plateau predicts B;
    outside the measured occupancies either is an extrapolation (`within_measured_range` is False). None when the
    sweep has neither L nor B.
    """
    latency, bound = sweep.latency_ns, sweep.throughput_bound_warps_per_ns_per_sm
    throughput = model_throughput(warps_per_sm, latency, bound)
    if throughput is None:
        return None
    regime = "throughput" if bound is not None and throughput >= bound else "latency"
    measured = [point.occupancy_warps_per_sm for point in sweep.points]
    within = bool(measured) and min(measured) <= warps_per_sm <= max(measured)
    return ThroughputPrediction(float(warps_per_sm), throughput, regime, within)


@dataclass(frozen=True)
class WhatIf:
    """A launch configuration the user typed, against the launch's own."""

    occupancy: OccupancyResult  # of the new configuration
    current_warps_per_sm: float | None  # the launch's theoretical occupancy (None: not computable)
    waves_per_sm: float | None  # the launch's grid in full waves of the new configuration (None: grid or SMs unknown)
    cliffs: list[Cliff]  # the nearest changes of occupancy, up and down each knob, from the new configuration
    predicted: ThroughputPrediction | None  # None without a sweep
    predicted_current: ThroughputPrediction | None  # the model at the launch's own theoretical occupancy

    @property
    def throughput_ratio(self) -> float | None:
        """Predicted throughput at the new configuration over the launch's own, by the model."""
        if self.predicted is None or self.predicted_current is None:
            return None
        current = self.predicted_current.throughput_warps_per_ns_per_sm
        return self.predicted.throughput_warps_per_ns_per_sm / current if current else None


def what_if(
    result: LaunchAnalysis, threads_per_block: int, registers_per_thread: int, shared_mem_per_block_bytes: int
) -> WhatIf:
    """The new configuration's occupancy on the launch's device, and the sweep's prediction when there is one.

    Raises TracekitError when the device's compute capability is unknown or the configuration cannot run on it.
    The shared-memory carveout is left to the calculator (the SM's largest), as the driver would pick one for the
    new size: the active blocks come out the same.
    """
    cc = result.kernel.device.cc
    if cc is None:
        raise TracekitError(
            "the launch's compute capability is unknown, so its occupancy limits are unknown "
            "(import a file that records the device: Nsight Compute, Nsight Systems or a warp "
            "trace with a compute_capability header)"
        )
    occupancy = theoretical_occupancy(str(cc), threads_per_block, registers_per_thread, shared_mem_per_block_bytes)
    cliffs = nearest_cliffs(
        occupancy_cliffs(str(cc), threads_per_block, registers_per_thread, shared_mem_per_block_bytes),
        threads_per_block,
        registers_per_thread,
        shared_mem_per_block_bytes,
    )
    grid, sm_count = result.kernel.grid, result.kernel.device.sm_count
    waves = None
    if all(grid) and sm_count and occupancy.active_blocks_per_sm:
        blocks = math.prod(int(v or 0) for v in grid)
        waves = waves_per_sm(blocks, occupancy.active_blocks_per_sm, int(sm_count))
    current = result.occupancy.theoretical_warps_per_sm
    sweep = result.sweep
    predicted = predict_throughput(sweep, occupancy.theoretical_warps_per_sm) if sweep else None
    predicted_current = predict_throughput(sweep, current) if sweep and current else None
    return WhatIf(occupancy, current, waves, cliffs, predicted, predicted_current)
