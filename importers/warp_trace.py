"""Per-warp clock traces: when each warp of a kernel started and ended, and on which SM.

A warp trace is recorded inside the kernel (one lane per warp reads `%globaltimer` and/or `clock64()` at its
first and last instruction, plus `%smid`) and written by the host. tracekit reads it as CSV (optionally
gzip-compressed), Parquet or JSON; detection looks at the content (gzip magic `1f 8b`, `PAR1`, `{`), never at
the file name.

CSV layout (`tracekit-warp-trace v1`)::

    # tracekit-warp-trace v1
    # kernel: vector_add
    # device_name: NVIDIA H100 80GB HBM3
    # compute_capability: 9.0
    # sm_count: 132
    # sm_clock_hz: 1980000000
    # max_warps_per_sm: 64
    # grid: 4096,1,1
    # block: 256,1,1
    # registers_per_thread: 16
    # static_smem_bytes: 0
    # dynamic_smem_bytes: 0
    # launch_duration_ns: 123456
    # clock_bits: 64
    launch,sm_id,block_id,warp_in_block,start_ns,end_ns,start_cycles,end_cycles
    0,12,0,0,1700000000123,1700000004567,123456789,123465000

Metadata: `# key: value` lines before the header, all optional. Known keys: `kernel`, `mangled_name`,
`device_name`, `compute_capability`, `sm_count`, `sm_clock_hz`, `max_warps_per_sm`, `grid` and `block`
(`x[,y[,z]]`, missing dimensions are 1), `registers_per_thread`, `static_smem_bytes`, `dynamic_smem_bytes`,
`launch_duration_ns` (host-measured duration; used only when the file holds one launch), `clock_bits` (64 for
`clock64()`, 32 for `clock()`), `tool`, `tool_version`. Other keys are kept in the device's `extra`. A line
starting with `#` that has no `:` is a comment.

Columns (one row per warp; names are matched case-insensitively; `--map FIELD=COLUMN` renames, where FIELD is
a full name below or a short alias `start`, `end`, `sm`, `block`, `warp`):

- required: `sm_id` (`%smid`), `block_id` (linearized blockIdx), `warp_in_block`;
- time, at least one pair: `start_ns`/`end_ns` (`%globaltimer`, ns) or `start_cycles`/`end_cycles` (SM clock);
- optional: `launch` (0-based launch number, for repeated launches in one file; default 0) and `kernel`
  (per-row kernel name, overriding the header; each distinct (kernel, launch) is then one launch).

Time base: `%globaltimer` ns are kept as recorded (absolute; the analysis shifts them), and cycles, when present
too, are kept raw in `start_cycles`/`end_cycles`. With cycles only, they are converted with the SM clock
(`clock_hz` option, else `sm_clock_hz` metadata) and, because each SM has its own counter, shifted per (launch,
SM) so that the SM's earliest warp start is 0 (a warning says cross-SM alignment is unknown). 32-bit `clock()`
values (`clock_bits: 32`, or all values below 2^32 with some end < start) wrap every 2^32 cycles: durations are
taken modulo 2^32, and a warning says when a duration may be ambiguous (over half the wrap period, or a launch
whose ns span exceeds the wrap period).

Launches: the header metadata fills each launch (it applies to every launch, or, when rows name their kernel,
to the launches of the header's `kernel`); `duration_ns` is `launch_duration_ns` when given for a single
launch, else the span max(end_ns) - min(start_ns) of the launch's warps; with `%globaltimer`, the launch's
`start_ns`/`end_ns` are its first warp start and last warp end (a lower bound of the kernel's own span).

Parquet: the same columns; metadata may be in the file's key-value metadata under the same keys (only the
known keys are read there, since libraries store their own entries in it).
JSON: `{"metadata": {...}, "warps": [{"sm_id": 3, "block_id": 0, ...}, ...]}` with the field names above, or
the log of cuda_scheduling_examiner (`{"times": [{}, {"cpu_times": ...}, {"kernel_name", "block_count",
"thread_count", "shared_memory", "block_times": [start, end, ...], "block_smids": [...]}, ...]}`, times in seconds
since the program start): each entry with `block_times` is one launch (grid_x = block_count, block_x =
thread_count, dynamic_smem_bytes = shared_memory). That log times blocks, not warps, so each block becomes one
record with `warp_in_block` 0 (and a warning says so).

Bad input is an `InputError` naming the file and the CSV line (or row index) and column: unparsable numbers,
missing values, negative SM/block/warp ids, end before start, a (launch, block, warp) seen twice, missing
columns, empty or binary files, truncated or corrupt gzip, and gzip that inflates past `max_inflated_bytes`
(default $TRACEKIT_MAX_INFLATED_BYTES, else 4 GiB; the dashboard passes its upload cap; the check runs while
streaming, so a gzip bomb is never inflated whole).
"""

from __future__ import annotations

import bisect
import gzip
import json
import math
import os
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import polars as pl
from isal import isal_zlib

from tracekit.errors import InputError
from tracekit.parsed import LAUNCH_SCHEMA, WARP_SCHEMA, Device, ParsedImport, conform
from tracekit.scratch import prefix, scratch_dir

FORMAT = "warp-trace"
MAGIC = b"# tracekit-warp-trace"
SUPPORTED_VERSIONS = ("v1", "1")
GZIP_MAGIC = b"\x1f\x8b"
HEAD_BYTES = 4096  # what format detection looks at
PARQUET_MAGIC = b"PAR1"
DEFAULT_MAX_INFLATED_BYTES = 4 * 2**30
WRAP_32 = 2**32
INT32_MAX = 2**31 - 1
PREAMBLE_LIMIT_BYTES = 1 << 20  # metadata + header must fit in the first MiB

FIELDS = ("launch", "kernel", "sm_id", "block_id", "warp_in_block", "start_ns", "end_ns", "start_cycles", "end_cycles")
INT_FIELDS = tuple(name for name in FIELDS if name != "kernel")
ALIASES = {"start": "start_ns", "end": "end_ns", "sm": "sm_id", "block": "block_id", "warp": "warp_in_block"}
REQUIRED = ("sm_id", "block_id", "warp_in_block")

