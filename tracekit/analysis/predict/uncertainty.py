"""What the latency-hiding model cannot see, read from the launch's counters and the change: it widens the interval
on the side the effect acts and says why, moves the point only where the counters measure the effect (register
spills), and refuses the change it cannot model at all (a tensor-core kernel's tile shape).

- Register spills: a launch with local-memory traffic holds more live values per thread than its registers; a
  configuration with fewer elements per thread (ILP ratio under 1) or more registers needs fewer of them, so the
  spill traffic goes (its DRAM bytes fall to what the global accesses need, `spill_free_share`) and the loads in
  flight were set by the registers, not the elements. The point assumes the spills go, the interval spans them
  staying.
- Per-row parallelism: a kernel with block barriers waits, at each, for the block's slowest warp; more warps per
  block (one row split over more warps) wait longer, E[max of k warp times] = m (1 + cv x s_k) (order statistics,
  as in `occupancy_step.residency`), which a launch of other block sizes cannot show.
- Cache footprint: where L1 serves a share of the global loads (rows read twice, a tile reused), fewer or more
  rows sharing an SM's L1 move that share, faster by up to the share itself, slower by up to the share or, where
  DRAM traffic sets the time, by the DRAM bytes added if every byte L1 serves had to come from DRAM (a row read
  three times by 16 blocks an SM outgrows L1 and L2: 3x the DRAM reads, measured). Which of its re-reads a
  block owns (a row read again) and which all blocks share (weights L2 keeps) the counters do not tell apart.
- Register pressure: more elements per thread need more live registers; past the 255 a thread can hold the compiler
  spills to local memory, slower by up to the growth in elements per thread. Where the changed configuration is
  compiled at that cap (its registers given as 255), it spills (every launch of the real-kernel set at 255 has
  local-memory traffic): the point moves to the geometric middle, the square root of the growth.
- Loop ILP: the same work over fewer threads loops each thread more often; an unrolled loop keeps up to that many
  iterations' loads in flight (more concurrency), which a launch of one iteration per thread cannot show.
- Tile shape: a tensor-core kernel (tensor pipe busy) is as fast as its tile shape lets it reuse operands and fill
  its pipeline; a change of block, registers, shared memory, grid or ILP is a change of tile shape, refused.
- Block-collective work: a kernel whose blocks work together through barriers (a block-wide scan, sort or reduction)
  spends, per item, a number of instructions set by the block's shape: a block-wide radix sort ranks every item
  through per-thread digit counters scanned across all the block's threads, pass after pass. While memory binds the
  launch that work hides; where an SM unit binds it (memory under KNEE_SHARE of its ceiling), the work is the
  time, and a change of threads per block or items per thread changes it by a factor one launch cannot show (CUB's
  block radix sort of 1,024-item tiles runs 9x the instructions at 1,024 threads x 1 item as at 32 x 32, and 8.4x
  the time): refused.
- Fixed work per thread: the same work over more threads leaves each a share of the loop, but every thread still
  reads its ids, computes its index, checks its bounds and exits (FIXED_WARP_INSTRUCTIONS). The model splits all of
  a warp's instructions; with the fixed part kept the split is slower by up to (F + (W - F) t) / (W t), for W
  instructions per warp now and t the share of the loop each thread keeps. A split that leaves a warp fewer
  instructions than F is beyond the model (the launch's threads hardly loop over the work): refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tracekit.analysis.occupancy import device_limits
from tracekit.analysis.predict.findings import finding
from tracekit.analysis.predict.footprint import L1_FOOTPRINT_SHARE
from tracekit.analysis.predict.occupancy_step import WARP_CV_HIGH, Config, expected_max_normal, trips
from tracekit.analysis.predict.throughput import KNEE_SHARE
from tracekit.analysis.predict.types import Change, Finding, PredictInputs, PredictionRefused
from tracekit.ceilings.devices import WARP_SIZE

# The units whose requests leave the SM (the rest, shared memory, pipes and issue, do the SM's own work).
MEMORY_UNITS = ("dram", "l2")
# A tensor pipe at this share of its peak or more does the kernel's work: its tile shape sets its speed.
TENSOR_TILE_SHARE = 0.1
# The warp instructions of the smallest CUDA kernel, whatever its share of the work: two S2R (thread and block
# ids), an IMAD (the index), ISETP and a predicated EXIT (the bounds check), and EXIT.
FIXED_WARP_INSTRUCTIONS = 6
# Below this the fixed part moves the duration less than a timing's run-to-run spread: not worth a word.
SPLIT_NOISE = 0.01


@dataclass(frozen=True)
class Unseen:
    """An effect the model cannot see: how far it may move the duration each way, and why."""

    effect: str  # per-row-parallelism, loop-ilp, register-spills, cache-footprint
    faster: float  # the duration may be this many times shorter than predicted
    slower: float  # or this many times longer
    why: str
    # Where the change itself shows the effect (a configuration compiled at the register cap): the point moves
    # this many times longer, to the geometric middle of its reach; `faster` and `slower` are from the moved point.
    point: float = 1.0


def refuse_tile_shape(inputs: PredictInputs, change: Change) -> None:
    """A tensor-core kernel's configuration is its tile shape: refused in one line."""
    tensor = next((u for u in inputs.units if u.unit == "tensor pipe"), None)
    if tensor is None or tensor.achieved < 100.0 * TENSOR_TILE_SHARE or change == Change():
        return
    raise PredictionRefused(
        f"launch {inputs.launch_id}: its tensor pipe runs at {tensor.achieved:.0f}% of peak, so its tile shape "
        "(block, registers, shared memory, grid, work per thread) sets its speed through operand reuse and "
        "pipeline depth, which the latency-hiding model cannot see; time the configurations instead"
    )


