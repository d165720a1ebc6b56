"""`tracekit import`, `ls`, `show` and `rm`: getting files into the store and looking at what it holds."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from tracekit import format as display
from tracekit.cli.common import (
    DbOption,
    JsonOption,
    NamesOption,
    console,
    err_console,
    open_store,
    print_json,
    progress,
    warn,
)
from tracekit.errors import TracekitError, one_line
from tracekit.format import NameStyle
from tracekit.ingest import ingest_batch


def parse_maps(maps: list[str]) -> dict[str, str]:
    """`--map start=t0` pairs to {"start": "t0"}."""
    mapping = {}
    for item in maps:
        field, sep, column = item.partition("=")
        if not sep or not field or not column:
            raise TracekitError(f"--map {item!r}: expected FIELD=COLUMN, for example --map start=t0")
        mapping[field.strip()] = column.strip()
    return mapping


def _first_sentence(docstring: str) -> str:
    """A reader's docstring up to its first ": " or ". " outside parentheses, without Markdown code marks."""
    text = " ".join(docstring.split("\n\n")[0].split()).replace("`", "")
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and char in ".:" and text[i + 1 : i + 2] in (" ", ""):
            return text[:i]
    return text


def reader_formats() -> list[tuple[str, str]]:
    """(FORMAT, what it reads) for every reader in `importers.READER_MODULES`, in detection order: read from the
    readers' source, so that `import --help` lists them all without importing any (nor polars)."""
    spec = importlib.util.find_spec("tracekit.importers")
    if spec is None or spec.origin is None:
        return []
    folder = Path(spec.origin).parent

    def assigned(source: str, name: str) -> Any:
        # the statement alone is parsed (parsing each reader whole cost every `tracekit import` 50-70 ms)
        match = re.search(rf"^{name} = (?:\[.*?^\]|.*?$)", source, re.MULTILINE | re.DOTALL)
        return ast.literal_eval(match.group(0).split("=", 1)[1].strip()) if match else None

    def docstring(source: str) -> str:
        match = re.match(r'\s*"""(.*?)"""', source, re.DOTALL)
        return inspect.cleandoc(ast.literal_eval(f'"""{match.group(1)}"""')) if match else ""

    found = []
    for module in assigned((folder / "__init__.py").read_text(encoding="utf-8"), "READER_MODULES") or []:
        # a family's reader lies in its subpackage: "ncu_csv.reader" is ncu_csv/reader.py
        source = (folder / f"{module.replace('.', '/')}.py").read_text(encoding="utf-8")
        found.append((str(assigned(source, "FORMAT")), _first_sentence(docstring(source))))
    return found


