"""Latency- or throughput-bound? The verdict of Volkov's latency-hiding model, with its evidence.

Volkov's rule: latency is hidden when some throughput limit is reached, not when the functional units look
busy. So a launch is *throughput-bound* when a unit (DRAM, L2, L1/shared, a math pipe, the issue slots) runs
near its peak, and *latency-bound* when none does and warps spend their stall cycles waiting on latency (too
few warps, or too little independent work per warp, to cover it). When the data cannot tell, the verdict is
"undetermined" and says why. Every verdict carries sentences that cite the numbers and metric ids it used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import polars as pl

from tracekit.analysis import counters as c
from tracekit.analysis.counters import metric, metric_row, pipe_utilization_pct
from tracekit.analysis.stalls import StallBreakdown, stall_breakdown
from tracekit.analysis.sweep import SweepFit

# A unit at or above this share of its peak counts as saturated. Sustained throughput rarely exceeds ~80-90% of
# the nominal peak (DRAM refresh and turnarounds, issue conflicts), so 80% is where the limit is "reached".
SATURATION_PCT = 80.0
# Latency-bound needs most stalled cycles (the issue cycle itself excluded) to be latency stalls.
LATENCY_STALL_MAJORITY = 0.5
# Achieved occupancy below this share of theoretical is a gap worth explaining.
OCCUPANCY_GAP_FRACTION = 0.8
# A partial last wave idling this share of the SM time, or a trace tail this long, is a tail effect.
TAIL_LOSS_FRACTION = 0.2
# SMs idle for at least this share of the elapsed cycles, in a launch of at least one full wave, mean it ran on a
# falling number of SMs (a tail); per-active-cycle utilizations then describe only its busy part.
SM_IDLE_FRACTION = 0.5
# Block durations spreading by this much (relative) are imbalanced.
IMBALANCE_SPREAD = 0.5
# Occupancy lost to block replacement gaps or to warps waiting within their block, as a share of the theoretical
# occupancy, worth a flag.
LOST_OCCUPANCY_FRACTION = 0.1
# Global accesses: 32 threads x 4 bytes / 32-byte sectors = 4 sectors per request for coalesced 32-bit loads.
IDEAL_SECTORS_PER_REQUEST_32BIT = 4.0
UNCOALESCED_FACTOR = 1.5  # sectors per request this far above the ideal are uncoalesced
EXCESSIVE_SECTOR_FRACTION = 0.2  # or this share of sectors beyond the ideal, where Nsight counts them
SHARED_CONFLICT_FRACTION = 0.1  # bank conflicts per shared-memory wavefront
DIVERGENCE_THREADS_FRACTION = 0.9  # fewer than 90% of 32 threads active per instruction
WARP_SIZE = 32

_MEMORY_UNITS = (
    ("DRAM", "dram", c.DRAM_THROUGHPUT_PCT),
    ("L2", "l2", c.L2_THROUGHPUT_PCT),
    ("L1/shared", "l1/shared", c.L1_THROUGHPUT_PCT),
)
_ADVICE = {
    "dram": "Move fewer bytes to and from DRAM: coalesce accesses, reuse data through shared memory or L2, "
    "use narrower types, fuse kernels.",
    "l2": "Send fewer requests to L2: improve L1 reuse and locality, coalesce, avoid atomics on hot lines.",
    "l1/shared": "Reduce L1/shared-memory wavefronts: remove bank conflicts, use wider (vector) accesses, "
    "fewer redundant loads.",
    "issue": "Issue fewer instructions: vectorize loads, hoist index arithmetic, unroll, use wider math.",
    "memory": "Move fewer bytes through the memory system: coalesce, reuse, use narrower types.",
}


@dataclass(frozen=True)
class ClassificationInputs:
    """Everything known about one launch; any part may be missing."""

    metrics: pl.DataFrame = field(default_factory=pl.DataFrame)  # Store.metrics([launch_id]); may be empty
    theoretical_occupancy_warps_per_sm: float | None = None  # from tracekit.analysis.occupancy
    theoretical_occupancy_pct: float | None = None
    max_warps_per_sm: int | None = None  # the device limit
    achieved_occupancy_warps_per_sm: float | None = None  # when given, preferred over the counters
    achieved_occupancy_pct: float | None = None
    # From a warp trace: the trace's own view of the same launch.
    mean_warp_latency_ns: float | None = None
    throughput_warps_per_ns_per_sm: float | None = None
    trace_mean_occupancy_warps_per_sm: float | None = None
    tail_fraction: float | None = None  # share of the launch after the first SM went idle for good
    #                                     (tracekit.analysis.tail: TailEffect.tail_after_first_idle_fraction)
    block_imbalance_spread: float | None = None  # relative spread of block durations, e.g. (p90 - p10) / median
    # Occupancy lost, in warps per SM over the launch (tracekit.analysis.blocks: BlockReplacement):
    lost_to_block_gaps_warps_per_sm: float | None = None  # empty slots between a block's end and the next start
    lost_to_end_spread_warps_per_sm: float | None = None  # finished warps waiting for their block's last warp
    sweep: SweepFit | None = None  # occupancy sweep of this kernel, throughput vs warps per SM


@dataclass(frozen=True)
class UnitUtilization:
    label: str  # "DRAM", "fma pipe"
    limiter: str  # "dram", "fma", "issue"
    metric: str  # the metric id it was read from
    pct: float  # % of peak


@dataclass(frozen=True)
class Classification:
    mode: str  # "latency-bound" | "throughput-bound" | "undetermined"
    limiter: str | None  # when throughput-bound: "dram", "l2", "l1/shared", "fma", "issue", ...
    flags: list[str]
    evidence: list[str]
    advice: list[str]
    needed_occupancy_warps_per_sm: float | None
    reason: str | None = None  # why "undetermined"
    utilization: list[UnitUtilization] = field(default_factory=list)  # highest first, for renderers
    stalls: StallBreakdown | None = None


def _pct(value: float) -> str:
    """Three significant digits, so that 79.7% does not print as 80%."""
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def _num(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def unit_utilizations(metrics: pl.DataFrame) -> list[UnitUtilization]:
    """Every unit the launch's counters give a % of peak for, highest first ("sm" and "memory" are totals)."""
    units: list[UnitUtilization] = []
    for label, limiter, names in (
        *_MEMORY_UNITS,
        ("issue slots", "issue", c.ISSUE_ACTIVE_PCT),
        ("SM (all pipes)", "sm", c.SM_THROUGHPUT_PCT),
        ("memory (all units)", "memory", c.MEMORY_THROUGHPUT_PCT),
    ):
        row = metric_row(metrics, *names)
        if row:
            units.append(UnitUtilization(label, limiter, row[0], row[1]))
    for family, (name, value) in pipe_utilization_pct(metrics).items():
        units.append(UnitUtilization(f"{family} pipe", family, name, value))
    return sorted(units, key=lambda u: (-u.pct, u.limiter in ("sm", "memory")))