def refuse_block_collective(inputs: PredictInputs, now: Config, new: Config) -> None:
    """A launch bound on the SM by its blocks' collective work (barriers, memory far from its ceiling) under a change
    of block shape: refused in one line (see the module's docstring)."""
    if not inputs.uses_barriers or not inputs.units:
        return
    if (new.threads_per_block, new.ilp) == (now.threads_per_block, now.ilp):
        return
    busiest = max(inputs.units, key=lambda u: u.utilization)
    memory = max((u.utilization for u in inputs.units if u.unit.startswith(MEMORY_UNITS)), default=0.0)
    if busiest.unit.startswith(MEMORY_UNITS) or memory >= KNEE_SHARE:
        return
    raise PredictionRefused(
        f"launch {inputs.launch_id}: its {busiest.unit} ({busiest.utilization:.0%} of its ceiling, memory at "
        f"{memory:.0%}) does its blocks' collective work (block barriers), whose instructions per item change with "
        "the block's shape (a block-wide scan or sort works over every thread's values, in steps that grow with the "
        "threads); the model holds the work fixed, so it cannot predict a change of block size or items per thread "
        "here: time the configurations instead"
    )


def _fixed_part(inputs: PredictInputs, share: float) -> Unseen | None:
    """Each thread keeping `share` (< 1) of its loop: the fixed instructions do not split (see the module's
    docstring); refused where a warp would be left fewer than them."""
    per_warp = inputs.instructions_per_warp
    if per_warp is None or share >= 1.0 - 1e-9:
        return None
    left = per_warp * share
    if left < FIXED_WARP_INSTRUCTIONS:
        raise PredictionRefused(
            f"launch {inputs.launch_id}: its warps run {per_warp:.3g} instructions each, and the same work over "
            f"{1 / share:.3g}x the threads would leave each warp {left:.2g}, fewer than any thread runs to start and "
            f"exit ({FIXED_WARP_INSTRUCTIONS}): its threads hardly loop over the work, so more of them need a "
            "different kernel, which the model cannot see"
        )
    slower = (FIXED_WARP_INSTRUCTIONS + (per_warp - FIXED_WARP_INSTRUCTIONS) * share) / left
    if slower < 1.0 + SPLIT_NOISE:
        return None
    return Unseen(
        "fixed-per-thread",
        1.0,
        slower,
        f"each warp runs {per_warp:.3g} instructions now and would keep {share:.3g} of its loop; the "
        f"{FIXED_WARP_INSTRUCTIONS} every thread runs to start and exit do not split",
    )


