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

import gzip
import re
import zlib
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from tracekit.errors import InputError
from tracekit.importers.nsys_sqlite import enclosing_range_paths
from tracekit.importers.regions_common import DEFAULT_MAX_INFLATED_BYTES, GZIP_MAGIC, plain_head
from tracekit.parsed import LAUNCH_SCHEMA, MEMCPY_SCHEMA, NVTX_SCHEMA, Device, ParsedImport, conform, empty_frame

FORMAT = "kineto"
# Kineto's header keys, and the categories only a PyTorch profiler trace holds (older Kineto capitalized them).
_HEADER = re.compile(rb'"(?:schemaVersion|deviceProperties)"\s*:')
_CATEGORY = re.compile(
    rb'"cat"\s*:\s*"(?:kernel|Kernel|gpu_memcpy|gpu_memset|Memcpy|Memset|cuda_runtime|Runtime|cpu_op|'
    rb'Operator|user_annotation|gpu_user_annotation|python_function)"'
)
_KERNEL_ARGS = re.compile(rb'"grid"\s*:\s*\[.*"block"\s*:\s*\[', re.DOTALL)
KERNEL_CATS = frozenset({"kernel", "Kernel"})
COPY_CATS = frozenset({"gpu_memcpy", "Memcpy"})
SET_CATS = frozenset({"gpu_memset", "Memset"})
CALL_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "Driver"})
CPU_RANGE_CATS = frozenset({"cpu_op", "Operator", "user_annotation"})
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
    PyTorch-only category (cpu_op, kernel, cuda_runtime...), or kernel events carrying grid and block."""
    text = plain_head(head).removeprefix(b"\xef\xbb\xbf").lstrip()
    if not text.startswith(b"{") or b'"traceEvents"' not in text:
        return False
    return bool(_HEADER.search(text) or _CATEGORY.search(text) or _KERNEL_ARGS.search(text))


def _load(path: Path, max_inflated_bytes: int) -> Any:
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
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(str(path), f"not valid JSON ({exc.msg})", line=exc.lineno) from None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dims(value: Any) -> tuple[int | None, int | None, int | None]:
    if isinstance(value, list) and len(value) == 3:
        return _int(value[0]), _int(value[1]), _int(value[2])
    return None, None, None


def _thread(pid: Any, tid: Any) -> int | None:
    """One integer per (pid, tid): the timeline row the event sits on."""
    if isinstance(pid, int) and isinstance(tid, int):
        return (pid << THREAD_BITS) | (tid & 0xFFFFFFFF)
    return None


Schema = dict[str, pl.DataType | type[pl.DataType]]


class _Columns:
    """Column lists filled in one pass over the events."""

    def __init__(self, what: str, names: tuple[str, ...]) -> None:
        self.what = what
        self.data: dict[str, list[Any]] = {name: [] for name in names}

    def frame(self, path: Path, schema: Schema) -> pl.DataFrame:
        """The columns as a frame of `schema`; a value of another type is refused, naming the event and field."""
        try:
            return pl.DataFrame(self.data, schema=schema, strict=True)
        except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
            pass  # not a stub: the columns are scanned below for the value to name in the error
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


KERNEL_FIELDS: Schema = {
    "kernel_name": pl.Utf8,
    "ts": pl.Float64,
    "dur": pl.Float64,
    "device_id": pl.Int64,
    "context_id": pl.Int64,
    "stream_id": pl.Int64,
    "correlation_id": pl.Int64,
    "registers_per_thread": pl.Int64,
    "dynamic_smem_bytes": pl.Int64,
    "grid_x": pl.Int64,
    "grid_y": pl.Int64,
    "grid_z": pl.Int64,
    "block_x": pl.Int64,
    "block_y": pl.Int64,
    "block_z": pl.Int64,
    "gpu_thread": pl.Int64,
}
COPY_FIELDS: Schema = {"kind": pl.Utf8, "size_bytes": pl.Int64, "ts": pl.Float64, "dur": pl.Float64}
COPY_FIELDS |= {"stream_id": pl.Int64, "device_id": pl.Int64}
RANGE_FIELDS: Schema = {
    "name": pl.Utf8,
    "domain": pl.Utf8,
    "ts": pl.Float64,
    "dur": pl.Float64,
    "thread": pl.Int64,
}
CALL_FIELDS: Schema = {"correlation_id": pl.Int64, "thread": pl.Int64, "ts": pl.Float64}


def read(path: Path, max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES, **options: Any) -> ParsedImport:
    path = Path(path)
    document = _load(path, max_inflated_bytes)
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        raise InputError(str(path), "not a PyTorch profiler trace: expected a JSON object with a 'traceEvents' list")
    kernels = _Columns("kernel", tuple(KERNEL_FIELDS))
    copies = _Columns("memory copy/set", tuple(COPY_FIELDS))
    ranges = _Columns("operator/annotation", tuple(RANGE_FIELDS))
    calls = _Columns("launch call", tuple(CALL_FIELDS))
    k, c, r, cl = kernels.data, copies.data, ranges.data, calls.data
    for index, event in enumerate(document["traceEvents"]):
        if not isinstance(event, dict):
            raise InputError(str(path), f"traceEvents[{index}] is not an object")
        cat = event.get("cat")
        if cat is None or event.get("ph") != "X":
            continue
        args = event.get("args")
        if not isinstance(args, dict):
            args = {}
        if cat in KERNEL_CATS:
            grid, block = _dims(args.get("grid")), _dims(args.get("block"))
            k["kernel_name"].append(event.get("name"))
            k["ts"].append(event.get("ts"))
            k["dur"].append(event.get("dur"))
            k["device_id"].append(args.get("device"))
            k["context_id"].append(args.get("context"))
            k["stream_id"].append(args.get("stream"))
            k["correlation_id"].append(args.get("correlation"))
            k["registers_per_thread"].append(args.get("registers per thread"))
            k["dynamic_smem_bytes"].append(args.get("shared memory"))
            k["grid_x"].append(grid[0])
            k["grid_y"].append(grid[1])
            k["grid_z"].append(grid[2])
            k["block_x"].append(block[0])
            k["block_y"].append(block[1])
            k["block_z"].append(block[2])
            k["gpu_thread"].append(_thread(event.get("pid"), event.get("tid")))
        elif cat in CALL_CATS:
            cl["correlation_id"].append(args.get("correlation"))
            cl["thread"].append(_thread(event.get("pid"), event.get("tid")))
            cl["ts"].append(event.get("ts"))
        elif cat in CPU_RANGE_CATS or cat in GPU_RANGE_CATS:
            r["name"].append(event.get("name"))
            r["domain"].append(cat)
            r["ts"].append(event.get("ts"))
            r["dur"].append(event.get("dur"))
            r["thread"].append(_thread(event.get("pid"), event.get("tid")))
        elif cat in COPY_CATS or cat in SET_CATS:
            kind: str | None = "Memset"
            if cat in COPY_CATS:
                match = _COPY_KIND.match(str(event.get("name")))
                kind = match.group(1) if match else None
            c["kind"].append(kind)
            c["size_bytes"].append(args.get("bytes"))
            c["ts"].append(event.get("ts"))
            c["dur"].append(event.get("dur"))
            c["stream_id"].append(args.get("stream"))
            c["device_id"].append(args.get("device"))
    kernel_frame = kernels.frame(path, KERNEL_FIELDS)
    copy_frame = copies.frame(path, COPY_FIELDS)
    range_frame = ranges.frame(path, RANGE_FIELDS)
    call_frame = calls.frame(path, CALL_FIELDS)
    warnings: list[str] = []
    launches = _launches(path, kernel_frame)
    range_frame = _timed(range_frame).filter(pl.col("name").is_not_null())
    launches = launches.with_columns(nvtx_path=_paths(launches, range_frame, _timed(call_frame, with_dur=False)))
    if launches.height == 0:
        warnings.append("no kernel events: the trace was recorded without CUDA activity (ProfilerActivity.CUDA)")
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
    frame = _timed(kernels).sort(["start_ns", "correlation_id"], nulls_last=True)
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
        warnings.append(f"deviceProperties lists {len(devices)} GPUs and none is the kernels' device {wanted}")
        return None
    major, minor = _int(chosen.get("computeMajor")), _int(chosen.get("computeMinor"))
    threads, warp = _int(chosen.get("maxThreadsPerMultiprocessor")), _int(chosen.get("warpSize"))
    name = chosen.get("name")
    return Device(
        name=name if isinstance(name, str) else None,
        compute_capability=f"{major}.{minor}" if major is not None and minor is not None else None,
        sm_count=_int(chosen.get("numSms")),
        sm_clock_hz=None,  # Kineto does not record the SM clock
        max_warps_per_sm=threads // warp if threads and warp else None,
        extra={key: chosen[source] for source, key in DEVICE_EXTRA.items() if _int(chosen.get(source)) is not None},
    )


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
