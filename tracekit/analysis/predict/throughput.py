"""Per-unit throughput against concurrency: the step that turns concurrency (warps x ILP per SM) into throughput.

With a measured sweep of three or more occupancies the soft min is fitted (`tracekit.analysis.model`); with one
launch each unit's curve passes through its measured point against its achievable ceiling, and the lowest binds.
A sweep's fit sees no saturation it did not measure, so beyond its highest concurrency its growth is held to what
the launch's own counters allow (the unit's ceiling).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

from tracekit.analysis import model
from tracekit.analysis.predict.findings import finding
from tracekit.analysis.predict.types import DramCurve, Finding, PredictInputs, PredictionRefused, UnitUse
from tracekit.ceilings.devices import WARP_SIZE

MIN_SWEEP_OCCUPANCIES = 3
MIN_SWEEP_SPAN = 2.0
# A unit at or above this share of its achievable ceiling is throughput-bound; under KNEE_SHARE it is below the knee.
BOUND_SHARE = 0.9
KNEE_SHARE = 0.6
# The interval: the utilization read +-5 points, DRAM's memory share +-0.2 and its ceiling +-5% (run-to-run spread
# of the counters and calibrate's plateaus).
UTILIZATION_SPREAD = 0.05
# One profiled launch (clocks not locked, as ncu --clock-control none runs it) against the CUDA-event medians a user
# times: the durations agree to within about 5% (the real-kernel set's repeat timings; the sweep set's within 2%).
COUNTERS_SPREAD = 0.05

Throughput = Callable[[float], float]  # concurrency (warps x ILP per SM) -> throughput (relative)


@lru_cache(maxsize=256)
def _fit(concurrencies: tuple[float, ...], throughputs: tuple[float, ...]) -> model.SaturationFit:
    """The sweep's fit, once per sweep (what_to_try predicts many changes from the same one)."""
    return model.fit_saturation(list(concurrencies), list(throughputs))


@dataclass(frozen=True)
class Curve:
    """Throughput as a function of concurrency, the unit that binds it, and how sure it is."""

    fit: model.SaturationFit | None  # from a sweep
    throughput: Throughput
    alternatives: tuple[Throughput, ...]  # spanning the interval
    bound: float | None  # the throughput no concurrency passes (same scale)
    needed: float | None  # concurrency at which the bound is (nearly) reached: Little's law L x B
    basis: str
    unit: str | None  # the binding unit (one launch's counters)
    utilization: float | None  # of that unit, now
    relative_error: float  # added to the interval (fit residual)
    measured_range: tuple[float, float] | None
    binding: Callable[[float], str | None]  # which unit binds at a concurrency


@dataclass(frozen=True)
class Part:
    """One unit's throughput against concurrency, relative to now (1 at the current concurrency)."""

    unit: str
    ratio: Callable[[float], float]  # concurrency scale -> throughput / throughput now
    bound: float  # the ratio the unit cannot pass
    needed_scale: float  # the concurrency scale at which it is (nearly) at its bound
    # The current configuration's ratio where `ratio` is the changed one's (a warp's fixed time per round scaled by
    # an ILP change): ratio(1) otherwise.
    ratio_now: float | None = None


@dataclass(frozen=True)
class PartsCurve:
    """The lowest of the units' curves against concurrency, and the current configuration's throughput on it."""

    found: tuple[Part, ...]
    conc_now: float

    def __call__(self, conc: float) -> float:
        return min(part.ratio(conc / self.conc_now) for part in self.found)

    @property
    def now(self) -> float:
        return min(part.ratio(1.0) if part.ratio_now is None else part.ratio_now for part in self.found)


def throughput_now(throughput: Throughput, conc_now: float) -> float:
    """The current configuration's throughput on a curve: a curve of units knows it apart from the changed
    configuration's (whose warps' fixed time per round differs); a fitted sweep's is its value at `conc_now`."""
    return throughput.now if isinstance(throughput, PartsCurve) else throughput(conc_now)


def soft_part(unit: str, utilization: float, sharpness: float, spare: float = 1.0) -> Part:
    """A unit without a latency curve: the soft min of Volkov's n / L and its achievable bound, through now.
    `spare`: the launch has that many times the concurrency the unit needs (infinite: it waits in DRAM's queue, and
    the unit follows DRAM), so less concurrency first shortens the queue; the unit sees a change only below
    1 / spare of it."""
    latency, bound = model.from_utilization(1.0, 1.0, utilization, sharpness)
    b = bound if bound is not None else math.inf

    def ratio(scale: float) -> float:
        seen = min(1.0, scale * spare) if scale < 1.0 else scale
        return model.soft_min_throughput(seen, latency, bound, sharpness)

    return Part(unit, ratio, b, latency * b if bound is not None else math.inf)