INT_METADATA = (
    "sm_count",
    "max_warps_per_sm",
    "registers_per_thread",
    "static_smem_bytes",
    "dynamic_smem_bytes",
    "clock_bits",
)
FLOAT_METADATA = ("sm_clock_hz", "launch_duration_ns")
DIM_METADATA = ("grid", "block")
TEXT_METADATA = ("kernel", "mangled_name", "device_name", "compute_capability", "tool", "tool_version")
KNOWN_METADATA = INT_METADATA + FLOAT_METADATA + DIM_METADATA + TEXT_METADATA
# What CUDA hardware allows (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"):
# grid x up to 2^31-1 (y, z 65535, bounded here by x's limit), 1024 threads per block, 255 registers per
# thread; shared memory and SM counts far below the bounds given here.
METADATA_RANGES: dict[str, tuple[int, int]] = {
    "grid": (1, 2**31 - 1),
    "block": (1, 1024),
    "registers_per_thread": (0, 255),
    "static_smem_bytes": (0, 2**31 - 1),
    "dynamic_smem_bytes": (0, 2**31 - 1),
    "sm_count": (1, 2**16),
    "max_warps_per_sm": (1, 1024),
}

# A row's place in the input, for messages: (CSV line or None, label such as "warps[3]").
Where = Callable[[int], tuple[int | None, str]]


@dataclass
class _Table:
    """What a container reader hands to the shared validation: rows in project field names, typed."""

    # project field names; Int64 (kernel: text or Categorical); may carry "__row" (index before filtering)
    rows: pl.DataFrame
    columns: dict[str, str]  # project field -> the input's column name, for messages
    where: Where
    metadata: dict[str, str] = field(default_factory=dict)
    metadata_lines: dict[str, int] = field(default_factory=dict)
    launch_info: pl.DataFrame | None = None  # per-launch fields keyed by "launch" (cuda_scheduling_examiner)
    tool: str | None = None
    tool_version: str | None = None
    warnings: list[str] = field(default_factory=list)


# ---- detection -----------------------------------------------------------------------------------------------


def sniff(head: bytes) -> bool:
    """Our CSV (magic line or sm_id/block_id/warp_in_block header), Parquet, our JSON, or gzip of any of them.

    Gzip that does not inflate at all is claimed too, so that reading it reports the gzip problem.
    """
    if head.startswith(GZIP_MAGIC):
        try:
            inflated = zlib.decompressobj(31).decompress(head, 64 * 1024)
        except zlib.error:
            return True
        return not inflated or _sniff_plain(inflated)
    return _sniff_plain(head)


def _sniff_plain(head: bytes) -> bool:
    if head.startswith(PARQUET_MAGIC):
        return True
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text.startswith(MAGIC):
        return True
    if text.startswith(b"{"):
        return b'"warps"' in text or b'"block_times"' in text or (b'"benchmark_name"' in text and b'"times"' in text)
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        names = {name.strip().strip('"').lower() for name in line.decode("utf-8", "replace").split(",")}
        return set(REQUIRED) <= names
    return False


# ---- entry point ---------------------------------------------------------------------------------------------


