"""The `tracekit` entry point: one app, one module per group of subcommands."""

from __future__ import annotations

import sys

import typer

from tracekit.cli import (
    analyze_command,
    compare_command,
    demo_command,
    header_command,
    occupancy_command,
    report_command,
    serve_command,
    store_commands,
)
from tracekit.cli.common import err_console
from tracekit.errors import TracekitError

app = typer.Typer(
    name="tracekit",
    help="Reads GPU profiler output into one store and explains why a kernel is as fast as it is.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("import")(store_commands.import_command)
app.command("ls")(store_commands.ls_command)
app.command("show")(store_commands.show_command)
app.command("rm")(store_commands.rm_command)
app.command("analyze")(analyze_command.analyze_command)
app.command("occupancy")(occupancy_command.occupancy_command)
app.command("serve")(serve_command.serve_command)
app.command("report")(report_command.report_command)
app.command("compare")(compare_command.compare_command)
app.command("demo")(demo_command.demo_command)
app.command("header")(header_command.header_command)


def main() -> None:
    """Run the app; user mistakes become one line on stderr and exit code 2, never a traceback."""
    try:
        app()
    except TracekitError as exc:
        err_console.print(f"tracekit: error: {exc}", markup=False)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("tracekit: interrupted", markup=False)
        sys.exit(130)


if __name__ == "__main__":
    main()
