"""Warp traces: the rows every container reader hands on, in the project's field names and typed.

A reader maps the input's columns to the fields (`--map FIELD=COLUMN` first, then names equal to the fields,
case-insensitively), types them (Int64; `kernel` as text or categories) and says where a row came from, so that
every error names the input's line or record and column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.warp_trace.reader import REQUIRED

FIELDS = ("launch", "kernel", "sm_id", "block_id", "warp_in_block", "start_ns", "end_ns", "start_cycles", "end_cycles")
INT_FIELDS = tuple(name for name in FIELDS if name != "kernel")
ALIASES = {"start": "start_ns", "end": "end_ns", "sm": "sm_id", "block": "block_id", "warp": "warp_in_block"}

# A row's place in the input, for messages: (CSV line or None, label such as "warps[3]").
Where = Callable[[int], tuple[int | None, str]]
# The error for a row of the frame being checked: (frame, row, field or None, message) -> InputError.
Fail = Callable[[pl.DataFrame, int, str | None, str], InputError]


@dataclass
class Table:
    """What a container reader hands to the shared validation: rows in project field names, typed."""

    # project field names; Int64 (kernel: text or Categorical); may carry "__row" (index before filtering)
    rows: pl.DataFrame
    columns: dict[str, str]  # project field -> the input's column name, for messages
    where: Where
    metadata: dict[str, str] = field(default_factory=dict)
    metadata_lines: dict[str, int] = field(default_factory=dict)
    launch_info: pl.DataFrame | None = None  # per-launch fields keyed by "launch" (cuda_scheduling_examiner)
    tool: str | None = None
    tool_version: str | None = None
    warnings: list[str] = field(default_factory=list)


def resolve_columns(
    path: Path, names: list[str], column_map: dict[str, str] | None, metadata: dict[str, str], line: int | None = None
) -> dict[str, str]:
    """Project field -> input column: `column_map` first (aliases allowed), then names equal to the fields."""
    by_lower = {name.lower(): name for name in names}
    mapping: dict[str, str] = {}
    for key, column in (column_map or {}).items():
        field_name = ALIASES.get(key.strip().lower(), key.strip().lower())
        if field_name not in FIELDS:
            raise InputError(
                str(path),
                f"--map {key}={column}: unknown field {key!r} (fields: "
                f"{', '.join(FIELDS)}; aliases: {', '.join(ALIASES)})",
            )
        if column not in names:
            raise InputError(
                str(path),
                f"--map {key}={column}: the input has no column {column!r} (columns: {', '.join(names)})",
                line=line,
            )
        mapping[field_name] = column
    used = set(mapping.values())
    for field_name in FIELDS:
        found = by_lower.get(field_name)
        if field_name not in mapping and found is not None and found not in used:
            mapping[field_name] = found
    listing = ", ".join(names) or "none"
    for field_name in REQUIRED:
        if field_name not in mapping:
            alias = next(a for a, f in ALIASES.items() if f == field_name)
            raise InputError(
                str(path),
                f"missing column {field_name!r} (columns: {listing}); name another column with --map {alias}=COLUMN",
                line=line,
            )
    for start, end in (("start_ns", "end_ns"), ("start_cycles", "end_cycles")):
        if (start in mapping) != (end in mapping):
            have, lack = (start, end) if start in mapping else (end, start)
            raise InputError(str(path), f"column {have!r} without {lack!r}", line=line)
    if "start_ns" not in mapping and "start_cycles" not in mapping:
        raise InputError(
            str(path),
            f"no time columns: need start_ns/end_ns (%globaltimer) or start_cycles/"
            f"end_cycles (clock64) (columns: {listing})",
            line=line,
        )
    return mapping


def typed(path: Path, rows: pl.DataFrame, columns: dict[str, str], where: Where, strip: bool = False) -> pl.DataFrame:
    """Every integer field as Int64 (and `kernel` as text), or an InputError at the first cell that is not one."""
    typed: list[pl.Series | pl.Expr] = [
        typed_column(path, rows, name, columns[name], where, strip) for name in rows.columns if name in INT_FIELDS
    ]
    if "kernel" in rows.columns:
        typed.append(pl.col("kernel").cast(pl.Utf8))
    return rows.select(typed)


def typed_column(
    path: Path, rows: pl.DataFrame, name: str, column: str, where: Where, strip: bool = False
) -> pl.Series:
    series = rows[name]
    dtype = series.dtype
    if dtype.is_integer():
        converted = series.cast(pl.Int64, strict=False)
        bad = series.is_not_null() & converted.is_null()
        problem = "out of the 64-bit integer range"
    elif dtype.is_float():
        converted = series.cast(pl.Int64, strict=False)
        bad = series.is_not_null() & (~series.is_finite() | (series != series.floor()) | converted.is_null())
        problem = "not an integer"
    elif dtype == pl.Utf8:
        text = series.str.strip_chars() if strip else series
        text = text.replace("", None)
        converted = text.cast(pl.Int64, strict=False)
        bad = text.is_not_null() & converted.is_null()
        problem = "not an integer"
    elif dtype == pl.Null:
        return pl.Series(name, [None] * len(series), dtype=pl.Int64)
    else:
        raise InputError(str(path), f"column {column!r} holds {dtype} values, expected integers")
    if bad.any():
        row = int(bad.arg_true()[0])
        raise row_error(path, where, row, column, f"{problem}: {series[row]!r}")
    return converted.alias(name)


def row_error(path: Path, where: Where, row: int, column: str | None, message: str) -> InputError:
    line, label = where(row)
    if line is not None:
        return InputError(str(path), message, line=line, column=column)
    return InputError(str(path), f"{label}" + (f" (column {column!r})" if column else "") + f": {message}")


def first_true(frame: pl.DataFrame, condition: pl.Expr) -> int | None:
    value = frame.select(condition.arg_true().first()).item()
    return None if value is None else int(value)
