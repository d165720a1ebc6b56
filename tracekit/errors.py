"""User-facing errors: one clear line, no traceback."""

from __future__ import annotations


def one_line(text: object) -> str:
    """A message on one line: a file name or a driver message with a line break must not make two."""
    return " ".join(str(text).replace("\r", "\n").split("\n"))


class TracekitError(Exception):
    """A mistake in the user's input or request; the CLI prints it as one line and exits non-zero."""

    exit_code = 2


class InputError(TracekitError):
    """An input file that cannot be read; names the file and, where known, the line and column."""

    def __init__(self, path: str, message: str, line: int | None = None, column: int | str | None = None):
        where = str(path)
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}" if isinstance(column, int) else f" (column {column!r})"
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.column, self.message = str(path), line, column, message


class NotFoundError(TracekitError):
    """An id or name that the store does not hold."""


class StoreError(TracekitError):
    """The store cannot do what was asked right now: locked by another writer, unreachable, read-only."""
