"""One rank's Kineto trace, read by the Kineto importer's one event reader (`importers.kineto.read_events`: the
layout libkineto writes streamed in blocks that polars parses, so memory grows with the rows kept, not with the
JSON), keeping only the rows the job analysis needs: GPU activities, launch and sync calls, ProfilerStep ranges,
`record_param_comms` and DataLoader ranges. A rank replayed without the profiler is read once for those rows and
its whole host timeline (`read_rank_timeline`), which the replay needs."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.analysis.job.frames import RankFrames
from tracekit.analysis.steps.calls import LAUNCH, LAUNCH_CALLS, SYNC, SYNC_CALLS, base_name
from tracekit.analysis.steps.profiler_cost import Calibration, setting_of
from tracekit.analysis.steps.unprofiled import replay_without_profiler
from tracekit.errors import InputError
from tracekit.host_events import ANNOTATION_DOMAIN, HostEvents
from tracekit.importers.kineto import read_events, read_host_trace_with
from tracekit.parsed import compacted

GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
CALL_CATEGORIES = ("cuda_runtime", "cuda_driver")
STEP_RANGE = r"^ProfilerStep#(\d+)$"
LOADER_RANGE = r"DataLoader|dataloader"
LOADER_CATEGORIES = ("cpu_op", "user_annotation", "python_function")
RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
# the GPU activities' columns the replay reads or gives the job (`_frames_of`)
REPLAY_READ = (
    "kind",
    "name",
    "stream_id",
    "correlation_id",
    "start_ns",
    "end_ns",
    "pageable",
    "collective",
    "process_group",
)


def _arg(name: str, as_int: bool = False) -> pl.Expr:
    value = pl.col("args").struct.field(name)
    return value.cast(pl.Int64, strict=False) if as_int else value


def _job_frames(events: pl.DataFrame) -> tuple[pl.DataFrame, ...]:
    """Of a run of events (one column per field), the rows the job reads: gpu, calls, ranges and comms as
    `RankFrames` holds them."""
    events = events.filter((pl.col("ph") == "X") & pl.col("ts").is_not_null() & pl.col("cat").is_not_null())
    events = events.with_columns(start_ns=(pl.col("ts") * 1000).round().cast(pl.Int64)).with_columns(
        end_ns=pl.col("start_ns") + (pl.col("dur").fill_null(0.0) * 1000).round().cast(pl.Int64),
        name=pl.col("name").fill_null(""),
    )
    gpu = events.filter(pl.col("cat").is_in(list(GPU_CATEGORIES))).select(
        pl.col("cat").replace_strict(GPU_CATEGORIES, return_dtype=pl.Utf8).alias("kind"),
        pl.col("name").cast(pl.Categorical),  # a few hundred kernels launched a million times: each name kept once
        _arg("stream", as_int=True).alias("stream_id"),
        _arg("correlation", as_int=True).alias("correlation_id"),
        "start_ns",
        "end_ns",
        _arg("Collective name").alias("collective"),  # NCCL kernels: Kineto's "Collective name"; null otherwise
        _arg("Process Group Name").alias("process_group"),
        _arg("External id", as_int=True).alias("external_id"),
        # the launch's shape: with the name, what makes two launches the same kernel (`inflation.measure_inflation`)
        pl.col("args").struct.field("grid").cast(pl.List(pl.Utf8)).list.join("x").alias("grid"),
        pl.col("name").str.contains("Pageable").alias("pageable"),  # a copy from pageable memory: a sync
    )
    calls = _calls(
        events.filter(pl.col("cat").is_in(CALL_CATEGORIES)).with_columns(
            _arg("correlation", as_int=True).alias("correlation_id")
        )
    )
    ranges = _ranges(events, "cat")
    comms = events.filter((pl.col("cat") == "cpu_op") & (pl.col("name") == "record_param_comms")).select(
        _arg("External id", as_int=True).alias("external_id"),
        _arg("Collective name").alias("collective"),
        _arg("Process Group Name").alias("process_group"),
        _arg("Seq", as_int=True).alias("sequence"),
        "start_ns",
        "end_ns",
    )
    return gpu, calls, ranges, comms


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_rank(path: str | Path, position: int = 0) -> RankFrames:
    """The rows of one rank's trace; its rank from the trace's distributedInfo, else a `rankN` in the file name,
    else `position` (its place among the job's files)."""
    path = _checked(path)
    header, frames = read_events(path, _job_frames)
    return _rank_frames(path, position, header, frames)


def read_rank_timeline(path: str | Path, position: int = 0) -> tuple[RankFrames, HostEvents, dict[str, Any]]:
    """`read_rank`, the rank's host timeline (without its GPU activities, which `read_rank`'s rows hold, nor the
    launch context the replay does not read) and the trace's header, from one reading of the file: what a rank
    replayed without the profiler needs."""
    path = _checked(path)
    header, events, frames = read_host_trace_with(path, _job_frames, launch_context=False, with_gpu=False)
    return _rank_frames(path, position, header, frames), events, header


def _checked(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), "no such file" if not path.exists() else "not a regular file")
    return path