# A launch whose DRAM runs at this share of its achievable ceiling or more, with its warps waiting longer for memory
# than the loaded-latency curve's end, is at its ceiling with a queue (the ceiling itself is known to within the
# counters' and calibrate's spread, +-5-10%).
QUEUE_SHARE = 0.8
QUEUE_LATENCY_FACTOR = 2.0
# The fixed part of a warp's time per memory round after an ILP change of r: between unchanged (per-thread overheads:
# indexing, loop control) and r times (work per element); the point is the geometric middle, the interval both ends.
FIXED_EXPONENTS = (0.5, 0.0, 1.0)


def warp_lifetime_ns(inputs: PredictInputs) -> float | None:
    """A warp's mean lifetime by Little's law on warps: resident warps x SMs x duration / warps launched."""
    warps = inputs.grid_blocks * math.ceil(inputs.threads_per_block / WARP_SIZE)
    if not inputs.achieved_warps_per_sm or warps <= 0:
        return None
    return inputs.achieved_warps_per_sm * inputs.sm_count * inputs.duration_ns / warps


def memory_wait_ns(inputs: PredictInputs) -> float | None:
    """The latency the launch's warps see per memory round: a warp's lifetime x its memory share (long-scoreboard
    stalls), one round per warp (a one-shot kernel or a grid-stride loop of one iteration; a loop of several
    dependent rounds reads as that many times the latency)."""
    life = warp_lifetime_ns(inputs)
    if life is None or inputs.dram_curve is None:
        return None
    return life * inputs.dram_curve.memory_share


def queued(inputs: PredictInputs, use: UnitUse) -> float | None:
    """The memory wait of a DRAM-bound launch in a queue: its warps wait longer than the loaded-latency curve's end
    (the longest latency calibrate's saturated stream saw) while DRAM runs at QUEUE_SHARE of its ceiling or more,
    or twice that long at any share (two dependent rounds per warp, an index and then its data, read as one, stay
    under it): the launch is at its own ceiling for its access pattern, whatever calibrate's says. None otherwise."""
    dram, wait = inputs.dram_curve, memory_wait_ns(inputs)
    # A launch that spills reloads its registers from local memory: more dependent rounds per warp, not a queue.
    if dram is None or wait is None or not dram.latency or inputs.spill_free_share is not None:
        return None
    end = dram.latency[-1][1]
    if wait > QUEUE_LATENCY_FACTOR * end or (use.utilization >= QUEUE_SHARE and wait > end):
        return wait
    return None


def dram_part(
    unit: str,
    dram: DramCurve,
    share: float,
    ceiling_scale: float,
    latency_now: float | None = None,
    fixed_scale: float = 1.0,
    own_ceiling: bool = True,
    queue_up: bool = False,
) -> Part:
    """DRAM with its measured loaded-latency curve: Little's law with latency(throughput), no sharpness to guess.
    `latency_now`: the launch waits in a queue at its ceiling (`queued`), so with less concurrency the ceiling is what
    it reaches now (`own_ceiling`; else calibrate's, above it: the interval's reach) and the queue drains first.
    With more concurrency the calibrated ceiling and curve (a long wait may also be several dependent rounds per
    warp, a grid-stride loop, which the counters cannot tell from a queue)."""
    x0 = dram.throughput_bytes_per_s
    queue_top = latency_now is not None and own_ceiling
    calibrated = dram.ceiling_bytes_per_s * ceiling_scale
    top = x0 / 0.999 if queue_top else calibrated
    curve = dram if queue_top else replace(dram, ceiling_bytes_per_s=top)
    open_curve = replace(dram, ceiling_bytes_per_s=calibrated)
    knots, open_knots = curve.knots_bytes_per_s, open_curve.knots_bytes_per_s

    def ratio(scale: float) -> float:
        if (scale >= 1.0 and not queue_up) or latency_now is None:
            return (
                model.loaded_latency_throughput(
                    scale, x0, calibrated, open_curve.latency_at, share, None, fixed_scale, open_knots
                )
                / x0
            )
        return (
            model.loaded_latency_throughput(scale, x0, top, curve.latency_at, share, latency_now, fixed_scale, knots)
            / x0
        )

    near = 0.95 * top
    lat_now = max(curve.latency_at(min(x0, top * 0.999)), latency_now or 0.0)
    needed = near / x0 * ((1 - share) + share * curve.latency_at(near) / lat_now) if lat_now > 0 else math.inf
    if fixed_scale != 1.0:  # the current configuration's warps keep their own fixed time per round
        plain = dram_part(unit, dram, share, ceiling_scale, latency_now, 1.0, own_ceiling, queue_up)
        return Part(unit, ratio, top / x0, needed, plain.ratio(1.0))
    return Part(unit, ratio, top / x0, needed)


