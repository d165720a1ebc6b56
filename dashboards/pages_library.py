"""Library page: the stored imports and their launches (with each launch's verdict and limiter from the engine),
searchable and sortable, with delete and compare; and the GPU time of Nsight Systems imports."""

from __future__ import annotations

import os
import re

import polars as pl
from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.dash_table.Format import Format, Group, Scheme, Symbol, Trim

from tracekit import format as display
from tracekit.api import TraceAnalysis
from tracekit.errors import NotFoundError, TracekitError

from .common import TABLE_STYLE, DataTable, DataTableClass

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


def import_rows(traces: TraceAnalysis) -> list[dict]:
    imports = traces.imports()
    rows = imports.select([name for name, _, _ in IMPORT_COLUMNS]).to_dicts()
    for row in rows:
        row["imported_at"] = str(row["imported_at"])[:19]
    return rows


# A store of more launches than this lists them a page at a time: the server filters, sorts and pages them and
# analyses only the page shown (all at once, 100k launches were 36 MB of table and an analysis of each).
PAGED_LAUNCHES = int(os.environ.get("TRACEKIT_PAGED_LAUNCHES", "2000"))
PAGE_SIZE = 25


def verdicts(
    traces: TraceAnalysis, launches: pl.DataFrame, catalog: pl.DataFrame | None = None
) -> dict[int, tuple[str, str]]:
    """launch id -> (verdict, limiter) from the engine (results cached in the store); a launch the engine
    cannot analyze shows "n/a". `catalog`: the store's launches, when already read."""
    try:
        results = traces.analyze(launches, catalog=catalog)
    except TracekitError:
        return {}
    return {
        int(r.launch_id): (r.classification.mode, r.classification.limiter or "")
        for r in results
        if r.launch_id is not None
    }


def _dims(prefix: str) -> pl.Expr:
    x, y, z = (pl.col(f"{prefix}_{axis}").cast(pl.Utf8) for axis in "xyz")
    return pl.when(pl.col(f"{prefix}_x").is_null()).then(pl.lit("")).otherwise(pl.concat_str(x, y, z, separator="x"))


def launch_frame(launches: pl.DataFrame) -> pl.DataFrame:
    """The launches table's columns (all but the verdict), from a `Store.launches()` frame."""
    named = pl.coalesce("kernel_name", "mangled_name")
    shown = {name: display.kernel_name(name) for name in launches.select(named.unique()).to_series().drop_nulls()}
    return launches.select(
        "id",
        # Markdown made from our own integer only; the kernel name stays a plain text cell.
        link=pl.format("[launch {}](/launch/{})", "id", "id"),
        import_id="import_id",
        kernel=named.replace_strict(shown, default=None, return_dtype=pl.Utf8),
        duration_s=pl.col("duration_ns") / 1e9,
        grid=_dims("grid"),
        block=_dims("block"),
        registers_per_thread="registers_per_thread",
        device_name="device_name",
        kernel_name="kernel_name",
    )


def rows_with_verdicts(traces: TraceAnalysis, frame: pl.DataFrame, catalog: pl.DataFrame | None = None) -> list[dict]:
    """`launch_frame` rows as table rows, each with its launch's verdict and limiter (engine results);
    `catalog`: the store's launches, when already read (the engine needs them for each launch's context)."""
    if not frame.height:
        verdict_of: dict[int, tuple[str, str]] = {}
    elif catalog is None:
        verdict_of = verdicts(traces, traces.launches(launch_ids=frame["id"].to_list()))
    else:
        verdict_of = verdicts(traces, catalog.filter(pl.col("id").is_in(frame["id"].implode())), catalog)
    rows = frame.to_dicts()
    for row in rows:
        row["verdict"], row["limiter"] = verdict_of.get(int(row["id"]), ("n/a", ""))
    return rows


def launch_rows(traces: TraceAnalysis, catalog: pl.DataFrame | None = None) -> list[dict]:
    """Every launch's row (a store of at most PAGED_LAUNCHES)."""
    launches = traces.launches() if catalog is None else catalog
    return rows_with_verdicts(traces, launch_frame(launches), launches) if launches.height else []


