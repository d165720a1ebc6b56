"""Library page: the stored imports and their launches (with each launch's verdict and limiter from the engine),
searchable and sortable, with delete and compare; and the GPU time of Nsight Systems imports."""

from __future__ import annotations

import polars as pl
from dash import Dash, Input, Output, State, dash_table, dcc, html, no_update
from dash.dash_table.Format import Format, Group, Scheme, Symbol, Trim

from tracekit import format as display
from tracekit.analysis.gpu_time import gpu_time
from tracekit.api import analyze_stored
from tracekit.errors import NotFoundError, TracekitError
from tracekit.store import Store

from .common import TABLE_STYLE

IMPORT_COLUMNS = [
    ("id", "id", "numeric"),
    ("name", "name", "text"),
    ("format", "format", "text"),
    ("tool", "tool", "text"),
    ("device_name", "device", "text"),
    ("launch_count", "launches", "numeric"),
    ("size_bytes", "size (bytes)", "numeric"),
    ("imported_at", "imported at", "text"),
]
LAUNCH_COLUMNS = [
    ("link", "launch", "text"),
    ("import_id", "import", "numeric"),
    ("kernel", "kernel", "text"),
    ("verdict", "verdict", "text"),
    ("limiter", "limiter", "text"),
    ("duration_s", "duration", "numeric"),
    ("grid", "grid", "text"),
    ("block", "block", "text"),
    ("registers_per_thread", "regs/thread", "numeric"),
    ("device_name", "device", "text"),
    ("kernel_name", "signature", "text"),
]
# Numbers stay numbers (sorting, `>1e-4` filters); the browser shows them with SI prefixes: 256.8µs, 1.2ms.
COLUMN_FORMATS = {
    "duration_s": Format(precision=4, scheme=Scheme.decimal_si_prefix, trim=Trim.yes)
    .symbol(Symbol.yes)
    .symbol_suffix("s"),
    "size_bytes": Format().group(Group.yes),
    "launch_count": Format().group(Group.yes),
}
TIME_COLUMNS = [
    ("share", "time (%)", "numeric"),
    ("total_s", "total", "numeric"),
    ("count", "count", "numeric"),
    ("mean_s", "mean", "numeric"),
    ("median_s", "median", "numeric"),
    ("min_s", "min", "numeric"),
    ("max_s", "max", "numeric"),
    ("std_s", "std dev", "numeric"),
    ("name", "name", "text"),
]
TIME_FORMATS = {
    "share": Format(precision=3, scheme=Scheme.percentage_rounded),
    "count": Format().group(Group.yes),
    **{
        key: Format(precision=4, scheme=Scheme.decimal_si_prefix, trim=Trim.yes).symbol(Symbol.yes).symbol_suffix("s")
        for key in ("total_s", "mean_s", "median_s", "min_s", "max_s", "std_s")
    },
}


def _dims(x, y, z) -> str:
    return "" if x is None else f"{x}x{y}x{z}"


def import_rows(store: Store) -> list[dict]:
    imports = store.imports()
    rows = imports.select([name for name, _, _ in IMPORT_COLUMNS]).to_dicts()
    for row in rows:
        row["imported_at"] = str(row["imported_at"])[:19]
    return rows


def verdicts(store: Store, launches: pl.DataFrame) -> dict[int, tuple[str, str]]:
    """launch id -> (verdict, limiter) from the engine (results cached in the store); a launch the engine
    cannot analyze shows "n/a"."""
    try:
        results = analyze_stored(store, launches)
    except TracekitError:
        return {}
    return {
        int(r.launch_id): (r.classification.mode, r.classification.limiter or "")
        for r in results
        if r.launch_id is not None
    }


