"""Each collective's metadata beside it: message size in bytes, element type, process group and its ranks, group
size, and the bandwidth it achieved, as HTA's communication analysis shows them.

Kineto writes the metadata on the NCCL kernel (`Collective name`, `In msg nelems`, `dtype`, `Process Group
Name/Description/Ranks`, `Group size`; `tracekit.host_events.GPU_OP_SCHEMA`). A message's bytes are its elements
times the element type's size. The algorithm bandwidth is the bytes over the kernel's time; the bus bandwidth
scales it by what each rank sends over the links in NCCL's ring algorithms (nccl-tests' PERFORMANCE.md: 2(n-1)/n
for all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 for broadcast and reduce), comparable with
the link's peak whatever the group size.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

# PyTorch's scalar type names (c10's ScalarType, as Kineto writes them) and their sizes in bytes
DTYPE_BYTES = {
    "Float": 4,
    "Double": 8,
    "Half": 2,
    "BFloat16": 2,
    "Long": 8,
    "Int": 4,
    "Short": 2,
    "Char": 1,
    "Byte": 1,
    "Bool": 1,
    "ComplexHalf": 4,
    "ComplexFloat": 8,
    "ComplexDouble": 16,
    "Float8_e4m3fn": 1,
    "Float8_e5m2": 1,
    "Float8_e4m3fnuz": 1,
    "Float8_e5m2fnuz": 1,
    "UInt16": 2,
    "UInt32": 4,
    "UInt64": 8,
}


def bus_factor(collective: str, group_size: int | None) -> float | None:
    """What each rank moves over the links per byte of the message, in NCCL's ring algorithms (None: unknown)."""
    if not group_size or group_size < 1:
        return None
    n = group_size
    name = collective.lower().replace("_", "")
    if name in ("allreduce", "allreducecoalesced"):
        return 2 * (n - 1) / n
    if name in ("allgather", "allgatherintobase", "allgathercoalesced", "reducescatter", "reducescattertensor"):
        return (n - 1) / n
    if name in ("alltoall", "alltoallbase", "alltoallv"):
        return (n - 1) / n
    if name in ("broadcast", "reduce", "send", "recv"):
        return 1.0
    return None


@dataclass(frozen=True)
class CollectiveGroup:
    """The collectives of one kind, element type and process group: how many, their bytes and time, and the median
    of the bandwidth each achieved."""

    collective: str
    dtype: str | None
    process_group: str
    ranks: str | None
    group_size: int | None
    count: int
    total_bytes: int | None
    total_ns: int
    median_algbw_gbps: float | None
    median_busbw_gbps: float | None


@dataclass(frozen=True)
class Collectives:
    """`table`: one row per collective kernel (start_ns, duration_ns, name, stream_id, operator, collective, dtype,
    in_elements, out_elements, message_bytes, process_group, ranks, group_size, algbw_gbps, busbw_gbps);
    `groups`: the summary, most time first; `without_metadata`: NCCL kernels the profiler wrote no metadata on."""

    table: pl.DataFrame
    groups: tuple[CollectiveGroup, ...]
    without_metadata: int


def collectives(gpu: pl.DataFrame) -> Collectives:
    """The collectives of a trace with their metadata (none for a trace whose profiler wrote none)."""
    found = gpu.filter(pl.col("collective").is_not_null())
    group = (
        pl.when(pl.col("process_group_description").is_not_null() & pl.col("process_group_name").is_not_null())
        .then(pl.format("{} ({})", "process_group_description", "process_group_name"))
        .otherwise(pl.coalesce("process_group_description", "process_group_name", pl.lit("?")))
    )
    elements = pl.max_horizontal("collective_in_elements", "collective_out_elements")
    size = pl.col("collective_dtype").replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Int64)
    table = found.select(
        "start_ns",
        (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns"),
        "name",
        "stream_id",
        "operator",
        "collective",
        pl.col("collective_dtype").alias("dtype"),
        pl.col("collective_in_elements").alias("in_elements"),
        pl.col("collective_out_elements").alias("out_elements"),
        (elements * size).alias("message_bytes"),
        group.alias("process_group"),
        pl.col("process_group_ranks").alias("ranks"),
        "group_size",
    ).with_columns(algbw_gbps=pl.col("message_bytes") / pl.max_horizontal(pl.col("duration_ns"), pl.lit(1)))
    factors = [bus_factor(c, n) for c, n in table.select("collective", "group_size").iter_rows()]
    table = table.with_columns(
        busbw_gbps=pl.col("algbw_gbps") * pl.Series(factors, dtype=pl.Float64),
    )
    summary = (
        table.group_by("collective", "dtype", "process_group", "ranks", "group_size")
        .agg(
            count=pl.len(),
            total_bytes=pl.col("message_bytes").sum(),
            known=pl.col("message_bytes").is_not_null().all(),
            total_ns=pl.col("duration_ns").sum(),
            algbw=pl.col("algbw_gbps").median(),
            busbw=pl.col("busbw_gbps").median(),
        )
        .sort("total_ns", "collective", descending=[True, False])
    )
    groups = tuple(
        CollectiveGroup(
            collective=row["collective"],
            dtype=row["dtype"],
            process_group=row["process_group"],
            ranks=row["ranks"],
            group_size=row["group_size"],
            count=int(row["count"]),
            total_bytes=int(row["total_bytes"]) if row["known"] else None,
            total_ns=int(row["total_ns"]),
            median_algbw_gbps=row["algbw"],
            median_busbw_gbps=row["busbw"],
        )
        for row in summary.iter_rows(named=True)
    )
    bare = gpu.filter(pl.col("collective").is_null() & pl.col("name").str.starts_with("nccl")).height
    return Collectives(table, groups, bare)
