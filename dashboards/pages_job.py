"""Job page `/job`: drop the rank traces of one training job (one PyTorch profiler trace per rank, several files at
once) and see what `tracekit job` finds: the straggler and its cause first, the ranks-by-step heat map and the
straggler's step beside a typical rank's, then each step's straggler and the ranks' clocks.

The files are written to a private scratch folder for the job's run and removed after it; nothing enters the store
(so the page works on a read-only dashboard too). The ranks are read on Dask as the CLI reads them (a local
cluster, or the scheduler at DASK_SCHEDULER_ADDRESS). Everything is worded by `tracekit.present.job`, the charts
drawn by `tracekit.figures`; names from the traces are shown as text.
"""

from __future__ import annotations

import logging
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update

from tracekit import api
from tracekit.errors import TracekitError
from tracekit.present import job as present

from .common import TABLE_STYLE, DataTable
from .pages_upload import UploadStatus, decode_upload, written_uploads
from .panels import GRAPH_CONFIG

log = logging.getLogger(__name__)

FIGURE_IDS = {"ranks_by_step": "job-heatmap", "straggler_timeline": "job-timeline"}
TABLE_IDS = {"Each step's straggler": "job-steps", "Clocks": "job-clocks"}


def _table(table_id: str, columns: list[str], rows: list[list[str]]) -> Any:
    return DataTable(
        id=table_id,
        columns=[{"name": c, "id": c} for c in columns],
        data=[dict(zip(columns, row, strict=True)) for row in rows],
        **TABLE_STYLE,
    )


def job_view(content: present.JobContent) -> html.Div:
    """The job as `present.job` words it: headline and cause lines, the two charts, the tables, the warnings."""
    parts: list[Any] = [
        html.H2(content.title, id="job-title"),
        html.P(html.Strong(content.headline), id="job-headline"),
        html.Ul([html.Li(line) for line in content.lines], id="job-lines"),
    ]
    for figure in content.figures:
        parts += [
            html.H3(figure.title),
            dcc.Graph(id=FIGURE_IDS[figure.key], figure=figure.spec, config=GRAPH_CONFIG),
            html.P(figure.note or "", className="note"),
        ]
    for table in content.tables:
        parts += [html.H3(table.title), _table(TABLE_IDS[table.title], table.columns, table.rows)]
        if table.note:
            parts.append(html.P(table.note, className="note"))
    parts += [html.P(f"warning: {w}", className="warning") for w in content.warnings]
    return html.Div(parts, id="job-view")


def run_uploaded_job(files: list[tuple[str, str]], max_upload_bytes: int) -> html.Div:
    """The job of one drop of rank traces, (name, data URL) each, or the one line that says why there is none."""
    decoded = [decode_upload(name, contents, max_upload_bytes) for name, contents in files]
    failed = next((item for item in decoded if isinstance(item, UploadStatus)), None)
    if failed is not None:
        return html.Div(html.P(failed.message, className="error"), id="job-view")
    names = [name for name, _ in files]
    contents = [item for item in decoded if isinstance(item, bytes)]
    with written_uploads(names, contents) as paths:
        shown = {str(path): name for path, name in zip(paths, names, strict=True)}
        try:
            result = api.job(paths)
        except TracekitError as exc:
            message = str(exc)
            for path, name in shown.items():
                message = message.replace(path, name)
            return html.Div(html.P(message, className="error"), id="job-view")
        except Exception as exc:  # noqa: BLE001 - a bug must not take the page down; it is logged in full
            log.exception("the job of %r failed", names)
            return html.Div(
                html.P(
                    f"tracekit failed to analyse this job ({type(exc).__name__}); the server log has the details",
                    className="error",
                ),
                id="job-view",
            )
    return job_view(present.job_content(result, shown_names=shown))


def layout(max_upload_bytes: int) -> html.Div:
    return html.Div(
        [
            html.H2("Job"),
            html.P(
                "Drop the rank traces of one training job: one PyTorch profiler trace per rank (.json or .json.gz), "
                f"all at once, up to {max_upload_bytes / 1e6:,.1f} MB per drop (larger jobs: `tracekit job DIR`). "
                "The ranks are lined up on their collectives: which rank holds the job back, why, and what the job "
                "would gain without it. Nothing is stored."
            ),
            dcc.Upload(
                id="job-upload",
                multiple=True,
                className="upload-zone",
                children=html.Div(["Drag and drop the rank traces here, or ", html.A("choose files")]),
            ),
            dcc.Loading(html.Div(id="job-result"), type="default"),
        ],
        id="job-page",
    )


def register_callbacks(app: Dash, max_upload_bytes: int) -> None:
    @app.callback(
        Output("job-result", "children"),
        Output("job-upload", "contents"),
        Input("job-upload", "contents"),
        State("job-upload", "filename"),
        prevent_initial_call=True,
    )
    def on_drop(contents: list[str] | None, file_names: list[str] | None):
        if not contents:
            return no_update, no_update
        file_names = file_names or [f"rank{index}.json" for index in range(len(contents))]
        return run_uploaded_job(list(zip(file_names, contents, strict=False)), max_upload_bytes), None
