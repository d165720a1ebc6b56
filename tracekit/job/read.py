"""One rank's Kineto trace read event by event (ijson's C parser), keeping only the rows the job analysis needs:
GPU activities, launch and sync calls, ProfilerStep ranges, `record_param_comms` and DataLoader ranges. No event
dict outlives its batch, so memory grows with the kept rows (a few tens of bytes each as polars columns), not with
the JSON (hundreds of bytes an event, many times that as Python objects)."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import ijson
import polars as pl

from tracekit.analysis.job.frames import RankFrames
from tracekit.errors import InputError

BATCH_ROWS = 50_000  # Python rows held before they become polars columns
GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
CALL_CATEGORIES = ("cuda_runtime", "cuda_driver")
# the calls whose GPU work has a correlation id (a launch) and the calls that wait for the GPU (a sync)
LAUNCH_CALL = re.compile(r"^(cuda|cu)(LaunchKernel|LaunchCooperativeKernel|MemcpyAsync|MemsetAsync|Memcpy|Memset)")
SYNC_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaThreadSynchronize",
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cuEventSynchronize",
    }
)
STEP_RANGE = re.compile(r"^ProfilerStep#(\d+)$")
LOADER_RANGE = re.compile(r"DataLoader|dataloader")
RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)

GPU_SCHEMA = {
    "kind": pl.Utf8,
    "name": pl.Utf8,
    "stream_id": pl.Int64,
    "correlation_id": pl.Int64,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "collective": pl.Utf8,  # NCCL kernels: Kineto's "Collective name"; null for computation
    "process_group": pl.Utf8,
    "external_id": pl.Int64,
}
CALL_SCHEMA = {"name": pl.Utf8, "kind": pl.Utf8, "correlation_id": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64}
RANGE_SCHEMA = {"name": pl.Utf8, "kind": pl.Utf8, "start_ns": pl.Int64, "end_ns": pl.Int64}
COMM_SCHEMA = {
    "external_id": pl.Int64,
    "collective": pl.Utf8,
    "process_group": pl.Utf8,
    "sequence": pl.Int64,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
}


def _open(path: Path) -> IO[bytes] | gzip.GzipFile:
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    if gzipped:
        return gzip.open(path, "rb")  # noqa: SIM115 - closed by the caller
    return open(path, "rb")  # noqa: SIM115 - closed by the caller


def _ns(microseconds: Any) -> int:
    return round(float(microseconds) * 1000)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class _Table:
    """Rows of one kind, turned into a polars frame every BATCH_ROWS rows."""

    def __init__(self, schema: dict[str, Any]):
        self.schema, self.rows, self.parts = schema, [], []  # type: ignore[var-annotated]

    def add(self, row: tuple[Any, ...]) -> None:
        self.rows.append(row)
        if len(self.rows) >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.parts.append(pl.DataFrame(self.rows, schema=self.schema, orient="row"))
            self.rows = []

    def frame(self) -> pl.DataFrame:
        self.flush()
        return pl.concat(self.parts) if self.parts else pl.DataFrame(schema=self.schema)


def _events(stream: IO[bytes] | gzip.GzipFile, path: Path) -> Iterator[dict[str, Any]]:
    try:
        yield from ijson.items(stream, "traceEvents.item", use_float=True)
    except ijson.JSONError as exc:
        raise InputError(str(path), f"not a readable PyTorch profiler trace: {str(exc).splitlines()[0]}") from None
    except (OSError, EOFError) as exc:
        raise InputError(str(path), f"cannot be read: {exc}") from None


def _header_rank(path: Path) -> tuple[int | None, int | None]:
    """distributedInfo's rank and world size, read lazily: Kineto writes the header before the events."""
    with _open(path) as stream:
        try:
            for key, value in ijson.kvitems(stream, ""):
                if key == "distributedInfo" and isinstance(value, dict):
                    return _int(value.get("rank")), _int(value.get("world_size"))
                if key == "traceEvents":
                    break
        except (ijson.JSONError, OSError, EOFError):
            return None, None
    return None, None


def read_rank(path: str | Path, position: int = 0) -> RankFrames:
    """The rows of one rank's trace; its rank from the trace's distributedInfo, else a `rankN` in the file name,
    else `position` (its place among the job's files)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), "no such file" if not path.exists() else "not a regular file")
    gpu, calls, ranges, comms = _Table(GPU_SCHEMA), _Table(CALL_SCHEMA), _Table(RANGE_SCHEMA), _Table(COMM_SCHEMA)
    seen = 0
    with _open(path) as stream:
        for event in _events(stream, path):
            seen += 1
            if not isinstance(event, dict) or event.get("ph") != "X" or "ts" not in event:
                continue
            category, name = event.get("cat"), str(event.get("name", ""))
            start = _ns(event["ts"])
            end = start + _ns(event.get("dur", 0))
            args = event.get("args") or {}
            if category in GPU_CATEGORIES:
                gpu.add(
                    (
                        GPU_CATEGORIES[category],
                        name,
                        _int(args.get("stream")),
                        _int(args.get("correlation")),
                        start,
                        end,
                        args.get("Collective name"),
                        None if args.get("Process Group Name") is None else str(args["Process Group Name"]),
                        _int(args.get("External id")),
                    )
                )
            elif category in CALL_CATEGORIES:
                if name in SYNC_CALLS:
                    calls.add((name, "sync", _int(args.get("correlation")), start, end))
                elif LAUNCH_CALL.match(name):
                    calls.add((name, "launch", _int(args.get("correlation")), start, end))
            elif category == "user_annotation" and STEP_RANGE.match(name):
                ranges.add((name, "step", start, end))
            elif category == "cpu_op" and name == "record_param_comms":
                comms.add(
                    (
                        _int(args.get("External id")),
                        args.get("Collective name"),
                        None if args.get("Process Group Name") is None else str(args["Process Group Name"]),
                        _int(args.get("Seq")),
                        start,
                        end,
                    )
                )
            elif category in ("cpu_op", "user_annotation", "python_function") and LOADER_RANGE.search(name):
                ranges.add((name, "loader", start, end))
    if seen == 0:
        raise InputError(str(path), "no traceEvents: not a PyTorch profiler trace")
    rank, world_size = _header_rank(path)
    if rank is None:
        found = RANK_IN_NAME.search(path.name)
        rank = int(found.group(1)) if found else position
    return RankFrames(
        rank=rank,
        world_size=world_size,
        source=str(path),
        gpu=gpu.frame(),
        calls=calls.frame(),
        ranges=ranges.frame(),
        comms=comms.frame(),
    )
