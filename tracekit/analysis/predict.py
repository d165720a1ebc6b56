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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from statistics import NormalDist

import polars as pl

from tracekit.analysis import counters as c
from tracekit.analysis import model
from tracekit.analysis.achievable import access_pattern, dram_ceiling
from tracekit.analysis.occupancy import OccupancyResult, device_limits, theoretical_occupancy
from tracekit.analysis.roofline import launch_work
from tracekit.analysis.types import LaunchAnalysis
from tracekit.ceilings.types import NOMINAL, Ceiling, DeviceCeilings
from tracekit.errors import TracekitError

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
    """One unit's measured rate against its achievable ceiling for the launch's access pattern, in one unit
    (`rate_unit`: B/s where bytes were counted, else Nsight's % of the nominal peak)."""

    unit: str  # dram (stream), dram (scattered), l2, shared, fma pipe, fp64 pipe, tensor pipe, issue
    achieved: float
    ceiling: float
    source: str  # "measured: <profile>" or "nominal"
    rate_unit: str = "% of peak"

    @property
    def utilization(self) -> float:
        return self.achieved / self.ceiling if self.ceiling > 0 else 0.0

    def describe(self) -> str:
        if self.rate_unit == "B/s":
            return f"{self.unit} {self.achieved / 1e12:.3g} TB/s of the {self.ceiling / 1e12:.3g} TB/s achievable"
        return f"{self.unit} at {self.achieved:.1f}% of peak, of the {self.ceiling:.0f}% achievable"


@dataclass(frozen=True)
class DramCurve:
    """DRAM's loaded-latency curve (tracekit calibrate) and where the launch sits on it."""

    throughput_bytes_per_s: float  # the launch's DRAM bytes per second
    ceiling_bytes_per_s: float  # achievable for its access pattern
    latency: tuple[tuple[float, float], ...]  # (fraction of the curve's highest throughput, latency ns), sorted
    memory_share: float  # share of a warp's time waiting for global memory (1: unknown)
    source: str

    def latency_at(self, throughput_bytes_per_s: float) -> float:
        """Loaded latency at a throughput of this access pattern: the curve read at the same share of the
        pattern's ceiling (a scattered access queues at a lower byte rate than the read stream that drew it)."""
        return model.interpolate_latency(self.latency, throughput_bytes_per_s / self.ceiling_bytes_per_s)


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
    block_launch_per_s_per_sm: float | None = None  # one rate for every block size (tests, old callers)
    launch_rate_source: str = NOMINAL
    block_launch_rates: tuple[tuple[int, float], ...] = ()  # (threads per block, blocks/s per SM), measured
    launch_overhead_ns: float | None = None  # GPU time per dependent launch (measured)
    dram_curve: DramCurve | None = None
    ceilings_source: str = NOMINAL  # "measured: <profile>" or "nominal"
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

_FMA_PIPE = (
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
)
_FP64_PIPE = (
    "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
)
_TENSOR_PIPE = (
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active",
)
_STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
# Stall reasons that are a warp waiting for a unit to have room (queueing), not for a latency to pass.
_QUEUE_STALLS = (
    "not_selected",
    "dispatch_stall",
    "math_pipe_throttle",
    "lg_throttle",
    "mio_throttle",
    "tex_throttle",
)
_ALL_STALLS = (
    "selected",
    "wait",
    "long_scoreboard",
    "short_scoreboard",
    "branch_resolving",
    "no_instruction",
    "drain",
    "imc_miss",
    "barrier",
    "membar",
    "misc",
    "sleeping",
    *_QUEUE_STALLS,
)


def _pct_use(unit: str, pct: float | None, ceiling: Ceiling | None, source: str) -> UnitUse | None:
    """A pipe's Nsight % of peak against the achievable share of that peak (the measured ceiling / nominal)."""
    if pct is None:
        return None
    fraction = ceiling.fraction_of_nominal if ceiling is not None else None
    if ceiling is None or not ceiling.measured or not fraction:
        return UnitUse(unit, pct, 100.0, NOMINAL)
    return UnitUse(unit, pct, 100.0 * min(fraction, 1.0), ceiling.source)


