"""A latency-bound launch short of warps: low-occupancy where more fit, needs-ilp where none can."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, texts
from tracekit.analysis.rules import low_occupancy
from tracekit.analysis.rules.base import OccupancyView, VerdictState

LATENCY = VerdictState("latency-bound", needed_occupancy_warps_per_sm=40.0)


def test_theoretical_below_needed_and_raisable() -> None:
    occ = OccupancyView(8.0, 12.5, "given", 8.0, 12.5, "calculator", device_max_warps=64.0)
    found = low_occupancy.apply(context(occupancy=occ, state=LATENCY))
    assert flags(found) == ["low-occupancy"]
    assert "is below the ~40 needed" in texts(found) and "Raise the theoretical occupancy (12.5% of" in texts(found)


def test_needed_beyond_the_device_needs_ilp() -> None:
    occ = OccupancyView(60.0, theoretical_warps=64.0, device_max_warps=64.0)
    state = VerdictState("latency-bound", needed_occupancy_warps_per_sm=200.0)
    assert flags(low_occupancy.apply(context(occupancy=occ, state=state))) == ["needs-ilp"]


def test_enough_warps_or_not_latency_bound_do_not_fire() -> None:
    occ = OccupancyView(48.0, theoretical_warps=64.0, device_max_warps=64.0)
    assert flags(low_occupancy.apply(context(occupancy=occ, state=LATENCY))) == []
    assert low_occupancy.apply(context(occupancy=occ, state=VerdictState("throughput-bound"))) == []
