"""Latency- or throughput-bound? The verdict of Volkov's latency-hiding model, with its evidence.

Volkov's rule: latency is hidden when some throughput limit is reached, not when the functional units look
busy. So a launch is *throughput-bound* when a unit (DRAM, L2, L1/shared, a math pipe, the issue slots) runs
near its peak, and *latency-bound* when none does and warps spend their stall cycles waiting on latency (too
few warps, or too little independent work per warp, to cover it). When the data cannot tell, the verdict is
"undetermined" and says why.

The rules live in `tracekit/analysis/rules/` (one module per rule, each a pure `apply(context) -> findings`);
`rules/verdict.py` decides the mode and limiter and ranks the findings by the SM time they cost. This module builds
the rules' context from what the engine knows and returns the verdict as the engine's typed result: data (each
finding's template, advice ids and values), which `tracekit.present.rules` words when a view shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import polars as pl

from tracekit import counters as c
from tracekit.analysis.launch_ceilings import LaunchCeilings
from tracekit.analysis.rules import verdict
from tracekit.analysis.rules.base import (
    COMPOSITE_UNITS,
    MEMORY_LIMITERS,
    SATURATION_PCT,
    DeviceFacts,
    Finding,
    OccupancyView,
    RuleContext,
    TraceStats,
    UnitUtilization,
    Value,
)
from tracekit.analysis.rules.nsight_rules import RULE_FLAGS, NsightRule
from tracekit.analysis.stalls import StallBreakdown, stall_breakdown
from tracekit.analysis.sweep import SweepFit
from tracekit.counters import metric_row, pipe_utilization_pct

__all__ = [
    "COMPOSITE_UNITS",
    "MEMORY_LIMITERS",
    "RULE_FLAGS",
    "SATURATION_PCT",
    "Classification",
    "ClassificationInputs",
    "Finding",
    "NsightRule",
    "RankedFinding",
    "UnitUtilization",
    "build_context",
    "classify",
    "unit_utilizations",
]

_MEMORY_UNITS = (
    ("DRAM", "dram", c.DRAM_THROUGHPUT_PCT),
    ("L2", "l2", c.L2_THROUGHPUT_PCT),
    ("L1/shared", "l1/shared", c.L1_THROUGHPUT_PCT),
)
# The ranked findings' kinds (the JSON's `findings[].kind`), by the finding that costs the time.
_KINDS = {"idle-sms.cost": "tail", "launch-overhead.overhead": "launch-overhead", "verdict.limiter": "limiter"}


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
    #                                     (tracekit.analysis.tail: TailEffect.tail_fraction)
    block_imbalance_spread: float | None = None  # relative spread of block durations, e.g. (p90 - p10) / median
    # Occupancy lost, in warps per SM over the launch (tracekit.analysis.blocks: BlockReplacement):
    lost_to_block_gaps_warps_per_sm: float | None = None  # empty slots between a block's end and the next start
    lost_to_end_spread_warps_per_sm: float | None = None  # finished warps waiting for their block's last warp
    sweep: SweepFit | None = None  # occupancy sweep of this kernel, throughput vs warps per SM
    # Added for issue 11 (the engine feeds them; all optional):
    trace_sm_idle_fraction: float | None = None  # share of SM time within the trace's span with no resident warp:
    #   1 - Warps.mean_occupancy_warps_per_sm / Warps.mean_occupancy_per_active_sm_warps
    trace_span_ns: float | None = None  # the trace's first warp start to last warp end (Warps.span_ns)
    event_duration_ns: float | None = None  # the launch's own timed duration (cudaEvent / nsys), launch overhead
    #   included: the trace header's `launch_duration_ns` (the launch row's duration_ns of a warp trace)
    grid_blocks: int | None = None  # blocks in the grid (Kernel.grid product)
    sm_count: int | None = None  # the device's SMs (Kernel.device.sm_count)
    # Issue 20: each unit against its nominal peak and its achievable ceiling (launch_ceilings.launch_ceilings; its
    # source "nominal" without a measured profile for the device); the rules judge saturation against it.
    ceilings: LaunchCeilings | None = None


@dataclass(frozen=True)
class RankedFinding:
    """One cause of lost or bounded time, with the share of the launch's SM time it accounts for."""

    kind: str  # "tail" (SMs idle before the launch ends), "launch-overhead", "limiter" (what bounds the busy part)
    sm_time_fraction: float  # share of the launch's SM time (of its timed duration for launch overhead)
    text: str  # its sentence: empty until `tracekit.present.rules` words the result
    id: str = ""  # v2: the finding's stable id (tracekit/analysis/rules)
    values: tuple[Value, ...] = ()  # v2: the numbers behind the sentence, with units
    metrics: tuple[str, ...] = ()  # v2: the metric ids it cites


