"""Who the others waited for: at each collective the rank that arrived last and by how much, whether that is
more than the ranks' own step-to-step variation, per step the rank that held it back, and over the job the rank
that was last at most of the collectives that were late beyond the noise.

The noise at a collective is how much one rank's arrival (minus the median arrival) varies from step to step,
as a robust deviation (1.4826 MAD), the median over the ranks; the last of N ranks arriving by chance lies about
sqrt(2 ln N) deviations out, so a last arrival counts only beyond (sqrt(2 ln N) + 3) deviations, and never
below NOISE_FLOOR_NS (the jitter of a collective's ends).
"""

from __future__ import annotations

import math

import polars as pl

from tracekit.analysis.job.align import KEY

NOISE_FLOOR_NS = 5_000
MAD_SCALE = 1.4826
JOB_SHARE = 0.5  # the job's straggler was last at no less than this part of the late collectives


def noise_threshold_ns(deviation_ns: float, ranks: int) -> int:
    """The lateness a last arrival needs to count, for one rank's arrival deviation and the job's rank count."""
    spread = math.sqrt(2 * math.log(max(ranks, 2))) + 3
    return max(NOISE_FLOOR_NS, round(spread * deviation_ns))


def arrivals(corrected: pl.DataFrame) -> pl.DataFrame:
    """Per rank and collective: late_ns, its arrival minus the collective's median arrival."""
    return corrected.with_columns(
        (pl.col("arrival_ns") - pl.col("arrival_ns").median().over(KEY)).round().cast(pl.Int64).alias("late_ns")
    )


def collective_table(late: pl.DataFrame) -> pl.DataFrame:
    """One row per collective: step, last_rank, late_ns, ahead_of_next_ns, noise_ns, significant."""
    ranks = late["rank"].n_unique()
    # each rank's step-to-step variation at each position of its step, the median over the ranks
    deviation = (
        late.group_by("rank", "position")
        .agg(((pl.col("late_ns") - pl.col("late_ns").median()).abs().median() * MAD_SCALE).alias("deviation_ns"))
        .group_by("position")
        .agg(pl.col("deviation_ns").median())
    )
    ordered = late.sort("arrival_ns", descending=True)
    table = ordered.group_by(KEY, maintain_order=True).agg(
        pl.col("step").min(),
        pl.col("position").min(),
        pl.len().alias("ranks"),
        pl.col("rank").first().alias("last_rank"),
        pl.col("late_ns").first(),
        (pl.col("arrival_ns").first() - pl.col("arrival_ns").get(1)).alias("ahead_of_next_ns"),
    )
    spread = math.sqrt(2 * math.log(max(ranks, 2))) + 3
    return (
        table.join(deviation, on="position", how="left")
        .with_columns(
            pl.max_horizontal(pl.lit(NOISE_FLOOR_NS), (pl.col("deviation_ns").fill_null(0) * spread).round())
            .cast(pl.Int64)
            .alias("noise_ns")
        )
        .with_columns((pl.col("late_ns") > pl.col("noise_ns")).alias("significant"))
        .drop("deviation_ns")
        .sort("step", "position", *KEY)
    )


def step_stragglers(table: pl.DataFrame) -> pl.DataFrame:
    """Per step: rank (null where no collective was late beyond the noise), late_ns (its summed lateness at the
    collectives it was last to reach), collectives_last, spread_ns, noise_ns, gain_ns."""
    steps = table.group_by("step").agg(
        pl.col("late_ns").max().alias("spread_ns"), pl.col("noise_ns").max(), pl.len().alias("collectives")
    )
    late = (
        table.filter("significant")
        .group_by("step", "last_rank")
        .agg(
            pl.col("late_ns").sum(),
            pl.len().alias("collectives_last"),
            pl.col("ahead_of_next_ns").sum().alias("gain_ns"),
        )
        .sort("step", "late_ns", descending=[False, True])
        .group_by("step", maintain_order=True)
        .first()
        .rename({"last_rank": "rank"})
    )
    return (
        steps.join(late, on="step", how="left")
        .with_columns(pl.col("late_ns", "collectives_last", "gain_ns").fill_null(0))
        .sort("step")
    )


def job_straggler(table: pl.DataFrame) -> tuple[int | None, float]:
    """The rank last at the largest part of the collectives late beyond the noise, and that part; None where it
    was last at less than JOB_SHARE of them (or none was late)."""
    late = table.filter("significant")
    if late.height == 0:
        return None, 0.0
    counts = late.group_by("last_rank").len().sort("len", "last_rank", descending=[True, False])
    rank, count = counts.row(0)
    share = count / late.height
    return (int(rank) if share >= JOB_SHARE else None), share
