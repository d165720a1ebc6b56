"""Volkov's latency-hiding model, written once: every prediction, sweep fit and what-if reads it from here.

- Little's law: concurrency in flight = latency x throughput, so the concurrency a unit needs to run at its bound B
  with latency L is L x B (`needed_concurrency`).
- Throughput ~ min(n / L, B) (`model_throughput`), the sharp knee of Volkov (Understanding Latency Hiding on GPUs,
  ch. 3). Real units saturate gradually: latency grows as a unit fills (queueing), so measured throughput bends
  below the knee. `soft_min_throughput` writes that as a p-norm, X = ((c / L)^-p + B^-p)^(-1/p): p -> infinity
  is the sharp knee, p = 1 is the M/M/1-like harmonic sum 1 / X = L / c + 1 / B (latency L / (1 - X / B)).
- Concurrency counts ILP as well as warps (Volkov 3.3: occupancy is not concurrency): c = warps x ILP.
- A grid runs in waves of (blocks per SM x SMs) blocks; a partial last wave and blocks of unequal length leave
  slots idle at the end (the tail), so the warps a launch keeps resident on average fall with few waves
  (`wave_residency`); blocks are started at a finite rate per SM (`launch_time_ns`), which binds for many small
  blocks.
- Where a unit's loaded-latency curve is measured (DRAM, `tracekit calibrate`), saturation needs no sharpness
  parameter: Little's law with latency that depends on throughput, X = c x b / W(X), where a warp's time W is a
  fixed part plus its memory waits at latency(X) (`loaded_latency_throughput`).

Pure functions over floats; no I/O.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Sharpness of the saturation when only one launch is measured: p = 2 sits between the harmonic (queueing) bend
# and the sharp knee; the interval spans SHARPNESS_RANGE.
DEFAULT_SHARPNESS = 2.0
SHARPNESS_RANGE = (1.5, 4.0)
# Fitted sharpness is searched over this grid (p from 0.3 to 8).
_SHARPNESS_GRID = tuple(0.3 + 0.05 * i for i in range(155))
# Block starts (the block scheduler) and the work (the SMs) run on different hardware at the same time: the slower
# binds, Volkov's sharp min for a deterministic server. A finite order would blend them as a p-norm.
LAUNCH_OVERLAP_ORDER = math.inf


def model_throughput(n: float, latency: float | None, bound: float | None) -> float | None:
    """Volkov's throughput = min(n / L, B) at n warps per SM: the sharp knee. With one branch fitted (no plateau
    measured, or no rising part) that branch; None with neither."""
    rising = n / latency if latency else None
    if rising is None:
        return bound
    return rising if bound is None else min(rising, bound)


def soft_min_throughput(concurrency: float, latency: float, bound: float | None, sharpness: float) -> float:
    """Gradual saturation: ((c / L)^-p + B^-p)^(-1/p); n / L far below the knee, B far above it, and below both
    near it (latency grows as the unit fills). No bound: n / L."""
    if concurrency <= 0:
        return 0.0
    rising = concurrency / latency
    if bound is None:
        return rising
    return float((rising**-sharpness + bound**-sharpness) ** (-1.0 / sharpness))


def needed_concurrency(latency: float, bound: float) -> float:
    """Little's law at the bound: the concurrency (warps x ILP) that keeps the unit busy, L x B."""
    return latency * bound


def concurrency(warps_per_sm: float, ilp: float = 1.0) -> float:
    """Requests in flight per SM: warps x independent requests per warp."""
    return warps_per_sm * ilp


def from_utilization(
    throughput: float, concurrency_now: float, utilization: float, sharpness: float = DEFAULT_SHARPNESS
) -> tuple[float, float | None]:
    """(L, B) of the soft min through one measured point: throughput X at concurrency c with the binding unit at
    `utilization` of its achievable bound. B = X / u; c / L solves X = softmin(c / L, B). Utilization 0 (or
    unknown) gives no bound: n / L holds."""
    if utilization <= 0:
        return concurrency_now / throughput, None
    u = min(utilization, 0.999)
    bound = throughput / u
    rising = throughput / (1.0 - u**sharpness) ** (1.0 / sharpness)
    return concurrency_now / rising, bound


@dataclass(frozen=True)
class SaturationFit:
    """The soft min fitted to measured (concurrency, throughput) points."""

    latency: float  # L, in concurrency units per throughput unit
    bound: float | None  # B (None: no saturation seen)
    sharpness: float  # p
    rms_log_error: float  # root mean square of log(model / measured) over the points
    points: int


