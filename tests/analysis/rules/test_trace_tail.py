"""The warp trace's tail: 20% or more of the launch after the first SM ran out of work."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, texts
from tracekit.analysis.rules import trace_tail
from tracekit.analysis.rules.base import TraceStats


def test_a_30_percent_tail_is_reported() -> None:
    found = trace_tail.apply(context(trace=TraceStats(tail_fraction=0.3)))
    assert found[0].get("tail") == 0.3 and "the last 30% runs on fewer SMs" in texts(found)


def test_a_short_tail_is_not() -> None:
    assert trace_tail.apply(context(trace=TraceStats(tail_fraction=0.1))) == []
