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

    @classmethod
    def from_driver(cls, store_url: str | None, exc: BaseException) -> StoreError:
        """One line from a driver's OperationalError; SQLite's "database is locked" says what to do about it."""
        original = getattr(exc, "orig", None) or exc
        lines = str(original).strip().splitlines()
        first = lines[0] if lines else type(original).__name__
        where = f"store {store_url}" if store_url else "the store"
        if "database is locked" in first or "database table is locked" in first:
            from tracekit.store.engine import busy_timeout_ms

            return cls(
                f"{where} is locked by another process that is writing to it (waited {busy_timeout_ms() / 1000:g} s); "
                "try again when that import or delete has finished"
            )
        return cls(f"{where}: {first}")
