"""Nsight Systems SQLite exports (`nsys export -t sqlite`, schemas of nsys 2021 to 2026.2).

Kernel launches come from CUPTI_ACTIVITY_KIND_KERNEL, names from StringIds, the device from TARGET_INFO_GPU,
memory copies from CUPTI_ACTIVITY_KIND_MEMCPY and NVTX ranges from NVTX_EVENTS. Column sets grew over the
versions (26 to 38 kernel columns), so every table is read through the columns PRAGMA table_info reports;
a column the file lacks stays null.

Each kernel's `nvtx_path` names the NVTX push/pop ranges that enclose its launch call: the CUDA runtime call
(CUPTI_ACTIVITY_KIND_RUNTIME, same correlationId and process) runs on one CPU thread (globalTid) at one time,
and the ranges open on that thread at that time, outermost first, are its path.
"""

from __future__ import annotations

import ast
import re
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from tracekit.errors import InputError
from tracekit.host_events import RECORDERS, HostEvents
from tracekit.importers.not_profiles import sqlite_not_a_profile
from tracekit.importers.sqlite_input import read_sqlite
from tracekit.parsed import (
    LAUNCH_SCHEMA,
    MEMCPY_SCHEMA,
    NVTX_SCHEMA,
    ColumnTypes,
    Device,
    DType,
    ParsedImport,
    conform,
    empty_frame,
)
from tracekit.scalars import as_int

FORMAT = "nsys-sqlite"
SQLITE_MAGIC = b"SQLite format 3\x00"
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
GPU_ACTIVITY_TABLES = {KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE}
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
DIAGNOSTIC_ERROR = 3  # ENUM_DIAGNOSTIC_SEVERITY_LEVEL: 1 Info, 2 Warning, 3 Error

# globalTid/globalPid pack the process id in bits 24..47 and the thread id in bits 0..23 (nsys export docs).
PID_UNIT = 1 << 24
NVTX_PUSH_POP_RANGE = 59  # ENUM_NSYS_EVENT_TYPE.NvtxPushPopRange
NVTX_DOMAIN_CREATE = 75  # ENUM_NSYS_EVENT_TYPE.NvtxDomainCreate

# Kernel table column -> launch field.
KERNEL_COLUMNS = {
    "start": "start_ns",
    "end": "end_ns",
    "deviceId": "device_id",
    "contextId": "context_id",
    "streamId": "stream_id",
    "correlationId": "correlation_id",
    "globalPid": "global_pid",
    "registersPerThread": "registers_per_thread",
    "gridX": "grid_x",
    "gridY": "grid_y",
    "gridZ": "grid_z",
    "blockX": "block_x",
    "blockY": "block_y",
    "blockZ": "block_z",
    "staticSharedMemory": "static_smem_bytes",
    "dynamicSharedMemory": "dynamic_smem_bytes",
}
NAME_COLUMNS = ("demangledName", "shortName", "mangledName")  # StringIds ids

MEMCPY_COLUMNS = {
    "copyKind": "copy_kind",
    "bytes": "size_bytes",
    "start": "start_ns",
    "end": "end_ns",
    "streamId": "stream_id",
    "deviceId": "device_id",
}

# CUpti_ActivityMemcpyKind, for files without ENUM_CUDA_MEMCPY_OPER (nsys 2021).
MEMCPY_KINDS = {
    0: "Unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
    11: "UVM HtoD",
    12: "UVM DtoH",
    13: "UVM DtoD",
}

# TARGET_INFO_GPU column -> Device.extra key (per-SM and per-block limits the occupancy model needs).
DEVICE_EXTRA_COLUMNS = {
    "maxRegistersPerSm": "max_registers_per_sm",
    "maxShmemPerSm": "max_shared_memory_per_sm_bytes",
    "maxBlocksPerSm": "max_blocks_per_sm",
    "maxRegistersPerBlock": "max_registers_per_block",
    "maxShmemPerBlock": "max_shared_memory_per_block_bytes",
    "maxShmemPerBlockOptin": "max_shared_memory_per_block_optin_bytes",
    "maxThreadsPerBlock": "max_threads_per_block",
    "threadsPerWarp": "warp_size_threads",
    "l2CacheSize": "l2_cache_size_bytes",
    "totalMemory": "total_memory_bytes",
    "memoryBandwidth": "memory_bandwidth_bytes_per_s",
    "chipName": "chip_name",
    "busLocation": "bus_location",
}