@dataclass
class _Occupancy:
    achieved_warps: float | None = None
    achieved_pct: float | None = None
    achieved_source: str | None = None
    theoretical_warps: float | None = None
    theoretical_pct: float | None = None
    theoretical_source: str | None = None


def _occupancy(inputs: ClassificationInputs) -> _Occupancy:
    m = inputs.metrics
    occ = _Occupancy()
    max_warps = inputs.max_warps_per_sm
    # Theoretical: the occupancy calculator's numbers first, the report's after.
    occ.theoretical_warps, occ.theoretical_pct = (
        inputs.theoretical_occupancy_warps_per_sm,
        inputs.theoretical_occupancy_pct,
    )
    occ.theoretical_source = "occupancy calculator" if occ.theoretical_warps or occ.theoretical_pct else None
    if occ.theoretical_warps is None and occ.theoretical_pct is None:
        warps_row, pct_row = metric_row(m, *c.THEORETICAL_WARPS_PER_SM), metric_row(m, *c.THEORETICAL_OCCUPANCY_PCT)
        occ.theoretical_warps = warps_row[1] if warps_row else None
        occ.theoretical_pct = pct_row[1] if pct_row else None
        occ.theoretical_source = (warps_row or pct_row or (None,))[0]
    # Achieved: given numbers, then counters, then the trace.
    occ.achieved_warps, occ.achieved_pct = inputs.achieved_occupancy_warps_per_sm, inputs.achieved_occupancy_pct
    occ.achieved_source = "given" if occ.achieved_warps or occ.achieved_pct else None
    if occ.achieved_warps is None and occ.achieved_pct is None:
        warps_row, pct_row = metric_row(m, *c.ACHIEVED_WARPS_PER_SM), metric_row(m, *c.ACHIEVED_OCCUPANCY_PCT)
        occ.achieved_warps = warps_row[1] if warps_row else None
        occ.achieved_pct = pct_row[1] if pct_row else None
        occ.achieved_source = (warps_row or pct_row or (None,))[0]
    if occ.achieved_warps is None and occ.achieved_pct is None and inputs.trace_mean_occupancy_warps_per_sm:
        occ.achieved_warps, occ.achieved_source = inputs.trace_mean_occupancy_warps_per_sm, "warp trace"
    # Fill warps <-> pct from the device limit, or from the other pair's ratio.
    if max_warps is None:
        for warps, pct in ((occ.theoretical_warps, occ.theoretical_pct), (occ.achieved_warps, occ.achieved_pct)):
            if warps and pct:
                max_warps = warps * 100.0 / pct
                break
    if max_warps:
        if occ.theoretical_warps is None and occ.theoretical_pct is not None:
            occ.theoretical_warps = occ.theoretical_pct / 100.0 * max_warps
        if occ.theoretical_pct is None and occ.theoretical_warps is not None:
            occ.theoretical_pct = occ.theoretical_warps * 100.0 / max_warps
        if occ.achieved_warps is None and occ.achieved_pct is not None:
            occ.achieved_warps = occ.achieved_pct / 100.0 * max_warps
        if occ.achieved_pct is None and occ.achieved_warps is not None:
            occ.achieved_pct = occ.achieved_warps * 100.0 / max_warps
    return occ


