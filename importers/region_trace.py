"""tracekit warp traces v2: the v1 warp trace plus named regions, as written by `tracekit/cuda/warp_trace.cuh`.

Layout (CSV, optionally gzip-compressed)::

    # tracekit-warp-trace v2
    # kernel: ws_pipeline
    # ...                      (the v1 metadata keys: device_name, sm_clock_hz, grid, block, ...)
    launch,sm_id,block_id,warp_in_block,region,start_ns,end_ns,start_cycles,end_cycles
    0,12,0,0,,1700000000123,1700000004567,123456789,123465000
    0,12,0,0,load_tile,1700000000200,1700000000900,123456900,123458100

A row with an empty `region` is the warp's whole-kernel record (WARP_TRACE_BEGIN/END; the v1 row); a row with a
name is one region instance (WARP_REGION_BEGIN/END). When a file has no whole-warp rows, each warp's record is
derived from its regions (first start, last end). Times: `%globaltimer` ns and `clock64()` cycles, both kept.
v1 files (no `region` column) are read by the warp-trace reader.
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.regions_common import DEFAULT_MAX_INFLATED_BYTES, GZIP_MAGIC, assemble, plain_head
from tracekit.parsed import WARP_SCHEMA, Device, ParsedImport, conform

FORMAT = "region-trace"
MAGIC = b"# tracekit-warp-trace v2"
INT_COLUMNS = ("launch", "sm_id", "block_id", "warp_in_block", "start_ns", "end_ns", "start_cycles", "end_cycles")
REQUIRED = ("sm_id", "block_id", "warp_in_block", "region", "start_ns", "end_ns")


def sniff(head: bytes) -> bool:
    return plain_head(head).removeprefix(b"\xef\xbb\xbf").lstrip().startswith(MAGIC)


def _content(path: Path, limit: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            magic = handle.read(2)
        if magic != GZIP_MAGIC:
            return path.read_bytes()
        with gzip.open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(str(path), f"unreadable ({getattr(exc, 'strerror', None) or exc})") from None
    if len(data) > limit:
        raise InputError(str(path), f"the gzip content inflates past {limit:,} bytes; refused")
    return data


def _metadata(path: Path, text: str) -> tuple[dict[str, str], int]:
    """`# key: value` lines before the header, and the header's 1-based line number."""
    metadata: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        if not line.startswith("#"):
            return metadata, number
        key, sep, value = line[1:].partition(":")
        if sep:
            metadata[key.strip()] = value.strip()
    raise InputError(str(path), "no CSV header after the metadata lines")


def _float(path: Path, metadata: dict[str, str], key: str) -> float | None:
    if not metadata.get(key):
        return None
    try:
        return float(metadata[key])
    except ValueError:
        raise InputError(str(path), f"metadata {key!r}: {metadata[key]!r} is not a number") from None


def read(
    path: Path,
    column_map: dict[str, str] | None = None,
    clock_hz: float | None = None,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
    **options,
) -> ParsedImport:
    path = Path(path)
    if column_map:
        raise InputError(str(path), "--map is not used by tracekit v2 traces (they name every column)")
    data = _content(path, max_inflated_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(str(path), "not UTF-8 text") from None
    metadata, header_line = _metadata(path, text)
    try:
        frame = pl.read_csv(
            io.BytesIO(data),
            skip_lines=header_line - 1,
            comment_prefix="#",
            schema_overrides={name: pl.Int64 for name in INT_COLUMNS} | {"region": pl.Utf8},
        )
    except pl.exceptions.PolarsError as exc:
        raise InputError(str(path), f"unreadable CSV ({str(exc).splitlines()[0]})") from None
    missing = [name for name in REQUIRED if name not in frame.columns]
    if missing:
        raise InputError(str(path), f"missing column(s) {', '.join(missing)}", line=header_line)
    if "launch" not in frame.columns:
        frame = frame.with_columns(pl.lit(0, pl.Int64).alias("launch"))
    nulls = [c for c in ("sm_id", "block_id", "warp_in_block", "start_ns", "end_ns") if frame[c].null_count()]
    if nulls:
        raise InputError(str(path), f"empty values in column {nulls[0]!r}")
    frame = frame.rename({"launch": "launch_key"})
    is_warp = pl.col("region").is_null() | (pl.col("region") == "")
    regions = frame.filter(~is_warp)
    warps = conform(frame.filter(is_warp), WARP_SCHEMA)
    bad = warps.filter(pl.col("end_ns") < pl.col("start_ns"))
    if bad.height:
        raise InputError(str(path), f"{bad.height} warp records end before they start")
    sm_clock = _float(path, metadata, "sm_clock_hz")
    device = Device(
        name=metadata.get("device_name"),
        compute_capability=metadata.get("compute_capability"),
        sm_count=int(v) if (v := _float(path, metadata, "sm_count")) else None,
        sm_clock_hz=clock_hz or sm_clock,
        max_warps_per_sm=int(v) if (v := _float(path, metadata, "max_warps_per_sm")) else None,
    )
    launch_keys = sorted(set(frame["launch_key"].to_list()))
    parsed = assemble(
        path,
        FORMAT,
        regions,
        {key: metadata.get("kernel") for key in launch_keys},
        [],
        tool=metadata.get("tool") or "warp_trace.cuh",
        tool_version="v2",
        device=device,
        warps=warps if warps.height else None,
    )
    grid = [int(p) for p in metadata.get("grid", "").split(",") if p.strip()]
    block = [int(p) for p in metadata.get("block", "").split(",") if p.strip()]
    fill: dict[str, int] = {}
    for prefix, dims in (("grid", grid), ("block", block)):
        for axis, value in zip("xyz", dims + [1] * (3 - len(dims)) if dims else [], strict=False):
            fill[f"{prefix}_{axis}"] = value
    for key in ("registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes"):
        if (number := _float(path, metadata, key)) is not None:
            fill[key] = int(number)
    if fill:
        parsed.launches = parsed.launches.with_columns(
            pl.lit(value, parsed.launches.schema[name]).alias(name) for name, value in fill.items()
        )
    if (duration := _float(path, metadata, "launch_duration_ns")) is not None and len(launch_keys) == 1:
        parsed.launches = parsed.launches.with_columns(pl.lit(duration).alias("duration_ns"))
    return parsed
