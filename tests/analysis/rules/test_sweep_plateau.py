"""The measured sweep decides: on its plateau a limit is reached, below it throughput still grows with warps."""

from __future__ import annotations

import polars as pl

from tests.analysis.rules.ctx import context, ids, texts, unit
from tracekit.analysis.rules import sweep_plateau
from tracekit.analysis.rules.base import OccupancyView
from tracekit.analysis.sweep import SweepFit


def sweep(at_95: float, plateau: bool) -> SweepFit:
    return SweepFit(
        latency=20000.0,
        throughput_bound=0.0017,
        needed_occupancy_warps_per_sm=34.0,
        knee_gap_fraction=None,
        residual_rms=0.0,
        points=pl.DataFrame({"occupancy_warps_per_sm": [8.0, 64.0], "throughput": [0.0004, 0.0017]}),
        occupancy_at_95pct_warps_per_sm=at_95,
        plateau_reached=plateau,
    )


def test_past_the_plateau_the_busiest_unit_is_named() -> None:
    ctx = context(units=(unit("DRAM", "dram", 70.0),), sweep=sweep(40.0, True), occupancy=OccupancyView(58.0))
    found = sweep_plateau.apply(ctx)
    assert ids(found) == ["sweep-plateau.on-plateau"] and found[0].limiter == "dram"
    assert "at or past the 40 where" in texts(found)


def test_below_the_plateau_without_counters_is_still_rising() -> None:
    found = sweep_plateau.apply(context(sweep=sweep(50.0, True), occupancy=OccupancyView(16.0)))
    assert ids(found) == ["sweep-plateau.still-rising"]


def test_below_the_plateau_with_counters_does_not_fire() -> None:
    ctx = context(units=(unit("DRAM", "dram", 30.0),), sweep=sweep(50.0, True), occupancy=OccupancyView(16.0))
    assert sweep_plateau.apply(ctx) == [] and sweep_plateau.apply(context()) == []