def _stream_ceiling(ceilings: DeviceCeilings, read_bytes: float | None, write_bytes: float | None) -> Ceiling | None:
    """A stream's achievable DRAM rate for its read/write mix: the read-only stream, the copy (half each) and the
    write-only stream are measured; between them the DRAM time per byte is interpolated (bus turnarounds make a mix
    slower than either direction alone)."""
    copy, read, write = (
        ceilings.dram_stream_bytes_per_s,
        ceilings.dram_read_bytes_per_s,
        ceilings.dram_write_bytes_per_s,
    )
    if copy is None or read is None or write is None or not read_bytes or write_bytes is None:
        return copy
    w = write_bytes / (read_bytes + write_bytes)
    if w <= 0.5:
        inverse = (1 - 2 * w) / read.value + 2 * w / copy.value
    else:
        inverse = (2 - 2 * w) / copy.value + (2 * w - 1) / write.value
    return Ceiling(1.0 / inverse, copy.unit, copy.nominal, copy.source, None, f"stream, {w:.0%} writes")


def unit_uses(
    metrics: pl.DataFrame, ceilings: DeviceCeilings | None = None
) -> tuple[tuple[UnitUse, ...], DramCurve | None]:
    """Each unit's use from the launch's counters, against what is achievable for its access pattern on this device
    (`tracekit.analysis.achievable`: streaming vs scattered 32-byte sectors from the sector counters), and DRAM's
    loaded-latency curve with the launch's place on it. Without a DeviceCeilings, Nsight's % of nominal peak."""

    def get(*names: str) -> float | None:
        return c.metric(metrics, *names)

    uses: list[UnitUse] = []
    work = launch_work(get)
    pattern = access_pattern(*((work.data_bytes_per_sector, work.sectors_per_request) if work else (None, None)))
    dram_curve = None
    dram_pct = get("dram__cycles_active.avg.pct_of_peak_sustained_elapsed", *c.DRAM_THROUGHPUT_PCT)
    chosen = dram_ceiling(ceilings, pattern) if ceilings is not None else None
    if work is not None and work.dram_bytes is not None and chosen is not None and chosen[1].nominal:
        ceiling = chosen[1]
        if pattern.name == "stream" and ceilings is not None:
            ceiling = _stream_ceiling(ceilings, get("dram__bytes_read.sum"), get("dram__bytes_write.sum")) or ceiling
        rate = work.dram_bytes / (work.duration_ns * 1e-9)
        label = f"dram ({pattern.name})"
        uses.append(UnitUse(label, rate, ceiling.value, ceiling.source, "B/s"))
        curve = ceilings.dram_latency_curve if ceilings is not None else ()
        if curve and ceiling.measured:
            top = max(p.throughput_bytes_per_s for p in curve)
            points = tuple(sorted((p.throughput_bytes_per_s / top, p.latency_ns) for p in curve))
            dram_curve = DramCurve(rate, ceiling.value, points, _memory_share(get), ceiling.source)
    elif dram_pct is not None:
        uses.append(UnitUse(f"dram ({pattern.name})", dram_pct, 100.0, NOMINAL))
    l2_ceiling = ceilings.l2_bytes_per_s if ceilings is not None else None
    if work is not None and work.l2_bytes is not None and l2_ceiling is not None:
        uses.append(
            UnitUse("l2", work.l2_bytes / (work.duration_ns * 1e-9), l2_ceiling.value, l2_ceiling.source, "B/s")
        )
    elif (l2 := get(*c.L2_THROUGHPUT_PCT)) is not None:
        uses.append(UnitUse("l2", l2, 100.0, NOMINAL))
    shared_ceiling = ceilings.shared_bytes_per_s if ceilings is not None else None
    if work is not None and work.shared_bytes and shared_ceiling is not None:
        rate = work.shared_bytes / (work.duration_ns * 1e-9)
        uses.append(UnitUse("shared", rate, shared_ceiling.value, shared_ceiling.source, "B/s"))
    tensor: Ceiling | None = None
    if ceilings is not None and ceilings.tensor_flop_per_s:
        tensor = max(ceilings.tensor_flop_per_s.values(), key=lambda t: t.fraction_of_nominal or 0.0)
    pipes: tuple[tuple[str, float | None, Ceiling | None], ...] = (
        ("fma pipe", get(*_FMA_PIPE), ceilings.fp32_flop_per_s if ceilings is not None else None),
        ("fp64 pipe", get(*_FP64_PIPE), ceilings.fp64_flop_per_s if ceilings is not None else None),
        ("tensor pipe", get(*_TENSOR_PIPE), tensor),
    )
    for unit, pct, pipe_ceiling in pipes:
        found = _pct_use(unit, pct, pipe_ceiling, NOMINAL)
        if found is not None and found.achieved > 0:
            uses.append(found)
    issue = get(*c.ISSUE_ACTIVE_PCT)
    if issue is not None:
        uses.append(_issue_use(issue, get))
    return tuple(uses), dram_curve


