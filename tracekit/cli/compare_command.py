"""`tracekit compare A B`: two versions of a kernel side by side, and regression gates for CI.

Exit codes: 0 when every gate passes (or none is given), 1 when a gate fails or cannot be evaluated (its metric
is missing on a side), 2 for a user mistake (bad gate syntax, unknown id, unreadable file).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from tracekit.analysis.source_line_changes import LineChanges
from tracekit.api import (
    LaunchAnalysis,
    analyze_stored,
    compare_launches,
    evaluate_gate,
    launch_aggregates,
    match_launches,
    parse_gate,
    source_line_changes,
)
from tracekit.cli.common import (
    DbOption,
    JsonOption,
    NamesOption,
    SafeConsole,
    console,
    err_console,
    json_text,
    open_store,
    print_table,
)
from tracekit.cli.report_command import OutputOption, write_output
from tracekit.errors import TracekitError
from tracekit.format import NameStyle, kernel_name
from tracekit.present.comparison import ComparedPair, comparison_table, gate_message, pair_heading, side_launch
from tracekit.present.source_lines import changes_json, changes_sentence, changes_tables
from tracekit.selection import resolve_launches

DEFAULT_HTML_PATH = Path("tracekit-compare.html")
SCHEMA = "tracekit.comparison/1"


class CompareFormat(StrEnum):
    text = "text"
    html = "html"
    md = "md"
    json = "json"


def _first_views(store, results: Sequence[LaunchAnalysis]) -> dict[str, Any] | None:
    """The figure frames of the launch that stands for the side (`present.comparison.side_launch`), where traced."""
    launch = side_launch(results)
    if launch is None or launch.warps is None or launch.launch_id is None:
        return None
    return launch_aggregates(store, launch.launch_id)


def _line_changes(
    store, results_a: Sequence[LaunchAnalysis], results_b: Sequence[LaunchAnalysis]
) -> LineChanges | None:
    """The two sides' launches (`side_launch`) by source line, where both have source samples."""
    launch_a, launch_b = side_launch(results_a), side_launch(results_b)
    if launch_a is None or launch_b is None or launch_a.launch_id is None or launch_b.launch_id is None:
        return None
    return source_line_changes(store, launch_a.launch_id, launch_b.launch_id, (launch_a, launch_b))


def _print_text(pairs: list[ComparedPair], gate_messages: list[tuple[bool, str]], console: Console) -> None:
    for pair in pairs:
        table = comparison_table(pair.comparison)
        console.print(Text(pair_heading(pair), style="bold"))
        console.print(Text(f"A = {pair.reference_a}, B = {pair.reference_b}"))
        print_table(table, console, title=False)
        if pair.lines is not None:  # A/B by source line
            console.print(Text(changes_sentence(pair.lines)))
            for lines in changes_tables(pair.lines):
                if lines.rows:
                    print_table(lines, console)
    for failed, message in gate_messages:
        console.print(Text(message, style="bold red" if failed else "green"))


def compare_command(
    a: Annotated[str, typer.Argument(help="Side A: a file, an import id (7, import:7) or a launch id (launch:12).")],
    b: Annotated[str, typer.Argument(help="Side B, as A.")],
    kernel_a: Annotated[str | None, typer.Option("--kernel-a", help="A's kernel (exact name or a part of it).")] = None,
    kernel_b: Annotated[str | None, typer.Option("--kernel-b", help="B's kernel (default: --kernel-a).")] = None,
    fail_if: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-if", help="Gate, e.g. 'duration_ns>+5%' (B over 5% above A); repeatable; exit 1 on failure."
        ),
    ] = None,
    fmt: Annotated[CompareFormat, typer.Option("--format", help="text (a table), html, md or json.")] = (
        CompareFormat.text
    ),
    output: OutputOption = None,
    names: NamesOption = NameStyle.base,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Compare A with B: duration, throughput, occupancy, warp latency, Little's law, tail, verdict.

    A gate whose metric is missing on a side fails (exit 1): a CI gate must not pass by not looking."""
    if as_json:
        if fmt not in (CompareFormat.text, CompareFormat.json):
            raise TracekitError(f"--json and --format {fmt.value} disagree: give one of them")
        fmt = CompareFormat.json
    gates = [parse_gate(text) for text in fail_if or []]  # bad syntax stops here, before anything is imported
    store = open_store(db)
    launches_a, launches_b = resolve_launches(store, a), resolve_launches(store, b)
    pairs = []
    for group_a, group_b in match_launches(launches_a, launches_b, kernel_a, kernel_b):
        results_a, results_b = analyze_stored(store, group_a), analyze_stored(store, group_b)
        pair = ComparedPair(a, b, compare_launches(results_a, results_b), results_a, results_b, names=names)
        if fmt is CompareFormat.html:
            pair.views_a, pair.views_b = _first_views(store, results_a), _first_views(store, results_b)
        pair.lines = _line_changes(store, results_a, results_b)
        pairs.append(pair)

    gate_results = [(pair, evaluate_gate(pair.comparison, gate)) for pair in pairs for gate in gates]
    prefix = len(pairs) > 1
    gate_messages = [
        (
            result.failed or result.change is None,
            (f"{kernel_name(pair.comparison.kernel_a, names)}: " if prefix else "") + gate_message(result),
        )
        for pair, result in gate_results
    ]

    if fmt is CompareFormat.text and output is not None:
        with open(output, "w", encoding="utf-8") as handle:
            # a file: tables at their natural width, control characters of kernel names escaped, as on stdout
            _print_text(pairs, gate_messages, SafeConsole(file=handle, soft_wrap=True))
    elif fmt is CompareFormat.text:
        _print_text(pairs, gate_messages, console)
    else:
        for failed, message in gate_messages:
            err_console.print(Text(message, style="bold red" if failed else ""))
        if fmt is CompareFormat.json:
            write_output(
                json_text(
                    {
                        "schema": SCHEMA,
                        "pairs": [
                            {
                                "reference_a": p.reference_a,
                                "reference_b": p.reference_b,
                                "launch_ids_a": [r.launch_id for r in p.results_a],
                                "launch_ids_b": [r.launch_id for r in p.results_b],
                                "comparison": p.comparison.to_dict(),
                                "source_lines": None if p.lines is None else changes_json(p.lines),
                            }
                            for p in pairs
                        ],
                        "gates": [
                            {
                                "gate": r.gate.text,
                                "failed": failed,
                                "evaluated": r.change is not None,
                                "change": r.change,
                                "message": message,
                            }
                            for (_, r), (failed, message) in zip(gate_results, gate_messages, strict=True)
                        ],
                    }
                ),
                output,
                None,
            )
        elif fmt is CompareFormat.md:
            from tracekit.reports.markdown import compare_markdown

            write_output(compare_markdown(pairs, gate_messages), output, None)
        else:
            from tracekit.reports.html import compare_html

            write_output(compare_html(pairs, gate_messages), output, DEFAULT_HTML_PATH)
    if any(failed for failed, _ in gate_messages):
        raise typer.Exit(1)
