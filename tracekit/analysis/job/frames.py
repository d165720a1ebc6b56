"""What the job analysis reads of one rank's trace: polars frames of its GPU activities, launch and sync calls,
step and DataLoader ranges, and `record_param_comms` calls (tracekit.job.read fills them). Times in ns on the
rank's own clock; the GPU activities' and calls' names may be Categorical (each name held once)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class RankFrames:
    rank: int
    world_size: int | None  # as the trace's distributedInfo says; None when it says nothing
    source: str
    # kind, name, stream_id, correlation_id, start_ns, end_ns, collective, process_group, external_id, grid (the
    # launch's, "48x2x5"; null where the trace gives none)
    gpu: pl.DataFrame
    calls: pl.DataFrame  # name, kind (launch | sync, as `steps.calls` classes them), correlation_id, start_ns, end_ns
    ranges: pl.DataFrame  # name, kind (step | loader), start_ns, end_ns
    comms: pl.DataFrame  # record_param_comms: external_id, collective, process_group, sequence, start_ns, end_ns


@dataclass(frozen=True)
class HostCollectives:
    """A rank's host-side collectives (gloo, or any backend that runs them on CPU threads), for traces whose GPU
    holds no NCCL kernel (tracekit.job.host_comms fills it). Times in ns on the rank's own clock."""

    calls: pl.DataFrame  # the c10d calls that enqueue them (c10d::allreduce_ ...): name, thread, start_ns, end_ns
    work: (
        pl.DataFrame
    )  # the backend's worker ranges that run them (gloo:all_reduce ...): name, thread, start_ns, end_ns
    launches: pl.DataFrame  # the CUDA API calls on every host thread: thread, correlation_id, start_ns
    process_group: str  # the trace's one process group (distributedInfo), else "" (not known from the events)
    process_groups: int | None  # how many process groups distributedInfo lists (None: it says nothing)
