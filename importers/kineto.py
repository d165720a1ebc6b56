"""PyTorch profiler traces (Kineto's Chrome trace JSON: `torch.profiler` `export_chrome_trace`, `*.pt.trace.json`,
plain or gzip, as TensorBoard's plugin keeps them).

Kineto writes one JSON object: `traceEvents` plus a header (`schemaVersion`, `deviceProperties`, CUDA/CUPTI
versions). The GPU side comes from CUPTI activity records:
- `"cat": "kernel"`: one kernel execution; `ts`/`dur` in µs (ns resolution, three decimals), `args` with `device`,
  `context`, `stream`, `correlation` (the CUDA launch call's id), `registers per thread`, `shared memory`, `grid`,
  `block`. Kineto writes `shared memory` as static + dynamic in one number (libkineto `output_json.cpp`), so it is
  stored as the dynamic part with the static part unknown (null): the occupancy model sees the block's whole
  shared memory, and the kernel key matches a profiled launch whose dynamic, or static + dynamic, equals it.
- `gpu_memcpy` / `gpu_memset`: copies (`Memcpy HtoD (Pageable -> Device)`, `args.bytes`) and sets.
- `cuda_runtime` / `cuda_driver`: the CPU-side launch call, with the same `args.correlation`.
- `cpu_op` (ATen operators) and `user_annotation` (`record_function`, `ProfilerStep#N`) ranges on CPU threads, and
  `gpu_user_annotation`, the same annotations mirrored onto the GPU stream.

Each kernel's `nvtx_path` is, as for Nsight Systems' NVTX ranges, the names of the `user_annotation` and `cpu_op`
ranges open on the launching thread when its launch call ran (outermost first); a kernel with no launch call in
the trace takes the `gpu_user_annotation` ranges around it on its stream. The annotations are also kept as the
import's NVTX ranges (domain = their category). Times are the trace's µs converted to ns.
"""

from __future__ import annotations

import gc
import gzip
import io
import re
import zlib
from collections.abc import Callable
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any, cast

import orjson
import polars as pl

from tracekit.errors import InputError
from tracekit.host_events import KERNEL as HOST_KERNEL
from tracekit.host_events import MEMCPY as HOST_MEMCPY
from tracekit.host_events import MEMSET as HOST_MEMSET
from tracekit.host_events import RECORDERS, HostEvents
from tracekit.importers.chrome_trace_kinds import no_gpu_activity
from tracekit.importers.nsys_sqlite import enclosing_range_paths, launch_points
from tracekit.importers.regions_common import DEFAULT_MAX_INFLATED_BYTES, GZIP_MAGIC, load_json, plain_head
from tracekit.parsed import LAUNCH_SCHEMA, MEMCPY_SCHEMA, NVTX_SCHEMA, Device, ParsedImport, conform, empty_frame

FORMAT = "kineto"
# Kineto's header keys, and the categories only a PyTorch profiler trace holds (older Kineto capitalized them).
_HEADER = re.compile(rb'"(?:schemaVersion|deviceProperties)"\s*:')
_CATEGORY = re.compile(
    rb'"cat"\s*:\s*"(?:kernel|Kernel|gpu_memcpy|gpu_memset|Memcpy|Memset|cuda_runtime|Runtime|cpu_op|'
    rb'Operator|user_annotation|gpu_user_annotation|python_function|mtia_ccp_events|mtia_runtime)"'
)
_ARRAY_CATEGORY = re.compile(rb'"cat"\s*:\s*"(?:Kernel|Runtime|Operator|Memcpy|Memset)"')
_KERNEL_ARGS = re.compile(rb'"grid"\s*:\s*\[.*"block"\s*:\s*\[', re.DOTALL)
KERNEL_CATS = frozenset({"kernel", "Kernel"})
COPY_CATS = frozenset({"gpu_memcpy", "Memcpy"})
SET_CATS = frozenset({"gpu_memset", "Memset"})
CALL_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "Driver", "mtia_runtime"})
CPU_RANGE_CATS = frozenset({"cpu_op", "Operator", "user_annotation"})
# What else the profiler recorded on the host, each at a host cost the step replay takes out: Python frames
# (with_stack) and memory events (profile_memory, instants named "[memory]"), kept as ranges of these domains.
PYTHON_CATS = frozenset({"python_function"})
MEMORY_EVENT = "[memory]"
# Meta's MTIA: the device's activities are `mtia_ccp_events` (its command processor's: kernels by name, DMA
# transfers as `dma_request`, and the stream event markers, which are no work), its runtime calls `mtia_runtime`.
MTIA_DEVICE_CAT = "mtia_ccp_events"
MTIA_MARKERS = ("event_record", "event_wait")
MTIA_DMA = "dma_request"
MTIA_DIRECTIONS = {"HOST_TO_DEVICE": "HtoD", "DEVICE_TO_HOST": "DtoH", "DEVICE_TO_DEVICE": "DtoD"}
# The December 2020 layout named operators `Operator`; the step analysis knows them by today's `cpu_op`.
RANGE_DOMAINS = {"Operator": "cpu_op"}
GPU_RANGE_CATS = frozenset({"gpu_user_annotation"})
ANNOTATION_CATS = frozenset({"user_annotation", "gpu_user_annotation"})
_COPY_KIND = re.compile(r"Memcpy\s+(\w+)")
NS_PER_US = 1000.0
THREAD_BITS = 32

# deviceProperties key -> Device.extra key (the names the Nsight Systems reader uses for the same limits).
DEVICE_EXTRA = {
    "regsPerMultiprocessor": "max_registers_per_sm",
    "sharedMemPerMultiprocessor": "max_shared_memory_per_sm_bytes",
    "regsPerBlock": "max_registers_per_block",
    "sharedMemPerBlock": "max_shared_memory_per_block_bytes",
    "sharedMemPerBlockOptin": "max_shared_memory_per_block_optin_bytes",
    "maxThreadsPerBlock": "max_threads_per_block",
    "maxThreadsPerMultiprocessor": "max_threads_per_sm",
    "warpSize": "warp_size_threads",
    "totalGlobalMem": "total_memory_bytes",
}


def sniff(head: bytes) -> bool:
    """A Chrome trace object whose header or events are Kineto's: `schemaVersion`/`deviceProperties`, a
    PyTorch-only category (cpu_op, kernel, cuda_runtime...), or kernel events carrying grid and block; or the
    December 2020 layout, a top-level event array with Kineto's categories (`Kernel`, `Runtime`, `Operator`)."""
    text = plain_head(head).removeprefix(b"\xef\xbb\xbf").lstrip()
    if text.startswith(b"["):  # the 2020 layout's capitalized categories: a warp-level Chrome array uses "kernel"
        return bool(_ARRAY_CATEGORY.search(text))
    if not text.startswith(b"{") or b'"traceEvents"' not in text:
        return False
    return bool(_HEADER.search(text) or _CATEGORY.search(text) or _KERNEL_ARGS.search(text))


