"""The normalized store's tables (SQLAlchemy 2). Changes go through an Alembic migration in `migrations/`."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

SCHEMA_REVISION = "0008"  # the Alembic head this code expects

# Metrics and warps arrive by the million; a foreign-key check per row more than doubles the time of a COPY, so
# these tables carry an index on launch_id instead, and `Store.delete_import` deletes their rows explicitly.
# Since 0005 a launch's warps and its full metric vector live in `bulk_chunks` (columnar); `metrics` keeps only
# the catalog's metrics (`tracekit.store.columnar.CATALOG_METRICS`) and `warps` stays empty (older stores are
# converted by migration 0005).
BULK_TABLES = ("metrics", "warps", "regions", "bulk_chunks", "source_samples", "source_files")

# What Alembic compares against; the tables are SQLAlchemy Core (no ORM is loaded: a command that only reads the
# store does not pay for the mapper).
metadata = MetaData()


# One imported file, with the device it was recorded on.
imports = Table(
    "imports",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(400), nullable=False),  # user label, defaults to the file name
    Column("source_path", Text, nullable=False),
    Column("format", String(40), nullable=False),
    Column("sha256", String(64), unique=True, nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("imported_at", DateTime(timezone=True), nullable=False),
    Column("tool", String(200)),
    Column("tool_version", String(200)),
    Column("device_name", String(200)),
    Column("compute_capability", String(10)),
    Column("sm_count", Integer),
    Column("sm_clock_hz", Double),
    Column("max_warps_per_sm", Integer),
    Column("device_extra", JSON),
    Column("warnings", JSON),
    sqlite_autoincrement=True,  # ids are never reused after a delete (migration 0004)
)


# One kernel launch.
launches = Table(
    "launches",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("import_id", ForeignKey("imports.id", ondelete="CASCADE"), index=True, nullable=False),
    Column("launch_index", Integer, nullable=False),  # order within the import
    Column("kernel_name", Text),
    Column("mangled_name", Text),
    Column("grid_x", BigInteger),
    Column("grid_y", BigInteger),
    Column("grid_z", BigInteger),
    Column("block_x", Integer),
    Column("block_y", Integer),
    Column("block_z", Integer),
    Column("registers_per_thread", Integer),
    Column("static_smem_bytes", BigInteger),
    Column("dynamic_smem_bytes", BigInteger),
    Column("stream_id", BigInteger),
    Column("context_id", BigInteger),
    Column("process_id", BigInteger),
    Column("device_id", Integer),
    Column("correlation_id", BigInteger),
    Column("source_launch_id", String(100)),
    Column("start_ns", BigInteger),
    Column("end_ns", BigInteger),
    Column("duration_ns", Double),
    Column("nvtx_path", Text),
    sqlite_autoincrement=True,  # ids are never reused after a delete (migration 0004)
)


# One metric of a launch, in base units.
metrics = Table(
    "metrics",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("launch_id", Integer, nullable=False),  # no foreign key: see BULK_TABLES
    Column("section", String(200)),
    Column("name", String(400), nullable=False),
    Column("unit", String(100)),
    Column("value", Double),
    Column("text_value", Text),
    Column("kind", String(10)),
    Index("ix_metrics_launch_name", "launch_id", "name"),
)


# One warp's residency on an SM, from clock reads inside the kernel.
warps = Table(
    "warps",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("launch_id", Integer, index=True, nullable=False),  # no foreign key: see BULK_TABLES
    Column("sm_id", Integer, nullable=False),
    Column("block_id", BigInteger, nullable=False),
    Column("warp_in_block", Integer, nullable=False),
    Column("start_ns", BigInteger, nullable=False),
    Column("end_ns", BigInteger, nullable=False),
    Column("start_cycles", BigInteger),
    Column("end_cycles", BigInteger),
)


# A run of rows of one kind ("warps", "metrics") as an Arrow IPC stream (zstd): the bulk of a launch stays inside the
# store's own transaction and file, and reads back into polars without a Python object per row
# (`tracekit.store.columnar`).
bulk_chunks = Table(
    "bulk_chunks",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    # The launches whose rows it holds: one for warps; for metrics a run of launches of one import (a launch's
    # few thousand metrics are too few for a chunk of their own), its rows carrying their launch_id.
    Column("launch_id", Integer, nullable=False),  # the first (no foreign key: see BULK_TABLES)
    Column("last_launch_id", Integer, nullable=False),
    Column("kind", String(20), nullable=False),
    Column("chunk_index", Integer, nullable=False),
    Column("row_count", BigInteger, nullable=False),
    Column("encoding", String(40), nullable=False),  # "arrow-ipc-zstd"
    Column("data", LargeBinary, nullable=False),
    Index("ix_bulk_chunks_kind_launch", "kind", "launch_id", "last_launch_id"),
)


# One named region instance of one warp, recorded inside the kernel (times as recorded: ns and/or cycles).
regions = Table(
    "regions",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("launch_id", Integer, index=True, nullable=False),  # no foreign key: see BULK_TABLES
    Column("sm_id", Integer),
    Column("block_id", BigInteger, nullable=False),
    Column("warp_in_block", Integer, nullable=False),
    Column("region", Text, nullable=False),
    Column("depth", Integer, nullable=False),
    Column("start_ns", BigInteger),
    Column("end_ns", BigInteger),
    Column("start_cycles", BigInteger),
    Column("end_cycles", BigInteger),
)


# One SASS instruction of a launch with its Source-page counters (`tracekit.parsed.SOURCE_SAMPLE_SCHEMA`; migration
# 0008). Few thousand rows per launch; no foreign key (see BULK_TABLES).
source_samples = Table(
    "source_samples",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("launch_id", Integer, index=True, nullable=False),
    Column("function", Text),
    Column("pc_offset", BigInteger),
    Column("sass", Text),
    Column("file", Text),
    Column("line", Integer),
    Column("inline_chain", Text),
    Column("samples", BigInteger),
    Column("stall_samples", Text),  # JSON object: stall reason -> warp-state samples
    Column("inst_executed", BigInteger),
    Column("thread_inst_executed", BigInteger),
    Column("thread_inst_executed_true", BigInteger),
    Column("l2_sectors_global", BigInteger),
    Column("l2_sectors_global_ideal", BigInteger),
    Column("l2_sectors_global_excess", BigInteger),
    Column("l1_requests_global", BigInteger),
    Column("shared_wavefronts", BigInteger),
    Column("shared_wavefronts_ideal", BigInteger),
    Column("shared_wavefronts_excess", BigInteger),
    Column("shared_conflicts_nway", Double),
    Column("divergent_branches", BigInteger),
    Column("address_space", String(20)),
    Column("operation", String(40)),
)


# The text of a source file a launch's samples point to, where the report embedded it (ncu --import-source yes).
source_files = Table(
    "source_files",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("launch_id", Integer, index=True, nullable=False),
    Column("path", Text, nullable=False),
    Column("text", Text),
)


# An NVTX range from an Nsight Systems export.
nvtx_ranges = Table(
    "nvtx_ranges",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("import_id", ForeignKey("imports.id", ondelete="CASCADE"), index=True, nullable=False),
    Column("name", Text),
    Column("domain", Text),
    Column("start_ns", BigInteger),
    Column("end_ns", BigInteger),
    Column("thread_id", BigInteger),
)


# A memory copy from an Nsight Systems export.
memcpys = Table(
    "memcpys",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("import_id", ForeignKey("imports.id", ondelete="CASCADE"), index=True, nullable=False),
    Column("kind", String(40)),
    Column("size_bytes", BigInteger),
    Column("start_ns", BigInteger),
    Column("end_ns", BigInteger),
    Column("stream_id", BigInteger),
    Column("device_id", Integer),
)


# A launch's analysis as the engine last computed it, so reports and the dashboard read it instead of recomputing.
# Valid while `engine_version` and `context_digest` (the launches its pairing and sweep looked at) still match;
# otherwise recomputed and replaced.
analysis_results = Table(
    "analysis_results",
    metadata,
    Column("launch_id", ForeignKey("launches.id", ondelete="CASCADE"), primary_key=True),
    Column("engine_version", String(40), nullable=False),
    Column("context_digest", String(64), nullable=False),
    Column("result_json", Text, nullable=False),
    Column("computed_at", DateTime(timezone=True), nullable=False),
)


# A trace's host timeline for the step analysis (`tracekit.host_events`: GPU activities, API calls, CPU ranges) as
# Arrow IPC chunks per import (migration 0006); deleted with its import.
host_event_chunks = Table(
    "host_event_chunks",
    metadata,
    Column("id", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True),
    Column("import_id", ForeignKey("imports.id", ondelete="CASCADE"), nullable=False),
    Column("frame", String(20), nullable=False),  # gpu | calls | ranges | profiler_options
    Column("chunk_index", Integer, nullable=False),
    Column("row_count", BigInteger, nullable=False),
    Column("rank", Integer),  # the trace's rank in a distributed job
    Column("encoding", String(40), nullable=False),
    Column("data", LargeBinary, nullable=False),
    Index("ix_host_event_chunks_import", "import_id", "frame", "chunk_index"),
)
