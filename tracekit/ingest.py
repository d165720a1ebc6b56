"""A file's way into the store: parse it with its importer, check its values, then write it in one transaction.

Paths are literal (a file named `a*.csv` is that file, never a pattern). Whatever a reader raises on a hostile
file becomes one `InputError` line naming the file (set TRACEKIT_DEBUG=1 to get the traceback instead).
A batch of files is all-or-nothing by default: every file joins one transaction, and the first bad file rolls
the whole batch back; `keep_going` gives each file its own transaction and reports each one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from tracekit.errors import InputError, TracekitError
from tracekit.host_events import HostEvents
from tracekit.importers import read_file
from tracekit.parsed import ParsedImport
from tracekit.scratch import remove_stale
from tracekit.store import ImportResult, Store, file_sha256
from tracekit.validate import check_values


def _one_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


def read_checked(path: Path, fmt: str | None = None, **options) -> ParsedImport:
    """Parse `path` and check its values; every failure is an `InputError` naming the file."""
    try:
        parsed = read_file(path, fmt, **options)
    except TracekitError:
        raise
    except MemoryError:
        raise InputError(str(path), "too large to read in this machine's memory") from None
    except RecursionError:
        raise InputError(str(path), "nested too deeply to read") from None
    except Exception as exc:  # a hostile file must not end in a traceback; TRACEKIT_DEBUG=1 shows it
        if os.environ.get("TRACEKIT_DEBUG"):
            raise
        raise InputError(
            str(path), f"cannot be read ({type(exc).__name__}: {_one_line(str(exc))[:300] or 'no detail'})"
        ) from None
    check_values(str(path), parsed)
    parsed.warnings = _bounded(parsed.warnings)
    return parsed


MAX_WARNINGS = 100
MAX_WARNING_CHARS = 1000


def _bounded(warnings: list[str]) -> list[str]:
    """Warnings as stored and printed: at most 100, each cut at 1,000 characters (a file can make one of its
    lines a warning, and a line can be megabytes long)."""
    cut = [
        w if len(w) <= MAX_WARNING_CHARS else f"{w[:MAX_WARNING_CHARS]}... ({len(w):,} characters)" for w in warnings
    ]
    if len(cut) > MAX_WARNINGS:
        cut = cut[:MAX_WARNINGS] + [f"... and {len(cut) - MAX_WARNINGS:,} more warnings"]
    return cut


def ingest(
    store: Store,
    path: str | Path,
    fmt: str | None = None,
    name: str | None = None,
    connection: Connection | None = None,
    **options,
) -> tuple[ImportResult, list[str]]:
    """Import one file; returns the result and the importer's warnings. A known sha256 skips the parse.

    With `connection` (from `Store.transaction()`), the file joins that transaction."""
    path = Path(path)
    remove_stale()
    if not path.is_file():
        raise InputError(str(path), "no such file" if not path.exists() else "not a regular file")
    try:
        sha256 = file_sha256(path)
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None
    if (existing := store.find_by_sha256(sha256, connection)) is not None:
        return store.existing_result(existing, connection), []
    parsed = read_checked(path, fmt, **options)
    events = host_timeline(path, parsed)
    if events is None:
        return store.add_import(parsed, path, name=name, sha256=sha256, connection=connection), parsed.warnings
    if connection is None:
        with store.transaction() as own:
            return _add_with_events(store, parsed, events, path, name, sha256, own), parsed.warnings
    return _add_with_events(store, parsed, events, path, name, sha256, connection), parsed.warnings


def host_timeline(path: Path, parsed: ParsedImport) -> HostEvents | None:
    """The trace's host timeline for the step analysis, from readers that have one (Kineto, Nsight Systems); a
    timeline the reader cannot make leaves a warning, not a failed import."""
    from tracekit.importers import formats

    reader = getattr(formats().get(parsed.format), "read_host_events", None)
    if reader is None:
        return None
    try:
        events: HostEvents = reader(path)
    except Exception as exc:  # the launches are read: the import goes on without the step analysis' timeline
        if os.environ.get("TRACEKIT_DEBUG"):
            raise
        parsed.warnings.append(f"no host timeline for `tracekit step` ({_one_line(str(exc))[:300]})")
        return None
    return events


def _add_with_events(
    store: Store,
    parsed: ParsedImport,
    events: HostEvents,
    path: Path,
    name: str | None,
    sha256: str,
    connection: Connection,
) -> ImportResult:
    """The import and its host timeline in one transaction."""
    from tracekit.store import host_events

    result = store.add_import(parsed, path, name=name, sha256=sha256, connection=connection)
    if result.created:
        host_events.save(connection, result.import_id, events)
    return result


@dataclass
class FileOutcome:
    """What became of one file of a batch."""

    path: Path
    result: ImportResult | None = None
    warnings: list[str] = field(default_factory=list)
    error: str | None = None  # one line, when the file was not imported
    rolled_back: bool = False  # read fine, but not kept: another file of the batch failed


class BatchError(TracekitError):
    """A batch stopped at a bad file; nothing of it was kept."""

    def __init__(self, message: str, outcomes: list[FileOutcome]):
        super().__init__(message)
        self.outcomes = outcomes


def ingest_batch(
    store: Store,
    paths: Sequence[str | Path],
    fmt: str | None = None,
    names: Sequence[str | None] | None = None,
    keep_going: bool = False,
    on_file: Callable[[Path], object] | None = None,
    **options,
) -> list[FileOutcome]:
    """Import several files: all or none (default), or each on its own with `keep_going`.

    All-or-none raises `BatchError` at the first bad file, after rolling back the files before it; with
    `keep_going` the outcomes list the failures, and the good files are kept."""
    files = [Path(p) for p in paths]
    names = list(names) if names is not None else [None] * len(files)
    outcomes: list[FileOutcome] = []
    if keep_going:
        for path, name in zip(files, names, strict=True):
            if on_file:
                on_file(path)
            try:
                result, warnings = ingest(store, path, fmt, name, **options)
                outcomes.append(FileOutcome(path, result, warnings))
            except TracekitError as exc:
                outcomes.append(FileOutcome(path, error=str(exc)))
        return outcomes
    try:
        with store.transaction() as connection:
            for path, name in zip(files, names, strict=True):
                if on_file:
                    on_file(path)
                result, warnings = ingest(store, path, fmt, name, connection=connection, **options)
                outcomes.append(FileOutcome(path, result, warnings))
    except IntegrityError:
        raise BatchError(
            "another process stored one of these files while this batch ran; nothing imported: run it again",
            outcomes,
        ) from None
    except TracekitError as exc:
        for outcome in outcomes:
            outcome.rolled_back = True
        failed = FileOutcome(files[len(outcomes)], error=str(exc)) if len(outcomes) < len(files) else None
        message = str(exc)
        if len(files) > 1:
            message += (
                f" (nothing imported: the batch of {len(files)} files is all or nothing; "
                "--keep-going imports the good ones)"
            )
        raise BatchError(message, outcomes + ([failed] if failed else [])) from None
    return outcomes