def _content(path: Path, max_inflated_bytes: int) -> bytes:
    """The file's bytes, inflated when it is gzip (refused past `max_inflated_bytes`), as one JSON object: the
    2020 layout's top-level event array becomes its `traceEvents`."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        if data.startswith(GZIP_MAGIC):
            with gzip.open(path, "rb") as handle:
                data = handle.read(max_inflated_bytes + 1)
            if len(data) > max_inflated_bytes:
                raise InputError(str(path), f"the gzip content inflates past {max_inflated_bytes:,} bytes; refused")
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(str(path), f"unreadable ({getattr(exc, 'strerror', None) or exc})") from None
    if data.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"["):  # the 2020 layout: the events alone
        return b'{"traceEvents":' + data.removeprefix(b"\xef\xbb\xbf") + b"}"
    return data


def _parse(path: Path, data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(str(path), f"not valid JSON ({exc.msg})", line=exc.lineno) from None


def _args(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [a if isinstance(a := e.get("args"), dict) else {} for e in events]


EVENT_KEYS = ("name", "ts", "dur", "pid", "tid")


def _fields(records: list[dict[str, Any]], keys: tuple[str, ...]) -> list[list[Any]]:
    """The `keys` of every record as one list per key (None where missing): by itemgetter and zip, at C speed,
    when every record has them all, as Kineto writes them; else key by key."""
    if not records:
        return [[] for _ in keys]
    try:
        if len(keys) == 1:
            return [list(map(itemgetter(keys[0]), records))]
        return [list(column) for column in zip(*map(itemgetter(*keys), records), strict=True)]
    except KeyError:
        return [[record.get(key) for record in records] for key in keys]


def _ints(values: Any) -> list[int | None]:
    """pid/tid as integers; Kineto writes some as text ("Spans", "stream 7"), which have no thread number here."""
    return [v if type(v) is int else None for v in values]  # noqa: E721 - bool is not a pid


def _copy_kind(event: dict[str, Any]) -> str | None:
    """`Memcpy HtoD (Pageable -> Device)` -> HtoD; memsets are "Memset"."""
    if event.get("cat") in SET_CATS:
        return "Memset"
    if event.get("name") == MTIA_DMA:
        direction = event["args"].get("direction")
        return MTIA_DIRECTIONS.get(direction) if isinstance(direction, str) else None
    match = _COPY_KIND.match(str(event.get("name")))
    return match.group(1) if match else None


def _dims(name: str, values: list[Any]) -> dict[str, list[Any]]:
    """`grid: [x, y, z]` lists as three columns (sliced from one flat list: polars builds list columns slowly);
    a value that is not three numbers leaves the row's dimensions null."""
    if not all(type(v) is list and len(v) == 3 for v in values):
        values = [v if type(v) is list and len(v) == 3 else [None, None, None] for v in values]
    flat = list(chain.from_iterable(values))
    return {f"{name}_x": flat[0::3], f"{name}_y": flat[1::3], f"{name}_z": flat[2::3]}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


Schema = dict[str, pl.DataType | type[pl.DataType]]


class _Columns:
    """One kind of event as column lists (a comprehension per field: faster than appends in one loop)."""

    def __init__(self, what: str, data: dict[str, list[Any]]) -> None:
        self.what = what
        self.data = data

    def frame(self, path: Path, schema: Schema) -> pl.DataFrame:
        """The columns as a frame of `schema`; a value of another type is refused, naming the event and field."""
        try:
            frame = pl.DataFrame(self.data, schema=schema, strict=True)
        except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
            pass  # not a stub: the columns are scanned below for the value to name in the error
        else:
            if "pid" not in frame.columns:
                return frame
            return frame.with_columns(thread=(pl.col("pid") * 2**THREAD_BITS) + (pl.col("tid") & 0xFFFFFFFF))
        for column, dtype in schema.items():
            for number, value in enumerate(self.data[column], start=1):
                if _fits(value, dtype):
                    continue
                raise InputError(
                    str(path), f"{self.what} event {number}: {column} is {value!r}, not {_EXPECTED[dtype]}"
                )
        raise InputError(str(path), f"{self.what} events hold values of unexpected types")


def _fits(value: Any, dtype: Any) -> bool:
    if value is None:
        return True
    if dtype == pl.Utf8:
        return isinstance(value, str)
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (dtype == pl.Float64 and isinstance(value, float))


_EXPECTED: dict[Any, str] = {pl.Utf8: "text", pl.Int64: "an integer", pl.Float64: "a number"}


# Kineto's kernel `args` key -> launch field
KERNEL_ARGS = {
    "device": "device_id",
    "context": "context_id",
    "stream": "stream_id",
    "correlation": "correlation_id",
    "registers per thread": "registers_per_thread",
    "shared memory": "dynamic_smem_bytes",  # static + dynamic: see the module docstring
}
THREAD: Schema = {"pid": pl.Int64, "tid": pl.Int64}
KERNEL_FIELDS: Schema = {
    "kernel_name": pl.Utf8,
    "ts": pl.Float64,
    "dur": pl.Float64,
    **THREAD,
    **{field: pl.Int64 for field in KERNEL_ARGS.values()},
    **{f"{dims}_{axis}": pl.Int64 for dims in ("grid", "block") for axis in "xyz"},
}
COPY_FIELDS: Schema = {"kind": pl.Utf8, "size_bytes": pl.Int64, "ts": pl.Float64, "dur": pl.Float64}
COPY_FIELDS |= {"stream_id": pl.Int64, "device_id": pl.Int64}
RANGE_FIELDS: Schema = {"name": pl.Utf8, "domain": pl.Utf8, "ts": pl.Float64, "dur": pl.Float64, **THREAD}
CALL_FIELDS: Schema = {"correlation_id": pl.Int64, "ts": pl.Float64, **THREAD}


# What the columnar path asks polars' JSON reader for: the header and the event fields tracekit uses.
_INT = pl.Int64
DEVICE_STRUCT = pl.Struct(
    {"id": _INT, "name": pl.Utf8, "computeMajor": _INT, "computeMinor": _INT, "numSms": _INT}
    | dict.fromkeys(DEVICE_EXTRA, _INT)
)
# The numeric args are read as text and made integers after (ROCm writes its HIP calls' `"stream": "0x0"`); a
# kernel's or copy's that is no integer sends the file to the event-by-event path, whose error names it.
ARG_NUMBERS = (*KERNEL_ARGS, "bytes", "size")
ARGS_STRUCT = pl.Struct(
    dict.fromkeys((*ARG_NUMBERS, "direction"), pl.Utf8) | {"grid": pl.List(_INT), "block": pl.List(_INT)}
)
EVENT_STRUCT = pl.Struct(
    {"ph": pl.Utf8, "cat": pl.Utf8, "name": pl.Utf8, "ts": pl.Float64, "dur": pl.Float64}
    | {"pid": pl.Utf8, "tid": pl.Utf8, "args": ARGS_STRUCT}  # pid/tid may be text ("Spans")
)
HEADER_SCHEMA: Schema = {
    "schemaVersion": _INT,
    "cuda_runtime_version": _INT,
    "cuda_driver_version": _INT,
    "cupti_version": _INT,
    "deviceProperties": pl.List(DEVICE_STRUCT),
    "traceEvents": pl.List(EVENT_STRUCT),
}


