"""Warp traces: rows grouped into launches (by launch number and per-row kernel), each launch's fields from the
header metadata, and the check that a launch holds every warp its grid and block launch."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.warp_trace.columns import Fail, Table
from tracekit.importers.warp_trace.metadata import HeaderMetadata
from tracekit.parsed import LAUNCH_SCHEMA, conform


def with_launch_keys(rows: pl.DataFrame, header_kernel: str | None) -> pl.DataFrame:
    """`launch_key`: 0-based, ordered by launch number, then by first appearance of the (kernel, launch) pair.

    A per-row kernel name counts by its categorical code, never as text, and the pairs are looked up once per
    run of equal rows (a launch's warps are usually written together): a join or a unique over 10M strings
    took most of such an import."""
    if "launch" not in rows.columns:
        rows = rows.with_columns(pl.lit(0, dtype=pl.Int64).alias("launch"))
        if "kernel" not in rows.columns:
            return rows.with_columns(pl.lit(0, dtype=pl.Int64).alias("launch_key"))
    low, high = rows.select(pl.col("launch").min().alias("low"), pl.col("launch").max().alias("high")).row(0)
    if "kernel" in rows.columns:
        kernel = pl.col("kernel").cast(pl.Categorical)
        rows = rows.with_columns(kernel.fill_null(header_kernel) if header_kernel else kernel)
        code = pl.col("kernel").to_physical().cast(pl.Int64).fill_null(-1) + 1  # 0: no name
    elif low == high == 0:
        return rows.with_columns(pl.col("launch").alias("launch_key"))
    else:
        code = pl.lit(0, dtype=pl.Int64)
    # (launch, kernel) packed in one integer; launch numbers too large for it are replaced by their rank
    launch = pl.col("launch") if high < 2**30 else pl.col("launch").rank("dense").cast(pl.Int64)
    pair = rows.select(launch * 2**33 + code).to_series()
    runs = pair.rle().struct.field("value")
    distinct = (
        runs.unique(maintain_order=True)
        .to_frame("pair")
        .sort(pl.col("pair") // 2**33, maintain_order=True)
        .with_row_index("launch_key")
    )
    if "kernel" not in rows.columns and distinct["pair"].to_list() == [n * 2**33 for n in range(distinct.height)]:
        # the usual case: launches numbered 0..n-1, so the number is the key
        return rows.with_columns(pl.col("launch").alias("launch_key"))
    run_keys = runs.replace_strict(distinct["pair"], distinct["launch_key"], return_dtype=pl.Int64)
    keys = run_keys if len(runs) == len(pair) else run_keys.gather(pair.rle_id())
    return rows.with_columns(keys.alias("launch_key"))


def launch_table(
    rows: pl.DataFrame, meta: HeaderMetadata, launch_info: pl.DataFrame | None, has_ns: bool, warnings: list[str]
) -> pl.DataFrame:
    """One row per launch key: its kernel, its span from the warps, and the header's launch fields where the
    header describes it (`launch_info`: a log's own per-launch fields, which win)."""
    # the key stands for (launch, kernel): grouping by it alone is several times faster than by all three
    named = ["launch", *(["kernel"] if "kernel" in rows.columns else [])]
    launches = (
        rows.group_by("launch_key")
        .agg(
            pl.col(named).first(),
            pl.col("start_ns").min().alias("first_start_ns"),
            pl.col("end_ns").max().alias("last_end_ns"),
        )
        .sort("launch_key")
    )
    header_kernel = meta.kernel
    kernel = pl.col("kernel") if "kernel" in launches.columns else pl.lit(header_kernel, dtype=pl.Utf8)
    applies = (pl.col("kernel") == header_kernel) if "kernel" in launches.columns and header_kernel else pl.lit(True)
    grid: tuple[int | None, ...] = meta.grid or (None, None, None)
    block: tuple[int | None, ...] = meta.block or (None, None, None)
    from_header: dict[str, str | int | None] = {
        "mangled_name": meta.mangled_name,
        "grid_x": grid[0],
        "grid_y": grid[1],
        "grid_z": grid[2],
        "block_x": block[0],
        "block_y": block[1],
        "block_z": block[2],
        "registers_per_thread": meta.registers_per_thread,
        "static_smem_bytes": meta.static_smem_bytes,
        "dynamic_smem_bytes": meta.dynamic_smem_bytes,
    }
    span = (pl.col("last_end_ns") - pl.col("first_start_ns")).cast(pl.Float64)
    duration = meta.launch_duration_ns
    if duration is not None and launches.height > 1:
        warnings.append(
            f"launch_duration_ns ignored: the file holds {launches.height} launches; durations are the warps' spans"
        )
        duration = None
    launches = launches.with_columns(
        kernel.alias("kernel_name"),
        *[
            pl.when(applies).then(pl.lit(value, dtype=LAUNCH_SCHEMA[name])).alias(name)
            for name, value in from_header.items()
        ],
        pl.col("launch").cast(pl.Utf8).alias("source_launch_id"),
        (pl.col("first_start_ns") if has_ns else pl.lit(None, dtype=pl.Int64)).alias("start_ns"),
        (pl.col("last_end_ns") if has_ns else pl.lit(None, dtype=pl.Int64)).alias("end_ns"),
        (pl.lit(float(duration)) if duration is not None else span).alias("duration_ns"),
    )
    if launch_info is not None:
        overrides = [c for c in launch_info.columns if c != "launch"]
        launches = launches.drop(overrides).join(launch_info, on="launch", how="left", maintain_order="left")
    return conform(launches, LAUNCH_SCHEMA)


def check_complete(
    path: Path,
    rows: pl.DataFrame,
    launches: pl.DataFrame,
    table: Table,
    fail: Fail,
    allow_incomplete: bool,
    warnings: list[str],
) -> None:
    """Against each launch's grid and block (where the metadata gives them): no block or warp outside them,
    and every warp they launch present. warp_trace.cuh records every warp, so fewer means a truncated file."""
    sized = launches.filter(
        pl.all_horizontal(
            pl.col(c).is_not_null() for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
        )
    ).select(
        "launch_key",
        "source_launch_id",
        "grid_x",
        "grid_y",
        "grid_z",
        "block_x",
        "block_y",
        "block_z",
        (pl.col("grid_x") * pl.col("grid_y") * pl.col("grid_z")).alias("blocks"),
        ((pl.col("block_x") * pl.col("block_y") * pl.col("block_z") + 31) // 32).alias("warps_per_block"),
    )
    if sized.height == 0:
        return
    # per launch, one group-by on its key: the count and the largest ids (the rows are searched only on a failure)
    stats = rows.group_by("launch_key").agg(
        pl.len().alias("recorded"), pl.col("block_id").max().alias("block_id"), pl.col("warp_in_block").max()
    )
    for column, limit, what in (
        ("block_id", "blocks", "outside the grid"),
        ("warp_in_block", "warps_per_block", "outside the block"),
    ):
        if sized.join(stats, on="launch_key").filter(pl.col(column) >= pl.col(limit)).height:
            outside = (
                rows.select("launch_key", column)
                .with_row_index("__at")
                .join(sized.select("launch_key", limit), on="launch_key", how="inner", maintain_order="left")
                .filter(pl.col(column) >= pl.col(limit))
            )
            first = outside.row(0, named=True)
            raise fail(
                rows, int(first["__at"]), column, f"{column} {first[column]} is {what} ({first[limit]:,} per launch)"
            )
    short = (
        sized.join(stats.select("launch_key", "recorded"), on="launch_key")
        .with_columns((pl.col("blocks") * pl.col("warps_per_block")).alias("expected"))
        .filter(pl.col("recorded") < pl.col("expected"))
    )
    for launch in short.iter_rows(named=True):
        grid = f"{launch['grid_x']},{launch['grid_y']},{launch['grid_z']}"
        block = f"{launch['block_x']},{launch['block_y']},{launch['block_z']}"
        message = (
            f"launch {launch['source_launch_id']} holds {launch['recorded']:,} of the {launch['expected']:,} warps "
            f"that grid {grid} x block {block} launches: the trace is incomplete (truncated?)"
        )
        if not allow_incomplete:
            raise InputError(
                str(path),
                f"{message}; refused (--allow-incomplete imports it marked incomplete)",
                line=table.metadata_lines.get("grid"),
            )
        warnings.append(f"INCOMPLETE: {message}; its occupancy and timing analysis cover only the recorded warps")
