"""A unit's utilization against the ceiling it can really reach for the launch's access pattern (issue 20).

Nominal peaks overstate what a unit can do: on the H100 a streaming copy plateaus near 84% of nominal DRAM
bandwidth and random 32-byte sectors near 62% (tracekit/ceilings/profiles/). A launch is judged against the
measured ceiling that matches its pattern, and both fractions are stated. Pure functions over numbers and a
DeviceCeilings; the engine passes the counters."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tracekit.ceilings.types import STREAM_MIXES, Ceiling, DeviceCeilings, between_mixes, mix_position

# A unit at or above this share of its achievable ceiling is at the ceiling: the repeats of a calibrated plateau
# spread by up to ~5% and two calibrate runs differ by up to ~1-4%, so 85% stays clear of noise on both sides while
# the loaded-latency curve is already in its steep part there (Volkov 2016, ch. 3: gradual saturation).
AT_CEILING_FRACTION = 0.85

# Bytes of data a fully used 32-byte sector carries, and what one 4-byte element of a scattered access uses.
SECTOR_BYTES = 32.0
SCATTERED_DATA_BYTES = 4.0


# How near a launch's share of DRAM bytes written must be to a measured mix's (STREAM_MIXES) to be judged by it
# alone, not interpolated.
MIX_MATCH = 0.02

UNIT_CEILINGS = {
    "l2": "l2_bytes_per_s",
    "shared": "shared_bytes_per_s",
    "fp32": "fp32_flop_per_s",
    "fp64": "fp64_flop_per_s",
}


class AccessKind(StrEnum):
    """A launch's global loads, from their share of scattered sectors (`AccessPattern.kind`)."""

    STREAM = "stream"  # at most a tenth scattered
    SCATTERED = "scattered"  # at least nine tenths
    MIXED = "mixed"  # between: judged by the blend of the stream and scattered ceilings


class AccessBasis(StrEnum):
    """Which counters an access pattern was read from (`tracekit.present.rules.ceilings` words it with the
    pattern's numbers: the JSON's `access_basis`)."""

    BYTES_PER_SECTOR = "bytes-per-sector"  # data bytes used per 32-byte sector of the LSU's global loads
    SECTORS_PER_REQUEST = "sectors-per-request"  # sectors per load request against a coalesced request's
    NO_LSU_LOADS = "no-lsu-loads"  # only TMA bulk copies: a stream
    NO_SECTOR_COUNTERS = "no-sector-counters"  # assumed a stream


# A share of scattered sectors at or below this is a stream, at or above 1 - this scattered; between, a mix.
PURE_PATTERN_FRACTION = 0.1


@dataclass(frozen=True)
class AccessPattern:
    """How scattered a launch's global loads are: 0 = every sector fully used (a stream), 1 = one 4-byte element
    per 32-byte sector (a random gather). `basis` is the counter it came from, with its value."""

    scattered_fraction: float
    basis: AccessBasis
    # DRAM bytes read / (read + written) (dram__bytes_read.sum, dram__bytes_write.sum): which read:write stream
    # ceiling applies; None where the counters are missing
    read_fraction: float | None = None
    data_bytes_per_sector: float | None = None  # the counter it was read from (basis bytes-per-sector) ...
    sectors_per_request: float | None = None  # ... or this one (basis sectors-per-request)
    tma_fraction: float = 0.0  # the share of global load sectors TMA bulk copies moved (they count as a stream)

    @property
    def kind(self) -> AccessKind:
        if self.scattered_fraction <= PURE_PATTERN_FRACTION:
            return AccessKind.STREAM
        if self.scattered_fraction >= 1.0 - PURE_PATTERN_FRACTION:
            return AccessKind.SCATTERED
        return AccessKind.MIXED


def _read_fraction(dram_read_bytes: float | None, dram_write_bytes: float | None) -> float | None:
    if dram_read_bytes is None or dram_write_bytes is None or dram_read_bytes + dram_write_bytes <= 0:
        return None
    return dram_read_bytes / (dram_read_bytes + dram_write_bytes)


# Bits of the access widths Nsight counts instructions of (smsp__sass_inst_executed_op_memory_<bits>b.sum).
ACCESS_WIDTHS_BITS = (8, 16, 32, 64, 128)


def ideal_sectors_per_request(instructions_by_width_bits: dict[int, float]) -> float | None:
    """Sectors a fully coalesced warp request needs: 32 threads x width / 32-byte sectors (4 for 32-bit loads, 16
    for 128-bit ones), weighted by the instructions of each width; None without any."""
    counts = {bits: n for bits, n in instructions_by_width_bits.items() if n}
    if not counts:
        return None
    return sum(n * bits / 8 for bits, n in counts.items()) / sum(counts.values())


