"""Blocks arriving at 70% or more of the SMs' block launch rate (one per ~80 ns per SM) bound the launch."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, texts
from tracekit.analysis.rules import block_launch_rate
from tracekit.analysis.rules.base import DeviceFacts, TraceStats


def test_tiny_blocks_arrive_at_the_launch_rate() -> None:
    # 16,384 blocks on 132 SMs in 12.45 us: one block per SM every ~100 ns = 80% of the rate.
    ctx = context(device=DeviceFacts(sm_count=132, grid_blocks=16384), trace=TraceStats(span_ns=12450.0))
    found = block_launch_rate.apply(ctx)
    assert flags(found) == ["block-launch-rate"] and found[0].limiter == "block-launch"
    share = found[0].get("share")
    assert isinstance(share, float) and abs(share - 80 / (12450 * 132 / 16384)) < 1e-12
    assert "16,384 blocks on 132 SMs in 12.45 µs" in texts(found)


def test_long_blocks_do_not_fire() -> None:
    ctx = context(device=DeviceFacts(sm_count=132, grid_blocks=264), trace=TraceStats(span_ns=1e6))
    assert block_launch_rate.apply(ctx) == []
    assert block_launch_rate.rate(context()) is None
