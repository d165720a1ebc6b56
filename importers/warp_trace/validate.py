"""Warp traces: the rows any container gave, checked (missing values, impossible ids and times, duplicated warps),
put on one time base, and assembled into launches, warps and the device."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.warp_trace.clock import clock_bits, cycle_durations, cycles_to_ns, wrap_warnings
from tracekit.importers.warp_trace.columns import Fail, Table, first_true, row_error
from tracekit.importers.warp_trace.launches import check_complete, launch_table, with_launch_keys
from tracekit.importers.warp_trace.metadata import device, parse_metadata
from tracekit.importers.warp_trace.reader import FORMAT, REQUIRED
from tracekit.parsed import WARP_SCHEMA, ParsedImport, conform

INT32_MAX = 2**31 - 1


def assemble(path: Path, table: Table, clock_hz: float | None, allow_incomplete: bool = False) -> ParsedImport:
    """The import of one container's rows: checked, on one time base, grouped into launches; an InputError names
    the first bad row's line or record and column."""
    rows, columns, warnings = table.rows, table.columns, list(table.warnings)
    meta = parse_metadata(path, table.metadata, table.metadata_lines)

    def fail(frame: pl.DataFrame, row: int, field_name: str | None, message: str) -> InputError:
        original = int(frame["__row"][row]) if "__row" in frame.columns else row
        return row_error(path, table.where, original, columns.get(field_name) if field_name else None, message)

    rows = drop_blank_rows(rows)
    if rows.height == 0:
        raise InputError(str(path), "no warp rows (only metadata and a header)")
    has_ns = "start_ns" in rows.columns
    has_cycles = "start_cycles" in rows.columns
    needed = [*REQUIRED, *(("start_ns", "end_ns") if has_ns else ("start_cycles", "end_cycles"))]
    checks: list[tuple[str, pl.Expr, str]] = [(name, pl.col(name).is_null(), "missing value") for name in needed]
    checks += [
        ("sm_id", pl.col("sm_id") < 0, "negative SM id"),
        ("sm_id", pl.col("sm_id") > INT32_MAX, "SM id out of range"),
        ("block_id", pl.col("block_id") < 0, "negative block id"),
        ("warp_in_block", pl.col("warp_in_block") < 0, "negative warp index"),
        ("warp_in_block", pl.col("warp_in_block") > INT32_MAX, "warp index out of range"),
    ]
    if "launch" in rows.columns:
        checks += [
            ("launch", pl.col("launch").is_null(), "missing value"),
            ("launch", pl.col("launch") < 0, "negative launch number"),
        ]
    if has_ns:
        checks += [
            ("start_ns", pl.col("start_ns") < 0, "negative time (%globaltimer counts up from 0)"),
            ("end_ns", pl.col("end_ns") < 0, "negative time (%globaltimer counts up from 0)"),
            ("end_ns", pl.col("end_ns") < pl.col("start_ns"), "end_ns is before start_ns"),
        ]
    if has_cycles:
        checks += [(name, pl.col(name) < 0, "negative clock value") for name in ("start_cycles", "end_cycles")]
    raise_first(rows, checks, fail)

    rows = with_launch_keys(rows, meta.kernel)
    bits = clock_bits(rows, meta, fail, warnings, cycles_only=not has_ns) if has_cycles else None
    # each warp's duration in cycles (modulo 2^32 for clock()): the time base without ns, and the wrap check
    cycle_duration = cycle_durations(rows, bits) if bits == 32 or not has_ns else pl.Series(dtype=pl.Int64)
    if not has_ns:
        hz = clock_hz or meta.sm_clock_hz
        if not hz:
            raise InputError(
                str(path),
                "the trace has clock cycles but no %globaltimer ns: pass --clock-hz "
                "(the SM clock in Hz) or add '# sm_clock_hz: ...' to convert them",
            )
        rows = cycles_to_ns(path, rows, hz, bits, cycle_duration)
        warnings.append(
            f"times come from per-SM clock cycles at {hz:,.0f} Hz: each SM's earliest warp start is "
            f"set to 0 per launch, so cross-SM alignment is unknown"
        )
    if bits == 32:
        warnings += wrap_warnings(rows, clock_hz or meta.sm_clock_hz, cycle_duration, has_ns)

    duplicate = first_duplicate(rows)
    if duplicate is not None:
        key = rows.row(duplicate, named=True)
        same = (
            (pl.col("launch_key") == key["launch_key"])
            & (pl.col("block_id") == key["block_id"])
            & (pl.col("warp_in_block") == key["warp_in_block"])
        )
        first = first_true(rows, same) or 0  # never None: the duplicate itself matches
        first_place = table.where(int(rows["__row"][first]) if "__row" in rows.columns else first)
        raise fail(
            rows,
            duplicate,
            "warp_in_block",
            f"duplicate warp: block {key['block_id']}, warp "
            f"{key['warp_in_block']} of launch {key['launch']} appeared "
            f"before at {first_place[1]}",
        )
    sm_count = meta.sm_count
    if sm_count:
        outside = rows.select((pl.col("sm_id") >= sm_count).sum()).item()
        if outside:
            warnings.append(f"{outside} warps have sm_id >= sm_count ({sm_count})")

    launches = launch_table(rows, meta, table.launch_info, has_ns, warnings)
    if table.launch_info is None:  # per-block logs are checked against their block_count when read
        check_complete(path, rows, launches, table, fail, allow_incomplete, warnings)
    warps = conform(rows, WARP_SCHEMA)
    return ParsedImport(
        format=FORMAT,
        tool=table.tool,
        tool_version=table.tool_version,
        device=device(meta, table.metadata, clock_hz),
        launches=launches,
        warps=warps,
        warnings=warnings,
    )


