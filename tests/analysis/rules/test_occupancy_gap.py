"""Achieved occupancy under 80% of the theoretical is a gap; with no finding explaining it, that is said."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, ids, texts
from tracekit.analysis.rules import occupancy_gap
from tracekit.analysis.rules.base import Finding, OccupancyView

GAP = OccupancyView(30.0, 46.875, "given", 64.0, 100.0, "calculator")


def test_a_gap_without_a_cause() -> None:
    ctx = context(occupancy=GAP)
    found = occupancy_gap.apply(ctx)
    assert ids(found) == ["occupancy-gap.gap"]
    assert "Achieved occupancy is 30 warps per SM (46.9%, given), below the theoretical 64 (100%" in texts(found)
    assert ids(occupancy_gap.unexplained(ctx, found)) == ["occupancy-gap.unexplained"]
    tail = Finding("trace-tail.tail", "trace-tail", "trace-tail.tail")
    assert occupancy_gap.unexplained(ctx, [tail]) == []


def test_near_theoretical_is_no_gap() -> None:
    ctx = context(occupancy=OccupancyView(60.0, theoretical_warps=64.0))
    assert occupancy_gap.apply(ctx) == [] and occupancy_gap.unexplained(ctx, []) == []
