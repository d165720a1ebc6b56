"""What will a change buy? One launch, a changed configuration, and the predicted duration with its interval.

The knobs (block size, registers, dynamic shared memory, warps per SM, ILP, grid) go through the occupancy
calculator to warps per SM; the warps the launch really keeps resident (achieved, not theoretical) scale with them;
concurrency is warps x ILP; throughput follows the latency-hiding model (`tracekit.analysis.model`): a soft min of
n / L and the bound B of the unit that binds, fitted where a sweep of three or more occupancies exists and pinned by
the launch's counters against the device's ceilings where only this launch exists (then the interval spans the
saturation's unknown sharpness). Waves, the partial last wave and the block launch rate turn throughput into time.
Every step is a `Finding`; Nsight Compute's own rule estimate rides along where the report has one.

Pure functions: the caller reads the store (`inputs_from_result`) and passes what it read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import polars as pl

from tracekit.analysis import counters as c
from tracekit.analysis import model
from tracekit.analysis.occupancy import OccupancyResult, device_limits, theoretical_occupancy
from tracekit.analysis.types import LaunchAnalysis
from tracekit.errors import TracekitError

# Achievable fractions of Nsight's "% of peak" when the device has no measured ceiling (tracekit.ceilings):
# DRAM streams reach about 90% of peak cycles active; scattered 32-byte sectors keep DRAM busy only about half the
# cycles (a random sector opens a row and a 64-byte burst for 32 useful bytes); L2 about 90%; one FFMA stream per
# warp fills the FMA pipe's counted peak fully (a measured fp32 ceiling replaces this where the profile has one).
ACHIEVABLE_DRAM_STREAM = 0.90
ACHIEVABLE_DRAM_SCATTERED = 0.50
ACHIEVABLE_L2 = 0.90
ACHIEVABLE_ISSUE = 0.90
ACHIEVABLE_FMA = 1.0
SCATTERED_SECTORS_PER_REQUEST = 8.0  # a coalesced 4-byte load is 4 sectors per request; 32 when every lane scatters
# Block launch rate per SM when the device has no measured one: H100, 1.65 blocks per ns over 132 SMs for blocks
# of 64-128 threads whose work is short (sample_traces/sweeps, block_0064 of every memory kernel).
DEFAULT_BLOCK_LAUNCH_PER_S_PER_SM = 1.25e7
# Relative width at which an interval is "wide" and the prediction says what would narrow it.
WIDE_INTERVAL = 1.25
MIN_SWEEP_OCCUPANCIES = 3
MIN_SWEEP_SPAN = 2.0


class PredictionRefused(TracekitError):
    """A configuration the device cannot run, or a launch without the data a prediction needs."""


@dataclass(frozen=True)
class Change:
    """The knobs a user turns; None keeps the launch's own value."""

    threads_per_block: int | None = None
    registers_per_thread: int | None = None
    dynamic_shared_mem_bytes: int | None = None  # per block, as the kernel would be launched
    warps_per_sm: int | None = None  # a target occupancy (theoretical), however it is reached
    ilp: float | None = None  # independent requests per warp (the launch's own counts as 1 unless given)
    grid_blocks: int | None = None  # the same total work over this many blocks

    def describe(self) -> str:
        parts = [
            f"{label} {value:g}" if isinstance(value, float) else f"{label} {value}"
            for label, value in (
                ("block", self.threads_per_block),
                ("regs", self.registers_per_thread),
                ("smem", self.dynamic_shared_mem_bytes),
                ("warps/SM", self.warps_per_sm),
                ("ILP", self.ilp),
                ("grid", self.grid_blocks),
            )
            if value is not None
        ]
        return ", ".join(parts) or "no change"


@dataclass(frozen=True)
class SweepSample:
    """One measured launch of the same work at another occupancy: achieved warps per SM, ILP, duration."""

    warps_per_sm: float
    duration_ns: float
    ilp: float = 1.0
    launch_id: int | None = None


@dataclass(frozen=True)
class UnitUse:
    """One unit's measured use against its achievable peak for the launch's access pattern."""

    unit: str  # dram, l2, fma_pipe, issue
    measured_pct: float  # Nsight's % of peak
    achievable_pct: float  # the ceiling for this pattern, same scale
    source: str  # "measured: <profile>" or "nominal"

    @property
    def utilization(self) -> float:
        return self.measured_pct / self.achievable_pct if self.achievable_pct > 0 else 0.0


