"""A whole job on Dask: one task per rank reads its trace in bounded memory and writes its tables as Parquet
partitioned by rank and step; the reduce reads back the small tables (steps, collective windows) of every rank
and the kernels of the few ranks the analysis asks for, and lines the ranks up (`tracekit.analysis.job`).

The cluster is `dask.distributed`'s: a LocalCluster of worker processes by default, or the scheduler at
`--scheduler ADDRESS` (else `DASK_SCHEDULER_ADDRESS`); on a cluster the Parquet folder must be one every worker
and the client can reach. The same code serves two ranks and a thousand.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.allocator import MALLOC_VARIABLE, RETURN_FREED_PAGES
from tracekit.analysis.job.analysis import JobError, analyze_job
from tracekit.analysis.job.rank import RankError, needs_host_collectives, rank_tables
from tracekit.analysis.job.types import JobResult
from tracekit.analysis.job.unprofiled import with_replay
from tracekit.analysis.steps.profiler_cost import Calibration
from tracekit.errors import InputError, TracekitError

TABLES = ("steps", "collectives", "kernels", "idle")
TRACE_SUFFIXES = (".json", ".json.gz")
SCHEDULER_VARIABLE = "DASK_SCHEDULER_ADDRESS"
POLARS_THREADS_VARIABLE = "POLARS_MAX_THREADS"
# Dask's statistical profiler samples a worker's stacks all along its tasks and keeps what it saw: memory that grows
# with the ranks a worker has run (a few MB a rank), for a profile no one sees (the dashboard is off); a nanny hands
# its own process's Dask config to the worker it starts
WORKER_CONFIG = {"distributed.worker.profile.enabled": False}


def _natural(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def rank_files(sources: Sequence[str | Path]) -> list[Path]:
    """The trace files named, a folder standing for the PyTorch traces in it (rank 2 before rank 10)."""
    found: list[Path] = []
    for source in sources:
        path = Path(source)
        if path.is_dir():
            inside = sorted(
                (p for p in path.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES)), key=_natural
            )
            if not inside:
                raise InputError(str(path), "a folder with no trace files (*.json, *.json.gz)")
            found += inside
        else:
            found.append(path)
    return found


def map_rank(path: str, position: int, parquet_dir: str, calibration: Calibration | None = None) -> dict[str, Any]:
    """One rank (a Dask task): its trace read and its tables written under `parquet_dir`/TABLE/rank=R/step=S/;
    with a `calibration`, its windows without the profiler beside them (`analysis.job.unprofiled`: NCCL ranks; a
    rank whose collectives ran on host threads is left as traced). Returns the rank's one-row summary as a dict (all
    that travels back to the client)."""
    from tracekit.job.host_comms import host_collectives, read_host_collectives
    from tracekit.job.read import read_rank, read_rank_timeline, replayed_rank

    try:
        events = None
        if calibration is None:  # as traced: the job's own rows, read in bounded memory
            frames = read_rank(path, position)
            host = read_host_collectives(path) if needs_host_collectives(frames) else None
        else:  # one reading for the rank's rows, a gloo rank's host collectives and the replay
            frames, events, header = read_rank_timeline(path, position)
            host = host_collectives(header, events) if needs_host_collectives(frames) else None
        replay_with = calibration if host is None else None  # gloo's host collectives are left as traced
        setting = source = replayed = None
        if replay_with is not None and events is not None:
            replayed, setting, source = replayed_rank(events, frames, replay_with)
        del events  # before the tables: a 100 MB rank's host timeline is tens of MB
        _trim_heap()
        tables = rank_tables(frames, host, with_inflation=replayed is not None)
        if replayed is not None:
            tables = with_replay(tables, rank_tables(replayed, replayed=True, inflation=tables.inflation))
        tables = replace(
            tables,
            summary=tables.summary.with_columns(
                pl.lit(setting, pl.Utf8).alias("setting"), pl.lit(source, pl.Utf8).alias("calibration")
            ),
        )
    except RankError as exc:
        raise TracekitError(f"{path}: {exc}") from None
    except TracekitError as exc:  # re-raised as the base class: its one argument pickles back to the client
        raise TracekitError(str(exc)) from None
    root = Path(parquet_dir)
    rank = int(tables.summary["rank"][0])
    for name in TABLES:
        frame = getattr(tables, name)
        if frame.height:
            frame.write_parquet(root / name, partition_by=["rank", "step"])
    (root / "ranks").mkdir(parents=True, exist_ok=True)
    tables.summary.write_parquet(root / "ranks" / f"rank={rank}.parquet")
    summary: dict[str, Any] = tables.summary.row(0, named=True)
    return summary


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system: glibc's malloc keeps what the replay's Python objects freed
    (tens of MB for a 100 MB rank) until asked, which Dask's documentation advises for workers' memory."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc: its allocator returns memory on its own terms
        return
    libc.malloc_trim(0)


@contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """A client of the scheduler at `scheduler` (or DASK_SCHEDULER_ADDRESS), else of a LocalCluster of `workers`
    single-threaded processes (default: one per core)."""
    import dask
    from dask.distributed import Client, LocalCluster

    address = scheduler or os.environ.get(SCHEDULER_VARIABLE)
    if address:
        try:
            client = Client(address, timeout="20s")
        except OSError as exc:
            raise TracekitError(f"no Dask scheduler answers at {address}: {exc}") from None
        with client:
            yield client
        return
    count = workers or os.cpu_count() or 1
    # the ranks are the parallel work: each worker's polars gets its share of the cores, not all of them each
    threads = str(max(1, (os.cpu_count() or 1) // count))
    # polars' allocator returning freed pages at once (`tracekit.allocator`): a worker reading a rank would hold the
    # pages of the blocks it parsed (in one process, 243 MB peak on a 100 MB rank, 184 MB with them returned at once).
    # Set before polars loads there; TRACEKIT_WORKER_<NAME> overrides each; a cluster's workers need them in theirs.
    worker_env = {MALLOC_VARIABLE: RETURN_FREED_PAGES, POLARS_THREADS_VARIABLE: threads}
    with (
        _spawn_environ({key: os.environ.get(f"TRACEKIT_WORKER_{key}", value) for key, value in worker_env.items()}),
        dask.config.set(WORKER_CONFIG),
        # the workers' own logs stay quiet: a task's failure reaches the user once, as the client's one line
        LocalCluster(
            n_workers=count,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            # the scheduler's HTTP server (health, metrics) still starts without a dashboard: on a free port, not
            # on 8787, which another cluster on the machine may hold ("Port 8787 is already in use")
            scheduler_kwargs={"dashboard_address": ":0"},
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


@contextmanager
def _spawn_environ(values: dict[str, str]) -> Iterator[None]:
    """`values` in this process's environment while the local workers start, so that they start with them (a
    spawned worker loads polars, whose allocator reads its setting once, before Dask could set anything there)."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _read(parquet_dir: Path, table: str) -> pl.LazyFrame:
    return pl.scan_parquet(parquet_dir / table / "**" / "*.parquet", hive_partitioning=True)


