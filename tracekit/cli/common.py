"""What every command shares: the store option, JSON output, progress bars that stay quiet when piped."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from datetime import date, datetime
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tracekit.store import Store

T = TypeVar("T")

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Store URL or SQLite path (default: $TRACEKIT_DB, else the embedded store)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def open_store(db: str | None) -> Store:
    return Store.open(db)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def json_text(value: Any) -> str:
    """What every `--json` prints: indented, dates as ISO text, no NaN."""
    return json.dumps(value, indent=2, default=_json_default, allow_nan=False) + "\n"


def print_json(value: Any) -> None:
    sys.stdout.write(json_text(value))


def progress(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a progress bar on a terminal; silent when stderr is not one."""
    items = list(items)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=not err_console.is_terminal,
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total or len(items))
        for item in items:
            yield item
            bar.advance(task)


def warn(message: str) -> None:
    err_console.print(f"tracekit: warning: {message}", markup=False)
