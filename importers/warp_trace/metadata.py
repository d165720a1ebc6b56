"""Warp traces: the launch and device metadata (`# key: value` lines, Parquet key-value metadata, JSON's
`metadata` object), typed and checked against what CUDA hardware allows."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from tracekit.errors import InputError
from tracekit.parsed import Device

INT_METADATA = (
    "sm_count",
    "max_warps_per_sm",
    "registers_per_thread",
    "static_smem_bytes",
    "dynamic_smem_bytes",
    "clock_bits",
)
FLOAT_METADATA = ("sm_clock_hz", "launch_duration_ns")
DIM_METADATA = ("grid", "block")
TEXT_METADATA = ("kernel", "mangled_name", "device_name", "compute_capability", "tool", "tool_version")
KNOWN_METADATA = INT_METADATA + FLOAT_METADATA + DIM_METADATA + TEXT_METADATA
# What CUDA hardware allows (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"):
# grid x up to 2^31-1 (y, z 65535, bounded here by x's limit), 1024 threads per block, 255 registers per
# thread; shared memory and SM counts far below the bounds given here.
METADATA_RANGES: dict[str, tuple[int, int]] = {
    "grid": (1, 2**31 - 1),
    "block": (1, 1024),
    "registers_per_thread": (0, 255),
    "static_smem_bytes": (0, 2**31 - 1),
    "dynamic_smem_bytes": (0, 2**31 - 1),
    "sm_count": (1, 2**16),
    "max_warps_per_sm": (1, 1024),
}


@dataclass(frozen=True)
class HeaderMetadata:
    """The known metadata keys, typed (None: not given). They describe the device and the launch."""

    kernel: str | None = None
    mangled_name: str | None = None
    device_name: str | None = None
    compute_capability: str | None = None
    tool: str | None = None
    tool_version: str | None = None
    sm_count: int | None = None
    max_warps_per_sm: int | None = None
    registers_per_thread: int | None = None
    static_smem_bytes: int | None = None
    dynamic_smem_bytes: int | None = None
    clock_bits: int | None = None
    sm_clock_hz: float | None = None
    launch_duration_ns: float | None = None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None


def parse_metadata(path: Path, metadata: dict[str, str], lines: dict[str, int]) -> HeaderMetadata:
    """Known metadata keys with their values typed; an InputError names the line (`lines`) of a bad value."""
    texts: dict[str, str] = {}
    ints: dict[str, int] = {}
    floats: dict[str, float] = {}
    dims: dict[str, tuple[int, int, int]] = {}
    for key, text in metadata.items():
        if key not in KNOWN_METADATA or text == "":
            continue
        try:
            if key in INT_METADATA:
                number = float(text)
                if not number.is_integer():
                    raise ValueError(text)
                ints[key] = int(number)
            elif key in FLOAT_METADATA:
                floats[key] = float(text)
            elif key in DIM_METADATA:
                parts = [int(part) for part in text.replace("x", ",").split(",") if part.strip()]
                if not 1 <= len(parts) <= 3:
                    raise ValueError(text)
                x, y, z = parts + [1] * (3 - len(parts))
                dims[key] = (x, y, z)
            else:
                texts[key] = text
        except ValueError:
            expected = "x[,y[,z]] integers" if key in DIM_METADATA else "a number"
            message = f"metadata {key!r}: {text!r} is not {expected}"
            raise InputError(str(path), message, line=lines.get(key)) from None
    if ints.get("clock_bits") not in (None, 32, 64):
        raise InputError(
            str(path), f"metadata 'clock_bits' must be 32 or 64, not {ints['clock_bits']}", line=lines.get("clock_bits")
        )
    hz = floats.get("sm_clock_hz")
    if hz is not None and not (math.isfinite(hz) and hz > 0):
        raise InputError(str(path), "metadata 'sm_clock_hz' must be positive", line=lines.get("sm_clock_hz"))
    duration = floats.get("launch_duration_ns")
    if duration is not None and not (math.isfinite(duration) and duration >= 0):
        raise InputError(
            str(path),
            f"metadata 'launch_duration_ns': {duration} is impossible (a duration is a finite number >= 0)",
            line=lines.get("launch_duration_ns"),
        )
    for key, (low, high) in METADATA_RANGES.items():
        for value in dims[key] if key in dims else (ints.get(key),):
            if value is not None and not low <= value <= high:
                raise InputError(
                    str(path),
                    f"metadata {key!r}: {value} is impossible (expected {low:,} to {high:,})",
                    line=lines.get(key),
                )
    return HeaderMetadata(
        kernel=texts.get("kernel"),
        mangled_name=texts.get("mangled_name"),
        device_name=texts.get("device_name"),
        compute_capability=texts.get("compute_capability"),
        tool=texts.get("tool"),
        tool_version=texts.get("tool_version"),
        sm_count=ints.get("sm_count"),
        max_warps_per_sm=ints.get("max_warps_per_sm"),
        registers_per_thread=ints.get("registers_per_thread"),
        static_smem_bytes=ints.get("static_smem_bytes"),
        dynamic_smem_bytes=ints.get("dynamic_smem_bytes"),
        clock_bits=ints.get("clock_bits"),
        sm_clock_hz=floats.get("sm_clock_hz"),
        launch_duration_ns=floats.get("launch_duration_ns"),
        grid=dims.get("grid"),
        block=dims.get("block"),
    )


def device(meta: HeaderMetadata, metadata: dict[str, str], clock_hz: float | None) -> Device | None:
    """The device the metadata describes (other keys kept in its `extra`); None when it says nothing of one."""
    extra: dict[str, object] = {key: value for key, value in metadata.items() if key not in KNOWN_METADATA}
    found = Device(
        name=meta.device_name,
        compute_capability=meta.compute_capability,
        sm_count=meta.sm_count,
        sm_clock_hz=clock_hz or meta.sm_clock_hz,
        max_warps_per_sm=meta.max_warps_per_sm,
        extra=extra,
    )
    if found == Device():
        return None
    return found