class _Report:
    """Collects the verdict's parts as the checks run."""

    def __init__(self) -> None:
        self.flags: list[str] = []
        self.evidence: list[str] = []
        self.advice: list[str] = []

    def flag(self, name: str) -> None:
        if name not in self.flags:
            self.flags.append(name)

    def advise(self, text: str) -> None:
        if text not in self.advice:
            self.advice.append(text)


def _stall_sentence(stalls: StallBreakdown) -> str:
    top = ", ".join(f"{reason} {cycles:.2f}" for reason, cycles in stalls.dominant(3))
    groups = ("latency", "bandwidth", "other")
    shares = ", ".join(f"{group} {100 * (stalls.share(group) or 0):.0f}%" for group in groups)
    return (
        f"Warps wait {stalls.total_cycles_per_issue:.2f} cycles per issued instruction "
        f"({stalls.source} stall metrics, e.g. {next(iter(stalls.metric_names.values()))}); of the stalled "
        f"cycles {shares}; largest reasons (cycles per instruction): {top}."
    )


def _throughput_verdict(saturated: list[UnitUtilization], report: _Report) -> str:
    specific = [u for u in saturated if u.limiter not in ("sm", "memory")]
    top = (specific or saturated)[0]
    for unit in saturated:
        report.evidence.append(
            f"{unit.label} throughput is {_pct(unit.pct)}% of peak ({unit.metric}), above the "
            f"{SATURATION_PCT:.0f}% at which a unit counts as saturated."
        )
    if not specific:
        report.evidence.append(
            f"The report has no per-unit breakdown behind {top.metric}, so the saturated "
            f"unit inside {top.label} is not named."
        )
    report.advise(f"More occupancy will not help: {top.label} is saturated (latency is already hidden).")
    report.advise(
        _ADVICE.get(
            top.limiter,
            f"Issue less work to the {top.label}: use cheaper or fewer instructions, or move work to an idle pipe.",
        )
    )
    return top.limiter