KERNEL_ACTIVITY, COPY_ACTIVITY = "kernel", "copy"


def _activity() -> pl.Expr:
    """What a GPU-side event is: a kernel, a copy or set, or null (not GPU work). MTIA's command-processor events
    are kernels, but its DMA requests are copies and its stream event markers no work."""
    mtia = pl.col("cat") == MTIA_DEVICE_CAT
    dma = mtia & (pl.col("name") == MTIA_DMA)
    return (
        pl.when(pl.col("cat").is_in(list(COPY_CATS | SET_CATS)) | dma)
        .then(pl.lit(COPY_ACTIVITY))
        .when(pl.col("cat").is_in(list(KERNEL_CATS)) | (mtia & ~pl.col("name").is_in(MTIA_MARKERS)))
        .then(pl.lit(KERNEL_ACTIVITY))
    )


def _exact(events: pl.DataFrame, keys: tuple[str, ...] | dict[str, str]) -> bool:
    """Whether each of these args an event has was an integer (its text made one without loss)."""
    if events.height == 0:
        return True
    lost = pl.any_horizontal(
        pl.col("raw_args").struct.field(key).is_not_null() & pl.col("args").struct.field(key).is_null() for key in keys
    )
    return not events.select(lost.any()).item()


def _columnar(data: bytes) -> tuple[dict[str, Any], dict[str, pl.DataFrame]] | None:
    """The header and the four event frames read by polars' JSON reader in Rust, without a Python object per
    event; None when the file does not fit the schema (a field of another type, not an object, not JSON), for
    the event-by-event path, whose errors name the event and field."""
    try:
        document = pl.read_json(io.BytesIO(data), schema=HEADER_SCHEMA)
    except (pl.exceptions.PolarsError, ValueError, TypeError):
        return None
    if document.height != 1 or document["traceEvents"].null_count():
        return None
    header = document.drop("traceEvents").row(0, named=True)
    events = (
        document.select(pl.col("traceEvents").explode())
        .unnest("traceEvents")
        .filter((pl.col("ph") == "X") & pl.col("cat").is_not_null())
        .with_columns(
            pl.col("pid").cast(_INT, strict=False),
            pl.col("tid").cast(_INT, strict=False),
        )
        .with_columns(thread=(pl.col("pid") * 2**THREAD_BITS) + (pl.col("tid") & 0xFFFFFFFF))
    )
    events = events.with_columns(
        pl.col("args").alias("raw_args"),
        pl.col("args").struct.with_fields(*(pl.field(key).cast(_INT, strict=False) for key in ARG_NUMBERS)),
        activity=_activity(),
    )
    arg = pl.col("args").struct.field
    kernels = events.filter(pl.col("activity") == KERNEL_ACTIVITY)
    copies = events.filter(pl.col("activity") == COPY_ACTIVITY)
    calls = events.filter(pl.col("cat").is_in(list(CALL_CATS)))
    if not (_exact(kernels, KERNEL_ARGS) and _exact(copies, ARG_NUMBERS) and _exact(calls, ("correlation",))):
        return None
    mtia = pl.col("cat") == MTIA_DEVICE_CAT
    kernels = kernels.select(
        pl.col("name").alias("kernel_name"),
        "ts",
        "dur",
        "pid",
        "tid",
        *(
            (pl.when(mtia).then(pl.col("pid")).otherwise(arg(key)) if key == "device" else arg(key)).alias(field)
            for key, field in KERNEL_ARGS.items()
        ),
        *(
            arg(dims).list.get(i, null_on_oob=True).alias(f"{dims}_{axis}")
            for dims in ("grid", "block")
            for i, axis in enumerate("xyz")
        ),
        "thread",
    )
    dma = mtia & (pl.col("name") == MTIA_DMA)
    frames = {
        "kernels": kernels,
        "calls": calls.select(arg("correlation").alias("correlation_id"), "ts", "pid", "tid", "thread"),
        "ranges": events.filter(pl.col("cat").is_in(list(CPU_RANGE_CATS | GPU_RANGE_CATS))).select(
            "name", pl.col("cat").alias("domain"), "ts", "dur", "thread"
        ),
        "copies": copies.select(
            pl.when(pl.col("cat").is_in(list(SET_CATS)))
            .then(pl.lit("Memset"))
            .when(dma)
            .then(arg("direction").replace_strict(MTIA_DIRECTIONS, default=None, return_dtype=pl.Utf8))
            .otherwise(pl.col("name").str.extract(_COPY_KIND.pattern, 1))
            .alias("kind"),
            pl.when(dma).then(arg("size")).otherwise(arg("bytes")).alias("size_bytes"),
            "ts",
            "dur",
            arg("stream").alias("stream_id"),
            pl.when(mtia).then(pl.col("pid")).otherwise(arg("device")).alias("device_id"),
        ),
    }
    return header, frames


