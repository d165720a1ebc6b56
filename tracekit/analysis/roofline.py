"""A roofline per launch with measured ceilings as roofs (issue 20): achieved FLOP/s against arithmetic intensity at
DRAM, L2 and shared memory, under the roofs DRAM stream, DRAM scattered, L2, shared, FP32, FP64 and tensor.

Nsight Compute's roofline draws nominal peaks; these roofs are what the GPU reaches (tracekit calibrate), or the
nominal peaks, said so, where no profile exists. Pure: the engine passes a counter getter and a DeviceCeilings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from tracekit.analysis.achievable import (
    ACCESS_WIDTHS_BITS,
    AccessPattern,
    access_pattern,
    dram_ceiling,
    ideal_sectors_per_request,
)
from tracekit.ceilings.types import Ceiling, DeviceCeilings

MetricGetter = Callable[..., float | None]  # (*aliases) -> value in base units, or None

# Bytes a shared-memory wavefront moves at most (one 128-byte access of the 32 banks).
SHARED_WAVEFRONT_BYTES = 128.0
SECTOR_BYTES = 32.0

# Tensor-core FLOPs by input type: Nsight Compute's tensor roofline counters (sections
# SpeedOfLight_HierarchicalTensorRooflineChart, ...), one `ops` per FLOP (an FMA is 2: a 16x16x16 HMMA counts
# 8,192), HMMA (mma.sync), HGMMA (wgmma) and IMMA/IGMMA alike; the first name the launch has wins. Sparse
# (2:4) FLOPs are counted as Nsight counts them, against the dense ceiling.
TENSOR_OPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "fp16": (("sm__ops_path_tensor_src_fp16.sum",),),
    "bf16": (("sm__ops_path_tensor_src_bf16_dst_fp32.sum", "sm__ops_path_tensor_src_bf16.sum"),),
    "tf32": (("sm__ops_path_tensor_src_tf32_dst_fp32.sum", "sm__ops_path_tensor_src_tf32.sum"),),
    "fp8": (
        ("sm__ops_path_tensor_src_fp8.sum",),
        ("sm__ops_path_tensor_src_fp8_sparsity_off.sum",),
        ("sm__ops_path_tensor_src_fp8_sparsity_on.sum",),
    ),
    "int8": (("sm__ops_path_tensor_src_int8.sum",),),
    "fp64": (("sm__ops_path_tensor_src_fp64.sum",),),
}


@dataclass(frozen=True)
class LaunchWork:
    """What one launch did, from its Nsight Compute counters (None where a counter is missing)."""

    duration_ns: float
    fp32_flop: float | None
    fp64_flop: float | None
    fp16_flop: float | None
    dram_bytes: float | None
    l2_bytes: float | None
    shared_bytes: float | None
    data_bytes_per_sector: float | None
    sectors_per_request: float | None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    tensor_flop: tuple[tuple[str, float], ...] = ()  # (input type, FLOPs) of the tensor cores, nonzero only
    lsu_load_sectors: float | None = None  # global load sectors through the LSU (the sector counters' path)
    tma_load_sectors: float | None = None  # global read sectors of TMA bulk copies (which bypass it)
    ideal_sectors_per_request: float | None = None  # what a coalesced request of the launch's access widths needs

    @property
    def flop(self) -> float | None:
        parts = [f for f in (self.fp32_flop, self.fp64_flop, self.fp16_flop) if f is not None]
        parts += [f for _, f in self.tensor_flop]
        return sum(parts) if parts else None

    def flop_by_kind(self) -> dict[str, float]:
        """FLOPs per compute roof: fp32, fp64 (CUDA cores) and tensor_<type>, nonzero only."""
        kinds = {"fp32": self.fp32_flop or 0.0, "fp64": self.fp64_flop or 0.0}
        kinds.update({f"tensor_{kind}": flop for kind, flop in self.tensor_flop})
        return {k: v for k, v in kinds.items() if v > 0}


def _sum(*parts: float | None) -> float | None:
    present = [p for p in parts if p is not None]
    return sum(present) if present else None


def launch_work(metric: MetricGetter) -> LaunchWork | None:
    """FLOPs (FMA = 2, HFMA2 = 4, as Nsight's roofline counts them), bytes per memory level and the sector
    counters of one launch; None without a duration."""
    duration_ns = metric("gpu__time_duration.sum", "gpu__time_duration.avg")
    if duration_ns is None or duration_ns <= 0:
        return None
    clock_hz = metric("smsp__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second")
    cycles = duration_ns * 1e-9 * clock_hz if clock_hz else None

    def per_cycle(name: str, weight: float = 1.0) -> float | None:
        rate = metric(f"smsp__sass_thread_inst_executed_op_{name}_pred_on.sum.per_cycle_elapsed")
        return None if rate is None or cycles is None else weight * rate * cycles

    def fma(name: str, weight: float) -> float | None:
        # Nsight's roofline derived metrics are rates: the .sum.per_cycle_elapsed counter times the weight.
        derived = metric(f"derived__smsp__sass_thread_inst_executed_op_{name}_pred_on_x{int(weight)}")
        if derived is not None and cycles is not None:
            return derived * cycles
        return per_cycle(name, weight)

    fp32 = _sum(fma("ffma", 2), per_cycle("fadd"), per_cycle("fmul"))
    fp64 = _sum(fma("dfma", 2), per_cycle("dadd"), per_cycle("dmul"))
    fp16 = _sum(fma("hfma", 4), fma("hadd", 2), fma("hmul", 2))
    dram_read, dram_write = metric("dram__bytes_read.sum"), metric("dram__bytes_write.sum")
    dram = metric("dram__bytes.sum")
    if dram is None:
        dram = _sum(dram_read, dram_write)
    tensor = []
    for kind, groups in TENSOR_OPS.items():
        found = _sum(*(metric(*names) for names in groups))
        if found:
            tensor.append((kind, found))
    l2_sectors = metric("lts__t_sectors.sum")
    wavefronts = metric("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum")
    sectors = metric("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
    requests = metric("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
    return LaunchWork(
        duration_ns=duration_ns,
        fp32_flop=fp32,
        fp64_flop=fp64,
        fp16_flop=fp16,
        dram_bytes=dram,
        l2_bytes=None if l2_sectors is None else l2_sectors * SECTOR_BYTES,
        shared_bytes=None if wavefronts is None else wavefronts * SHARED_WAVEFRONT_BYTES,
        data_bytes_per_sector=metric("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"),
        sectors_per_request=sectors / requests if sectors is not None and requests else None,
        dram_read_bytes=dram_read,
        dram_write_bytes=dram_write,
        tensor_flop=tuple(tensor),
        lsu_load_sectors=sectors,
        tma_load_sectors=metric("l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.sum"),
        ideal_sectors_per_request=ideal_sectors_per_request(
            {bits: metric(f"smsp__sass_inst_executed_op_memory_{bits}b.sum") or 0.0 for bits in ACCESS_WIDTHS_BITS}
        ),
    )


@dataclass(frozen=True)
class Roof:
    """One roof: a memory level's bytes/s or a pipe's FLOP/s, achievable (or nominal, `source` says)."""

    name: str  # dram_stream, dram_scattered, l2, shared, fp32, fp64, tensor_<type>
    kind: str  # "memory" | "compute"
    value: float
    nominal: float | None
    source: str
    ceiling: str  # the DeviceCeilings field


@dataclass(frozen=True)
class RooflinePoint:
    """The launch at one memory level: its bytes there, their rate and the arithmetic intensity (FLOP per byte)."""

    level: str  # dram, l2, shared
    bytes: float
    bytes_per_s: float
    arithmetic_intensity_flop_per_byte: float | None
    roof: str  # the memory roof this level is drawn under


@dataclass(frozen=True)
class Roofline:
    achieved_flop_per_s: float | None
    flop_kind: str | None  # the compute roof the FLOPs are judged by (the type with the most FLOPs)
    points: tuple[RooflinePoint, ...]
    roofs: tuple[Roof, ...]
    dram_roof: str | None  # stream or scattered, from the sector counters
    attainable_flop_per_s: float | None  # min(compute roof, DRAM intensity x DRAM roof)
    fraction_of_attainable: float | None
    bound_side: str | None  # "memory" left of the ridge point at DRAM, "compute" right of it
    ceilings_source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _roof(name: str, kind: str, ceiling: Ceiling | None, field: str) -> Roof | None:
    return None if ceiling is None else Roof(name, kind, ceiling.value, ceiling.nominal, ceiling.source, field)


def roofs(ceilings: DeviceCeilings) -> tuple[Roof, ...]:
    found = [
        _roof("dram_stream", "memory", ceilings.dram_stream_bytes_per_s, "dram_stream_bytes_per_s"),
        _roof("dram_scattered", "memory", ceilings.dram_random_sector_bytes_per_s, "dram_random_sector_bytes_per_s"),
        _roof("l2", "memory", ceilings.l2_bytes_per_s, "l2_bytes_per_s"),
        _roof("shared", "memory", ceilings.shared_bytes_per_s, "shared_bytes_per_s"),
        _roof("fp32", "compute", ceilings.fp32_flop_per_s, "fp32_flop_per_s"),
        _roof("fp64", "compute", ceilings.fp64_flop_per_s, "fp64_flop_per_s"),
    ]
    found += [
        _roof(f"tensor_{kind}", "compute", c, f"tensor_flop_per_s.{kind}")
        for kind, c in ceilings.tensor_flop_per_s.items()
    ]
    return tuple(r for r in found if r is not None)


def work_pattern(work: LaunchWork) -> AccessPattern:
    """The launch's access pattern from its sector counters and DRAM's read and written bytes."""
    return access_pattern(
        work.data_bytes_per_sector,
        work.sectors_per_request,
        work.dram_read_bytes,
        work.dram_write_bytes,
        work.lsu_load_sectors,
        work.tma_load_sectors,
        work.ideal_sectors_per_request,
    )


def _dram_roof(chosen: tuple[str, Ceiling]) -> Roof | None:
    """The roof of the DRAM ceiling chosen for the access pattern when it is none of `roofs()`: a mix of stream
    and scattered traffic, or the stream of the launch's read:write mix."""
    name, ceiling = chosen
    if name in ("dram_stream_bytes_per_s", "dram_random_sector_bytes_per_s"):
        return None
    label = "dram_mixed" if "+" in name else "dram_stream " + name.removeprefix("dram_stream_by_mix.")
    return Roof(label, "memory", ceiling.value, ceiling.nominal, ceiling.source, name)


def roofline(work: LaunchWork, ceilings: DeviceCeilings, pattern: AccessPattern | None = None) -> Roofline:
    """The launch's roofline: a point per memory level with bytes, the roofs, and where the launch sits. The
    FLOPs are judged by the compute roof of the kind that did most of them (FP32, FP64, or the tensor cores'
    input type: a bf16 GEMM sits under the bf16 tensor roof)."""
    pattern = pattern or work_pattern(work)
    seconds = work.duration_ns * 1e-9
    flop = work.flop
    all_roofs = roofs(ceilings)
    chosen = dram_ceiling(ceilings, pattern)
    dram_roof = None
    if chosen is not None:
        extra = _dram_roof(chosen)
        dram_roof = "dram_scattered" if chosen[0] == "dram_random_sector_bytes_per_s" else "dram_stream"
        if extra is not None:
            dram_roof = extra.name
            all_roofs += (extra,)
    points = []
    for level, moved, roof in (
        ("dram", work.dram_bytes, dram_roof),
        ("l2", work.l2_bytes, "l2"),
        ("shared", work.shared_bytes, "shared"),
    ):
        if moved is None or moved <= 0:
            continue
        intensity = flop / moved if flop else None
        points.append(RooflinePoint(level, moved, moved / seconds, intensity, roof or ""))
    present = work.flop_by_kind()
    flop_kind = max(present, key=lambda k: present[k]) if present else None
    compute = next((r for r in all_roofs if r.name == flop_kind), None)
    memory = next((r for r in all_roofs if r.name == dram_roof), None)
    dram_point = next((p for p in points if p.level == "dram"), None)
    attainable = fraction_of = bound_side = None
    if compute is not None and memory is not None and dram_point and dram_point.arithmetic_intensity_flop_per_byte:
        intensity = dram_point.arithmetic_intensity_flop_per_byte
        attainable = min(compute.value, intensity * memory.value)
        bound_side = "memory" if intensity * memory.value < compute.value else "compute"
        fraction_of = (flop / seconds) / attainable if flop and attainable else None
    return Roofline(
        achieved_flop_per_s=flop / seconds if flop else None,
        flop_kind=flop_kind,
        points=tuple(points),
        roofs=all_roofs,
        dram_roof=dram_roof,
        attainable_flop_per_s=attainable,
        fraction_of_attainable=fraction_of,
        bound_side=bound_side,
        ceilings_source=ceilings.source,
    )
