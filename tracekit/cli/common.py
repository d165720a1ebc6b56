"""What every command shares: the store option, JSON output, progress bars that stay quiet when piped."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import orjson
import typer
from rich.console import Console
from rich.segment import Segment

from tracekit.format import UNSAFE_CHARACTERS as UNSAFE_CHARACTERS
from tracekit.format import NameStyle, escape_control

if TYPE_CHECKING:
    from tracekit.present.sections import Table
    from tracekit.store import Store

T = TypeVar("T")

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Store URL or SQLite path (default: $TRACEKIT_DB, else the embedded store)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout (exact values).")]
NamesOption = Annotated[
    NameStyle,
    typer.Option(
        "--names",
        help="Kernel names: base (the function name, as ncu --print-kernel-base function) or full (the whole "
        "signature). Mangled names are demangled either way.",
    ),
]

# Wider than any table a command prints: a table measured against it takes its natural width.
UNBOUNDED_WIDTH = 1 << 20


class SafeConsole(Console):
    """A console for text from input files: no markup, no emoji codes, and every control character in the
    text escaped at output (Rich's own styling, added after, is untouched). Tables built from kernel names
    are safe without each caller escaping. Piped or redirected, a table is printed at its natural width: a file
    has no terminal width to fit, and a cell cut to "kern…" loses the name a script greps for."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        table_module = sys.modules.get("rich.table")  # not imported by a command that prints no table
        tables = [o for o in objects if table_module is not None and isinstance(o, table_module.Table)]
        if not tables or self.is_terminal:
            super().print(*objects, **kwargs)
            return
        from rich.measure import Measurement

        options = self.options.update(width=UNBOUNDED_WIDTH)
        natural = max(Measurement.get(self, options, table).maximum for table in tables)
        width = self._width  # print(width=) is capped at the console's width: widen the console for this print
        self.width = max(self.width, natural)
        try:
            super().print(*objects, **kwargs)
        finally:
            self._width = width

    def render_str(self, text: str, **kwargs: Any):
        # before Rich's Text drops some control characters (BEL, BS) silently: all of them are shown escaped
        return super().render_str(escape_control(text), **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(escape_control(segment.text), segment.style, None)
            for segment in buffer
        )


console = SafeConsole(soft_wrap=True)
err_console = SafeConsole(stderr=True, soft_wrap=True)


def open_store(db: str | None) -> Store:
    from tracekit.store import Store  # here, so that importing a command module does not load SQLAlchemy

    return Store.open(db)


def json_text(value: Any) -> str:
    """What every `--json` prints: indented, dates as ISO text, NaN as null. orjson, not the json module: a report
    of 10,000 launches is 140 MB of JSON, which the json module takes 7 s to write."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"


def print_table(table: Table, to: Console | None = None, title: bool = True) -> None:
    """A table `tracekit.present` decided, as a terminal table (cells as `Text`: never read as rich markup), its
    note under it."""
    from rich.table import Table as RichTable
    from rich.text import Text

    shown = RichTable(*table.columns, title=table.title if title else None)
    for row in table.rows:
        shown.add_row(*(Text(cell) for cell in row))
    (to or console).print(shown)
    if table.note:
        (to or console).print(Text(table.note))


def print_json(value: Any) -> None:
    sys.stdout.write(json_text(value))


def progress(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a progress bar on a terminal; silent when stderr is not one."""
    items = list(items)
    if not err_console.is_terminal:  # piped: no bar, and no rich.progress to import
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total or len(items))
        for item in items:
            yield item
            bar.advance(task)


@contextmanager
def busy(message: str) -> Iterator[None]:
    """A spinner with `message` on a terminal while a step without steps of its own runs; nothing when piped."""
    if not err_console.is_terminal:
        yield
        return
    with err_console.status(message):
        yield


def warn(message: str) -> None:
    err_console.print(f"tracekit: warning: {message}", markup=False)
