"""`tracekit report`: a batch report of many launches as one self-contained HTML file, Markdown, or JSON."""

from __future__ import annotations

import gc
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import polars as pl
import typer

from tracekit.analysis.job.types import JobResult
from tracekit.api import LaunchAnalysis, analyze_stored, report_aggregates, source_line_views, what_to_try_all
from tracekit.cli.analyze_command import PairOption, parse_pairs
from tracekit.cli.common import DbOption, busy, err_console, json_text, open_store, progress
from tracekit.errors import TracekitError
from tracekit.present.source_lines import REPORT_TOP_LINES, SourcePanel, source_panel, to_json
from tracekit.selection import named_import, resolve_launches

if TYPE_CHECKING:
    from tracekit.store import Store

DEFAULT_HTML_PATH = Path("tracekit-report.html")
DEFAULT_TOP = 20  # full sections in an HTML report: at ~0.1 MB each a report of any size stays a few MB


class ReportFormat(StrEnum):
    html = "html"
    md = "md"
    json = "json"


OutputOption = Annotated[
    Path | None,
    typer.Option(
        "-o",
        "--output",
        help="Where to write (default: html to a file in the current folder, the other formats to stdout).",
    ),
]


def write_output(text: str, output: Path | None, default: Path | None) -> None:
    """To `output`, else to `default`, else to stdout; a written file is named on stderr."""
    path = output or default
    if path is None or str(path) == "-":
        typer.echo(text, nl=False)
        return
    path.write_text(text, encoding="utf-8")
    err_console.print(f"wrote {path} ({len(text.encode()) / 1e6:.1f} MB)", markup=False)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a report is built: the analysis and the page create a few hundred
    objects per launch that all live until the report is written, and form almost no cycles (a few thousand
    collectable objects at the end of a 1,008-launch report), yet each full pass of the collector walked all of them
    again: 15% of the command. Reference counting still frees everything else as it goes."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def collect_launches(store, sources: list[str], kernel: str | None) -> pl.DataFrame:
    """The launches the sources name (files imported on the way), each launch once, in the order given."""
    frames = [resolve_launches(store, source, kernel) for source in progress(sources, "importing")]
    return pl.concat(frames, how="vertical_relaxed").unique("id", keep="first", maintain_order=True)


def report_command(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="Files, import ids (7, import:7), launch ids (launch:12), or a folder of one job's rank traces "
            "(PyTorch profiler, one per rank: a job section, as `tracekit job` finds it)."
        ),
    ],
    kernel: Annotated[str | None, typer.Option("--kernel", help="Only kernels whose name contains this.")] = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="html (one self-contained file), md or json.")] = (
        ReportFormat.html
    ),
    output: OutputOption = None,
    launch: Annotated[
        list[int] | None,
        typer.Option("--launch", help="Launch id to give a full section (repeatable); the others are in the summary."),
    ] = None,
    top: Annotated[
        int | None,
        typer.Option(
            "--top",
            min=0,
            help=f"Full sections for the N longest launches too (default {DEFAULT_TOP}, or 0 with --launch); "
            "every launch is in the summary table.",
        ),
    ] = None,
    pair: PairOption = None,
    db: DbOption = None,
) -> None:
    """A report of every launch: verdict and evidence, occupancy, warp timeline, Little's law, tail, stalls."""
    pairs = parse_pairs(pair)
    store = open_store(db)
    folders = [source for source in sources if Path(source).is_dir()]
    named = [source for source in sources if source not in folders]
    launches = collect_launches(store, named, kernel) if named else store.launches(launch_ids=[])
    unknown = sorted(set(launch or []) - set(launches["id"].to_list()))
    if unknown:
        raise TracekitError(f"--launch {unknown[0]}: not among the launches the sources name")
    jobs = collect_jobs(folders)
    with collector_paused():
        # an import without launches (a CUPTI range-profiler trace) still has its trace analyses in the report
        imports = {i for i in map(named_import, named) if i is not None}
        write_report(store, launches, fmt, output, launch or [], top, pairs, jobs, imports)


def collect_jobs(folders: list[str]) -> list[JobResult]:
    """Each folder's job (its rank traces on Dask: a local cluster, or DASK_SCHEDULER_ADDRESS's)."""
    if not folders:
        return []
    from tracekit.api import job, rank_files

    found = []
    for folder in folders:
        files = rank_files([folder])
        with busy(f"reading {len(files):,} ranks of {folder} on Dask"):
            found.append(job(files))
    return found


