"""Which launches form an occupancy sweep, once: the rule every path applies before fitting min(n / L, B).

A sweep is one kernel at one problem size on one device (`KernelKey.sweep_family`), run at different occupancies
(the knobs: block size, registers, shared memory per block). A fit needs points at MIN_OCCUPANCIES or more
distinct occupancies spanning at least MIN_SPAN: many launches at nearly one occupancy are run-to-run noise, and a
model fitted to noise is worse than none. A profiled launch whose counters a trace borrowed is the same run as the
trace: the trace's measured point stands for both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from tracekit.analysis.sweep import SweepFit, fit_occupancy_sweep, measured_levels
from tracekit.analysis.types import LeftOut, Sweep, SweepFamily, SweepOutcome, SweepPoint
from tracekit.errors import TracekitError

MIN_OCCUPANCIES = 3
MIN_SPAN = 2.0  # highest / lowest occupancy


@dataclass(frozen=True)
class MeasuredPoint:
    launch_id: int
    occupancy_warps_per_sm: float
    throughput_warps_per_ns_per_sm: float
    source: str  # "trace" or "counters"


SAME_RUN_RELATIVE = 1e-6  # one run's figures read from two exports (raw page, details page) differ by rounding only


def same_measurement(a: MeasuredPoint, b: MeasuredPoint) -> bool:
    """Whether two points are one run seen twice (the same report imported as `.ncu-rep` and as its CSV pages):
    counted twice, one run would weigh double in the fit."""
    return math.isclose(a.occupancy_warps_per_sm, b.occupancy_warps_per_sm, rel_tol=SAME_RUN_RELATIVE) and math.isclose(
        a.throughput_warps_per_ns_per_sm, b.throughput_warps_per_ns_per_sm, rel_tol=SAME_RUN_RELATIVE
    )


def distinct_occupancies(values: list[float]) -> list[float]:
    """The occupancy levels among `values` (`sweep.measured_levels`: closer than LEVEL_RELATIVE is one level)."""
    return [level for level, _ in measured_levels(values, [0.0] * len(values))] if values else []


def fit_family(
    points: list[MeasuredPoint], left_out: list[LeftOut], family_size: int
) -> tuple[SweepFit | None, Sweep | None, SweepFamily]:
    """The fit over one family's points, its result section, and what was (not) fitted."""
    ids = tuple(p.launch_id for p in points)
    levels = tuple(distinct_occupancies([p.occupancy_warps_per_sm for p in points]))
    span = levels[-1] / levels[0] if levels else 0.0

    def family(outcome: SweepOutcome) -> SweepFamily:
        return SweepFamily(outcome, family_size, len(points), levels)

    if len(levels) < MIN_OCCUPANCIES or span < MIN_SPAN:
        return None, None, family(SweepOutcome.TOO_FEW_OCCUPANCIES)
    frame = pl.DataFrame(
        {
            "occupancy_warps_per_sm": [p.occupancy_warps_per_sm for p in points],
            "throughput": [p.throughput_warps_per_ns_per_sm for p in points],
        }
    )
    try:
        fit = fit_occupancy_sweep(frame)
    except TracekitError:
        return None, None, family(SweepOutcome.FIT_FAILED)
    by_value = {(p.occupancy_warps_per_sm, p.throughput_warps_per_ns_per_sm): p.launch_id for p in points}
    fitted = tuple(
        SweepPoint(
            launch_id=by_value.get((row["occupancy_warps_per_sm"], row["throughput"])),
            occupancy_warps_per_sm=row["occupancy_warps_per_sm"],
            throughput=row["throughput"],
            predicted_throughput=row.get("predicted_throughput"),
            regime=row.get("regime"),
        )
        for row in fit.points.to_dicts()
    )
    section = Sweep(
        latency_ns=fit.latency,
        throughput_bound_warps_per_ns_per_sm=fit.throughput_bound,
        needed_occupancy_warps_per_sm=fit.needed_occupancy_warps_per_sm,
        knee_gap_fraction=fit.knee_gap_fraction,
        residual_rms=fit.residual_rms,
        points=fitted,
        launch_ids=ids,
        occupancy_levels_warps_per_sm=levels,
        left_out=tuple(left_out),
        measured_max_throughput=fit.measured_max_throughput,
        occupancy_at_90pct_warps_per_sm=fit.occupancy_at_90pct_warps_per_sm,
        occupancy_at_95pct_warps_per_sm=fit.occupancy_at_95pct_warps_per_sm,
        plateau_reached=fit.plateau_reached,
        last_step_gain_fraction=fit.last_step_gain_fraction,
    )
    return fit, section, family(SweepOutcome.FITTED)
