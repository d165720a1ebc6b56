"""The one place that decides mode and limiter: bound rules in order, then the stall split; findings ranked."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, unit
from tracekit.analysis.rules import verdict
from tracekit.analysis.rules.base import OccupancyView

QUIET = (unit("DRAM", "dram", 35.0), unit("fma pipe", "fma", 12.0))


def test_a_saturated_unit_decides_before_the_stalls() -> None:
    outcome = verdict.run(
        context(units=(unit("DRAM", "dram", 90.0),), stalls={"long_scoreboard": 9.0, "selected": 1.0})
    )
    assert (outcome.mode, outcome.limiter) == ("throughput-bound", "dram")
    assert [f.id for f in outcome.ranked] == ["verdict.limiter"] and outcome.ranked[0].sm_time_fraction == 1.0


def test_quiet_units_with_latency_stalls_are_latency_bound() -> None:
    ctx = context(units=QUIET, stalls={"long_scoreboard": 9.0, "selected": 1.0}, occupancy=OccupancyView(16.0))
    outcome = verdict.run(ctx)
    assert (outcome.mode, outcome.limiter, outcome.reason) == ("latency-bound", None, None)
    assert outcome.needed_occupancy_warps_per_sm == 16.0 * 100 / 35.0


def test_quiet_units_with_other_stalls_are_undetermined_and_say_why() -> None:
    outcome = verdict.run(context(units=QUIET, stalls={"not_selected": 9.0, "selected": 1.0}))
    assert outcome.mode == "undetermined" and outcome.reason is not None
    assert outcome.findings[0].id == "verdict.reason-bursts"


def test_no_metrics_is_undetermined() -> None:
    outcome = verdict.run(context())
    assert outcome.mode == "undetermined" and outcome.reason is not None and outcome.flags == []