def read(
    path: Path,
    column_map: dict[str, str] | None = None,
    clock_hz: float | None = None,
    max_inflated_bytes: int | None = None,
    allow_incomplete: bool = False,
    **options,
) -> ParsedImport:
    """Parse one warp trace (CSV, gzip, Parquet or JSON) into launches, warps and the device.

    A launch with fewer warps than its grid and block launch (a truncated trace) is refused, or with
    `allow_incomplete` imported with an "incomplete" warning that the store keeps with the import."""
    path = Path(path)
    if max_inflated_bytes is None:
        max_inflated_bytes = int(os.environ.get("TRACEKIT_MAX_INFLATED_BYTES") or DEFAULT_MAX_INFLATED_BYTES)
    if clock_hz is not None and not clock_hz > 0:
        raise InputError(str(path), f"--clock-hz must be a positive number of Hz, got {clock_hz!r}")
    gzipped = _is_gzip(path)
    if gzipped:  # checked whole (complete, within the limit) before anything reads it
        head = _inflate(path, None, max_inflated_bytes)
    else:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    if not head.strip():
        raise InputError(str(path), "the gzip content is empty" if gzipped else "the file is empty")
    if head.startswith(PARQUET_MAGIC) or head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{"):
        with _plain_content(path, max_inflated_bytes) as content:
            read_table = _read_parquet if head.startswith(PARQUET_MAGIC) else _read_json
            return _assemble(path, read_table(path, content, column_map), clock_hz, allow_incomplete)
    # CSV, gzip or not: polars reads gzip itself (faster than inflating to a file first); error messages re-read
    # the content (`_open_content`) for line numbers
    return _assemble(path, _read_csv(path, path, head, column_map), clock_hz, allow_incomplete)


# ---- gzip ----------------------------------------------------------------------------------------------------


def _is_gzip(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(2) == GZIP_MAGIC
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None


def _open_content(content: Path) -> IO[bytes]:
    """The file's text, inflated as it is read when it is gzip (only error messages and the preamble read this
    way: line by line, from the start)."""
    return gzip.open(content, "rb") if _is_gzip(content) else open(content, "rb")


@contextmanager
def _plain_content(path: Path, max_inflated_bytes: int) -> Iterator[Path]:
    """`path` itself, or for gzip a temporary file with the inflated content (removed afterwards)."""
    if not _is_gzip(path):
        yield path
        return
    descriptor, name = tempfile.mkstemp(prefix=prefix("warp-trace"), suffix=".inflated", dir=scratch_dir())
    try:
        with os.fdopen(descriptor, "wb") as handle:
            _inflate(path, handle, max_inflated_bytes)
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)  # already gone when a signal's exit removed the process's files


def _inflate(path: Path, out: IO[bytes] | None, limit: int, in_chunk: int = 1 << 20, out_chunk: int = 1 << 22) -> bytes:
    """Stream-inflate every gzip member of `path` into `out` (None: only check it), refusing a corrupt or truncated
    stream, and as soon as the output passes `limit`; returns the first HEAD_BYTES inflated. ISA-L's inflater:
    the same stream as zlib's, about 2.5 times as fast."""
    inflater = isal_zlib.decompressobj(31)
    head = b""
    total = 0
    data = b""
    output_pending = False  # zlib may hold output back when the last call filled `out_chunk`
    with open(path, "rb") as source:
        while True:
            if inflater.eof:
                data = inflater.unused_data or source.read(in_chunk)
                if not data:
                    break
                inflater = isal_zlib.decompressobj(31)  # the next member of a multi-member gzip
            elif not data and not output_pending:
                data = source.read(in_chunk)
                if not data:
                    break
            try:
                inflated = inflater.decompress(data, out_chunk)
            except isal_zlib.error as exc:
                raise InputError(str(path), f"corrupt gzip data after {total:,} inflated bytes ({exc})") from None
            total += len(inflated)
            if total > limit:
                raise InputError(
                    str(path),
                    f"the gzip content inflates past {limit:,} bytes; refused "
                    "(TRACEKIT_MAX_INFLATED_BYTES sets the limit)",
                )
            if len(head) < HEAD_BYTES:
                head += inflated[: HEAD_BYTES - len(head)]
            if out is not None:
                out.write(inflated)
            output_pending = len(inflated) == out_chunk
            data = inflater.unconsumed_tail
    if not inflater.eof:
        raise InputError(
            str(path), f"the gzip stream is truncated (it stops after {total:,} inflated bytes, before its end marker)"
        )
    return head


# ---- CSV -----------------------------------------------------------------------------------------------------


def _read_csv(path: Path, content: Path, head: bytes, column_map: dict[str, str] | None) -> _Table:
    if b"\x00" in head:
        raise InputError(str(path), "binary data: not a warp trace (expected CSV text, Parquet or JSON)")
    metadata, metadata_lines, _, header_line, version = _read_preamble(path, content)
    try:
        raw_names = pl.read_csv(content, skip_lines=header_line - 1, n_rows=0, infer_schema=False, glob=False).columns
    except pl.exceptions.PolarsError as exc:
        raise InputError(str(path), f"unreadable CSV header: {str(exc).splitlines()[0]}", line=header_line) from None
    header_names = [name.strip() for name in raw_names]
    columns = _resolve_columns(path, header_names, column_map, metadata, header_line)
    indices = [header_names.index(name) for name in columns.values()]
    fields_by_index = dict(zip(indices, columns, strict=True))
    dtypes = {raw_names[i]: (pl.Categorical if fields_by_index[i] == "kernel" else pl.Int64) for i in indices}

    def where(row: int) -> tuple[int | None, str]:
        line = _csv_line_of_row(content, header_line, row)
        return line, f"line {line}"

    read_options = dict(
        has_header=True, skip_lines=header_line - 1, comment_prefix="#", columns=sorted(indices), glob=False
    )
    try:
        frame = pl.read_csv(content, schema_overrides=dtypes, **read_options)
        rows = frame.rename({raw_names[i]: fields_by_index[i] for i in indices})
    except pl.exceptions.PolarsError:
        # Slow path, only for files the typed read refuses: read as text to find the bad cell (or line).
        try:
            frame = pl.read_csv(content, infer_schema=False, **read_options)
        except pl.exceptions.PolarsError as exc:
            raise _ragged_line_error(path, content, header_line, len(raw_names), exc) from None
        rows = frame.rename({raw_names[i]: fields_by_index[i] for i in indices})
        rows = _typed(path, rows, columns, where, strip=True)
    tool = metadata.get("tool") or ("tracekit-warp-trace" if version else None)
    tool_version = metadata.get("tool_version") or version
    return _Table(rows, columns, where, metadata, metadata_lines, tool=tool, tool_version=tool_version)


def _read_preamble(path: Path, content: Path) -> tuple[dict[str, str], dict[str, int], str, int, str | None]:
    """Metadata lines, the header line (text and 1-based number) and the magic line's version, if any."""
    metadata: dict[str, str] = {}
    metadata_lines: dict[str, int] = {}
    version = None
    consumed = 0
    with _open_content(content) as handle:
        for number, raw in enumerate(iter(lambda: handle.readline(PREAMBLE_LIMIT_BYTES), b""), start=1):
            consumed += len(raw)
            if consumed > PREAMBLE_LIMIT_BYTES:
                break
            try:
                line = raw.decode("utf-8").removeprefix("\ufeff").strip()
            except UnicodeDecodeError:
                raise InputError(
                    str(path), "not UTF-8 text: not a warp trace (expected CSV, Parquet or JSON)", line=number
                ) from None
            if not line:
                continue
            if not line.startswith("#"):
                return metadata, metadata_lines, line, number, version
            body = line[1:].strip()
            if body.startswith(MAGIC[2:].decode()):
                version = body.split()[-1] if len(body.split()) > 1 else None
                if version not in SUPPORTED_VERSIONS:
                    raise InputError(
                        str(path), f"unsupported warp trace version {version!r} (this tracekit reads v1)", line=number
                    )
                continue
            key, sep, value = body.partition(":")
            if sep and key.strip():
                key = key.strip().lower()
                metadata[key] = value.strip()
                metadata_lines[key] = number
    if consumed > PREAMBLE_LIMIT_BYTES:
        raise InputError(str(path), f"no CSV header in the first {PREAMBLE_LIMIT_BYTES:,} bytes: not a warp trace")
    raise InputError(
        str(path),
        "no CSV header line (expected e.g. launch,sm_id,block_id,warp_in_block,start_ns,"
        "end_ns after the # metadata lines)",
    )


def _csv_line_of_row(content: Path, header_line: int, row: int) -> int:
    """The 1-based file line of data row `row` as polars counts rows (comment lines skipped, blank lines kept)."""
    seen = -1
    with _open_content(content) as handle:
        for number, line in enumerate(handle, start=1):
            if number <= header_line or line.startswith(b"#"):
                continue
            seen += 1
            if seen == row:
                return number
    return header_line + 1 + row


def _ragged_line_error(path: Path, content: Path, header_line: int, field_count: int, exc: Exception) -> InputError:
    with _open_content(content) as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip(b"\r\n")
            if number <= header_line or not line or line.startswith(b"#"):
                continue
            count = line.count(b",") + 1
            if count != field_count:
                return InputError(str(path), f"{count} fields where the header has {field_count}", line=number)
    return InputError(str(path), f"unreadable CSV: {str(exc).splitlines()[0]}")


# ---- Parquet -------------------------------------------------------------------------------------------------


def _read_parquet(path: Path, content: Path, column_map: dict[str, str] | None) -> _Table:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(content)
        frame = pl.read_parquet(content, glob=False)
    except Exception as exc:  # noqa: BLE001 - pyarrow/polars raise many types for a damaged file
        raise InputError(str(path), f"unreadable Parquet file: {str(exc).splitlines()[0]}") from None
    metadata = {}
    for key, value in (schema.metadata or {}).items():
        name = key.decode("utf-8", "replace").strip().lower()
        if name in KNOWN_METADATA:
            metadata[name] = value.decode("utf-8", "replace").strip()
    columns = _resolve_columns(path, frame.columns, column_map, metadata)

    def where(row: int) -> tuple[int | None, str]:
        return None, f"row {row}"

    rows = _typed(path, frame.select([pl.col(c).alias(f) for f, c in columns.items()]), columns, where)
    return _Table(rows, columns, where, metadata, tool=metadata.get("tool"), tool_version=metadata.get("tool_version"))


# ---- JSON ----------------------------------------------------------------------------------------------------


def _read_json(path: Path, content: Path, column_map: dict[str, str] | None) -> _Table:
    try:
        with open(content, "rb") as handle:
            document = json.load(handle)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno) from None
    except UnicodeDecodeError:
        raise InputError(str(path), "not UTF-8 text: not a warp trace") from None
    if isinstance(document, dict) and isinstance(document.get("warps"), list):
        return _read_json_records(path, document, column_map)
    if isinstance(document, dict) and isinstance(document.get("times"), list):
        return _read_scheduling_examiner(path, document)
    raise InputError(
        str(path),
        'JSON without a "warps" list (tracekit records) or a "times" list (cuda_scheduling_examiner): not a warp trace',
    )


