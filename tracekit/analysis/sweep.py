"""Fit an occupancy sweep to Volkov's min(n / L, B): throughput grows with warps until a throughput bound.

With n warps per SM each taking latency L per unit of work, Little's law gives throughput n / L while no unit is
saturated, and the bound B once one is. The knee n* = L * B is the occupancy needed to hide latency. Real
kernels approach B gradually (queueing near saturation), so measured points near the knee fall below the
min() model; the fit reports how far as `knee_gap_fraction`.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.analysis.model import model_throughput
from tracekit.errors import TracekitError

__all__ = ["SweepFit", "fit_occupancy_sweep", "measured_levels", "model_throughput", "occupancy_reaching"]

OCCUPANCY = "occupancy_warps_per_sm"
THROUGHPUT = "throughput"
KNEE_WINDOW_FACTOR = 2.0  # points within a factor 2 of the knee count as "near the knee" for the gap
# Measured points closer than this (relative) in occupancy are one occupancy level (run-to-run noise, or a trace
# and its profiled twin); each level's throughput is the mean of its points.
LEVEL_RELATIVE = 0.05
# The plateau is reached when a lower measured occupancy already gives this share of the highest throughput.
PLATEAU_SHARE = 0.95


@dataclass(frozen=True)
class SweepFit:
    """The fitted min(n / L, B) model and the points with the model's prediction for each."""

    latency: float | None  # L, in the time unit of the throughput's denominator (None: no point below the knee)
    throughput_bound: float | None  # B, in the throughput's unit (None: no point on the plateau)
    needed_occupancy_warps_per_sm: float | None  # the knee n* = L * B
    knee_gap_fraction: float | None  # largest (model - measured) / model near the knee; None: no point near it
    residual_rms: float  # root mean square of measured - predicted, in the throughput's unit
    points: pl.DataFrame  # occupancy_warps_per_sm, throughput, predicted_throughput, regime
    # What the measured points say, beside the model (Volkov's knee is an idealization: real kernels approach the
    # bound gradually, so advice follows the measurements):
    measured_max_throughput: float | None = None  # the highest throughput of any measured occupancy level
    occupancy_at_90pct_warps_per_sm: float | None = None  # where measured throughput first reaches 90% of the max
    occupancy_at_95pct_warps_per_sm: float | None = None  # ... 95% (linear between measured levels)
    plateau_reached: bool | None = None  # a lower measured level already gives 95% of the highest throughput
    last_step_gain_fraction: float | None = None  # throughput gain from the second-highest to the highest level
    last_step_warps_per_sm: tuple[float, float] | None = None  # those two occupancies


def _predict(n: float, slope: float | None, bound: float | None) -> float:
    return model_throughput(n, 1.0 / slope if slope else None, bound) or 0.0


def _sse(xs: list[float], ys: list[float], slope: float | None, bound: float | None) -> float:
    return sum((_predict(x, slope, bound) - y) ** 2 for x, y in zip(xs, ys, strict=True))


def _fit(xs: list[float], ys: list[float]) -> tuple[float | None, float | None]:
    """Least squares over (slope = 1/L, B): try every split of the sorted points into a rising part and a
    plateau, fit each part in closed form, keep the pair with the smallest error of the true min() model."""
    best: tuple[float, float | None, float | None] | None = None
    for split in range(len(xs) + 1):
        rising_x, rising_y = xs[:split], ys[:split]
        plateau_y = ys[split:]
        slope = (
            sum(x * y for x, y in zip(rising_x, rising_y, strict=True)) / sum(x * x for x in rising_x)
            if rising_x
            else None
        )
        bound = sum(plateau_y) / len(plateau_y) if plateau_y else None
        if slope is not None and slope <= 0:
            continue
        sse = _sse(xs, ys, slope, bound)
        if best is None or sse < best[0] - 1e-15 * max(1.0, best[0]):
            best = (sse, slope, bound)
    # Refine: reassign each point to the branch the fitted model puts it on and refit until stable.
    assert best is not None  # the split with no rising part always yields a candidate
    _, slope, bound = best
    for _ in range(20):
        if slope is None or bound is None:
            break
        knee = bound / slope
        rising = [(x, y) for x, y in zip(xs, ys, strict=True) if x <= knee]
        plateau = [y for x, y in zip(xs, ys, strict=True) if x > knee]
        if not rising or not plateau:
            break
        new_slope = sum(x * y for x, y in rising) / sum(x * x for x, _ in rising)
        new_bound = sum(plateau) / len(plateau)
        if _sse(xs, ys, new_slope, new_bound) >= _sse(xs, ys, slope, bound):
            break
        slope, bound = new_slope, new_bound
    # A regime no point lies strictly inside of is not measured: a "plateau" made only of points on the rising
    # line, or a "rise" made only of a point at the knee. Drop it and refit the other over all points.
    if slope is not None and bound is not None:
        knee = bound / slope
        if not any(x > knee * (1 + 1e-9) for x in xs):
            slope, bound = _line_slope(xs, ys), None
        elif not any(x < knee * (1 - 1e-9) for x in xs):
            slope, bound = None, sum(ys) / len(ys)
    return slope, bound