def reduce_job(parquet_dir: str | Path) -> JobResult:
    """The job from the Parquet the ranks wrote."""
    root = Path(parquet_dir)
    summary = pl.read_parquet(root / "ranks" / "*.parquet")
    if not (root / "collectives").is_dir():
        raise TracekitError(
            "no rank's trace holds a collective (an NCCL kernel, or a gloo c10d call and its worker range): "
            "nothing to line the ranks up on"
        )
    steps = _read(root, "steps").collect()
    collectives = _read(root, "collectives").collect()

    def kernel_time(ranks: list[int]) -> pl.DataFrame:
        return (
            _read(root, "kernels")
            .filter(pl.col("rank").is_in(ranks) & ~pl.col("collective"))
            .group_by("rank", "step", pl.col("name").cast(pl.Utf8))
            .agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("gpu_ns"))
            .collect()
        )

    def rank_timeline(ranks: list[int], step: int) -> pl.DataFrame:
        chosen = pl.col("rank").is_in(ranks) & (pl.col("step") == step)
        work = (
            _read(root, "kernels")
            .filter(chosen)
            .select(
                "rank",
                pl.when("collective").then(pl.lit("collective")).otherwise(pl.lit("compute")).alias("lane"),
                pl.col("name").cast(pl.Utf8),
                "start_ns",
                "end_ns",
            )
        )
        if not (root / "idle").exists():  # no rank's GPU idled
            return work.collect()
        gaps = (
            _read(root, "idle")
            .filter(chosen)
            .select(
                "rank", pl.col("idle_class").alias("lane"), pl.lit(None, pl.Utf8).alias("name"), "start_ns", "end_ns"
            )
        )
        return pl.concat([work, gaps]).collect()

    try:
        return analyze_job(summary, steps, collectives, kernel_time, rank_timeline)
    except JobError as exc:
        raise TracekitError(str(exc)) from None


def _map(client: Any, files: list[Path], root: Path, calibration: Calibration | None) -> list[dict[str, Any]]:
    futures = client.map(
        map_rank,
        [str(p) for p in files],
        range(len(files)),
        parquet_dir=str(root),
        calibration=calibration,
        pure=False,
    )
    summaries: list[dict[str, Any]] = client.gather(futures)
    return summaries


def run_job(
    sources: Sequence[str | Path],
    scheduler: str | None = None,
    workers: int | None = None,
    parquet_dir: str | Path | None = None,
    client: Any = None,
    traced: bool = False,
    calibration: Calibration | None = None,
) -> JobResult:
    """Every rank's trace mapped on Dask into Parquet (kept in `parquet_dir` when given), then reduced; on
    `client` when given (a dask.distributed Client), else on one made for the job. The job as it runs without
    the profiler (its costs per `calibration`, default `steps.calibration_of`'s), or with `traced` as traced."""
    if not traced and calibration is None:
        from tracekit.steps import calibration_of

        calibration = calibration_of()
    files = rank_files(sources)
    if len(files) < 2:
        raise TracekitError("a job needs two rank traces or more (a folder of them, or the files)")
    for path in files:
        if not path.is_file():
            raise InputError(str(path), "no such file" if not path.exists() else "not a regular file")
    keep = parquet_dir is not None
    root = Path(parquet_dir) if parquet_dir is not None else Path(tempfile.mkdtemp(prefix="tracekit-job-"))
    if keep and any(root.iterdir() if root.exists() else ()):
        raise TracekitError(f"{root}: the Parquet folder must be new or empty")
    root.mkdir(parents=True, exist_ok=True)
    try:
        if client is not None:
            summaries = _map(client, files, root, None if traced else calibration)
        else:
            with dask_client(scheduler, workers) as made:
                summaries = _map(made, files, root, None if traced else calibration)
        seen: dict[int, str] = {}
        for summary in summaries:
            if summary["rank"] in seen:
                raise TracekitError(
                    f"{summary['source']}: rank {summary['rank']} again (also {seen[summary['rank']]}): "
                    "one trace per rank"
                )
            seen[summary["rank"]] = summary["source"]
        return reduce_job(root)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
