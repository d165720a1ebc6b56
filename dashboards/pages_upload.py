"""Upload page: drop several profiler files at once; each is imported on its own, with one status line per file.

A file goes through the same path as `tracekit import`: written to a temporary file, then `ingest`. The store
writes each import in one transaction, so a file that fails leaves nothing behind.
"""

from __future__ import annotations

import base64
import binascii
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dash import Dash, Input, Output, State, dcc, html, no_update

from tracekit.errors import TracekitError
from tracekit.ingest import ingest
from tracekit.store import Store

log = logging.getLogger(__name__)


@dataclass
class UploadStatus:
    """What became of one uploaded file."""

    file_name: str
    outcome: str  # "imported" | "already stored" | "error"
    message: str
    import_id: int | None = None
    launch_count: int | None = None
    warnings: list[str] = field(default_factory=list)


def _megabytes(size_bytes: float) -> str:
    return f"{size_bytes / 1e6:,.1f} MB"


def _decoded_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=") if data else 0


def _safe_file_name(file_name: str) -> str:
    """The last path component of a browser-supplied name, so it cannot point outside the temp dir."""
    name = Path(file_name.replace("\\", "/")).name
    return name if name not in ("", ".", "..") else "upload"


def import_upload(store: Store, file_name: str, contents: str, max_upload_bytes: int) -> UploadStatus:
    """Import one file given as a `dcc.Upload` data URL; user mistakes come back as a status, never raised."""
    _, _, data = contents.partition(",")
    size_bytes = _decoded_size(data)
    if size_bytes > max_upload_bytes:
        return UploadStatus(
            file_name,
            "error",
            f"{file_name} is {_megabytes(size_bytes)}, over the upload limit "
            f"of {_megabytes(max_upload_bytes)}; import it with `tracekit import` instead",
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return UploadStatus(file_name, "error", f"{file_name}: the browser sent data that is not base64")
    with tempfile.TemporaryDirectory(prefix="tracekit-upload-") as temp_dir:
        path = Path(temp_dir) / _safe_file_name(file_name)
        path.write_bytes(raw)
        try:
            result, warnings = ingest(store, path, name=file_name, max_inflated_bytes=max_upload_bytes)
        except TracekitError as exc:
            return UploadStatus(file_name, "error", str(exc).replace(str(path), file_name))
        except Exception as exc:  # noqa: BLE001 - a bug must not take the page down; it is logged in full
            log.exception("importing upload %r failed", file_name)
            return UploadStatus(
                file_name,
                "error",
                f"{file_name}: tracekit failed to read it "
                f"({type(exc).__name__}: {exc}); the server log has the details",
            )
    warnings = [message.replace(str(path), file_name) for message in warnings]
    if not result.created:
        return UploadStatus(
            file_name,
            "already stored",
            f"{file_name} is already stored as import {result.import_id}; nothing added",
            result.import_id,
            result.launch_count,
        )
    launches = f"{result.launch_count} launch{'' if result.launch_count == 1 else 'es'}"
    return UploadStatus(
        file_name,
        "imported",
        f"{file_name} imported as import {result.import_id} with {launches}",
        result.import_id,
        result.launch_count,
        warnings,
    )


def status_table(statuses: list[UploadStatus]) -> html.Table:
    rows = []
    for status in statuses:
        detail: list = [status.message] + [html.Div(f"warning: {w}", className="warning") for w in status.warnings]
        link = (
            dcc.Link(f"import {status.import_id} in the library", href="/library")
            if status.import_id is not None
            else ""
        )
        rows.append(
            html.Tr(
                [html.Td(status.file_name), html.Td(status.outcome), html.Td(detail), html.Td(link)],
                className=f"upload-{status.outcome.replace(' ', '-')}",
            )
        )
    header = html.Tr([html.Th("file"), html.Th("result"), html.Th("details"), html.Th("")])
    return html.Table([html.Thead(header), html.Tbody(rows)], id="upload-status-table", className="table")


def layout(max_upload_bytes: int, read_only: bool = False) -> html.Div:
    if read_only:
        return html.Div(
            [
                html.H2("Upload"),
                html.P("This dashboard is read-only: files are added with `tracekit import` on the server."),
            ]
        )
    return html.Div(
        [
            html.H2("Upload"),
            html.P(
                "Nsight Compute CSV or .ncu-rep, Nsight Systems SQLite exports and warp traces; several files at "
                f"once, up to {_megabytes(max_upload_bytes)} per drop (larger ones: `tracekit import`). A drop is "
                "imported whole or not at all."
            ),
            dcc.Upload(
                id="upload",
                multiple=True,
                className="upload-zone",
                children=html.Div(["Drag and drop files here, or ", html.A("choose files")]),
            ),
            dcc.Loading(html.Div(id="upload-status"), type="default"),
        ]
    )


def register_callbacks(app: Dash, store: Store, max_upload_bytes: int) -> None:
    @app.callback(
        Output("upload-status", "children"),
        Output("upload", "contents"),
        Input("upload", "contents"),
        State("upload", "filename"),
        prevent_initial_call=True,
    )
    def on_upload(contents: list[str] | None, file_names: list[str] | None):
        if not contents:
            return no_update, no_update
        file_names = file_names or [f"file {index + 1}" for index in range(len(contents))]
        statuses = [
            import_upload(store, name, data, max_upload_bytes) for name, data in zip(file_names, contents, strict=False)
        ]
        # Clearing `contents` lets the same file be dropped again (and frees the browser's copy).
        return status_table(statuses), None
