"""Theoretical occupancy, its limits, waves and cliffs, computed the way Nsight Compute reports them.

The per-CC constants (the one device table, `tracekit/ceilings/devices.py`) come from NVIDIA's `cuda_occupancy.h`
(CUDA 13.0) and the CUDA C++ Programming Guide's "Technical Specifications per Compute Capability"; the arithmetic is
`cudaOccMaxActiveBlocksPerMultiprocessor` (partitioned global caching off, as for any kernel whose attributes come
from `cudaFuncGetAttributes`). Where Nsight
Compute reports differently from that header, this module follows Nsight Compute (each checked against real reports
in tests/analysis/test_occupancy.py):

- A resource the launch does not use (0 bytes of shared memory, 0 registers) limits nothing: the header says
  INT_MAX, Nsight Compute reports the blocks-per-SM limit (Tesla T4, `Block Limit Shared Mem` 16).
- The shared-memory limit divides the carveout the driver configured (`launch__shared_mem_config_size`) when it is
  given (B200, ncu 2025: 132 KB config, 9,728 B per block -> 13, not 24). Nsight Compute up to 2023 divided the SM's
  whole shared memory instead (A100: 100 KB config, 17,920 B per block -> 9, not 5); that is what happens when no
  carveout is given, and it is also what the header does with the default carveout. Either way the active blocks are
  the same, because the driver never picks a carveout that holds fewer blocks than the other limits allow.
- The driver's carveout choice cannot be derived from the launch alone: the real reports show it picking more than
  the smallest fitting carveout (A100: 5 KB needed, 32 KB configured; B200: 90 KB needed, 132 KB configured), so
  `min_shared_mem_config_bytes` is only a lower bound on it.
- The barrier limit (CC 9.0 and newer) is capped at the blocks-per-SM limit (B200: 1 barrier -> 32, not 64).

A carveout the device does not offer is rounded up to the next one it does, as the driver does with a preferred
carveout that maps to no supported size (CUDA C++ Programming Guide, shared memory of CC 7.x and newer; the same
rounding as cuda_occupancy.h's cudaOccAlignUpShmemSizeVoltaPlus); the result says so in `notes`. A carveout larger
than the SM's shared memory is refused. CC 5.x and 6.x split shared memory and L1 in a fixed way: a carveout there
is ignored, with a note. More than 48 KB of shared memory per block needs the kernel's opt-in
(cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...)): with `opt_in=False` such a block
gets 0 blocks per SM, as the CUDA occupancy API answers (H100, sample_traces/verdict_cases/occupancy_api_h100.json);
the default assumes the opt-in (a profiled launch that used more did opt in).

Volkov's occupancy is warps resident per SM; the theoretical value here is the ceiling that the resource limits put
on it, the number a measured (achieved) occupancy should be compared with.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, replace

import polars as pl

from tracekit.ceilings.devices import ARCHITECTURE_BY_CC
from tracekit.errors import TracekitError

KB = 1024

LIMIT_NAMES = ("warps", "blocks", "registers", "shared_memory")  # tie order for naming the limiter
KNOB_COLUMNS = {
    "block_size": "threads_per_block",
    "registers": "registers_per_thread",
    "shared_memory": "shared_mem_per_block_bytes",
}


@dataclass(frozen=True)
class DeviceLimits:
    """What one SM of a compute capability offers, and how it hands it out: the device table's entry
    (`tracekit.ceilings.devices`) in bytes and warps."""

    compute_capability: str
    max_threads_per_block: int
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    warp_size: int
    registers_per_sm: int
    max_registers_per_block: int
    max_registers_per_thread: int
    register_allocation_unit: int  # registers; each warp's allocation is rounded up to this
    sub_partitions: int  # registers are split evenly over the SM's sub-partitions (schedulers)
    shared_mem_per_sm_bytes: int  # the largest carveout
    max_shared_mem_per_block_bytes: int  # opt-in maximum, excluding the driver's reserve
    default_shared_mem_per_block_bytes: int  # without the opt-in attribute
    shared_mem_allocation_unit_bytes: int
    reserved_shared_mem_per_block_bytes: int  # the driver's per-block reserve (CC >= 8.0)
    shared_mem_carveouts_bytes: tuple[int, ...]  # one value where the split is fixed
    barriers_per_sm: int | None  # block barrier slots; None where they do not limit occupancy (CC < 9.0)
    carveout_configurable: bool = True  # False on CC 5.x / 6.x: shared memory per SM is fixed
    unified_l1_bytes: int | None = None  # L1 data cache and shared memory together; None: loads bypass L1


def _parse_cc(compute_capability: str) -> str:
    text = str(compute_capability).strip().lower().removeprefix("sm_").removeprefix("sm")
    if "." not in text and text.isdigit() and len(text) >= 2:
        text = f"{text[:-1]}.{text[-1]}"  # "90" -> "9.0", "120" -> "12.0"
    if text not in ARCHITECTURE_BY_CC:
        known = ", ".join(ARCHITECTURE_BY_CC)
        raise TracekitError(f"unknown compute capability {compute_capability!r}: known are {known}")
    return text


@functools.lru_cache(maxsize=64)
def device_limits(compute_capability: str) -> DeviceLimits:
    """Per-SM limits for a compute capability such as "9.0" (also "sm_90", "90")."""
    arch = ARCHITECTURE_BY_CC[_parse_cc(compute_capability)]
    return DeviceLimits(
        compute_capability=arch.compute_capability,
        max_threads_per_block=arch.max_threads_per_block,
        max_threads_per_sm=arch.max_threads_per_sm,
        max_warps_per_sm=arch.max_warps_per_sm,
        max_blocks_per_sm=arch.max_blocks_per_sm,
        warp_size=arch.warp_size,
        registers_per_sm=arch.registers_per_sm,
        max_registers_per_block=arch.max_registers_per_block,
        max_registers_per_thread=arch.max_registers_per_thread,
        register_allocation_unit=arch.register_allocation_unit,
        sub_partitions=arch.sub_partitions,
        shared_mem_per_sm_bytes=arch.shared_mem_per_sm_kb * KB,
        max_shared_mem_per_block_bytes=arch.max_shared_mem_per_block_kb * KB,
        default_shared_mem_per_block_bytes=arch.default_shared_mem_per_block_kb * KB,
        shared_mem_allocation_unit_bytes=arch.shared_mem_allocation_unit_bytes,
        reserved_shared_mem_per_block_bytes=arch.reserved_shared_mem_per_block_bytes,
        shared_mem_carveouts_bytes=tuple(kb * KB for kb in (arch.carveouts_kb or (arch.shared_mem_per_sm_kb,))),
        barriers_per_sm=None
        if arch.barriers_per_block_slot is None
        else arch.barriers_per_block_slot * arch.max_blocks_per_sm,
        carveout_configurable=arch.carveouts_kb is not None,
        unified_l1_bytes=None if arch.unified_l1_kb is None else arch.unified_l1_kb * KB,
    )


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


@dataclass(frozen=True)
class OccupancyResult:
    """Blocks per SM allowed by each resource, the active blocks and warps they leave, and who set the limit."""

    compute_capability: str
    threads_per_block: int
    warps_per_block: int
    registers_per_thread: int
    shared_mem_per_block_bytes: int  # static + dynamic, as the launch asked (without the driver's reserve)
    limits_blocks_per_sm: dict[str, int]  # registers, shared_memory, warps, blocks (launch__occupancy_limit_*)
    active_blocks_per_sm: int
    theoretical_warps_per_sm: int
    theoretical_pct: float  # sm__maximum_warps_per_active_cycle_pct
    limiter: str  # the first of `limiters` in the order warps, blocks, registers, shared_memory, barriers
    limiters: tuple[str, ...]  # every limit equal to the active blocks
    max_warps_per_sm: int
    shared_mem_config_bytes: int | None  # the carveout used for the shared-memory limit; None: the SM's maximum
    allocated_registers_per_block: int
    allocated_shared_mem_per_block_bytes: int  # rounded up, including the driver's reserve
    barrier_limit_blocks_per_sm: int | None  # launch__occupancy_limit_barriers (CC >= 9.0)
    min_shared_mem_config_bytes: int  # smallest carveout holding the active blocks: a lower bound on the driver's
    requested_shared_mem_config_bytes: int | None = None  # the carveout as given, before rounding to a real one
    barriers_per_block: int = 1
    opt_in: bool = True  # whether more than 48 KB of shared memory per block was allowed
    # False when the shared memory per block is known only to within shared_mem_rounding_bytes (a rounded
    # `--page details` value) and the occupancy differs inside that window: use Nsight's own rows instead.
    determined: bool = True
    notes: tuple[str, ...] = ()  # what was assumed or adjusted, in words (carveout rounded or ignored, ...)

    def to_dict(self) -> dict:
        return asdict(self)


def _registers_limit(
    limits: DeviceLimits, warps_per_block: int, registers_per_thread: int, sub_partitions: int
) -> tuple[int, int]:
    """(blocks per SM, registers allocated per block), as cudaOccMaxBlocksPerSMRegsLimit."""
    if registers_per_thread == 0:
        return limits.max_blocks_per_sm, 0
    regs_per_warp = _round_up(registers_per_thread * limits.warp_size, limits.register_allocation_unit)
    regs_per_block = regs_per_warp * warps_per_block
    # The hardware's per-block check assumes every sub-partition gets the same number of warps.
    regs_assumed_per_block = regs_per_warp * _round_up(warps_per_block, sub_partitions)
    if max(regs_per_block, regs_assumed_per_block) > limits.max_registers_per_block:
        return 0, regs_per_block
    warps_per_sub_partition = (limits.registers_per_sm // sub_partitions) // regs_per_warp
    return warps_per_sub_partition * sub_partitions // warps_per_block, regs_per_block


def _carveout_at_least(limits: DeviceLimits, size_bytes: int) -> int:
    """The smallest carveout holding size_bytes (the largest when none does)."""
    fitting = [c for c in limits.shared_mem_carveouts_bytes if c >= size_bytes]
    return min(fitting) if fitting else limits.shared_mem_per_sm_bytes


def _shared_memory_limit(
    limits: DeviceLimits, shared_mem_per_block_bytes: int, shared_mem_config_bytes: int | None
) -> tuple[int, int]:
    """(blocks per SM, bytes allocated per block), as cudaOccMaxBlocksPerSMSmemLimit with Nsight's conventions."""
    allocated = _round_up(
        shared_mem_per_block_bytes + limits.reserved_shared_mem_per_block_bytes, limits.shared_mem_allocation_unit_bytes
    )
    if allocated == 0:
        return limits.max_blocks_per_sm, 0
    per_sm = limits.shared_mem_per_sm_bytes if shared_mem_config_bytes is None else shared_mem_config_bytes
    if per_sm < allocated:  # a carveout too small for one block is raised to one that fits
        per_sm = _carveout_at_least(limits, allocated)
    return per_sm // allocated, allocated


