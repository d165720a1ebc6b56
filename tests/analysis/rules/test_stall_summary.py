"""The stall breakdown in one sentence, and the largest reason of a latency-bound launch."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, ids, texts
from tracekit.analysis.rules import stall_summary
from tracekit.analysis.rules.base import VerdictState


def test_breakdown_and_largest_reason() -> None:
    ctx = context(stalls={"long_scoreboard": 14.0, "wait": 1.0, "selected": 1.0}, state=VerdictState("latency-bound"))
    found = stall_summary.apply(ctx)
    assert ids(found) == ["stall-summary.breakdown", "stall-summary.largest"]
    assert found[1].get("reason") == "long_scoreboard" and found[1].get("cycles_per_issue") == 14.0
    assert "The largest stall is long_scoreboard at 14 cycles" in texts(found)


def test_no_stall_counters_no_finding() -> None:
    assert stall_summary.apply(context(state=VerdictState("latency-bound"))) == []
