"""Warp slots lost within and between blocks, flagged when occupancy is what a latency-bound launch lacks."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, ids, texts
from tracekit.analysis.rules import lost_occupancy
from tracekit.analysis.rules.base import OccupancyView, TraceStats, VerdictState

TRACE = TraceStats(lost_to_end_spread_warps_per_sm=8.0, lost_to_block_gaps_warps_per_sm=2.0)
OCC = OccupancyView(60.0, theoretical_warps=64.0)  # no gap: only a large loss is told


def test_latency_bound_launch_losing_an_eighth_of_its_slots() -> None:
    found = lost_occupancy.apply(context(trace=TRACE, occupancy=OCC, state=VerdictState("latency-bound")))
    assert ids(found) == ["lost-occupancy.end-spread"] and flags(found) == ["block-imbalance"]
    assert "loses 8 warps per SM of occupancy to finished warps holding their slot" in texts(found)


def test_throughput_bound_launch_is_told_but_not_flagged() -> None:
    found = lost_occupancy.apply(context(trace=TRACE, occupancy=OCC, state=VerdictState("throughput-bound")))
    assert ids(found) == ["lost-occupancy.end-spread"] and flags(found) == []
    small = TraceStats(lost_to_end_spread_warps_per_sm=1.0)
    assert lost_occupancy.apply(context(trace=small, occupancy=OCC, state=VerdictState("latency-bound"))) == []
