"""Barrier stalls: a third or more of the stalled cycles at __syncthreads."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, texts
from tracekit.analysis.rules import barrier_stalls


def test_barrier_share_fires() -> None:
    found = barrier_stalls.apply(context(stalls={"barrier": 6.0, "long_scoreboard": 4.0, "selected": 1.0}))
    assert flags(found) == ["barrier-stalls"] and found[0].get("share") == 0.6
    assert "at barriers 6 of 10 stalled cycles per issued instruction (60%" in texts(found)


def test_few_barrier_stalls_do_not_fire() -> None:
    assert barrier_stalls.apply(context(stalls={"barrier": 1.0, "long_scoreboard": 9.0, "selected": 1.0})) == []
    assert barrier_stalls.apply(context()) == []