def spill_relief(inputs: PredictInputs, now: Config, new: Config) -> float | None:
    """The share of DRAM bytes left once the spills go, where the launch spills and the change needs fewer live
    values per thread (fewer elements per thread, or more registers); None otherwise."""
    if inputs.spill_free_share is None:
        return None
    if new.ilp < now.ilp or new.registers_per_thread > now.registers_per_thread:
        return inputs.spill_free_share
    return None


def unseen_effects(
    inputs: PredictInputs, change: Change, now: Config, new: Config
) -> tuple[list[Unseen], list[Finding]]:
    """The effects of this change the model cannot see, each with its reach and its finding."""
    effects: list[Unseen] = []
    k_now, k_new = math.ceil(now.threads_per_block / WARP_SIZE), math.ceil(new.threads_per_block / WARP_SIZE)
    # One warp per block shows no barrier, used or not: a block of several may need them to share a row.
    if (inputs.uses_barriers or k_now == 1) and k_new != k_now:
        factor = (1 + WARP_CV_HIGH * expected_max_normal(k_new)) / (1 + WARP_CV_HIGH * expected_max_normal(k_now))
        effects.append(
            Unseen(
                "per-row-parallelism",
                max(1.0, 1.0 / factor),
                max(1.0, factor),
                f"block barriers: at each, a block of {k_new} warps waits for its slowest (now {k_now})",
            )
        )
    share = trips(inputs, new)
    fixed = _fixed_part(inputs, share)
    if fixed is not None:
        effects.append(fixed)
    loops = share / max(new.ilp / now.ilp, 1.0)  # the extra work per thread not already given as ILP
    if loops > 1.0 + 1e-9:
        effects.append(
            Unseen(
                "loop-ilp",
                loops,
                1.0,
                f"each thread loops {loops:.3g}x as often; the compiler may unroll the loop and keep that many "
                "iterations' loads in flight, which a launch of one iteration per thread cannot show",
            )
        )
    grows = new.ilp / now.ilp
    most_registers = device_limits(inputs.compute_capability).max_registers_per_thread  # a thread can address
    if grows > 1.0 + 1e-9 and now.registers_per_thread * grows > most_registers:
        capped = new.registers_per_thread >= most_registers
        middle = math.sqrt(grows) if capped else 1.0
        effects.append(
            Unseen(
                "register-spills",
                middle,
                grows / middle,
                f"{grows:.3g}x the elements per thread at {now.registers_per_thread} registers now would need more "
                f"than the {most_registers} a thread can hold: the compiler "
                + (
                    f"put the configuration at that cap, so it spills to local memory; the point is "
                    f"{middle:.3g}x slower, the geometric middle of up to {grows:.3g}x"
                    if capped
                    else "may spill to local memory"
                ),
                middle,
            )
        )
    hit = inputs.l1_hit_rate
    if (
        hit is not None
        and hit >= L1_FOOTPRINT_SHARE
        and (new.blocks_per_sm != now.blocks_per_sm or new.ilp != now.ilp or k_new != k_now)
    ):
        served = inputs.l1_served_per_dram_byte or 0.0
        effects.append(
            Unseen(
                "cache-footprint",
                1.0 + hit,
                max(1.0 + hit, 1.0 + served),
                f"L1 serves {hit:.0%} of the global loads ({served:.2g} bytes per DRAM byte); fewer or more rows "
                "sharing an SM move that share",
            )
        )
    findings = [
        finding(
            "uncertainty",
            "predict.unseen",
            ("effect", e.effect),
            ("why", e.why),
            ("faster_x", e.faster),
            ("slower_x", e.slower),
        )
        for e in effects
    ]
    return effects, findings
