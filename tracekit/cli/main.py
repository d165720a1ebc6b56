"""The `tracekit` entry point: one app, one module per group of subcommands."""

from __future__ import annotations

import ast
import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:  # Typer vendors Click as typer._click: its groups take and return these, not the `click` package's
    from typer._click import Command, Context, HelpFormatter

from tracekit.allocator import return_freed_pages
from tracekit.errors import StoreError, TracekitError, one_line
from tracekit.scratch import exit_on_termination, remove_own

# name: (module in tracekit.cli, function). A command's module (polars, SQLAlchemy, the engine, plotly...) is
# imported only when that command runs: `tracekit --help` lists them from their docstrings read as text.
COMMANDS: dict[str, tuple[str, str]] = {
    "import": ("store_commands", "import_command"),
    "ls": ("store_commands", "ls_command"),
    "show": ("store_commands", "show_command"),
    "rm": ("store_commands", "rm_command"),
    "analyze": ("analyze_command", "analyze_command"),
    "summary": ("summary_command", "summary_command"),
    "occupancy": ("occupancy_command", "occupancy_command"),
    "predict": ("predict_command", "predict_command"),
    "serve": ("serve_command", "serve_command"),
    "report": ("report_command", "report_command"),
    "compare": ("compare_command", "compare_command"),
    "demo": ("demo_command", "demo_command"),
    "header": ("header_command", "header_command"),
    "export": ("export_command", "export_command"),
    "calibrate": ("calibrate_command", "calibrate_command"),
    "ceilings": ("ceilings_command", "ceilings_command"),
    "step": ("step_command", "step_command"),
    "job": ("job_command", "job_command"),
    "lines": ("lines_command", "lines_command"),
    "features": ("features_command", "features_command"),
    "diff": ("features_command", "diff_command"),
    "critical-path": ("features_command", "critical_path_command"),
}


def command_help(name: str) -> str:
    """The command function's docstring, read from its module's source without importing it."""
    module, function = COMMANDS[name]
    tree = ast.parse((Path(__file__).parent / f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return ast.get_docstring(node) or ""
    return ""


def load_command(name: str) -> Command:
    """The real command: its module imported, built by Typer as if registered on the app."""
    module, function = COMMANDS[name]
    single = typer.Typer(pretty_exceptions_enable=False, add_completion=False)
    single.command(name)(getattr(importlib.import_module(f"tracekit.cli.{module}"), function))
    return typer.main.get_command(single)


class LazyGroup(TyperGroup):
    """Typer's group with commands loaded on first use; the help listing shows their docstrings only."""

    listing = False

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name not in COMMANDS:
            return None
        if self.listing:
            return TyperCommand(cmd_name, help=command_help(cmd_name))
        return load_command(cmd_name)

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False


app = typer.Typer(
    name="tracekit",
    cls=LazyGroup,
    help="Reads GPU profiler output into one store and explains why a kernel is as fast as it is.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        from tracekit.cli.common import console

        console.print(f"tracekit {version('tracekit')}", markup=False)
        raise typer.Exit()


@app.callback()
def _options(
    show_version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Reads GPU profiler output into one store and explains why a kernel is as fast as it is."""


def main() -> None:
    """Run the app; user mistakes become one line on stderr and exit code 2, never a traceback.

    A store that is locked or unreachable is such a line too; SIGTERM/SIGHUP end the command like Ctrl-C, so
    temporary files are removed on the way out. TRACEKIT_DEBUG=1 lets unexpected errors show their traceback.
    """
    exit_on_termination()
    return_freed_pages()  # before any command loads polars: a trace's parse does not stay in the replay's peak
    try:
        app()
    except TracekitError as exc:
        _err(f"tracekit: error: {one_line(exc)}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _err("tracekit: interrupted")
        sys.exit(130)
    except Exception as exc:
        driver_errors = sys.modules.get("sqlalchemy.exc")  # loaded by any command that opened a store
        if driver_errors is None or not isinstance(exc, driver_errors.OperationalError):
            raise
        if os.environ.get("TRACEKIT_DEBUG"):
            raise
        from tracekit.store.engine import driver_error  # SQLAlchemy is loaded by now; `--help` never pays for it

        _err(f"tracekit: error: {one_line(driver_error(None, exc))}")
        sys.exit(StoreError.exit_code)
    finally:
        remove_own()


def _err(line: str) -> None:
    from tracekit.cli.common import err_console

    err_console.print(line)


if __name__ == "__main__":
    main()