def read(path: Path, max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES, **options: Any) -> ParsedImport:
    """The trace's launches, copies, annotations and device. Python's cyclic garbage collector is paused while
    the document's million small dicts and lists exist: they hold no cycles, and its passes over them cost more
    than parsing them (1.3 s vs 0.6 s of CPU for a 100k-kernel trace)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read(Path(path), max_inflated_bytes)
    finally:
        if collecting:
            gc.enable()


def _read(path: Path, max_inflated_bytes: int) -> ParsedImport:
    data = _content(path, max_inflated_bytes)
    columnar = _columnar(data)
    if columnar is None:
        document = _parse(path, data)
        del data
        frames = _event_frames(path, document)
    else:
        document, frames = columnar
    return _assemble(path, document, frames)


def _event_frames(path: Path, document: Any) -> dict[str, pl.DataFrame]:
    """The four event frames, event by event from the parsed document (any file the columnar path refuses)."""
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        raise InputError(str(path), "not a PyTorch profiler trace: expected a JSON object with a 'traceEvents' list")
    buckets: dict[str, list[dict[str, Any]]] = {}
    for index, event in enumerate(document["traceEvents"]):
        try:
            cat = event.get("cat")
        except AttributeError:
            raise InputError(str(path), f"traceEvents[{index}] is not an object") from None
        if type(cat) is str:
            bucket = buckets.get(cat)
            if bucket is None:
                bucket = buckets[cat] = []
            bucket.append(event)

    def complete(categories: frozenset[str]) -> list[dict[str, Any]]:
        return [e for cat in categories for e in buckets.get(cat, ()) if e.get("ph") == "X"]

    mtia_kernels, mtia_copies = _mtia_activities(complete(frozenset({MTIA_DEVICE_CAT})))
    kernels, calls = complete(KERNEL_CATS) + mtia_kernels, complete(CALL_CATS)
    ranges, copies = complete(CPU_RANGE_CATS | GPU_RANGE_CATS), complete(COPY_CATS | SET_CATS) + mtia_copies
    kernel_args, call_args, copy_args = _args(kernels), _args(calls), _args(copies)
    name, ts, dur, pid, tid = _fields(kernels, EVENT_KEYS)
    grid, block, *args = _fields(kernel_args, ("grid", "block", *KERNEL_ARGS))
    kernel_frame = _Columns(
        "kernel",
        {
            "kernel_name": name,
            "ts": ts,
            "dur": dur,
            "pid": _ints(pid),
            "tid": _ints(tid),
            **dict(zip(KERNEL_ARGS.values(), args, strict=True)),
            **_dims("grid", grid),
            **_dims("block", block),
        },
    ).frame(path, KERNEL_FIELDS)
    _, ts, _, pid, tid = _fields(calls, EVENT_KEYS)
    call_frame = _Columns(
        "launch call",
        {"correlation_id": _fields(call_args, ("correlation",))[0], "ts": ts, "pid": _ints(pid), "tid": _ints(tid)},
    ).frame(path, CALL_FIELDS)
    name, ts, dur, pid, tid = _fields(ranges, EVENT_KEYS)
    range_frame = _Columns(
        "operator/annotation",
        {
            "name": name,
            "domain": [e.get("cat") for e in ranges],
            "ts": ts,
            "dur": dur,
            "pid": _ints(pid),
            "tid": _ints(tid),
        },
    ).frame(path, RANGE_FIELDS)
    copy_frame = _Columns(
        "memory copy/set",
        {
            "kind": [_copy_kind(e) for e in copies],
            "size_bytes": [a.get("bytes") for a in copy_args],
            "ts": [e.get("ts") for e in copies],
            "dur": [e.get("dur") for e in copies],
            "stream_id": [a.get("stream") for a in copy_args],
            "device_id": [a.get("device") for a in copy_args],
        },
    ).frame(path, COPY_FIELDS)
    return {"kernels": kernel_frame, "calls": call_frame, "ranges": range_frame, "copies": copy_frame}


def _mtia_activities(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """MTIA's command-processor events as Kineto's CUDA ones: kernels, and the DMA requests as copies (`size` as
    `bytes`), each with its process as its device; the stream event markers are no work and left out."""
    kernels, copies = [], []
    for event in events:
        name, given = event.get("name"), event.get("args")
        if name in MTIA_MARKERS:
            continue
        args: dict[str, Any] = {**(given if isinstance(given, dict) else {}), "device": event.get("pid")}
        if name == MTIA_DMA:
            copies.append({**event, "args": {**args, "bytes": args.get("size")}})
        else:
            kernels.append({**event, "args": args})
    return kernels, copies


def _assemble(path: Path, document: dict[str, Any], frames: dict[str, pl.DataFrame]) -> ParsedImport:
    """The import from the event frames; a time beyond what int64 ns hold (±292 years) is refused."""
    try:
        return _assemble_frames(path, document, frames)
    except pl.exceptions.InvalidOperationError:
        raise InputError(str(path), "an event's ts or dur is beyond the nanosecond range (±292 years)") from None


def _assemble_frames(path: Path, document: dict[str, Any], frames: dict[str, pl.DataFrame]) -> ParsedImport:
    kernel_frame, call_frame, range_frame, copy_frame = (
        frames[name] for name in ("kernels", "calls", "ranges", "copies")
    )
    warnings: list[str] = []
    launches = _launches(path, kernel_frame)
    range_frame = _timed(range_frame).filter(pl.col("name").is_not_null())
    launches = launches.with_columns(nvtx_path=_paths(launches, range_frame, _timed(call_frame, with_dur=False)))
    profiled = _range_profiled(path) if launches.height == 0 and copy_frame.height == 0 else 0
    if launches.height == 0 and copy_frame.height == 0 and not profiled:  # nothing to store: say what it holds
        raise InputError(str(path), no_gpu_activity(path))
    if profiled:  # the host timeline keeps the counters (`read_host_events`); no launch has a time or shape
        warnings.append(
            f"recorded with the CUPTI range profiler: {profiled:,} kernels' counters, no kernel activity (the "
            "profiler replays each kernel to count it), so no launch is stored; the counters are in `tracekit "
            "features`"
        )
    elif launches.height == 0:
        warnings.append("no kernel events: the trace holds memory copies and sets only")
    device = _device(path, document, launches, warnings)
    annotations = range_frame.filter(pl.col("domain").is_in(list(ANNOTATION_CATS)))
    return ParsedImport(
        format=FORMAT,
        tool="PyTorch Profiler (Kineto)",
        tool_version=_version(document),
        device=device,
        launches=conform(launches, LAUNCH_SCHEMA),
        nvtx_ranges=conform(
            annotations.with_columns(thread_id=pl.col("thread") & 0xFFFFFFFF).sort("start_ns"), NVTX_SCHEMA
        ),
        memcpys=conform(_timed(copy_frame).sort("start_ns"), MEMCPY_SCHEMA) if copy_frame.height else _no_copies(),
        warnings=warnings,
    )


def _range_profiled(path: Path) -> int:
    """How many CUPTI range-profiler events (one per kernel) a trace without kernel activity holds."""
    document = load_json(path)
    events = document.get("traceEvents") if isinstance(document, dict) else document
    found = events if isinstance(events, list) else []
    return sum(1 for e in found if isinstance(e, dict) and e.get("cat") == RANGE_PROFILER_CAT and e.get("ph") == "X")


def _no_copies() -> pl.DataFrame:
    return empty_frame(MEMCPY_SCHEMA)


def _timed(frame: pl.DataFrame, with_dur: bool = True) -> pl.DataFrame:
    """ts/dur (µs) as start_ns/end_ns; Kineto writes ns as µs with three decimals, so rounding restores them."""
    start = (pl.col("ts") * NS_PER_US).round().cast(pl.Int64)
    if not with_dur:
        return frame.with_columns(start_ns=start).drop("ts")
    return frame.with_columns(start_ns=start, end_ns=start + (pl.col("dur") * NS_PER_US).round().cast(pl.Int64)).drop(
        "ts", "dur"
    )


def _launches(path: Path, kernels: pl.DataFrame) -> pl.DataFrame:
    """One row per kernel event, in start order, with `launch_key` 0..n-1."""
    missing = kernels.filter(pl.col("ts").is_null() | pl.col("dur").is_null())
    if missing.height:
        raise InputError(str(path), f"kernel event {missing['kernel_name'][0]!r} has no numeric ts/dur")
    frame = _timed(kernels).with_columns(gpu_thread=pl.col("thread"))
    frame = frame.sort(["start_ns", "correlation_id"], nulls_last=True)
    return frame.with_columns(
        launch_key=pl.int_range(pl.len(), dtype=pl.Int64),
        duration_ns=(pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64),
        source_launch_id=pl.col("correlation_id").cast(pl.Utf8),
    )


def _paths(launches: pl.DataFrame, ranges: pl.DataFrame, calls: pl.DataFrame) -> pl.Series:
    """Each kernel's enclosing annotation and operator names (see the module docstring); null when none."""
    none = pl.Series("nvtx_path", [None] * launches.height, dtype=pl.Utf8)
    if launches.height == 0 or ranges.height == 0:
        return none
    cpu = ranges.filter(pl.col("domain").is_in(list(CPU_RANGE_CATS)) & pl.col("thread").is_not_null())
    points = launches.select("launch_key", "correlation_id").join(
        calls.filter(pl.col("correlation_id").is_not_null()).unique("correlation_id", keep="first"),
        on="correlation_id",
        how="inner",
    )
    found = []
    if cpu.height and points.height:
        found.append(
            enclosing_range_paths(
                cpu.select("thread", "start_ns", "end_ns", "name"),
                points.select("launch_key", "thread", pl.col("start_ns").alias("time_ns")),
            )
        )
    gpu = ranges.filter(pl.col("domain").is_in(list(GPU_RANGE_CATS)) & pl.col("thread").is_not_null())
    if gpu.height:
        found.append(
            enclosing_range_paths(
                gpu.select("thread", "start_ns", "end_ns", "name"),
                launches.filter(pl.col("gpu_thread").is_not_null()).select(
                    "launch_key", pl.col("gpu_thread").alias("thread"), pl.col("start_ns").alias("time_ns")
                ),
            )
        )
    if not found:
        return none
    # the CPU-side path first: it holds the operators as well as the annotations
    paths = pl.concat(found).unique("launch_key", keep="first", maintain_order=True)
    joined = launches.select("launch_key").join(paths, on="launch_key", how="left", maintain_order="left")
    return joined["nvtx_path"]


