"""Cells to numbers and units: thousands separators and the dot-grouped locale style ("27.595.520", "1.234,5";
detected once per file), "n/a", metric-instance lists (the mean) and `aggregate (instances)` cells (the aggregate),
units scaled to base units (per-block and per-thread units keep their denominator), and shared-memory sizes that
the details page prints rounded, made exact where they can be.
"""

from __future__ import annotations

import functools
import math

import polars as pl

from tracekit.importers.units import normalize_unit

_GROUPED_NUMBER = r"^[-+]?\d[\d.,]*$"
_DOT_GROUPED = (
    r"^[-+]?\d{1,3}(\.\d{3}){2,}(,\d+)?$|^[-+]?\d{1,3}(\.\d{3})+,\d+$"
    r"|^[-+]?\d+,(\d{1,2}|\d{4,})$"
)
_NUMBER_TOKEN = r"[-+]?(?:\d[\d.,]*)?\d(?:[eE][-+]?\d+)?"
_INSTANCE_LIST = rf"^\(?\s*{_NUMBER_TOKEN}(?:\s*;\s*{_NUMBER_TOKEN}|\s+{_NUMBER_TOKEN})+\s*;?\s*\)?$"
# `--print-metric-instances values` on a metric with instances: the aggregate, then its instance values in
# parentheses ("256 (256)", "1,024 (512;512)"); the aggregate is the metric's value, as without the option.
_AGGREGATE_WITH_INSTANCES = (
    rf"^\s*({_NUMBER_TOKEN})\s*\(\s*{_NUMBER_TOKEN}(?:(?:\s*;\s*|\s+){_NUMBER_TOKEN})*\s*;?\s*\)\s*$"
)
NOT_AVAILABLE = ["n/a", "N/A", "nan", "NaN", "-", "--"]
# Shared-memory sizes whose printed rounding matters to the occupancy (see _exact_sizes); the first two are whole KiB.
_WHOLE_KIB_METRICS = ("launch__shared_mem_config_size", "launch__shared_mem_per_block_driver")
_SIZE_METRICS = (*_WHOLE_KIB_METRICS, "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")


