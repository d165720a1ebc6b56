"""A partial last wave: (ceil(w) - w) / ceil(w) of the SM time of the waves holds no block; 20% is a tail effect."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, texts
from tracekit.analysis.rules import partial_wave

WAVES = "launch__waves_per_multiprocessor"


def test_one_and_a_quarter_waves_leave_37_5_percent_idle() -> None:
    found = partial_wave.apply(context({WAVES: 1.25}))
    assert flags(found) == ["tail-effect"] and found[0].get("idle") == 0.375
    assert "1.25 waves" in texts(found) and "37.5%" in texts(found)


def test_a_small_remainder_is_reported_but_not_flagged() -> None:
    found = partial_wave.apply(context({WAVES: 7.9}))
    assert flags(found) == [] and found[0].get("full_waves") == 8


def test_whole_waves_do_not_fire() -> None:
    assert partial_wave.apply(context({WAVES: 4.0})) == [] and partial_wave.apply(context({WAVES: 0.5})) == []
