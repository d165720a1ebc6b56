"""`tracekit lines`: which source lines of a launch hold its limiter, of what kind, and what fixing the top one buys."""

from __future__ import annotations

from typing import Annotated

import typer

from tracekit import format as fmt
from tracekit.cli.common import DbOption, JsonOption, console, open_store, print_json, print_table
from tracekit.errors import NotFoundError


def lines_command(
    launch: Annotated[int, typer.Argument(help="Launch id (tracekit show IMPORT lists them).", show_default=False)],
    top: Annotated[int, typer.Option("--top", help="Lines to show.")] = 10,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Source lines of a launch: the limiter's lines, each line's kind and stalls, what fixing the top one buys."""
    from tracekit.api import source_lines
    from tracekit.present.source_lines import HOW_TO_RECORD, lines_table, to_json

    store = open_store(db)
    if store.launches(launch_ids=[launch]).height == 0:
        raise NotFoundError(f"no launch with id {launch} in {store.url}")
    view = source_lines(store, launch, top=top)
    if view is None:
        raise NotFoundError(f"launch {launch} has no source samples: {HOW_TO_RECORD}")
    result = to_json(view.launch_id, view.kernel_name, view.result, view.files, view.duration_ns)
    if as_json:
        print_json(result)
        return
    console.print(
        f"Launch {launch}: {fmt.kernel_name(result['kernel_name'])}, "
        + fmt.plural(result["total_samples"], "warp sample")
    )
    if result["limiter"]:
        console.print(result["limiter"]["sentence"])
    if result["fix"] and result["fix"]["sentence"]:
        console.print(result["fix"]["sentence"])
    for note in result["notes"]:
        console.print(f"Note: {note}")
    print_table(lines_table(result["lines"]), title=False)