def _issue_use(issue_pct: float, get: Callable[..., float | None]) -> UnitUse:
    """The issue slots: one instruction per scheduler per cycle nominal (calibrate measures no issue ceiling). Where
    warps already queue for issue (not-selected and dispatch stalls), the queueing delay shows the rate this code
    really issues at: an M/M/1 server of capacity mu at arrival rate lambda waits Wq = lambda / (mu (mu - lambda))
    cycles, so mu = (Wq lambda + sqrt((Wq lambda)^2 + 4 Wq lambda)) / (2 Wq); the smaller of mu and 1 is the
    ceiling (a dependent FMA chain with dispatch stalls issues at about 0.6 per cycle, not 1)."""
    rate = issue_pct / 100.0
    waits = [get(_STALL.format(name)) for name in ("not_selected", "dispatch_stall")]
    wq = sum(w for w in waits if w)
    cycle = sum(v for v in (get(_STALL.format(name)) for name in _ALL_STALLS) if v)
    # Warps wake together (a load returns to many at once), so some waiting shows at any load; only a queue that
    # takes a third or more of a warp's cycles says the server itself is near its capacity.
    if wq <= 0 or rate <= 0 or wq < cycle / 3:
        return UnitUse("issue", issue_pct, 100.0, NOMINAL)
    mu = (wq * rate + math.sqrt((wq * rate) ** 2 + 4 * wq * rate)) / (2 * wq)
    if mu >= 1.0:
        return UnitUse("issue", issue_pct, 100.0, NOMINAL)
    return UnitUse("issue", issue_pct, 100.0 * mu, f"queueing in this launch's issue stalls, {wq:.2g} cycles")


def _memory_share(get: Callable[..., float | None]) -> float:
    """The share of a warp's time spent waiting for global memory (long-scoreboard stalls over all warp cycles per
    issued instruction); 1 without the stall counters (Little's law on bytes alone)."""
    stalls = {name: get(_STALL.format(name)) for name in _ALL_STALLS}
    total = sum(v for v in stalls.values() if v)
    memory = stalls.get("long_scoreboard")
    if not total or memory is None:
        return 1.0
    return min(1.0, max(0.05, memory / total))


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
    ceilings: DeviceCeilings | None = None,
) -> PredictInputs:
    """The inputs of one analysed launch; `metrics` is its counters (Store.metrics), `sweep` other launches of
    the same work (default: the result's fitted sweep, as throughputs), `ceilings` the device's (the caller reads
    them: `tracekit.ceilings.ceilings_for`); without them, nominal peaks and no launch-rate term."""
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
    threads = math.prod(int(v or 1) for v in kernel.block)
    units, dram_curve = unit_uses(frame, ceilings)
    rates: tuple[tuple[int, float], ...] = ()
    overhead = None
    if ceilings is not None:
        rates = tuple(sorted((int(k), float(v.value)) for k, v in ceilings.block_launch_per_s_per_sm.items()))
        if ceilings.launch_overhead_s is not None:
            overhead = ceilings.launch_overhead_s.value * 1e9
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
        units=units,
        sweep=tuple(sweep or ()),
        nsight=nsight_estimates(frame),
        launch_rate_source=ceilings.source if ceilings is not None and rates else NOMINAL,
        block_launch_rates=rates,
        launch_overhead_ns=overhead,
        dram_curve=dram_curve,
        ceilings_source=ceilings.source if ceilings is not None else NOMINAL,
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


@lru_cache(maxsize=256)
def _fit(concurrencies: tuple[float, ...], throughputs: tuple[float, ...]) -> model.SaturationFit:
    """The sweep's fit, once per sweep (what_to_try predicts many changes from the same one)."""
    return model.fit_saturation(list(concurrencies), list(throughputs))