@dataclass(frozen=True)
class NsightEstimate:
    """Nsight Compute's own rule estimate for this launch (percent of duration it says could be saved)."""

    rule: str
    estimated_speedup_pct: float
    speedup: float  # 1 / (1 - pct / 100)
    applies_to: str  # the change the rule's estimate assumes


@dataclass(frozen=True)
class PredictInputs:
    """What a prediction rests on, read once from the store (or written by hand in tests)."""

    compute_capability: str
    sm_count: int
    duration_ns: float
    threads_per_block: int
    grid_blocks: int
    registers_per_thread: int
    static_shared_mem_bytes: int = 0
    dynamic_shared_mem_bytes: int = 0
    achieved_warps_per_sm: float | None = None
    ilp: float = 1.0
    units: tuple[UnitUse, ...] = ()
    sweep: tuple[SweepSample, ...] = ()
    nsight: tuple[NsightEstimate, ...] = ()
    block_launch_per_s_per_sm: float | None = None
    launch_rate_source: str = "nominal"
    has_warp_trace: bool = False
    launch_id: int | None = None
    kernel_name: str | None = None
    device_name: str | None = None


@dataclass(frozen=True)
class Finding:
    """One step of the reasoning: what was computed, from what, and its value."""

    step: str  # occupancy, achieved, concurrency, regime, model, waves, launch_rate, result
    text: str
    value: float | None = None
    unit: str | None = None


@dataclass(frozen=True)
class ConfigState:
    threads_per_block: int
    registers_per_thread: int
    shared_mem_per_block_bytes: int  # static + dynamic
    grid_blocks: int
    ilp: float
    blocks_per_sm: int
    theoretical_warps_per_sm: float
    achieved_warps_per_sm: float
    waves: float
    limiter: str


@dataclass(frozen=True)
class Predicted:
    duration_ns: float
    speedup: float  # current duration / predicted duration
    low: float  # speed-up interval
    high: float
    duration_low_ns: float  # the interval as durations (low duration = high speed-up)
    duration_high_ns: float


@dataclass(frozen=True)
class Prediction:
    launch_id: int | None
    kernel_name: str | None
    change: Change
    current_duration_ns: float
    current: ConfigState
    new: ConfigState
    predicted: Predicted
    regime: str  # "latency" (below the knee), "throughput" (at the bound), "launch" (block starts bind)
    binding_unit: str | None
    utilization: float | None  # of the binding unit, now
    needed_concurrency: float | None  # L x B, warps x ILP per SM
    basis: tuple[str, ...]
    findings: tuple[Finding, ...]
    narrow: str | None  # what measurement would narrow a wide interval
    nsight: NsightEstimate | None


# ---- reading inputs ----------------------------------------------------------------------------------------

_SECTORS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",)
_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",)
_DRAM_ACTIVE = ("dram__cycles_active.avg.pct_of_peak_sustained_elapsed", *c.DRAM_THROUGHPUT_PCT)
_FMA_PIPE = (
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
)


def _achievable(ceiling: object, fallback: float) -> tuple[float, str]:
    fraction = getattr(ceiling, "fraction_of_nominal", None) if ceiling is not None else None
    if fraction and getattr(ceiling, "measured", False):
        return min(float(fraction), 1.0), str(getattr(ceiling, "source", "measured"))
    return fallback, "nominal"


def unit_uses(metrics: pl.DataFrame, ceilings: object | None = None) -> tuple[UnitUse, ...]:
    """Each unit's % of peak from the launch's counters, against what is achievable for its access pattern."""
    uses: list[UnitUse] = []
    sectors, requests = c.metric(metrics, *_SECTORS), c.metric(metrics, *_REQUESTS)
    scattered = bool(sectors and requests and sectors / requests > SCATTERED_SECTORS_PER_REQUEST)
    dram = c.metric(metrics, *_DRAM_ACTIVE)
    if dram is not None:
        if scattered:
            uses.append(UnitUse("dram (scattered sectors)", dram, 100 * ACHIEVABLE_DRAM_SCATTERED, "nominal"))
        else:
            chosen = getattr(ceilings, "dram_stream_bytes_per_s", None)
            fraction, source = _achievable(chosen, ACHIEVABLE_DRAM_STREAM)
            uses.append(UnitUse("dram (stream)", dram, 100 * fraction, source))
    l2 = c.metric(metrics, *c.L2_THROUGHPUT_PCT)
    if l2 is not None and not scattered:
        uses.append(UnitUse("l2", l2, 100 * ACHIEVABLE_L2, "nominal"))
    fma = c.metric(metrics, *_FMA_PIPE)
    if fma is not None:
        fraction, source = _achievable(getattr(ceilings, "fp32_flop_per_s", None), ACHIEVABLE_FMA)
        uses.append(UnitUse("fma pipe", fma, 100 * fraction, source))
    issue = c.metric(metrics, *c.ISSUE_ACTIVE_PCT)
    if issue is not None:
        uses.append(UnitUse("issue", issue, 100 * ACHIEVABLE_ISSUE, "nominal"))
    return tuple(uses)


