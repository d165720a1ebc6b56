"""The one way a reader opens an SQLite profile (Nsight Systems and nvprof exports): immutable and read-only, so
SQLite takes no locks and writes nothing beside it (no -wal/-shm files, even for a file left in WAL mode), and the
input is never changed; SQLite's errors become one InputError line naming the file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tracekit.errors import InputError

T = TypeVar("T")


def read_sqlite(path: Path, what: str, body: Callable[[sqlite3.Connection, Path], T]) -> T:
    """`body(connection, path)` over the file opened read-only; `what` names the format for the error line."""
    path = Path(path)
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise InputError(str(path), f"cannot open as SQLite: {exc}") from None
    try:
        return body(connection, path)
    except sqlite3.Error as exc:
        raise InputError(str(path), f"not a readable {what}: {exc}") from None
    finally:
        connection.close()