def _rank_frames(path: Path, position: int, header: dict[str, Any], frames: tuple[pl.DataFrame, ...]) -> RankFrames:
    gpu, calls, ranges, comms = frames
    found = header.get("distributedInfo")
    info = found if isinstance(found, dict) else {}
    rank = _int(info.get("rank"))
    if rank is None:
        named = RANK_IN_NAME.search(path.name)
        rank = int(named.group(1)) if named else position
    return RankFrames(
        rank=rank,
        world_size=_int(info.get("world_size")),
        source=str(path),
        gpu=gpu,
        calls=calls,
        ranges=ranges,
        comms=comms,
    )


def _calls(frame: pl.DataFrame) -> pl.DataFrame:
    """Launch and sync calls as the job reads them (`steps.calls`: a blocking copy waits for the GPU, a sync)."""
    base = base_name(pl.col("name"))
    return frame.select(
        pl.col("name").cast(pl.Categorical),
        pl.when(base.is_in(list(SYNC_CALLS)))
        .then(pl.lit(SYNC))
        .when(base.is_in(list(LAUNCH_CALLS)))
        .then(pl.lit(LAUNCH))
        .alias("kind"),
        "correlation_id",
        "start_ns",
        "end_ns",
    ).drop_nulls("kind")


def _step_range(category: str) -> pl.Expr:
    return (pl.col(category) == ANNOTATION_DOMAIN) & pl.col("name").str.contains(STEP_RANGE)


def _loader_range(category: str) -> pl.Expr:
    return pl.col(category).is_in(LOADER_CATEGORIES) & pl.col("name").str.contains(LOADER_RANGE)


def _ranges(frame: pl.DataFrame, category: str) -> pl.DataFrame:
    """The ProfilerStep and DataLoader ranges (name, kind: step | loader, start_ns, end_ns) of events whose Kineto
    category is in the column `category` (a trace's `cat`; a host timeline's `domain`, of the same values)."""
    step = _step_range(category)
    return frame.filter(step | _loader_range(category)).select(
        "name", pl.when(step).then(pl.lit("step")).otherwise(pl.lit("loader")).alias("kind"), "start_ns", "end_ns"
    )


def _frames_of(events: HostEvents, recorded: RankFrames) -> RankFrames:
    """A host timeline (a replay of the rank's trace) as the job reads a rank: `recorded`'s rank and source."""
    gpu = events.gpu.select(
        "kind",
        pl.col("name").cast(pl.Categorical),
        "stream_id",
        "correlation_id",
        "start_ns",
        "end_ns",
        "collective",
        pl.col("process_group_name").alias("process_group"),
        pl.lit(None, pl.Int64).alias("external_id"),
        pl.lit(None, pl.Utf8).alias("grid"),
    )
    return RankFrames(
        rank=recorded.rank,
        world_size=recorded.world_size,
        source=recorded.source,
        gpu=gpu,
        calls=_calls(events.calls),
        ranges=compacted(_ranges(events.ranges, "domain")),  # a few hundred rows of the host timeline's text
        comms=recorded.comms.clear(),
    )


def replayed_rank(events: HostEvents, recorded: RankFrames, calibration: Calibration) -> tuple[RankFrames, str, str]:
    """The rank's host timeline (`read_rank_timeline`) replayed without the profiler (the step analysis's replay, at
    the setting the trace was recorded with), read as the job reads a rank; with that setting and the calibration's
    name."""
    setting = setting_of(events)
    # the host's cost only: a collective's kernel waits on the other ranks, which one rank's replay cannot see, so
    # shortening the GPU's queue behind it moves the ranks' meeting points the job reads (GPT-2's slow backward read
    # as rank 0's, its job steps 20-30% short)
    cost = replace(calibration.for_setting(setting), gpu_activity_ns=0.0)
    # the GPU activities as the job read them (the host timeline was read without them)
    gpu = recorded.gpu.select(REPLAY_READ).rename({"process_group": "process_group_name"})
    lean = replace(events, gpu=gpu)
    kept = _step_range("domain") | _loader_range("domain")  # the only host ranges the job reads
    return _frames_of(replay_without_profiler(lean, cost, kept_ranges=kept), recorded), setting, cost.source
