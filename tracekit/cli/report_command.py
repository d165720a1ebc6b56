"""`tracekit report`: a batch report of many launches as one self-contained HTML file, Markdown, or JSON."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import polars as pl
import typer

from tracekit.api import analyze_stored, report_views
from tracekit.cli.analyze_command import PairOption, parse_pairs
from tracekit.cli.common import DbOption, err_console, json_text, open_store, progress
from tracekit.selection import resolve_launches

DEFAULT_HTML_PATH = Path("tracekit-report.html")


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


def collect_launches(store, sources: list[str], kernel: str | None) -> pl.DataFrame:
    """The launches the sources name (files imported on the way), each launch once, in the order given."""
    frames = [resolve_launches(store, source, kernel) for source in progress(sources, "importing")]
    return pl.concat(frames, how="vertical_relaxed").unique("id", keep="first", maintain_order=True)


def report_command(
    sources: Annotated[list[str], typer.Argument(help="Files, import ids (7, import:7) or launch ids (launch:12).")],
    kernel: Annotated[str | None, typer.Option("--kernel", help="Only kernels whose name contains this.")] = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="html (one self-contained file), md or json.")] = (
        ReportFormat.html
    ),
    output: OutputOption = None,
    pair: PairOption = None,
    db: DbOption = None,
) -> None:
    """A report of every launch: verdict and evidence, occupancy, warp timeline, Little's law, tail, stalls."""
    # Imported here so `tracekit --help` does not load plotly.
    from tracekit.reports import html, markdown

    pairs = parse_pairs(pair)
    store = open_store(db)
    results = analyze_stored(store, collect_launches(store, sources, kernel), pairs)
    if fmt is ReportFormat.json:
        write_output(json_text(results.to_dicts()), output, None)
    elif fmt is ReportFormat.md:
        write_output(markdown.report_markdown(results), output, None)
    else:
        views = report_views(store, progress(results, "drawing"))
        write_output(html.report_html(results, views), output, DEFAULT_HTML_PATH)
