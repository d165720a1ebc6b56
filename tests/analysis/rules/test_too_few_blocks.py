"""Fewer blocks than one wave (or than SMs) leave SMs empty."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, texts
from tracekit.analysis.rules import too_few_blocks
from tracekit.analysis.rules.base import DeviceFacts


def test_a_fifth_of_a_wave_fires() -> None:
    found = too_few_blocks.apply(context({"launch__waves_per_multiprocessor": 0.18, "launch__grid_size": 50}))
    assert flags(found) == ["too-few-blocks"] and found[0].get("waves") == 0.18
    assert "50 blocks fill only 0.18 of one wave" in texts(found)


def test_fewer_blocks_than_sms_from_the_grid() -> None:
    found = too_few_blocks.apply(context(device=DeviceFacts(sm_count=132, grid_blocks=64)))
    assert "are fewer than the 132 SMs" in texts(found)


def test_several_waves_do_not_fire() -> None:
    assert too_few_blocks.apply(context({"launch__waves_per_multiprocessor": 3.0})) == []
    assert too_few_blocks.apply(context(device=DeviceFacts(sm_count=132, grid_blocks=1024))) == []
