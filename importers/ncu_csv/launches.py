"""Launch fields and the device: ids, stream and context, grid and block (columns, per-axis metrics or 1-D
totals), the NVTX path, registers, shared memory and duration from the launch metrics, and the device of the
first launch from `CC`, `device__attribute_*` and the occupancy figures.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.ncu_csv.checks import raise_first_bad
from tracekit.importers.ncu_csv.table import narrow
from tracekit.importers.ncu_csv.values import NOT_AVAILABLE, integer_expr, non_empty
from tracekit.parsed import Device

# Columns that describe the launch rather than a metric (raw page: everything else is a metric column).
LAUNCH_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    "Invocations",
)
NVTX_MARKERS = ("Push/Pop_Range", "Start/Stop_Range")
_DIMS = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$")
# Metric ids that fill launch fields; a text value in one of them is an error.
LAUNCH_METRICS = (
    "launch__grid_dim_x",
    "launch__grid_dim_y",
    "launch__grid_dim_z",
    "launch__block_dim_x",
    "launch__block_dim_y",
    "launch__block_dim_z",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "gpu__time_duration.sum",
)
# device__attribute_* metric -> Device field / `Device.extra` key (units in the key).
_DEVICE_EXTRA = {
    "max_registers_per_multiprocessor": "max_registers_per_sm",
    "max_shared_memory_per_multiprocessor": "max_shared_memory_per_sm_bytes",
    "max_blocks_per_multiprocessor": "max_blocks_per_sm",
    "max_threads_per_multiprocessor": "max_threads_per_sm",
    "max_warps_per_scheduler": "max_warps_per_scheduler",
    "num_schedulers_per_multiprocessor": "schedulers_per_sm",
    "max_registers_per_block": "max_registers_per_block",
    "max_registers_per_thread": "max_registers_per_thread",
    "max_threads_per_block": "max_threads_per_block",
    "max_shared_memory_per_block": "max_shared_memory_per_block_bytes",
    "max_shared_memory_per_block_optin": "max_shared_memory_per_block_optin_bytes",
    "reserved_shared_memory_per_block": "reserved_shared_memory_per_block_bytes",
    "warp_size": "warp_size",
    "l2_cache_size": "l2_cache_bytes",
    "global_memory_bus_width": "memory_bus_width_bits",
    "total_memory": "total_memory_bytes",
    "max_ipc_per_multiprocessor": "max_ipc_per_sm",
}
_KHZ_EXTRA = {"memory_clock_rate": "memory_clock_hz"}


def launch_columns(path: Path, rows: pl.DataFrame, identity: list[str]) -> pl.DataFrame:
    """One row per launch_key with the launch fields its identity columns give (IDs, stream, dims, NVTX)."""
    # A launch's rows repeat its identity cells (about 100 rows a launch on the details page): each distinct row is
    # parsed and checked once, the first in file order, so an error still names the first line that holds it.
    rows = narrow(rows, ["launch_key", "_line", *identity]).unique(
        ["launch_key", *identity], keep="first", maintain_order=True
    )
    dims = [
        (column, prefix) for column, prefix in (("Grid Size", "grid"), ("Block Size", "block")) if column in identity
    ]
    for column, prefix in dims:
        rows = rows.join(
            _dim_table(column, prefix, rows[column]), on=column, how="left", nulls_equal=True, maintain_order="left"
        )
    integers = {c: integer_expr(c) for c in ("ID", "Process ID", "Context", "Stream", "Device") if c in identity}
    raise_first_bad(
        path,
        rows,
        {
            **{c: (e.is_null() & non_empty(c), "is not a number") for c, e in integers.items()},
            **{c: (pl.col(f"{prefix}_x").is_null() & non_empty(c), "is not an (x, y, z) size") for c, prefix in dims},
        },
    )
    nvtx_columns = [c for c in identity if any(marker in c for marker in NVTX_MARKERS)]
    launches = rows.select(
        "launch_key",
        "_line",
        *([pl.col("Kernel Name").alias("kernel_name")] if "Kernel Name" in identity else []),
        *([pl.col("ID").str.strip_chars().alias("source_launch_id")] if "ID" in identity else []),
        *[
            integers[c].alias(f)
            for c, f in (
                ("Process ID", "process_id"),
                ("Context", "context_id"),
                ("Stream", "stream_id"),
                ("Device", "device_id"),
            )
            if c in integers
        ],
        *([pl.col("CC").alias("_cc")] if "CC" in identity else []),
        *[f"{prefix}_{axis}" for _, prefix in dims for axis in "xyz"],
        *nvtx_columns,
    )
    if launches["launch_key"].n_unique() != launches.height:
        launches = launches.unique("launch_key", keep="first", maintain_order=True)
    if nvtx_columns:
        paths = [
            _nvtx_path(dict(zip(nvtx_columns, cells, strict=True)))
            for cells in launches.select(nvtx_columns).iter_rows()
        ]
        launches = launches.drop(nvtx_columns).with_columns(pl.Series("nvtx_path", paths, dtype=pl.String))
    return launches


def _dim_table(column: str, prefix: str, cells: pl.Series) -> pl.DataFrame:
    """`<prefix>_x/_y/_z` for each distinct "(x, y, z)" cell; a bare "256" is (256, 1, 1).

    Parsed once per distinct cell, not per launch: launches repeat a few shapes and the regex is the slow part.
    """
    groups = pl.col(column).str.strip_chars().str.extract_groups(_DIMS.pattern)
    plain = integer_expr(column)
    one = pl.when(plain.is_not_null()).then(pl.lit(1, dtype=pl.Int64))
    return (
        cells.unique()
        .to_frame()
        .select(
            column,
            pl.coalesce(groups.struct.field("1").cast(pl.Int64, strict=False), plain).alias(f"{prefix}_x"),
            pl.coalesce(groups.struct.field("2").cast(pl.Int64, strict=False), one).alias(f"{prefix}_y"),
            pl.coalesce(groups.struct.field("3").cast(pl.Int64, strict=False), one).alias(f"{prefix}_z"),
        )
    )


def _nvtx_path(cells: dict[str, str | None]) -> str | None:
    """ncu's NVTX cells, e.g. `1  "<default domain>:outer:none:none:none:none:none:none"  "...:inner:..."`."""
    names: list[str] = []
    for column in sorted(cells, key=lambda c: "Start/Stop_Range" in c):  # push/pop stack first
        cell = (cells[column] or "").strip()
        entries = re.findall(r'"([^"]*)"', cell)
        if not entries and cell:
            entries = [cell]
        name_field = 2 if "Start/Stop_Range" in column else 1
        for entry in entries:
            fields = entry.split(":")
            if len(fields) >= name_field + 7:  # name, then PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg
                names.append(":".join(fields[name_field:-6]))
            elif entry.strip():
                names.append(entry.strip())
    return " > ".join(names) or None