def _device(path: Path, document: dict, launches: pl.DataFrame, warnings: list[str]) -> Device | None:
    """The GPU of the first kernel, from `deviceProperties` (a warning when kernels ran on several)."""
    properties = document.get("deviceProperties")
    if not isinstance(properties, list) or not properties:
        warnings.append("no deviceProperties in the trace's header: the device is unknown")
        return None
    devices = [d for d in properties if isinstance(d, dict)]
    used = launches["device_id"].drop_nulls().unique(maintain_order=True).to_list() if launches.height else []
    wanted = used[0] if used else None
    if len(used) > 1:
        warnings.append(
            f"kernels ran on {len(used)} devices (ids {sorted(used)}); the import's device fields are those of "
            f"device {wanted}, where the first kernel ran"
        )
    chosen = next((d for d in devices if d.get("id") == wanted), None)
    if chosen is None:
        chosen = devices[0] if len(devices) == 1 else None
    if chosen is None:
        warnings.append(
            f"deviceProperties lists {len(devices)} GPUs and none is the kernels' device {wanted}"
            if used
            else f"deviceProperties lists {len(devices)} GPUs and no kernel says which one ran it"
        )
        return None
    major, minor = _int(chosen.get("computeMajor")), _int(chosen.get("computeMinor"))
    threads, warp = _int(chosen.get("maxThreadsPerMultiprocessor")), _int(chosen.get("warpSize"))
    name = chosen.get("name") if isinstance(chosen.get("name"), str) else None
    version = f"{major}.{minor}" if major is not None and minor is not None else None
    extra: dict[str, object] = {
        key: chosen[source] for source, key in DEVICE_EXTRA.items() if _int(chosen.get(source)) is not None
    }
    sm_count, max_warps = _int(chosen.get("numSms")), threads // warp if threads and warp else None
    if name and _AMD_DEVICE.search(name):
        # ROCm's Kineto fills the CUDA-named fields with HIP's: `computeMajor.computeMinor` is the GCN
        # architecture (9.0 for an MI250's gfx90a), not a CUDA compute capability, and numSms counts compute
        # units: kept as AMD's, so that no NVIDIA model (occupancy, ceilings) is applied to them
        extra |= {"vendor": "AMD", "gcn_architecture": version, "compute_units": sm_count}
        extra |= {"max_wavefronts_per_cu": max_warps}
        version = sm_count = max_warps = None
    return Device(
        name=name,
        compute_capability=version,
        sm_count=sm_count,
        sm_clock_hz=None,  # Kineto does not record the SM clock
        max_warps_per_sm=max_warps,
        extra=extra,
    )


_AMD_DEVICE = re.compile(r"\b(?:AMD|Radeon|Instinct)\b")


def _version(document: dict) -> str | None:
    """Kineto's schema and the CUDA versions it recorded, e.g. `schema 1, CUDA runtime 12080, CUPTI 26`."""
    parts = [
        f"{label} {document[key]}"
        for key, label in (
            ("schemaVersion", "schema"),
            ("cuda_runtime_version", "CUDA runtime"),
            ("cuda_driver_version", "CUDA driver"),
            ("cupti_version", "CUPTI"),
        )
        if isinstance(document.get(key), int | str)
    ]
    return ", ".join(parts) or None


# ---- host events: the whole timeline for the step analysis (tracekit.analysis.steps) ----------------------------

