"""Shared-memory bank conflicts: conflicts per wavefront."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, texts
from tracekit.analysis.rules import bank_conflicts

CONFLICTS, WAVEFRONTS = (
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
)


def test_conflicts_on_30_percent_of_wavefronts_fire() -> None:
    found = bank_conflicts.apply(context({CONFLICTS: 300, WAVEFRONTS: 1000}))
    assert flags(found) == ["shared-bank-conflicts"] and found[0].get("share") == 0.3
    assert "300 of 1,000 wavefronts (30%" in texts(found)


def test_few_conflicts_do_not_fire() -> None:
    assert bank_conflicts.apply(context({CONFLICTS: 50, WAVEFRONTS: 1000})) == []
    assert bank_conflicts.apply(context({WAVEFRONTS: 1000})) == []
