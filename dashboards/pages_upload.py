"""Upload page: drop several profiler files at once; the drop is imported whole or not at all, one status per file.

The files of a drop go through the same path as `tracekit import` of several files: written to temporary
files (removed afterwards), then imported in one transaction, so one bad file leaves nothing of the drop behind.
"""

from __future__ import annotations

import base64
import binascii
import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from dash import Dash, Input, Output, State, dcc, html, no_update

from tracekit.api import BatchError, FileOutcome, TraceAnalysis
from tracekit.scratch import prefix, remove_stale, scratch_dir

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


def decode_upload(file_name: str, contents: str, max_upload_bytes: int) -> bytes | UploadStatus:
    """The file's bytes from a `dcc.Upload` data URL, or the error status."""
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
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return UploadStatus(file_name, "error", f"{file_name}: the browser sent data that is not base64")


def _status(file_name: str, path: Path, outcome: FileOutcome) -> UploadStatus:
    result = outcome.result
    assert result is not None
    warnings = [message.replace(str(path), file_name) for message in outcome.warnings]
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


@contextmanager
def written_uploads(names: list[str], contents: list[bytes]) -> Iterator[list[Path]]:
    """A drop's files written to a private scratch folder under their (last path component of their) names, one
    folder each (two files may share a name); removed when the block ends."""
    remove_stale()
    with tempfile.TemporaryDirectory(prefix=prefix("upload"), dir=scratch_dir()) as temp_dir:
        paths = []
        for index, (file_name, raw) in enumerate(zip(names, contents, strict=True)):
            folder = Path(temp_dir) / str(index)
            folder.mkdir()
            path = folder / _safe_file_name(file_name)
            path.write_bytes(raw)
            paths.append(path)
        yield paths


def import_uploads(traces: TraceAnalysis, files: list[tuple[str, str]], max_upload_bytes: int) -> list[UploadStatus]:
    """Import one drop of files, (name, data URL) each, all or nothing: if one fails, none is kept, and each
    status says which file failed and why. User mistakes come back as statuses, never raised."""
    names = [file_name for file_name, _ in files]
    decoded = [decode_upload(file_name, contents, max_upload_bytes) for file_name, contents in files]
    failed = next((item for item in decoded if isinstance(item, UploadStatus)), None)
    if failed is not None:
        return [
            item if isinstance(item, UploadStatus) else _not_kept(name, failed.file_name)
            for name, item in zip(names, decoded, strict=True)
        ]
    contents = [item for item in decoded if not isinstance(item, UploadStatus)]  # all of them: none failed
    with written_uploads(names, contents) as paths:
        try:
            outcomes = traces.import_files(paths, names, max_upload_bytes)
        except BatchError as exc:
            bad = len(exc.outcomes) - 1
            message = str(exc.outcomes[bad].error or exc) if exc.outcomes else str(exc)
            for path, file_name in zip(paths, names, strict=True):
                message = message.replace(str(path), file_name)
            message = message.split(" (nothing imported:")[0]
            return [
                UploadStatus(name, "error", message) if index == bad else _not_kept(name, names[bad])
                for index, name in enumerate(names)
            ]
        except Exception as exc:  # noqa: BLE001 - a bug must not take the page down; it is logged in full
            log.exception("importing uploads %r failed", names)
            return [
                UploadStatus(
                    name,
                    "error",
                    f"{name}: tracekit failed to import this drop ({type(exc).__name__}); the server log has the "
                    "details; nothing was kept",
                )
                for name in names
            ]
        return [_status(name, path, outcome) for name, path, outcome in zip(names, paths, outcomes, strict=True)]


def _not_kept(file_name: str, failed_name: str) -> UploadStatus:
    return UploadStatus(
        file_name, "not imported", f"{file_name} was not imported: {failed_name} failed, and a drop is all or nothing"
    )


def import_upload(traces: TraceAnalysis, file_name: str, contents: str, max_upload_bytes: int) -> UploadStatus:
    """Import one file given as a `dcc.Upload` data URL (a drop of one)."""
    return import_uploads(traces, [(file_name, contents)], max_upload_bytes)[0]


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


def register_callbacks(app: Dash, traces: TraceAnalysis, max_upload_bytes: int) -> None:
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
        statuses = import_uploads(traces, list(zip(file_names, contents, strict=False)), max_upload_bytes)
        # Clearing `contents` lets the same file be dropped again (and frees the browser's copy).
        return status_table(statuses), None
