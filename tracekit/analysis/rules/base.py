"""What every rule reads and returns: one typed, frozen context per launch, and findings as data.

A rule never writes English: it returns `Finding`s (a stable id, the flag it raises, the unit it names as the
bound, the SM time it costs, its values with units, the metrics it cites, advice ids and a sentence template id),
and `tracekit.present.rules` words them when a view shows them. The verdict (`rules/verdict.py`) is the one place that
decides the mode and the limiter and ranks findings by the SM time they cost.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

from tracekit.analysis.achievable import AT_CEILING_FRACTION, AccessKind, AchievableUtilization
from tracekit.analysis.launch_ceilings import LIMITER_UNITS, LaunchCeilings
from tracekit.analysis.stalls import StallBreakdown
from tracekit.analysis.sweep import SweepFit
from tracekit.ceilings.types import NOMINAL

# Totals over other units: never the limiter when a unit inside them is measured ("shared pipe" is Volta-Hopper's
# FP64 + tensor pipe pair).
COMPOSITE_UNITS = ("sm", "memory", "shared pipe")
MEMORY_LIMITERS = ("dram", "l2", "l1/shared", "memory")
# A unit at or above this share of its peak counts as saturated. Sustained throughput rarely exceeds ~80-90% of
# the nominal peak (DRAM refresh and turnarounds, issue conflicts), so 80% is where the limit is "reached".
SATURATION_PCT = 80.0
# Gradual saturation (Volkov 2016, ch. 3): latency grows as a throughput limit is approached, so a memory unit
# well below the nominal peak can already be the bound (rules/gradual_saturation.py says how 60% was chosen).
GRADUAL_SATURATION_PCT = 60.0
# With a measured profile (issue 20): a unit at AT_CEILING_FRACTION (85%) of the achievable ceiling of its access
# pattern is saturated whatever its share of the nominal peak; gradual saturation starts at this share of it
# (rules/gradual_saturation.py says how 70% was chosen).
SATURATION_FRACTION_OF_ACHIEVABLE = AT_CEILING_FRACTION
GRADUAL_SATURATION_FRACTION_OF_ACHIEVABLE = 0.7
# Achieved occupancy below this share of theoretical is a gap worth explaining.
OCCUPANCY_GAP_FRACTION = 0.8

Scalar = float | int | str | bool | None


@dataclass(frozen=True)
class UnitUtilization:
    label: str  # "DRAM", "fma pipe"
    limiter: str  # "dram", "fma", "issue"
    metric: str  # the metric id it was read from
    pct: float  # % of peak


@dataclass(frozen=True)
class Value:
    """One number (or name) behind a finding, with its unit: `("pct", 79.7, "%")`, `("metric", "dram__...", "")`.

    Units: "%" (already percent), "fraction" (0 to 1), "ns", "B", "B/s", "warps/SM", "warps/ns/SM",
    "cycles/issue", "count", "" (a name or a plain number)."""

    name: str
    value: Scalar
    unit: str = ""


@dataclass(frozen=True)
class Finding:
    """One thing a rule found: typed data, worded by `tracekit.present.rules`."""

    id: str  # stable: "<rule id>.<what>", e.g. "coalescing.uncoalesced"
    rule: str  # the RULE_ID of the rule that found it
    template: str | None  # the sentence template (tracekit.present.rules); None: data for the verdict, no sentence
    values: tuple[Value, ...] = ()
    metrics: tuple[str, ...] = ()  # the metric ids it cites
    flag: str | None = None  # the flag it raises
    limiter: str | None = None  # the unit it names as the bound (bound rules only)
    sm_time_fraction: float | None = None  # the share of the launch's SM time it costs, when measured
    advice: tuple[str, ...] = ()  # advice ids (tracekit.present.rules), worded with this finding's values
    text: str | None = None  # its sentence, written by tracekit.present.rules when a view shows it

    def get(self, name: str) -> Scalar:
        return next((v.value for v in self.values if v.name == name), None)


def values(*items: tuple[str, Scalar, str] | tuple[str, Scalar]) -> tuple[Value, ...]:
    """`values(("pct", 79.7, "%"), ("metric", name))`: a finding's values, in order."""
    return tuple(Value(*item) for item in items)


