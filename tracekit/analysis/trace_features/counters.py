"""Kernel counters from the CUPTI range profiler (HTA's `get_cupti_counter_data_with_operators`): each profiled
kernel's counters, its floating-point operations from the SASS instruction counts, and the operators that launched
it, summed up per operator.

torch.profiler's range profiler (`experimental_config` with `profiler_metrics`, `profiler_measure_per_kernel`)
writes one `cuda_profiler_range` event per kernel with the counters in its args, and no kernel activity. The range
carries no correlation id, so, as HTA does, the n-th range (in time order) is the kernel of the n-th kernel-launch
call; where the counts differ the pairing is unknown and the operators are left empty. The operators are the CPU
operator ranges open on the launching thread at the call: the outermost (`aten::conv2d`) and the innermost
(`aten::cudnn_convolution`).

FLOPs per precision as Nsight Compute's roofline counts them: add + mul + 2 x fma of the thread-level SASS counts
(`smsp__sass_thread_inst_executed_op_{d,f,h}{add,mul,fma}_pred_on.sum`). The ranges' times are the profiler's (it
replays each kernel to count it), not the kernels' durations, so no FLOP rate is derived from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
PRECISIONS = {"fp64": "d", "fp32": "f", "fp16": "h"}  # the SASS op prefix of each precision
OPS = ("add", "mul", "fma")  # an fma is two operations
FLOP_COLUMNS = tuple(f"{precision}_flops" for precision in PRECISIONS)
KERNEL_LAUNCH = r"^(?:cuda|cu|hip)(?:Ext)?(?:Module)?Launch(?:Cooperative)?Kernel"  # a call that launches one kernel
OPERATOR_DOMAIN = "cpu_op"


@dataclass(frozen=True)
class KernelCounters:
    """`kernels`: one row per profiled kernel, in time order (kernel_index, name, top_operator, bottom_operator,
    fp64/fp32/fp16_flops, flops, then one column per metric as recorded); `operators`: per outermost operator
    (kernels, the FLOPs), most FLOPs first; `launch_calls`: the kernel-launch calls the ranges were paired with
    (`paired` when as many as the ranges)."""

    kernels: pl.DataFrame
    operators: pl.DataFrame
    metrics: tuple[str, ...]
    launch_calls: int
    paired: bool


def _precision_flops(metrics: tuple[str, ...], prefix: str) -> pl.Expr:
    """add + mul + 2 fma of one precision; null when the profiler recorded none of the three."""
    terms = [(SASS.format(f"{prefix}{op}"), 2 if op == "fma" else 1) for op in OPS]
    present = [pl.col(name) * weight for name, weight in terms if name in metrics]
    return pl.sum_horizontal(present) if present else pl.lit(None, pl.Float64)


def kernel_counters(counters: pl.DataFrame, calls: pl.DataFrame, ranges: pl.DataFrame) -> KernelCounters:
    """The profiled kernels with their FLOPs and launching operators (`counters`: `host_events.COUNTER_SCHEMA`)."""
    metrics = tuple(sorted(counters["metric"].unique().to_list()))
    wide = (
        counters.pivot("metric", index=["kernel_index", "name"], values="value", aggregate_function="first")
        if counters.height
        else pl.DataFrame(schema={"kernel_index": pl.Int64, "name": pl.Utf8})
    ).sort("kernel_index")
    by_precision = {f"{p}_flops": _precision_flops(metrics, prefix) for p, prefix in PRECISIONS.items()}
    counted = any(SASS.format(f"{prefix}{op}") in metrics for prefix in PRECISIONS.values() for op in OPS)
    wide = wide.with_columns(**by_precision).with_columns(
        flops=pl.sum_horizontal(FLOP_COLUMNS) if counted else pl.lit(None, pl.Float64)
    )
    launches = calls.filter(pl.col("name").str.contains(KERNEL_LAUNCH)).sort("start_ns")
    paired = launches.height == wide.height and wide.height > 0
    operators = _launching_operators(launches, ranges) if paired else _no_operators()
    kernels = wide.join(operators, on="kernel_index", how="left").select(
        "kernel_index", "name", "top_operator", "bottom_operator", *FLOP_COLUMNS, "flops", *metrics
    )
    per_operator = (
        kernels.group_by("top_operator")
        .agg(pl.len().alias("kernels"), *(pl.col(c).sum() for c in (*FLOP_COLUMNS, "flops")))
        .rename({"top_operator": "operator"})
        .sort("flops", "kernels", descending=True, nulls_last=True)
    )
    return KernelCounters(kernels, per_operator, metrics, launches.height, paired)


def _no_operators() -> pl.DataFrame:
    return pl.DataFrame(schema={"kernel_index": pl.Int64, "top_operator": pl.Utf8, "bottom_operator": pl.Utf8})


def _launching_operators(launches: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """The outermost and innermost CPU operator open on each launch call's thread when it began (the n-th launch
    being kernel n). Every launch is matched against its thread's operators: fine for the short traces the range
    profiler writes."""
    points = launches.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("kernel_index"), "thread", "start_ns")
    ops = ranges.filter(pl.col("domain") == OPERATOR_DOMAIN).select(
        "thread", pl.col("start_ns").alias("op_start_ns"), pl.col("end_ns").alias("op_end_ns"), "name"
    )
    open_ops = (
        points.join(ops, on="thread", how="inner")
        .filter((pl.col("op_start_ns") <= pl.col("start_ns")) & (pl.col("start_ns") < pl.col("op_end_ns")))
        .sort("kernel_index", "op_start_ns", pl.col("op_end_ns"), descending=[False, False, True])
        .group_by("kernel_index", maintain_order=True)
        .agg(pl.col("name").first().alias("top_operator"), pl.col("name").last().alias("bottom_operator"))
    )
    return points.select("kernel_index").join(open_ops, on="kernel_index", how="left")
