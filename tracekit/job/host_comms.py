"""A rank's host-side collectives (gloo) for the job analysis, read where its GPU ran no NCCL kernel.

With gloo a collective never reaches the GPU as a kernel: the calling thread enqueues it (a `c10d::allreduce_`
CPU op, which also launches the copy of a CUDA tensor to the host) and one of the process group's worker threads
runs it (a `gloo:all_reduce` range). `tracekit.job.read` keeps neither, so, only for such traces, this reads them
from the rank's host timeline (the Kineto importer's timeline reader: polars in Rust, read in blocks; the header
from the same reading); kept apart from the reader so the reader can change on its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from tracekit.analysis.job.frames import HostCollectives
from tracekit.analysis.job.host import HOST_CALL, WORK_RANGE
from tracekit.host_events import HostEvents
from tracekit.importers.kineto import read_host_trace


def _process_groups(header: dict[str, Any]) -> list[dict[str, Any]] | None:
    """distributedInfo's pg_config, from the trace's header."""
    info = header.get("distributedInfo")
    groups = info.get("pg_config") if isinstance(info, dict) else None
    return [g for g in groups if isinstance(g, dict)] if isinstance(groups, list) else None


def read_host_collectives(path: str | Path) -> HostCollectives:
    """The trace's c10d calls, its backend's worker ranges and its CUDA API calls with their threads."""
    return host_collectives(*read_host_trace(Path(path)))


def host_collectives(header: dict[str, Any], events: HostEvents) -> HostCollectives:
    """`read_host_collectives` of a trace already read (its header and host timeline)."""
    ranges = events.ranges.select("name", "domain", "thread", "start_ns", "end_ns")
    calls = ranges.filter((pl.col("domain") == "cpu_op") & pl.col("name").str.contains(HOST_CALL)).drop("domain")
    work = ranges.filter((pl.col("domain") == "user_annotation") & pl.col("name").str.contains(WORK_RANGE)).drop(
        "domain"
    )
    launches = events.calls.select("thread", "correlation_id", "start_ns").drop_nulls("correlation_id")
    groups = _process_groups(header)
    named = str(groups[0].get("pg_name", "")) if groups is not None and len(groups) == 1 else ""
    return HostCollectives(
        calls=calls,
        work=work,
        launches=launches,
        process_group=named,
        process_groups=None if groups is None else len(groups),
    )
