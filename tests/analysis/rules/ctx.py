"""Small hand-made rule contexts: a launch's counters as Store.metrics rows, units, stalls, occupancy, trace."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import polars as pl

from tracekit.analysis.rules.base import (
    DeviceFacts,
    Finding,
    OccupancyView,
    RuleContext,
    TraceStats,
    UnitUtilization,
    VerdictState,
)
from tracekit.analysis.rules.render import advice, sentence
from tracekit.analysis.stalls import stall_breakdown

COLUMNS = ["launch_id", "section", "name", "unit", "value", "text_value", "kind"]


def frame(rows: Mapping[str, float], texts: dict[str, tuple[str, float | None]] | None = None) -> pl.DataFrame:
    """Metric rows (name -> value), and text rows (name -> (text, value)) such as Nsight's `rule:<Name>`."""
    data: list[tuple[Any, ...]] = [(1, None, name, None, float(value), None, "float") for name, value in rows.items()]
    data += [(1, None, name, None, value, text, "string") for name, (text, value) in (texts or {}).items()]
    return pl.DataFrame(data, schema=COLUMNS, orient="row")


def unit(label: str, limiter: str, pct: float, metric: str | None = None) -> UnitUtilization:
    return UnitUtilization(label, limiter, metric or f"{limiter}__throughput.avg.pct_of_peak", pct)


def stall(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


def context(
    metrics: Mapping[str, float] | None = None,
    units: tuple[UnitUtilization, ...] = (),
    stalls: Mapping[str, float] | None = None,
    occupancy: OccupancyView | None = None,
    trace: TraceStats | None = None,
    device: DeviceFacts | None = None,
    state: VerdictState | None = None,
    texts: dict[str, tuple[str, float | None]] | None = None,
    **other: Any,
) -> RuleContext:
    """A context from plain numbers: `stalls` are reasons -> cycles per issued instruction."""
    rows = dict(metrics or {})
    rows.update({stall(reason): cycles for reason, cycles in (stalls or {}).items()})
    m = frame(rows, texts) if rows or texts else pl.DataFrame()
    ctx = RuleContext(
        metrics=m,
        units=tuple(sorted(units, key=lambda u: -u.pct)),
        stalls=stall_breakdown(m),
        occupancy=occupancy or OccupancyView(),
        trace=trace or TraceStats(),
        device=device or DeviceFacts(),
        state=state or VerdictState(),
    )
    return replace(ctx, **other) if other else ctx


def ids(found: list[Finding]) -> list[str]:
    return [f.id for f in found]


def flags(found: list[Finding]) -> list[str]:
    return [f.flag for f in found if f.flag]


def texts(found: list[Finding]) -> str:
    """Every sentence and piece of advice of the findings (each must render)."""
    out = [s for f in found if (s := sentence(f))]
    out += [advice(a, f) for f in found for a in f.advice]
    return "\n".join(out)