def parts(
    inputs: PredictInputs,
    du: float = 0.0,
    p: float = model.DEFAULT_SHARPNESS,
    dc: float = 0.0,
    fixed_scale: float = 1.0,
    own_ceiling: bool = True,
    queue_up: bool = False,
) -> list[Part]:
    """Each measured unit's curve, its utilization moved by `du`, sharpness `p`, DRAM's ceiling by `dc`."""
    found = []
    spare = 1.0
    dram_use = next((u for u in inputs.units if u.unit.startswith("dram")), None)
    wait = queued(inputs, dram_use) if dram_use is not None else None
    if wait is not None:
        # In DRAM's queue every other unit's requests wait behind DRAM's: their rates follow DRAM's, whose own curve
        # (Little's law on the launch's memory wait) decides what less concurrency costs.
        spare = math.inf
    for use in inputs.units:
        u = min(max(use.utilization + du, 0.01), 0.999)
        if use.unit.startswith("dram") and inputs.dram_curve is not None:
            share = min(max(inputs.dram_curve.memory_share + 4 * du, 0.05), 1.0)
            found.append(
                dram_part(use.unit, inputs.dram_curve, share, 1.0 - dc, wait, fixed_scale, own_ceiling, queue_up)
            )
        elif dram_use is not None and inputs.dram_curve is not None and use.utilization < dram_use.utilization:
            # Less busy than DRAM, whose loaded latency the warps wait on: with less concurrency its rate follows
            # DRAM's (its own n / L would say the warps wait on it); with more, its bound still holds.
            found.append(soft_part(use.unit, u, p, math.inf))
        else:
            found.append(soft_part(use.unit, u, p, spare))
    return found


def min_of(found: list[Part], conc_now: float) -> Throughput:
    return PartsCurve(tuple(found), conc_now)


def regime_word(utilization: float) -> str:
    return "throughput" if utilization >= BOUND_SHARE else "latency" if utilization < KNEE_SHARE else "knee"


def _unit_findings(inputs: PredictInputs, top: UnitUse) -> list[Finding]:
    out = [
        finding(
            "regime",
            "predict.unit-use",
            ("unit", use.unit),
            ("achieved", use.achieved, use.rate_unit),
            ("ceiling", use.ceiling, use.rate_unit),
            ("rate_unit", use.rate_unit),
            ("source", use.source),
            ("utilization", use.utilization, "fraction"),
            value=use.utilization,
        )
        for use in sorted(inputs.units, key=lambda x: -x.utilization)
    ]
    dram = inputs.dram_curve
    if dram is not None:
        latency = dram.latency_at(min(dram.throughput_bytes_per_s, dram.ceiling_bytes_per_s * 0.999))
        out.append(
            finding(
                "model",
                "predict.dram-latency",
                ("source", dram.source),
                ("memory_share", dram.memory_share, "fraction"),
                ("latency_ns", latency, "ns"),
                value=dram.memory_share,
            )
        )
    dram_use = next((use for use in inputs.units if use.unit.startswith("dram")), None)
    wait = queued(inputs, dram_use) if dram_use is not None else None
    if dram is not None and dram_use is not None and wait is not None and dram.latency:
        # Bytes in flight per SM by Little's law: now (throughput x the wait the warps see), and what the ceiling
        # needs at the unloaded latency (the curve's first point).
        unloaded = dram.latency[0][1]
        in_flight = dram.throughput_bytes_per_s * wait * 1e-9 / inputs.sm_count
        needed = dram.ceiling_bytes_per_s * unloaded * 1e-9 / inputs.sm_count
        out.append(
            finding(
                "concurrency",
                "predict.spare",
                ("unit", dram_use.unit),
                ("needed_bytes", needed, "B"),
                ("unloaded_ns", unloaded, "ns"),
                ("wait_ns", wait, "ns"),
                ("in_flight_bytes", in_flight, "B"),
                ("spare", in_flight / needed if needed > 0 else 0.0),
                value=in_flight,
                unit="B",
            )
        )
    u = min(top.utilization, 0.999)
    out.append(
        finding(
            "regime",
            "predict.busiest",
            ("unit", top.unit),
            ("utilization", u, "fraction"),
            ("regime", regime_word(u)),
            value=u,
        )
    )
    return out


