"""DRAM at 60-80% with memory stalls at full occupancy: memory-bound in gradual saturation (Volkov ch. 3)."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, ids, texts, unit
from tracekit.analysis.rules import gradual_saturation
from tracekit.analysis.rules.base import OccupancyView

MEMORY_STALLS = {"long_scoreboard": 90.0, "wait": 2.0, "selected": 1.0}
FULL = OccupancyView(achieved_warps=58.0, theoretical_warps=64.0)


def test_dram_at_65_percent_with_memory_stalls_is_the_bound() -> None:
    found = gradual_saturation.apply(context(units=(unit("DRAM", "dram", 65.0),), stalls=MEMORY_STALLS, occupancy=FULL))
    assert ids(found) == ["gradual-saturation.memory"] and found[0].limiter == "dram"
    assert "gradual saturation" in texts(found)


def test_half_occupancy_or_compute_stalls_do_not_fire() -> None:
    half = OccupancyView(achieved_warps=30.0, theoretical_warps=64.0)
    units = (unit("DRAM", "dram", 65.0),)
    assert gradual_saturation.apply(context(units=units, stalls=MEMORY_STALLS, occupancy=half)) == []
    math_stalls = {"math_pipe_throttle": 9.0, "long_scoreboard": 1.0, "selected": 1.0}
    assert gradual_saturation.apply(context(units=units, stalls=math_stalls, occupancy=FULL)) == []
    assert gradual_saturation.apply(context(units=(unit("DRAM", "dram", 50.0),), stalls=MEMORY_STALLS)) == []
