"""A unit at 80% of its peak or more is the limiter; a pipe filling the issue slots is named instead of them."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, ids, texts, unit
from tracekit.analysis.rules import saturated_unit


def test_saturated_dram_is_the_limiter() -> None:
    found = saturated_unit.apply(context(units=(unit("DRAM", "dram", 91.0), unit("L2", "l2", 40.0))))
    assert ids(found) == ["saturated-unit.unit", "saturated-unit.limiter"]
    assert found[-1].limiter == "dram" and found[0].get("unit_pct") == 91.0
    assert "More occupancy will not help: DRAM is saturated" in texts(found)


def test_issue_slots_full_of_fma_name_the_fma_pipe() -> None:
    found = saturated_unit.apply(context(units=(unit("issue slots", "issue", 99.0), unit("fma pipe", "fma", 94.0))))
    assert "saturated-unit.issue-pipe" in ids(found) and found[-1].limiter == "fma"


def test_nothing_at_80_percent_does_not_fire() -> None:
    assert saturated_unit.apply(context(units=(unit("DRAM", "dram", 79.7),))) == []
