"""What the intra-kernel region readers share: bounded JSON loading, nesting depth, warps and launches from regions.

Region readers (Proton Chrome traces, Chrome traces of hand-written `%globaltimer` profilers, the tracekit v2
header's CSV) each produce one row per region instance in their own field names; `assemble` turns those rows into
a `ParsedImport` with `regions` (nesting depth computed per warp), `warps` derived from the regions when the file
has no warp-level record, and `launches`.

Time: ns (`%globaltimer`) and SM cycles are kept apart. Cycles are converted to ns only with a clock the user gives
(`clock_hz`); otherwise the ns columns stay null, no warp records can be derived (they need ns), and a warning
says so.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.parsed import LAUNCH_SCHEMA, REGION_SCHEMA, WARP_SCHEMA, Device, ParsedImport, conform

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_MAX_INFLATED_BYTES = 4 * 2**30
WARP_KEYS = ["launch_key", "sm_id", "block_id", "warp_in_block"]


def plain_head(head: bytes, limit: int = 64 * 1024) -> bytes:
    """The first bytes of the content: `head` itself, or inflated when it is gzip (b"" when it does not inflate)."""
    if head.startswith(GZIP_MAGIC):
        try:
            return zlib.decompressobj(31).decompress(head, limit)
        except zlib.error:
            return b""
    return head


def load_json(path: Path, max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES) -> object:
    """The JSON document in `path` (plain or gzip), refusing content that inflates past `max_inflated_bytes`."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(2)
        if magic == GZIP_MAGIC:
            with gzip.open(path, "rb") as handle:
                data = handle.read(max_inflated_bytes + 1)
            if len(data) > max_inflated_bytes:
                raise InputError(str(path), f"the gzip content inflates past {max_inflated_bytes:,} bytes; refused")
        else:
            data = path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(str(path), f"unreadable ({getattr(exc, 'strerror', None) or exc})") from None
    if not data.strip():
        raise InputError(str(path), "the file is empty")
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        message = getattr(exc, "msg", None) or str(exc)
        raise InputError(str(path), f"not valid JSON ({message})", line=line) from None


def trace_events(path: Path, document: object) -> list:
    """The event list of a Chrome trace: the JSON array form, or the object form's `traceEvents`."""
    if isinstance(document, list):
        return document
    if isinstance(document, dict) and isinstance(document.get("traceEvents"), list):
        return document["traceEvents"]
    raise InputError(str(path), "not a Chrome trace: expected a JSON array of events or an object with 'traceEvents'")


def nesting_depth(rows: pl.DataFrame, time: str) -> tuple[pl.DataFrame, int]:
    """`rows` sorted per warp by start (longer first on ties) with `depth` added, and the count of regions that
    overlap an enclosing one without being inside it (not nested; they get the depth of where they start)."""
    ordered = rows.sort([*WARP_KEYS, f"start_{time}", f"end_{time}"], descending=[False] * 5 + [True], nulls_last=True)
    keys = ordered.select(pl.concat_str([pl.col(k).cast(pl.Utf8).fill_null("") for k in WARP_KEYS], separator="|"))
    key_list = keys.to_series().to_list()
    starts = ordered[f"start_{time}"].to_list()
    ends = ordered[f"end_{time}"].to_list()
    depths = [0] * len(starts)
    stack: list[int] = []
    previous = None
    partial = 0
    for i, (key, start, end) in enumerate(zip(key_list, starts, ends, strict=True)):
        if key != previous:
            stack = []
            previous = key
        while stack and stack[-1] <= start:
            stack.pop()
        if stack and end > stack[-1]:
            partial += 1
        depths[i] = len(stack)
        stack.append(end)
    return ordered.with_columns(pl.Series("depth", depths, dtype=pl.Int32)), partial


def convert_cycles(rows: pl.DataFrame, clock_hz: float | None) -> pl.DataFrame:
    """Fill start_ns/end_ns from cycles with the given clock where the source had no ns."""
    if clock_hz is None or "start_cycles" not in rows.columns:
        return rows
    has_ns = "start_ns" in rows.columns and rows["start_ns"].null_count() < rows.height
    if has_ns:
        return rows
    scale = 1e9 / clock_hz
    return rows.with_columns(
        (pl.col("start_cycles") * scale).round().cast(pl.Int64).alias("start_ns"),
        (pl.col("end_cycles") * scale).round().cast(pl.Int64).alias("end_ns"),
    )


def time_unit(regions: pl.DataFrame) -> str:
    """ "ns" when every region has ns times, else "cycles"."""
    if regions.height and regions["start_ns"].null_count() == 0 and regions["end_ns"].null_count() == 0:
        return "ns"
    return "cycles"