def _tma_share(lsu_sectors: float | None, tma_sectors: float | None) -> float:
    """The share of global load sectors that TMA bulk copies moved (0 without TMA counters)."""
    if not tma_sectors or tma_sectors <= 0:
        return 0.0
    return tma_sectors / (tma_sectors + max(lsu_sectors or 0.0, 0.0))


def access_pattern(
    data_bytes_per_sector: float | None,
    sectors_per_request: float | None = None,
    dram_read_bytes: float | None = None,
    dram_write_bytes: float | None = None,
    lsu_load_sectors: float | None = None,
    tma_load_sectors: float | None = None,
    ideal_sectors: float | None = None,
) -> AccessPattern:
    """The pattern from Nsight Compute's bytes used per sector of global loads
    (smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio: 32 for a stream, 4 for scattered 4-byte
    loads); else from sectors per request against what a coalesced request of the launch's access widths needs
    (`ideal_sectors`: 4 for 4-byte loads, 16 for 16-byte ones, whose 16 sectors per request are a stream; 4 when
    the widths are unknown), up to 32 when every lane has its own sector. DRAM's read and
    written bytes give the read:write mix whose stream ceiling applies.

    Both counters see only the LSU's loads. TMA bulk copies (cp.async.bulk, Hopper's tensor-map loads) do not go
    through the LSU sector path: they move whole tiles, a stream (CUDA C++ Programming Guide, "Asynchronous Data
    Copies using the Tensor Memory Accelerator"). With TMA read sectors counted
    (l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld), the LSU's pattern weighs only its share of the load
    sectors: a GEMM's few scalar LSU loads (4 of 32 bytes used) beside 250 M TMA sectors are no scattered access."""
    reads = _read_fraction(dram_read_bytes, dram_write_bytes)
    tma = _tma_share(lsu_load_sectors, tma_load_sectors)
    if data_bytes_per_sector is not None and data_bytes_per_sector > 0:
        share = (SECTOR_BYTES - data_bytes_per_sector) / (SECTOR_BYTES - SCATTERED_DATA_BYTES)
        scattered = min(1.0, max(0.0, share)) * (1.0 - tma)
        return AccessPattern(
            scattered,
            AccessBasis.BYTES_PER_SECTOR,
            reads,
            data_bytes_per_sector=data_bytes_per_sector,
            tma_fraction=tma,
        )
    if sectors_per_request is not None and sectors_per_request > 0:
        ideal = min(ideal_sectors or 4.0, 31.0)
        share = (sectors_per_request - ideal) / (32.0 - ideal)
        scattered = min(1.0, max(0.0, share)) * (1.0 - tma)
        return AccessPattern(
            scattered, AccessBasis.SECTORS_PER_REQUEST, reads, sectors_per_request=sectors_per_request, tma_fraction=tma
        )
    if tma > 0:
        return AccessPattern(0.0, AccessBasis.NO_LSU_LOADS, reads, tma_fraction=tma)
    return AccessPattern(0.0, AccessBasis.NO_SECTOR_COUNTERS, reads)


@dataclass(frozen=True)
class AchievableUtilization:
    """One unit's achieved rate against its nominal peak and its achievable ceiling for this access pattern."""

    unit: str  # "dram", "l2", "shared", "fp32", "fp64", "tensor_<type>", "block_launch"
    achieved: float  # in `rate_unit`
    rate_unit: str  # "byte/s", "flop/s", "block/s" (per SM for block_launch)
    nominal: float | None
    of_nominal: float | None
    ceiling_name: str  # the DeviceCeilings field it was judged against
    ceiling_value: float
    of_achievable: float
    ceiling_source: str  # "measured: <file>" or "nominal"
    pattern: str  # DRAM: its access pattern's kind (AccessKind: "stream", "scattered", "mixed"); "" elsewhere
    at_ceiling: bool = False  # of_achievable >= AT_CEILING_FRACTION
    scattered_fraction: float | None = None  # DRAM: the access pattern's share of scattered sectors
    write_fraction: float | None = None  # DRAM: the share of its bytes written


def _judge(
    unit: str,
    achieved: float,
    rate_unit: str,
    name: str,
    ceiling: Ceiling,
    pattern: str,
    scattered_fraction: float | None = None,
    write_fraction: float | None = None,
) -> AchievableUtilization:
    """The unit against `ceiling`: numbers only (`tracekit.present.rules.ceilings` words it)."""
    of_achievable = achieved / ceiling.value
    return AchievableUtilization(
        unit=unit,
        achieved=achieved,
        rate_unit=rate_unit,
        nominal=ceiling.nominal,
        of_nominal=achieved / ceiling.nominal if ceiling.nominal else None,
        ceiling_name=name,
        ceiling_value=ceiling.value,
        of_achievable=of_achievable,
        ceiling_source=ceiling.source,
        pattern=pattern,
        at_ceiling=of_achievable >= AT_CEILING_FRACTION,
        scattered_fraction=scattered_fraction,
        write_fraction=write_fraction,
    )