def nsight_estimates(metrics: pl.DataFrame) -> tuple[NsightEstimate, ...]:
    """Nsight's occupancy rule estimates (rows `rule:<Name>` with their Estimated Speedup)."""
    applies = {
        "TheoreticalOccupancy": "theoretical occupancy raised to the device maximum",
        "AchievedOccupancy": "achieved occupancy raised to the theoretical",
    }
    found: dict[str, NsightEstimate] = {}
    for name, _text, value in c.rows_with_prefix(metrics, "rule:"):
        rule = name.removeprefix("rule:")
        if rule not in applies or value is None or not 0 <= value < 100:
            continue
        if rule in found and found[rule].estimated_speedup_pct >= value:
            continue
        found[rule] = NsightEstimate(rule, float(value), 1.0 / (1.0 - value / 100.0), applies[rule])
    return tuple(found.values())


def inputs_from_result(
    result: LaunchAnalysis,
    metrics: pl.DataFrame | None = None,
    sweep: Sequence[SweepSample] | None = None,
    ceilings: object | None = None,
) -> PredictInputs:
    """The inputs of one analysed launch; `metrics` is its counters (Store.metrics), `sweep` other launches of
    the same work (default: the result's fitted sweep, as throughputs), `ceilings` a DeviceCeilings."""
    kernel, device = result.kernel, result.kernel.device
    missing = []
    if result.duration_ns is None:
        missing.append("its duration (import an Nsight Compute or Nsight Systems record of it, or a warp trace)")
    if device.cc is None:
        missing.append("the device's compute capability (an Nsight Compute report or a warp trace header has it)")
    if not device.sm_count:
        missing.append("the device's SM count")
    if kernel.block[0] is None or kernel.grid[0] is None:
        missing.append("its grid and block size")
    if kernel.registers_per_thread is None:
        missing.append("its registers per thread (Nsight Compute's launch statistics)")
    if missing:
        raise PredictionRefused(f"launch {result.launch_id}: cannot predict without " + "; ".join(missing))
    frame = metrics if metrics is not None else pl.DataFrame()
    if sweep is None and result.sweep is not None and result.duration_ns:
        points = result.sweep.points
        own = next((p for p in points if p.launch_id == result.launch_id), None)
        if own is not None and own.throughput > 0:
            sweep = [
                SweepSample(
                    p.occupancy_warps_per_sm, result.duration_ns * own.throughput / p.throughput, 1.0, p.launch_id
                )
                for p in points
                if p.throughput > 0
            ]
    rate_ceiling = None
    threads = math.prod(int(v or 1) for v in kernel.block)
    if ceilings is not None and hasattr(ceilings, "block_launch_ceiling"):
        rate_ceiling = ceilings.block_launch_ceiling(threads)
    return PredictInputs(
        compute_capability=str(device.cc),
        sm_count=int(device.sm_count or 0),
        duration_ns=float(result.duration_ns or 0.0),
        threads_per_block=threads,
        grid_blocks=math.prod(int(v or 1) for v in kernel.grid),
        registers_per_thread=int(kernel.registers_per_thread or 0),
        static_shared_mem_bytes=int(kernel.static_shared_mem_per_block_bytes or 0),
        dynamic_shared_mem_bytes=int(
            kernel.dynamic_shared_mem_per_block_bytes
            if kernel.dynamic_shared_mem_per_block_bytes is not None
            else (kernel.shared_mem_per_block_bytes or 0) - (kernel.static_shared_mem_per_block_bytes or 0)
        ),
        achieved_warps_per_sm=result.occupancy.achieved_warps_per_sm
        or (result.warps.mean_occupancy_warps_per_sm if result.warps else None),
        units=unit_uses(frame, ceilings),
        sweep=tuple(sweep or ()),
        nsight=nsight_estimates(frame),
        block_launch_per_s_per_sm=float(rate_ceiling.value) if rate_ceiling is not None else None,
        launch_rate_source=str(rate_ceiling.source) if rate_ceiling is not None else "nominal",
        has_warp_trace=result.warps is not None,
        launch_id=result.launch_id,
        kernel_name=kernel.name,
        device_name=device.name,
    )


