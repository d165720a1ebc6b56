"""Which store to open (`--db`, `TRACEKIT_DB`, or the embedded SQLite file) and bringing its schema up to date.

The first use of a new store runs the migrations; several processes doing that at once (a shell loop of
`tracekit import &`, gunicorn workers) are serialized: a PostgreSQL transaction-level advisory lock, and on
SQLite an exclusive `flock` on the store's folder (not on the store file: opening and closing a second handle
on it would drop SQLite's own locks, https://www.sqlite.org/howtocorrupt.html 2.2).

SQLite has one writer at a time, and its busy timeout makes a waiting writer give up after a fixed time however
long the other writer's work is, or at once where waiting could deadlock (a transaction that read first and
then wants to write, https://www.sqlite.org/lang_transaction.html). So tracekit's SQLite writers queue on the
same folder `flock` for as long as the writer before them needs (the kernel releases it when a process exits),
then take SQLite's write lock at once with `BEGIN IMMEDIATE`: contention between tracekit processes never fails
a write; the busy timeout is left for other programs that hold the file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs
from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.exc import ArgumentError, OperationalError

from tracekit.errors import StoreError, TracekitError
from tracekit.store.schema import SCHEMA_REVISION

if TYPE_CHECKING:
    from alembic.config import Config

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


def busy_timeout_ms() -> int:
    """How long a SQLite writer waits for another one to finish: $TRACEKIT_SQLITE_BUSY_TIMEOUT_MS, else 30 s."""
    try:
        return max(0, int(os.environ.get("TRACEKIT_SQLITE_BUSY_TIMEOUT_MS") or 30000))
    except ValueError:
        return 30000


def driver_error(store_url: str | None, exc: BaseException) -> StoreError:
    """One line from a driver's OperationalError; SQLite's "database is locked" says what to do about it."""
    original = getattr(exc, "orig", None) or exc
    lines = str(original).strip().splitlines()
    first = lines[0] if lines else type(original).__name__
    where = f"store {store_url}" if store_url else "the store"
    if "database is locked" in first or "database table is locked" in first:
        return StoreError(
            f"{where} is locked by another process that is writing to it (waited {busy_timeout_ms() / 1000:g} s); "
            "try again when that import or delete has finished"
        )
    return StoreError(f"{where}: {first}")


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    # first: switching to WAL needs a lock another process may hold
    cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms()}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
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
    from alembic.config import Config  # Alembic only to migrate: every command's start-up would pay for it

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def current_revision(engine: Engine | Connection) -> str | None:
    """The store's Alembic revision (None when it has none yet), read with one query: Alembic itself is loaded
    only when a migration runs."""
    if not isinstance(engine, Connection):
        with engine.connect() as connection:
            return current_revision(connection)
    if not inspect(engine).has_table("alembic_version"):
        return None
    versions = engine.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    if len(versions) > 1:  # several heads: let Alembic say what it makes of them
        from alembic.runtime.migration import MigrationContext

        return MigrationContext.configure(engine).get_current_revision()
    return versions[0] if versions else None


# This process's hold on each store folder's lock: threads queue on the RLock (a flock taken twice through two
# descriptors of one process would wait on itself), processes on the flock; `depth` lets a holder re-enter.
_FOLDER_LOCKS: dict[Path, tuple[threading.RLock, list[int]]] = {}
_FOLDER_LOCKS_GUARD = threading.Lock()


@contextmanager
def _sqlite_folder_lock(engine: Engine, missing_ok: bool = False) -> Iterator[None]:
    """An exclusive flock on the SQLite file's folder, held until the block ends (none for :memory:), waiting as
    long as another holder needs; re-entrant within a thread. `missing_ok`: a folder that cannot be opened
    (read-only, gone) gets no lock instead of an error, SQLite then says what is wrong."""
    database = engine.url.database
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock (SQLite's own busy timeout still applies)
        yield
        return
    if not database or database == ":memory:" or database.startswith("file:"):
        yield
        return
    folder = Path(database).resolve().parent
    with _FOLDER_LOCKS_GUARD:
        thread_lock, depth = _FOLDER_LOCKS.setdefault(folder, (threading.RLock(), [0]))
    with thread_lock:
        if depth[0]:  # this thread holds it already
            depth[0] += 1
            try:
                yield
            finally:
                depth[0] -= 1
            return
        try:
            descriptor = os.open(folder, os.O_RDONLY)
        except OSError as exc:
            if missing_ok:
                yield
                return
            raise StoreError(f"cannot open store {database}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            depth[0] = 1
            yield
        finally:
            depth[0] = 0
            os.close(descriptor)  # closing releases the lock


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """One write transaction, committed when the block ends and rolled back when it raises. On SQLite it waits
    for the writer before it (the folder lock) and then holds the write lock from its first statement on."""
    if engine.dialect.name != "sqlite":
        with engine.begin() as connection:
            yield connection
        return
    with _sqlite_folder_lock(engine, missing_ok=True), engine.begin() as connection:
        connection.exec_driver_sql("BEGIN IMMEDIATE")  # the driver begins lazily: this is the transaction's start
        yield connection


def _upgrade(connection: Connection) -> None:
    from alembic import command

    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def migrate(engine: Engine) -> None:
    """Upgrade the store's schema to the version this code expects (creates it when empty); one process at a
    time does it, and the others find it done."""
    try:
        if current_revision(engine) == SCHEMA_REVISION:
            return
        if engine.dialect.name == "postgresql":
            with engine.begin() as connection:
                # held until this transaction ends; keyed by schema, so stores in other schemas do not wait
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(hashtext('tracekit-migrate:' || current_schema()))")
                )
                if current_revision(connection) != SCHEMA_REVISION:
                    _upgrade(connection)
            return
        with _sqlite_folder_lock(engine) if engine.dialect.name == "sqlite" else _no_lock():
            if current_revision(engine) == SCHEMA_REVISION:
                return
            with engine.begin() as connection:
                _upgrade(connection)
            engine.dispose()  # a migration may have set per-connection pragmas (foreign_keys): start afresh
    except OperationalError as exc:
        error = driver_error(engine.url.render_as_string(hide_password=True), exc)
        message = str(error)
        raise StoreError(f"cannot open {message}" if "locked" not in message else message) from None


@contextmanager
def _no_lock() -> Iterator[None]:
    yield