def launch_rows(store: Store) -> list[dict]:
    launches = store.launches()
    if launches.height == 0:
        return []
    verdict_of = verdicts(store, launches)
    return [
        {
            "id": row["id"],
            # Markdown made from our own integer only; the kernel name stays a plain text cell.
            "link": f"[launch {int(row['id'])}](/launch/{int(row['id'])})",
            "import_id": row["import_id"],
            "kernel": display.kernel_name(row["kernel_name"] or row["mangled_name"]),
            "verdict": verdict_of.get(int(row["id"]), ("n/a", ""))[0],
            "limiter": verdict_of.get(int(row["id"]), ("n/a", ""))[1],
            "duration_s": None if row["duration_ns"] is None else row["duration_ns"] / 1e9,
            "grid": _dims(row["grid_x"], row["grid_y"], row["grid_z"]),
            "block": _dims(row["block_x"], row["block_y"], row["block_z"]),
            "registers_per_thread": row["registers_per_thread"],
            "device_name": row["device_name"],
            "kernel_name": row["kernel_name"],
        }
        for row in launches.iter_rows(named=True)
    ]


def gpu_time_rows(store: Store, import_id: int) -> tuple[list[dict], list[dict]]:
    """The `tracekit summary` tables of one Nsight Systems import, times in seconds for the SI format."""
    summary = gpu_time(store.launches(import_id=import_id), store.memcpys(import_id), display.kernel_name)

    def rows(table) -> list[dict]:
        return [
            {
                "share": row.share,
                "total_s": row.total_ns / 1e9,
                "count": row.count,
                "mean_s": row.mean_ns / 1e9,
                "median_s": row.median_ns / 1e9,
                "min_s": row.min_ns / 1e9,
                "max_s": row.max_ns / 1e9,
                "std_s": row.std_ns / 1e9,
                "name": row.name,
            }
            for row in table
        ]

    return rows(summary.kernels), rows(summary.memcpys)


def gpu_time_section(store: Store) -> html.Section:
    """Per-kernel and per-copy GPU time of an Nsight Systems import (as `nsys stats` and `tracekit summary`)."""
    imports = store.imports()
    timed = imports.filter(pl.col("format") == "nsys-sqlite") if imports.height else imports
    options = [
        {"label": f"import {row['id']}: {row['name']}", "value": row["id"]} for row in timed.iter_rows(named=True)
    ]
    kernels, copies = gpu_time_rows(store, options[0]["value"]) if options else ([], [])
    return html.Section(
        [
            html.H3("GPU time (Nsight Systems)"),
            html.P(
                "Where each timeline's GPU time went, per kernel and per kind of memory copy; shares are of all "
                "kernel time and of all copy time (as nsys stats' cuda_gpu_kern_sum and cuda_gpu_mem_time_sum).",
                className="hint",
            ),
            dcc.Dropdown(
                id="gpu-time-import",
                options=options,
                value=options[0]["value"] if options else None,
                clearable=False,
                placeholder="no Nsight Systems import in the store",
            ),
            html.H4("Kernels"),
            _time_table("gpu-time-kernels", kernels),
            html.H4("Memory copies"),
            _time_table("gpu-time-memcpys", copies),
        ],
        id="gpu-time-panel",
    )


def _time_table(table_id: str, rows: list[dict]) -> dash_table.DataTable:
    return dash_table.DataTable(
        id=table_id,
        columns=[
            {"id": key, "name": name, "type": kind, **({"format": TIME_FORMATS[key]} if key in TIME_FORMATS else {})}
            for key, name, kind in TIME_COLUMNS
        ],
        data=rows,
        filter_action="native",
        sort_action="native",
        page_size=25,
        **TABLE_STYLE,
    )


def _table(table_id: str, columns: list[tuple[str, str, str]], rows: list[dict], markdown: tuple = ()):
    return dash_table.DataTable(
        id=table_id,
        columns=[
            {
                "id": key,
                "name": name,
                "type": kind,
                **({"presentation": "markdown"} if key in markdown else {}),
                **({"format": COLUMN_FORMATS[key]} if key in COLUMN_FORMATS else {}),
            }
            for key, name, kind in columns
        ],
        data=rows,
        filter_action="native",
        sort_action="native",
        sort_mode="multi",
        row_selectable="multi",
        page_size=25,
        markdown_options={"html": False, "link_target": "_self"},
        **TABLE_STYLE,
    )