def first_duplicate(rows: pl.DataFrame) -> int | None:
    """The first row whose (launch, block, warp) appeared before, or None.

    Packs the three ids into one Int64 when they fit (about 10x faster than hashing a struct on 10M rows); rows
    in increasing key order, as tracers write them warp after warp, have no duplicate (one pass, no hashing).
    """
    limits = rows.select(pl.col("launch_key").max(), pl.col("block_id").max(), pl.col("warp_in_block").max()).row(0)
    if limits[0] < 2**11 and limits[1] < 2**40 and limits[2] < 2**12:
        key = pl.col("launch_key") * 2**52 + pl.col("block_id") * 2**12 + pl.col("warp_in_block")
        if rows.select((key.diff() > 0).all()).item():  # a null key is refused before this check
            return None
    else:
        key = pl.struct("launch_key", "block_id", "warp_in_block")
    if rows.select(key.n_unique()).item() == rows.height:
        return None
    return first_true(rows, ~key.is_first_distinct())


def drop_blank_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """Blank CSV lines read as all-null rows; drop them, keeping each row's original index in `__row`."""
    if rows["sm_id"].null_count() == 0:
        return rows
    data_columns = [c for c in rows.columns if c != "__row"]
    blank = pl.all_horizontal([pl.col(c).is_null() for c in data_columns])
    if "__row" not in rows.columns:
        rows = rows.with_row_index("__row")
    return rows.filter(~blank)


def raise_first(rows: pl.DataFrame, checks: list[tuple[str, pl.Expr, str]], fail: Fail) -> None:
    """All checks in one pass; raise for the earliest offending row (then the first check listed)."""
    firsts = rows.select(
        [condition.arg_true().first().alias(str(i)) for i, (_, condition, _) in enumerate(checks)]
    ).row(0)
    found = [(row, i) for i, row in enumerate(firsts) if row is not None]
    if found:
        row, i = min(found)
        field_name, _, message = checks[i]
        raise fail(rows, row, field_name, message)
