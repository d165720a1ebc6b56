"""`tracekit job`: a whole job's ranks lined up on their collectives: the straggler, its cause, its cost."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from tracekit import format as fmt
from tracekit.analysis.job.types import JobResult
from tracekit.cli.common import JsonOption, busy, console, print_json
from tracekit.present import job as present

WIDTHS = {"step": 8, "span": 10, "last rank": 10, "late by": 10, "noise": 10, "cause": -16, "gain": 10}


def job_lines(result: JobResult) -> list[str]:
    lines = [present.headline(result), "  " + " ".join(k.rjust(w) if w > 0 else k.ljust(-w) for k, w in WIDTHS.items())]
    for row in present.step_rows(result):
        lines.append("  " + " ".join(row[k].rjust(w) if w > 0 else row[k].ljust(-w) for k, w in WIDTHS.items()))
    lines += [f"  {present.cause_line(s)}" for s in result.step_stragglers if s.rank is not None][:5]
    lines.append(f"  typical rank (for comparison): {result.typical_rank}")
    lines += [f"  {line}" for line in present.clock_lines(result)]
    lines += [f"  warning: {w}" for w in result.warnings]
    return lines


def job_command(
    sources: Annotated[list[str], typer.Argument(help="A folder of rank traces (PyTorch profiler), or the files.")],
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler", help="A Dask scheduler's address (default: DASK_SCHEDULER_ADDRESS, else a local cluster)."
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option("--workers", min=1, help="Worker processes of the local cluster (default: one per core)."),
    ] = None,
    parquet: Annotated[
        str | None,
        typer.Option(
            "--parquet", help="Keep each rank's tables here (Parquet by rank and step; a new or empty folder)."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Which rank holds a multi-rank job back, why (compute, host, communication), and what the job would gain."""
    from tracekit.api import job as run_job
    from tracekit.api import rank_files

    files = rank_files(sources)
    with busy(f"reading {fmt.plural(len(files), 'rank')} on Dask"):
        result = run_job(files, scheduler=scheduler, workers=workers, parquet_dir=parquet)
    if as_json:
        print_json(dataclasses.asdict(result))
        return
    for line in job_lines(result):
        console.print(line, markup=False)
