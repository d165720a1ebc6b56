"""Blocks arriving at 70% or more of the SMs' block launch rate (one per ~80 ns per SM) bound the launch."""

from __future__ import annotations

import pytest

from tests.analysis.rules.ctx import A100, ceilings, context, flags, texts
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


def test_judged_against_the_measured_launch_rate_of_the_block_size() -> None:
    # tiny_blocks_launch: 135,168 64-thread blocks on 132 SMs in 83.97 us, the H100's measured 12.19 M blocks/s per SM.
    blocks, span = 135168, 83970.0
    section = ceilings(duration_ns=span, grid_blocks=blocks, threads_per_block=64)
    ctx = context(
        device=DeviceFacts(sm_count=132, grid_blocks=blocks), trace=TraceStats(span_ns=span), ceilings=section
    )
    found = block_launch_rate.apply(ctx)
    name = "block_launch_per_s_per_sm.64"  # the measured rate of 64-thread blocks
    assert flags(found) == ["block-launch-rate"] and found[0].get("ceiling_ceiling_name") == name
    launch_ns, share = found[0].get("launch_ns_per_sm"), found[0].get("share")
    rate = found[0].get("ceiling_ceiling_value")
    assert isinstance(rate, float) and 11.5e6 < rate < 13e6  # ~82 ns per block
    assert isinstance(launch_ns, float) and launch_ns == pytest.approx(1e9 / rate, rel=1e-9)
    assert isinstance(share, float) and share == pytest.approx(launch_ns / (span * 132 / blocks))
    assert 0.95 < share < 1.01  # at the measured rate (or a real launch's, where one ran faster: issue 26)
    assert " Mblocks/s per SM, the measured rate on this GPU, measured: tracekit/ceilings/" in texts(found)


def test_without_a_profile_the_assumed_80_ns_is_named_as_such() -> None:
    section = ceilings(
        device=A100, cc="8.0", sm_count=108, duration_ns=12450.0, grid_blocks=16384, threads_per_block=64
    )
    ctx = context(
        device=DeviceFacts(sm_count=132, grid_blocks=16384), trace=TraceStats(span_ns=12450.0), ceilings=section
    )
    found = block_launch_rate.apply(ctx)
    assert found[0].get("launch_ns_per_sm") == 80.0
    assert "about one block per 80 ns (assumed: no measured profile for NVIDIA A100-SXM4-80GB)" in texts(found)