def _waves_and_blocks(m: pl.DataFrame, occ: _Occupancy, inputs: ClassificationInputs, report: _Report) -> None:
    """Explain a gap between achieved and theoretical occupancy, and flag tail effects."""
    waves_row = metric_row(m, *c.WAVES_PER_SM)
    waves = waves_row[1] if waves_row else None
    gap = (
        occ.achieved_warps is not None
        and occ.theoretical_warps
        and occ.achieved_warps < OCCUPANCY_GAP_FRACTION * occ.theoretical_warps
    )
    if gap:
        report.evidence.append(
            f"Achieved occupancy is {occ.achieved_warps:.1f} warps per SM ({_pct(occ.achieved_pct or 0)}%, "
            f"{occ.achieved_source}), below the theoretical {occ.theoretical_warps:.1f} "
            f"({_pct(occ.theoretical_pct or 0)}%, {occ.theoretical_source})."
        )
    causes = 0
    if waves is not None and waves < 1:
        blocks = metric(m, *c.GRID_BLOCKS)
        grid = f"{blocks:.0f} blocks" if blocks is not None else "the grid"
        report.evidence.append(
            f"{grid} fill only {waves:.2f} of one wave of the GPU's block slots ({waves_row[0]}): too few blocks "
            f"for the SMs, so each SM runs fewer warps than it could hold."
        )
        report.flag("too-few-blocks")
        report.advise(
            "Launch more blocks (a larger grid, smaller tiles, or split-K style work splitting) so every "
            "SM gets its full share of warps."
        )
        causes += 1
    elif waves is not None and waves > 1 and not float(waves).is_integer():
        full = math.ceil(waves)
        idle = (full - waves) / full
        report.evidence.append(
            f"The launch runs {waves:.2f} waves ({waves_row[0]}): the last wave is partial and leaves "
            f"{100 * idle:.0f}% of the SM time of {full} waves without blocks."
        )
        causes += 1
        if idle >= TAIL_LOSS_FRACTION:
            report.flag("tail-effect")
            report.advise(
                "Size the grid to a whole number of waves, or give each block more work so the partial "
                "last wave matters less."
            )
    active, elapsed = metric_row(m, *c.SM_ACTIVE_CYCLES), metric_row(m, *c.ELAPSED_CYCLES)
    if active and elapsed and elapsed[1] > 0 and active[1] / elapsed[1] < 1 - TAIL_LOSS_FRACTION:
        idle = 1 - active[1] / elapsed[1]
        report.evidence.append(
            f"SMs were idle {100 * idle:.0f}% of the elapsed cycles ({active[0]} = {_num(active[1])} of "
            f"{elapsed[0]} = {_num(elapsed[1])}): utilizations per active cycle describe only the busy part."
        )
        if idle >= SM_IDLE_FRACTION and (waves is None or waves >= 1):
            report.flag("tail-effect")
            report.advise("Balance the work across blocks (or hand it out dynamically) so all SMs finish together.")
        causes += 1
    if inputs.tail_fraction is not None and inputs.tail_fraction >= TAIL_LOSS_FRACTION:
        report.evidence.append(
            f"The warp trace spends {100 * inputs.tail_fraction:.0f}% of the launch in its tail "
            f"(at least {100 * TAIL_LOSS_FRACTION:.0f}% counts as a tail effect)."
        )
        report.flag("tail-effect")
        causes += 1
    if inputs.block_imbalance_spread is not None and inputs.block_imbalance_spread >= IMBALANCE_SPREAD:
        report.evidence.append(
            f"Block durations spread by {inputs.block_imbalance_spread:.2f} (relative) in the "
            f"trace: imbalance between blocks keeps SMs partly empty while slow blocks finish."
        )
        report.flag("block-imbalance")
        report.advise("Balance work across blocks (or hand out work dynamically) so SMs refill evenly.")
        causes += 1
    theoretical = occ.theoretical_warps
    for lost, what, flag, advice in (
        (
            inputs.lost_to_end_spread_warps_per_sm,
            "finished warps holding their slot until their block's last warp ends (imbalance within blocks)",
            "block-imbalance",
            "Balance work across the warps of a block.",
        ),
        (
            inputs.lost_to_block_gaps_warps_per_sm,
            "empty slots between one block's end and the next block's start on an SM",
            "block-launch-gaps",
            "Give each block more work (fewer, longer blocks) so block launches are rarer.",
        ),
    ):
        if lost is None or lost <= 0:
            continue
        large = theoretical is not None and lost >= LOST_OCCUPANCY_FRACTION * theoretical
        if large or gap:
            report.evidence.append(f"The warp trace loses {lost:.1f} warps per SM of occupancy to {what}.")
            causes += 1
        if large:
            report.flag(flag)
            report.advise(advice)
    if gap and not causes:
        report.evidence.append(
            "No cause for the occupancy gap is visible in the data (a warp trace would show "
            "imbalance between or within blocks)."
        )