def _read_json_records(path: Path, document: dict, column_map: dict[str, str] | None) -> _Table:
    records = document["warps"]
    metadata_value = document.get("metadata") or {}
    if not isinstance(metadata_value, dict):
        raise InputError(str(path), '"metadata" must be an object of key: value pairs')
    metadata = {str(k).strip().lower(): _metadata_text(v) for k, v in metadata_value.items() if v is not None}
    if not records:
        raise InputError(str(path), '"warps" is empty: no warp records')
    bad = next((i for i, record in enumerate(records) if not isinstance(record, dict)), None)
    if bad is not None:
        raise InputError(str(path), f"warps[{bad}] is not an object")
    try:
        frame = pl.from_dicts(records, infer_schema_length=None, strict=False)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        bad = next((i for i, record in enumerate(records) if not isinstance(record, dict)), None)
        if bad is not None:
            raise InputError(str(path), f"warps[{bad}] is not an object") from None
        raise InputError(str(path), '"warps" records have values of mixed, unusable types') from None
    columns = _resolve_columns(path, frame.columns, column_map, metadata)

    def where(row: int) -> tuple[int | None, str]:
        return None, f"warps[{row}]"

    rows = _typed(path, frame.select([pl.col(c).alias(f) for f, c in columns.items()]), columns, where, strip=True)
    return _Table(rows, columns, where, metadata, tool=metadata.get("tool"), tool_version=metadata.get("tool_version"))


def _metadata_text(value: object) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    return str(value)


def _read_scheduling_examiner(path: Path, document: dict) -> _Table:
    """cuda_scheduling_examiner's log: each `times` entry with `block_times` is one kernel launch."""
    launches, starts, ends, smids, offsets, labels = [], [], [], [], [], []
    launch_numbers: list[int] = []
    block_ids: list[int] = []
    for index, entry in enumerate(document["times"]):
        if not isinstance(entry, dict) or "block_times" not in entry:
            continue  # the leading {} and the CPU-times entries
        label = f"times[{index}]"
        block_times, block_smids = entry.get("block_times"), entry.get("block_smids")
        if block_smids is None:
            raise InputError(
                str(path), f'{label} has no "block_smids" (an older log without SM ids); SM ids are required'
            )
        if not isinstance(block_times, list) or not isinstance(block_smids, list):
            raise InputError(str(path), f'{label}: "block_times" and "block_smids" must be lists')
        if len(block_times) != 2 * len(block_smids):
            raise InputError(
                str(path),
                f'{label}: "block_times" has {len(block_times)} values, expected 2 per '
                f'block for the {len(block_smids)} blocks in "block_smids"',
            )
        block_count = entry.get("block_count", document.get("block_count"))
        if block_count is not None and block_count != len(block_smids):
            raise InputError(
                str(path), f'{label}: "block_count" is {block_count} but "block_smids" lists {len(block_smids)} blocks'
            )
        offsets.append(len(smids))
        labels.append(label)
        launch_numbers.extend([len(launches)] * len(block_smids))
        block_ids.extend(range(len(block_smids)))
        starts.extend(block_times[0::2])
        ends.extend(block_times[1::2])
        smids.extend(block_smids)
        launches.append(
            {
                "launch": len(launches),
                "kernel_name": entry.get("kernel_name") or document.get("label") or document.get("benchmark_name"),
                "grid_x": block_count if block_count is not None else len(block_smids),
                "grid_y": 1,
                "grid_z": 1,
                "block_x": entry.get("thread_count", document.get("thread_count")),
                "block_y": 1,
                "block_z": 1,
                "dynamic_smem_bytes": entry.get("shared_memory"),
                "source_launch_id": label,
            }
        )
    if not launches:
        raise InputError(str(path), 'no kernel entries with "block_times" in "times": nothing to import')

    def where(row: int) -> tuple[int | None, str]:
        launch = bisect.bisect_right(offsets, row) - 1
        return None, f"{labels[launch]} block {row - offsets[launch]}"

    seconds = {}
    for name, values in (("start", starts), ("end", ends)):
        series = pl.Series(name, values, strict=False)
        if not series.dtype.is_numeric() or series.null_count():
            bad = next(
                i for i, value in enumerate(values) if not isinstance(value, int | float) or isinstance(value, bool)
            )
            raise InputError(
                str(path), f"{where(bad)[1]}: block {name} time {values[bad]!r} is not a number of seconds"
            )
        seconds[name] = series.cast(pl.Float64)
    raw = pl.DataFrame(
        {"launch": launch_numbers, "block_id": block_ids, "sm_id": pl.Series(smids, strict=False)},
        schema_overrides={"launch": pl.Int64, "block_id": pl.Int64},
    )
    rows = pl.DataFrame(
        {
            "launch": raw["launch"],
            "sm_id": _typed_column(path, raw, "sm_id", "block_smids", where),
            "block_id": raw["block_id"],
            "warp_in_block": pl.repeat(0, raw.height, dtype=pl.Int64, eager=True),
            "start_ns": (seconds["start"] * 1e9).round().cast(pl.Int64),
            "end_ns": (seconds["end"] * 1e9).round().cast(pl.Int64),
        }
    )
    columns = {
        "launch": "times",
        "sm_id": "block_smids",
        "block_id": "block index",
        "warp_in_block": "-",
        "start_ns": "block_times",
        "end_ns": "block_times",
    }
    warnings = [
        "per-block timings: each block is imported as one warp record (warp_in_block 0); "
        "cuda_scheduling_examiner logs times in seconds since the program start"
    ]
    launch_info = pl.DataFrame(launches, infer_schema_length=None)
    return _Table(rows, columns, where, {}, launch_info=launch_info, tool="cuda_scheduling_examiner", warnings=warnings)