def derive_warps(regions: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """One record per warp spanning its regions (first start, last end), for files without warp-level events.

    Needs ns times and an SM id; without them no warp is derived and a warning says why."""
    if regions.height == 0:
        return pl.DataFrame(schema=WARP_SCHEMA)
    if time_unit(regions) != "ns":
        warnings.append("no warp records derived: they need ns times (pass --clock-hz to convert the cycles)")
        return pl.DataFrame(schema=WARP_SCHEMA)
    if regions["sm_id"].null_count():
        warnings.append("no warp records derived: the file does not say on which SM each warp ran")
        return pl.DataFrame(schema=WARP_SCHEMA)
    warps = (
        regions.group_by(WARP_KEYS)
        .agg(
            pl.col("start_ns").min(),
            pl.col("end_ns").max(),
            pl.col("start_cycles").min(),
            pl.col("end_cycles").max(),
        )
        .sort(WARP_KEYS)
    )
    moved = warps.group_by(["launch_key", "block_id", "warp_in_block"]).len().filter(pl.col("len") > 1)
    if moved.height:
        warnings.append(f"{moved.height} warps appear on more than one SM; their warp records were left out")
        warps = warps.join(moved.drop("len"), on=["launch_key", "block_id", "warp_in_block"], how="anti")
    return conform(warps, WARP_SCHEMA)


def launches_from(regions: pl.DataFrame, kernels: dict[int, str | None]) -> pl.DataFrame:
    """One launch per launch_key: its kernel name and, with ns times, its first region start and last end."""
    unit = time_unit(regions)
    frame = regions.group_by("launch_key").agg(
        pl.col("start_ns").min().alias("first_ns"),
        pl.col("end_ns").max().alias("last_ns"),
    )
    keys = sorted(kernels)
    frame = (
        pl.DataFrame(
            {"launch_key": keys, "kernel_name": [kernels[k] for k in keys]},
            schema={"launch_key": pl.Int64, "kernel_name": pl.Utf8},
        )
        .join(frame, on="launch_key", how="left")
        .with_columns(
            pl.col("launch_key").cast(pl.Utf8).alias("source_launch_id"),
            (pl.col("first_ns") if unit == "ns" else pl.lit(None, pl.Int64)).alias("start_ns"),
            (pl.col("last_ns") if unit == "ns" else pl.lit(None, pl.Int64)).alias("end_ns"),
            (
                (pl.col("last_ns") - pl.col("first_ns")).cast(pl.Float64) if unit == "ns" else pl.lit(None, pl.Float64)
            ).alias("duration_ns"),
        )
    )
    return conform(frame, LAUNCH_SCHEMA)


def assemble(
    path: Path,
    fmt: str,
    rows: pl.DataFrame,
    kernels: dict[int, str | None],
    warnings: list[str],
    *,
    tool: str | None,
    tool_version: str | None = None,
    device: Device | None = None,
    warps: pl.DataFrame | None = None,
    clock_hz: float | None = None,
) -> ParsedImport:
    """Validate region rows (project field names), add depth, derive warps where the file has none."""
    if rows.height == 0:
        raise InputError(str(path), "no region events found")
    rows = convert_cycles(rows, clock_hz)
    rows = conform(rows, REGION_SCHEMA)
    unit = time_unit(rows)
    bad = rows.filter(pl.col(f"end_{unit}") < pl.col(f"start_{unit}"))
    if bad.height:
        first = bad.row(0, named=True)
        raise InputError(
            str(path),
            f"{bad.height} regions end before they start (first: {first['region']!r} of block {first['block_id']} "
            f"warp {first['warp_in_block']})",
        )
    regions, partial = nesting_depth(rows, unit)
    if partial:
        warnings.append(
            f"{partial} regions overlap an enclosing region of the same warp without being inside it (not nested)"
        )
    if unit == "cycles":
        warnings.append(
            "region times are SM cycles (not converted: pass --clock-hz with the SM clock to get ns); "
            "the analysis reports them in cycles"
        )
    if warps is None or warps.height == 0:
        warps = derive_warps(regions, warnings)
    if clock_hz is not None:
        device = device or Device()
        device.sm_clock_hz = clock_hz
    return ParsedImport(
        format=fmt,
        tool=tool,
        tool_version=tool_version,
        device=device,
        launches=launches_from(regions, kernels),
        warps=warps,
        regions=regions,
        warnings=warnings,
    )


def positive_int(path: Path, name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise InputError(str(path), f"--map {name}={text!r}: expected a positive integer")
    return value