def _validate(
    limits: DeviceLimits,
    threads_per_block: int,
    registers_per_thread: int,
    shared_mem_per_block_bytes: int,
    shared_mem_config_bytes: int | None,
    barriers_per_block: int,
) -> None:
    cc = limits.compute_capability
    if not 1 <= threads_per_block <= limits.max_threads_per_block:
        raise TracekitError(f"block size {threads_per_block}: must be 1 to {limits.max_threads_per_block} threads")
    if not 0 <= registers_per_thread <= limits.max_registers_per_thread:
        raise TracekitError(
            f"{registers_per_thread} registers per thread: must be 0 to {limits.max_registers_per_thread}"
        )
    if not 0 <= shared_mem_per_block_bytes <= limits.max_shared_mem_per_block_bytes:
        raise TracekitError(
            f"{shared_mem_per_block_bytes} bytes of shared memory per block: a block on CC {cc} "
            f"can use 0 to {limits.max_shared_mem_per_block_bytes} bytes"
        )
    config = shared_mem_config_bytes
    if config is not None and limits.carveout_configurable and not 0 <= config <= limits.shared_mem_per_sm_bytes:
        offered = ", ".join(f"{c // KB}" for c in limits.shared_mem_carveouts_bytes)
        raise TracekitError(
            f"shared-memory carveout of {config} bytes: no carveout on CC {cc} holds it "
            f"(it offers {offered} KB, at most {limits.shared_mem_per_sm_bytes} bytes)"
        )
    if barriers_per_block < 0:
        raise TracekitError(f"{barriers_per_block} barriers per block: must be 0 or more")