Throughput = Callable[[float], float]  # concurrency (warps x ILP per SM) -> relative throughput


@dataclass(frozen=True)
class _Curve:
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
class _Part:
    """One unit's throughput against concurrency, relative to now (1 at the current concurrency)."""

    unit: str
    ratio: Callable[[float], float]  # concurrency scale -> throughput / throughput now
    bound: float  # the ratio the unit cannot pass
    needed_scale: float  # the concurrency scale at which it is (nearly) at its bound


def _soft_part(unit: str, utilization: float, sharpness: float) -> _Part:
    """A unit without a latency curve: the soft min of Volkov's n / L and its achievable bound, through now."""
    latency, bound = model.from_utilization(1.0, 1.0, utilization, sharpness)
    b = bound if bound is not None else math.inf

    def ratio(scale: float) -> float:
        return model.soft_min_throughput(scale, latency, bound, sharpness)

    return _Part(unit, ratio, b, latency * b if bound is not None else math.inf)


def _dram_part(unit: str, dram: DramCurve, share: float, ceiling_scale: float) -> _Part:
    """DRAM with its measured loaded-latency curve: Little's law with latency(throughput), no sharpness to guess."""
    x0, top = dram.throughput_bytes_per_s, dram.ceiling_bytes_per_s * ceiling_scale
    curve = replace(dram, ceiling_bytes_per_s=top)

    def ratio(scale: float) -> float:
        return model.loaded_latency_throughput(scale, x0, top, curve.latency_at, share) / x0

    near = 0.95 * top
    lat_now = curve.latency_at(min(x0, top * 0.999))
    needed = near / x0 * ((1 - share) + share * curve.latency_at(near) / lat_now) if lat_now > 0 else math.inf
    return _Part(unit, ratio, top / x0, needed)


def _parts(inputs: PredictInputs, du: float = 0.0, p: float = model.DEFAULT_SHARPNESS, dc: float = 0.0) -> list[_Part]:
    parts = []
    for use in inputs.units:
        u = min(max(use.utilization + du, 0.01), 0.999)
        if use.unit.startswith("dram") and inputs.dram_curve is not None:
            share = min(max(inputs.dram_curve.memory_share + 4 * du, 0.05), 1.0)
            parts.append(_dram_part(use.unit, inputs.dram_curve, share, 1.0 - dc))
        else:
            parts.append(_soft_part(use.unit, u, p))
    return parts


def _min_of(parts: list[_Part], conc_now: float) -> Throughput:
    def throughput(conc: float) -> float:
        return min(part.ratio(conc / conc_now) for part in parts)

    return throughput