def counters_curve(inputs: PredictInputs, current_conc: float, ilp_ratio: float = 1.0) -> tuple[Curve, list[Finding]]:
    """One launch: each unit's curve through its measured point, the lowest binding; the interval spans the
    saturation's sharpness (p = 1.5-4) and the counters' spread."""
    if not inputs.units:
        raise PredictionRefused(
            "cannot tell latency-bound from throughput-bound: the launch has no Nsight Compute counters "
            "(SpeedOfLight, ComputeWorkloadAnalysis, SchedulerStats sections) and no occupancy sweep of three or "
            "more occupancies; profile it with ncu, or at two more occupancies"
        )
    point, *ends = (ilp_ratio**e for e in FIXED_EXPONENTS)
    found = parts(inputs, fixed_scale=point)
    alternatives = tuple(
        min_of(parts(inputs, sign * UTILIZATION_SPREAD, p, sign * UTILIZATION_SPREAD, point), current_conc)
        for p in model.SHARPNESS_RANGE
        for sign in (-1, 1)
    ) + tuple(min_of(parts(inputs, fixed_scale=k), current_conc) for k in ends if abs(k - point) > 1e-9)
    if any(queued(inputs, u) is not None for u in inputs.units if u.unit.startswith("dram")):
        # At its ceiling with a queue: what it reaches now is the point's ceiling; calibrate's, above it, the reach.
        # And with more concurrency, the launch may already be at its own ceiling (the queue read as one).
        alternatives += (
            min_of(parts(inputs, fixed_scale=point, own_ceiling=False), current_conc),
            min_of(parts(inputs, fixed_scale=point, queue_up=True), current_conc),
        )
    tightest = min(found, key=lambda part: part.bound)
    top = max(inputs.units, key=lambda u: u.utilization)

    def binding(conc: float) -> str | None:
        return min(found, key=lambda part: part.ratio(conc / current_conc)).unit

    curve = Curve(
        fit=None,
        throughput=min_of(found, current_conc),
        alternatives=alternatives,
        bound=tightest.bound,
        needed=current_conc * min(part.needed_scale for part in found),
        basis="this launch's counters",
        unit=top.unit,
        utilization=min(top.utilization, 0.999),
        relative_error=COUNTERS_SPREAD,
        measured_range=None,
        binding=binding,
    )
    return curve, _unit_findings(inputs, top)


def sweep_curve(
    inputs: PredictInputs, current_conc: float, work_of: Callable[[float], float], ilp_ratio: float = 1.0
) -> tuple[Curve, list[Finding]] | None:
    """A measured sweep of three or more concurrencies spanning 2x or more: the soft min fitted to its work times
    (`work_of` takes launch overhead and block starts out). Beyond the highest measured concurrency the fit's
    growth is held to what the launch's counters allow, where it has them: a fit sees no saturation it did not
    measure. None without such a sweep."""
    samples = [s for s in inputs.sweep if s.warps_per_sm > 0 and s.duration_ns > 0]
    levels = sorted({round(s.warps_per_sm * s.ilp, 1) for s in samples})
    if len(levels) < MIN_SWEEP_OCCUPANCIES or levels[-1] / levels[0] < MIN_SWEEP_SPAN:
        return None
    conc = [s.warps_per_sm * s.ilp for s in samples]
    thr = [1.0 / work_of(s.duration_ns) for s in samples]
    fit = _fit(tuple(conc), tuple(thr))
    findings = [
        finding(
            "model",
            "predict.sweep-fit",
            ("samples", len(samples), "count"),
            ("levels", len(levels), "count"),
            ("low", levels[0]),
            ("high", levels[-1]),
            ("sharpness", fit.sharpness),
            ("log_error", fit.rms_log_error),
            ("saturated", fit.bound is not None),
            value=fit.sharpness,
        )
    ]

    def fitted(c: float) -> float:
        return model.soft_min_throughput(c, fit.latency, fit.bound, fit.sharpness)

    throughput: Throughput = fitted
    hi = levels[-1]
    if inputs.units:
        counters, _ = counters_curve(inputs, current_conc, ilp_ratio)

        def held(c: float) -> float:
            # Above the measured range: the fit's value at its edge, grown no more than the counters allow.
            if c <= hi:
                return fitted(c)
            grown = counters.throughput(c) / counters.throughput(hi)
            return min(fitted(c), fitted(hi) * grown)

        throughput = held
        findings.append(
            finding(
                "model",
                "predict.sweep-held",
                ("high", hi),
                ("unit", counters.unit or "?"),
                ("utilization", counters.utilization or 0.0, "fraction"),
            )
        )
    curve = Curve(
        fit=fit,
        throughput=throughput,
        alternatives=(),
        bound=fit.bound,
        needed=model.needed_concurrency(fit.latency, fit.bound) if fit.bound else None,
        basis="a measured sweep",
        unit=None,
        utilization=None,
        relative_error=2 * fit.rms_log_error + 0.01,
        measured_range=(levels[0], levels[-1]),
        binding=lambda c: None,
    )
    return curve, findings