# ---- columns and types ---------------------------------------------------------------------------------------


def _resolve_columns(
    path: Path, names: list[str], column_map: dict[str, str] | None, metadata: dict[str, str], line: int | None = None
) -> dict[str, str]:
    """Project field -> input column: `column_map` first (aliases allowed), then names equal to the fields."""
    by_lower = {name.lower(): name for name in names}
    mapping: dict[str, str] = {}
    for key, column in (column_map or {}).items():
        field_name = ALIASES.get(key.strip().lower(), key.strip().lower())
        if field_name not in FIELDS:
            raise InputError(
                str(path),
                f"--map {key}={column}: unknown field {key!r} (fields: "
                f"{', '.join(FIELDS)}; aliases: {', '.join(ALIASES)})",
            )
        if column not in names:
            raise InputError(
                str(path),
                f"--map {key}={column}: the input has no column {column!r} (columns: {', '.join(names)})",
                line=line,
            )
        mapping[field_name] = column
    used = set(mapping.values())
    for field_name in FIELDS:
        column = by_lower.get(field_name)
        if field_name not in mapping and column is not None and column not in used:
            mapping[field_name] = column
    listing = ", ".join(names) or "none"
    for field_name in REQUIRED:
        if field_name not in mapping:
            alias = next(a for a, f in ALIASES.items() if f == field_name)
            raise InputError(
                str(path),
                f"missing column {field_name!r} (columns: {listing}); name another column with --map {alias}=COLUMN",
                line=line,
            )
    for start, end in (("start_ns", "end_ns"), ("start_cycles", "end_cycles")):
        if (start in mapping) != (end in mapping):
            have, lack = (start, end) if start in mapping else (end, start)
            raise InputError(str(path), f"column {have!r} without {lack!r}", line=line)
    if "start_ns" not in mapping and "start_cycles" not in mapping:
        raise InputError(
            str(path),
            f"no time columns: need start_ns/end_ns (%globaltimer) or start_cycles/"
            f"end_cycles (clock64) (columns: {listing})",
            line=line,
        )
    return mapping


def _typed(path: Path, rows: pl.DataFrame, columns: dict[str, str], where: Where, strip: bool = False) -> pl.DataFrame:
    """Every integer field as Int64 (and `kernel` as text), or an InputError at the first cell that is not one."""
    typed = [
        _typed_column(path, rows, name, columns[name], where, strip) for name in rows.columns if name in INT_FIELDS
    ]
    if "kernel" in rows.columns:
        typed.append(pl.col("kernel").cast(pl.Utf8))
    return rows.select(typed)


def _typed_column(
    path: Path, rows: pl.DataFrame, name: str, column: str, where: Where, strip: bool = False
) -> pl.Series:
    series = rows[name]
    dtype = series.dtype
    if dtype.is_integer():
        converted = series.cast(pl.Int64, strict=False)
        bad = series.is_not_null() & converted.is_null()
        problem = "out of the 64-bit integer range"
    elif dtype.is_float():
        converted = series.cast(pl.Int64, strict=False)
        bad = series.is_not_null() & (~series.is_finite() | (series != series.floor()) | converted.is_null())
        problem = "not an integer"
    elif dtype == pl.Utf8:
        text = series.str.strip_chars() if strip else series
        text = text.replace("", None)
        converted = text.cast(pl.Int64, strict=False)
        bad = text.is_not_null() & converted.is_null()
        problem = "not an integer"
    elif dtype == pl.Null:
        return pl.Series(name, [None] * len(series), dtype=pl.Int64)
    else:
        raise InputError(str(path), f"column {column!r} holds {dtype} values, expected integers")
    if bad.any():
        row = int(bad.arg_true()[0])
        raise _row_error(path, where, row, column, f"{problem}: {series[row]!r}")
    return converted.alias(name)


def _row_error(path: Path, where: Where, row: int, column: str | None, message: str) -> InputError:
    line, label = where(row)
    if line is not None:
        return InputError(str(path), message, line=line, column=column)
    return InputError(str(path), f"{label}" + (f" (column {column!r})" if column else "") + f": {message}")


def _first_true(frame: pl.DataFrame, condition: pl.Expr) -> int | None:
    value = frame.select(condition.arg_true().first()).item()
    return None if value is None else int(value)


# ---- validation, time base, launches -------------------------------------------------------------------------


