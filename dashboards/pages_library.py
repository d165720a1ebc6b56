"""Library page: the stored imports and their launches, searchable and sortable, with delete and compare."""

from __future__ import annotations

import polars as pl
from dash import Dash, Input, Output, State, dash_table, dcc, html, no_update

from tracekit.errors import NotFoundError
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
    ("kernel_name", "kernel", "text"),
    ("grid", "grid", "text"),
    ("block", "block", "text"),
    ("registers_per_thread", "regs/thread", "numeric"),
    ("duration_ns", "duration (ns)", "numeric"),
    ("device_name", "device", "text"),
]


def _dims(x, y, z) -> str:
    return "" if x is None else f"{x}x{y}x{z}"


def import_rows(store: Store) -> list[dict]:
    imports = store.imports()
    rows = imports.select([name for name, _, _ in IMPORT_COLUMNS]).to_dicts()
    for row in rows:
        row["imported_at"] = str(row["imported_at"])[:19]
    return rows


def launch_rows(store: Store) -> list[dict]:
    launches = store.launches()
    if launches.height == 0:
        return []
    launches = launches.with_columns(pl.col("duration_ns").round(0))
    return [
        {
            "id": row["id"],
            # Markdown made from our own integer only; the kernel name stays a plain text cell.
            "link": f"[launch {int(row['id'])}](/launch/{int(row['id'])})",
            "import_id": row["import_id"],
            "kernel_name": row["kernel_name"],
            "grid": _dims(row["grid_x"], row["grid_y"], row["grid_z"]),
            "block": _dims(row["block_x"], row["block_y"], row["block_z"]),
            "registers_per_thread": row["registers_per_thread"],
            "duration_ns": row["duration_ns"],
            "device_name": row["device_name"],
        }
        for row in launches.iter_rows(named=True)
    ]


def _table(table_id: str, columns: list[tuple[str, str, str]], rows: list[dict], markdown: tuple = ()):
    return dash_table.DataTable(
        id=table_id,
        columns=[
            {"id": key, "name": name, "type": kind, **({"presentation": "markdown"} if key in markdown else {})}
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
        ]
    )


def register_callbacks(app: Dash, store: Store, read_only: bool = False) -> None:
    """The compare link always; the delete callbacks only when the store may change (read-only: none exist,
    so no request can reach them)."""

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