@dataclass(frozen=True)
class Classification:
    mode: str  # "latency-bound" | "throughput-bound" | "undetermined"
    limiter: str | None  # when throughput-bound: "dram", "l2", "l1/shared", "fma", "issue", ...
    flags: list[str]
    # The sentences (`tracekit.present.rules` words them from `rule_findings` when a view shows the result; the
    # engine leaves `advice` empty, `reason` and `headline` None, and `evidence` holds only what it noted itself).
    evidence: list[str]
    advice: list[str]
    needed_occupancy_warps_per_sm: float | None
    reason: str | None = None  # why "undetermined"
    utilization: list[UnitUtilization] = field(default_factory=list)  # highest first, for renderers
    # in JSON as the result's own `stalls` section, not here (a field marked json: False is left out)
    stalls: StallBreakdown | None = field(default=None, metadata={"json": False})
    findings: list[RankedFinding] = field(default_factory=list)  # ranked by the SM time they cost, largest first
    headline: str | None = None  # the largest finding's text (what costs the most time leads)
    tied_limiters: list[str] = field(default_factory=list)  # units within a few points of the limiter, named too
    nsight_rules: list[NsightRule] = field(default_factory=list)  # Nsight Compute's own rule results (evidence)
    rule_findings: list[Finding] = field(default_factory=list)  # every rule's finding, in evidence order, as data
    # the inputs' ceilings as the verdict judged them: `judged_by` the ceiling it used (in JSON as the result's own
    # `ceilings` section, not here)
    ceilings: LaunchCeilings | None = field(default=None, metadata={"json": False})


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
        label = family if family.endswith(" pipe") else f"{family} pipe"  # "shared pipe", not "shared pipe pipe"
        units.append(UnitUtilization(label, family, name, value))
    return sorted(units, key=lambda u: (-u.pct, u.limiter in ("sm", "memory")))


def _occupancy(inputs: ClassificationInputs, m: pl.DataFrame) -> OccupancyView:
    """Theoretical occupancy from the calculator, else the report; achieved from the given numbers, the counters,
    then the trace; warps and percent filled from each other through the device's warp slots."""
    max_warps: float | None = inputs.max_warps_per_sm
    theoretical_warps, theoretical_pct = inputs.theoretical_occupancy_warps_per_sm, inputs.theoretical_occupancy_pct
    theoretical_source = "occupancy calculator" if theoretical_warps or theoretical_pct else None
    if theoretical_warps is None and theoretical_pct is None:
        warps_row, pct_row = metric_row(m, *c.THEORETICAL_WARPS_PER_SM), metric_row(m, *c.THEORETICAL_OCCUPANCY_PCT)
        theoretical_warps = warps_row[1] if warps_row else None
        theoretical_pct = pct_row[1] if pct_row else None
        theoretical_source = (warps_row or pct_row or (None,))[0]
    achieved_warps, achieved_pct = inputs.achieved_occupancy_warps_per_sm, inputs.achieved_occupancy_pct
    achieved_source = "given" if achieved_warps or achieved_pct else None
    if achieved_warps is None and achieved_pct is None:
        warps_row, pct_row = metric_row(m, *c.ACHIEVED_WARPS_PER_SM), metric_row(m, *c.ACHIEVED_OCCUPANCY_PCT)
        achieved_warps = warps_row[1] if warps_row else None
        achieved_pct = pct_row[1] if pct_row else None
        achieved_source = (warps_row or pct_row or (None,))[0]
    if achieved_warps is None and achieved_pct is None and inputs.trace_mean_occupancy_warps_per_sm:
        achieved_warps, achieved_source = inputs.trace_mean_occupancy_warps_per_sm, "warp trace"
    if max_warps is None:
        for warps, pct in ((theoretical_warps, theoretical_pct), (achieved_warps, achieved_pct)):
            if warps and pct:
                max_warps = warps * 100.0 / pct
                break
    if max_warps:
        if theoretical_warps is None and theoretical_pct is not None:
            theoretical_warps = theoretical_pct / 100.0 * max_warps
        if theoretical_pct is None and theoretical_warps is not None:
            theoretical_pct = theoretical_warps * 100.0 / max_warps
        if achieved_warps is None and achieved_pct is not None:
            achieved_warps = achieved_pct / 100.0 * max_warps
        if achieved_pct is None and achieved_warps is not None:
            achieved_pct = achieved_warps * 100.0 / max_warps
    # The device's warp slots as the rules read them: given, else from the filled warps/pct pairs.
    device_max: float | None = float(inputs.max_warps_per_sm) if inputs.max_warps_per_sm else None
    if device_max is None:
        for warps, pct in ((theoretical_warps, theoretical_pct), (achieved_warps, achieved_pct)):
            if warps and pct:
                device_max = warps * 100.0 / pct
                break
    return OccupancyView(
        achieved_warps=achieved_warps,
        achieved_pct=achieved_pct,
        achieved_source=achieved_source,
        theoretical_warps=theoretical_warps,
        theoretical_pct=theoretical_pct,
        theoretical_source=theoretical_source,
        device_max_warps=device_max,
    )