@dataclass(frozen=True)
class OccupancyView:
    """Achieved and theoretical occupancy as the verdict reads them, with where each came from."""

    achieved_warps: float | None = None
    achieved_pct: float | None = None
    achieved_source: str | None = None
    theoretical_warps: float | None = None
    theoretical_pct: float | None = None
    theoretical_source: str | None = None
    device_max_warps: float | None = None  # the device's warp slots per SM (given, else from a warps/pct pair)

    @property
    def below_theoretical(self) -> bool:
        """Achieved occupancy under OCCUPANCY_GAP_FRACTION of the theoretical: a gap worth explaining."""
        return bool(
            self.achieved_warps is not None
            and self.theoretical_warps
            and self.achieved_warps < OCCUPANCY_GAP_FRACTION * self.theoretical_warps
        )


@dataclass(frozen=True)
class TraceStats:
    """What a warp trace (and the launch's own timing) says about the launch; all None without a trace."""

    mean_warp_latency_ns: float | None = None
    throughput_warps_per_ns_per_sm: float | None = None
    mean_occupancy_warps_per_sm: float | None = None
    tail_fraction: float | None = None  # share of the span after the first SM went idle for good
    block_imbalance_spread: float | None = None  # (p90 - p10) / median of block durations
    lost_to_block_gaps_warps_per_sm: float | None = None
    lost_to_end_spread_warps_per_sm: float | None = None
    sm_idle_fraction: float | None = None  # share of SM time in the span with no resident warp
    span_ns: float | None = None  # first warp start to last warp end
    event_duration_ns: float | None = None  # the launch's timed duration, launch overhead included


@dataclass(frozen=True)
class DeviceFacts:
    max_warps_per_sm: int | None = None
    sm_count: int | None = None
    grid_blocks: int | None = None  # blocks in the grid


@dataclass(frozen=True)
class VerdictState:
    """The verdict so far, for the rules that explain it (they run after the mode and limiter are decided)."""

    mode: str = "undetermined"
    limiter: str | None = None
    flags: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()  # advice ids given so far
    needed_occupancy_warps_per_sm: float | None = None


@dataclass(frozen=True)
class RuleContext:
    """Everything one launch offers the rules; any part may be missing (None or empty).

    A new input is one field here (with a default), filled in `classification.build_context`."""

    metrics: pl.DataFrame = field(default_factory=pl.DataFrame)  # the launch's counters (Store.metrics rows)
    units: tuple[UnitUtilization, ...] = ()  # each unit's % of peak, highest first
    stalls: StallBreakdown = field(default_factory=StallBreakdown)
    occupancy: OccupancyView = field(default_factory=OccupancyView)
    trace: TraceStats = field(default_factory=TraceStats)
    sweep: SweepFit | None = None  # the kernel's occupancy sweep: throughput against warps per SM
    device: DeviceFacts = field(default_factory=DeviceFacts)
    state: VerdictState = field(default_factory=VerdictState)
    # Each unit's rate against its nominal peak and the achievable ceiling of its access pattern (issue 20); its
    # source is "nominal" without a measured profile for the device; None without counters or ceilings.
    ceilings: LaunchCeilings | None = None


def specific(units: Iterable[UnitUtilization]) -> list[UnitUtilization]:
    """The units that are not totals over other units."""
    return [u for u in units if u.limiter not in COMPOSITE_UNITS]


def unit(units: Iterable[UnitUtilization], limiter: str) -> UnitUtilization | None:
    return next((u for u in units if u.limiter == limiter), None)


def unit_values(prefix: str, u: UnitUtilization) -> tuple[Value, ...]:
    """A unit as a finding's values: `<prefix>_label`, `<prefix>_pct` (%), `<prefix>_metric`."""
    return values((f"{prefix}_label", u.label), (f"{prefix}_pct", u.pct, "%"), (f"{prefix}_metric", u.metric))


