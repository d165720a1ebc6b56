"""`tracekit features`, `tracekit diff` and `tracekit critical-path`: what Meta's Holistic Trace Analysis shows of
a trace (queue lengths, copy bandwidth, collectives, launch delays, kernel sequences, an operator diff, the critical
path as a Perfetto trace), through the door (`tracekit.api`) and worded by `tracekit.present.trace_features`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tracekit import format as fmt
from tracekit.cli.common import DbOption, JsonOption, busy, console, json_text, open_store, print_json, print_table
from tracekit.errors import TracekitError
from tracekit.present import trace_features as present

SourceArgument = Annotated[
    str, typer.Argument(help="A PyTorch profiler trace, an nsys SQLite export, or a stored import (import:3).")
]


def features_command(
    source: SourceArgument,
    small_kernel: Annotated[
        str, typer.Option("--small-kernel", help="Kernels shorter than this form fusion candidates (20us).")
    ] = "20us",
    top: Annotated[int, typer.Option("--top", help="Kernel sequences to list.")] = 10,
    series: Annotated[
        bool, typer.Option("--series", help="With --json: the queue-length and bandwidth time series too.")
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """HTA's trace analyses: queue length per stream, copy bandwidth, collectives with their metadata, launch
    delays per operator, repeated small-kernel sequences (fusion candidates)."""
    from tracekit.api import trace_features

    small_ns = fmt.parse_duration(small_kernel, "--small-kernel")
    store = open_store(db) if db is not None or _is_import(source) else None
    with busy(f"reading {source}"):
        found = trace_features.features_of(store, source, small_ns, top)
    if as_json:
        print_json(present.features_json(found, series))
        return
    console.print(f"{found.source or source}" + (f", rank {found.rank}" if found.rank is not None else ""))
    for table in present.feature_tables(found):
        console.print()
        print_table(table)


def diff_command(
    before: Annotated[str, typer.Argument(help="The trace (or import) without the change.")],
    after: Annotated[str, typer.Argument(help="The trace (or import) with the change.")],
    top: Annotated[int, typer.Option("--top", help="Operators to list.")] = present.DIFF_ROWS,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Operator-level diff of two traces (HTA's TraceDiff): operators added, removed, and changed in count and
    time."""
    from tracekit.api import trace_features

    store = open_store(db) if db is not None or _is_import(before) or _is_import(after) else None
    with busy("reading both traces"):
        diff = trace_features.diff_of(store, before, after)
    if as_json:
        print_json(present.diff_json(diff))
        return
    print_table(present.diff_table(diff, top))


def critical_path_command(
    source: SourceArgument,
    output: Annotated[Path, typer.Option("--output", "-o", help="The Chrome trace (JSON) to write.")],
    step: Annotated[str | None, typer.Option("--step", help="The range that marks a step (default: found).")] = None,
    db: DbOption = None,
) -> None:
    """The representative step's critical path written as a Chrome trace to open in ui.perfetto.dev: the step's
    activities, calls and ranges, the path's links on a track of their own, each activity on it flagged."""
    from tracekit.api import trace_features

    store = open_store(db) if db is not None or _is_import(source) else None
    with busy(f"reading {source}"):
        trace = trace_features.critical_path_trace_of(store, source, step)
    try:
        output.write_text(json_text(trace), encoding="utf-8")
    except OSError as exc:
        raise TracekitError(f"{output}: cannot write the trace: {exc.strerror}") from None
    other = trace["otherData"]
    links = other["critical_path_links"] if isinstance(other, dict) else 0
    console.print(f"Wrote {output}: {fmt.plural(int(links), 'critical path link')}; open it in ui.perfetto.dev")


def _is_import(source: str) -> bool:
    from tracekit.steps import is_import_ref

    return is_import_ref(source)
