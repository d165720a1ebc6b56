"""What a GPU can really reach: measured (or nominal) ceilings per unit and access pattern.

Pure types, no I/O: tracekit/analysis imports them. A `DeviceCeilings` comes from `tracekit.ceilings.ceilings_for`
(a shipped or user profile measured by `tracekit calibrate`, else the datasheet's nominal peaks)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

NOMINAL = "nominal"
PROFILE_SCHEMA = "tracekit.ceilings/1"
# The DRAM stream mixes calibrate measures (reads:writes per element) and the share of their DRAM bytes written.
STREAM_MIXES = {"1:0": 0.0, "2:1": 1.0 / 3.0, "1:1": 0.5, "0:1": 1.0}


def mix_position(first: str, second: str, write_fraction: float) -> float | None:
    """Where a write share lies between two measured mixes: 0 at the first, 1 at the second (clamped)."""
    w0, w1 = STREAM_MIXES.get(first), STREAM_MIXES.get(second)
    if w0 is None or w1 is None or w0 == w1:
        return None
    return min(1.0, max(0.0, (write_fraction - w0) / (w1 - w0)))


def between_mixes(first_bytes_per_s: float, second_bytes_per_s: float, position: float) -> float:
    """The stream rate between two mixes: DRAM time per byte is linear in the write share (the bus turns around
    between reads and writes), 1 / X = (1 - t) / C_0 + t / C_1."""
    return 1.0 / ((1.0 - position) / first_bytes_per_s + position / second_bytes_per_s)


@dataclass(frozen=True)
class Ceiling:
    """One ceiling: the plateau of a measured sweep, or a nominal peak when nothing was measured.

    `source` is "measured: <profile file>" or "nominal"; `nominal` is the datasheet peak for the same quantity (None
    where NVIDIA publishes none, e.g. L2 bytes/s or block launch rate); `spread_fraction` is (max - min) / value over
    the repeats at the plateau point (None for nominal values); `detail` says how it was measured."""

    value: float
    unit: str
    nominal: float | None
    source: str
    spread_fraction: float | None = None
    detail: str = ""
    # Where a real kernel ran faster than the microbenchmarks: their plateau, and the kernel that set `value`.
    benchmark_value: float | None = None
    observed_by: str = ""

    @property
    def measured(self) -> bool:
        return self.source != NOMINAL

    @property
    def fraction_of_nominal(self) -> float | None:
        """value / nominal: how much of the datasheet peak is achievable (None without a nominal)."""
        if self.nominal is None or self.nominal <= 0:
            return None
        return self.value / self.nominal


@dataclass(frozen=True)
class Observation:
    """The fastest rate a real kernel reached on one ceiling's unit, read from its Nsight Compute counters.

    A profile carries them (`observations`) so that a ceiling is never below a kernel that ran: the achievable
    ceiling is the larger of the microbenchmarks' plateau and the best observation (issue 26)."""

    ceiling: str  # the DeviceCeilings field ("tensor_flop_per_s.bf16" for a type, "dram_stream_by_mix.2:1")
    value: float  # in the ceiling's unit
    kernel: str
    file: str  # the export it came from (relative to the repo, or "real_exports/<name>")
    launch_index: int  # the launch's index in its import
    counters: str = ""  # what the rate was computed from
    # DRAM rates: the launch's share of scattered sectors and of bytes written, so that a blended or interpolated
    # ceiling ("<stream>+dram_random_sector_...", "dram_stream_by_mix.1:0~2:1") is raised exactly as far as needed
    scattered_fraction: float | None = None
    write_fraction: float | None = None

    @property
    def provenance(self) -> str:
        return f"{self.kernel} ({self.file}#{self.launch_index})"


@dataclass(frozen=True)
class ConcurrencyPoint:
    """A DRAM read stream's throughput at a given number of bytes in flight per SM (Little's law: throughput =
    bytes in flight x SMs / latency, until DRAM saturates)."""

    bytes_in_flight_per_sm: float
    throughput_bytes_per_s: float


@dataclass(frozen=True)
class LatencyPoint:
    """One point of DRAM's loaded-latency curve: mean load latency seen while DRAM carries this throughput.

    Little's law links the two: bytes in flight = throughput x latency (Volkov 2016, ch. 3)."""

    throughput_bytes_per_s: float
    latency_ns: float
    background_warps_per_sm: int = 0


