"""Cache footprint: the data a configuration puts on each SM at once, against L1 and L2.

A block that reads its own data more than once (a row normalized in three passes over it) finds it in L1 while
the blocks resident on the SM together touch less than L1 holds: between two reads of a byte the SM's blocks
touch about blocks x their own bytes (the reuse distance), and a least-recently-used cache keeps the byte only
where that fits. Past L1 the re-reads go to L2, which holds the share 1 - (all SMs' footprint / L2 size) of them
(the rest of what it held is evicted by the other SMs' rows), and the others come from DRAM.

A block's own bytes are its share of the DRAM bytes read (each read once while it fits). The bytes L1 serves
per DRAM byte are the most that can move to DRAM; which of them are a block's own re-reads and which are data
every block shares (weights, which stay hot in L1 whatever the footprint) the counters do not tell apart: the
point takes the geometric middle of the two, the interval (`uncertainty`'s cache footprint) both ends.
Measured on the H100 (a Triton layer norm, rows of 32 KiB read three times): 2 or 4 rows per SM fit L1 and
keep their DRAM reads at one per row; 8 (256 KiB) outgrow L1, and L2 keeps 32% of the re-reads (Nsight's DRAM
reads; 1 - 34 MB of rows / 52 MB = 35%); 16 outgrow both and read every row three times from DRAM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tracekit.analysis.occupancy import device_limits
from tracekit.analysis.predict.findings import finding
from tracekit.analysis.predict.occupancy_step import Config
from tracekit.analysis.predict.types import Finding, PredictInputs
from tracekit.ceilings.devices import ARCHITECTURE_BY_CC

# L1 serving this share of global loads or more: a footprint that a change of rows per SM can move.
L1_FOOTPRINT_SHARE = 0.2


@dataclass(frozen=True)
class Footprint:
    """A configuration's data per SM against its L1, and the DRAM traffic it would add."""

    bytes_per_sm_now: float
    bytes_per_sm_new: float
    l1_bytes_new: float
    l2_share_kept: float  # of the re-reads that miss L1
    dram_growth: float  # DRAM bytes after / now, were every byte L1 serves a block's own re-read


def _resident_blocks(inputs: PredictInputs, config: Config) -> int:
    return max(1, min(config.blocks_per_sm, math.ceil(config.grid_blocks / max(inputs.sm_count, 1))))


def _l1_bytes(inputs: PredictInputs, config: Config, carveout: float | None) -> float | None:
    """The SM's unified L1 (the device table's, `unified_l1_kb`) less the shared-memory carveout: the measured one,
    else the smallest carveout that holds the resident blocks' shared memory and the driver's reserve per block.
    None where the table has no L1 size (before Volta global loads bypass L1 by default: no footprint)."""
    if inputs.compute_capability not in ARCHITECTURE_BY_CC:
        return None
    limits = device_limits(inputs.compute_capability)
    unified = limits.unified_l1_bytes
    if unified is None:
        return None
    if carveout is None:
        needed = _resident_blocks(inputs, config) * (
            config.shared_mem_per_block_bytes + limits.reserved_shared_mem_per_block_bytes
        )
        carveout = min((c for c in limits.shared_mem_carveouts_bytes if c >= needed), default=needed)
    return max(unified - carveout, 0.0)


def footprint(inputs: PredictInputs, now: Config, new: Config) -> Footprint | None:
    """The change's footprint where it outgrows the SM's L1 and the launch's own fits it now (a launch whose
    footprint already outgrows L1 reads more from DRAM than its own bytes: its own cannot be told); None
    otherwise, or without the counters (L1 hit rate, DRAM bytes read, L2 size)."""
    hit, served, read = inputs.l1_hit_rate, inputs.l1_served_per_dram_byte, inputs.dram_read_bytes
    if hit is None or hit < L1_FOOTPRINT_SHARE or not served or not read or not inputs.l2_bytes:
        return None
    if inputs.grid_blocks <= 0 or new.grid_blocks <= 0:
        return None
    l1_now = _l1_bytes(inputs, now, inputs.shared_carveout_bytes)
    l1_new = _l1_bytes(inputs, new, None)  # the driver picks the new configuration's carveout
    if not l1_now or not l1_new:
        return None
    own_now = read / inputs.grid_blocks
    own_new = own_now * inputs.grid_blocks / new.grid_blocks  # the same work over the new grid
    per_sm_now = _resident_blocks(inputs, now) * own_now
    per_sm_new = _resident_blocks(inputs, new) * own_new
    if per_sm_now > l1_now or per_sm_new <= l1_new:
        return None
    kept = max(0.0, 1.0 - per_sm_new * inputs.sm_count / inputs.l2_bytes)
    return Footprint(per_sm_now, per_sm_new, l1_new, kept, 1.0 + served * (1.0 - kept))


def footprint_step(inputs: PredictInputs, now: Config, new: Config) -> tuple[float | None, list[Finding]]:
    """The work scale at the point (the square root of the DRAM growth) and its finding; None where the
    footprint does not move."""
    found = footprint(inputs, now, new)
    if found is None:
        return None, []
    return math.sqrt(found.dram_growth), [
        finding(
            "uncertainty",
            "predict.footprint",
            ("per_sm_now", found.bytes_per_sm_now, "B"),
            ("per_sm_new", found.bytes_per_sm_new, "B"),
            ("l1_new", found.l1_bytes_new, "B"),
            ("l2_kept", found.l2_share_kept, "fraction"),
            ("growth", found.dram_growth),
            value=found.dram_growth,
        )
    ]