def achievable(ctx: RuleContext, limiter: str) -> AchievableUtilization | None:
    """The unit behind a verdict limiter (`dram`, `l2`, `l1/shared`, `fma`, `fp64`, `block-launch`) against a measured
    achievable ceiling; None without a measured profile or without a measured ceiling for that unit (the nominal
    rules then judge it)."""
    section = ctx.ceilings
    name = LIMITER_UNITS.get(limiter)
    if section is None or name is None or not section.measured:
        return None
    found = section.unit(name)
    return found if found is not None and found.ceiling_source != NOMINAL else None


def closeness(ctx: RuleContext, u: UnitUtilization) -> float:
    """How near a unit is to what it can reach, as a fraction: the larger of its share of the nominal peak and of its
    measured achievable ceiling (the counters' % of peak also sees sub-units the ceilings do not measure)."""
    measured = achievable(ctx, u.limiter)
    return max(u.pct / 100.0, measured.of_achievable if measured is not None else 0.0)


def nominal_note(ctx: RuleContext) -> tuple[Value, ...]:
    """`nominal_device`: the device whose ceilings are nominal (no measured profile), for the sentences that judge
    against nominal peaks to say so; nothing with a measured profile or without ceilings."""
    return section_nominal_note(ctx.ceilings)


def section_nominal_note(section: LaunchCeilings | None) -> tuple[Value, ...]:
    """`nominal_note` of a ceilings section itself."""
    if section is None or section.measured:
        return ()
    known = section.device_name and section.device_name.strip().lower() not in ("unknown", "none")
    return (Value("nominal_device", section.device_name if known else "this device (the report does not name it)"),)


def achievable_items(prefix: str, u: AchievableUtilization) -> tuple[tuple[str, Scalar, str], ...]:
    """A unit against its ceilings as (name, value, unit) items: `<prefix>_achieved`, `_rate_unit`, `_of_nominal`,
    `_of_achievable`, `_ceiling_name`, `_ceiling_value`, `_ceiling_source`, `_pattern` (DRAM's `AccessKind`; a
    mixed one's share of scattered sectors as `_scattered_fraction` after it), `_unit`."""
    rate_unit = {"byte/s": "B/s", "flop/s": "FLOP/s", "block/s": "blocks/s"}.get(u.rate_unit, u.rate_unit)
    return (
        (f"{prefix}_unit", u.unit, ""),
        (f"{prefix}_achieved", u.achieved, rate_unit),
        (f"{prefix}_rate_unit", rate_unit, ""),
        (f"{prefix}_nominal", u.nominal, rate_unit),
        (f"{prefix}_of_nominal", u.of_nominal, "fraction"),
        (f"{prefix}_ceiling_name", u.ceiling_name, ""),
        (f"{prefix}_ceiling_value", u.ceiling_value, rate_unit),
        (f"{prefix}_of_achievable", u.of_achievable, "fraction"),
        (f"{prefix}_ceiling_source", u.ceiling_source, ""),
        (f"{prefix}_pattern", u.pattern, ""),
        *(
            [(f"{prefix}_scattered_fraction", u.scattered_fraction, "fraction")]
            if u.pattern == AccessKind.MIXED
            else []
        ),
    )


def achievable_values(prefix: str, u: AchievableUtilization) -> tuple[Value, ...]:
    """A unit against its ceilings as a finding's values (`achievable_items`)."""
    return values(*achievable_items(prefix, u))


def ceiling_note(ctx: RuleContext) -> tuple[Value, ...]:
    """What a "no unit is saturated" sentence judged against: `at_ceiling_fraction` with measured rates, else the
    nominal note."""
    section = ctx.ceilings
    if section is not None and section.measured and section.units:
        return values(("at_ceiling_fraction", SATURATION_FRACTION_OF_ACHIEVABLE, "fraction"))
    return nominal_note(ctx)
