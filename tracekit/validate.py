"""Values no GPU can produce, refused before anything reaches the store, whatever reader produced them.

Readers check what they can name by line; this is the net under all of them: a parsed import whose launches,
memory copies, NVTX ranges, warps, metrics or device hold an impossible value is refused with the launch (or
row) and the value. Bounds come from CUDA's limits (CUDA C++ Programming Guide, "Technical Specifications per
Compute Capability"): grid x up to 2^31-1, y and z up to 65535, 1024 threads per block, 255 registers per thread.
"""

from __future__ import annotations

import polars as pl

from tracekit.errors import InputError
from tracekit.parsed import ParsedImport

INT64_MAX = 2**63 - 1
LAUNCH_BOUNDS: dict[str, tuple[int, int]] = {
    "grid_x": (1, 2**31 - 1),
    "grid_y": (1, 65535),
    "grid_z": (1, 65535),
    "block_x": (1, 1024),
    "block_y": (1, 1024),
    "block_z": (1, 64),
    "registers_per_thread": (0, 255),
    "static_smem_bytes": (0, 2**31 - 1),
    "dynamic_smem_bytes": (0, 2**31 - 1),
    "start_ns": (0, INT64_MAX),
    "end_ns": (0, INT64_MAX),
}


def _launch_label(launches: pl.DataFrame, row: int) -> str:
    source = launches["source_launch_id"][row] if "source_launch_id" in launches.columns else None
    label = f"launch {row + 1} of {launches.height}"
    return label + (f" (ID {source!r})" if source is not None else "")


def _first(frame: pl.DataFrame, condition: pl.Expr) -> int | None:
    if frame.height == 0:
        return None
    value = frame.select(condition.fill_null(False).arg_true().first()).item()
    return None if value is None else int(value)


def check_values(path: str, parsed: ParsedImport) -> None:
    """Raise an InputError naming the first impossible value (see the module docstring)."""
    launches = parsed.launches
    for column, (low, high) in LAUNCH_BOUNDS.items():
        if column not in launches.columns:
            continue
        row = _first(launches, (pl.col(column) < low) | (pl.col(column) > high))
        if row is not None:
            value = launches[column][row]
            raise InputError(
                path, f"{_launch_label(launches, row)}: {column} is {value}, impossible (expected {low:,} to {high:,})"
            )
    if {"block_x", "block_y", "block_z"} <= set(launches.columns):
        row = _first(launches, pl.col("block_x") * pl.col("block_y") * pl.col("block_z") > 1024)
        if row is not None:
            dims = "x".join(str(launches[c][row]) for c in ("block_x", "block_y", "block_z"))
            raise InputError(path, f"{_launch_label(launches, row)}: block {dims} is over 1024 threads, impossible")
    if {"start_ns", "end_ns"} <= set(launches.columns):
        row = _first(launches, pl.col("end_ns") < pl.col("start_ns"))
        if row is not None:
            raise InputError(
                path,
                f"{_launch_label(launches, row)}: ends before it starts "
                f"(start_ns {launches['start_ns'][row]}, end_ns {launches['end_ns'][row]})",
            )
    if "duration_ns" in launches.columns:
        duration = pl.col("duration_ns").cast(pl.Float64)
        row = _first(launches, ~duration.is_finite() | (duration < 0))
        if row is not None:
            raise InputError(
                path, f"{_launch_label(launches, row)}: duration_ns is {launches['duration_ns'][row]}, impossible"
            )
    for name, frame in (("memory copy", parsed.memcpys), ("NVTX range", parsed.nvtx_ranges), ("warp", parsed.warps)):
        if {"start_ns", "end_ns"} <= set(frame.columns):
            row = _first(frame, (pl.col("end_ns") < pl.col("start_ns")) | (pl.col("start_ns") < 0))
            if row is not None:
                raise InputError(
                    path,
                    f"{name} {row + 1} of {frame.height}: start_ns {frame['start_ns'][row]}, "
                    f"end_ns {frame['end_ns'][row]} (negative, or ends before it starts)",
                )
    if "size_bytes" in parsed.memcpys.columns:
        row = _first(parsed.memcpys, pl.col("size_bytes") < 0)
        if row is not None:
            raise InputError(path, f"memory copy {row + 1}: size_bytes is {parsed.memcpys['size_bytes'][row]}")
    metrics = parsed.metrics
    if "value" in metrics.columns and metrics["value"].dtype.is_float():
        # NaN is how Nsight writes a metric it could not compute (real reports hold some): stored as null.
        # An infinite value is no measurement at all.
        row = _first(metrics, pl.col("value").is_infinite())
        if row is not None:
            raise InputError(path, f"metric {metrics['name'][row]!r}: value {metrics['value'][row]} is not a number")
    device = parsed.device
    if device is not None:
        for field, value in (
            ("sm_count", device.sm_count),
            ("sm_clock_hz", device.sm_clock_hz),
            ("max_warps_per_sm", device.max_warps_per_sm),
        ):
            if value is None:
                continue
            try:
                ok = float(value) > 0 and float(value) < 1e15
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise InputError(path, f"device {field} is {value!r}, impossible (expected a positive number)")