# ---- the prediction ----------------------------------------------------------------------------------------


def _occupancy(cc: str, block: int, regs: int, smem: int) -> OccupancyResult:
    try:
        result = theoretical_occupancy(cc, block, regs, smem)
    except TracekitError as exc:
        raise PredictionRefused(f"the device cannot run this configuration: {exc}") from None
    if result.active_blocks_per_sm == 0:
        limits = device_limits(cc)
        raise PredictionRefused(
            f"the device cannot run this configuration: {result.limiter.replace('_', ' ')} allow 0 blocks of "
            f"{block} threads per SM (registers {regs} x {block} threads, shared memory {smem} bytes; an SM has "
            f"{limits.registers_per_sm} registers and {limits.shared_mem_per_sm_bytes} bytes)"
        )
    return result


@dataclass(frozen=True)
class _Curve:
    """Throughput as a function of concurrency, and how sure it is."""

    fit: model.SaturationFit | None  # from a sweep
    latency: float
    bound: float | None
    sharpness: float
    alternatives: tuple[tuple[float, float | None, float], ...]  # (L, B, p) spanning the interval
    basis: str
    unit: str | None
    utilization: float | None
    relative_error: float  # added to the interval (fit residual)
    measured_range: tuple[float, float] | None

    def throughput(self, conc: float) -> float:
        return model.soft_min_throughput(conc, self.latency, self.bound, self.sharpness)


def _curve(inputs: PredictInputs, current_conc: float, findings: list[Finding]) -> _Curve:
    samples = [s for s in inputs.sweep if s.warps_per_sm > 0 and s.duration_ns > 0]
    levels = sorted({round(s.warps_per_sm * s.ilp, 1) for s in samples})
    if len(levels) >= MIN_SWEEP_OCCUPANCIES and levels[-1] / levels[0] >= MIN_SWEEP_SPAN:
        conc = [s.warps_per_sm * s.ilp for s in samples]
        thr = [1.0 / s.duration_ns for s in samples]
        fit = model.fit_saturation(conc, thr)
        findings.append(
            Finding(
                "model",
                f"soft min fitted to {len(samples)} measured launches at {len(levels)} concurrencies "
                f"({levels[0]:g}-{levels[-1]:g} warps x ILP per SM): sharpness p = {fit.sharpness:.2f}, "
                f"log error {fit.rms_log_error:.3f}"
                + ("" if fit.bound else "; no saturation measured (n / L throughout)"),
                fit.sharpness,
            )
        )
        return _Curve(
            fit,
            fit.latency,
            fit.bound,
            fit.sharpness,
            (),
            "a measured sweep",
            None,
            None,
            2 * fit.rms_log_error + 0.01,
            (levels[0], levels[-1]),
        )
    throughput = 1.0 / inputs.duration_ns
    if not inputs.units:
        raise PredictionRefused(
            "cannot tell latency-bound from throughput-bound: the launch has no Nsight Compute counters "
            "(SpeedOfLight, ComputeWorkloadAnalysis, SchedulerStats sections) and no occupancy sweep of three or "
            "more occupancies; profile it with ncu, or at two more occupancies"
        )
    top = max(inputs.units, key=lambda u: u.utilization)
    u = min(top.utilization, 0.999)
    latency, bound = model.from_utilization(throughput, current_conc, u, model.DEFAULT_SHARPNESS)
    alternatives = []
    for p in model.SHARPNESS_RANGE:
        for du in (-0.05, 0.05):
            uu = min(max(u + du, 0.01), 0.999)
            lat, b = model.from_utilization(throughput, current_conc, uu, p)
            alternatives.append((lat, b, p))
    findings.append(
        Finding(
            "regime",
            f"busiest unit: {top.unit} at {top.measured_pct:.1f}% of peak, {u:.0%} of the {top.achievable_pct:.0f}% "
            f"achievable for its access pattern ({top.source}): "
            + ("throughput-bound" if u >= 0.9 else "latency-bound, below the knee" if u < 0.6 else "near the knee"),
            u,
        )
    )
    return _Curve(
        None,
        latency,
        bound,
        model.DEFAULT_SHARPNESS,
        tuple(alternatives),
        "this launch's counters",
        top.unit,
        u,
        0.02,
        None,
    )