def build_context(inputs: ClassificationInputs) -> RuleContext:
    """The rules' one context for a launch, from what the engine measured."""
    m = inputs.metrics if "name" in inputs.metrics.columns else pl.DataFrame()
    return RuleContext(
        metrics=m,
        units=tuple(unit_utilizations(m)) if not m.is_empty() else (),
        stalls=stall_breakdown(m),
        occupancy=_occupancy(inputs, m),
        trace=TraceStats(
            mean_warp_latency_ns=inputs.mean_warp_latency_ns,
            throughput_warps_per_ns_per_sm=inputs.throughput_warps_per_ns_per_sm,
            mean_occupancy_warps_per_sm=inputs.trace_mean_occupancy_warps_per_sm,
            tail_fraction=inputs.tail_fraction,
            block_imbalance_spread=inputs.block_imbalance_spread,
            lost_to_block_gaps_warps_per_sm=inputs.lost_to_block_gaps_warps_per_sm,
            lost_to_end_spread_warps_per_sm=inputs.lost_to_end_spread_warps_per_sm,
            sm_idle_fraction=inputs.trace_sm_idle_fraction,
            span_ns=inputs.trace_span_ns,
            event_duration_ns=inputs.event_duration_ns,
        ),
        sweep=inputs.sweep,
        device=DeviceFacts(
            max_warps_per_sm=inputs.max_warps_per_sm, sm_count=inputs.sm_count, grid_blocks=inputs.grid_blocks
        ),
        ceilings=inputs.ceilings,
    )


def _judged_ceilings(section: LaunchCeilings | None, outcome: verdict.Outcome) -> LaunchCeilings | None:
    """The section with the ceiling the verdict used as `judged_by`."""
    if section is None:
        return None
    judged = outcome.judged_by
    chosen = next((u for u in section.units if judged is not None and u.unit == judged.unit), None)
    return replace(section, judged_by=chosen)


def classify(inputs: ClassificationInputs) -> Classification:
    """The latency- vs throughput-bound verdict for one launch, with flags and its findings as data."""
    ctx = build_context(inputs)
    outcome = verdict.run(ctx)
    ranked = [
        RankedFinding(_KINDS[f.id], f.sm_time_fraction or 0.0, "", f.id, f.values, f.metrics) for f in outcome.ranked
    ]
    return Classification(
        mode=outcome.mode,
        limiter=outcome.limiter,
        flags=outcome.flags,
        evidence=[],
        advice=[],
        needed_occupancy_warps_per_sm=outcome.needed_occupancy_warps_per_sm,
        utilization=list(ctx.units),
        stalls=ctx.stalls,
        findings=ranked,
        tied_limiters=list(outcome.tied),
        nsight_rules=list(outcome.nsight),
        rule_findings=list(outcome.findings),
        ceilings=_judged_ceilings(inputs.ceilings, outcome),
    )
