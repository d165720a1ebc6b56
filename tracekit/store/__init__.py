"""The normalized store (SQLite by default, PostgreSQL for teams)."""

from tracekit.store.store import ImportResult, Store, file_sha256

__all__ = ["ImportResult", "Store", "file_sha256"]