def _launch_rate(inputs: PredictInputs, block: int) -> tuple[float, str]:
    if inputs.block_launch_per_s_per_sm:
        return inputs.block_launch_per_s_per_sm, inputs.launch_rate_source
    return DEFAULT_BLOCK_LAUNCH_PER_S_PER_SM, "nominal"


def _work_factor(throughput: object, conc: float, grid: int, blocks_per_sm: int, sm_count: int) -> float:
    """Time per unit of work, waves included: each wave's share of the work at its concurrency."""
    thr = throughput  # callable conc -> throughput
    total = 0.0
    for share, fraction in model.wave_concurrency_shares(grid, blocks_per_sm, sm_count):
        x = thr(conc * fraction)  # type: ignore[operator]
        total += share / x if x > 0 else math.inf
    return total


def predict(inputs: PredictInputs | LaunchAnalysis, change: Change) -> Prediction:
    """The predicted duration of the launch under `change`, its interval, basis and reasoning."""
    if isinstance(inputs, LaunchAnalysis):
        inputs = inputs_from_result(inputs)
    cc, sms = inputs.compute_capability, inputs.sm_count
    if inputs.duration_ns <= 0 or sms <= 0:
        raise PredictionRefused("cannot predict without the launch's duration and the device's SM count")
    findings: list[Finding] = []
    limits = device_limits(cc)

    # Current configuration.
    smem_now = inputs.static_shared_mem_bytes + inputs.dynamic_shared_mem_bytes
    occ_now = _occupancy(cc, inputs.threads_per_block, inputs.registers_per_thread, smem_now)
    blocks_now = occ_now.active_blocks_per_sm
    theo_now = float(occ_now.theoretical_warps_per_sm)
    resident_now = min(blocks_now, max(inputs.grid_blocks / sms, 1e-9))  # a grid under one wave holds fewer
    achieved_now = inputs.achieved_warps_per_sm or theo_now * min(1.0, resident_now / blocks_now)
    keep = min(1.0, achieved_now / (theo_now * min(1.0, resident_now / blocks_now)))

    # New configuration.
    block = change.threads_per_block or inputs.threads_per_block
    if block > limits.max_threads_per_block:
        raise PredictionRefused(
            f"the device cannot run this configuration: a block of {block} threads is over "
            f"the {limits.max_threads_per_block}-thread limit"
        )
    regs = change.registers_per_thread if change.registers_per_thread is not None else inputs.registers_per_thread
    dyn = (
        change.dynamic_shared_mem_bytes
        if change.dynamic_shared_mem_bytes is not None
        else inputs.dynamic_shared_mem_bytes
    )
    smem = inputs.static_shared_mem_bytes + dyn
    occ_new = _occupancy(cc, block, regs, smem)
    blocks_new = occ_new.active_blocks_per_sm
    limiter = occ_new.limiter
    if change.warps_per_sm is not None:
        if not 1 <= change.warps_per_sm <= limits.max_warps_per_sm:
            raise PredictionRefused(
                f"the device cannot run this configuration: {change.warps_per_sm} warps per SM "
                f"(an SM holds 1 to {limits.max_warps_per_sm})"
            )
        wanted = max(1, change.warps_per_sm // occ_new.warps_per_block)
        if wanted > blocks_new and change.warps_per_sm > occ_new.theoretical_warps_per_sm:
            raise PredictionRefused(
                f"the device cannot run this configuration: {change.warps_per_sm} warps per SM needs "
                f"{wanted} blocks of {block} threads, and {limiter.replace('_', ' ')} allow {blocks_new}"
            )
        blocks_new, limiter = wanted, "requested"
    theo_new = float(blocks_new * occ_new.warps_per_block)
    if change.grid_blocks is not None:
        if change.grid_blocks < 1:
            raise PredictionRefused(f"grid of {change.grid_blocks} blocks: must be 1 or more")
        grid_new = change.grid_blocks
    else:  # the same threads in all
        grid_new = max(1, math.ceil(inputs.grid_blocks * inputs.threads_per_block / block))
    ilp_now = inputs.ilp
    ilp_new = change.ilp if change.ilp is not None else ilp_now
    if ilp_new <= 0:
        raise PredictionRefused(f"ILP {ilp_new:g}: must be above 0")

    findings.append(
        Finding(
            "occupancy",
            f"calculator: {block} threads, {regs} registers, {smem} bytes shared memory per block -> "
            f"{blocks_new} blocks, {theo_new:g} warps per SM (limited by {limiter.replace('_', ' ')}); now "
            f"{blocks_now} blocks, {theo_now:g} warps",
            theo_new,
            "warps/SM",
        )
    )
    achieved_new = theo_new * keep
    findings.append(
        Finding(
            "achieved",
            f"the launch keeps {keep:.0%} of its theoretical warps resident ({achieved_now:.1f} of {theo_now:g}: "
            f"block starts and finishes); the same share of {theo_new:g} is {achieved_new:.1f} warps per SM",
            achieved_new,
            "warps/SM",
        )
    )
    conc_now, conc_new = achieved_now * ilp_now, achieved_new * ilp_new
    findings.append(
        Finding(
            "concurrency",
            f"concurrency = warps x ILP: {achieved_now:.1f} x {ilp_now:g} = {conc_now:.1f} now, "
            f"{achieved_new:.1f} x {ilp_new:g} = {conc_new:.1f} after",
            conc_new,
        )
    )

    curve = _curve(inputs, conc_now, findings)
    basis = [curve.basis]
    if inputs.has_warp_trace:
        basis.append("a warp trace")
    if curve.unit is not None:
        basis.append(
            "the device's ceilings" + (" (nominal)" if all(u.source == "nominal" for u in inputs.units) else "")
        )

    rate, rate_source = _launch_rate(inputs, block)
    launch_now = model.launch_time_ns(inputs.grid_blocks, rate, sms)
    launch_new = model.launch_time_ns(grid_new, rate, sms)
    work_now = model.remove_launch_time(inputs.duration_ns, launch_now)

    def duration_with(lat: float, bound: float | None, p: float) -> float:
        def thr(conc: float) -> float:
            return model.soft_min_throughput(conc, lat, bound, p)

        now = _work_factor(
            thr, conc_now / max(min(1.0, resident_now / blocks_now), 1e-9), inputs.grid_blocks, blocks_now, sms
        )
        new = _work_factor(thr, conc_new, grid_new, blocks_new, sms)
        return model.combine_times(work_now * new / now, launch_new)

    # The current concurrency above already includes a partial single wave; the wave shares re-apply it.
    predicted_ns = duration_with(curve.latency, curve.bound, curve.sharpness)
    spread = [duration_with(lat, b, p) for lat, b, p in curve.alternatives] or [predicted_ns]
    err = curve.relative_error
    if curve.measured_range is not None:
        lo, hi = curve.measured_range
        if not lo * 0.95 <= conc_new <= hi * 1.05:
            err += 0.25 * abs(math.log(conc_new / (hi if conc_new > hi else lo)))  # extrapolated
    duration_low = min(min(spread), predicted_ns) * (1 - err)
    duration_high = max(max(spread), predicted_ns) * (1 + err)

    waves_new = model.waves(grid_new, blocks_new, sms)
    findings.append(
        Finding(
            "waves",
            f"{grid_new} blocks in {waves_new:.2f} waves of {blocks_new} x {sms} SMs"
            + (
                f"; the last wave holds {math.fmod(waves_new, 1):.0%} of the slots (tail)"
                if waves_new > 1 and 0 < math.fmod(waves_new, 1) < 0.999
                else "; under one wave, so fewer warps in flight than the SM holds"
                if waves_new < 1
                else ""
            ),
            waves_new,
        )
    )
    findings.append(
        Finding(
            "launch_rate",
            f"block starts at {rate / 1e6:.1f} per us per SM ({rate_source}): {launch_new / 1e3:.1f} us for "
            f"{grid_new} blocks, now {launch_now / 1e3:.1f} us for {inputs.grid_blocks}",
            launch_new,
            "ns",
        )
    )
    regime = (
        "launch"
        if launch_new > 0.7 * predicted_ns
        else ("throughput" if curve.bound is not None and curve.throughput(conc_new) > 0.9 * curve.bound else "latency")
    )
    needed = model.needed_concurrency(curve.latency, curve.bound) if curve.bound else None
    if needed is not None:
        findings.append(
            Finding(
                "model",
                f"Little's law: the bound needs about {needed:.1f} warps x ILP per SM in flight "
                f"(latency x throughput); {conc_new:.1f} after the change",
                needed,
            )
        )
    speedup = inputs.duration_ns / predicted_ns
    low, high = inputs.duration_ns / duration_high, inputs.duration_ns / duration_low
    findings.append(
        Finding(
            "result",
            f"predicted {predicted_ns / 1e3:.1f} us (now {inputs.duration_ns / 1e3:.1f} us): "
            f"speed-up {speedup:.2f}x, interval {low:.2f}-{high:.2f}x",
            speedup,
        )
    )
    narrow = None
    if high / low > WIDE_INTERVAL:
        if curve.fit is None:
            narrow = (
                "profile it at two more occupancies (for example "
                f"{max(8, int(theo_now // 2))} and {int(limits.max_warps_per_sm)} warps per SM, by dynamic shared "
                "memory per block) so the saturation is fitted, not bounded"
            )
        else:
            narrow = "profile it at an occupancy beyond the measured range, near the one asked about"
        if curve.unit is not None and all(u.source == "nominal" for u in inputs.units):
            narrow += "; measure the device's ceilings (tracekit calibrate)"
    nsight = None
    if theo_new > theo_now:
        nsight = next((n for n in inputs.nsight if n.rule == "TheoreticalOccupancy"), None)
    new_state = ConfigState(
        block, regs, smem, grid_new, ilp_new, blocks_new, theo_new, achieved_new, waves_new, limiter
    )
    now_state = ConfigState(
        inputs.threads_per_block,
        inputs.registers_per_thread,
        smem_now,
        inputs.grid_blocks,
        ilp_now,
        blocks_now,
        theo_now,
        achieved_now,
        model.waves(inputs.grid_blocks, blocks_now, sms),
        occ_now.limiter,
    )
    return Prediction(
        launch_id=inputs.launch_id,
        kernel_name=inputs.kernel_name,
        change=change,
        current_duration_ns=inputs.duration_ns,
        current=now_state,
        new=new_state,
        predicted=Predicted(predicted_ns, speedup, low, high, duration_low, duration_high),
        regime=regime,
        binding_unit=curve.unit,
        utilization=curve.utilization,
        needed_concurrency=needed,
        basis=tuple(basis),
        findings=tuple(findings),
        narrow=narrow,
        nsight=nsight,
    )


def what_to_try(inputs: PredictInputs | LaunchAnalysis, top: int = 3, min_speedup: float = 1.02) -> list[Prediction]:
    """The best few predicted changes for a launch: full occupancy, more ILP, other block sizes, one wave of
    blocks; refused or useless ones (under `min_speedup`) left out, best first."""
    if isinstance(inputs, LaunchAnalysis):
        inputs = inputs_from_result(inputs)
    limits = device_limits(inputs.compute_capability)
    candidates: list[Change] = [Change(dynamic_shared_mem_bytes=0)] if inputs.dynamic_shared_mem_bytes else []
    candidates += [Change(warps_per_sm=limits.max_warps_per_sm)]
    candidates += [Change(ilp=inputs.ilp * k) for k in (2, 4)]
    candidates += [Change(threads_per_block=b) for b in (128, 256, 512) if b != inputs.threads_per_block]
    results: list[Prediction] = []
    for change in candidates:
        try:
            results.append(predict(inputs, change))
        except PredictionRefused:
            continue
    results = [r for r in results if r.predicted.speedup >= min_speedup]
    results.sort(key=lambda r: -r.predicted.speedup)
    return results[:top]


def with_sweep(inputs: PredictInputs, samples: Sequence[SweepSample]) -> PredictInputs:
    """The same inputs with another set of measured launches (a benchmark chooses which)."""
    return replace(inputs, sweep=tuple(samples))


def as_mapping(prediction: Prediction) -> Mapping[str, object]:
    """JSON-ready dict (the schema docs/predict.md documents)."""
    from dataclasses import asdict

    return asdict(prediction)