FILTER_OPERATORS = {  # the DataTable's filter syntax: operator -> comparison
    "contains": "contains",
    "=": "eq",
    "eq": "eq",
    "!=": "ne",
    "ne": "ne",
    "<": "lt",
    "lt": "lt",
    "<=": "le",
    "le": "le",
    ">": "gt",
    "gt": "gt",
    ">=": "ge",
    "ge": "ge",
}
PAGE_ONLY_COLUMNS = ("verdict", "limiter")  # known for the page shown only


def _filter_part(part: str, columns: dict[str, str]) -> pl.Expr:
    """One `{column} operator value` of a DataTable filter as a polars expression; TracekitError when it is not
    one this page can apply."""
    match = re.fullmatch(r"\s*\{([^}]*)\}\s+([si]?)(contains|!=|<=|>=|=|<|>|eq|ne|lt|le|gt|ge)\s+(.*?)\s*", part)
    if not match:
        raise TracekitError(f"cannot apply the filter {part.strip()!r}")
    column, case, operator, text = match.groups()
    if column in PAGE_ONLY_COLUMNS:
        raise TracekitError(
            f"the {column} is known for the launches shown only: filter by kernel, duration or import, or use "
            "`tracekit analyze --kernel NAME` for every launch's verdict"
        )
    if column not in columns:
        raise TracekitError(f"no column {column!r} to filter")
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        text = text[1:-1]
    comparison = FILTER_OPERATORS[operator]
    target = pl.col(column)
    if columns[column] == "numeric" and comparison != "contains":
        try:
            value: object = float(text)
        except ValueError:
            raise TracekitError(f"{text!r} is not a number ({column})") from None
    else:
        target, value = target.cast(pl.Utf8), text
        if case == "i" or comparison == "contains":
            target, value = target.str.to_lowercase(), text.lower()
        if comparison == "contains":
            return target.str.contains(str(value), literal=True).fill_null(False)
    return getattr(target, comparison)(value).fill_null(False)