def _curve(
    inputs: PredictInputs, current_conc: float, findings: list[Finding], work_of: Callable[[float], float]
) -> _Curve:
    """`work_of` turns a measured duration of the same grid into its work time (launch overhead and block starts
    taken out), so a sweep is fitted on the work alone and block starts are added back once."""
    samples = [s for s in inputs.sweep if s.warps_per_sm > 0 and s.duration_ns > 0]
    levels = sorted({round(s.warps_per_sm * s.ilp, 1) for s in samples})
    if len(levels) >= MIN_SWEEP_OCCUPANCIES and levels[-1] / levels[0] >= MIN_SWEEP_SPAN:
        conc = [s.warps_per_sm * s.ilp for s in samples]
        thr = [1.0 / work_of(s.duration_ns) for s in samples]
        fit = _fit(tuple(conc), tuple(thr))
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

        def fitted(conc: float) -> float:
            return model.soft_min_throughput(conc, fit.latency, fit.bound, fit.sharpness)

        return _Curve(
            fit=fit,
            throughput=fitted,
            alternatives=(),
            bound=fit.bound,
            needed=model.needed_concurrency(fit.latency, fit.bound) if fit.bound else None,
            basis="a measured sweep",
            unit=None,
            utilization=None,
            relative_error=2 * fit.rms_log_error + 0.01,
            measured_range=(levels[0], levels[-1]),
            binding=lambda conc: None,
        )
    if not inputs.units:
        raise PredictionRefused(
            "cannot tell latency-bound from throughput-bound: the launch has no Nsight Compute counters "
            "(SpeedOfLight, ComputeWorkloadAnalysis, SchedulerStats sections) and no occupancy sweep of three or "
            "more occupancies; profile it with ncu, or at two more occupancies"
        )
    parts = _parts(inputs)
    alternatives = tuple(
        _min_of(_parts(inputs, sign * 0.05, p, sign * 0.05), current_conc)
        for p in model.SHARPNESS_RANGE
        for sign in (-1, 1)
    )
    tightest = min(parts, key=lambda part: part.bound)
    top = max(inputs.units, key=lambda u: u.utilization)
    u = min(top.utilization, 0.999)
    for use in sorted(inputs.units, key=lambda x: -x.utilization):
        findings.append(
            Finding(
                "regime",
                f"{use.describe()} ({use.source}): {use.utilization:.0%} of what it can reach",
                use.utilization,
            )
        )
    dram = inputs.dram_curve
    if dram is not None:
        findings.append(
            Finding(
                "model",
                f"DRAM by Little's law with its loaded latency ({dram.source}): a warp waits for memory "
                f"{dram.memory_share:.0%} of its time (long-scoreboard stalls), memory latency "
                f"{dram.latency_at(min(dram.throughput_bytes_per_s, dram.ceiling_bytes_per_s * 0.999)):.0f} ns now, "
                "growing along the measured curve as throughput nears the ceiling",
                dram.memory_share,
            )
        )
    findings.append(
        Finding(
            "regime",
            f"busiest unit: {top.unit}, {u:.0%} of its achievable bound: "
            + ("throughput-bound" if u >= 0.9 else "latency-bound, below the knee" if u < 0.6 else "near the knee"),
            u,
        )
    )

    def binding(conc: float) -> str | None:
        return min(parts, key=lambda part: part.ratio(conc / current_conc)).unit

    return _Curve(
        fit=None,
        throughput=_min_of(parts, current_conc),
        alternatives=alternatives,
        bound=tightest.bound,
        needed=current_conc * min(part.needed_scale for part in parts),
        basis="this launch's counters",
        unit=top.unit,
        utilization=u,
        relative_error=0.02,
        measured_range=None,
        binding=binding,
    )


def _launch_rate(inputs: PredictInputs, block: int) -> tuple[float, str] | None:
    """Blocks started per second per SM for this block size: the measured rate of the nearest measured size at or
    above it (the largest beyond the sweep); None when the device's rate was not measured."""
    if inputs.block_launch_rates:
        sizes = [size for size, _ in inputs.block_launch_rates]
        chosen = next((size for size in sizes if size >= block), sizes[-1])
        return dict(inputs.block_launch_rates)[chosen], inputs.launch_rate_source
    if inputs.block_launch_per_s_per_sm:
        return inputs.block_launch_per_s_per_sm, inputs.launch_rate_source
    return None


def _expected_max_normal(k: int) -> float:
    """E[max of k independent standard normals] (Blom's approximation; 0 for one)."""
    if k <= 1:
        return 0.0
    return NormalDist().inv_cdf((k - 0.375) / (k + 0.25))