def resolve_carveout(
    compute_capability: str, shared_mem_config_bytes: int | None
) -> tuple[int | None, tuple[str, ...]]:
    """The carveout the driver would configure for a requested one, and what changed, in words.

    None stays None (the SM's largest carveout is assumed). On CC 5.x/6.x the split is fixed and the request is
    ignored. Elsewhere a request between two offered carveouts becomes the next larger one (the driver's rule for a
    preferred carveout with no exact match); one above the largest raises TracekitError.
    """
    limits = device_limits(compute_capability)
    if shared_mem_config_bytes is None:
        return None, ()
    cc = limits.compute_capability
    if not limits.carveout_configurable:
        return None, (
            f"CC {cc} has a fixed {limits.shared_mem_per_sm_bytes // KB} KB of shared memory per SM: the carveout "
            f"of {shared_mem_config_bytes} bytes does not apply and is ignored",
        )
    _validate(limits, 1, 0, 0, shared_mem_config_bytes, 0)
    picked = min(c for c in limits.shared_mem_carveouts_bytes if c >= shared_mem_config_bytes)
    if picked == shared_mem_config_bytes:
        return picked, ()
    offered = ", ".join(f"{c // KB}" for c in limits.shared_mem_carveouts_bytes)
    return picked, (
        f"the carveout of {shared_mem_config_bytes} bytes is not one CC {cc} offers ({offered} KB): the driver "
        f"picks the next larger, {picked} bytes ({picked // KB} KB)",
    )


