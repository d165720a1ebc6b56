"""Launch overhead: the timed launch beyond the warps' span, as a share of it (a ranked cost)."""

from __future__ import annotations

import pytest

from tests.analysis.rules.ctx import context, texts
from tracekit.analysis.rules import launch_overhead
from tracekit.analysis.rules.base import TraceStats


def test_overhead_is_the_time_no_warp_runs() -> None:
    found = launch_overhead.apply(context(trace=TraceStats(span_ns=8000.0, event_duration_ns=10000.0)))
    assert found[0].sm_time_fraction == pytest.approx(0.2) and found[0].get("overhead_ns") == 2000.0
    assert "2 µs of the 10 µs timed launch (20%)" in texts(found)


def test_no_timing_or_a_shorter_timing_gives_nothing() -> None:
    assert launch_overhead.apply(context(trace=TraceStats(span_ns=8000.0))) == []
    assert launch_overhead.apply(context(trace=TraceStats(span_ns=8000.0, event_duration_ns=7000.0))) == []
