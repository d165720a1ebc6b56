"""`tracekit demo`: the samples in `sample_traces/` imported into the store, a report written, the dashboard up."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tracekit.api import analyze_stored, report_aggregates
from tracekit.cli.common import DbOption, console, open_store, progress
from tracekit.cli.serve_command import serve_command
from tracekit.errors import TracekitError
from tracekit.format import plural
from tracekit.ingest import ingest

# The samples worth importing: the warp traces, the Nsight Compute report's raw-page export (the report's launches
# and metrics, readable without the optional ncu-report wheel), the Nsight Systems export, and the region recordings
# (named regions inside kernels: the v2 warp-trace CSV and Proton's Chrome traces). The .ncu-rep itself
# and the other CSV pages hold the same launches again; the importer tests read them.
SAMPLE_PATTERNS = ("*.csv.gz", "*.raw.csv", "*.sqlite", "*.v2.gz", "*.chrome_trace.gz")


def find_samples(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise TracekitError(
            f"{directory}: no sample folder here; run the demo from a tracekit checkout or pass --samples DIR"
        )
    files = sorted({path for pattern in SAMPLE_PATTERNS for path in directory.rglob(pattern)})
    if not files:
        raise TracekitError(f"{directory}: no sample traces found ({', '.join(SAMPLE_PATTERNS)})")
    return files


def demo_command(
    samples: Annotated[Path, typer.Option("--samples", help="Folder of sample traces.")] = Path("sample_traces"),
    db: DbOption = None,
    report: Annotated[Path, typer.Option("--report", help="Where to write the HTML report.")] = Path(
        "tracekit-demo-report.html"
    ),
    serve: Annotated[bool, typer.Option("--serve/--no-serve", help="Start the dashboard afterwards.")] = True,
    port: Annotated[int, typer.Option("--port", help="Dashboard port.")] = 8050,
) -> None:
    """Import the sample traces, write a report of them, and open the dashboard on them."""
    from tracekit.reports.html import report_html  # plotly is loaded only when a report is written

    store = open_store(db)
    import_ids = []
    for path in progress(find_samples(samples), "importing samples"):
        result, _ = ingest(store, path)
        import_ids.append(result.import_id)
        state = "imported" if result.created else "already stored"
        console.print(
            f"{state}: {path} (import {result.import_id}, {plural(result.launch_count, 'launch')}, "
            f"{plural(result.warp_count, 'warp')})",
            markup=False,
        )
    launches = store.launches()
    launches = launches.filter(launches["import_id"].is_in(import_ids))
    results = analyze_stored(store, launches)
    aggregates = report_aggregates(store, results)
    report.write_text(
        report_html(results, aggregates, title="tracekit demo: the latency-hiding samples"), encoding="utf-8"
    )
    console.print(f"report of {plural(len(results), 'launch')}: {report.resolve()}", markup=False)
    if serve:
        serve_command(db=db, port=port)
