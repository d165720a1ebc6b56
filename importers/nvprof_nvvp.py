"""nvprof's own database (`nvprof -o profile.nvvp`, also `.prof`): SQLite with CUPTI activity tables.

nvprof writes CUPTI's activity records as they came: kernels in CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (nvprof
traces kernels concurrently; CUPTI_ACTIVITY_KIND_KERNEL exists but is usually empty) and, where it holds rows,
CUPTI_ACTIVITY_KIND_KERNEL; memory copies in CUPTI_ACTIVITY_KIND_MEMCPY; devices in CUPTI_ACTIVITY_KIND_DEVICE;
names as ids into StringTable (kernel names mangled, demangled here with libstdc++'s `__cxa_demangle`). Times are
ns on CUPTI's clock. It is told from an Nsight Systems export by its StringTable (nsys writes StringIds), which
nvprof creates among its first tables, so its CREATE statement sits in the file's first page.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.cxx_name import demangle
from tracekit.errors import InputError
from tracekit.importers.nsys_sqlite import KERNEL_COLUMNS as NSYS_KERNEL_COLUMNS
from tracekit.importers.nsys_sqlite import MEMCPY_KINDS
from tracekit.importers.sqlite_input import read_sqlite
from tracekit.parsed import LAUNCH_SCHEMA, MEMCPY_SCHEMA, Device, ParsedImport, conform, empty_frame

FORMAT = "nvprof-nvvp"
SQLITE_MAGIC = b"SQLite format 3\x00"
_STRING_TABLE = re.compile(rb"CREATE TABLE\s+[\"'`\[]?StringTable\b")
KERNEL_TABLES = ("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "CUPTI_ACTIVITY_KIND_KERNEL")

# The same CUPTI kernel activity record as Nsight Systems exports it, without nsys's own process id.
KERNEL_COLUMNS = {source: field for source, field in NSYS_KERNEL_COLUMNS.items() if source != "globalPid"}
DEVICE_EXTRA_COLUMNS = {
    "maxRegistersPerMultiprocessor": "max_registers_per_sm",
    "maxSharedMemoryPerMultiprocessor": "max_shared_memory_per_sm_bytes",
    "maxBlocksPerMultiprocessor": "max_blocks_per_sm",
    "maxRegistersPerBlock": "max_registers_per_block",
    "maxSharedMemoryPerBlock": "max_shared_memory_per_block_bytes",
    "maxThreadsPerBlock": "max_threads_per_block",
    "numThreadsPerWarp": "warp_size_threads",
    "l2CacheSize": "l2_cache_size_bytes",
    "globalMemorySize": "total_memory_bytes",
}


def sniff(head: bytes) -> bool:
    """An SQLite file whose schema (first page) creates nvprof's StringTable."""
    return head.startswith(SQLITE_MAGIC) and bool(_STRING_TABLE.search(head))


def read(path: Path, **options: Any) -> ParsedImport:
    return read_sqlite(path, "nvprof database", _read)


def _columns(connection: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')]


def _read(connection: sqlite3.Connection, path: Path) -> ParsedImport:
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "StringTable" not in tables:
        raise InputError(str(path), "an SQLite file but not an nvprof database (no StringTable)")
    frames = [_kernels(connection, table) for table in KERNEL_TABLES if table in tables]
    kernels = (
        pl.concat([f for f in frames if f.height], how="diagonal_relaxed") if any(f.height for f in frames) else None
    )
    copies = _memcpys(connection, tables)
    if kernels is None and copies.height == 0:
        raise InputError(
            str(path),
            "nvprof database with no kernel or memory copy recorded (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "
            "_KERNEL and _MEMCPY are empty): profile with nvprof -o, with GPU activity tracing on",
        )
    warnings: list[str] = []
    if kernels is None:
        warnings.append("the nvprof database recorded memory copies but no kernel")
        launches = empty_frame(LAUNCH_SCHEMA)
    else:
        kernels = kernels.unique(["correlation_id", "start_ns", "end_ns"], keep="first", maintain_order=True)
        kernels = kernels.sort(["start_ns", "correlation_id"]).with_columns(
            launch_key=pl.int_range(pl.len(), dtype=pl.Int64),
            duration_ns=(pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64),
            source_launch_id=pl.col("correlation_id").cast(pl.Utf8),
        )
        names = kernels["mangled_name"].to_list()
        demangled = {name: demangle(name) for name in set(names) if name}
        kernels = kernels.with_columns(
            kernel_name=pl.Series([demangled.get(name, name) for name in names], dtype=pl.Utf8),
            mangled_name=pl.Series([name if name and name.startswith("_Z") else None for name in names], dtype=pl.Utf8),
        )
        bad = kernels.filter(pl.col("duration_ns") < 0)
        if bad.height:
            row = bad.row(0, named=True)
            raise InputError(
                str(path), f"kernel {row['kernel_name']!r} ends before it starts ({row['duration_ns']:.0f} ns)"
            )
        launches = conform(kernels, LAUNCH_SCHEMA)
    device = _device(connection, tables, launches, warnings)
    return ParsedImport(
        format=FORMAT,
        tool="nvprof",
        tool_version=_version(connection, tables),
        device=device,
        launches=launches,
        memcpys=copies,
        warnings=warnings,
    )


def _kernels(connection: sqlite3.Connection, table: str) -> pl.DataFrame:
    columns = set(_columns(connection, table))
    present = {source: field for source, field in KERNEL_COLUMNS.items() if source in columns}
    select = [f'k."{source}"' for source in present]
    schema: dict[str, Any] = dict.fromkeys(present.values(), pl.Int64)
    if "name" in columns:
        select.append('(SELECT value FROM StringTable WHERE _id_ = k."name")')
        schema["mangled_name"] = pl.Utf8
    rows = connection.execute(f'SELECT {", ".join(select)} FROM "{table}" AS k').fetchall()
    try:
        return pl.DataFrame(rows, schema=schema, orient="row")
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError) as exc:
        raise sqlite3.DatabaseError(f"{table} holds values of unexpected types ({exc})") from None