def _residency(keep: float, block_now: int, block_new: int, waves_now: float, trips: float = 1.0) -> tuple[float, str]:
    """The share of theoretical warps a new configuration keeps resident. A block frees its slot only when its last
    warp ends, so the warps that finished first leave their slots idle: with warp lifetimes spread by a coefficient
    of variation cv, a block of k warps lives E[max of k] = m (1 + cv x s_k) for mean m, and keeps m / E[max] of its
    slots busy. cv is read from the launch's own lost share (the whole gap taken as end spread, so an upper bound:
    block starts cost some too); only a launch of two or more waves shows it. A warp that runs `trips` times the
    loop iterations (the same work over fewer threads) sums that many iteration times, so its spread shrinks as
    1 / sqrt(trips) (central limit)."""
    k_now, k_new = max(1, math.ceil(block_now / 32)), max(1, math.ceil(block_new / 32))
    s_now, s_new = _expected_max_normal(k_now), _expected_max_normal(k_new)
    if (k_new == k_now and abs(trips - 1.0) < 1e-9) or s_now <= 0 or waves_now < 2 or keep >= 0.999:
        return keep, "the same share: "
    cv = (1.0 / keep - 1.0) / s_now
    cv_new = cv / math.sqrt(max(trips, 1.0))
    kept = 1.0 / (1.0 + cv_new * s_new)
    longer = f", {trips:.3g}x the loop iterations per warp (cv / sqrt of it)" if trips > 1.0 else ""
    return kept, (
        f"a block frees its slot when its last warp ends: warp lifetimes spread by cv {cv:.2f} (from that lost "
        f"share at {k_now} warps per block){longer} keep {kept:.0%} at {k_new} warps per block: "
    )


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
    waves_now = model.waves(inputs.grid_blocks, blocks_now, sms)
    # The measured achieved warps are a time average: they include this launch's own tail (and a grid under one
    # wave holds fewer blocks). What is left of the gap is the blocks' own residency (warps that end early).
    achieved_now = inputs.achieved_warps_per_sm or theo_now * model.wave_residency(waves_now)

    def kept(smear: float) -> float:
        # Not capped at 1: a measurement a little above the tail model's share stays as measured, so an unchanged
        # configuration keeps exactly the warps it has.
        return achieved_now / (theo_now * model.wave_residency(waves_now, smear))

    keep = kept(model.TAIL_SMEAR)

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
    trips = inputs.grid_blocks * inputs.threads_per_block / (grid_new * block)
    waves_new = model.waves(grid_new, blocks_new, sms)

    def achieved_at(smear: float) -> tuple[float, float, str]:
        # (achieved warps per SM after the change, block residency kept, its reasoning) at a tail smear
        # A block that loops `trips` times the iterations sums them, so its length spreads 1 / sqrt(trips) as much
        # (central limit) and its tail is nearer lockstep.
        keep_new, text = _residency(kept(smear), inputs.threads_per_block, block, waves_now, trips)
        return theo_new * keep_new * model.wave_residency(waves_new, smear / math.sqrt(max(trips, 1.0))), keep_new, text

    achieved_new, keep_new, spread_text = achieved_at(model.TAIL_SMEAR)
    tail_now = model.wave_residency(waves_now)
    tail_new = model.wave_residency(waves_new, model.TAIL_SMEAR / math.sqrt(max(trips, 1.0)))
    achieved_span = [achieved_at(s)[0] for s in model.TAIL_SMEAR_RANGE]
    findings.append(
        Finding(
            "achieved",
            f"the launch keeps {achieved_now:.1f} of {theo_now:g} warps resident on average: {tail_now:.0%} of its "
            f"block slots held over {waves_now:.2f} waves (the tail) and {keep:.0%} of each block's warps; "
            f"{spread_text}{keep_new:.0%} of {theo_new:g} warps x {tail_new:.0%} of the slots held over "
            f"{waves_new:.2f} waves is {achieved_new:.1f} warps per SM on average"
            + (
                f" ({min(achieved_span):.1f}-{max(achieved_span):.1f} from a tail spread over a block time to "
                "lockstep equal blocks)"
                if max(achieved_span) - min(achieved_span) > 0.005 * achieved_new
                else ""
            ),
            achieved_new,
            "warps/SM",
        )
    )
    if regs < inputs.registers_per_thread:
        findings.append(
            Finding(
                "occupancy",
                f"registers capped at {regs} per thread (__launch_bounds__ or -maxrregcount) from "
                f"{inputs.registers_per_thread}: assumes the compiler fits the kernel without spilling; spills add "
                "local-memory traffic this prediction does not count",
                float(regs),
            )
        )
    if change.grid_blocks is not None and grid_new != inputs.grid_blocks:
        trips = inputs.grid_blocks * inputs.threads_per_block / (grid_new * block)
        findings.append(
            Finding(
                "waves",
                f"the same work over {grid_new} blocks: each thread's loop runs {trips:.3g}x the iterations it runs "
                "now (a grid-stride loop); the loop's own ILP and per-iteration cost are taken as now, which a "
                "launch of one iteration per thread cannot show",
                trips,
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

    rated = _launch_rate(inputs, block)
    rated_now = _launch_rate(inputs, inputs.threads_per_block)
    overhead = inputs.launch_overhead_ns or 0.0
    overhead = overhead if overhead < 0.5 * inputs.duration_ns else 0.0
    launch_now = model.launch_time_ns(inputs.grid_blocks, rated_now[0], sms) if rated_now else 0.0
    launch_new = model.launch_time_ns(grid_new, rated[0], sms) if rated else 0.0

    def work_of(duration_ns: float) -> float:
        busy = duration_ns - overhead
        return model.remove_launch_time(busy, launch_now) if launch_now else busy

    curve = _curve(inputs, conc_now, findings, work_of)
    basis = [curve.basis]
    if inputs.has_warp_trace:
        basis.append("a warp trace")
    if curve.unit is not None or rated is not None:
        basis.append(f"the device's ceilings ({inputs.ceilings_source})")

    def duration_with(throughput: Throughput, conc: float = conc_new) -> float:
        # Both concurrencies are time averages over their launch, tail included, as the sweep's points are.
        x_now, x_new = throughput(conc_now), throughput(conc)
        work = work_of(inputs.duration_ns) * (x_now / x_new if x_new > 0 else math.inf)
        return overhead + (model.combine_times(work, launch_new) if launch_new else work)

    predicted_ns = duration_with(curve.throughput)
    spread = [duration_with(alt) for alt in curve.alternatives] or [predicted_ns]
    # The tail's unknown smear (few waves): its own span of durations, compounded with the curve's.
    tail_spread = [duration_with(curve.throughput, a * ilp_new) for a in achieved_span]
    err = curve.relative_error
    if curve.measured_range is not None:
        lo, hi = curve.measured_range
        if not lo * 0.95 <= conc_new <= hi * 1.05:
            err += 0.25 * abs(math.log(conc_new / (hi if conc_new > hi else lo)))  # extrapolated
    duration_low = min(min(spread), predicted_ns) * min(min(tail_spread) / predicted_ns, 1.0) * (1 - err)
    duration_high = max(max(spread), predicted_ns) * max(max(tail_spread) / predicted_ns, 1.0) * (1 + err)

    findings.append(
        Finding(
            "waves",
            f"{grid_new} blocks in {waves_new:.2f} waves of {blocks_new} x {sms} SMs"
            + (
                f"; the last wave holds {math.fmod(waves_new, 1):.0%} of the slots, and blocks of unequal length "
                f"spread the tail: {tail_new:.0%} of the slots held on average"
                if waves_new > 1 and 0 < math.fmod(waves_new, 1) < 0.999
                else "; under one wave, so fewer warps in flight than the SM holds"
                if waves_new < 1
                else f"; blocks of unequal length spread the tail: {tail_new:.0%} of the slots held on average"
            ),
            waves_new,
        )
    )
    findings.append(
        Finding(
            "launch_rate",
            f"block starts at {rated[0] / 1e6:.1f} per us per SM for {block}-thread blocks ({rated[1]}): "
            f"{launch_new / 1e3:.1f} us for {grid_new} blocks, now {launch_now / 1e3:.1f} us for "
            f"{inputs.grid_blocks}"
            + (f"; {overhead / 1e3:.2f} us per launch ({inputs.ceilings_source})" if overhead else "")
            if rated
            else "no measured block launch rate for this device (tracekit calibrate): block starts not modelled",
            launch_new if rated else None,
            "ns" if rated else None,
        )
    )
    bound_now = curve.bound if curve.bound is not None and math.isfinite(curve.bound) else None
    regime = (
        "launch"
        if launch_new > 0.7 * predicted_ns
        else ("throughput" if bound_now is not None and curve.throughput(conc_new) > 0.9 * bound_now else "latency")
    )
    needed = curve.needed if curve.needed is not None and math.isfinite(curve.needed) else None
    binding_unit = curve.binding(conc_new) if curve.unit is not None else None
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
        if curve.unit is not None and inputs.ceilings_source == NOMINAL:
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
        waves_now,
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
        binding_unit=binding_unit,
        utilization=next((u.utilization for u in inputs.units if u.unit == binding_unit), curve.utilization),
        needed_concurrency=needed,
        basis=tuple(basis),
        findings=tuple(findings),
        narrow=narrow,
        nsight=nsight,
    )


KNOBS = ("block", "regs", "smem", "ilp", "grid", "warps_per_sm")


def knob_of(change: Change) -> str:
    """Which knob a change turns (the first set: block, regs, smem, ilp, grid, warps_per_sm)."""
    for knob, value in zip(
        KNOBS,
        (
            change.threads_per_block,
            change.registers_per_thread,
            change.dynamic_shared_mem_bytes,
            change.ilp,
            change.grid_blocks,
            change.warps_per_sm,
        ),
        strict=True,
    ):
        if value is not None:
            return knob
    return "none"


def _largest(low: int, high: int, step: int, blocks_at: Callable[[int], int]) -> Callable[[int], int | None] | None:
    """For a resource whose use lowers blocks per SM (registers, shared memory): the largest amount, in `step`s from
    `low` up to `high`, that still fits `wanted` blocks (binary search: blocks per SM never rise with use)."""
    if high < low:
        return None

    def largest(wanted: int) -> int | None:
        lo, hi = 0, (high - low) // step
        if blocks_at(low) < wanted:
            return None
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if blocks_at(low + mid * step) >= wanted:
                lo = mid
            else:
                hi = mid - 1
        return low + lo * step

    return largest


def _candidates(inputs: PredictInputs) -> list[Change]:
    """The changes worth predicting, per knob: block sizes 64-1024; registers capped (__launch_bounds__) at the most
    that fits each extra block per SM; dynamic shared memory cut to the most that fits each extra block; ILP 2x and
    4x; the grid as one and two full waves."""
    cc, block, regs = inputs.compute_capability, inputs.threads_per_block, inputs.registers_per_thread
    limits = device_limits(cc)
    smem_static, smem_dyn = inputs.static_shared_mem_bytes, inputs.dynamic_shared_mem_bytes
    now = _occupancy(cc, block, regs, smem_static + smem_dyn)
    changes = [Change(threads_per_block=b) for b in (64, 128, 256, 512, 1024) if b != block]
    most_blocks = min(limits.max_blocks_per_sm, limits.max_warps_per_sm // now.warps_per_block)
    for wanted in range(now.active_blocks_per_sm + 1, most_blocks + 1):
        capped = _largest(
            16, regs - 1, 8, lambda r: theoretical_occupancy(cc, block, r, smem_static + smem_dyn).active_blocks_per_sm
        )
        if capped is not None and capped(wanted) is not None:
            changes.append(Change(registers_per_thread=capped(wanted)))
        if smem_dyn:
            cut = _largest(
                0,
                smem_dyn - 1,
                256,
                lambda d: theoretical_occupancy(cc, block, regs, smem_static + d).active_blocks_per_sm,
            )
            if cut is not None and cut(wanted) is not None:
                changes.append(Change(dynamic_shared_mem_bytes=cut(wanted)))
    changes += [Change(ilp=inputs.ilp * k) for k in (2, 4)]
    blocks_per_sm = now.active_blocks_per_sm
    for waves in (1, 2):
        grid = waves * blocks_per_sm * inputs.sm_count
        if grid != inputs.grid_blocks:
            changes.append(Change(grid_blocks=grid))
    unique: list[Change] = []
    for change in changes:
        if change not in unique:
            unique.append(change)
    return unique


def what_to_try(inputs: PredictInputs | LaunchAnalysis, top: int = 5, min_speedup: float = 1.02) -> list[Prediction]:
    """The best predicted change of each knob the issue names (block size, registers via __launch_bounds__, dynamic
    shared memory, ILP, grid), best first; refused configurations and changes under `min_speedup` left out. Each is a
    full Prediction: speed-up, interval, basis, and Nsight Compute's estimate where the report has one."""
    if isinstance(inputs, LaunchAnalysis):
        inputs = inputs_from_result(inputs)
    best: dict[str, Prediction] = {}
    for change in _candidates(inputs):
        try:
            found = predict(inputs, change)
        except PredictionRefused:
            continue
        knob = knob_of(change)
        if found.predicted.speedup >= min_speedup and (
            knob not in best or found.predicted.speedup > best[knob].predicted.speedup
        ):
            best[knob] = found
    return sorted(best.values(), key=lambda r: -r.predicted.speedup)[:top]


def with_sweep(inputs: PredictInputs, samples: Sequence[SweepSample]) -> PredictInputs:
    """The same inputs with another set of measured launches (a benchmark chooses which)."""
    return replace(inputs, sweep=tuple(samples))


def as_mapping(prediction: Prediction) -> Mapping[str, object]:
    """JSON-ready dict (the schema docs/predict.md documents)."""
    from dataclasses import asdict

    return asdict(prediction)