def _ideal_sectors_per_request(m: pl.DataFrame) -> tuple[float, str]:
    """Sectors a fully coalesced warp request needs: 32 threads x width / 32-byte sectors (4 for 32-bit).

    With the report's mix of access widths (shared memory included, so only an estimate) the ideal is their
    instruction-weighted mean; without it, 32-bit accesses are assumed."""
    counts = {bits: metric(m, f"smsp__sass_inst_executed_op_memory_{bits}b.sum") for bits in (8, 16, 32, 64, 128)}
    counts = {bits: n for bits, n in counts.items() if n}
    if counts:
        ideal = sum(n * bits / 8 for bits, n in counts.items()) / sum(counts.values())
        return ideal, "for coalesced accesses of the kernel's width mix (smsp__sass_inst_executed_op_memory_*b)"
    return IDEAL_SECTORS_PER_REQUEST_32BIT, "for coalesced 32-bit loads (32 threads x 4 B / 32 B sectors)"


def _wastes(m: pl.DataFrame, report: _Report) -> None:
    """Uncoalesced access, shared-memory bank conflicts, local-memory spills, branch divergence."""
    excess, theoretical = metric_row(m, *c.GLOBAL_EXCESSIVE_SECTORS), metric(m, *c.GLOBAL_THEORETICAL_SECTORS)
    sectors, requests = metric_row(m, *c.GLOBAL_LOAD_SECTORS), metric_row(m, *c.GLOBAL_LOAD_REQUESTS)
    if excess and theoretical:
        share = excess[1] / theoretical
        if share >= EXCESSIVE_SECTOR_FRACTION:
            report.flag("uncoalesced-access")
            report.evidence.append(
                f"{100 * share:.0f}% of global sectors are beyond the ideal for their accesses ({excess[0]} = "
                f"{_num(excess[1])} of {_num(theoretical)}): uncoalesced access."
            )
    elif sectors and requests and requests[1] > 0:
        per_request = sectors[1] / requests[1]
        ideal, basis = _ideal_sectors_per_request(m)
        if per_request > UNCOALESCED_FACTOR * ideal:
            report.flag("uncoalesced-access")
            report.evidence.append(
                f"Global loads take {per_request:.1f} sectors per request ({sectors[0]} / {requests[0]}) against "
                f"{ideal:.3g} {basis}."
            )
    if "uncoalesced-access" in report.flags:
        report.advise("Coalesce global accesses: consecutive threads should touch consecutive addresses.")

    conflicts, wavefronts = metric_row(m, *c.SHARED_BANK_CONFLICTS), metric_row(m, *c.SHARED_WAVEFRONTS)
    if conflicts and wavefronts and wavefronts[1] > 0 and conflicts[1] / wavefronts[1] >= SHARED_CONFLICT_FRACTION:
        report.flag("shared-bank-conflicts")
        report.evidence.append(
            f"Shared-memory bank conflicts add {_num(conflicts[1])} of {_num(wavefronts[1])} wavefronts "
            f"({100 * conflicts[1] / wavefronts[1]:.0f}%; {conflicts[0]})."
        )
        report.advise("Remove shared-memory bank conflicts: pad arrays or swizzle indices.")

    local_rows = [
        row
        for row in (
            metric_row(m, *c.LOCAL_LOAD_INSTRUCTIONS),
            metric_row(m, *c.LOCAL_STORE_INSTRUCTIONS),
            metric_row(m, *c.LOCAL_LOAD_SECTORS),
            metric_row(m, *c.LOCAL_STORE_SECTORS),
            metric_row(m, *c.LOCAL_SPILL_REQUESTS),
        )
        if row
    ]
    if any(value > 0 for _, value in local_rows):
        report.flag("register-spills")
        cited = ", ".join(f"{name} = {_num(value)}" for name, value in local_rows if value > 0)
        report.evidence.append(f"The kernel uses local memory ({cited}): register spills or local arrays.")
        report.advise(
            "Avoid local memory: fewer live registers (or a higher register limit), no dynamically "
            "indexed local arrays."
        )

    threads, branch = metric_row(m, *c.THREADS_PER_INSTRUCTION), metric_row(m, *c.BRANCH_EFFICIENCY_PCT)
    if threads and threads[1] < DIVERGENCE_THREADS_FRACTION * WARP_SIZE:
        report.flag("branch-divergence")
        report.evidence.append(
            f"Only {threads[1]:.1f} of {WARP_SIZE} threads are active per executed instruction "
            f"({threads[0]}): divergence or partial warps."
        )
    elif branch and branch[1] < 100 * DIVERGENCE_THREADS_FRACTION:
        report.flag("branch-divergence")
        report.evidence.append(f"Branch efficiency is {_pct(branch[1])}% ({branch[0]}).")
    if "branch-divergence" in report.flags:
        report.advise("Reduce divergence: make the threads of a warp take the same branches.")


