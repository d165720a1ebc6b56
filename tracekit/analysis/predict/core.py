"""`predict`: the steps in order (occupancy, achieved occupancy, concurrency, per-unit throughput, waves and tail,
launch rate), each returning its findings, and the duration with its interval."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tracekit.analysis.occupancy import device_limits
from tracekit.analysis.predict.findings import finding
from tracekit.analysis.predict.footprint import footprint_step
from tracekit.analysis.predict.inputs import inputs_from_result
from tracekit.analysis.predict.launch_rate import (
    LAUNCH_BOUND_SHARE,
    LaunchTerms,
    arrival_scale,
    launch_rate_finding,
    launch_terms,
    refuse_launch_sized,
    waves_finding,
)
from tracekit.analysis.predict.occupancy_step import (
    Achieved,
    Config,
    achieved_step,
    current_config,
    new_config,
    trips,
)
from tracekit.analysis.predict.throughput import (
    BOUND_SHARE,
    Curve,
    Throughput,
    counters_curve,
    sweep_curve,
    throughput_now,
)
from tracekit.analysis.predict.types import (
    Change,
    ConfigState,
    Finding,
    Predicted,
    PredictInputs,
    Prediction,
    PredictionRefused,
)
from tracekit.analysis.predict.uncertainty import (
    Unseen,
    refuse_block_collective,
    refuse_tile_shape,
    spill_relief,
    unseen_effects,
)
from tracekit.analysis.types import LaunchAnalysis
from tracekit.ceilings.types import NOMINAL

# Relative width at which an interval is "wide" and the prediction says what would narrow it.
WIDE_INTERVAL = 1.25
# How far a real kernel may run past the achievable ceiling it is judged by: the issue-26 scan found real kernels
# 8-13% above calibrate's DRAM stream plateau; the interval (not the point) reaches that far past the ceiling.
CEILING_SPREAD = 0.10
# Beyond a sweep's measured concurrencies the log error grows by this much per e-fold of extrapolation.
EXTRAPOLATION_ERROR = 0.25


def _state(config: Config, achieved: float) -> ConfigState:
    return ConfigState(
        config.threads_per_block,
        config.registers_per_thread,
        config.shared_mem_per_block_bytes,
        config.grid_blocks,
        config.ilp,
        config.blocks_per_sm,
        config.theoretical_warps_per_sm,
        achieved,
        config.waves,
        config.limiter,
    )


def predict(inputs: PredictInputs | LaunchAnalysis, change: Change) -> Prediction:
    """The predicted duration of the launch under `change`, its interval, basis and reasoning."""
    if isinstance(inputs, LaunchAnalysis):
        inputs = inputs_from_result(inputs)
    if inputs.duration_ns <= 0 or inputs.sm_count <= 0:
        raise PredictionRefused("cannot predict without the launch's duration and the device's SM count")
    refuse_tile_shape(inputs, change)
    refuse_launch_sized(inputs, change)
    now = current_config(inputs)
    new, findings = new_config(inputs, change, now)
    refuse_block_collective(inputs, now, new)
    unseen, unseen_findings = unseen_effects(inputs, change, now, new)
    relief = spill_relief(inputs, now, new)

    # Block starts: a launch whose starts bind it does not carry its low residency to a configuration they do not.
    terms = launch_terms(inputs, now, new)
    achieved, achieved_findings = achieved_step(inputs, now, new, arrival_scale(inputs, now, new, terms))
    findings[1:1] = achieved_findings
    if change.grid_blocks is not None and new.grid_blocks != inputs.grid_blocks:
        loops = trips(inputs, new)
        findings.append(finding("waves", "predict.grid-loop", ("grid", new.grid_blocks, "count"), ("trips", loops)))
    findings.append(_concurrency_finding(achieved, now, new))

    # Per-unit throughput against concurrency. A launch that spills had its loads in flight set by its registers,
    # not by its elements per thread: with the spills gone (the point) the ILP change does not cut concurrency.
    conc_now = achieved.now * now.ilp
    point_ratio = 1.0 if relief is not None else new.ilp / now.ilp
    swept = sweep_curve(inputs, conc_now, terms.work_of, point_ratio)
    curve, curve_findings = swept if swept is not None else counters_curve(inputs, conc_now, point_ratio)
    findings += curve_findings
    basis = [curve.basis]
    if inputs.has_warp_trace:
        basis.append("a warp trace")
    if curve.unit is not None or terms.rate_new is not None:
        basis.append(f"the device's ceilings ({inputs.ceilings_source})")

    # A footprint that outgrows L1 adds DRAM traffic: more work for the same throughput (`footprint`).
    grown, grown_findings = footprint_step(inputs, now, new)
    span, span_findings = _durations(inputs, now, new, achieved, curve, terms, relief, grown)
    findings += span_findings + grown_findings
    # Effects the model cannot see widen the interval on the side they act (uncertainty.unseen_effects).
    for effect in unseen:
        if effect.point == 1.0:
            span = _Span(
                span.point, min(span.low, span.point / effect.faster), max(span.high, span.point * effect.slower)
            )
    findings += unseen_findings
    span, cap_findings = _capped(inputs, relief, span)
    findings += cap_findings
    # An effect the change itself shows (spills at the register cap) moves the point after the ceilings' cap: the
    # same work reaches the ceiling no sooner, and the spill traffic comes on top.
    for effect in unseen:
        if effect.point != 1.0:
            moved = span.point * effect.point
            span = _Span(moved, min(span.low, moved / effect.faster), max(span.high, moved * effect.slower))

    conc_new = achieved.new * new.ilp
    findings.append(waves_finding(new, achieved.tail_new, inputs.sm_count))
    findings.append(launch_rate_finding(inputs, now, new, terms))
    bound_now = curve.bound if curve.bound is not None and math.isfinite(curve.bound) else None
    regime = (
        "launch"
        if terms.launch_new_ns > LAUNCH_BOUND_SHARE * span.point
        else (
            "throughput"
            if bound_now is not None and curve.throughput(conc_new) > BOUND_SHARE * bound_now
            else "latency"
        )
    )
    needed = curve.needed if curve.needed is not None and math.isfinite(curve.needed) else None
    binding_unit = curve.binding(conc_new) if curve.unit is not None else None
    lowest = curve.measured_range[0] if curve.measured_range is not None else None
    if needed is not None and lowest is not None and needed < lowest:
        # A sweep whose every point is at the bound cannot place the knee below its lowest point: at most that.
        needed = lowest
        findings.append(
            finding("model", "predict.littles-law-at-most", ("needed", needed), ("conc_new", conc_new), value=needed)
        )
    elif needed is not None:
        findings.append(
            finding("model", "predict.littles-law", ("needed", needed), ("conc_new", conc_new), value=needed)
        )
    speedup = inputs.duration_ns / span.point
    low, high = inputs.duration_ns / span.high, inputs.duration_ns / span.low
    findings.append(
        finding(
            "result",
            "predict.result",
            ("predicted_ns", span.point, "ns"),
            ("now_ns", inputs.duration_ns, "ns"),
            ("speedup", speedup),
            ("low", low),
            ("high", high),
            value=speedup,
        )
    )
    nsight = None
    if new.theoretical_warps_per_sm > now.theoretical_warps_per_sm:
        nsight = next((n for n in inputs.nsight if n.rule == "TheoreticalOccupancy"), None)
    return Prediction(
        launch_id=inputs.launch_id,
        kernel_name=inputs.kernel_name,
        change=change,
        current_duration_ns=inputs.duration_ns,
        current=_state(now, achieved.now),
        new=_state(new, achieved.new),
        predicted=Predicted(span.point, speedup, low, high, span.low, span.high),
        regime=regime,
        binding_unit=binding_unit,
        utilization=next((u.utilization for u in inputs.units if u.unit == binding_unit), curve.utilization),
        needed_concurrency=needed,
        basis=tuple(basis),
        findings=tuple(findings),
        narrow=None,
        narrowing=_narrow(inputs, now, curve, unseen) if high / low > WIDE_INTERVAL else None,
        nsight=nsight,
        unseen=tuple(e.effect for e in unseen),
    )


def _concurrency_finding(achieved: Achieved, now: Config, new: Config) -> Finding:
    """Concurrency = warps x ILP (Volkov 3.3: occupancy is not concurrency)."""
    conc_new = achieved.new * new.ilp
    return finding(
        "concurrency",
        "predict.concurrency",
        ("achieved_now", achieved.now, "warps/SM"),
        ("ilp_now", now.ilp),
        ("conc_now", achieved.now * now.ilp),
        ("achieved_new", achieved.new, "warps/SM"),
        ("ilp_new", new.ilp),
        ("conc_new", conc_new),
        value=conc_new,
    )


@dataclass(frozen=True)
class _Span:
    """The predicted duration and its interval, in ns (low: the shortest)."""

    point: float
    low: float
    high: float


def _durations(
    inputs: PredictInputs,
    now: Config,
    new: Config,
    achieved: Achieved,
    curve: Curve,
    terms: LaunchTerms,
    relief: float | None,
    grown: float | None = None,
) -> tuple[_Span, list[Finding]]:
    """Waves and tail: throughput into time, the work scaled by the throughputs at the two concurrencies (time
    averages over each launch, tail included, as a sweep's points are), and the interval: the curve's alternatives,
    the tail's unknown smear, the fit's residual and extrapolation, and for a spilling launch the spills staying."""
    conc_now = achieved.now * now.ilp
    conc_new = achieved.new * new.ilp
    conc_point = achieved.new * (now.ilp if relief is not None else new.ilp)
    findings: list[Finding] = []

    def duration_with(
        throughput: Throughput, conc: float = conc_point, work_scale: float = (relief or 1.0) * (grown or 1.0)
    ) -> float:
        x_now, x_new = throughput_now(throughput, conc_now), throughput(conc)
        work = terms.work_of(inputs.duration_ns) * work_scale * (x_now / x_new if x_new > 0 else math.inf)
        return terms.duration_of(work)

    point = duration_with(curve.throughput)
    spread = [duration_with(alt) for alt in curve.alternatives] or [point]
    if relief is not None:  # the spills stay: the plain model, the ILP change cutting concurrency
        plain, _ = counters_curve(inputs, conc_now, new.ilp / now.ilp) if inputs.units else (curve, [])
        spread.append(duration_with(plain.throughput, conc_new, 1.0))
        findings.append(
            finding(
                "uncertainty",
                "predict.spills",
                ("spill_free_share", relief, "fraction"),
                ("spills_stay_x", inputs.duration_ns / spread[-1]),
            )
        )
    # The tail's unknown smear (few waves): its own span of durations, compounded with the curve's.
    tail_spread = [duration_with(curve.throughput, a * conc_point / achieved.new) for a in achieved.span]
    err = curve.relative_error
    if curve.measured_range is not None:
        lo, hi = curve.measured_range
        if not lo * 0.95 <= conc_new <= hi * 1.05:
            err += EXTRAPOLATION_ERROR * abs(math.log(conc_new / (hi if conc_new > hi else lo)))
    low = min(min(spread), point) * min(min(tail_spread) / point, 1.0) * (1 - err)
    high = max(max(spread), point) * max(max(tail_spread) / point, 1.0) * (1 + err)
    return _Span(point, low, high), findings


def _capped(inputs: PredictInputs, relief: float | None, span: _Span) -> tuple[_Span, list[Finding]]:
    """No change of configuration runs a unit above its achievable ceiling: the same work (less the spill traffic
    where it goes) in less time needs each unit's rate times the speed-up. The point stays under the ceiling; the
    interval reaches past it by the ceilings' own spread."""
    capped = _headroom(inputs, relief)
    if capped is None:
        return span, []
    findings = []
    if inputs.duration_ns / span.point > capped[1]:
        findings.append(
            finding(
                "result",
                "predict.capped",
                ("unit", capped[0]),
                ("utilization", 1.0 / capped[1], "fraction"),
                ("headroom", capped[1]),
            )
        )
    floor = inputs.duration_ns / capped[1]
    point = max(span.point, floor)
    return _Span(point, max(span.low, floor / (1 + CEILING_SPREAD)), max(span.high, point)), findings


def _narrow(inputs: PredictInputs, now: Config, curve: Curve, unseen: list[Unseen]) -> Finding:
    """What measurement would narrow a wide interval (its values; the sentence is the view's)."""
    return finding(
        "narrow",
        "predict.narrow",
        ("fitted", curve.fit is not None),
        ("low_warps", max(8, int(now.theoretical_warps_per_sm // 2)), "warps/SM"),
        ("most_warps", int(device_limits(inputs.compute_capability).max_warps_per_sm), "warps/SM"),
        ("unseen", "; ".join(e.why for e in unseen) or None),
        ("calibrate", curve.unit is not None and inputs.ceilings_source == NOMINAL),
    )


def _headroom(inputs: PredictInputs, relief: float | None) -> tuple[str, float] | None:
    """The unit with the least room to its achievable ceiling, as this prediction reads it or as the verdict judged
    it, and the speed-up that would fill it (memory units' traffic scaled by what is left once spills go)."""
    rooms = []
    # The issue slots are left out: the instructions a configuration issues per element change with it (index
    # arithmetic and loop control amortized over more elements per thread).
    judged = [(use.unit, use.utilization) for use in inputs.units if use.unit != "issue"] + list(inputs.judged)
    for unit, share in judged:
        u = share * (relief if relief is not None and unit.startswith(("dram", "l2")) else 1.0)
        if u > 0:
            rooms.append((unit, max(1.0, 1.0 / u)))
    return min(rooms, key=lambda r: r[1]) if rooms else None