def _line_slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of a line through the origin."""
    return sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs)


def measured_levels(xs: list[float], ys: list[float]) -> list[tuple[float, float]]:
    """(occupancy, mean throughput) per occupancy level: sorted points closer than LEVEL_RELATIVE are one level."""
    groups: list[list[tuple[float, float]]] = []
    for x, y in sorted(zip(xs, ys, strict=True)):
        if groups and x <= groups[-1][0][0] * (1 + LEVEL_RELATIVE):
            groups[-1].append((x, y))
        else:
            groups.append([(x, y)])
    return [(sum(x for x, _ in g) / len(g), sum(y for _, y in g) / len(g)) for g in groups]


def occupancy_reaching(levels: list[tuple[float, float]], share: float) -> float | None:
    """The occupancy at which measured throughput first reaches `share` of the highest level (linear between
    neighbouring levels; the first level itself when it already does)."""
    if not levels:
        return None
    target = share * max(y for _, y in levels)
    previous: tuple[float, float] | None = None
    for x, y in levels:
        if y >= target:
            if previous is None or y == previous[1]:
                return x
            x0, y0 = previous
            return x0 + (x - x0) * (target - y0) / (y - y0)
        previous = (x, y)
    return None


def _measured_summary(xs: list[float], ys: list[float]) -> dict[str, object]:
    levels = measured_levels(xs, ys)
    top = max(y for _, y in levels)
    at_95 = occupancy_reaching(levels, PLATEAU_SHARE)
    # Reached only where a measured lower level shows it; an interpolated crossing is not a measurement.
    reached = any(y >= PLATEAU_SHARE * top for _, y in levels[:-1])
    gain = steps = None
    if len(levels) >= 2 and levels[-2][1] > 0:
        gain = levels[-1][1] / levels[-2][1] - 1
        steps = (levels[-2][0], levels[-1][0])
    return {
        "measured_max_throughput": top,
        "occupancy_at_90pct_warps_per_sm": occupancy_reaching(levels, 0.90),
        "occupancy_at_95pct_warps_per_sm": at_95,
        "plateau_reached": reached,
        "last_step_gain_fraction": gain,
        "last_step_warps_per_sm": steps,
    }


def fit_occupancy_sweep(points: pl.DataFrame) -> SweepFit:
    """Fit throughput ~ min(n / L, B) to (occupancy_warps_per_sm, throughput) points by least squares."""
    missing = [c for c in (OCCUPANCY, THROUGHPUT) if c not in points.columns]
    if missing:
        raise TracekitError(f"occupancy sweep: missing column(s) {', '.join(missing)}")
    clean = points.select(pl.col(OCCUPANCY).cast(pl.Float64), pl.col(THROUGHPUT).cast(pl.Float64)).drop_nulls()
    bad = clean.filter((pl.col(OCCUPANCY) <= 0) | (pl.col(THROUGHPUT) < 0))
    if not bad.is_empty():
        row = bad.row(0)
        raise TracekitError(f"occupancy sweep: occupancy must be > 0 and throughput >= 0, got {row}")
    clean = clean.sort(OCCUPANCY)
    if clean.get_column(OCCUPANCY).n_unique() < 2:
        raise TracekitError("occupancy sweep: need points at two or more occupancies to fit latency and bound")
    xs, ys = clean.get_column(OCCUPANCY).to_list(), clean.get_column(THROUGHPUT).to_list()
    slope, bound = _fit(xs, ys)
    latency = 1.0 / slope if slope else None
    knee = latency * bound if latency is not None and bound is not None else None
    predicted = [_predict(x, slope, bound) for x in xs]
    if bound is None:
        regime = ["latency"] * len(xs)
    elif knee is None:
        regime = ["throughput"] * len(xs)
    else:
        regime = ["latency" if x <= knee else "throughput" for x in xs]
    gap = None
    if knee is not None:
        near = [
            (p - y) / p
            for x, y, p in zip(xs, ys, predicted, strict=True)
            if knee / KNEE_WINDOW_FACTOR <= x <= knee * KNEE_WINDOW_FACTOR and p > 0
        ]
        gap = max(0.0, *near) if near else None
    residual_rms = (sum((p - y) ** 2 for p, y in zip(predicted, ys, strict=True)) / len(xs)) ** 0.5
    frame = clean.with_columns(
        pl.Series("predicted_throughput", predicted, dtype=pl.Float64), pl.Series("regime", regime, dtype=pl.Utf8)
    )
    return SweepFit(
        latency=latency,
        throughput_bound=bound,
        needed_occupancy_warps_per_sm=knee,
        knee_gap_fraction=gap,
        residual_rms=residual_rms,
        points=frame,
        **_measured_summary(xs, ys),  # type: ignore[arg-type]
    )