def check_launch_metrics(path: Path, metrics: pl.DataFrame, launches: pl.DataFrame) -> None:
    """A text value where a launch field needs a number (registers, sizes, duration) is an InputError."""
    bad = metrics.filter(
        pl.col("name").is_in(LAUNCH_METRICS) & (pl.col("kind") == "text") & ~pl.col("text_value").is_in(NOT_AVAILABLE)
    )
    if bad.height:
        row = bad.row(0, named=True)
        line = row.get("_line")
        if line is None:
            line = launches.filter(pl.col("launch_key") == row["launch_key"])["_line"][0]
        raise InputError(
            str(path), f"{row['name']} {row['text_value']!r} is not a number", line, row.get("_column") or row["name"]
        )


def launch_metric_values(path: Path, metrics: pl.DataFrame, launches: pl.DataFrame) -> pl.DataFrame:
    """launch_key and one column per metric id in `LAUNCH_METRICS` (null where absent); duration in ns only."""
    wanted = metrics.filter(pl.col("name").is_in(LAUNCH_METRICS))
    check_launch_metrics(path, wanted, launches)
    if set(wanted.filter(pl.col("name") == "gpu__time_duration.sum")["unit"].to_list()) - {"ns", None}:
        wanted = wanted.filter(pl.col("name") != "gpu__time_duration.sum")
    schema = {"launch_key": pl.Int64, **{n: pl.Float64 for n in LAUNCH_METRICS}}
    if wanted.height == 0:
        return pl.DataFrame(schema=schema)
    wide = (
        wanted.group_by("launch_key", "name", maintain_order=True)
        .agg(pl.col("value").first())
        .pivot(on="name", index="launch_key", values="value")
    )
    return wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(n) for n in LAUNCH_METRICS if n not in wide.columns)