def sniff(head: bytes) -> bool:
    """Any SQLite file: no other reader takes SQLite, and `read` says so when it is not an nsys export."""
    return head.startswith(SQLITE_MAGIC)


def read(path: Path, **options: Any) -> ParsedImport:
    """Read the export as an immutable, read-only database: SQLite then takes no locks and writes nothing
    beside it (no -wal/-shm files, even for a file left in WAL mode), and the input is never changed."""
    return read_sqlite(path, "Nsight Systems SQLite export", _read)


def _read(connection: sqlite3.Connection, path: Path) -> ParsedImport:
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    other = sqlite_not_a_profile(tables)
    if other:
        raise InputError(str(path), other)
    if "StringIds" not in tables or not any(t.startswith(("CUPTI_", "TARGET_INFO_")) for t in tables):
        raise InputError(
            str(path),
            "an SQLite file but not an Nsight Systems export (no StringIds and "
            "CUPTI_/TARGET_INFO_ tables; export a report with `nsys export -t sqlite`)",
        )
    warnings: list[str] = []
    if KERNEL_TABLE not in tables:
        if not tables & GPU_ACTIVITY_TABLES:
            raise InputError(str(path), _no_gpu_activity_reason(connection, tables))
        warnings.append(f"no {KERNEL_TABLE} table: the report recorded memory copies or sets but no kernel")
        kernels = _no_kernels()
    else:
        kernels = _kernels(connection, tables)
    if kernels.height == 0 and KERNEL_TABLE in tables:
        warnings.append(f"{KERNEL_TABLE} is empty: no kernel launches to import")
    nvtx = _nvtx_ranges(connection, tables)
    kernels = kernels.with_columns(nvtx_path=_nvtx_paths(connection, tables, kernels))
    device = _device(connection, tables, kernels, warnings)
    return ParsedImport(
        format=FORMAT,
        tool="Nsight Systems",
        tool_version=_tool_version(connection, tables),
        device=device,
        launches=conform(kernels, LAUNCH_SCHEMA),
        nvtx_ranges=conform(nvtx, NVTX_SCHEMA),
        memcpys=_memcpys(connection, tables),
        warnings=warnings,
    )


def _no_gpu_activity_reason(connection: sqlite3.Connection, tables: set[str]) -> str:
    """Why an export without kernel or memcpy table has nothing to import, from what it does hold: CUDA API
    calls (and whether they launched kernels) and nsys's own diagnostic messages."""
    if RUNTIME_TABLE not in tables:
        return (
            "no CUDA trace in this report: no kernel, memory copy or CUDA API table (profile with "
            "nsys profile --trace=cuda)"
        )
    calls = connection.execute(f"SELECT COUNT(*) FROM {RUNTIME_TABLE}").fetchone()[0]
    launches = connection.execute(
        f"SELECT COUNT(*) FROM {RUNTIME_TABLE} AS r JOIN StringIds AS s ON s.id = r.nameId "
        "WHERE s.value LIKE 'cudaLaunch%' OR s.value LIKE 'cuLaunch%'"
    ).fetchone()[0]
    diagnostic = ""
    if "DIAGNOSTIC_EVENT" in tables:
        row = connection.execute(
            "SELECT text FROM DIAGNOSTIC_EVENT WHERE severity >= ? ORDER BY severity DESC, timestamp LIMIT 1",
            (DIAGNOSTIC_ERROR,),
        ).fetchone()
        if row is not None:
            diagnostic = "; nsys's diagnostics report: " + " ".join(str(row[0]).split())
    if launches:
        calls_text = f"{launches:,} kernel launch call{'s' if launches != 1 else ''}"
        return (
            f"no GPU activity recorded: the CUDA API trace holds {calls_text} but no kernel or memory copy "
            "was traced on the GPU (nsys could not trace this GPU's work: a GPU, driver or WSL setup where its "
            f"CUDA GPU tracing is unavailable){diagnostic}"
        )
    return (
        f"no GPU work in this report: only {calls:,} CUDA API calls, none a kernel launch or memory copy "
        f"(did the application stop before its first kernel?){diagnostic}"
    )


