"""Why the straggler was late: its own window before each collective it was last to reach (from the end of its
previous collective to its arrival), set against the median rank's window at the same collective.

- compute: more GPU time in its kernels (and which kernels ran longer in its step);
- host: more GPU idle while its host loaded data (a DataLoader range), waited in a sync, or ran other code;
- communication: its previous collective ended later than on the others (the same collective slower on its link).

The largest excess is the cause. Time its profiler dropped is no one's cause.
"""

from __future__ import annotations

import polars as pl

from tracekit.analysis.job.align import KEY
from tracekit.analysis.job.types import COMMUNICATION, COMPUTE, HOST, LOADER, SYNC, CauseShare, KernelExcess

PARTS = {COMPUTE: "compute_ns", LOADER: "loader_ns", SYNC: "sync_ns", HOST: "host_ns", COMMUNICATION: "previous_end_ns"}
LONGER_KERNELS = 5


def excess_by_cause(late: pl.DataFrame, table: pl.DataFrame, rank: int, step: int) -> tuple[CauseShare, ...]:
    """The straggler's excess of each kind over the median rank, summed over the step's counted collectives it was
    last to reach (`straggler.counted`); largest first."""
    keys = table.filter((pl.col("step") == step) & (pl.col("last_rank") == rank) & pl.col("counted")).select(KEY)
    rows = late.join(keys, on=KEY).with_columns(
        (pl.col(column) - pl.col(column).median().over(KEY)).alias(cause) for cause, column in PARTS.items()
    )
    mine = rows.filter(pl.col("rank") == rank).select(pl.col(list(PARTS)).sum())
    shares = [CauseShare(cause, round(mine[cause][0] or 0)) for cause in PARTS]
    return tuple(sorted(shares, key=lambda share: -share.excess_ns))


def cause_of(shares: tuple[CauseShare, ...]) -> str | None:
    return shares[0].cause if shares and shares[0].excess_ns > 0 else None


def longer_kernels(kernel_time: pl.DataFrame, rank: int, step: int) -> tuple[KernelExcess, ...]:
    """The kernels that ran longer on `rank` in `step` than on the other ranks given (`kernel_time`: rank, step,
    name, gpu_ns), largest excess first."""
    in_step = kernel_time.filter(pl.col("step") == step)
    others = in_step.filter(pl.col("rank") != rank)
    if others.height == 0:
        return ()
    # a kernel a rank did not run counts 0 there: the median over every other rank, zeros included
    grid = others.select("rank").unique().join(others.select("name").unique(), how="cross")
    typical = (
        grid.join(others.select("rank", "name", "gpu_ns"), on=["rank", "name"], how="left")
        .group_by("name")
        .agg(pl.col("gpu_ns").fill_null(0).median().alias("typical_ns"))
    )
    mine = in_step.filter(pl.col("rank") == rank).select("name", "gpu_ns")
    excess = (
        mine.join(typical, on="name", how="full", coalesce=True)
        .select("name", (pl.col("gpu_ns").fill_null(0) - pl.col("typical_ns").fill_null(0)).alias("excess_ns"))
        .filter(pl.col("excess_ns") > 0)
        .sort("excess_ns", "name", descending=[True, False])
        .head(LONGER_KERNELS)
    )
    return tuple(KernelExcess(name, round(value)) for name, value in excess.iter_rows())