def carveout_bytes_from_percent(compute_capability: str, percent: int) -> int:
    """The carveout a cudaFuncAttributePreferredSharedMemoryCarveout percentage asks for, before rounding up to an
    offered one: that percentage of the SM's largest carveout, rounded up to a byte (50% on 9.0: 116,736 B, which
    `resolve_carveout` makes 132 KB, as the CUDA occupancy API counts it on the H100)."""
    if not 0 <= percent <= 100:
        raise TracekitError(f"carveout of {percent}%: must be 0 to 100% of the SM's shared memory")
    return math.ceil(device_limits(compute_capability).shared_mem_per_sm_bytes * percent / 100)


def printed_rounding_bytes(text_value: str | None) -> float:
    """How far a shared-memory size printed rounded can be from the true byte count: half its last digit.

    `text_value` is the cell as Nsight Compute printed it with its unit, as the CSV importer keeps it for rounded
    sizes ("232.45 Kbyte/block": +-5 bytes). None or a size printed in bytes: 0. Units are Nsight's (Kbyte =
    1,000 bytes, Mbyte = 1,000,000).
    """
    if not text_value:
        return 0.0
    number, _, unit = text_value.strip().partition(" ")
    scale = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9}.get(unit.split("/")[0].strip().lower())
    if scale is None:
        return 0.0
    decimals = len(number.replace(",", "").rpartition(".")[2]) if "." in number else 0
    return 0.0 if scale == 1 else 0.5 * 10.0**-decimals * scale


