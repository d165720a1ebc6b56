"""Who the others waited for: at each collective the rank that arrived last and by how much, whether that is
more than the ranks' own step-to-step variation, per step the rank that held it back, and over the job the rank
that is late consistently, step after step.

The noise at a collective is how much one rank's arrival (minus the median arrival) varies from step to step,
as a robust deviation (1.4826 MAD), the median over the ranks; the last of N ranks arriving by chance lies about
sqrt(2 ln N) deviations out, so a last arrival counts only beyond (sqrt(2 ln N) + 3) deviations, and never
below NOISE_FLOOR_NS (the jitter of a collective's ends).

One collective is weak evidence where ranks are few: with two, the median arrival is their midpoint, so the
straggler's own variation is all the noise there is, and a delay of a few deviations that recurs at every step
never stands out at any one collective. The job's straggler is therefore judged over the steps: each rank's mean
lateness in each step (over the step's collectives), and a one-sided t test of those means against zero at
ALPHA over all the ranks (Bonferroni: ALPHA / N each). Once a rank passes it, its last arrivals beyond one
deviation count for its steps (their lateness, cause and gain) even where they stand within the noise.
"""

from __future__ import annotations

import math

import polars as pl

from tracekit.analysis.job.align import KEY

NOISE_FLOOR_NS = 5_000
MAD_SCALE = 1.4826
ALPHA = 0.01  # the chance, over all the ranks together, of naming a straggler where none is
MIN_STEPS = 3  # fewer steps give no step-to-step variation to judge a rank's lateness against


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
    """One row per collective: step, last_rank, late_ns, deviation_ns, noise_ns, significant."""
    ranks = late["rank"].n_unique()
    # each rank's step-to-step variation at each position of its step, the median over the ranks; a position's
    # no less than the median position's (few ranks and steps make a MAD of a handful of values, at times ~0)
    deviation = (
        late.group_by("rank", "position")
        .agg(((pl.col("late_ns") - pl.col("late_ns").median()).abs().median() * MAD_SCALE).alias("deviation_ns"))
        .group_by("position")
        .agg(pl.col("deviation_ns").median())
        .with_columns(pl.max_horizontal("deviation_ns", pl.col("deviation_ns").median()))
    )
    ordered = late.sort("arrival_ns", descending=True)
    table = ordered.group_by(KEY, maintain_order=True).agg(
        pl.col("step").min(),
        pl.col("position").min(),
        pl.len().alias("ranks"),
        pl.col("rank").first().alias("last_rank"),
        pl.col("late_ns").first(),
        pl.col("resynced").first(),
    )
    spread = math.sqrt(2 * math.log(max(ranks, 2))) + 3
    return (
        table.join(deviation, on="position", how="left")
        .with_columns(
            pl.max_horizontal(pl.lit(NOISE_FLOOR_NS), (pl.col("deviation_ns").fill_null(0) * spread).round())
            .cast(pl.Int64)
            .alias("noise_ns")
        )
        .with_columns(
            (pl.col("late_ns") > pl.col("noise_ns")).alias("significant"),
            pl.col("deviation_ns").fill_null(0).round().cast(pl.Int64),
        )
        .sort("step", "position", *KEY)
    )


def counted(table: pl.DataFrame, job_rank: int | None) -> pl.DataFrame:
    """`table` with `counted`: the collectives whose last arrival holds its step back, those late beyond the noise
    and, where the job has a consistent straggler, those it reached last by more than one deviation."""
    consistent = (
        (pl.col("last_rank") == job_rank)
        & (pl.col("late_ns") > pl.col("deviation_ns"))
        & (pl.col("late_ns") > NOISE_FLOOR_NS)
        if job_rank is not None
        else pl.lit(False)
    )
    return table.with_columns((pl.col("significant") | consistent).alias("counted"))


def step_stragglers(table: pl.DataFrame) -> pl.DataFrame:
    """Per step: rank (null where no collective counted), late_ns (its summed lateness at the counted
    collectives it was last to reach), collectives_last, spread_ns, noise_ns. Where the last rank had not waited
    for any collective since the previous one it was last at too (`resynced` false), only the lateness it added
    there counts: the rest was carried over and is counted once."""
    steps = table.group_by("step").agg(
        pl.col("late_ns").max().alias("spread_ns"), pl.col("noise_ns").max(), pl.len().alias("collectives")
    )
    carried = (pl.col("last_rank") == pl.col("last_rank").shift(1).over("step")) & ~pl.col("resynced")
    added = table.sort("step", "position", *KEY).with_columns(
        (pl.col("late_ns") - pl.when(carried).then(pl.col("late_ns").shift(1).over("step")).otherwise(0)).clip(
            lower_bound=0
        )
    )
    late = (
        added.filter("counted")
        .group_by("step", "last_rank")
        .agg(
            pl.col("late_ns").sum(),
            pl.len().alias("collectives_last"),
        )
        .sort("step", "late_ns", descending=[False, True])
        .group_by("step", maintain_order=True)
        .first()
        .rename({"last_rank": "rank"})
    )
    return (
        steps.join(late, on="step", how="left")
        .with_columns(pl.col("late_ns", "collectives_last").fill_null(0))
        .sort("step")
    )


def consistency(late: pl.DataFrame) -> pl.DataFrame:
    """Per rank: steps, late_per_step_ns (the mean over the steps of its mean lateness in a step), t (that mean in
    standard errors of its step-to-step variation), t_needed (the one-sided t quantile at ALPHA / ranks)."""
    ranks = late["rank"].n_unique()
    per_step = late.group_by("rank", "step").agg(pl.col("late_ns").mean())
    found = per_step.group_by("rank").agg(
        pl.len().alias("steps"),
        pl.col("late_ns").mean().alias("late_per_step_ns"),
        pl.col("late_ns").std(ddof=1).alias("_deviation"),
    )
    steps = found["steps"].to_numpy()
    from scipy import stats  # here: scipy.stats takes 1.5 s to import, and every command imports the job's door

    needed = stats.t.ppf(1 - ALPHA / max(ranks, 2), (steps - 1).clip(min=1))
    # a deviation of 0 (identical steps) is floored at the clocks' 1 ns; one step gives none (t 0)
    deviation = pl.col("_deviation").fill_null(float("inf")).clip(lower_bound=1.0)
    t = pl.col("late_per_step_ns") / deviation * pl.col("steps").cast(pl.Float64).sqrt()
    return (
        found.with_columns(t.alias("t"), pl.Series("t_needed", needed, dtype=pl.Float64))
        .drop("_deviation")
        .sort("t", "rank", descending=[True, False])
    )


def job_straggler(ranked: pl.DataFrame) -> int | None:
    """The rank late consistently over the steps (`consistency`, best first): beyond its t quantile, over
    MIN_STEPS steps or more; None where no rank is."""
    if ranked.height == 0:
        return None
    best = ranked.row(0, named=True)
    if best["steps"] >= MIN_STEPS and best["late_per_step_ns"] > 0 and best["t"] > best["t_needed"]:
        return int(best["rank"])
    return None


def share(table: pl.DataFrame, rank: int | None) -> float:
    """Of the counted collectives, the part `rank` was last to reach."""
    held = table.filter("counted")
    if rank is None or held.height == 0:
        return 0.0
    return held.filter(pl.col("last_rank") == rank).height / held.height
