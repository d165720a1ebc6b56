"""Small hand-made rule contexts: a launch's counters as Store.metrics rows, units, stalls, occupancy, trace."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import polars as pl

from tracekit.analysis.launch_ceilings import LaunchCeilings, launch_ceilings
from tracekit.analysis.rules.base import (
    DeviceFacts,
    Finding,
    OccupancyView,
    RuleContext,
    TraceStats,
    UnitUtilization,
    VerdictState,
)
from tracekit.analysis.stalls import stall_breakdown
from tracekit.ceilings.lookup import ceilings_for
from tracekit.present.rules.sentences import advice, sentence

COLUMNS = ["launch_id", "section", "name", "unit", "value", "text_value", "kind"]
H100 = "NVIDIA H100 80GB HBM3"  # a measured profile ships for it (tracekit/ceilings/profiles/)
A100 = "NVIDIA A100-SXM4-80GB"  # none does: nominal peaks
H100_NOMINAL_DRAM = 3.35e12


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


def ceilings(
    device: str = H100,
    cc: str = "9.0",
    sm_count: int = 132,
    duration_ns: float = 1e6,
    dram_bytes_per_s: float | None = None,
    bytes_per_sector: float | None = 32.0,
    grid_blocks: int | None = None,
    threads_per_block: int | None = None,
    write_fraction: float | None = None,
) -> LaunchCeilings:
    """The ceilings section of a launch on a real device profile (the shipped H100 one, or nominal peaks), from the
    counters launch_ceilings reads: a duration, DRAM bytes (with `write_fraction` of them written, which picks the
    read:write stream ceiling; without it the best stream of any mix) and the bytes used per sector of global
    loads."""
    dram = None if dram_bytes_per_s is None else dram_bytes_per_s * duration_ns * 1e-9
    rows = {
        "gpu__time_duration.sum": duration_ns,
        "dram__bytes.sum": dram,
        "dram__bytes_read.sum": None if dram is None or write_fraction is None else dram * (1 - write_fraction),
        "dram__bytes_write.sum": None if dram is None or write_fraction is None else dram * write_fraction,
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio": bytes_per_sector,
    }
    section = launch_ceilings(
        lambda *names: next((rows[n] for n in names if rows.get(n) is not None), None),
        ceilings_for(device, cc, sm_count),
        grid_blocks,
        threads_per_block,
        sm_count,
    )
    assert section is not None
    return section