def _needed_occupancy(
    inputs: ClassificationInputs, occ: _Occupancy, units: list[UnitUtilization], report: _Report
) -> float | None:
    """Little's law: warps needed per SM = warp latency x throughput bound."""
    sweep = inputs.sweep
    if sweep is not None and sweep.needed_occupancy_warps_per_sm is not None:
        report.evidence.append(
            f"The occupancy sweep fits min(n / L, B) with L = {_num(sweep.latency)} (per warp, in the throughput's "
            f"time unit) and B = "
            f"{_num(sweep.throughput_bound)}: n* = L x B = {sweep.needed_occupancy_warps_per_sm:.1f} warps per SM "
            f"are needed to reach the bound"
            + (
                f" (measured points near the knee fall up to {100 * sweep.knee_gap_fraction:.0f}% below the model)."
                if sweep.knee_gap_fraction
                else "."
            )
        )
        return sweep.needed_occupancy_warps_per_sm
    if inputs.mean_warp_latency_ns and inputs.throughput_warps_per_ns_per_sm:
        in_flight = inputs.mean_warp_latency_ns * inputs.throughput_warps_per_ns_per_sm
        report.evidence.append(
            f"Warp trace: mean warp latency {_num(inputs.mean_warp_latency_ns)} ns x throughput "
            f"{_num(inputs.throughput_warps_per_ns_per_sm)} warps/ns per SM = {in_flight:.1f} warps in flight per "
            f"SM (Little's law)."
        )
    warps = occ.achieved_warps
    specific = [u for u in units if u.limiter not in ("sm", "memory")] or units
    if warps is None or not specific or specific[0].pct <= 0:
        return None
    top = specific[0]
    needed = warps * 100.0 / top.pct
    report.evidence.append(
        f"By Little's law the {warps:.1f} warps per SM now in flight keep the busiest unit, {top.label}, at "
        f"{_pct(top.pct)}% of peak ({top.metric}); at the same warp latency about {needed:.1f} warps per SM would "
        f"reach its peak (a lower bound: latency grows near saturation)."
    )
    return needed


