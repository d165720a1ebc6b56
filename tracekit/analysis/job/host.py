"""Host-side collectives (gloo) as the job analysis's collectives: each c10d call paired with the worker range that
ran it, with the rank's arrival and the collective's end.

- Pairing: a process group's worker threads take its collectives in the order the calls enqueued them, so within
  a kind the n-th worker range belongs to the n-th call (ranges begun before the trace's first call of their kind
  left out). A worker never starts a collective before its call began; a pair that would is dropped.
- Arrival: the moment the rank could take part, the analogue of an NCCL kernel's start: a worker had taken it up
  and the copies its call launched (a CUDA tensor to the host) had finished.
- End: the worker range's end (the collective done on this rank, every rank's part in).
- The copies the calls and workers launch (to the host and back) are communication, not the rank's computation.
"""

from __future__ import annotations

import polars as pl

from tracekit.analysis.job.frames import HostCollectives
from tracekit.analysis.steps.categories import HOST_COLLECTIVE_RANGE

HOST_CALL = r"^c10d::"
WORK_RANGE = HOST_COLLECTIVE_RANGE  # the backend's worker range that runs each collective
# c10d::_allgather_base_, gloo:all_gather, c10d::reduce_scatter_tensor_coalesced_ ... -> allgather, reducescatter
KIND_NOISE = r"^(c10d::|gloo:)|_base|_coalesced|_into_tensor|_tensor|_"


def _kind(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col("name").str.to_lowercase().str.replace_all(KIND_NOISE, "").alias("collective"))


def host_collectives(host: HostCollectives, gpu: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """The rank's host collectives (process_group, collective, at_ns (the call's start, for its step), start_ns
    (the arrival), end_ns) and the correlation ids of the GPU copies they launched. `gpu`: the rank's GPU
    activities (correlation_id, end_ns)."""
    index = pl.int_range(pl.len()).over("collective")
    calls = _kind(host.calls).sort("start_ns").with_columns(index.alias("order"))
    first = calls.group_by("collective").agg(pl.col("start_ns").min().alias("_first"))
    work = (
        _kind(host.work)
        .join(first, on="collective")
        .filter(pl.col("start_ns") >= pl.col("_first"))
        .sort("start_ns")
        .with_columns(index.alias("order"))
    )
    paired = (
        calls.join(work.drop("_first"), on=["collective", "order"], suffix="_work")
        .filter(pl.col("start_ns_work") >= pl.col("start_ns"))
        .sort("start_ns")
        .with_row_index("call")
    )
    spans = pl.concat(
        [
            paired.select("call", "thread", "start_ns", "end_ns", pl.lit(True).alias("by_call")),
            paired.select(
                "call",
                pl.col("thread_work").alias("thread"),
                pl.col("start_ns_work").alias("start_ns"),
                pl.col("end_ns_work").alias("end_ns"),
                pl.lit(False).alias("by_call"),
            ),
        ]
    ).sort("start_ns")
    launched = (
        host.launches.sort("start_ns")
        .join_asof(
            spans.rename({"end_ns": "_span_end"}),
            on="start_ns",
            by="thread",
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col("start_ns") <= pl.col("_span_end"))
    )
    copies = launched.join(gpu.select("correlation_id", pl.col("end_ns").alias("copy_end_ns")), on="correlation_id")
    ready = copies.filter("by_call").group_by("call").agg(pl.col("copy_end_ns").max())
    collectives = paired.join(ready, on="call", how="left").select(
        pl.lit(host.process_group).alias("process_group"),
        "collective",
        pl.col("start_ns").alias("at_ns"),
        pl.max_horizontal("start_ns_work", "copy_end_ns").alias("start_ns"),
        pl.col("end_ns_work").alias("end_ns"),
    )
    return collectives, copies["correlation_id"].unique()