def _assemble(path: Path, table: _Table, clock_hz: float | None, allow_incomplete: bool = False) -> ParsedImport:
    rows, columns, warnings = table.rows, table.columns, list(table.warnings)
    meta = _parse_metadata(path, table)

    def fail(frame: pl.DataFrame, row: int, field_name: str | None, message: str) -> InputError:
        original = int(frame["__row"][row]) if "__row" in frame.columns else row
        return _row_error(path, table.where, original, columns.get(field_name) if field_name else None, message)

    rows = _drop_blank_rows(rows)
    if rows.height == 0:
        raise InputError(str(path), "no warp rows (only metadata and a header)")
    has_ns = "start_ns" in rows.columns
    has_cycles = "start_cycles" in rows.columns
    needed = [*REQUIRED, *(("start_ns", "end_ns") if has_ns else ("start_cycles", "end_cycles"))]
    checks: list[tuple[str, pl.Expr, str]] = [(name, pl.col(name).is_null(), "missing value") for name in needed]
    checks += [
        ("sm_id", pl.col("sm_id") < 0, "negative SM id"),
        ("sm_id", pl.col("sm_id") > INT32_MAX, "SM id out of range"),
        ("block_id", pl.col("block_id") < 0, "negative block id"),
        ("warp_in_block", pl.col("warp_in_block") < 0, "negative warp index"),
        ("warp_in_block", pl.col("warp_in_block") > INT32_MAX, "warp index out of range"),
    ]
    if "launch" in rows.columns:
        checks += [
            ("launch", pl.col("launch").is_null(), "missing value"),
            ("launch", pl.col("launch") < 0, "negative launch number"),
        ]
    if has_ns:
        checks += [
            ("start_ns", pl.col("start_ns") < 0, "negative time (%globaltimer counts up from 0)"),
            ("end_ns", pl.col("end_ns") < 0, "negative time (%globaltimer counts up from 0)"),
            ("end_ns", pl.col("end_ns") < pl.col("start_ns"), "end_ns is before start_ns"),
        ]
    if has_cycles:
        checks += [(name, pl.col(name) < 0, "negative clock value") for name in ("start_cycles", "end_cycles")]
    _raise_first(rows, checks, fail)

    rows = _with_launch_keys(rows, meta.get("kernel"))
    bits = _clock_bits(rows, meta, fail, warnings, cycles_only=not has_ns) if has_cycles else None
    cycle_duration = _cycle_durations(rows, bits) if bits == 32 or not has_ns else None
    if not has_ns:
        hz = clock_hz or meta.get("sm_clock_hz")
        if not hz:
            raise InputError(
                str(path),
                "the trace has clock cycles but no %globaltimer ns: pass --clock-hz "
                "(the SM clock in Hz) or add '# sm_clock_hz: ...' to convert them",
            )
        rows = _cycles_to_ns(path, rows, hz, bits, cycle_duration)
        warnings.append(
            f"times come from per-SM clock cycles at {hz:,.0f} Hz: each SM's earliest warp start is "
            f"set to 0 per launch, so cross-SM alignment is unknown"
        )
    if bits == 32:
        warnings += _wrap_warnings(rows, clock_hz or meta.get("sm_clock_hz"), cycle_duration, has_ns)

    duplicate = _first_duplicate(rows)
    if duplicate is not None:
        key = rows.row(duplicate, named=True)
        first = _first_true(
            rows,
            (pl.col("launch_key") == key["launch_key"])
            & (pl.col("block_id") == key["block_id"])
            & (pl.col("warp_in_block") == key["warp_in_block"]),
        )
        first_place = table.where(int(rows["__row"][first]) if "__row" in rows.columns else first)
        raise fail(
            rows,
            duplicate,
            "warp_in_block",
            f"duplicate warp: block {key['block_id']}, warp "
            f"{key['warp_in_block']} of launch {key['launch']} appeared "
            f"before at {first_place[1]}",
        )
    sm_count = meta.get("sm_count")
    if sm_count:
        outside = rows.select((pl.col("sm_id") >= sm_count).sum()).item()
        if outside:
            warnings.append(f"{outside} warps have sm_id >= sm_count ({sm_count})")

    launches = _launches(rows, meta, table.launch_info, has_ns, warnings)
    if table.launch_info is None:  # per-block logs are checked against their block_count when read
        _check_complete(path, rows, launches, table, fail, allow_incomplete, warnings)
    warps = conform(rows, WARP_SCHEMA)
    return ParsedImport(
        format=FORMAT,
        tool=table.tool,
        tool_version=table.tool_version,
        device=_device(meta, table.metadata, clock_hz),
        launches=launches,
        warps=warps,
        warnings=warnings,
    )