def stream_ceiling(ceilings: DeviceCeilings, pattern: AccessPattern) -> tuple[str, Ceiling] | None:
    """The stream ceiling of the launch's read:write mix. DRAM turns its bus around between reads and writes, so a
    copy plateaus below a read-only or a write-only stream; calibrate measures 1:0, 2:1, 1:1 and 0:1, and between
    two of them DRAM time per byte is interpolated on the write share. Without the launch's read and write bytes,
    the best stream of any mix (a ceiling is never below what some stream reaches); without measured mixes, the
    profile's stream ceiling."""
    mixes = sorted(
        ((STREAM_MIXES[k], k, c) for k, c in ceilings.dram_stream_by_mix.items() if k in STREAM_MIXES),
        key=lambda m: m[0],
    )
    if not mixes:
        stream = ceilings.dram_stream_bytes_per_s
        return None if stream is None else ("dram_stream_bytes_per_s", stream)
    if pattern.read_fraction is None:
        _, key, best = max(mixes, key=lambda m: m[2].value)
        return f"dram_stream_by_mix.{key}", best
    w = 1.0 - pattern.read_fraction
    for share, key, ceiling in mixes:
        if abs(share - w) <= MIX_MATCH:
            return f"dram_stream_by_mix.{key}", ceiling
    below = [m for m in mixes if m[0] < w]
    above = [m for m in mixes if m[0] > w]
    if not below or not above:
        share, key, ceiling = (below or above)[-1 if below else 0]
        return f"dram_stream_by_mix.{key}", ceiling
    (_, k0, c0), (_, k1, c1) = below[-1], above[0]
    value = between_mixes(c0.value, c1.value, mix_position(k0, k1, w) or 0.0)
    # its name says which streams it lies between (no `detail`: the result keeps its numbers, present words them)
    return f"dram_stream_by_mix.{k0}~{k1}", Ceiling(value, c0.unit, c0.nominal, c0.source)


def dram_ceiling(ceilings: DeviceCeilings, pattern: AccessPattern) -> tuple[str, Ceiling] | None:
    """The achievable DRAM ceiling for a pattern: the stream ceiling of its read:write mix, the scattered one, or
    for a mix of the two the rate at which both kinds of traffic share DRAM time (1/C = (1-s)/C_stream +
    s/C_scattered)."""
    found = stream_ceiling(ceilings, pattern)
    if found is None:
        return None
    stream_name, stream = found
    scattered = ceilings.dram_random_sector_bytes_per_s
    s = pattern.scattered_fraction
    if scattered is None or pattern.kind == AccessKind.STREAM:
        return stream_name, stream
    if pattern.kind == AccessKind.SCATTERED:
        return "dram_random_sector_bytes_per_s", scattered
    mixed = Ceiling(1.0 / ((1.0 - s) / stream.value + s / scattered.value), stream.unit, stream.nominal, stream.source)
    return f"{stream_name}+dram_random_sector_bytes_per_s", mixed


def dram_utilization(
    achieved_bytes_per_s: float, ceilings: DeviceCeilings, pattern: AccessPattern
) -> AchievableUtilization | None:
    chosen = dram_ceiling(ceilings, pattern)
    if chosen is None or achieved_bytes_per_s < 0:
        return None
    name, ceiling = chosen
    writes = None if pattern.read_fraction is None else 1.0 - pattern.read_fraction
    return _judge(
        "dram", achieved_bytes_per_s, "byte/s", name, ceiling, pattern.kind, pattern.scattered_fraction, writes
    )


def unit_utilization(unit: str, achieved: float, ceilings: DeviceCeilings) -> AchievableUtilization | None:
    """l2, shared, fp32, fp64 or tensor_<type> (fp16, bf16, tf32, fp8) against its ceiling (None without one)."""
    if unit.startswith("tensor_"):
        kind = unit.removeprefix("tensor_")
        ceiling = ceilings.tensor_flop_per_s.get(kind)
        name = f"tensor_flop_per_s.{kind}"
    else:
        name = UNIT_CEILINGS.get(unit, "")
        ceiling = getattr(ceilings, name, None) if name else None
    if ceiling is None:
        return None
    return _judge(unit, achieved, ceiling.unit, name, ceiling, "")


def block_launch_utilization(
    blocks: int, duration_ns: float, sm_count: int, threads_per_block: int, ceilings: DeviceCeilings
) -> AchievableUtilization | None:
    """Blocks launched per second per SM over the launch against the measured launch rate for that block size."""
    size = ceilings.block_launch_size(threads_per_block)
    if size is None or duration_ns <= 0 or sm_count <= 0:
        return None
    achieved = blocks / (duration_ns * 1e-9) / sm_count
    ceiling = ceilings.block_launch_per_s_per_sm[size]
    return _judge("block_launch", achieved, "block/s", f"block_launch_per_s_per_sm.{size}", ceiling, "")
