"""The normalized store's tables (SQLAlchemy 2). Changes go through an Alembic migration in `migrations/`."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

SCHEMA_REVISION = "0006"  # the Alembic head this code expects

# Metrics and warps arrive by the million; a foreign-key check per row more than doubles the time of a COPY, so
# these tables carry an index on launch_id instead, and `Store.delete_import` deletes their rows explicitly.
# Since 0005 a launch's warps and its full metric vector live in `bulk_chunks` (columnar); `metrics` keeps only
# the catalog's metrics (`tracekit.store.columnar.CATALOG_METRICS`) and `warps` stays empty (older stores are
# converted by migration 0005).
BULK_TABLES = ("metrics", "warps", "regions", "bulk_chunks")


class Base(DeclarativeBase):
    """The declarative base of the store's tables (its metadata is what Alembic compares against)."""

    if TYPE_CHECKING:
        # Each mapped class here declares a plain Table; SQLAlchemy types `__table__` as any FromClause (a join).
        __table__: ClassVar[Table]


class ImportRow(Base):
    """One imported file, with the device it was recorded on."""

    __tablename__ = "imports"
    __table_args__ = {"sqlite_autoincrement": True}  # ids are never reused after a delete (migration 0004)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(400))  # user label, defaults to the file name
    source_path: Mapped[str] = mapped_column(Text)
    format: Mapped[str] = mapped_column(String(40))
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    imported_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    tool: Mapped[str | None] = mapped_column(String(200))
    tool_version: Mapped[str | None] = mapped_column(String(200))
    device_name: Mapped[str | None] = mapped_column(String(200))
    compute_capability: Mapped[str | None] = mapped_column(String(10))
    sm_count: Mapped[int | None] = mapped_column(Integer)
    sm_clock_hz: Mapped[float | None] = mapped_column(Double)
    max_warps_per_sm: Mapped[int | None] = mapped_column(Integer)
    device_extra: Mapped[dict | None] = mapped_column(JSON)
    warnings: Mapped[list | None] = mapped_column(JSON)


class LaunchRow(Base):
    """One kernel launch."""

    __tablename__ = "launches"
    __table_args__ = {"sqlite_autoincrement": True}  # ids are never reused after a delete (migration 0004)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    import_id: Mapped[int] = mapped_column(ForeignKey("imports.id", ondelete="CASCADE"), index=True)
    launch_index: Mapped[int] = mapped_column(Integer)  # order within the import
    kernel_name: Mapped[str | None] = mapped_column(Text)
    mangled_name: Mapped[str | None] = mapped_column(Text)
    grid_x: Mapped[int | None] = mapped_column(BigInteger)
    grid_y: Mapped[int | None] = mapped_column(BigInteger)
    grid_z: Mapped[int | None] = mapped_column(BigInteger)
    block_x: Mapped[int | None] = mapped_column(Integer)
    block_y: Mapped[int | None] = mapped_column(Integer)
    block_z: Mapped[int | None] = mapped_column(Integer)
    registers_per_thread: Mapped[int | None] = mapped_column(Integer)
    static_smem_bytes: Mapped[int | None] = mapped_column(BigInteger)
    dynamic_smem_bytes: Mapped[int | None] = mapped_column(BigInteger)
    stream_id: Mapped[int | None] = mapped_column(BigInteger)
    context_id: Mapped[int | None] = mapped_column(BigInteger)
    process_id: Mapped[int | None] = mapped_column(BigInteger)
    device_id: Mapped[int | None] = mapped_column(Integer)
    correlation_id: Mapped[int | None] = mapped_column(BigInteger)
    source_launch_id: Mapped[str | None] = mapped_column(String(100))
    start_ns: Mapped[int | None] = mapped_column(BigInteger)
    end_ns: Mapped[int | None] = mapped_column(BigInteger)
    duration_ns: Mapped[float | None] = mapped_column(Double)
    nvtx_path: Mapped[str | None] = mapped_column(Text)


class MetricRow(Base):
    """One metric of a launch, in base units."""

    __tablename__ = "metrics"
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    launch_id: Mapped[int] = mapped_column(Integer)  # no foreign key: see BULK_TABLES
    section: Mapped[str | None] = mapped_column(String(200))
    name: Mapped[str] = mapped_column(String(400))
    unit: Mapped[str | None] = mapped_column(String(100))
    value: Mapped[float | None] = mapped_column(Double)
    text_value: Mapped[str | None] = mapped_column(Text)
    kind: Mapped[str | None] = mapped_column(String(10))
    __table_args__ = (Index("ix_metrics_launch_name", "launch_id", "name"),)


class WarpRow(Base):
    """One warp's residency on an SM, from clock reads inside the kernel."""

    __tablename__ = "warps"
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    launch_id: Mapped[int] = mapped_column(Integer, index=True)  # no foreign key: see BULK_TABLES
    sm_id: Mapped[int] = mapped_column(Integer)
    block_id: Mapped[int] = mapped_column(BigInteger)
    warp_in_block: Mapped[int] = mapped_column(Integer)
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    start_cycles: Mapped[int | None] = mapped_column(BigInteger)
    end_cycles: Mapped[int | None] = mapped_column(BigInteger)