# Read as text, then as integers where they are: ROCm's Kineto writes some args as strings (`"stream": "0x0"` on
# its HIP calls), and MTIA's DMA requests carry `size` and `direction`.
HOST_ARG_NUMBERS = ("device", "stream", "correlation", "bytes", "size")
# What Kineto writes on an NCCL kernel (and on its `record_param_comms` operator): the collective's metadata, kept as
# the GPU frame's columns of the same meaning (`tracekit.host_events.GPU_OP_SCHEMA`).
COLLECTIVE_ARGS = {
    "Collective name": "collective",
    "In msg nelems": "collective_in_elements",
    "Out msg nelems": "collective_out_elements",
    "dtype": "collective_dtype",
    "Process Group Name": "process_group_name",
    "Process Group Description": "process_group_description",
    "Process Group Ranks": "process_group_ranks",
    "Group size": "group_size",
}
COLLECTIVE_NUMBERS = frozenset({"In msg nelems", "Out msg nelems", "Group size"})
# what the job analysis also reads on a collective: its operator's external id and its sequence number in the group
JOB_COLLECTIVE_ARGS = ("External id", "Seq")
HOST_ARGS_STRUCT = pl.Struct(
    dict.fromkeys((*HOST_ARG_NUMBERS, "direction", *COLLECTIVE_ARGS, *JOB_COLLECTIVE_ARGS), pl.Utf8)
    | {"grid": pl.List(_INT)}  # a kernel's launch shape (the job's `inflation.measure_inflation`: the same kernel)
)
HOST_EVENT_STRUCT = pl.Struct(
    {"ph": pl.Utf8, "cat": pl.Utf8, "name": pl.Utf8, "ts": pl.Float64, "dur": pl.Float64}
    | {"pid": pl.Utf8, "tid": pl.Utf8, "args": HOST_ARGS_STRUCT}
)
HOST_HEADER_SCHEMA: Schema = {
    "distributedInfo": pl.Struct({"rank": _INT, "world_size": _INT}),
    "deviceProperties": pl.List(pl.Struct({"id": _INT, "name": pl.Utf8})),
    "traceEvents": pl.List(HOST_EVENT_STRUCT),
}
STEP_ANNOTATION = re.compile(r"^ProfilerStep#\d+$")


def read_host_events(path: Path, max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES) -> HostEvents:
    """The trace's GPU activities, CUDA API calls and CPU ranges as frames, parsed by polars in Rust (no Python
    object per event): what `tracekit.analysis.steps` reads. A trace laid out as libkineto writes it is read in
    blocks (`_streamed`: memory bounded by the block and the frames kept, not by the file); any other layout is
    parsed whole. A file polars cannot read with this schema is refused with the reason `read` gives for it."""
    return read_host_trace(path, max_inflated_bytes)[1]


def read_host_trace(
    path: Path, max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES
) -> tuple[dict[str, Any], HostEvents]:
    """`read_host_events` with the trace's header (every key but `traceEvents`), from the same one reading."""
    header, events, _ = read_host_trace_with(path, _nothing, max_inflated_bytes=max_inflated_bytes)
    return header, events


def _nothing(events: pl.DataFrame) -> EventFrames:
    return ()


def read_host_trace_with(
    path: Path,
    also: KeptFrames,
    launch_context: bool = True,
    with_gpu: bool = True,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
) -> tuple[dict[str, Any], HostEvents, EventFrames]:
    """`read_host_trace` and the frames `also` keeps of the same events, from the one reading (a job's rank is read
    once for its own rows and for its replay). Without `launch_context`, no GPU activity names the operator and
    annotations it was launched under (the replay does not read them; finding them costs a 100 MB rank tens of MB);
    without `with_gpu`, the host timeline holds no GPU activity (a caller whose `also` keeps them: the kernels'
    names are a 100 MB rank's largest column)."""
    path = Path(path)

    def both(events: pl.DataFrame) -> EventFrames:
        return (*_host_frames(events, with_gpu), *also(events))

    header, frames = read_events(path, both, max_inflated_bytes)
    (gpu, calls, ranges, profiled), kept = frames[:4], frames[4:]
    counters = _range_counters(path, max_inflated_bytes) if profiled.height else None
    if launch_context:
        gpu = gpu.with_columns(**_launch_context(gpu, calls, ranges))
    found_info, found_devices = header.get("distributedInfo"), header.get("deviceProperties")
    info: dict[str, Any] = found_info if isinstance(found_info, dict) else {}
    devices: list[Any] = found_devices if isinstance(found_devices, list) else []
    name = next((d["name"] for d in devices if isinstance(d, dict) and isinstance(d.get("name"), str)), None)
    rank = info.get("rank") if isinstance(info.get("rank"), int) else None
    options = tuple(key for key in PROFILER_OPTIONS if header.get(key) not in (None, 0, False, "0", "false"))
    return (
        header,
        HostEvents(
            gpu=gpu,
            calls=calls,
            ranges=ranges,
            rank=rank,
            device_name=name,
            source=str(path),
            profiler_options=options,
            recorded_by=RECORDERS[FORMAT],
            **({"counters": counters} if counters is not None else {}),
        ).conformed(),
        kept,
    )


RANGE_PROFILER_CAT = "cuda_profiler_range"  # the CUPTI range profiler's events: one per kernel, counters in args


def _range_counters(path: Path, max_inflated_bytes: int) -> pl.DataFrame:
    """Each `cuda_profiler_range` event's numeric args as counter rows (`tracekit.host_events.COUNTER_SCHEMA`). The
    metrics are whatever the profiler was asked for, so the file is parsed once more as Python objects, which
    only a trace holding such events pays (the range profiler replays every kernel: such traces are short)."""
    document = _parse(path, _content(path, max_inflated_bytes))
    events = document.get("traceEvents") if isinstance(document, dict) else None
    found = [
        e
        for e in (events if isinstance(events, list) else [])
        if isinstance(e, dict) and e.get("cat") == RANGE_PROFILER_CAT and e.get("ph") == "X"
    ]
    found.sort(key=lambda e: e["ts"] if isinstance(e.get("ts"), int | float) else float("inf"))
    columns = ("kernel_index", "name", "device_id", "ts", "dur", "metric", "value")
    rows: dict[str, list[Any]] = {column: [] for column in columns}
    for index, event in enumerate(found):
        args = event.get("args")
        for metric, value in args.items() if isinstance(args, dict) else ():
            if isinstance(value, int | float) and not isinstance(value, bool):
                kernel = (index, event.get("name"), _int(event.get("pid")), event.get("ts"), event.get("dur"))
                for column, item in zip(columns, (*kernel, metric, float(value)), strict=True):
                    rows[column].append(item)
    schema: Schema = {"kernel_index": _INT, "name": pl.Utf8, "device_id": _INT, "ts": pl.Float64}
    schema |= {"dur": pl.Float64, "metric": pl.Utf8, "value": pl.Float64}
    frame = _Columns("cuda_profiler_range", rows).frame(path, schema)
    return _timed(frame.with_columns(pl.col("dur").fill_null(0.0)))


# torch.profiler options Kineto writes into the header: each adds host work per operator while profiling
PROFILER_OPTIONS = ("record_shapes", "with_stack", "profile_memory", "with_flops", "with_modules")


EventFrames = tuple[pl.DataFrame, ...]
# What a caller keeps of a run of events: frames selected from one column per field of HOST_EVENT_STRUCT.
KeptFrames = Callable[[pl.DataFrame], EventFrames]