def launch_page(
    traces: TraceAnalysis,
    page: int,
    page_size: int,
    sort_by: list[dict] | None,
    filter_query: str | None,
    catalog: pl.DataFrame | None = None,
) -> tuple[list[dict], int, str]:
    """One page of the launches table, filtered and sorted by the server: (rows with their verdicts, page count,
    a note: what the filter could not do, else empty). `catalog`: the store's launches, when already read."""
    catalog = traces.launches() if catalog is None else catalog
    every = launch_frame(catalog)
    columns = {key: kind for key, _, kind in LAUNCH_COLUMNS}
    note = ""
    frame = every
    if filter_query:
        try:
            frame = every.filter(*(_filter_part(part, columns) for part in filter_query.split(" && ")))
        except TracekitError as exc:
            note = f"Filter not applied: {exc}."
            frame = every
    order = [s for s in sort_by or [] if s.get("column_id") in columns and s["column_id"] not in PAGE_ONLY_COLUMNS]
    if len(order) < len(sort_by or []):
        note = f"{note} Not sorted by verdict or limiter: they are known for the launches shown only.".strip()
    if order:
        frame = frame.sort(
            [s["column_id"] for s in order], descending=[s.get("direction") == "desc" for s in order], nulls_last=True
        )
    size = max(1, min(int(page_size or PAGE_SIZE), 500))
    pages = max(1, -(-frame.height // size))
    page = max(0, min(int(page or 0), pages - 1))
    return rows_with_verdicts(traces, frame.slice(page * size, size), catalog), pages, note


def gpu_time_rows(
    traces: TraceAnalysis, import_id: int, catalog: pl.DataFrame | None = None
) -> tuple[list[dict], list[dict]]:
    """The `tracekit summary` tables of one Nsight Systems import, times in seconds for the SI format;
    `catalog`: the store's launches, when already read."""
    summary = traces.gpu_time(import_id, display.kernel_name, catalog)

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


def gpu_time_section(
    traces: TraceAnalysis, catalog: pl.DataFrame | None = None, deferred: bool = False
) -> html.Section:
    """Per-kernel and per-copy GPU time of an Nsight Systems import (as `nsys stats` and `tracekit summary`);
    `deferred`: the tables are filled after the page is drawn (a large store)."""
    imports = traces.imports()
    timed = imports.filter(pl.col("format") == "nsys-sqlite") if imports.height else imports
    options = [
        {"label": f"import {row['id']}: {row['name']}", "value": row["id"]} for row in timed.iter_rows(named=True)
    ]
    kernels, copies = gpu_time_rows(traces, options[0]["value"], catalog) if options and not deferred else ([], [])
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


def _time_table(table_id: str, rows: list[dict]) -> DataTableClass:
    return DataTable(
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


def _table(
    table_id: str,
    columns: list[tuple[str, str, str]],
    rows: list[dict],
    markdown: tuple = (),
    page_count: int | None = None,
):
    """A filterable, sortable table of `rows`; with `page_count`, one page of rows that the server filters, sorts
    and pages (`launch_page`)."""
    action = "native" if page_count is None else "custom"
    paging = {} if page_count is None else {"page_action": "custom", "page_current": 0, "page_count": page_count}
    return DataTable(
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
        filter_action=action,
        sort_action=action,
        sort_mode="multi",
        row_selectable="multi",
        page_size=PAGE_SIZE,
        **paging,
        markdown_options={"html": False, "link_target": "_self"},
        **TABLE_STYLE,
    )


def layout(traces: TraceAnalysis, read_only: bool = False) -> html.Div:
    imports = import_rows(traces)
    # A large store's page is drawn from its first launches alone; the verdicts, which need every launch of
    # their kernels, and the GPU time follow (`fill_first_page`). A small one is read once and drawn whole.
    large = traces.launch_count() > PAGED_LAUNCHES
    catalog = None if large else traces.catalog()
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
            *(first_page_table(traces) if large else launches_table(traces, catalog)),
            # A large store's page, once drawn, asks for its first page's verdicts and its GPU time: a timer that
            # fires once after the page is up (a callback chained to the page's own render held its draw back).
            dcc.Interval(id="launches-tick", interval=100, max_intervals=1 if large else 0, disabled=not large),
            dcc.Store(id="launches-request"),  # set once the table is drawn (TABLE_FIRST)
            html.Div(id="compare-link", className="actions"),
            gpu_time_section(traces, catalog, deferred=large),
        ]
    )


def first_launch_rows(traces: TraceAnalysis, catalog: pl.DataFrame | None = None) -> tuple[list[dict], int | None, str]:
    """The launches table's rows as a page opens: every launch's, or the first page's of a large store; its page
    count (None: every row is there) and its note. `catalog`: the store's launches, when already read."""
    catalog = traces.launches() if catalog is None else catalog
    count = catalog.height
    if count <= PAGED_LAUNCHES:
        return launch_rows(traces, catalog), None, ""
    rows, pages, _ = launch_page(traces, 0, PAGE_SIZE, None, None, catalog)
    return rows, pages, PAGED_NOTE.format(count=count)


PAGED_NOTE = (
    "{count:,} launches: shown a page at a time, with the verdicts of the page's launches. Filter and sort by the "
    "other columns."
)


ANALYSING = "analysing..."


def first_page_table(traces: TraceAnalysis) -> list:
    """A large store's launches table as the page opens: its first page of launches (a query of PAGE_SIZE rows,
    not the whole catalog), each verdict "analysing..." until `fill_first_page` answers (`launches-tick`)."""
    count = traces.launch_count()
    ids = traces.first_launch_ids(PAGE_SIZE)
    rows = launch_frame(traces.launches(launch_ids=ids)).to_dicts() if ids else []
    for row in rows:
        row["verdict"], row["limiter"] = ANALYSING, ""
    pages = max(1, -(-count // PAGE_SIZE))
    return [
        html.P(PAGED_NOTE.format(count=count), id="launches-note", className="hint"),
        dcc.Store(id="launches-paged", data=True),
        _table("launches-table", LAUNCH_COLUMNS, rows, markdown=("link",), page_count=pages),
    ]


def launches_table(traces: TraceAnalysis, catalog: pl.DataFrame | None = None) -> list:
    rows, pages, note = first_launch_rows(traces, catalog)
    return [
        html.P(note, id="launches-note", className="hint"),
        dcc.Store(id="launches-paged", data=pages is not None),
        _table("launches-table", LAUNCH_COLUMNS, rows, markdown=("link",), page_count=pages),
    ]


# The verdicts and the GPU time are asked for once the table's first rows are drawn (or after 3 s, whatever
# happens): computed while the browser draws, they would take the CPU the drawing needs.
TABLE_FIRST = """
function (ticks) {
    if (!ticks) { return window.dash_clientside.no_update; }
    const asked = Date.now();
    return new Promise(function (resolve) {
        (function check() {
            if (document.querySelector("#launches-table td") || Date.now() - asked > 3000) {
                resolve(ticks);
            } else {
                setTimeout(check, 50);
            }
        })();
    });
}
"""


def register_callbacks(app: Dash, traces: TraceAnalysis, read_only: bool = False) -> None:
    """The compare link always; the delete callbacks only when the store may change (read-only: none exist,
    so no request can reach them)."""

    @app.callback(
        Output("gpu-time-kernels", "data"),
        Output("gpu-time-memcpys", "data"),
        Input("gpu-time-import", "value"),
        Input("launches-request", "data"),
        prevent_initial_call=True,
    )
    def show_gpu_time(import_id: int | None, _request: object = None):
        if not isinstance(import_id, int) or isinstance(import_id, bool):
            return [], []
        try:
            return gpu_time_rows(traces, import_id, traces.catalog())
        except NotFoundError:
            return [], []

    app.clientside_callback(TABLE_FIRST, Output("launches-request", "data"), Input("launches-tick", "n_intervals"))

    @app.callback(
        Output("launches-table", "data", allow_duplicate=True),
        Input("launches-request", "data"),
        State("launches-table", "page_current"),
        State("launches-table", "page_size"),
        State("launches-table", "sort_by"),
        State("launches-table", "filter_query"),
        prevent_initial_call=True,
    )
    def fill_first_page(
        request: int | None, page: int | None, size: int | None, sort_by: list | None, query: str | None
    ):
        """The page shown, with its launches' verdicts (the engine's, computed now where the store has none)."""
        if not request:
            return no_update
        return launch_page(traces, page or 0, size or PAGE_SIZE, sort_by, query, traces.catalog())[0]

    app.clientside_callback(TABLE_FIRST, Output("launches-request", "data"), Input("launches-tick", "n_intervals"))

    @app.callback(
        Output("launches-table", "data", allow_duplicate=True),
        Output("launches-table", "page_count"),
        Output("launches-note", "children"),
        Input("launches-table", "page_current"),
        Input("launches-table", "page_size"),
        Input("launches-table", "sort_by"),
        Input("launches-table", "filter_query"),
        State("launches-paged", "data"),
        prevent_initial_call=True,
    )
    def page_launches(page: int | None, size: int | None, sort_by: list | None, query: str | None, paged: bool):
        """A large store's launches: the page asked for, filtered and sorted here (a small store's table does it
        in the browser)."""
        if not paged:
            return no_update, no_update, no_update
        catalog = traces.catalog()
        rows, pages, note = launch_page(traces, page or 0, size or PAGE_SIZE, sort_by, query, catalog)
        return rows, pages, note or PAGED_NOTE.format(count=catalog.height)

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
                traces.delete_import(import_id)
                deleted.append(import_id)
            except NotFoundError:
                missing.append(import_id)  # deleted meanwhile, from another tab or the CLI
        message = f"Deleted import{'s' if len(deleted) > 1 else ''} {', '.join(map(str, deleted))}." if deleted else ""
        if missing:
            message += f" Already gone: {', '.join(map(str, missing))}."
        return import_rows(traces), [], [], first_launch_rows(traces, traces.catalog())[0], [], [], message.strip()
