"""Warp traces as records: Parquet with the CSV's columns, and tracekit's JSON (`{"metadata", "warps"}`).

A JSON document with a `times` list is cuda_scheduling_examiner's log (`examiner`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.warp_trace.columns import Table, resolve_columns, typed
from tracekit.importers.warp_trace.examiner import read_scheduling_examiner
from tracekit.importers.warp_trace.metadata import KNOWN_METADATA


def read_parquet(path: Path, content: Path, column_map: dict[str, str] | None) -> Table:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(content)
        frame = pl.read_parquet(content, glob=False)
    except Exception as exc:  # noqa: BLE001 - pyarrow/polars raise many types for a damaged file
        raise InputError(str(path), f"unreadable Parquet file: {str(exc).splitlines()[0]}") from None
    metadata = {}
    for key, value in (schema.metadata or {}).items():
        name = key.decode("utf-8", "replace").strip().lower()
        if name in KNOWN_METADATA:
            metadata[name] = value.decode("utf-8", "replace").strip()
    columns = resolve_columns(path, frame.columns, column_map, metadata)

    def where(row: int) -> tuple[int | None, str]:
        return None, f"row {row}"

    rows = typed(path, frame.select([pl.col(c).alias(f) for f, c in columns.items()]), columns, where)
    return Table(rows, columns, where, metadata, tool=metadata.get("tool"), tool_version=metadata.get("tool_version"))


def read_json(path: Path, content: Path, column_map: dict[str, str] | None) -> Table:
    try:
        with open(content, "rb") as handle:
            document = json.load(handle)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno) from None
    except UnicodeDecodeError:
        raise InputError(str(path), "not UTF-8 text: not a warp trace") from None
    if isinstance(document, dict) and isinstance(document.get("warps"), list):
        return read_json_records(path, document, column_map)
    if isinstance(document, dict) and isinstance(document.get("times"), list):
        return read_scheduling_examiner(path, document)
    raise InputError(
        str(path),
        'JSON without a "warps" list (tracekit records) or a "times" list (cuda_scheduling_examiner): not a warp trace',
    )


def read_json_records(path: Path, document: dict[str, Any], column_map: dict[str, str] | None) -> Table:
    records = document["warps"]
    metadata_value = document.get("metadata") or {}
    if not isinstance(metadata_value, dict):
        raise InputError(str(path), '"metadata" must be an object of key: value pairs')
    metadata = {str(k).strip().lower(): metadata_text(v) for k, v in metadata_value.items() if v is not None}
    if not records:
        raise InputError(str(path), '"warps" is empty: no warp records')
    bad = next((i for i, record in enumerate(records) if not isinstance(record, dict)), None)
    if bad is not None:
        raise InputError(str(path), f"warps[{bad}] is not an object")
    try:
        frame = pl.from_dicts(records, infer_schema_length=None, strict=False)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        bad = next((i for i, record in enumerate(records) if not isinstance(record, dict)), None)
        if bad is not None:
            raise InputError(str(path), f"warps[{bad}] is not an object") from None
        raise InputError(str(path), '"warps" records have values of mixed, unusable types') from None
    columns = resolve_columns(path, frame.columns, column_map, metadata)

    def where(row: int) -> tuple[int | None, str]:
        return None, f"warps[{row}]"

    rows = typed(path, frame.select([pl.col(c).alias(f) for f, c in columns.items()]), columns, where, strip=True)
    return Table(rows, columns, where, metadata, tool=metadata.get("tool"), tool_version=metadata.get("tool_version"))


def metadata_text(value: object) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    return str(value)