def integer_expr(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().str.replace_all(",", "", literal=True).cast(pl.Int64, strict=False)


def non_empty(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().fill_null("") != ""


def uses_dot_grouping(cells: pl.Series) -> bool:
    """True when the file writes numbers as "27.595.520" / "1.234,5" (dots group thousands, comma is decimal)."""
    text = cells.drop_nulls().str.strip_chars().unique()
    candidates = text.filter(text.str.contains(",", literal=True) | (text.str.count_matches(r"\.") > 1))
    return bool(candidates.str.contains(_DOT_GROUPED).any()) if candidates.len() else False


@functools.cache
def normalized_unit(unit_raw: str | None) -> tuple[str | None, float]:
    if unit_raw is None or not unit_raw.strip():
        return None, 1.0
    unit, factor = normalize_unit(unit_raw)
    if "/" in unit and unit == unit_raw.strip() and factor == 1.0:  # per-block / per-thread: scale the numerator
        numerator, _, denominator = unit.partition("/")
        base, numerator_factor = normalize_unit(numerator)
        unit, factor = f"{base}/{denominator}", numerator_factor
    return unit or None, factor


def numeric_metrics(long: pl.DataFrame) -> pl.DataFrame:
    """Parse the `cell` column of a long frame (launch_key, section, name, unit_raw, cell, _line, _column)."""
    long = long.with_columns(pl.col("cell").str.strip_chars()).filter(
        pl.col("cell").is_not_null() & (pl.col("cell") != "")
    )
    plain_failed = long.filter(pl.col("cell").cast(pl.Float64, strict=False).is_null())["cell"]
    dot_grouping = uses_dot_grouping(plain_failed)
    long = _parse_cells(long, dot_grouping)
    unit_rows = [(u, *normalized_unit(u)) for u in long["unit_raw"].unique().to_list()]
    unit_table = pl.DataFrame(
        unit_rows, schema={"unit_raw": pl.String, "unit": pl.String, "factor": pl.Float64}, orient="row"
    )
    long = long.join(unit_table, on="unit_raw", how="left", nulls_equal=True, maintain_order="left")
    return _exact_sizes(_metric_columns(long), long, dot_grouping)


def _exact_sizes(metrics: pl.DataFrame, long: pl.DataFrame, dot_grouping: bool) -> pl.DataFrame:
    """Shared-memory sizes printed in a rounded unit ("233.47" Kbyte): exact where they can be, else marked.

    `ncu --page details` prints sizes in Kbyte (1,000 B) with two decimals, so a value is known only to within
    +-5 bytes: 233.47 Kbyte is 233,465 .. 233,475 B. The carveout (`launch__shared_mem_config_size`) and the
    driver's reserve are whole KiB, so the one multiple of 1,024 in that window is the exact value (233,472).
    A static or dynamic size has no such grid: its value stays as printed, and `text_value` keeps the cell and
    unit as printed ("232.45 Kbyte/block") to say that the byte count is rounded (tracekit.analysis.occupancy.
    printed_rounding_bytes reads it back). Cells precise to the byte (the raw page's six decimals) are rounded to it.
    """
    base_name = pl.col("name").str.replace(r"\.(min|max)$", "")  # the summary page's Minimum and Maximum too
    sizes = long.filter(base_name.is_in(_SIZE_METRICS) & pl.col("value").is_not_null() & ~pl.col("_is_list"))
    if sizes.is_empty() or (sizes["factor"] == 1.0).all():
        return metrics
    fixes: dict[tuple[int, str, int], tuple[float, str | None]] = {}
    for key, name, cell, unit_raw, value, factor, line in sizes.select(
        "launch_key", "name", "cell", "unit_raw", "value", "factor", "_line"
    ).iter_rows():
        decimal_mark = "," if dot_grouping else "."
        decimals = len(cell.rpartition(decimal_mark)[2]) if decimal_mark in cell else 0
        half_width = 0.5 * 10.0**-decimals * factor
        scaled = value * factor
        if factor <= 1.0 or half_width < 0.5:  # printed in bytes, or to the byte
            fixes[(key, name, line)] = (float(round(scaled)), None)
            continue
        if name.removesuffix(".min").removesuffix(".max") in _WHOLE_KIB_METRICS:
            low, high = math.ceil((scaled - half_width) / 1024), math.floor((scaled + half_width) / 1024)
            if low == high:
                fixes[(key, name, line)] = (float(low * 1024), None)
                continue
        fixes[(key, name, line)] = (float(round(scaled)), f"{cell} {unit_raw}")
    table = pl.DataFrame(
        [(k, n, line, v, t) for (k, n, line), (v, t) in fixes.items()],
        schema={"launch_key": pl.Int64, "name": pl.String, "_line": pl.Int64, "_value": pl.Float64, "_text": pl.String},
        orient="row",
    )
    joined = metrics.join(table, on=["launch_key", "name", "_line"], how="left", maintain_order="left")
    fixed = pl.col("_value").is_not_null()
    return joined.with_columns(
        pl.when(fixed).then(pl.col("_value")).otherwise(pl.col("value")).alias("value"),
        pl.when(fixed).then(pl.col("_text")).otherwise(pl.col("text_value")).alias("text_value"),
        pl.when(fixed).then(pl.lit("int")).otherwise(pl.col("kind")).alias("kind"),
    ).drop("_value", "_text")


def _parse_cells(long: pl.DataFrame, dot_grouping: bool) -> pl.DataFrame:
    """value (before unit scaling) and _is_list for stripped, non-empty `cell`s."""
    aggregate = pl.col("cell").str.extract(_AGGREGATE_WITH_INSTANCES, 1)
    cell = pl.when(aggregate.is_not_null()).then(aggregate).otherwise(pl.col("cell"))
    if dot_grouping:
        cleaned = cell.str.replace_all(".", "", literal=True).str.replace_all(",", ".", literal=True)
    else:
        cleaned = cell.str.replace_all(",", "", literal=True)
    number_text = pl.when(cell.str.contains(_GROUPED_NUMBER)).then(cleaned).otherwise(cell)
    long = long.with_columns(
        pl.when(cell.is_in(NOT_AVAILABLE))
        .then(None)
        .otherwise(number_text.cast(pl.Float64, strict=False))
        .alias("value"),
    )
    long = long.with_columns((pl.col("value").is_null() & cell.str.contains(_INSTANCE_LIST)).alias("_is_list"))
    if long.select(pl.col("_is_list").any()).item():
        long = _instance_means(long, dot_grouping)
    return long


def _metric_columns(long: pl.DataFrame) -> pl.DataFrame:
    """The metric frame from parsed cells with `unit` and `factor`: scaled value, text_value and kind."""
    value = pl.col("value") * pl.col("factor")
    is_number = pl.col("value").is_not_null()
    return long.select(
        "launch_key",
        "section",
        "name",
        "unit",
        value.alias("value"),
        pl.when(~is_number | pl.col("_is_list")).then(pl.col("cell")).alias("text_value"),
        pl.when(~is_number)
        .then(pl.lit("text"))
        .when(~pl.col("_is_list") & _integral(value))
        .then(pl.lit("int"))
        .otherwise(pl.lit("float"))
        .alias("kind"),
        "_line",
        "_column",
    )


def _integral(value: pl.Expr) -> pl.Expr:
    return (value == value.floor()) & (value.abs() < 2.0**53)


def _instance_means(long: pl.DataFrame, dot_grouping: bool) -> pl.DataFrame:
    """`--print-metric-instances values` cells: the mean of the instance values becomes the value."""
    element = pl.element().str.strip_chars()
    if dot_grouping:
        element = element.str.replace_all(".", "", literal=True).str.replace_all(",", ".", literal=True)
    else:
        element = element.str.replace_all(",", "", literal=True)
    means = (
        pl.col("cell")
        .str.strip_chars("() ")
        .str.replace_all(r"\s*;\s*|\s+", ";")
        .str.strip_chars(";")
        .str.split(";")
        .list.eval(element.cast(pl.Float64, strict=False))
        .list.mean()
    )
    return long.with_columns(pl.when(pl.col("_is_list")).then(means).otherwise(pl.col("value")).alias("value"))
