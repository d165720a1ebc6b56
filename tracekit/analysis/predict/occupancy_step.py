"""Occupancy and achieved occupancy: the knobs through the occupancy calculator to warps per SM, and the share of
them the launch really keeps resident (a block frees its slot only when its last warp ends; the tail of few waves).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from tracekit.analysis import model
from tracekit.analysis.occupancy import OccupancyResult, device_limits, theoretical_occupancy
from tracekit.analysis.predict.findings import finding
from tracekit.analysis.predict.types import Change, Finding, PredictInputs, PredictionRefused
from tracekit.ceilings.devices import WARP_SIZE
from tracekit.errors import TracekitError


def occupancy(cc: str, block: int, regs: int, smem: int) -> OccupancyResult:
    """The calculator's result, or a one-line refusal naming the limit that allows no block."""
    try:
        result = theoretical_occupancy(cc, block, regs, smem)
    except TracekitError as exc:
        raise PredictionRefused(f"the device cannot run this configuration: {exc}") from None
    if result.active_blocks_per_sm == 0:
        limits = device_limits(cc)
        raise PredictionRefused(
            f"the device cannot run this configuration: {result.limiter.replace('_', ' ')} allow 0 blocks of "
            f"{block} threads per SM (registers {regs} x {block} threads, shared memory {smem} bytes; an SM has "
            f"{limits.registers_per_sm} registers and {limits.shared_mem_per_sm_bytes} bytes)"
        )
    return result


@dataclass(frozen=True)
class Config:
    """A configuration through the calculator: what the user turned and the warps per SM it allows."""

    threads_per_block: int
    registers_per_thread: int
    shared_mem_per_block_bytes: int
    grid_blocks: int
    ilp: float
    blocks_per_sm: int
    theoretical_warps_per_sm: float
    waves: float
    limiter: str


def current_config(inputs: PredictInputs) -> Config:
    smem = inputs.static_shared_mem_bytes + inputs.dynamic_shared_mem_bytes
    occ = occupancy(inputs.compute_capability, inputs.threads_per_block, inputs.registers_per_thread, smem)
    blocks = occ.active_blocks_per_sm
    return Config(
        inputs.threads_per_block,
        inputs.registers_per_thread,
        smem,
        inputs.grid_blocks,
        inputs.ilp,
        blocks,
        float(occ.theoretical_warps_per_sm),
        model.waves(inputs.grid_blocks, blocks, inputs.sm_count),
        occ.limiter,
    )