def layout(store: Store, read_only: bool = False) -> html.Div:
    imports = import_rows(store)
    if read_only:
        actions = html.Div(
            html.Span("This dashboard is read-only: imports cannot be deleted here.", className="hint"),
            className="actions",
        )
        intro = "Type in the row under a header to filter (e.g. sgemm, or >1000 for numbers); click a header to sort."
    else:
        actions = html.Div(
            [
                html.Button("Delete selected imports", id="delete-imports", n_clicks=0, className="danger"),
                html.Span(id="delete-status", className="status"),
                dcc.ConfirmDialog(id="confirm-delete"),
            ],
            className="actions",
        )
        intro = (
            "Type in the row under a header to filter (e.g. sgemm, or >1000 for numbers); click a header to "
            "sort. Select imports to delete them, or two launches to compare them."
        )
    return html.Div(
        [
            html.H2("Library"),
            html.P(intro),
            html.H3("Imports"),
            html.P("The store is empty: upload files first." if not imports else "", id="library-empty"),
            _table("imports-table", IMPORT_COLUMNS, imports),
            actions,
            html.H3("Launches"),
            _table("launches-table", LAUNCH_COLUMNS, launch_rows(store), markdown=("link",)),
            html.Div(id="compare-link", className="actions"),
            gpu_time_section(store),
        ]
    )


def register_callbacks(app: Dash, store: Store, read_only: bool = False) -> None:
    """The compare link always; the delete callbacks only when the store may change (read-only: none exist,
    so no request can reach them)."""

    @app.callback(
        Output("gpu-time-kernels", "data"),
        Output("gpu-time-memcpys", "data"),
        Input("gpu-time-import", "value"),
        prevent_initial_call=True,
    )
    def show_gpu_time(import_id: int | None):
        if not isinstance(import_id, int) or isinstance(import_id, bool):
            return [], []
        try:
            return gpu_time_rows(store, import_id)
        except NotFoundError:
            return [], []

    @app.callback(Output("compare-link", "children"), Input("launches-table", "selected_row_ids"))
    def compare_link(selected: list[int] | None):
        if not selected or len(selected) != 2:
            return html.Span("Select two launches to compare them.", className="hint")
        a, b = selected
        return dcc.Link(
            f"Compare launch {a} with launch {b}", href=f"/compare?a={int(a)}&b={int(b)}", id="compare-selected"
        )

    if read_only:
        return

    @app.callback(
        Output("confirm-delete", "displayed"),
        Output("confirm-delete", "message"),
        Output("delete-status", "children", allow_duplicate=True),
        Input("delete-imports", "n_clicks"),
        State("imports-table", "selected_row_ids"),
        prevent_initial_call=True,
    )
    def ask_delete(_clicks: int, selected: list[int] | None):
        if not selected:
            return False, no_update, "Select the imports to delete first (the boxes at the left of the rows)."
        ids = ", ".join(str(i) for i in sorted(selected))
        return (
            True,
            (
                f"Delete import{'s' if len(selected) > 1 else ''} {ids} and all their launches, metrics "
                "and warps? This cannot be undone."
            ),
            "",
        )

    @app.callback(
        Output("imports-table", "data"),
        Output("imports-table", "selected_rows"),
        Output("imports-table", "selected_row_ids"),
        Output("launches-table", "data"),
        Output("launches-table", "selected_rows"),
        Output("launches-table", "selected_row_ids"),
        Output("delete-status", "children"),
        Input("confirm-delete", "submit_n_clicks"),
        State("imports-table", "selected_row_ids"),
        prevent_initial_call=True,
    )
    def delete_selected(_submitted: int, selected: list[int] | None):
        deleted, missing = [], []
        ids = sorted({int(i) for i in selected or [] if isinstance(i, int) and not isinstance(i, bool)})
        for import_id in ids:  # row ids come from the browser: integers only
            try:
                store.delete_import(import_id)
                deleted.append(import_id)
            except NotFoundError:
                missing.append(import_id)  # deleted meanwhile, from another tab or the CLI
        message = f"Deleted import{'s' if len(deleted) > 1 else ''} {', '.join(map(str, deleted))}." if deleted else ""
        if missing:
            message += f" Already gone: {', '.join(map(str, missing))}."
        return import_rows(store), [], [], launch_rows(store), [], [], message.strip()
