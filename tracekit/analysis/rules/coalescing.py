"""Uncoalesced global access: more 32-byte sectors per warp request than the access width needs.

Hardware reason: a warp's global access is served in 32-byte sectors; 32 threads reading consecutive 4-byte words
need 4 sectors per request, and scattered addresses need up to 32. The extra sectors cost time only where the
memory system is busy (20% of peak or more). References: PMPP (4th ed.) ch. 6 (memory coalescing); CUDA C++ Best
Practices Guide, "Coalesced Access to Global Memory"; Nsight Compute's UncoalescedGlobalAccess rule.
"""

from __future__ import annotations

import polars as pl

from tracekit import counters as c
from tracekit.analysis.achievable import ACCESS_WIDTHS_BITS
from tracekit.analysis.achievable import ideal_sectors_per_request as width_mix_ideal
from tracekit.analysis.rules.base import Finding, RuleContext, Value, nominal_note, values
from tracekit.counters import metric, metric_row

RULE_ID = "coalescing"
INPUTS = ("metrics", "units", "ceilings")
FLAGS: tuple[str, ...] = ("uncoalesced-access",)  # the flags it can raise
# 32 threads x 4 bytes / 32-byte sectors = 4 sectors per request for coalesced 32-bit loads.
IDEAL_SECTORS_PER_REQUEST_32BIT = 4.0
UNCOALESCED_FACTOR = 1.5  # sectors per request this far above the ideal are uncoalesced
EXCESSIVE_SECTOR_FRACTION = 0.2  # or this share of sectors beyond the ideal, where Nsight counts them
# Access waste costs time only where the memory system is busy: flag it at this utilization.
WASTE_MEMORY_BUSY_PCT = 20.0


def ideal_sectors_per_request(m: pl.DataFrame) -> tuple[float, str]:
    """Sectors a fully coalesced warp request needs: 32 threads x width / 32-byte sectors (4 for 32-bit), and its
    basis ("width-mix": the instruction-weighted mean of the kernel's access widths, shared memory included, so an
    estimate; "32-bit" without them)."""
    found = {bits: metric(m, f"smsp__sass_inst_executed_op_memory_{bits}b.sum") or 0.0 for bits in ACCESS_WIDTHS_BITS}
    ideal = width_mix_ideal(found)
    return (ideal, "width-mix") if ideal is not None else (IDEAL_SECTORS_PER_REQUEST_32BIT, "32-bit")


def apply(ctx: RuleContext) -> list[Finding]:
    m = ctx.metrics
    memory_busy = max((u.pct for u in ctx.units if u.limiter in ("dram", "l2", "l1/shared")), default=None)
    excess, theoretical = metric_row(m, *c.GLOBAL_EXCESSIVE_SECTORS), metric(m, *c.GLOBAL_THEORETICAL_SECTORS)
    sectors, requests = metric_row(m, *c.GLOBAL_LOAD_SECTORS), metric_row(m, *c.GLOBAL_LOAD_REQUESTS)
    measured: tuple[Value, ...]
    if excess and theoretical:
        share = excess[1] / theoretical
        if share < EXCESSIVE_SECTOR_FRACTION:
            return []
        measured = values(
            ("basis", "excessive-sectors"),
            ("excess_share", share, "fraction"),
            ("excess_metric", excess[0]),
            ("excess_sectors", excess[1], "count"),
            ("ideal_sectors", theoretical, "count"),
        )
        cited: tuple[str, ...] = (excess[0],)
    elif sectors and requests and requests[1] > 0:
        per_request = sectors[1] / requests[1]
        ideal, basis = ideal_sectors_per_request(m)
        if per_request <= UNCOALESCED_FACTOR * ideal:
            return []
        measured = values(
            ("basis", "sectors-per-request"),
            ("sectors_per_request", per_request, "count"),
            ("sectors_metric", sectors[0]),
            ("requests_metric", requests[0]),
            ("ideal", ideal, "count"),
            ("ideal_basis", basis),
        )
        cited = (sectors[0], requests[0])
    else:
        return []
    if memory_busy is None or memory_busy >= WASTE_MEMORY_BUSY_PCT:
        return [
            Finding(
                "coalescing.uncoalesced",
                RULE_ID,
                "coalescing.uncoalesced",
                measured,
                metrics=cited,
                flag="uncoalesced-access",
                advice=("coalesce",),
            )
        ]
    quiet = (
        *values(("memory_busy_pct", memory_busy, "%"), ("busy_threshold_pct", WASTE_MEMORY_BUSY_PCT, "%")),
        *nominal_note(ctx),
    )
    return [
        Finding(
            "coalescing.uncoalesced-quiet", RULE_ID, "coalescing.uncoalesced-quiet", (*measured, *quiet), metrics=cited
        )
    ]
