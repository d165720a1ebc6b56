"""The three page layouts to launches and long metric rows: details (both header generations, rule rows as text
metrics), the per-kernel summary (Average, Minimum, Maximum) and raw (one wide row per launch, units in the
second row).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.ncu_csv.checks import parse_integers, require_fields, require_last_row
from tracekit.importers.ncu_csv.launches import (
    LAUNCH_COLUMNS,
    LAUNCH_METRICS,
    NVTX_MARKERS,
    check_launch_metrics,
    launch_columns,
    launch_metric_values,
)
from tracekit.importers.ncu_csv.table import CsvTable, csv_fields, dtypes, narrow, parse_rows, unique_names
from tracekit.importers.ncu_csv.values import normalized_unit, numeric_metrics, uses_dot_grouping
from tracekit.importers.ncu_names import DISPLAY_TO_METRIC_ID


def _assign_launch_keys(rows: pl.DataFrame, key_columns: list[str]) -> pl.DataFrame:
    """Number launches 0.. in order of first appearance of their key."""
    keys = (
        rows.select(key_columns)
        .unique(maintain_order=True)
        .with_row_index("launch_key")
        .with_columns(pl.col("launch_key").cast(pl.Int64))
    )
    return rows.join(keys, on=key_columns, how="left", nulls_equal=True, maintain_order="left")


def _identity_columns(header: list[str], stop: str | None) -> list[str]:
    """The launch-describing columns: those before `stop` (details/summary), or the known ones (raw)."""
    names = unique_names(header)
    if stop is not None:
        return names[: names.index(stop)]
    return [n for n in names if n in LAUNCH_COLUMNS or any(marker in n for marker in NVTX_MARKERS)]


def details_page(path: Path, table: CsvTable, rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    for column in ("Section Name", "Metric Name", "Metric Unit"):
        if column not in rows.columns:
            raise InputError(str(path), f"details table without a {column!r} column", table.header_line)
    require_fields(
        path, table, rows, pl.col("Metric Value").is_null(), f"at least {table.header.index('Metric Value') + 1}"
    )
    identity = _identity_columns(table.header, "Section Name")
    key_columns: list[str] = [c for c in ("Host Name", "Process ID", "ID") if c in identity] or identity
    rows = _assign_launch_keys(rows, key_columns)
    launches = launch_columns(path, rows, identity)

    is_rule = pl.col("Rule Name").fill_null("") != "" if "Rule Name" in rows.columns else pl.lit(False)
    metric_rows = rows.filter(~is_rule & (pl.col("Metric Name").fill_null("") != ""))
    names = pl.DataFrame(
        {
            "Section Name": [s for s, _ in DISPLAY_TO_METRIC_ID],
            "Metric Name": [n for _, n in DISPLAY_TO_METRIC_ID],
            "metric_id": list(DISPLAY_TO_METRIC_ID.values()),
        }
    )
    metric_rows = metric_rows.join(names, on=["Section Name", "Metric Name"], how="left", maintain_order="left")
    section = pl.col("Section Name")
    if "Body Item Label" in metric_rows.columns:  # 2025 `--print-details`: the body item (chart, table) a row is in
        body = pl.col("Body Item Label").fill_null("").str.strip_chars()
        section = pl.when(body != "").then(pl.concat_str(section, pl.lit(": "), body)).otherwise(section)
    long = metric_rows.select(
        "launch_key",
        section.alias("section"),
        pl.coalesce("metric_id", "Metric Name").alias("name"),
        pl.col("Metric Unit").alias("unit_raw"),
        pl.col("Metric Value").alias("cell"),
        "_line",
        pl.lit("Metric Value").alias("_column"),
    )
    metrics = [numeric_metrics(long), _kernel_time(rows)]
    if "Rule Name" in rows.columns:
        metrics.append(_rules(rows.filter(is_rule)))
    return launches, pl.concat([m for m in metrics if m is not None], how="diagonal_relaxed")


def summary_page(path: Path, table: CsvTable, rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    stats = {"Average": "", "Minimum": ".min", "Maximum": ".max"}
    for column in ("Section Name", "Metric Unit", *stats):
        if column not in rows.columns:
            raise InputError(str(path), f"summary table without a {column!r} column", table.header_line)
    require_fields(path, table, rows, pl.col("Average").is_null(), f"{len(table.header)}")
    identity = _identity_columns(table.header, "Section Name")
    rows = _assign_launch_keys(rows, identity)
    launches = launch_columns(path, rows, identity)
    names = pl.DataFrame(
        {
            "Section Name": [s for s, _ in DISPLAY_TO_METRIC_ID],
            "Metric Name": [n for _, n in DISPLAY_TO_METRIC_ID],
            "metric_id": list(DISPLAY_TO_METRIC_ID.values()),
        }
    )
    rows = rows.join(names, on=["Section Name", "Metric Name"], how="left", maintain_order="left")
    base_name = pl.coalesce("metric_id", "Metric Name")
    long = pl.concat(
        [
            rows.select(
                "launch_key",
                pl.col("Section Name").alias("section"),
                (base_name + suffix).alias("name"),
                pl.col("Metric Unit").alias("unit_raw"),
                pl.col(stat).alias("cell"),
                "_line",
                pl.lit(stat).alias("_column"),
            )
            for stat, suffix in stats.items()
        ]
    )
    metrics = [numeric_metrics(long)]
    if "Invocations" in rows.columns:
        invocations = parse_integers(path, rows.unique("launch_key", keep="first", maintain_order=True), "Invocations")
        metrics.append(
            invocations.select(
                "launch_key",
                pl.lit("invocations").alias("name"),
                pl.col("Invocations").cast(pl.Float64).alias("value"),
                pl.lit("int").alias("kind"),
                "_line",
            )
        )
    return launches, pl.concat(metrics, how="diagonal_relaxed")


def raw_page(path: Path, table: CsvTable) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    identity = _identity_columns(table.header, None)
    if "Kernel Name" not in identity:
        raise InputError(str(path), "raw table without a 'Kernel Name' column", table.header_line)
    names = unique_names(table.header)
    metric_columns = [c for c in names if c not in identity]
    if not metric_columns:
        raise InputError(
            str(path), "the table has neither metric columns nor a 'Metric Name' column", table.header_line
        )
    first = dict(zip(names, csv_fields(table.head(1)[0]), strict=False))
    has_units = not (first.get("ID") or first.get("Kernel Name"))  # the units row: empty identity cells
    units = {c: (first.get(c) if has_units else None) for c in metric_columns}
    skip = 1 if has_units else 0
    if len(table.line_numbers) == skip:
        raise InputError(str(path), "the Nsight Compute table has a header and units but no rows", table.header_line)
    rows = parse_rows(path, table, skip, strings_only=identity)
    dot_grouping = rows is not None and uses_dot_grouping(_text_cells(rows, metric_columns))
    if rows is None or dot_grouping:
        rows = parse_rows(path, table, skip)  # every cell as text: the cleaning path decides
        dot_grouping = uses_dot_grouping(_text_cells(rows, metric_columns))
    short = pl.col(metric_columns[-1]).is_null() if dtypes(rows)[metric_columns[-1]] == pl.String else pl.lit(False)
    require_fields(path, table, rows, short, f"{len(table.header)}")
    require_last_row(path, table, len(table.header))
    rows = rows.with_columns(pl.int_range(rows.height, dtype=pl.Int64).alias("launch_key"))  # a row per launch
    launches = launch_columns(path, rows, identity)
    metrics, launch_values = _raw_metrics(path, rows, metric_columns, units, launches, dot_grouping)
    return launches, metrics, launch_values


def _text_cells(rows: pl.DataFrame, columns: list[str]) -> pl.Series:
    """The distinct cells of the text-typed `columns`: enough to tell the number style, and launches repeat."""
    schema = dtypes(rows)
    cells = [rows.get_column(c).alias("cell") for c in columns if schema[c] == pl.String]
    if not cells:
        return pl.Series("cell", [], dtype=pl.String)
    return pl.concat(cells).unique().str.strip_chars()


def _raw_metrics(
    path: Path,
    rows: pl.DataFrame,
    metric_columns: list[str],
    units: dict[str, str | None],
    launches: pl.DataFrame,
    dot_grouping: bool,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The raw page's metric columns as long rows (launch by launch, each launch's metrics in column order; cells
    that needed cleaning after them), and the launch-field metrics as a wide frame.

    Whole columns are cast to numbers first: ncu writes plain numbers on the raw page, so only the columns with
    cells that do not cast (text, separators, instance lists) go through the slower cleaning path, and only for
    those cells. A numeric column's kind is "int" when every value in it is integral, else "float".
    """
    import numpy as np  # here: only the raw page needs it, and it costs other imports start-up time

    count = rows.height
    normalized = {c: normalized_unit(units[c]) for c in metric_columns}
    schema = dtypes(rows)
    # Series by Series: on a small file, a query over hundreds of columns costs more than the casts.
    columns = {
        c: rows.get_column(c) if schema[c] == pl.Float64 else rows.get_column(c).cast(pl.Float64, strict=False)
        for c in metric_columns
    }  # unscaled; empty cells and cells that did not cast are null
    numeric = [c for c in metric_columns if columns[c].null_count() < count]  # the others were never collected
    launch_values = narrow(rows, ["launch_key"]).with_columns(
        *(columns[n] * normalized[n][1] for n in LAUNCH_METRICS if n in columns),
        *(pl.lit(None, dtype=pl.Float64).alias(n) for n in LAUNCH_METRICS if n not in columns),
    )
    values = pl.DataFrame([columns[c] for c in numeric]).to_numpy(order="fortran")  # launches x columns
    factors = np.array([normalized[c][1] for c in numeric])
    if (factors != 1.0).any():
        values = values * factors  # stays column-major
    missing = np.isnan(values)  # null, or a NaN ("nan") cell
    missing_count = dict(zip(numeric, missing.sum(axis=0).tolist(), strict=True))
    suspects = [c for c in metric_columns if missing_count.get(c, count) and schema[c] == pl.String]
    empty = {c: (rows.get_column(c).fill_null("") == "").sum() for c in suspects}
    failed_columns = [c for c in suspects if missing_count.get(c, count) > empty[c]]
    with np.errstate(invalid="ignore"):
        integral = np.all((values == np.floor(values)) | missing, axis=0)
    # Long rows launch by launch, as the page lists them (a row per launch): the store keeps them so, and one
    # launch's rows are then one slice.
    column_index = np.tile(np.arange(len(numeric), dtype=np.uint32), count)
    launch_keys = np.repeat(rows["launch_key"].to_numpy(), len(numeric))
    flat_values = values.ravel(order="C")  # a copy: `values` is column-major
    if missing.any():
        keep = ~missing.ravel(order="C")
        column_index, launch_keys, flat_values = column_index[keep], launch_keys[keep], flat_values[keep]
    per_column = pl.DataFrame(
        {
            "name": numeric,
            "unit": [normalized[c][0] for c in numeric],
            "kind": ["int" if i else "float" for i in integral],
        },
        schema={"name": pl.String, "unit": pl.String, "kind": pl.String},
    )
    # One gather of the three string columns (polars runs them in parallel) instead of a gather each.
    fast = per_column[pl.Series(column_index, dtype=pl.UInt32)].with_columns(
        pl.Series("launch_key", launch_keys),
        pl.Series("value", flat_values),
        pl.lit(None, dtype=pl.String).alias("text_value"),
    )  # first_device reads it even when no column holds text

    if normalized.get("gpu__time_duration.sum", ("ns", 1.0))[0] not in ("ns", None):
        launch_values = launch_values.with_columns(pl.lit(None, dtype=pl.Float64).alias("gpu__time_duration.sum"))
    if not failed_columns:
        return fast, launch_values
    unit_table = pl.DataFrame(
        {"name": metric_columns, "unit_raw": [units[c] for c in metric_columns]},
        schema={"name": pl.String, "unit_raw": pl.String},
    )

    def long_cells(columns: list[str]) -> pl.DataFrame:
        return (
            narrow(rows, ["launch_key", "_line", *columns])
            .unpivot(index=["launch_key", "_line"], on=columns, variable_name="name", value_name="cell")
            .join(unit_table, on="name", how="left", maintain_order="left")
            .with_columns(
                pl.lit(None, dtype=pl.String).alias("section"), pl.lit(None, dtype=pl.String).alias("_column")
            )
        )

    if dot_grouping:  # localized numbers: a "1.234" that did cast means 1234, so every cell is cleaned
        metrics = numeric_metrics(long_cells(metric_columns))
        return metrics, launch_metric_values(path, metrics, launches)
    slow = numeric_metrics(
        long_cells(failed_columns).filter(pl.col("cell").str.strip_chars().cast(pl.Float64, strict=False).is_null())
    )
    if any(c in LAUNCH_METRICS for c in failed_columns):
        check_launch_metrics(path, slow, launches)
        fixed = slow.filter(pl.col("name").is_in(launch_values.columns) & pl.col("value").is_not_null())
        for row in fixed.iter_rows(named=True):  # instance lists or separators in a launch-field metric
            launch_values = launch_values.with_columns(
                pl.when(pl.col("launch_key") == row["launch_key"])
                .then(row["value"])
                .otherwise(pl.col(row["name"]))
                .alias(row["name"])
            )
    return pl.concat([fast, slow.drop("_line", "_column")], how="diagonal_relaxed"), launch_values