def read_events(
    path: Path, kept: KeptFrames, max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES
) -> tuple[dict[str, Any], EventFrames]:
    """The trace's header (every key but `traceEvents`) and the frames `kept` selects from its events, the one
    reading of a Kineto trace's events (`read_host_events` for the step analysis, `tracekit.job.read` for a job's
    ranks). The layout libkineto writes (every `torch.profiler` export) is read in blocks: memory is bounded by a
    block and what `kept` keeps, not by the file; any other layout is parsed whole."""
    streamed = _streamed(path, max_inflated_bytes, kept)
    return streamed if streamed is not None else _whole(path, max_inflated_bytes, kept)


def _whole(path: Path, max_inflated_bytes: int, kept: KeptFrames) -> tuple[dict[str, Any], EventFrames]:
    """The whole document parsed by polars at once (any layout of the JSON)."""
    data = _content(path, max_inflated_bytes)
    document = _parsed(data, lambda text: pl.read_json(io.BytesIO(text), schema=HOST_HEADER_SCHEMA))
    del data
    if document is None:
        read(path, max_inflated_bytes)  # raises the event-by-event reader's one-line reason
        raise InputError(str(path), "the trace's events do not have the types a PyTorch profiler writes") from None
    if document.height != 1 or document["traceEvents"].null_count():
        raise InputError(str(path), "not a PyTorch profiler trace: expected a JSON object with a 'traceEvents' list")
    header = document.drop("traceEvents").row(0, named=True)
    events = document.select(pl.col("traceEvents").explode()).unnest("traceEvents")
    del document
    return header, kept(events)


def _host_frames(events: pl.DataFrame, with_gpu: bool = True) -> EventFrames:
    """The GPU activities (none without `with_gpu`: an empty frame of their columns), API calls and CPU ranges among
    Chrome-trace events (one column per event field), and the CUPTI range profiler's ranges (whose counters
    `_range_counters` reads)."""
    events = (
        events.filter(
            ((pl.col("ph") == "X") | ((pl.col("ph") == "i") & (pl.col("name") == MEMORY_EVENT)))
            & pl.col("cat").is_not_null()
            & pl.col("ts").is_not_null()
        )
        .with_columns(
            thread=pl.col("pid").cast(_INT, strict=False) * 2**THREAD_BITS
            + (pl.col("tid").cast(_INT, strict=False) & 0xFFFFFFFF),
            start_ns=(pl.col("ts") * NS_PER_US).round().cast(pl.Int64),
        )
        .with_columns(end_ns=pl.col("start_ns") + (pl.col("dur").fill_null(0.0) * NS_PER_US).round().cast(pl.Int64))
    )
    arg = pl.col("args").struct.field
    number = {key: arg(key).cast(_INT, strict=False) for key in HOST_ARG_NUMBERS}
    mtia = pl.col("cat") == MTIA_DEVICE_CAT
    dma = mtia & (pl.col("name") == MTIA_DMA)
    gpu_cats = KERNEL_CATS | COPY_CATS | SET_CATS | {MTIA_DEVICE_CAT}
    activities = events if with_gpu else events.clear()
    gpu = activities.filter(pl.col("cat").is_in(list(gpu_cats)) & ~(mtia & pl.col("name").is_in(MTIA_MARKERS))).select(
        pl.when(pl.col("cat").is_in(list(COPY_CATS)) | dma)
        .then(pl.lit(HOST_MEMCPY))
        .when(pl.col("cat").is_in(list(SET_CATS)))
        .then(pl.lit(HOST_MEMSET))
        .otherwise(pl.lit(HOST_KERNEL))
        .alias("kind"),
        "name",
        # an MTIA event's process is its device (`MTIA 17`)
        pl.when(mtia).then(pl.col("pid").cast(_INT, strict=False)).otherwise(number["device"]).alias("device_id"),
        number["stream"].alias("stream_id"),
        number["correlation"].alias("correlation_id"),
        "start_ns",
        "end_ns",
        pl.when(dma).then(number["size"]).otherwise(number["bytes"]).alias("size_bytes"),
        pl.when(pl.col("cat").is_in(list(COPY_CATS)))
        .then(pl.col("name").str.extract(_COPY_KIND.pattern, 1))
        .when(dma)
        .then(arg("direction").replace_strict(MTIA_DIRECTIONS, default=None, return_dtype=pl.Utf8))
        .alias("copy_kind"),
        pl.col("name").str.contains("Pageable").alias("pageable"),
        *(
            (arg(key).cast(_INT, strict=False) if key in COLLECTIVE_NUMBERS else arg(key)).alias(column)
            for key, column in COLLECTIVE_ARGS.items()
        ),
    )
    calls = events.filter(pl.col("cat").is_in(list(CALL_CATS))).select(
        "name", "thread", number["correlation"].alias("correlation_id"), "start_ns", "end_ns"
    )
    recorded = pl.col("cat").is_in(list(CPU_RANGE_CATS | PYTHON_CATS)) | (pl.col("name") == MEMORY_EVENT)
    ranges = events.filter(recorded & pl.col("thread").is_not_null()).select(
        "name",
        pl.when(pl.col("name") == MEMORY_EVENT).then(pl.lit("memory")).otherwise(_range_domain()).alias("domain"),
        "thread",
        "start_ns",
        "end_ns",
    )
    profiled = events.filter(pl.col("cat") == RANGE_PROFILER_CAT).select("name", "start_ns", "end_ns")
    return gpu, calls, ranges, profiled


def _range_domain() -> pl.Expr:
    """A CPU range's domain as today's Kineto names it: the 2020-2021 layout's `Operator` is `cpu_op`, except its
    `ProfilerStep#N`, which that layout recorded as an operator and today's as a user annotation."""
    step = (pl.col("cat") == "Operator") & pl.col("name").str.contains(STEP_ANNOTATION.pattern)
    return pl.when(step).then(pl.lit("user_annotation")).otherwise(pl.col("cat").replace(RANGE_DOMAINS))


# libkineto's writer (output_json.cpp) puts each event on its own lines at two spaces of indentation: events are
# separated by exactly this, and the array ends with the last event's close and the bracket.
_KINETO_SEPARATOR = b"\n  },\n  {"
_KINETO_ARRAY_END = re.compile(rb"\n  }\s*\n\s*\]")
_ARRAY_START = re.compile(rb'"traceEvents"\s*:\s*\[\s*')
STREAM_BLOCK_BYTES = 1 << 20  # small blocks: less memory and faster (a 16 MB block took 2.6x the time)
BLOCKS_PER_CHUNK = 64  # blocks' frames gathered into one chunk: a frame of a thousand small chunks is slow to use
NDJSON_SCHEMA: Schema = {field.name: cast(pl.DataType, field.dtype) for field in HOST_EVENT_STRUCT.fields}


