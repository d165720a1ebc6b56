"""Launch delays per operator (HTA's `get_cuda_kernel_launch_stats`, summed up per operator as its
`get_aten_op_kernels_and_delay` does).

An activity's launch delay is the time from its launch call's return to its start on the GPU (HTA's definition,
clipped at zero): a few microseconds on an idle GPU, more when the stream was busy with earlier work. A CUDA
graph's kernels share one launch call; only the first is counted, the others waited on the graph's own work. HTA
also singles out kernels shorter than their own launch call (the GPU finishes them faster than the host issues
them: launch-bound if they run back to back) and launch calls longer than 50 us.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

LONG_CALL_NS = 50_000  # HTA's runtime_cutoff: a launch call this long is an outlier
LONG_DELAY_NS = 100_000  # HTA's launch_delay_cutoff


@dataclass(frozen=True)
class OperatorDelay:
    """One operator's launches: count, median, 95th percentile and max delay, median launch call, and how many
    of its activities ran shorter than their launch call."""

    operator: str | None
    launches: int
    median_delay_ns: float
    p95_delay_ns: float
    max_delay_ns: int
    median_call_ns: float
    shorter_than_call: int


@dataclass(frozen=True)
class LaunchDelays:
    """`table`: one row per launched activity (operator, name, kind, call_ns, delay_ns, duration_ns);
    `operators`: per operator, most delay in total first; the trace-wide counts HTA flags."""

    table: pl.DataFrame
    operators: tuple[OperatorDelay, ...]
    launches: int
    median_delay_ns: float | None
    p95_delay_ns: float | None
    shorter_than_call: int
    long_calls: int
    long_delays: int


def launch_delays(gpu: pl.DataFrame, calls: pl.DataFrame) -> LaunchDelays:
    """Each activity's delay from its launch call's return, and the statistics per operator."""
    launched = (
        gpu.filter(pl.col("correlation_id").is_not_null())
        .sort("start_ns")
        .unique("correlation_id", keep="first", maintain_order=True)
        .join(
            calls.filter(pl.col("correlation_id").is_not_null())
            .unique("correlation_id", keep="first")
            .select("correlation_id", pl.col("start_ns").alias("call_start_ns"), pl.col("end_ns").alias("call_end_ns")),
            on="correlation_id",
            how="inner",
        )
    )
    table = launched.select(
        "operator",
        "name",
        "kind",
        (pl.col("call_end_ns") - pl.col("call_start_ns")).alias("call_ns"),
        (pl.col("start_ns") - pl.col("call_end_ns")).clip(lower_bound=0).alias("delay_ns"),
        (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns"),
    )
    short = pl.col("duration_ns") < pl.col("call_ns")
    summary = (
        table.group_by("operator")
        .agg(
            launches=pl.len(),
            median=pl.col("delay_ns").median(),
            p95=pl.col("delay_ns").quantile(0.95, "linear"),
            max=pl.col("delay_ns").max(),
            total=pl.col("delay_ns").sum(),
            call=pl.col("call_ns").median(),
            short=short.sum(),
        )
        .sort("total", "launches", descending=True, nulls_last=True)
    )
    operators = tuple(
        OperatorDelay(
            operator=row["operator"],
            launches=int(row["launches"]),
            median_delay_ns=float(row["median"]),
            p95_delay_ns=float(row["p95"]),
            max_delay_ns=int(row["max"]),
            median_call_ns=float(row["call"]),
            shorter_than_call=int(row["short"]),
        )
        for row in summary.iter_rows(named=True)
    )
    delays = table["delay_ns"]
    return LaunchDelays(
        table=table,
        operators=operators,
        launches=table.height,
        median_delay_ns=float(delays.median()) if table.height else None,  # type: ignore[arg-type]
        p95_delay_ns=float(delays.quantile(0.95, "linear")) if table.height else None,  # type: ignore[arg-type]
        shorter_than_call=int(table.select(short.sum()).item()),
        long_calls=int((table["call_ns"] > LONG_CALL_NS).sum()),
        long_delays=int((delays > LONG_DELAY_NS).sum()),
    )
