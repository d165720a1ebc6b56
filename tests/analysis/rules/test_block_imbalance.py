"""Uneven blocks cost time only where SMs sit idle before the launch ends."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, ids, texts
from tracekit.analysis.rules import block_imbalance
from tracekit.analysis.rules.base import TraceStats


def test_spread_with_idle_sms_fires() -> None:
    found = block_imbalance.apply(context(trace=TraceStats(block_imbalance_spread=1.5, sm_idle_fraction=0.35)))
    assert flags(found) == ["block-imbalance"] and found[0].get("spread") == 1.5


def test_spread_on_a_busy_gpu_costs_no_time() -> None:
    found = block_imbalance.apply(context(trace=TraceStats(block_imbalance_spread=1.5, sm_idle_fraction=0.05)))
    assert ids(found) == ["block-imbalance.free"] and flags(found) == []
    assert "the spread costs no time" in texts(found)
    assert block_imbalance.apply(context(trace=TraceStats(block_imbalance_spread=0.2, sm_idle_fraction=0.5))) == []