def fill_launch_fields(launches: pl.DataFrame, values: pl.DataFrame) -> pl.DataFrame:
    """Grid/block dims (columns, else per-axis metrics, else 1-D totals), registers, shared memory, duration."""
    launches = launches.join(values, on="launch_key", how="left", maintain_order="left")
    columns = launches.columns

    def col_or_null(name: str) -> pl.Expr:
        return pl.col(name) if name in columns else pl.lit(None, dtype=pl.Int64)

    def to_int(name: str) -> pl.Expr:
        return pl.col(name).round().cast(pl.Int64)

    fields = []
    for prefix, total in (("grid", "launch__grid_size"), ("block", "launch__block_size")):
        for axis in "xyz":
            one_d = to_int(total) if axis == "x" else pl.when(pl.col(total).is_not_null()).then(pl.lit(1))
            fields.append(
                pl.coalesce(col_or_null(f"{prefix}_{axis}"), to_int(f"launch__{prefix}_dim_{axis}"), one_d)
                .cast(pl.Int64)
                .alias(f"{prefix}_{axis}")
            )
    return launches.with_columns(
        *fields,
        to_int("launch__registers_per_thread").alias("registers_per_thread"),
        to_int("launch__shared_mem_per_block_static").alias("static_smem_bytes"),
        to_int("launch__shared_mem_per_block_dynamic").alias("dynamic_smem_bytes"),
        pl.col("gpu__time_duration.sum").alias("duration_ns"),
    )


def first_device(launches: pl.DataFrame, metrics: pl.DataFrame) -> tuple[Device | None, list[str]]:
    """The device of the first launch: `Device`/`CC` columns, device__attribute_* metrics, occupancy figures."""
    if launches.height == 0:
        return None, []
    first_key = launches["launch_key"][0]
    device_metrics = metrics.filter(pl.col("launch_key") == first_key).filter(
        pl.col("name").str.starts_with("device__attribute_")
        | pl.col("name").is_in(
            ["launch__sm_count", "sm__maximum_warps_avg_per_active_cycle", "sm__maximum_warps_per_active_cycle_pct"]
        )
    )
    by_name: dict[str, float | str | None] = {}
    for name, value, text in device_metrics.select("name", "value", "text_value").iter_rows():
        by_name.setdefault(name, value if value is not None else text)

    def attribute(name: str) -> float | str | None:
        return by_name.get(name)

    def as_int(value: float | str | None) -> int | None:
        return int(round(value)) if isinstance(value, float) else None

    compute_capability = launches["_cc"][0] if "_cc" in launches.columns else None
    major, minor = (
        attribute("device__attribute_compute_capability_major"),
        attribute("device__attribute_compute_capability_minor"),
    )
    if not compute_capability and isinstance(major, float) and isinstance(minor, float):
        compute_capability = f"{int(major)}.{int(minor)}"
    clock_khz = attribute("device__attribute_clock_rate")
    max_warps = as_int(attribute("device__attribute_max_warps_per_multiprocessor"))
    theoretical_warps = attribute("sm__maximum_warps_avg_per_active_cycle")
    theoretical_pct = attribute("sm__maximum_warps_per_active_cycle_pct")
    if (
        max_warps is None
        and isinstance(theoretical_warps, float)
        and isinstance(theoretical_pct, float)
        and theoretical_pct > 0
    ):  # theoretical warps per SM / theoretical occupancy = the SM's warp limit
        max_warps = int(round(theoretical_warps * 100.0 / theoretical_pct))
    extra: dict[str, object] = {}
    for attribute_name, key in _DEVICE_EXTRA.items():
        value = as_int(attribute(f"device__attribute_{attribute_name}"))
        if value is not None:
            extra[key] = value
    for attribute_name, key in _KHZ_EXTRA.items():
        value = attribute(f"device__attribute_{attribute_name}")
        if isinstance(value, float):
            extra[key] = value * 1e3
    name = attribute("device__attribute_display_name")
    device = Device(
        name=name if isinstance(name, str) else None,
        compute_capability=compute_capability or None,
        sm_count=as_int(attribute("device__attribute_multiprocessor_count")) or as_int(attribute("launch__sm_count")),
        sm_clock_hz=clock_khz * 1e3 if isinstance(clock_khz, float) else None,
        max_warps_per_sm=max_warps,
        extra=extra,
    )
    warnings = []
    identity = [c for c in ("device_id", "_cc") if c in launches.columns]
    if identity and launches.select(identity).unique().height > 1:
        warnings.append(
            f"launches ran on {launches.select(identity).unique().height} devices; the import's "
            "device fields describe the first launch's device"
        )
    if device == Device():
        return None, warnings
    return device, warnings