def import_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Files to import (literal names, never patterns).", show_default=False)
    ],
    db: DbOption = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="Override format detection: one of the formats listed above."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Label for the import (default: file name).")] = None,
    maps: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            help="Warp traces: FIELD=COLUMN (sm=smid, start=t0, ...); a file no reader recognizes is then read as "
            "a warp trace.",
        ),
    ] = None,
    clock_hz: Annotated[float | None, typer.Option("--clock-hz", help="Warp traces: SM clock for cycles.")] = None,
    keep_going: Annotated[
        bool,
        typer.Option(
            "--keep-going", help="Import the good files of a batch and report the bad ones (default: all or none)."
        ),
    ] = False,
    allow_incomplete: Annotated[
        bool,
        typer.Option(
            "--allow-incomplete",
            help="Warp traces: import a launch with fewer warps than its grid launches, marked incomplete.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Import profiler output, each file's format detected from its content (every format is listed below).

    Several files are imported together or not at all, unless --keep-going."""
    store = open_store(db)
    options: dict = {}
    if maps:
        options["column_map"] = parse_maps(maps)
    if clock_hz is not None:
        options["clock_hz"] = clock_hz
    if allow_incomplete:
        options["allow_incomplete"] = True
    bar = progress(paths, "importing")
    outcomes = ingest_batch(
        store,
        paths,
        fmt=fmt,
        names=[name if len(paths) == 1 else None] * len(paths),
        keep_going=keep_going,
        on_file=lambda _path: next(bar, None),
        **options,
    )
    deque(bar, maxlen=0)  # drain the iterator (itertools' consume recipe): the progress bar closes when exhausted
    results: list[dict[str, object]] = []
    for outcome in outcomes:
        path, result = outcome.path, outcome.result
        if result is None:
            err_console.print(f"tracekit: error: {one_line(outcome.error)}")
            results.append({"path": str(path), "error": outcome.error})
            continue
        for message in outcome.warnings:
            warn(f"{path}: {message}")
        results.append(
            {
                "path": str(path),
                "import_id": result.import_id,
                "created": result.created,
                "launches": result.launch_count,
                "warps": result.warp_count,
            }
        )
        if not as_json:
            if result.created:
                console.print(
                    f"imported {path} as import {result.import_id}: "
                    f"{display.plural(result.launch_count, 'launch')}, {display.plural(result.warp_count, 'warp')}"
                )
            else:
                console.print(f"{path} is already stored as import {result.import_id}; nothing added")
    failed = [outcome for outcome in outcomes if outcome.result is None]
    if as_json:
        print_json(results)
    if keep_going and len(paths) > 1 and not as_json:
        console.print(
            f"{len(outcomes) - len(failed):,} of {display.plural(len(outcomes), 'file')} imported, "
            f"{len(failed):,} failed"
        )
    if failed:
        raise typer.Exit(2)


# The readers, one line each (\b: Click keeps the paragraph's lines; brackets escaped from Rich's markup).
import_command.__doc__ = (
    (import_command.__doc__ or "")
    + "\n\n\b\nFormats:\n"
    + "\n".join(escape(f"  {name}: {what}") for name, what in reader_formats())
)


def ls_command(db: DbOption = None, as_json: JsonOption = False) -> None:
    """List stored imports."""
    imports = open_store(db).imports()
    if as_json:
        print_json(imports.to_dicts())
        return
    if imports.height == 0:
        console.print("the store is empty: tracekit import FILE", markup=False)
        return
    from rich.table import Table  # here: `import` prints no table

    table = Table("id", "name", "format", "device", "launches", "imported at")
    table.columns[4].justify = "right"
    for row in imports.iter_rows(named=True):
        table.add_row(
            str(row["id"]),
            row["name"],
            row["format"],
            row["device_name"] or "",
            display.number(row["launch_count"]),
            str(row["imported_at"])[:16],
        )
    console.print(table)


def show_command(
    import_id: Annotated[int, typer.Argument(help="Import id (see `tracekit ls`).")],
    names: NamesOption = NameStyle.base,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one import: its source, device and launches."""
    store = open_store(db)
    info = store.get_import(import_id)
    launches = store.launches(import_id=import_id)
    warp_counts = store.warp_counts(launches["id"].to_list()) if launches.height else {}
    launch_rows = [
        {
            "id": row["id"],
            "kernel_name": row["kernel_name"],
            "grid": [row["grid_x"], row["grid_y"], row["grid_z"]],
            "block": [row["block_x"], row["block_y"], row["block_z"]],
            "registers_per_thread": row["registers_per_thread"],
            "duration_ns": row["duration_ns"],
            "warps": warp_counts.get(row["id"], 0),
        }
        for row in launches.iter_rows(named=True)
    ]
    if as_json:
        print_json({**info, "launches": launch_rows})
        return
    for label, value in _import_fields(info):
        console.print(f"{label}: {value}", markup=False)
    from rich.table import Table

    table = Table("launch", "kernel", "grid", "block", "regs", "duration", "warps")
    for column in (0, 4, 5, 6):
        table.columns[column].justify = "right"
    table.columns[1].overflow = "fold"  # on a narrow terminal the name wraps, never ends in "…"
    for row in launch_rows:
        table.add_row(
            str(row["id"]),
            display.kernel_name(row["kernel_name"], names),
            display.dims(row["grid"]).replace(" ", ""),
            display.dims(row["block"]).replace(" ", ""),
            display.number(row["registers_per_thread"]),
            display.duration(row["duration_ns"]),
            display.number(row["warps"]),
        )
    console.print(table)


# Import fields as `show` prints them: label and formatter; the rest (device_extra, ids) are in --json.
_SHOWN_FIELDS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "name": ("name", str),
    "source_path": ("source", str),
    "format": ("format", str),
    "tool": ("tool", str),
    "tool_version": ("tool version", str),
    "size_bytes": ("size", display.size),
    "imported_at": ("imported at", lambda value: str(value)[:19]),
    "device_name": ("device", str),
    "compute_capability": ("compute capability", str),
    "sm_count": ("SMs", display.number),
    "sm_clock_hz": ("SM clock", display.frequency),
    "max_warps_per_sm": ("max warps per SM", display.number),
    "sha256": ("sha256", str),
}


def _import_fields(info: dict) -> list[tuple[str, str]]:
    return [
        (label, formatter(info[key]))
        for key, (label, formatter) in _SHOWN_FIELDS.items()
        if info.get(key) not in (None, "", {}, [])
    ]


def rm_command(
    import_ids: Annotated[list[int], typer.Argument(help="Import ids to delete.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete imports and everything they hold."""
    store = open_store(db)
    for import_id in import_ids:  # all known first: a typo in the third id must not leave two deleted
        store.get_import(import_id)
    for import_id in import_ids:
        store.delete_import(import_id)
    if as_json:
        print_json({"deleted": import_ids})
    else:
        console.print(
            f"deleted import{'s' if len(import_ids) > 1 else ''} {', '.join(map(str, import_ids))}", markup=False
        )
