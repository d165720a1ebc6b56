"""The `tracekit` entry point: one app, one module per group of subcommands."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from sqlalchemy.exc import OperationalError

from tracekit.cli import (
    analyze_command,
    compare_command,
    demo_command,
    export_command,
    header_command,
    occupancy_command,
    report_command,
    serve_command,
    store_commands,
    summary_command,
)
from tracekit.cli.common import console, err_console
from tracekit.errors import StoreError, TracekitError, one_line
from tracekit.scratch import exit_on_termination

app = typer.Typer(
    name="tracekit",
    help="Reads GPU profiler output into one store and explains why a kernel is as fast as it is.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        console.print(f"tracekit {version('tracekit')}", markup=False)
        raise typer.Exit()


@app.callback()
def _options(
    show_version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Reads GPU profiler output into one store and explains why a kernel is as fast as it is."""


app.command("import")(store_commands.import_command)
app.command("ls")(store_commands.ls_command)
app.command("show")(store_commands.show_command)
app.command("rm")(store_commands.rm_command)
app.command("analyze")(analyze_command.analyze_command)
app.command("summary")(summary_command.summary_command)
app.command("occupancy")(occupancy_command.occupancy_command)
app.command("serve")(serve_command.serve_command)
app.command("report")(report_command.report_command)
app.command("compare")(compare_command.compare_command)
app.command("demo")(demo_command.demo_command)
app.command("header")(header_command.header_command)
app.command("export")(export_command.export_command)


def main() -> None:
    """Run the app; user mistakes become one line on stderr and exit code 2, never a traceback.

    A store that is locked or unreachable is such a line too; SIGTERM/SIGHUP end the command like Ctrl-C, so
    temporary files are removed on the way out. TRACEKIT_DEBUG=1 lets unexpected errors show their traceback.
    """
    exit_on_termination()
    try:
        app()
    except TracekitError as exc:
        err_console.print(f"tracekit: error: {one_line(exc)}")
        sys.exit(exc.exit_code)
    except OperationalError as exc:
        if os.environ.get("TRACEKIT_DEBUG"):
            raise
        err_console.print(f"tracekit: error: {one_line(StoreError.from_driver(None, exc))}")
        sys.exit(StoreError.exit_code)
    except KeyboardInterrupt:
        err_console.print("tracekit: interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