def _kernel_time(rows: pl.DataFrame) -> pl.DataFrame | None:
    """The older layouts' "Kernel Time" (wall clock when profiled) as a text metric."""
    if "Kernel Time" not in rows.columns:
        return None
    return (
        rows.unique("launch_key", keep="first", maintain_order=True)
        .filter(pl.col("Kernel Time").fill_null("") != "")
        .select(
            "launch_key",
            pl.lit("Kernel Time").alias("name"),
            pl.col("Kernel Time").alias("text_value"),
            pl.lit("text").alias("kind"),
            "_line",
        )
    )


def _rules(rules: pl.DataFrame) -> pl.DataFrame:
    """Rule rows (what Nsight Compute's rule messages say) as text metrics."""
    rule_type = pl.col("Rule Type").fill_null("") if "Rule Type" in rules.columns else pl.lit("")
    description = pl.col("Rule Description").fill_null("") if "Rule Description" in rules.columns else pl.lit("")
    text = (
        pl.when(rule_type != "")
        .then(pl.concat_str(pl.lit("["), rule_type, pl.lit("] "), description))
        .otherwise(description)
    )
    speedup = pl.lit(None, dtype=pl.Float64)
    if "Estimated Speedup" in rules.columns:
        cell = pl.col("Estimated Speedup").str.strip_chars()
        speedup = cell.str.replace_all(",", "", literal=True).cast(pl.Float64, strict=False)
    return rules.select(
        "launch_key",
        pl.col("Section Name").alias("section"),
        pl.concat_str(pl.lit("rule:"), pl.col("Rule Name")).alias("name"),
        pl.when(speedup.is_not_null()).then(pl.lit("%")).alias("unit"),
        speedup.alias("value"),
        text.alias("text_value"),
        pl.lit("text").alias("kind"),
        "_line",
    )
