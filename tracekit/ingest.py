"""A file's way into the store: parse it with its importer, then write it in one transaction."""

from __future__ import annotations

from pathlib import Path

from tracekit.importers import read_file
from tracekit.store import ImportResult, Store, file_sha256


def ingest(
    store: Store, path: str | Path, fmt: str | None = None, name: str | None = None, **options
) -> tuple[ImportResult, list[str]]:
    """Import one file; returns the result and the importer's warnings. A known sha256 skips the parse."""
    path = Path(path)
    sha256 = file_sha256(path) if path.is_file() else None
    if sha256 is not None and (existing := store.find_by_sha256(sha256)) is not None:
        return store.existing_result(existing), []
    parsed = read_file(path, fmt, **options)
    return store.add_import(parsed, path, name=name, sha256=sha256), parsed.warnings
