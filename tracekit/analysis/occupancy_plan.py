"""`tracekit occupancy` computed: a launch configuration's theoretical occupancy (`occupancy.theoretical_occupancy`),
the curves of each knob at the same carveout, barriers and opt-in, the nearest cliffs, and the waves of a grid."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tracekit.analysis.occupancy import (
    KNOB_COLUMNS as KNOB_COLUMNS,
)
from tracekit.analysis.occupancy import (
    Cliff,
    OccupancyResult,
    carveout_bytes_from_percent,
    compact_cliffs,
    device_limits,
    nearest_cliffs,
    occupancy_cliffs,
    tail_estimate,
    theoretical_occupancy,
)
from tracekit.errors import TracekitError


@dataclass(frozen=True)
class OccupancyPlan:
    """What `tracekit occupancy` shows: the configuration's occupancy, each knob's steps (`compact_cliffs`), the
    nearest cliffs and, with a grid and an SM count, the waves (`tail_estimate`)."""

    result: OccupancyResult
    steps: dict[str, pl.DataFrame]
    nearest: list[Cliff]
    tail: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        """`tracekit occupancy --json`."""
        return {
            **self.result.to_dict(),
            "nearest_cliffs": [cliff.to_dict() for cliff in self.nearest],
            "cliffs": {knob: frame.to_dicts() for knob, frame in self.steps.items()},
            "tail": self.tail,
        }


def carveout_bytes(cc: str, text: str | None) -> int | None:
    """A carveout as bytes: "65536", or "50%" of the SM's largest carveout; None: the SM's maximum."""
    if text is None:
        return None
    value = text.strip()
    try:
        if value.endswith("%"):
            return carveout_bytes_from_percent(cc, int(value[:-1]))
        return int(value)
    except ValueError:
        raise TracekitError(f"--carveout {text!r}: expected bytes (65536) or a percentage (50%)") from None


def occupancy_plan(
    cc: str,
    block: int,
    regs: int,
    smem: int,
    carveout: str | None = None,
    barriers: int = 1,
    opt_in: bool = False,
    grid: int | None = None,
    sms: int | None = None,
) -> OccupancyPlan:
    """The plan of one configuration; TracekitError for one the launch would refuse."""
    if (grid is None) != (sms is None):
        raise TracekitError("--grid and --sms go together: waves need both the grid size and the SM count")
    carveout_b = carveout_bytes(cc, carveout)
    result = theoretical_occupancy(cc, block, regs, smem, carveout_b, barriers_per_block=barriers, opt_in=opt_in)
    default_smem = device_limits(cc).default_shared_mem_per_block_bytes
    if not opt_in and smem > default_smem:
        raise TracekitError(
            f"{smem} bytes of shared memory per block: more than {default_smem} needs the kernel's opt-in "
            "(cudaFuncAttributeMaxDynamicSharedMemorySize), without which the launch fails; pass --opt-in if the "
            "kernel opts in"
        )
    cliffs = occupancy_cliffs(cc, block, regs, smem, carveout_b, barriers_per_block=barriers, opt_in=opt_in)
    tail = None
    if grid is not None and sms is not None:
        if result.active_blocks_per_sm == 0:
            raise TracekitError(f"no block fits on an SM (limited by {result.limiter}): there are no waves")
        tail = tail_estimate(grid, result.active_blocks_per_sm, sms)
    steps = {knob: compact_cliffs(frame) for knob, frame in cliffs.items()}
    return OccupancyPlan(result, steps, nearest_cliffs(cliffs, block, regs, smem), tail)