def write_report(
    store: Store,
    launches: pl.DataFrame,
    fmt: ReportFormat,
    output: Path | None,
    chosen: list[int],
    top: int | None,
    pairs: dict[int, int],
    jobs: Sequence[JobResult] = (),
    imports: Collection[int] = (),
) -> None:
    """The report of these stored launches in `fmt` to `output`; `chosen`: the launches given --launch; `jobs`: a
    section each, after the launches (in the JSON, a `tracekit.job/1` object each after the launches' objects);
    `imports`: imports named beside the launches' own, whose trace analyses are reported too."""
    # Imported here so `tracekit --help` does not load plotly.
    from tracekit.present.job import job_dict
    from tracekit.reports import html, markdown

    with busy(f"analyzing {launches.height:,} launch{'es' if launches.height != 1 else ''}"):
        results = analyze_stored(store, launches, pairs)
    if fmt is ReportFormat.json:
        lines = source_line_views(store, results)
        dicts = results.to_dicts()
        for result, launch in zip(results, dicts, strict=True):
            view = lines.get(result.launch_id or 0)
            if view is not None:  # the launches that have source samples: `tracekit lines --json`'s object
                launch["source_lines"] = to_json(
                    view.launch_id, view.kernel_name, view.result, view.files, view.duration_ns, REPORT_TOP_LINES
                )
        write_output(json_text([*dicts, *(job_dict(j) for j in jobs)]), output, None)
    elif fmt is ReportFormat.md:
        full, _ = full_sections(results, chosen, top)
        tries = what_to_try_all(store, (r for r in results if r.launch_id in full))
        from tracekit.reports import steps_section

        found = steps_section.gather_steps(store, launches["import_id"].unique().to_list())
        steps = [result for _, result in found]
        sources = source_panels(store, [r for r in results if r.launch_id in full])
        features = steps_section.gather_features(store, {*launches["import_id"].to_list(), *imports})
        write_output(
            markdown.report_markdown(results, tries=tries, steps=steps, sources=sources, features=features, jobs=jobs),
            output,
            None,
        )
    else:
        full, note = full_sections(results, chosen, top)
        sections = [result for result in results if result.launch_id in full]
        aggregates = report_aggregates(store, progress(sections, "drawing"))
        tries = what_to_try_all(store, sections)
        from tracekit.reports import steps_section

        steps = steps_section.gather(store, launches["import_id"].unique().to_list())
        sources = source_panels(store, sections)
        features = steps_section.gather_features(store, {*launches["import_id"].to_list(), *imports})
        page = html.report_html(
            results,
            aggregates,
            full=full,
            selection_note=note,
            tries=tries,
            steps=steps,
            sources=sources,
            features=features,
            jobs=jobs,
        )
        write_output(page, output, DEFAULT_HTML_PATH)


def source_panels(store: Store, results: Sequence[LaunchAnalysis]) -> dict[int, SourcePanel]:
    """The source panels of those launches that have source samples, by launch id (the launch page's panel)."""
    views = source_line_views(store, results)
    return {
        launch_id: source_panel(view.result, view.files, view.duration_ns, REPORT_TOP_LINES)
        for launch_id, view in views.items()
    }


def full_sections(results: Sequence[LaunchAnalysis], chosen: list[int], top: int | None) -> tuple[set[int], str]:
    """The launches that get a full section: those chosen with --launch and the `top` longest (by duration;
    launches without one last), and a note that says which, when not all do."""
    count = DEFAULT_TOP if top is None and not chosen else (top or 0)
    by_time = sorted(
        (r for r in results if r.launch_id is not None),
        key=lambda r: (r.duration_ns is None, -(r.duration_ns or 0.0), r.launch_id),
    )
    longest = {r.launch_id for r in by_time[:count] if r.launch_id is not None}  # by_time has ids only
    full = {int(i) for i in chosen} | longest
    if len(full) >= len(results):
        return full, ""
    parts = []
    if count:
        parts.append(f"the {min(count, len(by_time)):,} longest")
    if chosen:
        parts.append(f"the {len(set(chosen)):,} chosen with --launch")
    return full, (
        f"Full sections (tables and figures) for {len(full):,} of {len(results):,} launches: "
        f"{' and '.join(parts) or 'none'}. `tracekit report --launch ID` or `--top N` adds others."
    )
