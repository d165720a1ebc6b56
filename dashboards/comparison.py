"""Side-by-side metrics of two launches.

TO MOVE: a pure analysis function; it belongs under `tracekit/analysis/` (a compare module) once that exists.
"""

from __future__ import annotations

import polars as pl


def metric_comparison(metrics_a: pl.DataFrame, metrics_b: pl.DataFrame) -> pl.DataFrame:
    """Numeric metrics present in both launches (joined on section, name and unit), with `ratio_b_to_a`.

    Frames are `Store.metrics` rows of one launch each. A metric recorded twice in one launch keeps its first
    value; the ratio is null where A's value is 0.
    """
    keys = ["section", "name", "unit"]

    def numeric(frame: pl.DataFrame, label: str) -> pl.DataFrame:
        return (frame.filter(pl.col("value").is_not_null())
                .with_columns(pl.col(k).fill_null("") for k in keys)
                .unique(subset=keys, keep="first", maintain_order=True)
                .select(*keys, pl.col("value").alias(f"value_{label}")))

    joined = numeric(metrics_a, "a").join(numeric(metrics_b, "b"), on=keys, how="inner", maintain_order="left")
    return joined.with_columns(
        pl.when(pl.col("value_a") != 0).then(pl.col("value_b") / pl.col("value_a")).alias("ratio_b_to_a"))
