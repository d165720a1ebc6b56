"""Units within a few points of the limiter are named beside it, as Nsight Compute names ties.

Hardware reason: counters of different units are sampled over the same interval with their own peaks; a gap of a
few points between two units is within what changes from run to run, so either may be the bound. Reference:
Nsight Compute Kernel Profiling Guide, "GPU Speed Of Light Throughput" (the breakdown tables list the units).
"""

from __future__ import annotations

from collections.abc import Iterable

from tracekit.analysis.rules.base import Finding, RuleContext, UnitUtilization, specific, unit, unit_values, values

RULE_ID = "tied-limiters"
INPUTS = ("units", "state")
FLAGS: tuple[str, ...] = ()  # the flags it can raise
# Units within this many percentage points of the limiter are named beside it.
TIE_POINTS = 5.0


def tied_units(units: Iterable[UnitUtilization], chosen: UnitUtilization) -> list[UnitUtilization]:
    return [u for u in specific(units) if u is not chosen and abs(u.pct - chosen.pct) <= TIE_POINTS]


def tied(units: Iterable[UnitUtilization], chosen: UnitUtilization) -> list[Finding]:
    units = tuple(units)
    found = tied_units(units, chosen)
    if not found:
        return []
    items = [v for i, u in enumerate(found) for v in unit_values(f"tied{i}", u)]
    return [
        Finding(
            "tied-limiters.tied",
            RULE_ID,
            "tied-limiters.tied",
            (*unit_values("unit", chosen), *items, *values(("count", len(found), "count"), ("points", TIE_POINTS))),
            metrics=tuple(u.metric for u in (chosen, *found)),
        )
    ]


def apply(ctx: RuleContext) -> list[Finding]:
    """Ties with the verdict's limiter (or, before a verdict, with the busiest specific unit)."""
    chosen = unit(ctx.units, ctx.state.limiter) if ctx.state.limiter else next(iter(specific(ctx.units)), None)
    return tied(ctx.units, chosen) if chosen is not None else []