@dataclass(frozen=True)
class DeviceCeilings:
    """Every ceiling of one device. A field is None when neither a measurement nor a nominal peak exists.

    dram_stream_bytes_per_s is a streaming copy (read + write bytes); read-only and write-only streams are beside it.
    dram_random_sector_bytes_per_s counts 32-byte sectors moved by random 4-byte loads (32 B per load).
    tensor_flop_per_s is keyed by input type ("fp16", "bf16", "tf32", "fp8"); block_launch_per_s_per_sm by
    threads per block. `source` is "measured: <file>" for a profile, "nominal" for datasheet peaks alone."""

    device_name: str
    compute_capability: str | None
    sm_count: int | None
    source: str
    dram_stream_bytes_per_s: Ceiling | None = None
    dram_read_bytes_per_s: Ceiling | None = None
    dram_write_bytes_per_s: Ceiling | None = None
    dram_random_sector_bytes_per_s: Ceiling | None = None
    l2_bytes_per_s: Ceiling | None = None
    shared_bytes_per_s: Ceiling | None = None
    fp32_flop_per_s: Ceiling | None = None
    fp64_flop_per_s: Ceiling | None = None
    tensor_flop_per_s: Mapping[str, Ceiling] = field(default_factory=dict)
    block_launch_per_s_per_sm: Mapping[int, Ceiling] = field(default_factory=dict)
    launch_overhead_s: Ceiling | None = None
    dram_unloaded_latency_ns: Ceiling | None = None
    dram_latency_curve: tuple[LatencyPoint, ...] = ()
    # the stream ceiling per read:write mix ("1:0", "1:1", "2:1", "0:1"); dram_stream_bytes_per_s is the best of them
    dram_stream_by_mix: Mapping[str, Ceiling] = field(default_factory=dict)
    dram_concurrency_curve: tuple[ConcurrencyPoint, ...] = ()
    observations: tuple[Observation, ...] = ()
    clocks: Mapping[str, float] = field(default_factory=dict)
    driver: str | None = None
    command: str | None = None
    measured_at: str | None = None
    basis: str = ""

    @property
    def measured(self) -> bool:
        return self.source != NOMINAL

    def block_launch_ceiling(self, threads_per_block: int) -> Ceiling | None:
        """The measured block launch rate per SM for the nearest measured block size at or above this one (a
        block of 96 threads is judged by the 128-thread rate); the largest measured size beyond the sweep."""
        size = self.block_launch_size(threads_per_block)
        return None if size is None else self.block_launch_per_s_per_sm[size]

    def block_launch_size(self, threads_per_block: int) -> int | None:
        """The measured block size whose launch rate judges blocks of this many threads."""
        if not self.block_launch_per_s_per_sm:
            return None
        sizes = sorted(self.block_launch_per_s_per_sm)
        return next((s for s in sizes if s >= threads_per_block), sizes[-1])

    def dram_ceiling(self, scattered: bool) -> Ceiling | None:
        """The achievable DRAM ceiling for an access pattern: scattered 32-byte sectors or a stream."""
        chosen = self.dram_random_sector_bytes_per_s if scattered else self.dram_stream_bytes_per_s
        return chosen or self.dram_stream_bytes_per_s

    def latency_at(self, throughput_bytes_per_s: float) -> float | None:
        """Mean DRAM load latency (ns) interpolated on the loaded-latency curve at this throughput; beyond the last
        measured point, the last point's latency (the curve's knee is where queues grow without bound)."""
        points = sorted(self.dram_latency_curve, key=lambda p: p.throughput_bytes_per_s)
        if not points:
            return self.dram_unloaded_latency_ns.value if self.dram_unloaded_latency_ns else None
        if throughput_bytes_per_s <= points[0].throughput_bytes_per_s:
            return points[0].latency_ns
        for low, high in zip(points, points[1:], strict=False):
            if throughput_bytes_per_s <= high.throughput_bytes_per_s:
                span = high.throughput_bytes_per_s - low.throughput_bytes_per_s
                t = 0.0 if span <= 0 else (throughput_bytes_per_s - low.throughput_bytes_per_s) / span
                return low.latency_ns + t * (high.latency_ns - low.latency_ns)
        return points[-1].latency_ns
