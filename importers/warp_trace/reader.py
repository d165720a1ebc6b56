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

This module is what detection imports (`sniff`, with nothing but zlib); `read` loads the rest, one module per
concern in this package: `content` (plain or gzip content), `csv_file`, `records` (Parquet, JSON) and `examiner`
(cuda_scheduling_examiner) read a container into typed rows (`columns`); `metadata` types the metadata; `validate`
checks the rows and assembles the import, with `clock` (cycles as time) and `launches` (launches and their
completeness).
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from tracekit.errors import InputError
from tracekit.importers.warp_trace.metadata import KNOWN_METADATA
from tracekit.parsed import ParsedImport

__all__ = ["FORMAT", "KNOWN_METADATA", "read", "sniff"]

FORMAT = "warp-trace"
MAGIC = b"# tracekit-warp-trace"
SUPPORTED_VERSIONS = ("v1", "1")
GZIP_MAGIC = b"\x1f\x8b"
HEAD_BYTES = 4096  # what format detection looks at
PARQUET_MAGIC = b"PAR1"
DEFAULT_MAX_INFLATED_BYTES = 4 * 2**30
PREAMBLE_LIMIT_BYTES = 1 << 20  # metadata + header must fit in the first MiB
REQUIRED = ("sm_id", "block_id", "warp_in_block")


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
    **options: object,
) -> ParsedImport:
    """Parse one warp trace (CSV, gzip, Parquet or JSON) into launches, warps and the device.

    A launch with fewer warps than its grid and block launch (a truncated trace) is refused, or with
    `allow_incomplete` imported with an "incomplete" warning that the store keeps with the import."""
    # here, not at the top: detection imports this module for `sniff` alone
    from tracekit.importers.warp_trace.content import inflate, is_gzip, plain_content
    from tracekit.importers.warp_trace.csv_file import read_csv
    from tracekit.importers.warp_trace.records import read_json, read_parquet
    from tracekit.importers.warp_trace.validate import assemble

    path = Path(path)
    if max_inflated_bytes is None:
        max_inflated_bytes = int(os.environ.get("TRACEKIT_MAX_INFLATED_BYTES") or DEFAULT_MAX_INFLATED_BYTES)
    if clock_hz is not None and not clock_hz > 0:
        raise InputError(str(path), f"--clock-hz must be a positive number of Hz, got {clock_hz!r}")
    gzipped = is_gzip(path)
    if gzipped:  # checked whole (complete, within the limit) before anything reads it
        head = inflate(path, None, max_inflated_bytes)
    else:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    if not head.strip():
        raise InputError(str(path), "the gzip content is empty" if gzipped else "the file is empty")
    if head.startswith(PARQUET_MAGIC) or head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{"):
        with plain_content(path, max_inflated_bytes) as content:
            reader = read_parquet if head.startswith(PARQUET_MAGIC) else read_json
            return assemble(path, reader(path, content, column_map), clock_hz, allow_incomplete)
    # CSV, gzip or not: polars reads gzip itself (faster than inflating to a file first); error messages re-read
    # the content (`open_content`) for line numbers
    return assemble(path, read_csv(path, path, head, column_map), clock_hz, allow_incomplete)