def _latency_advice(m: pl.DataFrame, occ: _Occupancy, needed: float | None, report: _Report) -> None:
    """More warps where occupancy can still grow to the needed n*; more ILP where it cannot."""
    report.advise("A faster unit will not help: no unit is near its peak; latency is not hidden.")
    achieved, theoretical = occ.achieved_warps, occ.theoretical_warps
    below_theoretical = achieved is not None and theoretical and achieved < OCCUPANCY_GAP_FRACTION * theoretical
    if needed is not None and theoretical is not None and theoretical < needed:
        limits = {name: metric(m, *names) for name, names in c.BLOCK_LIMIT_NAMES.items()}
        limits = {name: value for name, value in limits.items() if value is not None}
        limiting = f" (limited by {min(limits, key=limits.get)})" if limits else ""
        report.evidence.append(
            f"Even the theoretical occupancy, {theoretical:.1f} warps per SM{limiting}, is below "
            f"the ~{needed:.0f} needed: more warps alone cannot hide the latency."
        )
        report.flag("needs-ilp")
        report.advise(
            "Give each warp more independent work (ILP): unroll, issue several loads before using them, "
            "process several elements per thread."
        )
        if limits and occ.theoretical_pct is not None and occ.theoretical_pct < 100:
            report.advise(
                f"Raise the theoretical occupancy ({occ.theoretical_pct:.0f}% of the device's warps, "
                f"limited by {min(limits, key=limits.get)}) where the kernel allows."
            )
        if below_theoretical:
            report.flag("low-occupancy")
            report.advise(f"Run more warps per SM, up to the theoretical {theoretical:.0f}.")
        return
    if needed is not None and achieved is not None and achieved < needed:
        report.flag("low-occupancy")
        report.advise(
            f"Run more warps per SM (about {needed:.0f} to reach the bound): more blocks, or fewer "
            f"registers / less shared memory per block."
        )
    report.advise("Give each warp more independent work (ILP): unroll, issue several loads before using them.")


