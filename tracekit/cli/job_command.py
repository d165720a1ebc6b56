"""`tracekit job`: a whole job's ranks lined up on their collectives: the straggler, its cause, its cost."""

from __future__ import annotations

from contextlib import nullcontext
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from tracekit import format as fmt
from tracekit.analysis.job.types import JobResult
from tracekit.cli.common import JsonOption, SafeConsole, busy, console, json_text
from tracekit.cli.report_command import OutputOption, write_output
from tracekit.errors import TracekitError
from tracekit.present import job as present

DEFAULT_HTML_PATH = Path("tracekit-job.html")


class JobFormat(StrEnum):
    text = "text"
    html = "html"
    md = "md"
    json = "json"


WIDTHS = {"step": 8, "span": 10, "last rank": 10, "late by": 10, "noise": 10, "cause": -16, "gain": 10}


def job_lines(result: JobResult) -> list[str]:
    lines = [present.headline(result), "  " + " ".join(k.rjust(w) if w > 0 else k.ljust(-w) for k, w in WIDTHS.items())]
    for row in present.step_rows(result):
        lines.append("  " + " ".join(row[k].rjust(w) if w > 0 else row[k].ljust(-w) for k, w in WIDTHS.items()))
    lines.insert(1, "  " + present.program_line(result))
    lines += [f"  {line}" for line in present.cause_lines(result)]
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
    output_format: Annotated[
        JobFormat,
        typer.Option(
            "--format", help="text, html (one self-contained file, with the heat map and timeline), md or json."
        ),
    ] = JobFormat.text,
    traced: Annotated[
        bool,
        typer.Option(
            "--traced", help="The job as traced, the profiler's own cost left in (default: replayed without it)."
        ),
    ] = False,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Which rank holds a multi-rank job back, why (compute, host, communication), and what the job would gain."""
    from tracekit.api import job as run_job
    from tracekit.api import rank_files

    if as_json:
        if output_format not in (JobFormat.text, JobFormat.json):
            raise TracekitError(f"--json and --format {output_format.value} disagree: give one of them")
        output_format = JobFormat.json
    files = rank_files(sources)
    with busy(f"reading {fmt.plural(len(files), 'rank')} on Dask"):
        result = run_job(files, scheduler=scheduler, workers=workers, parquet_dir=parquet, traced=traced)
    if output_format is JobFormat.json:
        write_output(json_text(present.job_dict(result)), output, None)
    elif output_format is JobFormat.html:
        from tracekit.reports.html import job_html

        write_output(job_html(result), output, DEFAULT_HTML_PATH)
    elif output_format is JobFormat.md:
        from tracekit.reports.markdown import job_markdown

        write_output(job_markdown(result), output, None)
    else:
        with open(output, "w", encoding="utf-8") if output else nullcontext() as handle:
            # a file as stdout: lines at their natural width, control characters from the traces escaped
            out = SafeConsole(file=handle, soft_wrap=True) if handle else console
            for line in job_lines(result):
                out.print(line, markup=False)
