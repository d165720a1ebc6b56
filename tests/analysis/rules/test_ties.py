"""Units within 5 points of the limiter are named beside it."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, texts, unit
from tracekit.analysis.rules import ties


def test_a_unit_within_five_points_is_tied() -> None:
    units = (unit("fma pipe", "fma", 94.0), unit("issue slots", "issue", 99.0), unit("DRAM", "dram", 10.0))
    found = ties.tied(units, units[0])
    assert [u.limiter for u in ties.tied_units(units, units[0])] == ["issue"]
    assert "Within 5 points of the limiter, fma pipe at 94%, also: issue slots 99%" in texts(found)


def test_a_unit_six_points_away_is_not_tied() -> None:
    units = (unit("DRAM", "dram", 90.0), unit("L2", "l2", 84.0))
    assert ties.tied(units, units[0]) == [] and ties.apply(context(units=units)) == []
