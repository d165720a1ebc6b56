"""`nsys stats` CSV reports: the GPU trace (`--report cuda_gpu_trace --format csv`, `gputrace` before nsys 2022),
one row per kernel, memory copy or memory set, in start order.

Columns (nsys 2023-2026; older versions leave some out): `Start (ns)`, `Duration (ns)`, `CorrId`, `GrdX..Z`,
`BlkX..Z`, `Reg/Trd`, `StcSMem (MB)`, `DymSMem (MB)`, `Bytes (MB)`, `Throughput (MB/s)`, `SrcMemKd`, `DstMemKd`,
`Device` (`NVIDIA B200 (0)`: name and CUDA id), `Ctx`, `GreenCtx`, `Strm`, `Name`. `--timeunit` changes the time
unit in the headers, which is read from them. A row with a grid is a kernel; the others are copies
(`[CUDA memcpy Host-to-Device]`, older `[CUDA memcpy HtoD]`) and sets (`[CUDA memset]`). With the report's
`nvtx-name` option a kernel's name is prefixed by its innermost NVTX range and a `/`; that range becomes its
NVTX path. nsys writes sizes in decimal MB with three decimals, known to the kB: copy sizes are kept so
(converted to bytes), shared memory sizes are kept unknown (a warning says so), since a size off by up to 500
bytes would change the occupancy and the kernel key; an unknown size matches any profiled launch's.

The per-kernel summary (`cuda_gpu_kern_sum`) and the other summaries hold totals per name, not launches: they are
refused with the command that writes the GPU trace instead, whose launches `tracekit summary` sums the same way.
nsys's own preamble lines (`Processing [...] with [...]`, ` ** CUDA GPU Trace (cuda_gpu_trace):`) are skipped.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.errors import InputError
from tracekit.parsed import LAUNCH_SCHEMA, MEMCPY_SCHEMA, Device, ParsedImport, conform, empty_frame

FORMAT = "nsys-stats-csv"
_TRACE_HEADER = re.compile(rb'^"?Start ?\((?:ns|us|ms|s)\)"?,"?Duration ?\((?:ns|us|ms|s)\)"?,.*"?Name"?\r?$', re.M)
_SUMMARY_HEADER = re.compile(rb'^"?Time ?\(%\)"?,"?Total Time ?\((?:ns|us|ms|s)\)"?,(.*)\r?$', re.M)
TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
SIZE_UNITS_BYTES = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
_UNIT = re.compile(r"^(.*?)\s*\(([^()]*)\)$")
_DEVICE = re.compile(r"^(.*?)\s*\((\d+)\)$")
COPY_KINDS = {
    "Host-to-Device": "HtoD",
    "Device-to-Host": "DtoH",
    "Device-to-Device": "DtoD",
    "Host-to-Host": "HtoH",
    "Peer-to-Peer": "PtoP",
}
_COPY = re.compile(r"\[CUDA (?:Unified Memory )?memcpy ([\w-]+)\]")
_SET = re.compile(r"\[CUDA memset\]")
# kernel-row column (unit stripped) -> launch field
KERNEL_COLUMNS = {
    "CorrId": "correlation_id",
    "GrdX": "grid_x",
    "GrdY": "grid_y",
    "GrdZ": "grid_z",
    "BlkX": "block_x",
    "BlkY": "block_y",
    "BlkZ": "block_z",
    "Reg/Trd": "registers_per_thread",
    "Ctx": "context_id",
    "Strm": "stream_id",
}
SUMMARY_REPORTS = {
    "Instances": "the per-kernel summary (cuda_gpu_kern_sum)",
    "Count": "the memory-operation summary (cuda_gpu_mem_time_sum)",
    "Num Calls": "the CUDA API summary (cuda_api_sum)",
}


def sniff(head: bytes) -> bool:
    text = head.removeprefix(b"\xef\xbb\xbf")
    return bool(_TRACE_HEADER.search(text) or _SUMMARY_HEADER.search(text))


def read(path: Path, **options: Any) -> ParsedImport:
    path = Path(path)
    try:
        data = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    except OSError as exc:
        raise InputError(str(path), f"unreadable ({exc.strerror or exc})") from None
    header = _TRACE_HEADER.search(data)
    if header is None:
        raise InputError(str(path), summary_reason(data))
    line = data.count(b"\n", 0, header.start()) + 1
    try:
        frame = pl.read_csv(io.BytesIO(data[header.start() :]), infer_schema=False, truncate_ragged_lines=False)
    except pl.exceptions.PolarsError as exc:
        raise InputError(str(path), f"not a readable nsys stats CSV ({str(exc).splitlines()[0]})", line=line) from None
    return _parse(path, frame, line)


# `nsys stats` names each report it runs (`Processing [x.sqlite] with [.../reports/osrt_sum.py]...`, console
# banners ` ** OS Runtime Summary (osrt_sum):`, `nsys profile --stats` steps `[4/8] Executing 'osrt_sum' stats
# report`), and says which it skipped for want of data (`SKIPPED: x.sqlite does not contain CUDA trace data.`).
_REPORT_NAME = (
    rb"reports[/\\](\w+)\.py\]"
    rb"|^[ *]*[A-Z][^\n]*\(([a-z0-9]+(?:_[a-z0-9]+)+)\):?[ \t\r]*$"
    rb"|^\[\d+/\d+\] Executing '(\w+)' stats report"
)
_SKIPPED = rb"^(SKIPPED): "
_TABLE = rb'^[ \t]*"?Time ?\(%\)"?[ \t,]+"?Total Time|^Time \(%\)\s+Total Time'  # CSV, console, HTML cells
_NO_CUDA_TRACE = re.compile(rb"^SKIPPED: .* does not contain CUDA trace data", re.M)
_CONSOLE_TABLE = re.compile(rb"^ Time \(%\)\s+Total Time \((?:ns|us|ms|s)\)\s+", re.M)
REPORT_NAMES = {
    "cuda_gpu_kern_sum": "the per-kernel summary (cuda_gpu_kern_sum)",
    "cuda_gpu_mem_time_sum": "the memory-operation summary (cuda_gpu_mem_time_sum)",
    "cuda_gpu_mem_size_sum": "the memory-operation size summary (cuda_gpu_mem_size_sum)",
    "cuda_api_sum": "the CUDA API summary (cuda_api_sum)",
    "osrt_sum": "the OS runtime summary (osrt_sum)",
    "nvtx_sum": "the NVTX range summary (nvtx_sum)",
}
_TRACE_ADVICE = (
    "Write the GPU trace instead (nsys stats --report cuda_gpu_trace --format csv --output PREFIX "
    "report.nsys-rep) or import the SQLite export (nsys export --type sqlite report.nsys-rep); tracekit summary "
    "gives these totals from either"
)
_NO_CUDA_ADVICE = (
    "the profile has no CUDA trace (nsys stats skipped its CUDA reports: it does not contain CUDA trace data), "
    "so no kernel to import: profile again with nsys profile --trace=cuda and import its SQLite export "
    "(nsys export --type sqlite report.nsys-rep)"
)


def _reports(data: bytes) -> list[str]:
    """The reports whose tables the output holds, in order (each report's name comes before its table)."""
    names: list[str] = []
    pending: str | None = None
    for match in re.finditer(b"|".join((_REPORT_NAME, _SKIPPED, _TABLE)), data, re.M):
        name = next((g for g in match.groups()[:3] if g), None)
        if name:
            pending = name.decode("ascii")
        elif match.group(4):  # that report was skipped: it has no table
            pending = None
        elif pending and pending not in names:
            names.append(pending)
    return names


def summary_reason(data: bytes, form: str = "CSV") -> str:
    """Why an `nsys stats` output without the GPU trace is refused, naming the reports it holds."""
    summary = _SUMMARY_HEADER.search(data)
    columns = summary.group(1).decode("utf-8", "replace") if summary else ""
    reports = [REPORT_NAMES.get(name, f"the {name} report") for name in _reports(data)]
    if not reports:
        guess = next((report for key, report in SUMMARY_REPORTS.items() if key in columns), None)
        reports = [guess] if guess else []
    what = " and ".join(reports[:2]) + (f" and {len(reports) - 2} more" if len(reports) > 2 else "")
    if form == "CSV":
        head = f"{what} of nsys stats" if what else "an nsys stats summary"
    else:
        head = f"nsys stats {form} output holding {what}" if what else f"nsys stats {form} output"
    if _NO_CUDA_TRACE.search(data) and not any("cuda" in r for r in reports):
        return f"{head}: {_NO_CUDA_ADVICE}"
    return f"{head}: totals per name, not launches. {_TRACE_ADVICE}"


def console_reason(head: bytes) -> str | None:
    """nsys stats' console (column) output or its HTML tables (`--format hdoc|htable`), which no reader takes:
    the refusal naming its reports; None for anything else."""
    text = head.removeprefix(b"\xef\xbb\xbf")
    html = text.lstrip()[:512].lower().startswith((b"<!doctype html", b"<html", b"<table"))
    if html:
        cells = re.sub(rb"[ \t]*<[^>]*>[ \t]*", b"\n", text)  # each cell's text on a line of its own
        if re.search(_TABLE, cells, re.M):
            return summary_reason(cells, "HTML (--format hdoc or htable)")
        return None
    if _CONSOLE_TABLE.search(text) and re.search(_REPORT_NAME, text, re.M):
        return summary_reason(text, "console")
    return None


def _split_units(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """`Start (ns)` -> `Start`, with its unit kept aside."""
    renames, units = {}, {}
    for column in frame.columns:
        match = _UNIT.match(column.strip())
        name = match.group(1) if match else column.strip()
        renames[column] = name
        if match:
            units[name] = match.group(2)
    return frame.rename(renames), units


def _number(path: Path, frame: pl.DataFrame, column: str, dtype: Any, line: int, scale: float = 1.0) -> pl.Series:
    """A column as numbers (times `scale`); a cell that is not a finite number within int64 once scaled (ns,
    bytes) is refused, naming its line."""
    text = frame[column].str.strip_chars()
    values = text.cast(dtype, strict=False)
    bad = values.is_null() & text.is_not_null() & (text != "")
    if dtype == pl.Float64:
        values = values * scale
        bad = bad | ~(values.abs() < 2.0**63).fill_null(True)
    if bad.any():
        row = int(bad.arg_max() or 0)
        raise InputError(  # the header's line + the row
            str(path), f"{column} is {text[row]!r}, not a number in range", line=line + 1 + row
        )
    return values


def _parse(path: Path, frame: pl.DataFrame, line: int) -> ParsedImport:
    frame, units = _split_units(frame)
    for needed in ("Start", "Duration", "Name"):
        if needed not in frame.columns:
            raise InputError(str(path), f"an nsys stats GPU trace without its {needed} column", line=line)
    warnings: list[str] = []
    time_scale: dict[str, float] = {}
    for name in ("Start", "Duration"):
        unit = units.get(name, "ns")
        if unit not in TIME_UNITS_NS:
            raise InputError(str(path), f"{name}: unknown time unit {unit!r}", line=line)
        time_scale[name] = TIME_UNITS_NS[unit]
    start = _number(path, frame, "Start", pl.Float64, line, time_scale["Start"]).round().cast(pl.Int64)
    duration = _number(path, frame, "Duration", pl.Float64, line, time_scale["Duration"]).round()
    columns: dict[str, pl.Series] = {"start_ns": start, "duration_ns": duration}
    for source, field in KERNEL_COLUMNS.items():
        if source in frame.columns:
            columns[field] = _number(path, frame, source, pl.Int64, line)
    rounded_smem = False
    for source, field in (("StcSMem", "static_smem_bytes"), ("DymSMem", "dynamic_smem_bytes"), ("Bytes", "bytes")):
        if source in frame.columns:
            unit = units.get(source, "B")
            scale = SIZE_UNITS_BYTES.get(unit)
            if scale is None:
                raise InputError(str(path), f"{source}: unknown size unit {unit!r}", line=line)
            values = _number(path, frame, source, pl.Float64, line, scale).round().cast(pl.Int64)
            if field != "bytes" and scale > 1:  # rounded to the unit's last decimal: not the launch's exact size
                rounded_smem = True
                continue
            columns[field] = values
    rows = pl.DataFrame(columns).with_columns(
        name=frame["Name"], device=frame["Device"] if "Device" in frame.columns else pl.lit(None, pl.Utf8)
    )
    rows = rows.with_columns(
        end_ns=pl.col("start_ns") + pl.col("duration_ns").cast(pl.Int64),
        device_name=pl.col("device").str.extract(_DEVICE.pattern, 1),
        device_id=pl.col("device").str.extract(_DEVICE.pattern, 2).cast(pl.Int64),
    )
    is_kernel = pl.col("grid_x").is_not_null() if "grid_x" in rows.columns else pl.lit(False)
    kernels = rows.filter(is_kernel)
    others = rows.filter(~is_kernel)
    names = [_split_nvtx(name) for name in kernels["name"].to_list()]
    kernels = kernels.with_columns(
        kernel_name=pl.Series([n for _, n in names], dtype=pl.Utf8),
        nvtx_path=pl.Series([p for p, _ in names], dtype=pl.Utf8),
    ).with_columns(
        launch_key=pl.int_range(pl.len(), dtype=pl.Int64),
        source_launch_id=pl.col("correlation_id").cast(pl.Utf8) if "correlation_id" in rows.columns else None,
    )
    if rounded_smem and kernels.height:
        warnings.append(
            "nsys stats writes shared memory in MB with three decimals (to 1 kB): the sizes are kept unknown, "
            "so the occupancy without counters leaves shared memory out"
        )
    copies = others.with_columns(kind=pl.col("name").map_elements(_copy_kind, return_dtype=pl.Utf8))
    unknown = copies.filter(pl.col("kind").is_null())
    if unknown.height:
        warnings.append(
            f"{unknown.height:,} rows are neither kernels (no grid) nor memory copies/sets, e.g. "
            f"{unknown['name'][0]!r}: left out"
        )
    copies = copies.filter(pl.col("kind").is_not_null()).rename({"bytes": "size_bytes"}, strict=False)
    if kernels.height == 0 and copies.height == 0:
        raise InputError(str(path), "an nsys stats GPU trace without any kernel or memory copy row", line=line)
    device_names = rows["device_name"].drop_nulls().unique(maintain_order=True).to_list()
    if len(device_names) > 1:
        warnings.append(f"rows on {len(device_names)} devices; the import's device is the first: {device_names[0]}")
    return ParsedImport(
        format=FORMAT,
        tool="Nsight Systems (nsys stats cuda_gpu_trace)",
        device=Device(name=device_names[0]) if device_names else None,
        launches=conform(kernels, LAUNCH_SCHEMA),
        memcpys=conform(copies, MEMCPY_SCHEMA) if copies.height else empty_frame(MEMCPY_SCHEMA),
        warnings=warnings,
    )


def _copy_kind(name: str) -> str | None:
    """`[CUDA memcpy Host-to-Device]` -> HtoD (older nsys: `[CUDA memcpy HtoD]`), `[CUDA memset]` -> Memset."""
    if _SET.search(name):
        return "Memset"
    match = _COPY.search(name)
    if match is None:
        return None
    return COPY_KINDS.get(match.group(1), match.group(1))


def _split_nvtx(name: str) -> tuple[str | None, str]:
    """`range/void k<...>(...)` (the report's nvtx-name option) -> ("range", "void k<...>(...)"): the kernel is
    what follows the last `/` outside brackets."""
    depth = 0
    cut = -1
    for i, char in enumerate(name):
        if char in "<([{":
            depth += 1
        elif char in ">)]}":
            depth = max(0, depth - 1)
        elif char == "/" and depth == 0:
            cut = i
    if cut <= 0:
        return None, name
    return name[:cut], name[cut + 1 :]
