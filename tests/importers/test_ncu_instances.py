"""Raw pages printed with `--print-metric-instances values`: a metric with instances is printed as its aggregate
followed by the instance values in parentheses (`256 (256)`, `1,024 (512;512)`). Such a page imports, and each
metric keeps the aggregate as its value, as the same page printed without the option gives it."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import polars as pl

from tracekit.importers import read_file

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces" / "h100"
ID_COLUMNS = 13  # "ID" .. "CC": the launch columns before the metrics


def _with_instances(text: str) -> tuple[str, int]:
    """The H100 samples' raw page with every numeric metric cell written as `aggregate (aggregate)` (one
    instance) and every other one as `aggregate (half;half)`; returns the text and how many cells changed."""
    rows = list(csv.reader(io.StringIO(text)))
    header_at = next(i for i, row in enumerate(rows) if row and row[0] == "ID")
    changed = 0
    for row in rows[header_at + 2 :]:  # after the header and the units row
        for column in range(ID_COLUMNS, len(row)):
            cell = row[column]
            try:
                value = float(cell.replace(",", ""))
            except ValueError:
                continue
            if not math.isfinite(value):
                continue  # "nan": no value, no instances
            row[column] = f"{cell} ({cell})" if changed % 2 == 0 else f"{cell} ({value / 2:g};{value / 2:g})"
            changed += 1
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for row in rows:
        writer.writerow(row)
    return out.getvalue(), changed


def test_raw_page_with_metric_instances_imports_with_the_aggregates(tmp_path):
    plain = SAMPLES / "samples.raw.csv"
    text, changed = _with_instances(plain.read_text())
    assert changed > 10_000
    instanced = tmp_path / "samples.instances.raw.csv"
    instanced.write_text(text)
    expected, got = read_file(plain), read_file(instanced)
    assert got.launches.select("kernel_name", "grid_x", "block_x", "registers_per_thread", "duration_ns").equals(
        expected.launches.select("kernel_name", "grid_x", "block_x", "registers_per_thread", "duration_ns")
    )
    keys = ["launch_key", "name"]
    joined = expected.metrics.select(*keys, "value").join(
        got.metrics.select(*keys, pl.col("value").alias("instanced")), on=keys, how="full", coalesce=True
    )
    assert joined.height == expected.metrics.height
    numeric = joined.filter(pl.col("value").is_not_null())
    assert numeric.height > 10_000
    assert numeric.filter(pl.col("instanced") != pl.col("value")).height == 0
    assert numeric["instanced"].null_count() == 0
    sample = got.metrics.filter((pl.col("name") == "launch__registers_per_thread") & (pl.col("launch_key") == 0))
    assert sample["value"].to_list() == [22.0]