def _check_complete(
    path: Path,
    rows: pl.DataFrame,
    launches: pl.DataFrame,
    table: _Table,
    fail,
    allow_incomplete: bool,
    warnings: list[str],
) -> None:
    """Against each launch's grid and block (where the metadata gives them): no block or warp outside them,
    and every warp they launch present. warp_trace.cuh records every warp, so fewer means a truncated file."""
    sized = launches.filter(
        pl.all_horizontal(
            pl.col(c).is_not_null() for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
        )
    ).select(
        "launch_key",
        "source_launch_id",
        "grid_x",
        "grid_y",
        "grid_z",
        "block_x",
        "block_y",
        "block_z",
        (pl.col("grid_x") * pl.col("grid_y") * pl.col("grid_z")).alias("blocks"),
        ((pl.col("block_x") * pl.col("block_y") * pl.col("block_z") + 31) // 32).alias("warps_per_block"),
    )
    if sized.height == 0:
        return
    # per launch, one group-by on its key: the count and the largest ids (the rows are searched only on a failure)
    stats = rows.group_by("launch_key").agg(
        pl.len().alias("recorded"), pl.col("block_id").max().alias("block_id"), pl.col("warp_in_block").max()
    )
    for column, limit, what in (
        ("block_id", "blocks", "outside the grid"),
        ("warp_in_block", "warps_per_block", "outside the block"),
    ):
        if sized.join(stats, on="launch_key").filter(pl.col(column) >= pl.col(limit)).height:
            outside = (
                rows.select("launch_key", column)
                .with_row_index("__at")
                .join(sized.select("launch_key", limit), on="launch_key", how="inner", maintain_order="left")
                .filter(pl.col(column) >= pl.col(limit))
            )
            first = outside.row(0, named=True)
            raise fail(
                rows, int(first["__at"]), column, f"{column} {first[column]} is {what} ({first[limit]:,} per launch)"
            )
    short = (
        sized.join(stats.select("launch_key", "recorded"), on="launch_key")
        .with_columns((pl.col("blocks") * pl.col("warps_per_block")).alias("expected"))
        .filter(pl.col("recorded") < pl.col("expected"))
    )
    for launch in short.iter_rows(named=True):
        grid = f"{launch['grid_x']},{launch['grid_y']},{launch['grid_z']}"
        block = f"{launch['block_x']},{launch['block_y']},{launch['block_z']}"
        message = (
            f"launch {launch['source_launch_id']} holds {launch['recorded']:,} of the {launch['expected']:,} warps "
            f"that grid {grid} x block {block} launches: the trace is incomplete (truncated?)"
        )
        if not allow_incomplete:
            raise InputError(
                str(path),
                f"{message}; refused (--allow-incomplete imports it marked incomplete)",
                line=table.metadata_lines.get("grid"),
            )
        warnings.append(f"INCOMPLETE: {message}; its occupancy and timing analysis cover only the recorded warps")


def _first_duplicate(rows: pl.DataFrame) -> int | None:
    """The first row whose (launch, block, warp) appeared before, or None.

    Packs the three ids into one Int64 when they fit (about 10x faster than hashing a struct on 10M rows).
    """
    limits = rows.select(pl.col("launch_key").max(), pl.col("block_id").max(), pl.col("warp_in_block").max()).row(0)
    if limits[0] < 2**11 and limits[1] < 2**40 and limits[2] < 2**12:
        key = pl.col("launch_key") * 2**52 + pl.col("block_id") * 2**12 + pl.col("warp_in_block")
    else:
        key = pl.struct("launch_key", "block_id", "warp_in_block")
    if rows.select(key.n_unique()).item() == rows.height:
        return None
    return _first_true(rows, ~key.is_first_distinct())


def _drop_blank_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """Blank CSV lines read as all-null rows; drop them, keeping each row's original index in `__row`."""
    if rows["sm_id"].null_count() == 0:
        return rows
    data_columns = [c for c in rows.columns if c != "__row"]
    blank = pl.all_horizontal([pl.col(c).is_null() for c in data_columns])
    if "__row" not in rows.columns:
        rows = rows.with_row_index("__row")
    return rows.filter(~blank)


def _raise_first(rows: pl.DataFrame, checks: list[tuple[str, pl.Expr, str]], fail) -> None:
    """All checks in one pass; raise for the earliest offending row (then the first check listed)."""
    firsts = rows.select(
        [condition.arg_true().first().alias(str(i)) for i, (_, condition, _) in enumerate(checks)]
    ).row(0)
    found = [(row, i) for i, row in enumerate(firsts) if row is not None]
    if found:
        row, i = min(found)
        field_name, _, message = checks[i]
        raise fail(rows, row, field_name, message)


def _with_launch_keys(rows: pl.DataFrame, header_kernel: str | None) -> pl.DataFrame:
    """`launch_key`: 0-based, ordered by launch number, then by first appearance of the (kernel, launch) pair.

    A per-row kernel name counts by its categorical code, never as text, and the pairs are looked up once per
    run of equal rows (a launch's warps are usually written together): a join or a unique over 10M strings
    took most of such an import."""
    if "launch" not in rows.columns:
        rows = rows.with_columns(pl.lit(0, dtype=pl.Int64).alias("launch"))
        if "kernel" not in rows.columns:
            return rows.with_columns(pl.lit(0, dtype=pl.Int64).alias("launch_key"))
    low, high = rows.select(pl.col("launch").min().alias("low"), pl.col("launch").max().alias("high")).row(0)
    if "kernel" in rows.columns:
        kernel = pl.col("kernel").cast(pl.Categorical)
        rows = rows.with_columns(kernel.fill_null(header_kernel) if header_kernel else kernel)
        code = pl.col("kernel").to_physical().cast(pl.Int64).fill_null(-1) + 1  # 0: no name
    elif low == high == 0:
        return rows.with_columns(pl.col("launch").alias("launch_key"))
    else:
        code = pl.lit(0, dtype=pl.Int64)
    # (launch, kernel) packed in one integer; launch numbers too large for it are replaced by their rank
    launch = pl.col("launch") if high < 2**30 else pl.col("launch").rank("dense").cast(pl.Int64)
    pair = rows.select(launch * 2**33 + code).to_series()
    runs = pair.rle().struct.field("value")
    distinct = (
        runs.unique(maintain_order=True)
        .to_frame("pair")
        .sort(pl.col("pair") // 2**33, maintain_order=True)
        .with_row_index("launch_key")
    )
    if "kernel" not in rows.columns and distinct["pair"].to_list() == [n * 2**33 for n in range(distinct.height)]:
        # the usual case: launches numbered 0..n-1, so the number is the key
        return rows.with_columns(pl.col("launch").alias("launch_key"))
    run_keys = runs.replace_strict(distinct["pair"], distinct["launch_key"], return_dtype=pl.Int64)
    keys = run_keys if len(runs) == len(pair) else run_keys.gather(pair.rle_id())
    return rows.with_columns(keys.alias("launch_key"))


def _clock_bits(rows: pl.DataFrame, meta: dict, fail, warnings: list[str], cycles_only: bool) -> int:
    """32 or 64: declared by `clock_bits`, else 32 when every value fits in 32 bits and some end < start."""
    declared = meta.get("clock_bits")
    stats = rows.select(
        pl.max_horizontal(pl.col("start_cycles").max(), pl.col("end_cycles").max()).alias("max"),
        (pl.col("end_cycles") < pl.col("start_cycles")).arg_true().first().alias("backwards"),
        (pl.max_horizontal("start_cycles", "end_cycles") >= WRAP_32).arg_true().first().alias("wide"),
    ).row(0, named=True)
    if declared == 32:
        bits = 32
        if stats["wide"] is not None:
            wide = rows.row(stats["wide"], named=True)
            column = "start_cycles" if (wide["start_cycles"] or 0) >= WRAP_32 else "end_cycles"
            raise fail(rows, stats["wide"], column, "clock value does not fit in 32 bits, but clock_bits is 32")
    elif declared is None and stats["backwards"] is not None and (stats["max"] or 0) < WRAP_32:
        bits = 32
        warnings.append(
            "cycle values are all below 2^32 and some end before they start: read as 32-bit clock() "
            "values that wrap (add '# clock_bits: 32' or '64' to say so)"
        )
    else:
        bits = 64
        if cycles_only and stats["backwards"] is not None:
            raise fail(rows, stats["backwards"], "end_cycles", "end_cycles is before start_cycles")
    return bits


def _cycle_durations(rows: pl.DataFrame, bits: int | None) -> pl.Series:
    """Each warp's duration in cycles, modulo 2^32 for 32-bit clocks."""
    duration = rows["end_cycles"] - rows["start_cycles"]
    if bits == 32:
        duration = duration % WRAP_32
    return duration.alias("duration_cycles")


def _cycles_to_ns(path: Path, rows: pl.DataFrame, hz: float, bits: int | None, duration: pl.Series) -> pl.DataFrame:
    """Per (launch, SM): ns since the SM's earliest warp start. 32-bit starts that straddle a wrap are unwrapped."""
    group = ["launch_key", "sm_id"]
    start = pl.col("start_cycles")
    if bits == 32:
        straddles = (start.max() - start.min()).over(group) > WRAP_32 // 2
        start = pl.when(straddles & (start < WRAP_32 // 2)).then(start + WRAP_32).otherwise(start)
    offset = start - start.min().over(group)
    ns_per_cycle = 1e9 / hz
    times = rows.with_columns(duration).with_columns(
        (offset.cast(pl.Float64) * ns_per_cycle).round().alias("start_ns"),
        ((offset + pl.col("duration_cycles")).cast(pl.Float64) * ns_per_cycle).round().alias("end_ns"),
    )
    latest = times["end_ns"].max()
    if latest is not None and not latest < 2.0**63:
        raise InputError(
            str(path),
            f"clock cycles at {hz:,.0f} Hz give times past 2^63 ns (about 292 years): is the SM clock right?",
        )
    return times.with_columns(pl.col("start_ns", "end_ns").cast(pl.Int64)).drop("duration_cycles")


def _wrap_warnings(rows: pl.DataFrame, hz: float | None, duration: pl.Series, has_ns: bool) -> list[str]:
    warnings = []
    period = f" ({WRAP_32 / hz * 1e3:,.3f} ms at {hz:,.0f} Hz)" if hz else ""
    long_count = int((duration > WRAP_32 // 2).sum())
    if long_count:
        warnings.append(
            f"{long_count} warps last over half the 32-bit clock wrap period{period}: their durations "
            f"are ambiguous (each could be longer by a multiple of 2^32 cycles)"
        )
    if has_ns and hz:
        wrap_ns = WRAP_32 / hz * 1e9
        spans = rows.group_by("launch_key").agg((pl.col("end_ns").max() - pl.col("start_ns").min()).alias("span"))
        over = spans.filter(pl.col("span") > wrap_ns).height
        if over:
            warnings.append(
                f"{over} launches span more than the 32-bit clock wrap period{period}: cycle "
                f"differences are ambiguous there; start_ns/end_ns (%globaltimer) are the time base"
            )
    return warnings


def _launches(
    rows: pl.DataFrame, meta: dict, launch_info: pl.DataFrame | None, has_ns: bool, warnings: list[str]
) -> pl.DataFrame:
    # the key stands for (launch, kernel): grouping by it alone is several times faster than by all three
    named = ["launch", *(["kernel"] if "kernel" in rows.columns else [])]
    launches = (
        rows.group_by("launch_key")
        .agg(
            pl.col(named).first(),
            pl.col("start_ns").min().alias("first_start_ns"),
            pl.col("end_ns").max().alias("last_end_ns"),
        )
        .sort("launch_key")
    )
    header_kernel = meta.get("kernel")
    kernel = pl.col("kernel") if "kernel" in launches.columns else pl.lit(header_kernel, dtype=pl.Utf8)
    applies = (pl.col("kernel") == header_kernel) if "kernel" in launches.columns and header_kernel else pl.lit(True)
    grid, block = meta.get("grid") or (None,) * 3, meta.get("block") or (None,) * 3
    from_header = {
        "mangled_name": meta.get("mangled_name"),
        "grid_x": grid[0],
        "grid_y": grid[1],
        "grid_z": grid[2],
        "block_x": block[0],
        "block_y": block[1],
        "block_z": block[2],
        "registers_per_thread": meta.get("registers_per_thread"),
        "static_smem_bytes": meta.get("static_smem_bytes"),
        "dynamic_smem_bytes": meta.get("dynamic_smem_bytes"),
    }
    span = (pl.col("last_end_ns") - pl.col("first_start_ns")).cast(pl.Float64)
    duration = meta.get("launch_duration_ns")
    if duration is not None and launches.height > 1:
        warnings.append(
            f"launch_duration_ns ignored: the file holds {launches.height} launches; durations are the warps' spans"
        )
        duration = None
    launches = launches.with_columns(
        kernel.alias("kernel_name"),
        *[
            pl.when(applies).then(pl.lit(value, dtype=LAUNCH_SCHEMA[name])).alias(name)
            for name, value in from_header.items()
        ],
        pl.col("launch").cast(pl.Utf8).alias("source_launch_id"),
        (pl.col("first_start_ns") if has_ns else pl.lit(None, dtype=pl.Int64)).alias("start_ns"),
        (pl.col("last_end_ns") if has_ns else pl.lit(None, dtype=pl.Int64)).alias("end_ns"),
        (pl.lit(float(duration)) if duration is not None else span).alias("duration_ns"),
    )
    if launch_info is not None:
        overrides = [c for c in launch_info.columns if c != "launch"]
        launches = launches.drop(overrides).join(launch_info, on="launch", how="left", maintain_order="left")
    return conform(launches, LAUNCH_SCHEMA)


# ---- metadata and device -------------------------------------------------------------------------------------


def _parse_metadata(path: Path, table: _Table) -> dict:
    """Known metadata keys with their values typed; an InputError names the line of a bad value."""
    parsed: dict[str, object] = {}
    for key, text in table.metadata.items():
        if key not in KNOWN_METADATA or text == "":
            continue
        try:
            if key in INT_METADATA:
                number = float(text)
                if not number.is_integer():
                    raise ValueError(text)
                value: object = int(number)
            elif key in FLOAT_METADATA:
                value = float(text)
            elif key in DIM_METADATA:
                dims = [int(part) for part in text.replace("x", ",").split(",") if part.strip()]
                if not 1 <= len(dims) <= 3:
                    raise ValueError(text)
                value = tuple(dims + [1] * (3 - len(dims)))
            else:
                value = text
        except ValueError:
            expected = "x[,y[,z]] integers" if key in DIM_METADATA else "a number"
            message = f"metadata {key!r}: {text!r} is not {expected}"
            raise InputError(str(path), message, line=table.metadata_lines.get(key)) from None
        parsed[key] = value
    if parsed.get("clock_bits") not in (None, 32, 64):
        raise InputError(
            str(path),
            f"metadata 'clock_bits' must be 32 or 64, not {parsed['clock_bits']}",
            line=table.metadata_lines.get("clock_bits"),
        )
    if "sm_clock_hz" in parsed and not (math.isfinite(parsed["sm_clock_hz"]) and parsed["sm_clock_hz"] > 0):
        raise InputError(
            str(path), "metadata 'sm_clock_hz' must be positive", line=table.metadata_lines.get("sm_clock_hz")
        )
    duration = parsed.get("launch_duration_ns")
    if duration is not None and not (math.isfinite(duration) and duration >= 0):
        raise InputError(
            str(path),
            f"metadata 'launch_duration_ns': {duration} is impossible (a duration is a finite number >= 0)",
            line=table.metadata_lines.get("launch_duration_ns"),
        )
    for key, (low, high) in METADATA_RANGES.items():
        values = parsed.get(key)
        for value in values if isinstance(values, tuple) else (values,):
            if value is not None and not low <= value <= high:
                raise InputError(
                    str(path),
                    f"metadata {key!r}: {value} is impossible (expected {low:,} to {high:,})",
                    line=table.metadata_lines.get(key),
                )
    return parsed


def _device(meta: dict, raw_metadata: dict[str, str], clock_hz: float | None) -> Device | None:
    extra = {key: value for key, value in raw_metadata.items() if key not in KNOWN_METADATA}
    device = Device(
        name=meta.get("device_name"),
        compute_capability=meta.get("compute_capability"),
        sm_count=meta.get("sm_count"),
        sm_clock_hz=clock_hz or meta.get("sm_clock_hz"),
        max_warps_per_sm=meta.get("max_warps_per_sm"),
        extra=extra,
    )
    if device == Device():
        return None
    return device
