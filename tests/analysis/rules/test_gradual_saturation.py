"""DRAM at 60-80% with memory stalls at full occupancy: memory-bound in gradual saturation (Volkov ch. 3)."""

from __future__ import annotations

from dataclasses import replace

from tests.analysis.rules.ctx import A100, H100, ceilings, context, ids, texts, unit
from tracekit.analysis.rules import gradual_saturation
from tracekit.analysis.rules.base import OccupancyView
from tracekit.ceilings import ceilings_for

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


def test_scattered_dram_at_75_percent_of_its_ceiling_is_in_gradual_saturation_below_60_percent_of_nominal() -> None:
    # scattered sectors at 75% of the H100's scattered ceiling (~2.1-2.2 TB/s): below 50% of nominal
    scattered = ceilings_for(H100, "9.0", 132).dram_random_sector_bytes_per_s
    assert scattered is not None
    section = ceilings(dram_bytes_per_s=0.75 * scattered.value, bytes_per_sector=4.0)
    pct = 100 * 0.75 * scattered.value / 3.35e12
    assert pct < 50.0
    ctx = context(units=(unit("DRAM", "dram", pct),), stalls=MEMORY_STALLS, occupancy=FULL, ceilings=section)
    found = gradual_saturation.apply(ctx)
    assert ids(found) == ["gradual-saturation.memory"] and found[0].limiter == "dram"
    loaded, unloaded = found[0].get("loaded_latency_ns"), found[0].get("unloaded_latency_ns")
    assert isinstance(loaded, float) and isinstance(unloaded, float) and 1.1 < loaded / unloaded < 1.5
    text = texts(found)
    assert "75% of what scattered 32-byte sectors reach on this GPU" in text
    assert "the calibrated loaded-latency curve puts DRAM latency at" in text
    # without a profile the nominal 60% rule decides: 46.7% is not gradual saturation
    nominal = ceilings(device=A100, cc="8.0", sm_count=108, dram_bytes_per_s=0.467 * 2.039e12, bytes_per_sector=4.0)
    assert gradual_saturation.apply(replace(ctx, ceilings=nominal)) == []


def test_without_a_profile_the_sentence_says_its_peaks_are_nominal() -> None:
    nominal = ceilings(device=A100, cc="8.0", sm_count=108, dram_bytes_per_s=0.65 * 2.039e12)
    ctx = context(units=(unit("DRAM", "dram", 65.0),), stalls=MEMORY_STALLS, occupancy=FULL, ceilings=nominal)
    found = gradual_saturation.apply(ctx)
    assert found[-1].limiter == "dram"
    assert "long_scoreboard, lg_throttle, drain), at the launch's theoretical occupancy" in texts(found)
    assert "rather than short of warps (against nominal peaks: no measured profile for NVIDIA A100-SXM4-80GB)." in (
        texts(found)
    )