def _no_kernels() -> pl.DataFrame:
    """The kernel frame of an export whose report recorded no kernel (memory copies only)."""
    return pl.DataFrame(
        schema={"launch_key": pl.Int64, "kernel_name": pl.Utf8, "start_ns": pl.Int64, "duration_ns": pl.Float64}
    )


def _pid(global_id: pl.Expr | pl.Series) -> pl.Expr | pl.Series:
    """The OS process id inside a globalPid/globalTid."""
    return (global_id // PID_UNIT) % PID_UNIT


def _columns(connection: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')]


def _frame(connection: sqlite3.Connection, sql: str, schema: ColumnTypes) -> pl.DataFrame:
    """A query's rows as a frame with `schema` (the query's column names and order). SQLite lets any column
    hold any type: a text or real where an integer belongs is refused, naming the table and the value."""
    rows = connection.execute(sql).fetchall()
    try:
        return pl.DataFrame(rows, schema=schema, orient="row")
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        pass  # not a stub: the rows are scanned below for the value to name in the error
    table = re.search(r"FROM (\w+) AS", sql) or re.search(r"FROM (\w+)", sql)
    for number, row in enumerate(rows, start=1):
        for (column, dtype), value in zip(schema.items(), row, strict=True):
            wrong = dtype == pl.Int64 and value is not None and (not isinstance(value, int) or isinstance(value, bool))
            if wrong or (isinstance(value, int) and not -(2**63) <= value < 2**63):
                raise sqlite3.DatabaseError(
                    f"{table.group(1) if table else 'a table'} row {number}: {column} is {value!r}, not an integer"
                )
    raise sqlite3.DatabaseError(f"{table.group(1) if table else 'a table'} holds values of unexpected types")


def _kernels(connection: sqlite3.Connection, tables: set[str]) -> pl.DataFrame:
    """One row per kernel, in start order, with `launch_key` 0..n-1."""
    columns = set(_columns(connection, KERNEL_TABLE))
    if not {"start", "end"} <= columns:
        raise sqlite3.DatabaseError(f"{KERNEL_TABLE} has no start/end columns")
    select: list[str] = []
    schema: dict[str, DType] = {}
    for source, field in KERNEL_COLUMNS.items():
        if source in columns:
            select.append(f'k."{source}"')
            schema[field] = pl.Int64
    for source in NAME_COLUMNS:
        if source in columns:
            select.append(f'(SELECT value FROM StringIds WHERE id = k."{source}")')
            schema[source] = pl.Utf8
    order = "k.start, k.correlationId" if "correlationId" in columns else "k.start"
    frame = _frame(connection, f"SELECT {', '.join(select)} FROM {KERNEL_TABLE} AS k ORDER BY {order}", schema)
    names = [pl.col(c) for c in ("demangledName", "shortName") if c in frame.columns]
    frame = frame.with_columns(
        launch_key=pl.int_range(pl.len(), dtype=pl.Int64),
        kernel_name=pl.coalesce(names) if names else pl.lit(None, pl.Utf8),
        mangled_name=pl.col("mangledName") if "mangledName" in frame.columns else pl.lit(None, pl.Utf8),
        duration_ns=(pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64),
    )
    if "global_pid" in frame.columns:
        frame = frame.with_columns(process_id=_pid(pl.col("global_pid")))
    if "correlation_id" in frame.columns:
        frame = frame.with_columns(source_launch_id=pl.col("correlation_id").cast(pl.Utf8))
    return frame


def _nvtx_events(connection: sqlite3.Connection, tables: set[str], where: str) -> pl.DataFrame:
    """NVTX_EVENTS rows matching `where`, with their name resolved (inline `text`, else `textId`)."""
    empty = pl.DataFrame(
        schema={
            "event_type": pl.Int64,
            "name": pl.Utf8,
            "domain_id": pl.Int64,
            "start_ns": pl.Int64,
            "end_ns": pl.Int64,
            "global_tid": pl.Int64,
        }
    )
    if "NVTX_EVENTS" not in tables:
        return empty
    columns = set(_columns(connection, "NVTX_EVENTS"))
    text = "n.text" if "text" in columns else "NULL"
    text_id = "(SELECT value FROM StringIds WHERE id = n.textId)" if "textId" in columns else "NULL"
    domain = "n.domainId" if "domainId" in columns else "NULL"
    event_type = "n.eventType" if "eventType" in columns else "NULL"
    sql = (
        f'SELECT {event_type}, COALESCE({text}, {text_id}), {domain}, n.start, n."end", n.globalTid '
        f"FROM NVTX_EVENTS AS n WHERE {where} ORDER BY n.start"
    )
    events = _frame(connection, sql, empty.schema)
    return events.with_columns(name=readable_nvtx_names(events["name"]))


def readable_nvtx_names(names: pl.Series) -> pl.Series:
    """NVTX messages as names: DLProf's PyTorch plugin (nvidia-dlprof-pytorch-nvtx, like pyprof before it) marks
    each operator with its whole payload as the message, a Python dict of hundreds of characters
    (`{'mod': 'torch.nn.functional', 'op': 'conv2d', 'args': [...]}`, or `{'traceMarker': [...], 'funcStack':
    '/<module>/.../uniform_'}` for the Python call site): such a message is named by its module and op, or by
    its stack's innermost function. Any other message is kept as written."""
    payloads = names.filter(names.str.starts_with("{")).unique()
    if payloads.is_empty():
        return names
    readable = {payload: _payload_name(payload) for payload in payloads.to_list()}
    return names.replace({k: v for k, v in readable.items() if v is not None})


MAX_PAYLOAD_CHARS = 64 * 1024  # a longer message is no operator's payload: not parsed as a Python literal


def _payload_name(message: str) -> str | None:
    """The op a DLProf/pyprof NVTX payload names (None when the message is not one)."""
    try:
        payload = orjson.loads(message)
    except orjson.JSONDecodeError:
        if len(message) > MAX_PAYLOAD_CHARS:
            return None
        try:
            payload = ast.literal_eval(message)  # the plugin writes str(dict): Python's quotes and tuples
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    if not isinstance(payload, dict):
        return None
    op, module, stack = payload.get("op"), payload.get("mod"), payload.get("funcStack")
    if isinstance(op, str) and op:
        return f"{module}.{op}" if isinstance(module, str) and module else op
    if isinstance(stack, str) and stack.strip("/"):
        return stack.rstrip("/").rsplit("/", 1)[-1]
    return None


def _nvtx_ranges(connection: sqlite3.Connection, tables: set[str]) -> pl.DataFrame:
    """NVTX ranges with an end (push/pop and start/end ranges), each with its domain's name."""
    ranges = _nvtx_events(connection, tables, 'n."end" IS NOT NULL')
    domains = (
        _nvtx_events(connection, tables, f"n.eventType = {NVTX_DOMAIN_CREATE}")
        .select("domain_id", pl.col("name").alias("domain"))
        .unique("domain_id", keep="first")
    )
    return ranges.join(domains, on="domain_id", how="left", maintain_order="left").with_columns(
        thread_id=pl.col("global_tid") % PID_UNIT
    )


def _nvtx_paths(connection: sqlite3.Connection, tables: set[str], kernels: pl.DataFrame) -> pl.Series:
    """Each kernel's enclosing push/pop range names, outermost first, joined with " > " (null when none)."""
    none = pl.Series("nvtx_path", [None] * kernels.height, dtype=pl.Utf8)
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in tables or "correlation_id" not in kernels.columns:
        return none
    ranges = _nvtx_events(connection, tables, f'n.eventType = {NVTX_PUSH_POP_RANGE} AND n."end" IS NOT NULL')
    if ranges.height == 0 or kernels.height == 0:
        return none
    calls = _frame(
        connection,
        "SELECT correlationId, globalTid, start FROM CUPTI_ACTIVITY_KIND_RUNTIME "
        f"WHERE correlationId IN (SELECT correlationId FROM {KERNEL_TABLE}) ORDER BY start",
        {"correlation_id": pl.Int64, "thread": pl.Int64, "time_ns": pl.Int64},
    ).with_columns(call_pid=_pid(pl.col("thread")))
    keys = ["correlation_id"]
    launches = kernels.select("launch_key", "correlation_id")
    if "global_pid" in kernels.columns:  # correlation ids are per process
        keys.append("call_pid")
        launches = launches.with_columns(call_pid=_pid(kernels["global_pid"]))
    launches = launches.join(calls.unique(keys, keep="first"), on=keys, how="inner")
    paths = enclosing_range_paths(
        ranges.select(pl.col("global_tid").alias("thread"), "start_ns", "end_ns", "name"),
        launches.select("launch_key", "thread", "time_ns"),
    )
    joined = kernels.select("launch_key").join(paths, on="launch_key", how="left", maintain_order="left")
    return joined["nvtx_path"]


def launch_points(gpu: pl.DataFrame, calls: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each GPU activity's row (`launch_key`, its position) with its correlation id, and where and when its API call
    began (launch_key, thread, time_ns; activities without a call in the trace left out): what encloses a launch
    on the host is what was open on that thread then."""
    keyed = gpu.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("launch_key"), "correlation_id")
    # only the columns used: a filter or unique of the whole frame would copy every call's name
    points = keyed.join(
        calls.select("correlation_id", "thread", "start_ns")
        .filter(pl.col("correlation_id").is_not_null())
        .unique("correlation_id", keep="first"),
        on="correlation_id",
        how="inner",
    ).select("launch_key", "thread", pl.col("start_ns").alias("time_ns"))
    return keyed, points


def enclosing_range_paths(ranges: pl.DataFrame, points: pl.DataFrame) -> pl.DataFrame:
    """For each point (launch_key, thread, time_ns), the names of the ranges open on its thread at that time.

    `ranges` (thread, start_ns, end_ns, name) are push/pop ranges, which nest properly on a thread; each is
    taken as [start, end). One sorted sweep over the range starts, range ends and points of every thread gives
    the nesting depth at each event (a running sum of +1 per start, -1 per end); a range's parent is the last
    range started before it one level up, and a point's innermost range is the last one started before it at
    the point's depth (two as-of joins). Paths are built level by level. Returns launch_key, nvtx_path.
    """
    ranges = ranges.with_row_index("range_id").with_columns(pl.col("range_id").cast(pl.Int64))
    events = pl.concat(
        [
            ranges.select(
                "range_id",
                "thread",
                pl.col("start_ns").alias("time_ns"),
                pl.lit(1).alias("order"),
                (-pl.col("end_ns")).alias("tiebreak"),
                pl.lit(1).alias("step"),
                pl.lit(None, pl.Int64).alias("launch_key"),
            ),
            ranges.select(
                "range_id",
                "thread",
                pl.col("end_ns").alias("time_ns"),
                pl.lit(0).alias("order"),
                pl.lit(0, pl.Int64).alias("tiebreak"),
                pl.lit(-1).alias("step"),
                pl.lit(None, pl.Int64).alias("launch_key"),
            ),
            points.select(
                pl.lit(None, pl.Int64).alias("range_id"),
                "thread",
                "time_ns",
                pl.lit(2).alias("order"),
                pl.lit(0, pl.Int64).alias("tiebreak"),
                pl.lit(0).alias("step"),
                "launch_key",
            ),
        ],
        how="vertical_relaxed",
    )
    # At one instant: ends first (half-open ranges), then starts outermost first, then points.
    events = (
        events.sort(["thread", "time_ns", "order", "tiebreak"])
        .with_row_index("seq")
        .with_columns(pl.col("seq").cast(pl.Int64), depth=pl.col("step").cum_sum().over("thread"))
    )
    starts = events.filter(pl.col("order") == 1).select("seq", "thread", "depth", "range_id")
    parents = starts.with_columns(pl.col("depth") - 1).join_asof(
        starts.rename({"range_id": "parent_id"}),
        on="seq",
        by=["thread", "depth"],
        strategy="backward",
        allow_exact_matches=False,
        check_sortedness=False,  # sorted by seq, hence within each group
    )
    levels = parents.join(ranges.select("range_id", pl.col("name").fill_null("")), on="range_id")
    path_of = levels.filter(pl.col("depth") == 0).select("range_id", pl.col("name").alias("path"))
    paths = [path_of]
    for depth in range(1, as_int(levels["depth"].max() or 0) + 1):
        path_of = (
            levels.filter(pl.col("depth") == depth)
            .join(path_of.rename({"range_id": "parent_id"}), on="parent_id")
            .select("range_id", pl.concat_str("path", pl.lit(" > "), "name").alias("path"))
        )
        paths.append(path_of)
    innermost = (
        events.filter(pl.col("order") == 2)
        .select("seq", "thread", "depth", "launch_key")
        .join_asof(
            starts,
            on="seq",
            by=["thread", "depth"],
            strategy="backward",
            check_sortedness=False,
        )
    )
    return (
        innermost.filter(pl.col("depth") > 0)
        .join(pl.concat(paths), on="range_id")
        .select("launch_key", pl.col("path").alias("nvtx_path"))
    )


def _memcpy_kind_names(connection: sqlite3.Connection, tables: set[str]) -> dict[int, str]:
    """copyKind -> "HtoD"-style name: ENUM_CUDA_MEMCPY_OPER where the file has it, else the CUPTI enum."""
    names = dict(MEMCPY_KINDS)
    if "ENUM_CUDA_MEMCPY_OPER" in tables:
        for kind_id, name in connection.execute("SELECT id, name FROM ENUM_CUDA_MEMCPY_OPER"):
            names[int(kind_id)] = _short_memcpy_kind(str(name))
    return names


def _short_memcpy_kind(enum_name: str) -> str:
    """`CUDA_MEMCPY_KIND_HTOD` -> `HtoD`, `CUDA_MEMCPY_KIND_UVM_DTOH` -> `UVM DtoH`."""
    name = enum_name.removeprefix("CUDA_MEMCPY_KIND_")
    match = re.fullmatch(r"(UVM_)?([A-Z])TO([A-Z])", name)
    if match:
        return ("UVM " if match.group(1) else "") + f"{match.group(2)}to{match.group(3)}"
    return name.capitalize()


def _memcpys(connection: sqlite3.Connection, tables: set[str]) -> pl.DataFrame:
    """The copies and the sets (kind "Memset", as the Kineto reader and the step timeline name them), in start
    order: both are GPU memory operations `summary` counts beside the kernels."""
    frames = []
    for table in (MEMCPY_TABLE, MEMSET_TABLE):
        if table not in tables:
            continue
        columns = set(_columns(connection, table))
        present = {source: field for source, field in MEMCPY_COLUMNS.items() if source in columns}
        select = ", ".join(f'"{source}"' for source in present)
        frame = _frame(
            connection, f"SELECT {select} FROM {table} ORDER BY start", dict.fromkeys(present.values(), pl.Int64)
        )
        if table == MEMSET_TABLE:
            frame = frame.with_columns(kind=pl.lit("Memset"))
        elif "copy_kind" in frame.columns:
            kinds = _memcpy_kind_names(connection, tables)
            frame = frame.with_columns(
                kind=pl.col("copy_kind").replace_strict(kinds, default=None, return_dtype=pl.Utf8)
            )
        frames.append(conform(frame, MEMCPY_SCHEMA))
    if not frames:
        return empty_frame(MEMCPY_SCHEMA)
    return pl.concat(frames).sort("start_ns", maintain_order=True)


def _gpu_rows(connection: sqlite3.Connection, tables: set[str]) -> list[dict[str, Any]]:
    if "TARGET_INFO_GPU" not in tables:
        return []
    cursor = connection.execute("SELECT * FROM TARGET_INFO_GPU")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _gpu_for(
    connection: sqlite3.Connection, tables: set[str], gpus: list[dict[str, Any]], device_id: int, pid: int | None
) -> dict[str, Any] | None:
    """The TARGET_INFO_GPU row of CUDA device `device_id` as the process `pid` numbered it."""
    if "TARGET_INFO_CUDA_DEVICE" in tables:  # nsys >= 2024: per-process CUDA id -> GPU id
        query = "SELECT gpuId FROM TARGET_INFO_CUDA_DEVICE WHERE cudaId = ?"
        params: tuple = (device_id,)
        if pid is not None and "pid" in _columns(connection, "TARGET_INFO_CUDA_DEVICE"):
            query += " AND pid = ?"
            params += (pid,)
        row = connection.execute(query, params).fetchone()
        if row is not None:
            return next((gpu for gpu in gpus if gpu.get("id") == row[0]), None)
    by_cuda_id = [gpu for gpu in gpus if gpu.get("cuDevice") == device_id]
    if len(by_cuda_id) == 1:
        return by_cuda_id[0]
    return gpus[0] if len(gpus) == 1 else None


def _device(
    connection: sqlite3.Connection, tables: set[str], kernels: pl.DataFrame, warnings: list[str]
) -> Device | None:
    """The GPU the kernels ran on; with several, the one of the first kernel (and a warning)."""
    gpus = _gpu_rows(connection, tables)
    if not gpus:
        warnings.append("no TARGET_INFO_GPU table: the device is unknown")
        return None
    if kernels.height == 0 or "device_id" not in kernels.columns:
        gpu = gpus[0] if len(gpus) == 1 else None
    else:
        used = (
            kernels.select("device_id", "process_id" if "process_id" in kernels.columns else pl.lit(None))
            .unique(maintain_order=True)
            .rows()
        )
        device_id, pid = used[0]
        gpu = _gpu_for(connection, tables, gpus, device_id, pid)
        device_ids = sorted({row[0] for row in used})
        if len(device_ids) > 1:
            warnings.append(
                f"kernels ran on {len(device_ids)} devices (CUDA ids {device_ids}); the import's "
                f"device fields are those of device {device_id}, where the first kernel ran"
            )
    if gpu is None:
        warnings.append(f"TARGET_INFO_GPU has {len(gpus)} GPUs and none is known to be the kernels' device")
        return None
    major, minor = gpu.get("computeMajor"), gpu.get("computeMinor")
    clock = gpu.get("clockRate")
    for column in ("clockRate", "smCount", "maxWarpsPerSm"):
        value = gpu.get(column)
        if value is not None and (not isinstance(value, int | float) or isinstance(value, bool)):
            raise sqlite3.DatabaseError(f"TARGET_INFO_GPU {column} is {value!r}, not a number")
    return Device(
        name=gpu.get("name"),
        compute_capability=f"{major}.{minor}" if major is not None and minor is not None else None,
        sm_count=gpu.get("smCount"),
        sm_clock_hz=float(clock) if clock else None,  # TARGET_INFO_GPU.clockRate is in Hz
        max_warps_per_sm=gpu.get("maxWarpsPerSm"),
        extra={key: gpu[column] for column, key in DEVICE_EXTRA_COLUMNS.items() if gpu.get(column) is not None},
    )


def _tool_version(connection: sqlite3.Connection, tables: set[str]) -> str | None:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in tables:
            row = connection.execute(f"SELECT value FROM {table} WHERE name = 'EXPORT_PRODUCT_VERSION'").fetchone()
            if row is not None:
                return str(row[0])
    return None


# ---- host events: the whole timeline for the step analysis (tracekit.analysis.steps) ----------------------------

BATCH_ROWS = 100_000  # rows fetched per batch: a 10M-kernel export is never held as Python tuples at once
# CUpti_ActivityMemoryKind (files without ENUM_CUDA_MEM_KIND): 1 is pageable host memory
CUPTI_PAGEABLE = 1


def _batched(connection: sqlite3.Connection, sql: str, schema: ColumnTypes) -> pl.DataFrame:
    """A query's rows as a frame, fetched and converted in batches (bounded memory for any table size)."""
    cursor = connection.execute(sql)
    parts = []
    while rows := cursor.fetchmany(BATCH_ROWS):
        parts.append(pl.DataFrame(rows, schema=schema, orient="row"))
    return pl.concat(parts) if parts else pl.DataFrame(schema=schema)


def _correlation(pid_column: str) -> str:
    """Correlation ids are per process: the process id in the high 32 bits keeps them apart."""
    return f"(({pid_column} / {PID_UNIT}) % {PID_UNIT}) * 4294967296 + correlationId"


def read_host_events(path: Path) -> HostEvents:
    """The export's kernels, copies and sets, CUDA runtime calls and NVTX ranges as frames (fetched in batches),
    for `tracekit.analysis.steps`."""
    return read_sqlite(path, "Nsight Systems SQLite export", _host_events)


def _host_events(connection: sqlite3.Connection, path: Path) -> HostEvents:
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "StringIds" not in tables or not tables & GPU_ACTIVITY_TABLES:
        raise InputError(str(path), "no GPU activity (kernel, memcpy or memset tables) in this export")
    gpu_schema: dict[str, DType] = {
        "kind": pl.Utf8,
        "name": pl.Utf8,
        "device_id": pl.Int64,
        "stream_id": pl.Int64,
        "correlation_id": pl.Int64,
        "graph_id": pl.Int64,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "size_bytes": pl.Int64,
        "copy_kind": pl.Utf8,
        "pageable": pl.Boolean,
    }
    parts = []
    if KERNEL_TABLE in tables:
        columns = set(_columns(connection, KERNEL_TABLE))
        name = next((f'(SELECT value FROM StringIds WHERE id = k."{c}")' for c in NAME_COLUMNS if c in columns), "NULL")
        graph = "k.graphId" if "graphId" in columns else "k.graphNodeId" if "graphNodeId" in columns else "NULL"
        parts.append(
            _batched(
                connection,
                f"SELECT 'kernel', {name}, k.deviceId, k.streamId, {_correlation('k.globalPid')}, {graph}, "
                f'k.start, k."end", NULL, NULL, NULL FROM {KERNEL_TABLE} AS k',
                gpu_schema,
            )
        )
    if MEMCPY_TABLE in tables:
        kinds = _memcpy_kind_names(connection, tables)
        pageable = _pageable_ids(connection, tables)
        copies = _batched(
            connection,
            f"SELECT 'memcpy', NULL, m.deviceId, m.streamId, {_correlation('m.globalPid')}, NULL, m.start, "
            f'm."end", m.bytes, m.copyKind, (m.srcKind IN ({pageable}) OR m.dstKind IN ({pageable})) '
            f"FROM {MEMCPY_TABLE} AS m",
            {**gpu_schema, "copy_kind": pl.Int64, "pageable": pl.Int64},
        )
        # `kinds` are short names already ("HtoD"): shortened twice they read "Htod"
        named = copies["copy_kind"].replace_strict(kinds, default=None, return_dtype=pl.Utf8)
        parts.append(
            copies.with_columns(
                copy_kind=named,
                pageable=pl.col("pageable").cast(pl.Boolean),
                name=pl.concat_str(pl.lit("Memcpy "), named.fill_null("?")),
            )
        )
    if MEMSET_TABLE in tables:
        parts.append(
            _batched(
                connection,
                f"SELECT 'memset', 'Memset', m.deviceId, m.streamId, {_correlation('m.globalPid')}, NULL, m.start, "
                f'm."end", m.bytes, NULL, NULL FROM {MEMSET_TABLE} AS m',
                gpu_schema,
            )
        )
    gpu = pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame(schema=gpu_schema)
    call_schema: dict[str, DType] = {
        "name": pl.Utf8,
        "thread": pl.Int64,
        "correlation_id": pl.Int64,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
    }
    calls = pl.DataFrame(schema=call_schema)
    if RUNTIME_TABLE in tables:
        calls = _batched(
            connection,
            f'SELECT s.value, r.globalTid, {_correlation("r.globalTid")}, r.start, r."end" '
            f"FROM {RUNTIME_TABLE} AS r LEFT JOIN StringIds AS s ON s.id = r.nameId",
            call_schema,
        )
    nvtx = _nvtx_events(connection, tables, f'n.eventType = {NVTX_PUSH_POP_RANGE} AND n."end" IS NOT NULL')
    ranges = nvtx.filter(pl.col("name").is_not_null()).select(
        "name", pl.lit("nvtx").alias("domain"), pl.col("global_tid").alias("thread"), "start_ns", "end_ns"
    )
    gpu = gpu.with_columns(annotation_path=_annotations(gpu, calls, ranges))
    return HostEvents(gpu=gpu, calls=calls, ranges=ranges, source=str(path), recorded_by=RECORDERS[FORMAT]).conformed()


def _pageable_ids(connection: sqlite3.Connection, tables: set[str]) -> str:
    """The memory-kind ids of pageable host memory, as an SQL list."""
    if "ENUM_CUDA_MEM_KIND" in tables:
        ids = [row[0] for row in connection.execute("SELECT id FROM ENUM_CUDA_MEM_KIND WHERE name LIKE '%PAGEABLE%'")]
        if ids:
            return ", ".join(str(int(i)) for i in ids)
    return str(CUPTI_PAGEABLE)


def _annotations(gpu: pl.DataFrame, calls: pl.DataFrame, ranges: pl.DataFrame) -> pl.Series:
    """Each activity's NVTX push/pop path on its launching thread at the launch call (null when none)."""
    none = pl.repeat(None, gpu.height, dtype=pl.Utf8, eager=True).alias("annotation_path")
    if gpu.height == 0 or ranges.height == 0 or calls.height == 0:
        return none
    keyed, points = launch_points(gpu, calls)
    if points.height == 0:
        return none
    paths = enclosing_range_paths(ranges.select("thread", "start_ns", "end_ns", "name"), points)
    joined = keyed.join(paths, on="launch_key", how="left", maintain_order="left")
    return joined["nvtx_path"].alias("annotation_path")