def _verdict(
    inputs: ClassificationInputs,
    m: pl.DataFrame,
    units: list[UnitUtilization],
    stalls: StallBreakdown,
    occ: _Occupancy,
    report: _Report,
) -> tuple[str, str | None, str | None]:
    """(mode, limiter, reason undetermined): a saturated unit first, then a sweep past its knee, then the stall
    split; with no utilization counters, the sweep's knee alone."""
    mode, limiter, reason = "undetermined", None, None
    saturated = [u for u in units if u.pct >= SATURATION_PCT]
    sweep_knee = inputs.sweep.needed_occupancy_warps_per_sm if inputs.sweep is not None else None
    if saturated:
        mode = "throughput-bound"
        limiter = _throughput_verdict(saturated, report)
        if stalls.available:
            report.evidence.append(_stall_sentence(stalls))
    elif units and sweep_knee and occ.achieved_warps is not None and occ.achieved_warps >= sweep_knee:
        # The sweep shows the limit directly: throughput stopped growing with warps. The unit behind it is the
        # busiest one, whose sustainable peak lies below the nominal peak the counters compare against.
        mode = "throughput-bound"
        top = next((u for u in units if u.limiter not in ("sm", "memory")), units[0])
        limiter = top.limiter
        report.evidence.append(
            f"The launch runs {occ.achieved_warps:.1f} warps per SM ({occ.achieved_source}), past the occupancy "
            f"sweep's knee of {sweep_knee:.1f}: throughput no longer grows with warps, so a throughput limit is "
            f"reached although no counter shows {SATURATION_PCT:.0f}% of peak; the busiest unit is {top.label} at "
            f"{_pct(top.pct)}% ({top.metric})."
        )
        report.advise(f"More occupancy will not help: the sweep is past its knee; {top.label} is the busiest unit.")
        report.advise(_ADVICE.get(top.limiter, f"Issue less work to the {top.label}."))
    elif units:
        top = units[0]
        report.evidence.append(
            f"No unit reaches {SATURATION_PCT:.0f}% of peak: the busiest is {top.label} at "
            f"{_pct(top.pct)}% ({top.metric})."
        )
        has_memory = any(u.limiter in ("dram", "l2", "l1/shared", "memory") for u in units)
        has_sm = any(u.limiter not in ("dram", "l2", "l1/shared", "memory") for u in units)
        if stalls.available:
            report.evidence.append(_stall_sentence(stalls))
            latency_share = stalls.share("latency") or 0.0
            if latency_share >= LATENCY_STALL_MAJORITY:
                mode = "latency-bound"
            else:
                reason = (
                    f"no unit is saturated, yet only {100 * latency_share:.0f}% of stalled cycles are latency "
                    f"stalls: the limit may be reached in bursts, or lie in a unit the report does not measure."
                )
        elif has_memory and has_sm:
            mode = "latency-bound"
            report.evidence.append(
                "The report has no stall breakdown; by Volkov's rule a launch that reaches no "
                "throughput limit is latency-bound."
            )
        else:
            measured = ", ".join(u.label for u in units)
            reason = (
                f"only {measured} measured: without both memory and SM utilization a saturated unit "
                f"cannot be ruled out."
            )
    elif inputs.sweep is not None and inputs.sweep.needed_occupancy_warps_per_sm and occ.achieved_warps:
        knee = inputs.sweep.needed_occupancy_warps_per_sm
        if occ.achieved_warps < knee:
            mode = "latency-bound"
            report.evidence.append(
                f"The launch runs {occ.achieved_warps:.1f} warps per SM ({occ.achieved_source}), "
                f"below the sweep's knee of {knee:.1f}: throughput still grows with warps."
            )
        else:
            mode = "throughput-bound"
            report.evidence.append(
                f"The launch runs {occ.achieved_warps:.1f} warps per SM ({occ.achieved_source}), "
                f"at or past the sweep's knee of {knee:.1f}: throughput is on its plateau; "
                f"the report names no unit, so the limiter is unknown."
            )
            report.advise("More occupancy will not help: the sweep is on its plateau.")
    elif m.is_empty():
        reason = (
            "no metrics for this launch"
            + (
                "; the warp trace gives latency and throughput but not the bound to compare them with"
                if inputs.mean_warp_latency_ns
                else ""
            )
            + "."
        )
    else:
        reason = "the metrics include no utilization (% of peak) counters, so no throughput limit can be checked."
    return mode, limiter, reason


def classify(inputs: ClassificationInputs) -> Classification:
    """The latency- vs throughput-bound verdict for one launch, with flags, evidence and advice."""
    m = inputs.metrics if "name" in inputs.metrics.columns else pl.DataFrame()
    report = _Report()
    units = unit_utilizations(m) if not m.is_empty() else []
    stalls = stall_breakdown(m)
    occ = _occupancy(inputs)
    mode, limiter, reason = _verdict(inputs, m, units, stalls, occ, report)

    if mode == "latency-bound":
        for reason_name, cycles in stalls.dominant(1) if stalls.available else []:
            report.evidence.append(
                f"The largest stall is {reason_name} at {cycles:.2f} cycles per issued instruction "
                f"({stalls.metric_names.get(reason_name)})."
            )

    needed = _needed_occupancy(inputs, occ, units, report)
    if mode == "latency-bound":
        _latency_advice(m, occ, needed, report)
    _waves_and_blocks(m, occ, inputs, report)
    _wastes(m, report)
    if mode == "undetermined":
        report.evidence.insert(0, f"Undetermined: {reason}")
    return Classification(
        mode=mode,
        limiter=limiter,
        flags=report.flags,
        evidence=report.evidence,
        advice=report.advice,
        needed_occupancy_warps_per_sm=needed,
        reason=reason,
        utilization=units,
        stalls=stalls,
    )
