"""The prediction's typed inputs and result: frozen dataclasses whose field names are `predict --json`'s keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from tracekit.analysis import model
from tracekit.analysis.rules.base import Value
from tracekit.ceilings.types import NOMINAL
from tracekit.errors import TracekitError


class PredictionRefused(TracekitError):
    """A configuration the device cannot run, or a launch without the data a prediction needs."""


# The knobs a user names (`tracekit predict --block`, `results.predict(block=...)`) and the `Change` field each sets,
# in the order a change is named by its first knob set (the one home of this map).
KNOB_FIELDS = {
    "block": "threads_per_block",
    "regs": "registers_per_thread",
    "smem": "dynamic_shared_mem_bytes",
    "ilp": "ilp",
    "grid": "grid_blocks",
    "warps_per_sm": "warps_per_sm",
}
KNOBS = tuple(KNOB_FIELDS)


class Knobs(TypedDict, total=False):
    """The knobs as keyword arguments (`predict_stored(store, result, block=512)`); None keeps the launch's own."""

    block: int | None
    regs: int | None
    smem: int | None
    ilp: float | None
    grid: int | None
    warps_per_sm: int | None


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

    @classmethod
    def from_knobs(cls, knobs: Mapping[str, object]) -> Change:
        """The change that `knobs` name (`block=512, regs=32`); an unknown knob is one line."""
        unknown = set(knobs) - set(KNOB_FIELDS)
        if unknown:
            raise TracekitError(f"unknown knob(s) {', '.join(sorted(unknown))}: {', '.join(KNOBS)}")
        return cls(**{KNOB_FIELDS[knob]: value for knob, value in knobs.items()})  # type: ignore[arg-type]

    def knobs(self) -> dict[str, float]:
        """The knobs this change sets, in `KNOBS` order (what `from_knobs` reads back)."""
        found = {knob: getattr(self, name) for knob, name in KNOB_FIELDS.items()}
        return {knob: value for knob, value in found.items() if value is not None}


def knob_of(change: Change) -> str:
    """Which knob a change turns (the first set, in `KNOBS` order), or "none"."""
    return next(iter(change.knobs()), "none")


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

    @property
    def knots_bytes_per_s(self) -> tuple[float, ...]:
        """The throughputs between which `latency_at` is linear (the curve's points)."""
        return tuple(fraction * self.ceiling_bytes_per_s for fraction, _ in self.latency)


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
    # What the latency-hiding model cannot see, read from the counters (`predict.uncertainty`): block barriers (a
    # block waits for its slowest warp: per-row parallelism), the share of global loads L1 serves and those bytes
    # per DRAM byte (footprint: the DRAM traffic added if a change pushes them all out of L1), and register
    # spills: the share of DRAM bytes the global accesses need (None: no local-memory traffic).
    # Each unit as the verdict judged it (the launch's achievable ceilings: unit, share of its achievable ceiling):
    # no predicted change may run one above it.
    judged: tuple[tuple[str, float], ...] = ()
    uses_barriers: bool = False
    l1_hit_rate: float | None = None
    l1_served_per_dram_byte: float | None = None
    spill_free_share: float | None = None
    instructions_per_warp: float | None = None  # warp instructions each warp of the launch ran, on average
    # The cache footprint (`predict.footprint`): DRAM bytes the launch read, the device's L2 size and the shared
    # memory carveout the driver chose for it (the rest of the SM's unified L1 caches global loads).
    dram_read_bytes: float | None = None
    l2_bytes: float | None = None
    shared_carveout_bytes: float | None = None


@dataclass(frozen=True)
class Finding:
    """One step of the reasoning as data (`template` and `values`); `text` is its sentence, empty until
    `tracekit.present.rules` words the prediction; `value` and `unit` its headline number."""

    step: str  # occupancy, achieved, concurrency, regime, model, waves, launch_rate, uncertainty, result
    template: str
    values: tuple[Value, ...]
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
    narrow: str | None  # what measurement would narrow a wide interval: None until worded from `narrowing`
    nsight: NsightEstimate | None
    unseen: tuple[str, ...] = ()  # effects the model cannot see that widened the interval (blind-spot ids)
    # what would narrow a wide interval, as data (`tracekit.present.rules` words it into `narrow`)
    narrowing: Finding | None = field(default=None, metadata={"json": False})