def new_config(inputs: PredictInputs, change: Change, now: Config) -> tuple[Config, list[Finding]]:
    """The changed configuration (the same total work), refused in one line where the device cannot run it."""
    cc = inputs.compute_capability
    limits = device_limits(cc)
    block = change.threads_per_block or inputs.threads_per_block
    if block > limits.max_threads_per_block:
        raise PredictionRefused(
            f"the device cannot run this configuration: a block of {block} threads is over "
            f"the {limits.max_threads_per_block}-thread limit"
        )
    regs = change.registers_per_thread if change.registers_per_thread is not None else inputs.registers_per_thread
    dyn = (
        change.dynamic_shared_mem_bytes
        if change.dynamic_shared_mem_bytes is not None
        else inputs.dynamic_shared_mem_bytes
    )
    smem = inputs.static_shared_mem_bytes + dyn
    occ = occupancy(cc, block, regs, smem)
    blocks, limiter = occ.active_blocks_per_sm, occ.limiter
    if change.warps_per_sm is not None:
        if not 1 <= change.warps_per_sm <= limits.max_warps_per_sm:
            raise PredictionRefused(
                f"the device cannot run this configuration: {change.warps_per_sm} warps per SM "
                f"(an SM holds 1 to {limits.max_warps_per_sm})"
            )
        wanted = max(1, change.warps_per_sm // occ.warps_per_block)
        if wanted > blocks and change.warps_per_sm > occ.theoretical_warps_per_sm:
            raise PredictionRefused(
                f"the device cannot run this configuration: {change.warps_per_sm} warps per SM needs "
                f"{wanted} blocks of {block} threads, and {limiter.replace('_', ' ')} allow {blocks}"
            )
        blocks, limiter = wanted, "requested"
    if change.grid_blocks is not None:
        if change.grid_blocks < 1:
            raise PredictionRefused(f"grid of {change.grid_blocks} blocks: must be 1 or more")
        grid = change.grid_blocks
    else:  # the same threads in all
        grid = max(1, math.ceil(inputs.grid_blocks * inputs.threads_per_block / block))
    ilp = change.ilp if change.ilp is not None else now.ilp
    if ilp <= 0:
        raise PredictionRefused(f"ILP {ilp:g}: must be above 0")
    theo = float(blocks * occ.warps_per_block)
    config = Config(block, regs, smem, grid, ilp, blocks, theo, model.waves(grid, blocks, inputs.sm_count), limiter)
    findings = [
        finding(
            "occupancy",
            "predict.occupancy",
            ("block", block, "count"),
            ("regs", regs, "count"),
            ("smem", smem, "B"),
            ("blocks", blocks, "count"),
            ("warps", theo, "warps/SM"),
            ("limiter", limiter.replace("_", " ")),
            ("blocks_now", now.blocks_per_sm, "count"),
            ("warps_now", now.theoretical_warps_per_sm, "warps/SM"),
            value=theo,
            unit="warps/SM",
        )
    ]
    if regs < inputs.registers_per_thread:
        findings.append(
            finding(
                "occupancy",
                "predict.regs-capped",
                ("regs", regs, "count"),
                ("regs_now", inputs.registers_per_thread, "count"),
                value=float(regs),
            )
        )
    return config, findings


# The spread (coefficient of variation) of warp lifetimes assumed where a launch cannot show its own (one warp per
# block, or residency set by the block launch rate): what launches of two or more waves show through their lost
# residency (`residency`) on the H100 sweep set, cv 0.004-0.28, median 0.14 (the point) and the largest (the
# interval's reach).
WARP_CV = 0.14
WARP_CV_HIGH = 0.28


def expected_max_normal(k: int) -> float:
    """E[max of k independent standard normals] (Blom's approximation; 0 for one)."""
    if k <= 1:
        return 0.0
    return NormalDist().inv_cdf((k - 0.375) / (k + 0.25))


@dataclass(frozen=True)
class Residency:
    """The share of theoretical warps a configuration keeps resident, and why."""

    kept: float
    cv: float | None  # warp lifetimes' coefficient of variation, when read from the launch's lost share
    warps_per_block_now: int
    warps_per_block_new: int
    trips: float


def residency(keep: float, block_now: int, block_new: int, waves_now: float, trips: float = 1.0) -> Residency:
    """A block frees its slot only when its last warp ends, so the warps that finished first leave their slots
    idle: with warp lifetimes spread by a coefficient of variation cv, a block of k warps lives E[max of k] =
    m (1 + cv x s_k) for mean m, and keeps m / E[max] of its slots busy. cv is read from the launch's own lost share
    (the whole gap taken as end spread, so an upper bound: block starts cost some too); only a launch of two or more
    waves shows it. A warp that runs `trips` times the loop iterations (the same work over fewer threads) sums that
    many iteration times, so its spread shrinks as 1 / sqrt(trips) (central limit)."""
    k_now, k_new = max(1, math.ceil(block_now / WARP_SIZE)), max(1, math.ceil(block_new / WARP_SIZE))
    s_now, s_new = expected_max_normal(k_now), expected_max_normal(k_new)
    if (k_new == k_now and abs(trips - 1.0) < 1e-9) or s_now <= 0 or waves_now < 2 or keep >= 0.999:
        return Residency(keep, None, k_now, k_new, trips)
    cv = (1.0 / keep - 1.0) / s_now
    cv_new = cv / math.sqrt(max(trips, 1.0))
    return Residency(1.0 / (1.0 + cv_new * s_new), cv, k_now, k_new, trips)


def trips(inputs: PredictInputs, new: Config) -> float:
    """How many times each thread of the new configuration runs the work one thread runs now (the same total work
    over new.grid_blocks x new.threads_per_block threads): above 1 it loops more, below 1 it keeps that share."""
    return inputs.grid_blocks * inputs.threads_per_block / (new.grid_blocks * new.threads_per_block)


@dataclass(frozen=True)
class Achieved:
    """Achieved warps per SM now and after (time averages over each launch, its tail included)."""

    now: float
    new: float
    span: tuple[float, ...]  # the new value at each end of the tail's smear
    keep_now: float  # share of each block's warps the launch keeps (its own tail taken out)
    residency: Residency
    tail_now: float
    tail_new: float


def achieved_step(
    inputs: PredictInputs, now: Config, new: Config, arrival_scale: float | None = None
) -> tuple[Achieved, list[Finding]]:
    """Achieved, not theoretical: the launch's measured warps divided by its own waves' residency give the share of
    each block's warps it keeps; the new block size keeps 1 / (1 + cv x s_k'); the new waves' residency multiplies
    it back. `arrival_scale`: where the block launch rate, not the blocks, holds the resident warps down (short
    blocks: warps resident = warps started per second x block lifetime, Little's law), the new warps started per
    second over the launch's; then the lost share is not carried, the warps scale with the arrivals up to what the
    new configuration holds."""
    measured = inputs.achieved_warps_per_sm or now.theoretical_warps_per_sm * model.wave_residency(now.waves)
    loops = trips(inputs, new)
    smear_scale = 1.0 / math.sqrt(max(loops, 1.0))

    def kept(smear: float) -> float:
        # Not capped at 1: a measurement a little above the tail model's share stays as measured, so an unchanged
        # configuration keeps exactly the warps it has.
        return measured / (now.theoretical_warps_per_sm * model.wave_residency(now.waves, smear))

    def at(smear: float) -> tuple[float, Residency]:
        held = model.wave_residency(new.waves, smear * smear_scale)
        if arrival_scale is not None:
            # The launch rate hid the blocks' own residency: the new blocks keep 1 / (1 + cv x s_k) at the warp-time
            # spread assumed where a launch cannot show its own (WARP_CV).
            k_new = max(1, math.ceil(new.threads_per_block / WARP_SIZE))
            keep = 1.0 / (1.0 + WARP_CV * expected_max_normal(k_new))
            res = Residency(keep, WARP_CV, max(1, math.ceil(now.threads_per_block / WARP_SIZE)), k_new, loops)
            return min(new.theoretical_warps_per_sm * keep * held, measured * arrival_scale), res
        res = residency(kept(smear), now.threads_per_block, new.threads_per_block, now.waves, loops)
        return new.theoretical_warps_per_sm * res.kept * held, res

    achieved_new, res = at(model.TAIL_SMEAR)
    span = tuple(at(s)[0] for s in model.TAIL_SMEAR_RANGE)
    result = Achieved(
        measured,
        achieved_new,
        span,
        kept(model.TAIL_SMEAR),
        res,
        model.wave_residency(now.waves),
        model.wave_residency(new.waves, model.TAIL_SMEAR * smear_scale),
    )
    shown_span = max(span) - min(span) > 0.005 * achieved_new
    text = finding(
        "achieved",
        "predict.achieved",
        ("achieved_now", measured, "warps/SM"),
        ("theoretical_now", now.theoretical_warps_per_sm, "warps/SM"),
        ("tail_now", result.tail_now, "fraction"),
        ("waves_now", now.waves),
        ("keep_now", result.keep_now, "fraction"),
        ("cv", res.cv),
        ("warps_per_block_now", res.warps_per_block_now, "count"),
        ("warps_per_block_new", res.warps_per_block_new, "count"),
        ("trips", loops),
        ("keep_new", res.kept, "fraction"),
        ("theoretical_new", new.theoretical_warps_per_sm, "warps/SM"),
        ("tail_new", result.tail_new, "fraction"),
        ("waves_new", new.waves),
        ("achieved_new", achieved_new, "warps/SM"),
        ("arrival_scale", arrival_scale),
        ("span_low", min(span) if shown_span else None, "warps/SM"),
        ("span_high", max(span) if shown_span else None, "warps/SM"),
        value=achieved_new,
        unit="warps/SM",
    )
    return result, [text]