class BulkChunkRow(Base):
    """A run of rows of one kind ("warps", "metrics") as an Arrow IPC stream (zstd): the bulk of a launch stays
    inside the store's own transaction and file, and reads back into polars without a Python object per row
    (`tracekit.store.columnar`)."""

    __tablename__ = "bulk_chunks"
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    # The launches whose rows it holds: one for warps; for metrics a run of launches of one import (a launch's
    # few thousand metrics are too few for a chunk of their own), its rows carrying their launch_id.
    launch_id: Mapped[int] = mapped_column(Integer)  # the first (no foreign key: see BULK_TABLES)
    last_launch_id: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))
    chunk_index: Mapped[int] = mapped_column(Integer)
    row_count: Mapped[int] = mapped_column(BigInteger)
    encoding: Mapped[str] = mapped_column(String(40))  # "arrow-ipc-zstd"
    data: Mapped[bytes] = mapped_column(LargeBinary)
    __table_args__ = (Index("ix_bulk_chunks_kind_launch", "kind", "launch_id", "last_launch_id"),)


class RegionRow(Base):
    """One named region instance of one warp, recorded inside the kernel (times as recorded: ns and/or cycles)."""

    __tablename__ = "regions"
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    launch_id: Mapped[int] = mapped_column(Integer, index=True)  # no foreign key: see BULK_TABLES
    sm_id: Mapped[int | None] = mapped_column(Integer)
    block_id: Mapped[int] = mapped_column(BigInteger)
    warp_in_block: Mapped[int] = mapped_column(Integer)
    region: Mapped[str] = mapped_column(Text)
    depth: Mapped[int] = mapped_column(Integer)
    start_ns: Mapped[int | None] = mapped_column(BigInteger)
    end_ns: Mapped[int | None] = mapped_column(BigInteger)
    start_cycles: Mapped[int | None] = mapped_column(BigInteger)
    end_cycles: Mapped[int | None] = mapped_column(BigInteger)


class NvtxRangeRow(Base):
    """An NVTX range from an Nsight Systems export."""

    __tablename__ = "nvtx_ranges"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    import_id: Mapped[int] = mapped_column(ForeignKey("imports.id", ondelete="CASCADE"), index=True)
    name: Mapped[str | None] = mapped_column(Text)
    domain: Mapped[str | None] = mapped_column(Text)
    start_ns: Mapped[int | None] = mapped_column(BigInteger)
    end_ns: Mapped[int | None] = mapped_column(BigInteger)
    thread_id: Mapped[int | None] = mapped_column(BigInteger)


class MemcpyRow(Base):
    """A memory copy from an Nsight Systems export."""

    __tablename__ = "memcpys"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    import_id: Mapped[int] = mapped_column(ForeignKey("imports.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str | None] = mapped_column(String(40))
    size_bytes: Mapped[int | None] = mapped_column(BigInteger)
    start_ns: Mapped[int | None] = mapped_column(BigInteger)
    end_ns: Mapped[int | None] = mapped_column(BigInteger)
    stream_id: Mapped[int | None] = mapped_column(BigInteger)
    device_id: Mapped[int | None] = mapped_column(Integer)


class AnalysisResultRow(Base):
    """A launch's analysis as the engine last computed it, so reports and the dashboard read it instead of
    recomputing. Valid while `engine_version` and `context_digest` (the launches its pairing and sweep looked at)
    still match; otherwise recomputed and replaced."""

    __tablename__ = "analysis_results"
    launch_id: Mapped[int] = mapped_column(ForeignKey("launches.id", ondelete="CASCADE"), primary_key=True)
    engine_version: Mapped[str] = mapped_column(String(40))
    context_digest: Mapped[str] = mapped_column(String(64))
    result_json: Mapped[str] = mapped_column(Text)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class HostEventChunkRow(Base):
    """A trace's host timeline for the step analysis (`tracekit.host_events`: GPU activities, API calls, CPU
    ranges) as Arrow IPC chunks per import (migration 0006); deleted with its import."""

    __tablename__ = "host_event_chunks"
    __table_args__ = (Index("ix_host_event_chunks_import", "import_id", "frame", "chunk_index"),)
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True)
    import_id: Mapped[int] = mapped_column(ForeignKey("imports.id", ondelete="CASCADE"))
    frame: Mapped[str] = mapped_column(String(20))  # gpu | calls | ranges | profiler_options
    chunk_index: Mapped[int] = mapped_column(Integer)
    row_count: Mapped[int] = mapped_column(BigInteger)
    rank: Mapped[int | None] = mapped_column(Integer)  # the trace's rank in a distributed job
    encoding: Mapped[str] = mapped_column(String(40))
    data: Mapped[bytes] = mapped_column(LargeBinary)
