"""Warp traces: cycle counts as time. `clock64()`/`clock()` count per SM, so cycles alone are converted with the
SM clock and aligned per (launch, SM); 32-bit `clock()` values wrap every 2^32 cycles."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.warp_trace.columns import Fail
from tracekit.importers.warp_trace.metadata import HeaderMetadata

WRAP_32 = 2**32


def clock_bits(rows: pl.DataFrame, meta: HeaderMetadata, fail: Fail, warnings: list[str], cycles_only: bool) -> int:
    """32 or 64: declared by `clock_bits`, else 32 when every value fits in 32 bits and some end < start."""
    declared = meta.clock_bits
    stats = rows.select(
        pl.max_horizontal(pl.col("start_cycles").max(), pl.col("end_cycles").max()).alias("max"),
        (pl.col("end_cycles") < pl.col("start_cycles")).arg_true().first().alias("backwards"),
        (pl.max_horizontal("start_cycles", "end_cycles") >= WRAP_32).arg_true().first().alias("wide"),
    ).row(0, named=True)
    if declared == 32:
        bits = 32
        if stats["wide"] is not None:
            wide = rows.row(stats["wide"], named=True)
            column = "start_cycles" if (wide["start_cycles"] or 0) >= WRAP_32 else "end_cycles"
            raise fail(rows, stats["wide"], column, "clock value does not fit in 32 bits, but clock_bits is 32")
    elif declared is None and stats["backwards"] is not None and (stats["max"] or 0) < WRAP_32:
        bits = 32
        warnings.append(
            "cycle values are all below 2^32 and some end before they start: read as 32-bit clock() "
            "values that wrap (add '# clock_bits: 32' or '64' to say so)"
        )
    else:
        bits = 64
        if cycles_only and stats["backwards"] is not None:
            raise fail(rows, stats["backwards"], "end_cycles", "end_cycles is before start_cycles")
    return bits


def cycle_durations(rows: pl.DataFrame, bits: int | None) -> pl.Series:
    """Each warp's duration in cycles, modulo 2^32 for 32-bit clocks."""
    duration = rows["end_cycles"] - rows["start_cycles"]
    if bits == 32:
        duration = duration % WRAP_32
    return duration.alias("duration_cycles")


def cycles_to_ns(path: Path, rows: pl.DataFrame, hz: float, bits: int | None, duration: pl.Series) -> pl.DataFrame:
    """Per (launch, SM): ns since the SM's earliest warp start. 32-bit starts that straddle a wrap are unwrapped."""
    group = ["launch_key", "sm_id"]
    start = pl.col("start_cycles")
    if bits == 32:
        straddles = (start.max() - start.min()).over(group) > WRAP_32 // 2
        start = pl.when(straddles & (start < WRAP_32 // 2)).then(start + WRAP_32).otherwise(start)
    offset = start - start.min().over(group)
    ns_per_cycle = 1e9 / hz
    times = rows.with_columns(duration).with_columns(
        (offset.cast(pl.Float64) * ns_per_cycle).round().alias("start_ns"),
        ((offset + pl.col("duration_cycles")).cast(pl.Float64) * ns_per_cycle).round().alias("end_ns"),
    )
    latest: float | None = times.select(pl.col("end_ns").max()).item()
    if latest is not None and not latest < 2.0**63:
        raise InputError(
            str(path),
            f"clock cycles at {hz:,.0f} Hz give times past 2^63 ns (about 292 years): is the SM clock right?",
        )
    return times.with_columns(pl.col("start_ns", "end_ns").cast(pl.Int64)).drop("duration_cycles")


def wrap_warnings(rows: pl.DataFrame, hz: float | None, duration: pl.Series, has_ns: bool) -> list[str]:
    """What a 32-bit clock leaves ambiguous: warps longer than half its wrap period, launches longer than it."""
    warnings: list[str] = []
    period = f" ({WRAP_32 / hz * 1e3:,.3f} ms at {hz:,.0f} Hz)" if hz else ""
    long_count = int((duration > WRAP_32 // 2).sum())
    if long_count:
        warnings.append(
            f"{long_count} warps last over half the 32-bit clock wrap period{period}: their durations "
            f"are ambiguous (each could be longer by a multiple of 2^32 cycles)"
        )
    if has_ns and hz:
        wrap_ns = WRAP_32 / hz * 1e9
        spans = rows.group_by("launch_key").agg((pl.col("end_ns").max() - pl.col("start_ns").min()).alias("span"))
        over = spans.filter(pl.col("span") > wrap_ns).height
        if over:
            warnings.append(
                f"{over} launches span more than the 32-bit clock wrap period{period}: cycle "
                f"differences are ambiguous there; start_ns/end_ns (%globaltimer) are the time base"
            )
    return warnings
