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
    gpu: pl.DataFrame  # kind, name, stream_id, correlation_id, start_ns, end_ns, collective, process_group, external_id
    calls: pl.DataFrame  # name, kind (launch | sync), correlation_id, start_ns, end_ns
    ranges: pl.DataFrame  # name, kind (step | loader), start_ns, end_ns
    comms: pl.DataFrame  # record_param_comms: external_id, collective, process_group, sequence, start_ns, end_ns