def fit_saturation(concurrencies: list[float], throughputs: list[float]) -> SaturationFit:
    """Least squares of the soft min over measured points: for each sharpness p, X^-p = L^p c^-p + B^-p is a line
    in c^-p (closed form); keep the p with the smallest log error. Needs two or more distinct concurrencies."""
    pairs = [(c, x) for c, x in zip(concurrencies, throughputs, strict=True) if c > 0 and x > 0]
    if len({round(c, 9) for c, _ in pairs}) < 2:
        raise ValueError("a saturation fit needs points at two or more concurrencies")
    best: SaturationFit | None = None
    for p in _SHARPNESS_GRID:
        xs = [c**-p for c, _ in pairs]
        ys = [x**-p for _, x in pairs]
        mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((v - mean_x) ** 2 for v in xs)
        slope = sum((a - mean_x) * (b - mean_y) for a, b in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
        if slope <= 0:
            continue
        intercept = max(mean_y - slope * mean_x, 0.0)
        latency = slope ** (1.0 / p)
        bound = intercept ** (-1.0 / p) if intercept > 0 else None
        err = math.sqrt(
            sum(math.log(soft_min_throughput(c, latency, bound, p) / x) ** 2 for c, x in pairs) / len(pairs)
        )
        if best is None or err < best.rms_log_error - 1e-12:
            best = SaturationFit(latency, bound, p, err, len(pairs))
    if best is None:  # throughput falls with concurrency everywhere: no rising part; the mean is the bound
        mean = sum(x for _, x in pairs) / len(pairs)
        c0 = min(c for c, _ in pairs)
        return SaturationFit(c0 / mean / 1e6, mean, DEFAULT_SHARPNESS, 0.0, len(pairs))
    return best


def waves(grid_blocks: int, blocks_per_sm: int, sm_count: int) -> float:
    """The grid in waves of blocks_per_sm x sm_count resident blocks."""
    return grid_blocks / (blocks_per_sm * sm_count)


# How desynchronised the blocks of a launch are at its end: 0 is Volkov's and PMPP's lockstep waves of equal blocks
# (the partial last wave runs alone), 1 is blocks of unequal length whose finishes spread evenly over one block time
# (each slot idles half a block at the end). Without a measurement of the new configuration's block lengths the
# point is the middle and the interval spans TAIL_SMEAR_RANGE.
TAIL_SMEAR = 0.5
TAIL_SMEAR_RANGE = (0.0, 1.0)


def wave_residency(waves_count: float, smear: float = TAIL_SMEAR) -> float:
    """The time-averaged share of a launch's resident block slots that hold a block, from its waves and its tail.

    W waves of blocks of one mean length m: the slots hold W x m of block time over the launch's makespan. Equal
    blocks started together run ceil(W) lockstep waves (the last wave f full leaves 1 - f of the slots idle for a
    whole block time); blocks of unequal length desynchronise, so the last slots free up one by one over about one
    block time (makespan W + 1/2). `smear` weighs the two; a grid under one wave never runs shorter than one block,
    so it keeps W of the slots whatever the smear. Few waves lose the most; many waves approach 1 either way."""
    if waves_count <= 0:
        return 0.0
    s = min(max(smear, 0.0), 1.0)
    makespan = max(1.0, (1.0 - s) * math.ceil(waves_count - 1e-9) + s * (waves_count + 0.5))
    return min(1.0, waves_count / makespan)


def launch_time_ns(grid_blocks: int, blocks_per_s_per_sm: float, sm_count: int) -> float:
    """Time the block scheduler needs to start the grid at its measured rate."""
    return grid_blocks / (blocks_per_s_per_sm * sm_count) * 1e9


def combine_times(work_ns: float, launch_ns: float, order: float = LAUNCH_OVERLAP_ORDER) -> float:
    """Work and block launches overlap: a p-norm of the two (max for order -> infinity, sum for 1)."""
    if math.isinf(order):
        return max(work_ns, launch_ns)
    return float((work_ns**order + launch_ns**order) ** (1.0 / order))


def remove_launch_time(total_ns: float, launch_ns: float, order: float = LAUNCH_OVERLAP_ORDER) -> float:
    """The work time inside a measured duration, given the launch time (inverse of `combine_times`). A launch at
    its block launch rate hides its work: then the work is taken as the whole duration (a lower bound on what
    larger blocks buy)."""
    if math.isinf(order):
        return total_ns
    rest = total_ns**order - launch_ns**order
    return float(rest ** (1.0 / order)) if rest > 0 else total_ns


def loaded_latency_throughput(
    scale: float,
    throughput_now: float,
    ceiling: float,
    latency_at: Callable[[float], float],
    memory_share: float = 1.0,
    latency_now: float | None = None,
    fixed_scale: float = 1.0,
    knots: Sequence[float] = (),
) -> float:
    """Throughput after the concurrency is multiplied by `scale`, by Little's law with a loaded latency.

    Concurrency c = X x W: a warp's time W is (1 - f) fixed work plus f waiting for memory, and the memory wait
    follows the unit's loaded-latency curve, latency_at(X) (ns at throughput X). So X(s) solves
    X x W(X) / W(X0) = s x X0, with W(X) / W(X0) = k (1 - f) + f x latency_at(X) / L0; the curve's steep end gives
    gradual saturation, and X never passes `ceiling` (the unit's achievable rate for the access pattern). f = 1 is
    Little's law on bytes alone: bytes in flight = throughput x latency.

    L0 is the latency the launch's warps see now: the curve's at X0 unless `latency_now` says more (a launch at its
    ceiling with more in flight than the ceiling needs waits in a queue the curve does not show; then fewer bytes in
    flight first shorten the queue, and the throughput holds until they fall below what Little's law needs).
    `fixed_scale` k: the fixed part of a warp's time per memory round after the change (ILP: each round carries k
    times the elements). `knots`: the throughputs between which `latency_at` is linear; with them X is solved
    exactly (a quadratic on its segment), without them by bisection (a what-to-try asks ~50 times per launch)."""
    if scale <= 0 or throughput_now <= 0:
        return 0.0
    f = min(max(memory_share, 0.0), 1.0)
    top = ceiling * 0.999
    lat_now = latency_at(min(throughput_now, top))
    if latency_now is not None:
        lat_now = max(lat_now, latency_now)
    if lat_now <= 0:
        return min(throughput_now * scale, top)

    def excess(x: float) -> float:
        return x * (fixed_scale * (1.0 - f) + f * latency_at(x) / lat_now) - scale * throughput_now

    if excess(top) <= 0:
        return top
    if knots:
        return _solve_on_segments(
            excess, latency_at, knots, top, fixed_scale * (1.0 - f), f / lat_now, scale * throughput_now
        )
    low, high = 0.0, top
    while high - low > top * 1e-12:  # bisection to a part in 10^12 (about 40 halvings)
        mid = 0.5 * (low + high)
        if excess(mid) > 0:
            high = mid
        else:
            low = mid
    return 0.5 * (low + high)


def _solve_on_segments(
    excess: Callable[[float], float],
    latency_at: Callable[[float], float],
    knots: Sequence[float],
    top: float,
    a: float,
    b: float,
    c: float,
) -> float:
    """The X in (0, top] where excess(X) = X (a + b latency_at(X)) - c crosses zero, `latency_at` linear between
    consecutive knots: the first segment whose end is in excess, then the root of the quadratic on it."""
    ends = sorted({x for x in knots if 0.0 < x < top} | {top})
    at = bisect.bisect_left(ends, True, key=lambda x: excess(x) > 0)  # excess grows with X; excess(top) > 0
    start, end = (ends[at - 1] if at else 0.0), ends[at]
    lat_start, lat_end = latency_at(start), latency_at(end)
    slope = (lat_end - lat_start) / (end - start) if end > start else 0.0
    quadratic = b * slope  # excess = quadratic x^2 + linear x - c on [start, end]
    linear = a + b * (lat_start - slope * start)
    discriminant = linear * linear + 4.0 * quadratic * c
    if discriminant < 0.0 or linear + math.sqrt(discriminant) <= 0.0:
        return end
    root = 2.0 * c / (linear + math.sqrt(discriminant))  # the stable form of (-linear + sqrt(d)) / (2 quadratic)
    return min(max(root, start), end)


def interpolate_latency(curve: tuple[tuple[float, float], ...], fraction: float) -> float:
    """Latency (ns) at `fraction` of a unit's achievable rate, on a curve of (fraction, latency) points sorted by
    fraction: linear between points, flat below the first, the last point's latency at and beyond the last."""
    if not curve:
        return 0.0
    if fraction <= curve[0][0]:
        return curve[0][1]
    for (f0, l0), (f1, l1) in zip(curve, curve[1:], strict=False):
        if fraction <= f1:
            t = 0.0 if f1 <= f0 else (fraction - f0) / (f1 - f0)
            return l0 + t * (l1 - l0)
    return curve[-1][1]