def _occupancy(
    limits: DeviceLimits,
    threads_per_block: int,
    registers_per_thread: int,
    shared_mem_per_block_bytes: int,
    shared_mem_config_bytes: int | None,
    barriers_per_block: int,
    shared_mem_per_block_max: int | None = None,
) -> OccupancyResult:
    warps_per_block = -(-threads_per_block // limits.warp_size)
    registers, allocated_registers = _registers_limit(
        limits, warps_per_block, registers_per_thread, limits.sub_partitions
    )
    # GP100 (6.0) has 2 sub-partitions, GP10x 4: a block that cannot run on GP10x is not let run on any Pascal.
    if (
        limits.compute_capability == "6.0"
        and registers
        and _registers_limit(limits, warps_per_block, registers_per_thread, 4)[0] == 0
    ):
        registers = 0
    shared_memory, allocated_shared = _shared_memory_limit(limits, shared_mem_per_block_bytes, shared_mem_config_bytes)
    if shared_mem_per_block_max is not None and shared_mem_per_block_bytes > shared_mem_per_block_max:
        shared_memory = 0  # more than the kernel may use (no opt-in): no block can launch, as the CUDA API says
    candidates = {
        "warps": limits.max_warps_per_sm // warps_per_block,
        "blocks": limits.max_blocks_per_sm,
        "registers": registers,
        "shared_memory": shared_memory,
    }
    barriers = None
    if limits.barriers_per_sm is not None:
        # Like an unused register or shared-memory budget, a kernel with no barrier is limited by the block slots.
        barriers = (
            min(limits.max_blocks_per_sm, limits.barriers_per_sm // barriers_per_block)
            if barriers_per_block > 0
            else limits.max_blocks_per_sm
        )
        candidates["barriers"] = barriers
    active = min(candidates.values())
    warps = active * warps_per_block
    limiters = tuple(name for name, value in candidates.items() if value == active)
    return OccupancyResult(
        compute_capability=limits.compute_capability,
        threads_per_block=threads_per_block,
        warps_per_block=warps_per_block,
        registers_per_thread=registers_per_thread,
        shared_mem_per_block_bytes=shared_mem_per_block_bytes,
        limits_blocks_per_sm={name: candidates[name] for name in ("registers", "shared_memory", "warps", "blocks")},
        active_blocks_per_sm=active,
        theoretical_warps_per_sm=warps,
        theoretical_pct=100.0 * warps / limits.max_warps_per_sm,
        limiter=limiters[0],
        limiters=limiters,
        max_warps_per_sm=limits.max_warps_per_sm,
        shared_mem_config_bytes=shared_mem_config_bytes,
        allocated_registers_per_block=allocated_registers,
        allocated_shared_mem_per_block_bytes=allocated_shared,
        barrier_limit_blocks_per_sm=barriers,
        min_shared_mem_config_bytes=_carveout_at_least(limits, active * allocated_shared),
    )


@functools.lru_cache(maxsize=4096)  # the predictor asks for the same configurations many times; results are frozen
def theoretical_occupancy(
    compute_capability: str,
    threads_per_block: int,
    registers_per_thread: int,
    shared_mem_per_block_bytes: int,
    shared_mem_config_bytes: int | None = None,
    *,
    barriers_per_block: int = 1,
    opt_in: bool = True,
    shared_mem_rounding_bytes: float = 0.0,
) -> OccupancyResult:
    """Occupancy limits of one launch configuration; raises TracekitError for a configuration that cannot exist.

    shared_mem_per_block_bytes is static + dynamic (Nsight's launch__shared_mem_per_block_static/_dynamic); the
    driver's reserve is added here. shared_mem_config_bytes is launch__shared_mem_config_size when known; one the
    device does not offer is rounded up to the next it does (`resolve_carveout`, said in `notes`).
    barriers_per_block (launch__barrier_count) matters from CC 9.0 on; kernels use 1 unless they name more.
    opt_in=False: the kernel did not opt in to more than 48 KB of shared memory per block; a launch asking for more
    gets 0 blocks (shared memory the limiter, with a note), as cudaOccupancyMaxActiveBlocksPerMultiprocessor says.
    shared_mem_rounding_bytes: the shared memory is known only to within this (a rounded printed value, see
    `printed_rounding_bytes`); `determined` is False when the occupancy differs inside that window.
    """
    limits = device_limits(compute_capability)
    carveout, notes = resolve_carveout(limits.compute_capability, shared_mem_config_bytes)
    rounding = max(0.0, float(shared_mem_rounding_bytes))
    low = max(0, math.ceil(shared_mem_per_block_bytes - rounding))
    high = math.floor(shared_mem_per_block_bytes + rounding)
    per_block_max = limits.max_shared_mem_per_block_bytes if opt_in else limits.default_shared_mem_per_block_bytes
    shared = shared_mem_per_block_bytes
    if rounding and low <= per_block_max < shared:
        shared = per_block_max  # a rounded print just above the maximum: the true value is the maximum or less
    _validate(limits, threads_per_block, registers_per_thread, shared, carveout, barriers_per_block)
    cap = None if opt_in else per_block_max
    result = _occupancy(limits, threads_per_block, registers_per_thread, shared, carveout, barriers_per_block, cap)
    if cap is not None and shared > cap:
        notes += (
            f"{shared} bytes of shared memory per block is more than {cap} without the kernel's opt-in "
            f"(cudaFuncSetAttribute with cudaFuncAttributeMaxDynamicSharedMemorySize): no block can launch",
        )
    determined = True
    if rounding:
        ends = [
            _occupancy(limits, threads_per_block, registers_per_thread, size, carveout, barriers_per_block, cap)
            for size in (low, min(high, per_block_max))
        ]
        determined = len({(end.active_blocks_per_sm, end.limiter) for end in ends}) == 1
        if not determined:
            notes += (
                f"the shared memory per block is known only to +-{rounding:g} bytes (printed rounded): "
                f"{low} bytes give {ends[0].theoretical_pct:g}% and {min(high, per_block_max)} bytes "
                f"{ends[1].theoretical_pct:g}%",
            )
    if carveout is not None and result.allocated_shared_mem_per_block_bytes > carveout:
        raised = _carveout_at_least(limits, result.allocated_shared_mem_per_block_bytes)
        notes += (
            f"a block needs {result.allocated_shared_mem_per_block_bytes} bytes of shared memory, more than the "
            f"carveout of {carveout}: the driver raises the carveout to {raised} bytes",
        )
    return replace(
        result,
        requested_shared_mem_config_bytes=shared_mem_config_bytes,
        barriers_per_block=barriers_per_block,
        opt_in=opt_in,
        determined=determined,
        notes=notes,
    )


def waves_per_sm(grid_blocks: int, active_blocks_per_sm: int, sm_count: int) -> float:
    """launch__waves_per_multiprocessor: the grid in units of one full wave (active blocks per SM x SMs)."""
    if grid_blocks < 0 or active_blocks_per_sm <= 0 or sm_count <= 0:
        raise TracekitError(
            f"waves need a grid of 0 or more blocks, at least one active block per SM and one SM "
            f"(got {grid_blocks} blocks, {active_blocks_per_sm} per SM, {sm_count} SMs)"
        )
    return grid_blocks / (active_blocks_per_sm * sm_count)


def tail_estimate(grid_blocks: int, active_blocks_per_sm: int, sm_count: int) -> dict:
    """The partial last wave and Nsight Compute's "Tail Effect" estimate (LaunchStatistics rule).

    With uniform block durations a grid of W full waves and a partial one runs W + 1 wave times, of which the
    partial wave is 1 / (W + 1): the rule's estimated speedup, reported when W >= 1 and it is at least 20%.
    `partial_wave_blocks` is counted in integers; the rule derives it in floating point from the wave count,
    ceil(grid * frac(waves) / waves), which can print one block more (689 for 688 when 4,096 blocks fill 852 per
    wave): that is `nsight_partial_wave_blocks`. The 2023 rule truncated instead, from the wave count rounded to
    two decimals (227 for 228 on 768 blocks of 540 per wave).
    """
    waves = waves_per_sm(grid_blocks, active_blocks_per_sm, sm_count)
    blocks_per_wave = active_blocks_per_sm * sm_count
    full_waves, partial_wave_blocks = divmod(grid_blocks, blocks_per_wave)
    fraction = math.modf(waves)[0]
    tail_effect = partial_wave_blocks > 0 and full_waves >= 1
    speedup_pct = 100.0 / (full_waves + 1) if tail_effect else 0.0
    return {
        "blocks_per_wave": blocks_per_wave,
        "waves_per_sm": waves,
        "full_waves": full_waves,
        "partial_wave_blocks": partial_wave_blocks,
        "nsight_partial_wave_blocks": math.ceil(grid_blocks * (fraction / waves)) if waves else 0,
        "last_wave_occupied_fraction": partial_wave_blocks / blocks_per_wave if partial_wave_blocks else 1.0,
        "tail_effect": tail_effect,
        "estimated_speedup_pct": speedup_pct,
        "nsight_reports_tail_effect": tail_effect and speedup_pct >= 20.0,
    }


def occupancy_cliffs(
    compute_capability: str,
    threads_per_block: int,
    registers_per_thread: int,
    shared_mem_per_block_bytes: int,
    shared_mem_config_bytes: int | None = None,
    *,
    barriers_per_block: int = 1,
    opt_in: bool = True,
) -> dict[str, pl.DataFrame]:
    """Occupancy as each knob moves with the other two held: the curves of Nsight's Occupancy section.

    block_size steps by warps (32 .. 1024 threads), registers by one (1 .. 255), shared memory by the allocation
    unit (0 .. the per-block maximum: 48 KB without the opt-in); a row's value stands for every value down to the
    previous row's + 1. Every point is computed at the given carveout (rounded as `resolve_carveout` does, raised
    where a block does not fit it) and barrier count, as Nsight draws its graphs at the launch's.
    """
    limits = device_limits(compute_capability)
    config, _ = resolve_carveout(limits.compute_capability, shared_mem_config_bytes)
    barriers = barriers_per_block
    _validate(limits, threads_per_block, registers_per_thread, shared_mem_per_block_bytes, config, barriers)
    per_block_max = limits.max_shared_mem_per_block_bytes if opt_in else limits.default_shared_mem_per_block_bytes
    sweeps = {
        "block_size": [
            (t, registers_per_thread, shared_mem_per_block_bytes)
            for t in range(limits.warp_size, limits.max_threads_per_block + 1, limits.warp_size)
        ],
        "registers": [
            (threads_per_block, r, shared_mem_per_block_bytes) for r in range(1, limits.max_registers_per_thread + 1)
        ],
        "shared_memory": [
            (threads_per_block, registers_per_thread, s)
            for s in range(0, per_block_max + 1, limits.shared_mem_allocation_unit_bytes)
        ],
    }
    frames = {}
    for knob, points in sweeps.items():
        results = [_occupancy(limits, t, r, s, config, barriers) for t, r, s in points]
        knob_values = [point[("block_size", "registers", "shared_memory").index(knob)] for point in points]
        frames[knob] = pl.DataFrame(
            {
                KNOB_COLUMNS[knob]: knob_values,
                "active_blocks_per_sm": [res.active_blocks_per_sm for res in results],
                "theoretical_warps_per_sm": [res.theoretical_warps_per_sm for res in results],
                "theoretical_pct": [res.theoretical_pct for res in results],
                "limiter": [res.limiter for res in results],
            },
            schema={
                KNOB_COLUMNS[knob]: pl.Int64,
                "active_blocks_per_sm": pl.Int64,
                "theoretical_warps_per_sm": pl.Int64,
                "theoretical_pct": pl.Float64,
                "limiter": pl.String,
            },
        )
    return frames


def compact_cliffs(frame: pl.DataFrame) -> pl.DataFrame:
    """The steps of a curve: one row per run of equal active blocks and warps, with the knob's range.

    `<knob>_from` .. `<knob>_to` are the exact values the step covers (a frame row stands for every value down to
    the previous row's + 1), e.g. 33 .. 40 registers per thread, or 257 .. 288 threads per block.
    """
    column = frame.columns[0]
    first_value = 1 if column == "threads_per_block" else frame[column][0]
    changed = (pl.col("active_blocks_per_sm") != pl.col("active_blocks_per_sm").shift(1)) | (
        pl.col("theoretical_warps_per_sm") != pl.col("theoretical_warps_per_sm").shift(1)
    )
    return (
        frame.with_columns(
            step=changed.fill_null(True).cum_sum(), lower=(pl.col(column).shift(1) + 1).fill_null(first_value)
        )
        .group_by("step", maintain_order=True)
        .agg(
            pl.col("lower").first().alias(f"{column}_from"),
            pl.col(column).last().alias(f"{column}_to"),
            pl.col("active_blocks_per_sm").first(),
            pl.col("theoretical_warps_per_sm").first(),
            pl.col("theoretical_pct").first(),
            pl.col("limiter").first(),
        )
        .drop("step")
    )


@dataclass(frozen=True)
class Cliff:
    """The nearest value of one knob, up or down from the current one, at which occupancy changes."""

    knob: str  # block_size, registers, shared_memory
    direction: str  # "up": raising the knob to at_value; "down": lowering it to at_value
    at_value: int  # the first value, going that way, with the new occupancy
    from_pct: float
    to_pct: float

    @property
    def text(self) -> str:
        verb = "drops" if self.to_pct < self.from_pct else "rises"
        change = f"occupancy {verb} from {self.from_pct:g}% to {self.to_pct:g}%"
        unit = {
            "block_size": "threads per block",
            "registers": "registers per thread",
            "shared_memory": "bytes of shared memory per block",
        }[self.knob]
        if self.direction == "up" and self.knob != "registers":  # block size and shared memory step in units
            return f"above {self.at_value - 1} {unit} {change}"
        return f"at {self.at_value} {unit} {change}"

    def to_dict(self) -> dict:
        return {**asdict(self), "text": self.text}


def nearest_cliffs(
    cliffs: dict[str, pl.DataFrame], threads_per_block: int, registers_per_thread: int, shared_mem_per_block_bytes: int
) -> list[Cliff]:
    """For each knob, the nearest change of occupancy above and below the current value (where there is one)."""
    current = {
        "block_size": threads_per_block,
        "registers": registers_per_thread,
        "shared_memory": shared_mem_per_block_bytes,
    }
    found = []
    for knob, frame in cliffs.items():
        column = KNOB_COLUMNS[knob]
        values = frame[column].to_list()
        pcts = frame["theoretical_pct"].to_list()
        # The row standing for the current value: the first at or above it.
        here = next((i for i, v in enumerate(values) if v >= current[knob]), len(values) - 1)
        up = next((i for i in range(here + 1, len(values)) if pcts[i] != pcts[here]), None)
        if up is not None:
            at_value = values[up - 1] + 1
            found.append(Cliff(knob, "up", at_value, pcts[here], pcts[up]))
        down = next((i for i in range(here - 1, -1, -1) if pcts[i] != pcts[here]), None)
        if down is not None:
            found.append(Cliff(knob, "down", values[down], pcts[here], pcts[down]))
    return found
