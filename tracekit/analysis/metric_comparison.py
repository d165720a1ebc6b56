"""Side-by-side Nsight metrics of two launches: the metrics both recorded, with B's value over A's."""

from __future__ import annotations

import polars as pl

METRIC_KEYS = ["section", "name", "unit"]


def metric_comparison(metrics_a: pl.DataFrame, metrics_b: pl.DataFrame) -> pl.DataFrame:
    """Numeric metrics present in both launches (joined on section, name and unit), with `ratio_b_to_a`.

    Frames are `Store.metrics` rows of one launch each. A metric recorded twice in one launch keeps its first
    value; the ratio is null where A's value is 0. Rows keep A's order.
    """

    def numeric(frame: pl.DataFrame, label: str) -> pl.DataFrame:
        return (
            frame.filter(pl.col("value").is_not_null())
            .with_columns(pl.col(k).fill_null("") for k in METRIC_KEYS)
            .unique(subset=METRIC_KEYS, keep="first", maintain_order=True)
            .select(*METRIC_KEYS, pl.col("value").alias(f"value_{label}"))
        )

    joined = numeric(metrics_a, "a").join(numeric(metrics_b, "b"), on=METRIC_KEYS, how="inner", maintain_order="left")
    return joined.with_columns(
        pl.when(pl.col("value_a") != 0).then(pl.col("value_b") / pl.col("value_a")).alias("ratio_b_to_a")
    )