def _blocks(path: Path, max_inflated_bytes: int):  # type: ignore[no-untyped-def]
    """The file's (inflated) bytes in blocks; a gzip inflating past `max_inflated_bytes` is refused."""
    try:
        with open(path, "rb") as probe:
            zipped = probe.read(2) == GZIP_MAGIC
        opener = gzip.open if zipped else open
        total = 0
        with opener(path, "rb") as handle:
            while block := handle.read(STREAM_BLOCK_BYTES):
                total += len(block)
                if zipped and total > max_inflated_bytes:
                    raise InputError(str(path), f"the gzip content inflates past {max_inflated_bytes:,} bytes; refused")
                yield block
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(str(path), f"unreadable ({getattr(exc, 'strerror', None) or exc})") from None


def _streamed(path: Path, max_inflated_bytes: int, kept: KeptFrames) -> tuple[dict[str, Any], EventFrames] | None:
    """The trace read block by block when libkineto laid it out (None otherwise): the header before the event
    array is parsed on its own; each run of whole events becomes newline-delimited JSON (JSON text holds no raw
    newline or NUL, so the separators are marked with NUL, the newlines inside events dropped, and the marks made
    newlines) that polars reads, and only the frames `kept` selects are kept."""
    blocks = _blocks(path, max_inflated_bytes)
    buffer = b""
    header: dict[str, Any] | None = None
    for block in blocks:
        buffer += block
        found = _ARRAY_START.search(buffer)
        if found is None:
            if len(buffer) > STREAM_BLOCK_BYTES:
                return None
            continue
        try:
            header = orjson.loads(buffer[: found.start()].rstrip().rstrip(b",") + b"}")
        except orjson.JSONDecodeError:
            return None
        buffer = buffer[found.end() :]
        break
    if not isinstance(header, dict) or not buffer.startswith(b"{") or _KINETO_SEPARATOR not in buffer[: 1 << 20]:
        return None
    chunks: list[EventFrames] = []  # BLOCKS_PER_CHUNK blocks' frames each
    parts: list[EventFrames] = []  # the blocks' frames since the last chunk
    done = False
    for block in chain([b""], blocks):
        buffer += block
        end = _KINETO_ARRAY_END.search(buffer)
        if end is not None:
            events, done = buffer[: end.start()] + b"\n  }", True
        else:
            cut = buffer.rfind(_KINETO_SEPARATOR)
            if cut < 0:
                continue
            events, buffer = buffer[: cut + 4], buffer[cut + 5 :]  # the comma dropped
        if events.strip():
            frame = _ndjson(events)
            if frame is None:
                return None
            # each frame in one buffer per column: a block's frames come in the parser's many small chunks, which
            # held several times their size until stacked
            parts.append(tuple(part.rechunk() for part in kept(frame)))
            if len(parts) == BLOCKS_PER_CHUNK:
                chunks.append(_stacked(parts, rechunk=True))
                parts = []
        if done:
            break
    if not done:
        return None
    if parts:
        chunks.append(_stacked(parts, rechunk=True))
    if not chunks:  # an empty event array: the whole reading says what it is
        return None
    return header, _stacked(chunks, rechunk=False)


def _stacked(parts: list[EventFrames], rechunk: bool) -> EventFrames:
    """The blocks' frames one below the other (`rechunk`: each column as one buffer)."""
    return tuple(
        pl.concat([p[i] for p in parts], how="vertical_relaxed", rechunk=rechunk) for i in range(len(parts[0]))
    )


def _ndjson(events: bytes) -> pl.DataFrame | None:
    """A run of libkineto-laid-out events as a frame (None when one of them is not what the layout promises)."""
    lines = events.replace(_KINETO_SEPARATOR, b"\n  }\x00  {").replace(b"\n", b" ").replace(b"\x00", b"\n")
    return _parsed(lines, lambda text: pl.read_ndjson(io.BytesIO(text), schema=NDJSON_SCHEMA))


# A kernel's `grid` is its launch shape, [x, y, z]; the operator torch.compile's Triton launcher records for a kernel
# carries its grid as text ("grid(100,)"), which one typed column cannot hold beside the lists
_TEXT_GRID = re.compile(rb'"grid"(\s*:\s*")')


def _parsed(text: bytes, parse: Callable[[bytes], pl.DataFrame]) -> pl.DataFrame | None:
    """`parse(text)`, or where its types do not fit, the same with a textual `grid` renamed (`_TEXT_GRID`: no
    frame reads it); None where neither parses. The renaming is done only then: a trace without one pays nothing."""
    try:
        return parse(text)
    except (pl.exceptions.PolarsError, ValueError, TypeError):
        renamed = _TEXT_GRID.sub(rb'"grid_text"\1', text)
    try:
        return parse(renamed) if renamed != text else None
    except (pl.exceptions.PolarsError, ValueError, TypeError):
        return None


def _launch_context(gpu: pl.DataFrame, calls: pl.DataFrame, ranges: pl.DataFrame) -> dict[str, pl.Series]:
    """Each GPU activity's outermost operator and its user annotations (ProfilerStep#N aside) open on the
    launching thread when its API call began (found by correlation id). The outermost operator is one as-of
    lookup among the thread's top-level operators (nested ones never are: a range starting inside another);
    only the annotations, far fewer, are nested into paths."""
    keyed, points = launch_points(gpu, calls)
    none = pl.repeat(None, gpu.height, dtype=pl.Utf8, eager=True)
    found: dict[str, pl.Series] = {"operator": none.alias("operator"), "annotation_path": none.alias("annotation_path")}
    if points.height == 0:
        return found
    ops = ranges.filter(pl.col("domain") == "cpu_op").select("thread", "start_ns", "end_ns", "name")
    ops = ops.sort("thread", "start_ns")
    top = ops.filter(pl.col("start_ns") >= pl.col("end_ns").cum_max().shift(1).over("thread").fill_null(-(2**62)))
    if top.height:
        hit = points.sort("time_ns").join_asof(
            top.rename({"start_ns": "time_ns"}).sort("time_ns"),
            on="time_ns",
            by="thread",
            strategy="backward",
            check_sortedness=False,
        )
        hit = hit.filter(pl.col("end_ns") > pl.col("time_ns")).select("launch_key", pl.col("name").alias("operator"))
        found["operator"] = keyed.join(hit, on="launch_key", how="left", maintain_order="left")["operator"]
    notes = ranges.filter(
        (pl.col("domain") == "user_annotation") & ~pl.col("name").str.contains(STEP_ANNOTATION.pattern)
    )
    if notes.height:
        paths = enclosing_range_paths(notes.select("thread", "start_ns", "end_ns", "name"), points)
        joined = keyed.join(paths, on="launch_key", how="left", maintain_order="left")
        found["annotation_path"] = joined["nvtx_path"].alias("annotation_path")
    return found