def _memcpys(connection: sqlite3.Connection, tables: set[str]) -> pl.DataFrame:
    table = "CUPTI_ACTIVITY_KIND_MEMCPY"
    if table not in tables:
        return empty_frame(MEMCPY_SCHEMA)
    columns = set(_columns(connection, table))
    wanted = {"copyKind": "copy_kind", "bytes": "size_bytes", "start": "start_ns", "end": "end_ns"}
    wanted |= {"streamId": "stream_id", "deviceId": "device_id"}
    present = {source: field for source, field in wanted.items() if source in columns}
    rows = connection.execute(
        f"SELECT {', '.join(f'{chr(34)}{s}{chr(34)}' for s in present)} FROM {table} ORDER BY start"
    ).fetchall()
    frame = pl.DataFrame(rows, schema=dict.fromkeys(present.values(), pl.Int64), orient="row")
    if "copy_kind" in frame.columns:
        frame = frame.with_columns(
            kind=pl.col("copy_kind").replace_strict(MEMCPY_KINDS, default=None, return_dtype=pl.Utf8)
        )
    return conform(frame, MEMCPY_SCHEMA)


def _device(
    connection: sqlite3.Connection, tables: set[str], launches: pl.DataFrame, warnings: list[str]
) -> Device | None:
    """The device the first kernel ran on (CUPTI_ACTIVITY_KIND_DEVICE, `id` = the kernels' deviceId)."""
    table = "CUPTI_ACTIVITY_KIND_DEVICE"
    if table not in tables:
        warnings.append("no CUPTI_ACTIVITY_KIND_DEVICE table: the device is unknown")
        return None
    cursor = connection.execute(f"SELECT * FROM {table}")
    names = [d[0] for d in cursor.description]
    devices = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    if not devices:
        return None
    used = [d for d in launches["device_id"].unique(maintain_order=True).to_list() if d is not None]
    if len(used) > 1:
        warnings.append(
            f"kernels ran on {len(used)} devices (ids {sorted(used)}); the import's device fields are those of "
            f"device {used[0]}, where the first kernel ran"
        )
    device = next((d for d in devices if used and d.get("id") == used[0]), devices[0])
    name = device.get("name")
    if isinstance(name, int):
        row = connection.execute("SELECT value FROM StringTable WHERE _id_ = ?", (name,)).fetchone()
        name = row[0] if row else None
    major, minor = device.get("computeCapabilityMajor"), device.get("computeCapabilityMinor")
    clock_khz = device.get("coreClockRate")  # CUpti_ActivityDevice: kHz
    bandwidth = device.get("globalMemoryBandwidth")
    return Device(
        name=name,
        compute_capability=f"{major}.{minor}" if major is not None and minor is not None else None,
        sm_count=device.get("numMultiprocessors"),
        sm_clock_hz=float(clock_khz) * 1e3 if clock_khz else None,
        max_warps_per_sm=device.get("maxWarpsPerMultiprocessor"),
        extra={
            **{key: device[column] for column, key in DEVICE_EXTRA_COLUMNS.items() if device.get(column) is not None},
            **({"memory_bandwidth_bytes_per_s": bandwidth * 1e3} if bandwidth else {}),  # kB/s in CUPTI
        },
    )


def _version(connection: sqlite3.Connection, tables: set[str]) -> str | None:
    if "Version" not in tables:
        return None
    row = connection.execute("SELECT version FROM Version").fetchone()
    return f"nvprof database version {row[0]}" if row else None
