"""Little's law: warps needed = warps now x 100 / the busiest unit's % of peak; or the sweep's knee L x B."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, ids, texts, unit
from tracekit.analysis.rules import needed_occupancy
from tracekit.analysis.rules.base import OccupancyView, TraceStats


def test_busiest_unit_at_25_percent_needs_four_times_the_warps() -> None:
    ctx = context(units=(unit("DRAM", "dram", 25.0),), occupancy=OccupancyView(16.0, device_max_warps=48.0))
    assert needed_occupancy.needed(ctx) == 64.0
    found = needed_occupancy.apply(ctx)
    assert ids(found) == ["needed-occupancy.littles-law"] and found[0].get("device_max_warps") == 48.0
    assert "No occupancy can reach that: the device holds at most 48 warps per SM" in texts(found)


def test_trace_gives_warps_in_flight() -> None:
    ctx = context(trace=TraceStats(mean_warp_latency_ns=2000.0, throughput_warps_per_ns_per_sm=0.01))
    found = needed_occupancy.apply(ctx)
    assert ids(found) == ["needed-occupancy.trace-in-flight"] and found[0].get("in_flight") == 20.0
    assert needed_occupancy.needed(ctx) is None


def test_no_occupancy_no_estimate() -> None:
    assert needed_occupancy.apply(context(units=(unit("DRAM", "dram", 25.0),))) == []
