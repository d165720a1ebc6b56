"""Idle SM time: a tail (flagged, and a ranked cost) unless the limiter explains it."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, ids, texts
from tracekit.analysis.rules import idle_sms
from tracekit.analysis.rules.base import TraceStats, VerdictState

CYCLES = {"sm__cycles_active.avg": 600.0, "sm__cycles_elapsed.avg": 1000.0}


def test_40_percent_idle_is_a_tail() -> None:
    ctx = context(CYCLES)
    found = idle_sms.apply(ctx)
    assert flags(found) == ["tail-effect"] and found[0].get("idle") == 0.4
    assert "SMs were idle 40% of the elapsed SM time (sm__cycles_active.avg / sm__cycles_elapsed.avg)" in texts(found)
    cost = idle_sms.cost(ctx)
    assert cost is not None and cost.sm_time_fraction == 0.4


def test_idle_time_of_the_block_launch_rate_is_the_limiters() -> None:
    ctx = context(CYCLES, state=VerdictState("throughput-bound", "block-launch"))
    found = idle_sms.apply(ctx)
    assert ids(found) == ["idle-sms.idle-explained"] and flags(found) == [] and idle_sms.cost(ctx) is None


def test_busy_sms_do_not_fire() -> None:
    ctx = context(trace=TraceStats(sm_idle_fraction=0.05))
    assert idle_sms.apply(ctx) == []
    cost = idle_sms.cost(ctx)
    assert cost is not None and cost.sm_time_fraction == 0.05
