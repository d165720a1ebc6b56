"""Which store to open (`--db`, `TRACEKIT_DB`, or the embedded SQLite file) and bringing its schema up to date."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import ArgumentError, OperationalError

from tracekit.errors import TracekitError
from tracekit.store.schema import SCHEMA_REVISION

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def default_url() -> str:
    """The embedded store: a SQLite file in the user's data directory (XDG on Linux)."""
    data_dir = Path(platformdirs.user_data_dir("tracekit", appauthor=False))
    data_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{data_dir / 'tracekit.sqlite'}"


def resolve_url(db: str | None = None) -> str:
    """`--db` wins over `TRACEKIT_DB`, which wins over the embedded default. A bare path means a SQLite file."""
    url = db or os.environ.get("TRACEKIT_DB") or default_url()
    if "://" not in url:
        url = f"sqlite:///{Path(url).expanduser().resolve()}"
    if url.startswith(("postgresql://", "postgres://")):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def make_engine(url: str) -> Engine:
    try:
        engine = create_engine(url)
    except (ArgumentError, ImportError) as exc:
        raise TracekitError(f"cannot use store URL {url!r}: {exc}") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def migrate(engine: Engine) -> None:
    """Upgrade the store's schema to the version this code expects (creates it when empty)."""
    try:
        if current_revision(engine) == SCHEMA_REVISION:
            return
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except OperationalError as exc:
        raise TracekitError(
            f"cannot open store {engine.url.render_as_string(hide_password=True)}: "
            f"{str(exc.orig).strip().splitlines()[0]}"
        ) from None
