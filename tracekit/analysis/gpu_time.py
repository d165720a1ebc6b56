"""Where the GPU time of a timeline went, per kernel and per kind of memory copy: what `nsys stats` prints as
cuda_gpu_kern_sum and cuda_gpu_mem_time_sum (count, total, mean, median, min, max, standard deviation, and the
share of the total), from the launches and copies an Nsight Systems export stored.

Pure over `Store.launches()` / `Store.memcpys()` frames. As in nsys, a kernel's share is of all kernel time and a
copy kind's share of all copy time; kernels are grouped by the name they are shown with (the base name, as
`cuda_gpu_kern_sum:base`, or the full signature), copies by kind (HtoD, DtoH, ...), with their bytes too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import polars as pl

SCHEMA = "tracekit.gpu_time/1"


@dataclass(frozen=True)
class TimeRow:
    name: str  # the kernel's shown name, or the copy kind
    count: int
    total_ns: float
    share: float  # of the table's total time (0..1)
    mean_ns: float
    median_ns: float
    min_ns: float
    max_ns: float
    std_ns: float  # sample standard deviation (n - 1), as nsys stats; 0 for one instance
    total_bytes: int | None = None  # memory copies only


@dataclass(frozen=True)
class GpuTime:
    kernels: list[TimeRow]  # most total time first
    memcpys: list[TimeRow]
    kernel_ns: float  # sum of kernel durations
    memcpy_ns: float  # sum of copy durations

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, **asdict(self)}


def _rows(frame: pl.DataFrame, key: str, with_bytes: bool) -> tuple[list[TimeRow], float]:
    frame = frame.filter(pl.col("duration_ns").is_not_null())
    if frame.height == 0:
        return [], 0.0
    total = float(frame["duration_ns"].sum())
    stats = [
        pl.len().alias("count"),
        pl.col("duration_ns").sum().alias("total_ns"),
        pl.col("duration_ns").mean().alias("mean_ns"),
        pl.col("duration_ns").median().alias("median_ns"),
        pl.col("duration_ns").min().alias("min_ns"),
        pl.col("duration_ns").max().alias("max_ns"),
        pl.col("duration_ns").std(ddof=1).fill_null(0.0).alias("std_ns"),
    ]
    if with_bytes:
        stats.append(pl.col("size_bytes").sum().alias("total_bytes"))
    grouped = frame.group_by(key).agg(stats).sort(["total_ns", key], descending=[True, False])
    rows = [
        TimeRow(
            name=str(row[key]),
            count=int(row["count"]),
            total_ns=float(row["total_ns"]),
            share=float(row["total_ns"]) / total if total else 0.0,
            mean_ns=float(row["mean_ns"]),
            median_ns=float(row["median_ns"]),
            min_ns=float(row["min_ns"]),
            max_ns=float(row["max_ns"]),
            std_ns=float(row["std_ns"]),
            total_bytes=int(row["total_bytes"]) if with_bytes and row["total_bytes"] is not None else None,
        )
        for row in grouped.iter_rows(named=True)
    ]
    return rows, total


def gpu_time(launches: pl.DataFrame, memcpys: pl.DataFrame, shown_name: Callable[[str | None], str]) -> GpuTime:
    """The per-kernel and per-copy-kind summary; `shown_name` maps a stored kernel name to the group's name."""
    names = launches["kernel_name"].unique().to_list()  # a timeline repeats few names many times: each named once
    kernels = launches.select(
        pl.col("kernel_name")
        .replace_strict({name: shown_name(name) for name in names}, return_dtype=pl.Utf8)
        .alias("name"),
        pl.col("duration_ns").cast(pl.Float64),
    )
    copies = memcpys.select(
        pl.col("kind").fill_null("Unknown"),
        (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64).alias("duration_ns"),
        pl.col("size_bytes"),
    )
    kernel_rows, kernel_ns = _rows(kernels, "name", with_bytes=False)
    copy_rows, copy_ns = _rows(copies, "kind", with_bytes=True)
    return GpuTime(kernel_rows, copy_rows, kernel_ns, copy_ns)
