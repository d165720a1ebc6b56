"""Nsight Compute CSV (`ncu --csv`): the details, raw and per-kernel summary pages, from a file or captured stdout.

The layout is told from the table header, never from the file name:
- details (`--page details`, the default): long form, one row per (launch, section, metric), plus rule rows.
  A metric row is named by its metric id where `ncu_names` maps its (section, label) pair, else by the label
  as shown; `section` keeps the section name. Rule rows become text metrics named `rule:<Rule Name>`, in the
  rule's section identifier (e.g. "SpeedOfLight"), with text_value `[<Rule Type>] <Rule Description>` and, where
  given, the Estimated Speedup as value (unit "%"). A 2025 "Body Item Label" column (`--print-details`) is kept
  in `section` as "<Section Name>: <Body Item Label>"; the name is still mapped by (Section Name, Metric Name).
  The 2019-2020 layouts (12 columns with "Kernel Time", section "GPU Speed Of Light" with "SOL FB" ...) map the
  same way through `ncu_names`, so their Duration fills duration_ns.
- raw (`--page raw`): wide, one row per launch with units in the second row; every non-empty metric cell becomes a
  metric row (ordered by metric column, then launch). Columns are parsed as numbers while reading where the first
  rows say so, which keeps thousand-launch files fast (`benchmarks/bench_import_ncu_csv.py`).
- per-kernel summary (`--print-summary per-kernel`): one launch per kernel and launch shape (the columns before
  "Section Name") with a metric `invocations`; each metric becomes three rows: `<name>` holds the Average,
  `<name>.min` the Minimum and `<name>.max` the Maximum. Launch fields (duration_ns, registers...) use the Average.

Cells: thousands separators ("4,194,688") and the dot-grouped locale style ("27.595.520", "1.234,5"; detected once
per file) are removed. Empty cells are dropped (the metric was not collected for that launch); "n/a" keeps the row
with a null value and text_value "n/a"; other text is kind "text". Numbers are kind "int" when integral (raw page:
when every launch's value in that column is), else "float". Metric-instance lists
(`--print-metric-instances values`: numbers separated by ";" or blanks) keep the cell as text_value and take the
mean of the instances as value. Units go through `normalize_unit` with values scaled; a per-block or per-thread
unit keeps its denominator ("Kbyte/block" -> "byte/block", x1000). Shared-memory sizes that the details page
prints rounded (Kbyte with two decimals) are made exact where they can be (the carveout and the driver's reserve
are whole KiB); a static or dynamic size that cannot keeps the printed cell and unit in text_value (`_exact_sizes`).

Launches are keyed by (Host Name, Process ID, ID) where those columns exist, since IDs repeat across processes.
Grid and block dimensions come from the "Grid Size"/"Block Size" columns, else from `launch__grid_dim_*` /
`launch__block_dim_*`, else from the 1-D `launch__grid_size` / `launch__block_size` as (n, 1, 1) (older details
pages print only the totals). NVTX columns (`--nvtx`) give `nvtx_path`: the push/pop stack outermost first, then
start/end ranges, joined with " > ". duration_ns is `gpu__time_duration.sum` ("Duration" in the Speed Of Light
section). The older layouts' "Kernel Time" (wall clock at profiling) is kept as a text metric. Lines before and
between table rows (==PROF==, ==WARNING==, ==ERROR==, application output) are skipped; ==WARNING== and ==ERROR==
lines are kept as warnings.

The device is the first launch's: `CC`, `device__attribute_*` (clock_rate is in kHz) with the per-SM limits in
`Device.extra`, else "# SMs" and, for max_warps_per_sm, Theoretical Active Warps per SM / Theoretical Occupancy.
"""

from __future__ import annotations

import csv
import functools
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import overload

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.ncu_names import DISPLAY_TO_METRIC_ID
from tracekit.importers.units import normalize_unit
from tracekit.parsed import LAUNCH_SCHEMA, METRIC_SCHEMA, ColumnTypes, Device, ParsedImport, conform

FORMAT = "ncu-csv"
TOOL = "Nsight Compute"

# Columns that describe the launch rather than a metric (raw page: everything else is a metric column).
LAUNCH_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    "Invocations",
)
NVTX_MARKERS = ("Push/Pop_Range", "Start/Stop_Range")

_TOOL_LINE = re.compile(r"^==(PROF|WARNING|ERROR|INFO|WARN)==")
_DIMS = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$")
_GROUPED_NUMBER = r"^[-+]?\d[\d.,]*$"
_DOT_GROUPED = (
    r"^[-+]?\d{1,3}(\.\d{3}){2,}(,\d+)?$|^[-+]?\d{1,3}(\.\d{3})+,\d+$"
    r"|^[-+]?\d+,(\d{1,2}|\d{4,})$"
)
_NUMBER_TOKEN = r"[-+]?(?:\d[\d.,]*)?\d(?:[eE][-+]?\d+)?"
_INSTANCE_LIST = rf"^\(?\s*{_NUMBER_TOKEN}(?:\s*;\s*{_NUMBER_TOKEN}|\s+{_NUMBER_TOKEN})+\s*;?\s*\)?$"
# `--print-metric-instances values` on a metric with instances: the aggregate, then its instance values in
# parentheses ("256 (256)", "1,024 (512;512)"); the aggregate is the metric's value, as without the option.
_AGGREGATE_WITH_INSTANCES = (
    rf"^\s*({_NUMBER_TOKEN})\s*\(\s*{_NUMBER_TOKEN}(?:(?:\s*;\s*|\s+){_NUMBER_TOKEN})*\s*;?\s*\)\s*$"
)
_NOT_AVAILABLE = ["n/a", "N/A", "nan", "NaN", "-", "--"]
_QUOTE = ord('"')
_TYPE_SAMPLE_ROWS = 20  # raw page: the rows that decide which columns are read as numbers

# device__attribute_* metric -> Device field / `Device.extra` key (units in the key).
_DEVICE_EXTRA = {
    "max_registers_per_multiprocessor": "max_registers_per_sm",
    "max_shared_memory_per_multiprocessor": "max_shared_memory_per_sm_bytes",
    "max_blocks_per_multiprocessor": "max_blocks_per_sm",
    "max_threads_per_multiprocessor": "max_threads_per_sm",
    "max_warps_per_scheduler": "max_warps_per_scheduler",
    "num_schedulers_per_multiprocessor": "schedulers_per_sm",
    "max_registers_per_block": "max_registers_per_block",
    "max_registers_per_thread": "max_registers_per_thread",
    "max_threads_per_block": "max_threads_per_block",
    "max_shared_memory_per_block": "max_shared_memory_per_block_bytes",
    "max_shared_memory_per_block_optin": "max_shared_memory_per_block_optin_bytes",
    "reserved_shared_memory_per_block": "reserved_shared_memory_per_block_bytes",
    "warp_size": "warp_size",
    "l2_cache_size": "l2_cache_bytes",
    "global_memory_bus_width": "memory_bus_width_bits",
    "total_memory": "total_memory_bytes",
    "max_ipc_per_multiprocessor": "max_ipc_per_sm",
}
_KHZ_EXTRA = {"memory_clock_rate": "memory_clock_hz"}

# Shared-memory sizes whose printed rounding matters to the occupancy (see _exact_sizes); the first two are whole KiB.
_WHOLE_KIB_METRICS = ("launch__shared_mem_config_size", "launch__shared_mem_per_block_driver")
_SIZE_METRICS = (*_WHOLE_KIB_METRICS, "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")

# Metric ids that fill launch fields; a text value in one of them is an error.
_LAUNCH_METRICS = (
    "launch__grid_dim_x",
    "launch__grid_dim_y",
    "launch__grid_dim_z",
    "launch__block_dim_x",
    "launch__block_dim_y",
    "launch__block_dim_z",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "gpu__time_duration.sum",
)


def sniff(head: bytes) -> bool:
    """Nsight Compute CSV text: a table header naming "Kernel Name", or the profiler's own ==PROF== lines."""
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    text = _decode_bytes(head, strict=False)
    for line in text.split("\n")[:500]:
        line = line.strip()
        if _TOOL_LINE.match(line):
            return True
        if '"Kernel Name"' in line or (line.startswith("ID,") and ",Kernel Name," in line):
            return True
    return False


def read(path: Path, **options) -> ParsedImport:
    """Parse one Nsight Compute CSV; unknown options are ignored."""
    path = Path(path)
    table = _locate_table(path, _read_bytes(path))
    if "Metric Value" in table.header or ("Average" in table.header and "Metric Name" in table.header):
        layout = _details if "Metric Value" in table.header else _summary
        launches, metrics = layout(path, table, _parse_rows(path, table))
        metrics = metrics.sort("_line", maintain_order=True)  # file order
        launch_values = _launch_metric_values(path, metrics, launches)
    else:
        launches, metrics, launch_values = _raw(path, table)  # metrics grouped by metric column
    launches = _fill_launch_fields(launches, launch_values)
    warnings = [line for _, line in table.tool_lines if not line.startswith("==PROF==")]
    device, device_warnings = _device(launches, metrics)
    return ParsedImport(
        format=FORMAT,
        tool=TOOL,
        device=device,
        launches=conform(launches, LAUNCH_SCHEMA),
        metrics=conform(metrics, METRIC_SCHEMA),
        warnings=warnings + device_warnings,
    )


# ---- finding the table ---------------------------------------------------------------------------------------------


@dataclass
class _Table:
    """The table's header and where its rows are: as text lines, or (a clean file) as the file's bytes."""

    header: list[str]
    header_line: int
    line_numbers: Sequence[int]  # the file line of each table row
    tool_lines: list[tuple[int, str]] = field(default_factory=list)
    ends_with_newline: bool = True
    lines: list[str] | None = None  # the table rows as in the file; split from `data` on first use
    data: bytes | None = None  # a clean file: every line after the header line is a table row
    body_start: int = 0  # offset of the first table row in `data`

    @property
    def rows(self) -> list[str]:
        """The table lines after the header, as in the file."""
        if self.lines is None:
            assert self.data is not None, "a table without its lines is a clean file's bytes"
            first = self.header_line  # 0-based index of the line after the header
            self.lines = self.data.decode("ascii").split("\n")[first : first + len(self.line_numbers)]
        return self.lines

    def head(self, count: int) -> list[str]:
        """The first `count` rows, without splitting a whole clean file (the raw page reads its units and sample)."""
        if self.lines is not None or self.data is None:
            return self.rows[:count]
        rows, start = [], self.body_start
        for _ in range(min(count, len(self.line_numbers))):
            end = self.data.find(b"\n", start)
            end = len(self.data) if end < 0 else end
            rows.append(self.data[start:end].decode("ascii"))
            start = end + 1
        return rows

    def csv_source(self, skip: int) -> tuple[bytes, int]:
        """What polars reads for the rows after the first `skip`: bytes, and how many of their lines to skip."""
        if self.data is not None:
            return self.data, self.header_line + skip  # the file itself: no copy, no re-encoding
        return "\n".join(self.rows[skip:]).encode(), 0


def _decode_bytes(data: bytes, strict: bool) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="strict" if strict else "replace")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="strict" if strict else "replace")


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, once checked to be text at all (not empty, no NUL bytes)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None
    if not data or data.isspace():
        raise InputError(str(path), "the file is empty")
    if b"\x00" in data and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        offset = data.index(b"\x00")
        raise InputError(
            str(path),
            f"binary data (NUL byte at offset {offset}), not an Nsight Compute CSV",
            data.count(b"\n", 0, offset) + 1,
        )
    return data


def _decode_text(path: Path, data: bytes) -> str:
    try:
        return _decode_bytes(data, strict=True)
    except UnicodeDecodeError as exc:
        raise InputError(
            str(path),
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            data.count(b"\n", 0, exc.start) + 1,
        ) from None


def _csv_fields(line: str) -> list[str]:
    return next(csv.reader([line]), [])


def _header_fields(line: str) -> list[str] | None:
    """The header's fields when `line` is the table header (it names "Kernel Name"), else None."""
    if "Kernel Name" in line and line.count('"') % 2 == 0:
        fields = _csv_fields(line)
        if "Kernel Name" in fields:
            return [f.strip() for f in fields]
    return None


def _is_tool_line(line: str) -> bool:
    return line.startswith("==") and _TOOL_LINE.match(line) is not None


def _locate_table(path: Path, data: bytes) -> _Table:
    """The header line and the table lines after it; tool lines and application output are set aside."""
    table = _locate_clean_table(data) or _locate_table_in_text(path, _decode_text(path, data))
    if not table.line_numbers:
        raise InputError(str(path), "the Nsight Compute table has a header but no rows", table.header_line)
    if not table.ends_with_newline and table.rows[-1].count('"') % 2:
        raise InputError(str(path), "truncated row: the file ends inside a quoted field", table.line_numbers[-1])
    return table


def _locate_clean_table(data: bytes) -> _Table | None:
    """The usual `ncu --csv` file found without decoding and splitting all of it; None for anything else.

    Clean: ASCII, Unix line ends, a quoted header, and every line after it a quoted table row (no tool lines or
    application output in between). polars then reads the rows straight from the file's bytes.
    """
    if not data.isascii() or b"\r" in data:
        return None
    tool_lines: list[tuple[int, str]] = []
    start, number, header = 0, 1, None
    while header is None:
        end = data.find(b"\n", start)
        if end < 0:
            return None
        line = data[start:end].decode("ascii")
        if _is_tool_line(line):
            tool_lines.append((number, line))
        elif line.strip():
            header = _header_fields(line)
        start, number = end + 1, number + 1
    header_line = number - 1
    if not line.startswith('"'):
        return None
    body_start = row_start = end + 1
    row_count, size = 0, len(data)
    while row_start < size:  # find() is memchr; bytes.count() would be several times slower
        if data[row_start] != _QUOTE:
            return None  # a blank line, tool line or application output after the header
        row_count += 1
        row_end = data.find(b"\n", row_start)
        if row_end < 0:
            break
        row_start = row_end + 1
    if not row_count:
        return None
    return _Table(
        header=header,
        header_line=header_line,
        line_numbers=range(header_line + 1, header_line + 1 + row_count),
        tool_lines=tool_lines,
        ends_with_newline=data.endswith(b"\n"),
        data=data,
        body_start=body_start,
    )


def _locate_table_in_text(path: Path, text: str) -> _Table:
    """Any layout: line by line, skipping blank lines, tool lines and (quoted tables) unquoted output lines."""
    header: list[str] | None = None
    header_line = 0
    rows: list[str] = []
    line_numbers: list[int] = []
    tool_lines: list[tuple[int, str]] = []
    quoted_table = True
    for number, raw_line in enumerate(text.split("\n"), start=1):
        line = raw_line.rstrip("\r")
        if not line.strip():
            continue
        if _is_tool_line(line):
            tool_lines.append((number, line))
            continue
        if header is None:
            header = _header_fields(line)
            if header is not None:
                header_line = number
                quoted_table = line.startswith('"')
            continue
        if quoted_table and not line.startswith('"'):
            continue  # application output printed between table rows
        rows.append(line)
        line_numbers.append(number)
    if header is None:
        raise InputError(str(path), *_no_table_reason(tool_lines, text))
    return _Table(
        header=header,
        header_line=header_line,
        line_numbers=line_numbers,
        tool_lines=tool_lines,
        ends_with_newline=text.endswith("\n"),
        lines=rows,
    )


def _unbalanced_quotes(path: Path, table: _Table) -> None:
    """After polars failed to read the table: name the first row whose quotes do not pair up."""
    for line, number in zip(table.rows, table.line_numbers, strict=True):
        if line.count('"') % 2:
            raise InputError(str(path), "unbalanced quotes in a table row", number)


# ncu's text pages (no --csv): "    Section: GPU Speed Of Light Throughput" and dashed rules under each header.
_TEXT_SECTION = re.compile(r"^\s+Section: \S", re.MULTILINE)
_TEXT_RULE = re.compile(r"^\s*-{10,}(?: -{3,})+\s*$", re.MULTILINE)
_PROFILED = re.compile(r'^==PROF== Profiling "')


def _text_output_reason(tool_lines: list[tuple[int, str]], text: str) -> str | None:
    """ncu's text output (the details page or --print-summary without --csv): it holds the kernels, as text."""
    sections = len(_TEXT_SECTION.findall(text))
    if not sections or not _TEXT_RULE.search(text):
        return None
    profiled = sum(1 for _, line in tool_lines if _PROFILED.match(line))
    kernels = f" ({profiled} kernel{'s' if profiled != 1 else ''} profiled)" if profiled else ""
    summary = "Metric Name" in text and "Minimum" in text and "Maximum" in text
    rerun = "ncu --csv --print-summary per-kernel ..." if summary else "ncu --csv --page details ..."
    return (
        f"this is Nsight Compute's text output{kernels}, not a table tracekit can read: rerun with --csv "
        f"({rerun}), or export a report (ncu -o report ...) and import the .ncu-rep"
    )


def _no_table_reason(tool_lines: list[tuple[int, str]], text: str = "") -> tuple[str, int | None]:
    errors = [(number, line) for number, line in tool_lines if line.startswith("==ERROR==")]
    if errors:
        number, line = errors[0]
        return f"no Nsight Compute table; the profiler reported: {line}", number
    text_output = _text_output_reason(tool_lines, text)
    if text_output:
        return text_output, None
    report = next((line for _, line in tool_lines if line.startswith("==PROF== Report: ")), None)
    if report:
        return (
            f"no Nsight Compute table: this is ncu's console output of a run that wrote a report "
            f"({report.removeprefix('==PROF== Report: ').strip()}); import that .ncu-rep, or rerun with --csv"
        ), None
    profiled = sum(1 for _, line in tool_lines if _PROFILED.match(line))
    connected = sum(1 for _, line in tool_lines if line.startswith("==PROF== Connected to process"))
    if tool_lines and not profiled and connected:
        return (
            f"no Nsight Compute table: ncu connected to {connected} process{'es' if connected != 1 else ''} and "
            "profiled no kernel (a --kernel-name or --launch-skip filter that matched nothing, or processes "
            "that launch none)"
        ), None
    if tool_lines:
        return (
            f"no Nsight Compute table: only ==PROF== lines ({len(tool_lines)} of them), no CSV header row naming "
            '"Kernel Name" (expected ncu --csv output)'
        ), None
    return ('no Nsight Compute table: no CSV header row naming "Kernel Name" (expected ncu --csv output)'), 1


@overload
def _parse_rows(path: Path, table: _Table, skip: int = 0, strings_only: None = None) -> pl.DataFrame: ...
@overload
def _parse_rows(path: Path, table: _Table, skip: int, strings_only: list[str]) -> pl.DataFrame | None: ...
def _parse_rows(path: Path, table: _Table, skip: int = 0, strings_only: list[str] | None = None) -> pl.DataFrame | None:
    """The table rows after the first `skip`, one column per header field, plus `_line`.

    By default every cell is a string (missing trailing fields are null). With `strings_only` (the raw page),
    the other columns whose first rows hold plain numbers are read as Float64, so that numbers are parsed while
    reading; a later cell that is not a number makes this return None (the caller then reads strings).
    """
    names = _unique_names(table.header)
    numbers = table.line_numbers[skip:]
    source, skip_lines = table.csv_source(skip)

    def read_csv(schema: ColumnTypes) -> pl.DataFrame:
        # No header row: the schema gives the table's width; "insert" keeps a short first row from deciding it.
        return pl.read_csv(
            source,
            schema=schema,
            has_header=False,
            skip_lines=skip_lines,
            missing_columns="insert",
            quote_char='"',
            truncate_ragged_lines=True,
            raise_if_empty=False,
        )

    try:
        if strings_only is None:
            frame = read_csv({f"c{i}": pl.String for i in range(len(names))})
        else:
            sample = [_csv_fields(line) for line in table.head(skip + _TYPE_SAMPLE_ROWS)[skip:]]
            columns = itertools.zip_longest(*sample, fillvalue="") if sample else itertools.repeat(())
            schema = {
                f"c{i}": pl.String if name in strings_only or not _numeric_cells(cells) else pl.Float64
                for i, (name, cells) in enumerate(zip(names, columns, strict=False))
            }
            try:
                frame = read_csv(schema)
            except pl.exceptions.PolarsError:
                return None
    except pl.exceptions.PolarsError as exc:
        _unbalanced_quotes(path, table)
        raise InputError(str(path), f"unreadable CSV table: {str(exc).splitlines()[0]}", table.header_line) from None
    if frame.height != len(numbers):
        _unbalanced_quotes(path, table)
        raise InputError(
            str(path), f"read {frame.height} table rows but the file has {len(numbers)}", table.header_line
        )
    frame.columns = names
    return frame.with_columns(pl.Series("_line", numbers, dtype=pl.Int64))


def _numeric_cells(cells: tuple[str, ...]) -> bool:
    """Every cell is a plain number or empty, and at least one is a number."""
    numbers = {cell for cell in cells if cell}  # distinct: launches repeat values (device, launch configuration)
    try:
        list(map(float, numbers))  # a loop in C: this runs for every column of every raw file
    except ValueError:
        return False
    return bool(numbers)


def _unique_names(header: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    names = []
    for name in header:
        count = seen.get(name, 0)
        seen[name] = count + 1
        names.append(name if count == 0 else f"{name}#{count}")
    return names


def _require_fields(path: Path, table: _Table, rows: pl.DataFrame, mask: pl.Expr, expected: str) -> None:
    """Raise for the first row that `mask` marks as too short: a truncated last row or a malformed one."""
    line = rows.select(pl.col("_line").filter(mask).first()).item()
    if line is None:
        return
    text = table.rows[table.line_numbers.index(line)]
    count = len(_csv_fields(text))
    truncated = line == table.line_numbers[-1] and not table.ends_with_newline
    what = "truncated row" if truncated else "row too short"
    raise InputError(str(path), f"{what}: {count} fields, expected {expected}", line)


# ---- the three layouts ---------------------------------------------------------------------------------------------


def _assign_launch_keys(rows: pl.DataFrame, key_columns: list[str]) -> pl.DataFrame:
    """Number launches 0.. in order of first appearance of their key."""
    keys = (
        rows.select(key_columns)
        .unique(maintain_order=True)
        .with_row_index("launch_key")
        .with_columns(pl.col("launch_key").cast(pl.Int64))
    )
    return rows.join(keys, on=key_columns, how="left", nulls_equal=True, maintain_order="left")


def _identity_columns(header: list[str], stop: str | None) -> list[str]:
    """The launch-describing columns: those before `stop` (details/summary), or the known ones (raw)."""
    names = _unique_names(header)
    if stop is not None:
        return names[: names.index(stop)]
    return [n for n in names if n in LAUNCH_COLUMNS or any(marker in n for marker in NVTX_MARKERS)]


def _details(path: Path, table: _Table, rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    for column in ("Section Name", "Metric Name", "Metric Unit"):
        if column not in rows.columns:
            raise InputError(str(path), f"details table without a {column!r} column", table.header_line)
    _require_fields(
        path, table, rows, pl.col("Metric Value").is_null(), f"at least {table.header.index('Metric Value') + 1}"
    )
    identity = _identity_columns(table.header, "Section Name")
    key_columns: list[str] = [c for c in ("Host Name", "Process ID", "ID") if c in identity] or identity
    rows = _assign_launch_keys(rows, key_columns)
    launches = _launch_columns(path, rows, identity)

    is_rule = pl.col("Rule Name").fill_null("") != "" if "Rule Name" in rows.columns else pl.lit(False)
    metric_rows = rows.filter(~is_rule & (pl.col("Metric Name").fill_null("") != ""))
    names = pl.DataFrame(
        {
            "Section Name": [s for s, _ in DISPLAY_TO_METRIC_ID],
            "Metric Name": [n for _, n in DISPLAY_TO_METRIC_ID],
            "metric_id": list(DISPLAY_TO_METRIC_ID.values()),
        }
    )
    metric_rows = metric_rows.join(names, on=["Section Name", "Metric Name"], how="left", maintain_order="left")
    section = pl.col("Section Name")
    if "Body Item Label" in metric_rows.columns:  # 2025 `--print-details`: the body item (chart, table) a row is in
        body = pl.col("Body Item Label").fill_null("").str.strip_chars()
        section = pl.when(body != "").then(pl.concat_str(section, pl.lit(": "), body)).otherwise(section)
    long = metric_rows.select(
        "launch_key",
        section.alias("section"),
        pl.coalesce("metric_id", "Metric Name").alias("name"),
        pl.col("Metric Unit").alias("unit_raw"),
        pl.col("Metric Value").alias("cell"),
        "_line",
        pl.lit("Metric Value").alias("_column"),
    )
    metrics = [_numeric_metrics(long), _kernel_time(rows)]
    if "Rule Name" in rows.columns:
        metrics.append(_rules(rows.filter(is_rule)))
    return launches, pl.concat([m for m in metrics if m is not None], how="diagonal_relaxed")


def _summary(path: Path, table: _Table, rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    stats = {"Average": "", "Minimum": ".min", "Maximum": ".max"}
    for column in ("Section Name", "Metric Unit", *stats):
        if column not in rows.columns:
            raise InputError(str(path), f"summary table without a {column!r} column", table.header_line)
    _require_fields(path, table, rows, pl.col("Average").is_null(), f"{len(table.header)}")
    identity = _identity_columns(table.header, "Section Name")
    rows = _assign_launch_keys(rows, identity)
    launches = _launch_columns(path, rows, identity)
    names = pl.DataFrame(
        {
            "Section Name": [s for s, _ in DISPLAY_TO_METRIC_ID],
            "Metric Name": [n for _, n in DISPLAY_TO_METRIC_ID],
            "metric_id": list(DISPLAY_TO_METRIC_ID.values()),
        }
    )
    rows = rows.join(names, on=["Section Name", "Metric Name"], how="left", maintain_order="left")
    base_name = pl.coalesce("metric_id", "Metric Name")
    long = pl.concat(
        [
            rows.select(
                "launch_key",
                pl.col("Section Name").alias("section"),
                (base_name + suffix).alias("name"),
                pl.col("Metric Unit").alias("unit_raw"),
                pl.col(stat).alias("cell"),
                "_line",
                pl.lit(stat).alias("_column"),
            )
            for stat, suffix in stats.items()
        ]
    )
    metrics = [_numeric_metrics(long)]
    if "Invocations" in rows.columns:
        invocations = _integers(path, rows.unique("launch_key", keep="first", maintain_order=True), "Invocations")
        metrics.append(
            invocations.select(
                "launch_key",
                pl.lit("invocations").alias("name"),
                pl.col("Invocations").cast(pl.Float64).alias("value"),
                pl.lit("int").alias("kind"),
                "_line",
            )
        )
    return launches, pl.concat(metrics, how="diagonal_relaxed")


def _raw(path: Path, table: _Table) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    identity = _identity_columns(table.header, None)
    if "Kernel Name" not in identity:
        raise InputError(str(path), "raw table without a 'Kernel Name' column", table.header_line)
    names = _unique_names(table.header)
    metric_columns = [c for c in names if c not in identity]
    if not metric_columns:
        raise InputError(
            str(path), "the table has neither metric columns nor a 'Metric Name' column", table.header_line
        )
    first = dict(zip(names, _csv_fields(table.head(1)[0]), strict=False))
    has_units = not (first.get("ID") or first.get("Kernel Name"))  # the units row: empty identity cells
    units = {c: (first.get(c) if has_units else None) for c in metric_columns}
    skip = 1 if has_units else 0
    if len(table.line_numbers) == skip:
        raise InputError(str(path), "the Nsight Compute table has a header and units but no rows", table.header_line)
    rows = _parse_rows(path, table, skip, strings_only=identity)
    dot_grouping = rows is not None and _uses_dot_grouping(_text_cells(rows, metric_columns))
    if rows is None or dot_grouping:
        rows = _parse_rows(path, table, skip)  # every cell as text: the cleaning path decides
        dot_grouping = _uses_dot_grouping(_text_cells(rows, metric_columns))
    short = pl.col(metric_columns[-1]).is_null() if _dtypes(rows)[metric_columns[-1]] == pl.String else pl.lit(False)
    _require_fields(path, table, rows, short, f"{len(table.header)}")
    _require_last_row(path, table, len(table.header))
    rows = rows.with_columns(pl.int_range(rows.height, dtype=pl.Int64).alias("launch_key"))  # a row per launch
    launches = _launch_columns(path, rows, identity)
    metrics, launch_values = _raw_metrics(path, rows, metric_columns, units, launches, dot_grouping)
    return launches, metrics, launch_values


def _text_cells(rows: pl.DataFrame, columns: list[str]) -> pl.Series:
    """The distinct cells of the text-typed `columns`: enough to tell the number style, and launches repeat."""
    schema = _dtypes(rows)
    cells = [rows.get_column(c).alias("cell") for c in columns if schema[c] == pl.String]
    if not cells:
        return pl.Series("cell", [], dtype=pl.String)
    return pl.concat(cells).unique().str.strip_chars()


def _dtypes(frame: pl.DataFrame) -> dict[str, pl.DataType]:
    """Column name -> dtype; cheaper than `DataFrame.schema` on a frame with hundreds of columns."""
    return dict(zip(frame.columns, frame.dtypes, strict=True))


def _narrow(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """`frame.select(columns)` without a query plan, whose cost grows with the frame's width (raw page)."""
    return pl.DataFrame([frame.get_column(c) for c in columns])


def _require_last_row(path: Path, table: _Table, expected: int) -> None:
    """A file cut right after a field of its last row: fewer fields than the header, no final newline."""
    if table.ends_with_newline:
        return
    count = len(_csv_fields(table.rows[-1]))
    if count < expected:
        raise InputError(str(path), f"truncated row: {count} fields, expected {expected}", table.line_numbers[-1])


# ---- launch columns ------------------------------------------------------------------------------------------------


def _integers(path: Path, rows: pl.DataFrame, column: str) -> pl.DataFrame:
    """`column` parsed as integers (separators removed, empty -> null); a non-number is an InputError."""
    parsed = _integer(column)
    _raise_first_bad(path, rows, {column: (parsed.is_null() & _non_empty(column), "is not a number")})
    return rows.with_columns(parsed.alias(column))


def _integer(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().str.replace_all(",", "", literal=True).cast(pl.Int64, strict=False)


def _non_empty(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().fill_null("") != ""


def _raise_first_bad(path: Path, rows: pl.DataFrame, bad: dict[str, tuple[pl.Expr, str]]) -> None:
    """InputError for the first column of `bad` (column -> (mask, what is wrong)) with a row where its mask
    holds, naming that column's first such row (file line); one query for all columns."""
    if not bad:
        return
    first = rows.select(mask.arg_true().first().alias(column) for column, (mask, _) in bad.items()).row(0)
    for (column, (_, what)), index in zip(bad.items(), first, strict=True):
        if index is not None:
            raise InputError(str(path), f"{column} {rows[column][index]!r} {what}", int(rows["_line"][index]), column)


def _launch_columns(path: Path, rows: pl.DataFrame, identity: list[str]) -> pl.DataFrame:
    """One row per launch_key with the launch fields its identity columns give (IDs, stream, dims, NVTX)."""
    rows = _narrow(rows, ["launch_key", "_line", *identity])
    dims = [
        (column, prefix) for column, prefix in (("Grid Size", "grid"), ("Block Size", "block")) if column in identity
    ]
    for column, prefix in dims:
        rows = rows.join(
            _dim_table(column, prefix, rows[column]), on=column, how="left", nulls_equal=True, maintain_order="left"
        )
    integers = {c: _integer(c) for c in ("ID", "Process ID", "Context", "Stream", "Device") if c in identity}
    _raise_first_bad(
        path,
        rows,
        {
            **{c: (e.is_null() & _non_empty(c), "is not a number") for c, e in integers.items()},
            **{c: (pl.col(f"{prefix}_x").is_null() & _non_empty(c), "is not an (x, y, z) size") for c, prefix in dims},
        },
    )
    nvtx_columns = [c for c in identity if any(marker in c for marker in NVTX_MARKERS)]
    launches = rows.select(
        "launch_key",
        "_line",
        *([pl.col("Kernel Name").alias("kernel_name")] if "Kernel Name" in identity else []),
        *([pl.col("ID").str.strip_chars().alias("source_launch_id")] if "ID" in identity else []),
        *[
            integers[c].alias(f)
            for c, f in (
                ("Process ID", "process_id"),
                ("Context", "context_id"),
                ("Stream", "stream_id"),
                ("Device", "device_id"),
            )
            if c in integers
        ],
        *([pl.col("CC").alias("_cc")] if "CC" in identity else []),
        *[f"{prefix}_{axis}" for _, prefix in dims for axis in "xyz"],
        *nvtx_columns,
    )
    if launches["launch_key"].n_unique() != launches.height:
        launches = launches.unique("launch_key", keep="first", maintain_order=True)
    if nvtx_columns:
        paths = [
            _nvtx_path(dict(zip(nvtx_columns, cells, strict=True)))
            for cells in launches.select(nvtx_columns).iter_rows()
        ]
        launches = launches.drop(nvtx_columns).with_columns(pl.Series("nvtx_path", paths, dtype=pl.String))
    return launches


def _dim_table(column: str, prefix: str, cells: pl.Series) -> pl.DataFrame:
    """`<prefix>_x/_y/_z` for each distinct "(x, y, z)" cell; a bare "256" is (256, 1, 1).

    Parsed once per distinct cell, not per launch: launches repeat a few shapes and the regex is the slow part.
    """
    groups = pl.col(column).str.strip_chars().str.extract_groups(_DIMS.pattern)
    plain = _integer(column)
    one = pl.when(plain.is_not_null()).then(pl.lit(1, dtype=pl.Int64))
    return (
        cells.unique()
        .to_frame()
        .select(
            column,
            pl.coalesce(groups.struct.field("1").cast(pl.Int64, strict=False), plain).alias(f"{prefix}_x"),
            pl.coalesce(groups.struct.field("2").cast(pl.Int64, strict=False), one).alias(f"{prefix}_y"),
            pl.coalesce(groups.struct.field("3").cast(pl.Int64, strict=False), one).alias(f"{prefix}_z"),
        )
    )


def _nvtx_path(cells: dict[str, str | None]) -> str | None:
    """ncu's NVTX cells, e.g. `1  "<default domain>:outer:none:none:none:none:none:none"  "...:inner:..."`."""
    names: list[str] = []
    for column in sorted(cells, key=lambda c: "Start/Stop_Range" in c):  # push/pop stack first
        cell = (cells[column] or "").strip()
        entries = re.findall(r'"([^"]*)"', cell)
        if not entries and cell:
            entries = [cell]
        name_field = 2 if "Start/Stop_Range" in column else 1
        for entry in entries:
            fields = entry.split(":")
            if len(fields) >= name_field + 7:  # name, then PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg
                names.append(":".join(fields[name_field:-6]))
            elif entry.strip():
                names.append(entry.strip())
    return " > ".join(names) or None


def _kernel_time(rows: pl.DataFrame) -> pl.DataFrame | None:
    """The older layouts' "Kernel Time" (wall clock when profiled) as a text metric."""
    if "Kernel Time" not in rows.columns:
        return None
    return (
        rows.unique("launch_key", keep="first", maintain_order=True)
        .filter(pl.col("Kernel Time").fill_null("") != "")
        .select(
            "launch_key",
            pl.lit("Kernel Time").alias("name"),
            pl.col("Kernel Time").alias("text_value"),
            pl.lit("text").alias("kind"),
            "_line",
        )
    )


def _rules(rules: pl.DataFrame) -> pl.DataFrame:
    """Rule rows (what Nsight Compute's rule messages say) as text metrics."""
    rule_type = pl.col("Rule Type").fill_null("") if "Rule Type" in rules.columns else pl.lit("")
    description = pl.col("Rule Description").fill_null("") if "Rule Description" in rules.columns else pl.lit("")
    text = (
        pl.when(rule_type != "")
        .then(pl.concat_str(pl.lit("["), rule_type, pl.lit("] "), description))
        .otherwise(description)
    )
    speedup = pl.lit(None, dtype=pl.Float64)
    if "Estimated Speedup" in rules.columns:
        cell = pl.col("Estimated Speedup").str.strip_chars()
        speedup = cell.str.replace_all(",", "", literal=True).cast(pl.Float64, strict=False)
    return rules.select(
        "launch_key",
        pl.col("Section Name").alias("section"),
        pl.concat_str(pl.lit("rule:"), pl.col("Rule Name")).alias("name"),
        pl.when(speedup.is_not_null()).then(pl.lit("%")).alias("unit"),
        speedup.alias("value"),
        text.alias("text_value"),
        pl.lit("text").alias("kind"),
        "_line",
    )


# ---- metric values -------------------------------------------------------------------------------------------------


def _uses_dot_grouping(cells: pl.Series) -> bool:
    """True when the file writes numbers as "27.595.520" / "1.234,5" (dots group thousands, comma is decimal)."""
    text = cells.drop_nulls().str.strip_chars().unique()
    candidates = text.filter(text.str.contains(",", literal=True) | (text.str.count_matches(r"\.") > 1))
    return bool(candidates.str.contains(_DOT_GROUPED).any()) if candidates.len() else False


@functools.cache
def _normalized_unit(unit_raw: str | None) -> tuple[str | None, float]:
    if unit_raw is None or not unit_raw.strip():
        return None, 1.0
    unit, factor = normalize_unit(unit_raw)
    if "/" in unit and unit == unit_raw.strip() and factor == 1.0:  # per-block / per-thread: scale the numerator
        numerator, _, denominator = unit.partition("/")
        base, numerator_factor = normalize_unit(numerator)
        unit, factor = f"{base}/{denominator}", numerator_factor
    return unit or None, factor


def _numeric_metrics(long: pl.DataFrame) -> pl.DataFrame:
    """Parse the `cell` column of a long frame (launch_key, section, name, unit_raw, cell, _line, _column)."""
    long = long.with_columns(pl.col("cell").str.strip_chars()).filter(
        pl.col("cell").is_not_null() & (pl.col("cell") != "")
    )
    plain_failed = long.filter(pl.col("cell").cast(pl.Float64, strict=False).is_null())["cell"]
    dot_grouping = _uses_dot_grouping(plain_failed)
    long = _parse_cells(long, dot_grouping)
    unit_rows = [(u, *_normalized_unit(u)) for u in long["unit_raw"].unique().to_list()]
    unit_table = pl.DataFrame(
        unit_rows, schema={"unit_raw": pl.String, "unit": pl.String, "factor": pl.Float64}, orient="row"
    )
    long = long.join(unit_table, on="unit_raw", how="left", nulls_equal=True, maintain_order="left")
    return _exact_sizes(_metric_columns(long), long, dot_grouping)


def _exact_sizes(metrics: pl.DataFrame, long: pl.DataFrame, dot_grouping: bool) -> pl.DataFrame:
    """Shared-memory sizes printed in a rounded unit ("233.47" Kbyte): exact where they can be, else marked.

    `ncu --page details` prints sizes in Kbyte (1,000 B) with two decimals, so a value is known only to within
    +-5 bytes: 233.47 Kbyte is 233,465 .. 233,475 B. The carveout (`launch__shared_mem_config_size`) and the
    driver's reserve are whole KiB, so the one multiple of 1,024 in that window is the exact value (233,472).
    A static or dynamic size has no such grid: its value stays as printed, and `text_value` keeps the cell and
    unit as printed ("232.45 Kbyte/block") to say that the byte count is rounded (tracekit.analysis.occupancy.
    printed_rounding_bytes reads it back). Cells precise to the byte (the raw page's six decimals) are rounded to it.
    """
    base_name = pl.col("name").str.replace(r"\.(min|max)$", "")  # the summary page's Minimum and Maximum too
    sizes = long.filter(base_name.is_in(_SIZE_METRICS) & pl.col("value").is_not_null() & ~pl.col("_is_list"))
    if sizes.is_empty() or (sizes["factor"] == 1.0).all():
        return metrics
    fixes: dict[tuple[int, str, int], tuple[float, str | None]] = {}
    for key, name, cell, unit_raw, value, factor, line in sizes.select(
        "launch_key", "name", "cell", "unit_raw", "value", "factor", "_line"
    ).iter_rows():
        decimal_mark = "," if dot_grouping else "."
        decimals = len(cell.rpartition(decimal_mark)[2]) if decimal_mark in cell else 0
        half_width = 0.5 * 10.0**-decimals * factor
        scaled = value * factor
        if factor <= 1.0 or half_width < 0.5:  # printed in bytes, or to the byte
            fixes[(key, name, line)] = (float(round(scaled)), None)
            continue
        if name.removesuffix(".min").removesuffix(".max") in _WHOLE_KIB_METRICS:
            low, high = math.ceil((scaled - half_width) / 1024), math.floor((scaled + half_width) / 1024)
            if low == high:
                fixes[(key, name, line)] = (float(low * 1024), None)
                continue
        fixes[(key, name, line)] = (float(round(scaled)), f"{cell} {unit_raw}")
    table = pl.DataFrame(
        [(k, n, line, v, t) for (k, n, line), (v, t) in fixes.items()],
        schema={"launch_key": pl.Int64, "name": pl.String, "_line": pl.Int64, "_value": pl.Float64, "_text": pl.String},
        orient="row",
    )
    joined = metrics.join(table, on=["launch_key", "name", "_line"], how="left", maintain_order="left")
    fixed = pl.col("_value").is_not_null()
    return joined.with_columns(
        pl.when(fixed).then(pl.col("_value")).otherwise(pl.col("value")).alias("value"),
        pl.when(fixed).then(pl.col("_text")).otherwise(pl.col("text_value")).alias("text_value"),
        pl.when(fixed).then(pl.lit("int")).otherwise(pl.col("kind")).alias("kind"),
    ).drop("_value", "_text")


def _parse_cells(long: pl.DataFrame, dot_grouping: bool) -> pl.DataFrame:
    """value (before unit scaling) and _is_list for stripped, non-empty `cell`s."""
    aggregate = pl.col("cell").str.extract(_AGGREGATE_WITH_INSTANCES, 1)
    cell = pl.when(aggregate.is_not_null()).then(aggregate).otherwise(pl.col("cell"))
    if dot_grouping:
        cleaned = cell.str.replace_all(".", "", literal=True).str.replace_all(",", ".", literal=True)
    else:
        cleaned = cell.str.replace_all(",", "", literal=True)
    number_text = pl.when(cell.str.contains(_GROUPED_NUMBER)).then(cleaned).otherwise(cell)
    long = long.with_columns(
        pl.when(cell.is_in(_NOT_AVAILABLE))
        .then(None)
        .otherwise(number_text.cast(pl.Float64, strict=False))
        .alias("value"),
    )
    long = long.with_columns((pl.col("value").is_null() & cell.str.contains(_INSTANCE_LIST)).alias("_is_list"))
    if long.select(pl.col("_is_list").any()).item():
        long = _instance_means(long, dot_grouping)
    return long


def _metric_columns(long: pl.DataFrame) -> pl.DataFrame:
    """The metric frame from parsed cells with `unit` and `factor`: scaled value, text_value and kind."""
    value = pl.col("value") * pl.col("factor")
    is_number = pl.col("value").is_not_null()
    return long.select(
        "launch_key",
        "section",
        "name",
        "unit",
        value.alias("value"),
        pl.when(~is_number | pl.col("_is_list")).then(pl.col("cell")).alias("text_value"),
        pl.when(~is_number)
        .then(pl.lit("text"))
        .when(~pl.col("_is_list") & _integral(value))
        .then(pl.lit("int"))
        .otherwise(pl.lit("float"))
        .alias("kind"),
        "_line",
        "_column",
    )


def _raw_metrics(
    path: Path,
    rows: pl.DataFrame,
    metric_columns: list[str],
    units: dict[str, str | None],
    launches: pl.DataFrame,
    dot_grouping: bool,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The raw page's metric columns as long rows (grouped by metric column, launches in file order), and the
    launch-field metrics as a wide frame.

    Whole columns are cast to numbers first: ncu writes plain numbers on the raw page, so only the columns with
    cells that do not cast (text, separators, instance lists) go through the slower cleaning path, and only for
    those cells. A numeric column's kind is "int" when every value in it is integral, else "float".
    """
    import numpy as np  # here: only the raw page needs it, and it costs other imports start-up time

    count = rows.height
    normalized = {c: _normalized_unit(units[c]) for c in metric_columns}
    schema = _dtypes(rows)
    # Series by Series: on a small file, a query over hundreds of columns costs more than the casts.
    columns = {
        c: rows.get_column(c) if schema[c] == pl.Float64 else rows.get_column(c).cast(pl.Float64, strict=False)
        for c in metric_columns
    }  # unscaled; empty cells and cells that did not cast are null
    numeric = [c for c in metric_columns if columns[c].null_count() < count]  # the others were never collected
    launch_values = _narrow(rows, ["launch_key"]).with_columns(
        *(columns[n] * normalized[n][1] for n in _LAUNCH_METRICS if n in columns),
        *(pl.lit(None, dtype=pl.Float64).alias(n) for n in _LAUNCH_METRICS if n not in columns),
    )
    values = pl.DataFrame([columns[c] for c in numeric]).to_numpy(order="fortran")  # launches x columns
    factors = np.array([normalized[c][1] for c in numeric])
    if (factors != 1.0).any():
        values = values * factors  # stays column-major
    missing = np.isnan(values)  # null, or a NaN ("nan") cell
    missing_count = dict(zip(numeric, missing.sum(axis=0).tolist(), strict=True))
    suspects = [c for c in metric_columns if missing_count.get(c, count) and schema[c] == pl.String]
    empty = {c: (rows.get_column(c).fill_null("") == "").sum() for c in suspects}
    failed_columns = [c for c in suspects if missing_count.get(c, count) > empty[c]]
    with np.errstate(invalid="ignore"):
        integral = np.all((values == np.floor(values)) | missing, axis=0)
    # Long rows: all launches of a metric column, then the next column.
    column_index = np.repeat(np.arange(len(numeric), dtype=np.uint32), count)
    launch_keys = np.tile(rows["launch_key"].to_numpy(), len(numeric))
    flat_values = values.T.ravel()  # a view: `values` is column-major
    if missing.any():
        keep = ~missing.T.ravel()
        column_index, launch_keys, flat_values = column_index[keep], launch_keys[keep], flat_values[keep]
    per_column = pl.DataFrame(
        {
            "name": numeric,
            "unit": [normalized[c][0] for c in numeric],
            "kind": ["int" if i else "float" for i in integral],
        },
        schema={"name": pl.String, "unit": pl.String, "kind": pl.String},
    )
    # One gather of the three string columns (polars runs them in parallel) instead of a gather each.
    fast = per_column[pl.Series(column_index, dtype=pl.UInt32)].with_columns(
        pl.Series("launch_key", launch_keys),
        pl.Series("value", flat_values),
        pl.lit(None, dtype=pl.String).alias("text_value"),
    )  # _device reads it even when no column holds text

    if normalized.get("gpu__time_duration.sum", ("ns", 1.0))[0] not in ("ns", None):
        launch_values = launch_values.with_columns(pl.lit(None, dtype=pl.Float64).alias("gpu__time_duration.sum"))
    if not failed_columns:
        return fast, launch_values
    unit_table = pl.DataFrame(
        {"name": metric_columns, "unit_raw": [units[c] for c in metric_columns]},
        schema={"name": pl.String, "unit_raw": pl.String},
    )

    def long_cells(columns: list[str]) -> pl.DataFrame:
        return (
            _narrow(rows, ["launch_key", "_line", *columns])
            .unpivot(index=["launch_key", "_line"], on=columns, variable_name="name", value_name="cell")
            .join(unit_table, on="name", how="left", maintain_order="left")
            .with_columns(
                pl.lit(None, dtype=pl.String).alias("section"), pl.lit(None, dtype=pl.String).alias("_column")
            )
        )

    if dot_grouping:  # localized numbers: a "1.234" that did cast means 1234, so every cell is cleaned
        metrics = _numeric_metrics(long_cells(metric_columns))
        return metrics, _launch_metric_values(path, metrics, launches)
    slow = _numeric_metrics(
        long_cells(failed_columns).filter(pl.col("cell").str.strip_chars().cast(pl.Float64, strict=False).is_null())
    )
    if any(c in _LAUNCH_METRICS for c in failed_columns):
        _check_launch_metrics(path, slow, launches)
        fixed = slow.filter(pl.col("name").is_in(launch_values.columns) & pl.col("value").is_not_null())
        for row in fixed.iter_rows(named=True):  # instance lists or separators in a launch-field metric
            launch_values = launch_values.with_columns(
                pl.when(pl.col("launch_key") == row["launch_key"])
                .then(row["value"])
                .otherwise(pl.col(row["name"]))
                .alias(row["name"])
            )
    return pl.concat([fast, slow.drop("_line", "_column")], how="diagonal_relaxed"), launch_values


def _integral(value: pl.Expr) -> pl.Expr:
    return (value == value.floor()) & (value.abs() < 2.0**53)


def _instance_means(long: pl.DataFrame, dot_grouping: bool) -> pl.DataFrame:
    """`--print-metric-instances values` cells: the mean of the instance values becomes the value."""
    element = pl.element().str.strip_chars()
    if dot_grouping:
        element = element.str.replace_all(".", "", literal=True).str.replace_all(",", ".", literal=True)
    else:
        element = element.str.replace_all(",", "", literal=True)
    means = (
        pl.col("cell")
        .str.strip_chars("() ")
        .str.replace_all(r"\s*;\s*|\s+", ";")
        .str.strip_chars(";")
        .str.split(";")
        .list.eval(element.cast(pl.Float64, strict=False))
        .list.mean()
    )
    return long.with_columns(pl.when(pl.col("_is_list")).then(means).otherwise(pl.col("value")).alias("value"))


# ---- launch fields and device from the metrics ---------------------------------------------------------------------


def _check_launch_metrics(path: Path, metrics: pl.DataFrame, launches: pl.DataFrame) -> None:
    """A text value where a launch field needs a number (registers, sizes, duration) is an InputError."""
    bad = metrics.filter(
        pl.col("name").is_in(_LAUNCH_METRICS) & (pl.col("kind") == "text") & ~pl.col("text_value").is_in(_NOT_AVAILABLE)
    )
    if bad.height:
        row = bad.row(0, named=True)
        line = row.get("_line")
        if line is None:
            line = launches.filter(pl.col("launch_key") == row["launch_key"])["_line"][0]
        raise InputError(
            str(path), f"{row['name']} {row['text_value']!r} is not a number", line, row.get("_column") or row["name"]
        )


def _launch_metric_values(path: Path, metrics: pl.DataFrame, launches: pl.DataFrame) -> pl.DataFrame:
    """launch_key and one column per metric id in `_LAUNCH_METRICS` (null where absent); duration in ns only."""
    wanted = metrics.filter(pl.col("name").is_in(_LAUNCH_METRICS))
    _check_launch_metrics(path, wanted, launches)
    if set(wanted.filter(pl.col("name") == "gpu__time_duration.sum")["unit"].to_list()) - {"ns", None}:
        wanted = wanted.filter(pl.col("name") != "gpu__time_duration.sum")
    schema = {"launch_key": pl.Int64, **{n: pl.Float64 for n in _LAUNCH_METRICS}}
    if wanted.height == 0:
        return pl.DataFrame(schema=schema)
    wide = (
        wanted.group_by("launch_key", "name", maintain_order=True)
        .agg(pl.col("value").first())
        .pivot(on="name", index="launch_key", values="value")
    )
    return wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(n) for n in _LAUNCH_METRICS if n not in wide.columns)


def _fill_launch_fields(launches: pl.DataFrame, values: pl.DataFrame) -> pl.DataFrame:
    """Grid/block dims (columns, else per-axis metrics, else 1-D totals), registers, shared memory, duration."""
    launches = launches.join(values, on="launch_key", how="left", maintain_order="left")
    columns = launches.columns

    def col_or_null(name: str) -> pl.Expr:
        return pl.col(name) if name in columns else pl.lit(None, dtype=pl.Int64)

    def to_int(name: str) -> pl.Expr:
        return pl.col(name).round().cast(pl.Int64)

    fields = []
    for prefix, total in (("grid", "launch__grid_size"), ("block", "launch__block_size")):
        for axis in "xyz":
            one_d = to_int(total) if axis == "x" else pl.when(pl.col(total).is_not_null()).then(pl.lit(1))
            fields.append(
                pl.coalesce(col_or_null(f"{prefix}_{axis}"), to_int(f"launch__{prefix}_dim_{axis}"), one_d)
                .cast(pl.Int64)
                .alias(f"{prefix}_{axis}")
            )
    return launches.with_columns(
        *fields,
        to_int("launch__registers_per_thread").alias("registers_per_thread"),
        to_int("launch__shared_mem_per_block_static").alias("static_smem_bytes"),
        to_int("launch__shared_mem_per_block_dynamic").alias("dynamic_smem_bytes"),
        pl.col("gpu__time_duration.sum").alias("duration_ns"),
    )


def _device(launches: pl.DataFrame, metrics: pl.DataFrame) -> tuple[Device | None, list[str]]:
    """The device of the first launch: `Device`/`CC` columns, device__attribute_* metrics, occupancy figures."""
    if launches.height == 0:
        return None, []
    first_key = launches["launch_key"][0]
    device_metrics = metrics.filter(pl.col("launch_key") == first_key).filter(
        pl.col("name").str.starts_with("device__attribute_")
        | pl.col("name").is_in(
            ["launch__sm_count", "sm__maximum_warps_avg_per_active_cycle", "sm__maximum_warps_per_active_cycle_pct"]
        )
    )
    by_name: dict[str, float | str | None] = {}
    for name, value, text in device_metrics.select("name", "value", "text_value").iter_rows():
        by_name.setdefault(name, value if value is not None else text)

    def attribute(name: str) -> float | str | None:
        return by_name.get(name)

    def as_int(value: float | str | None) -> int | None:
        return int(round(value)) if isinstance(value, float) else None

    compute_capability = launches["_cc"][0] if "_cc" in launches.columns else None
    major, minor = (
        attribute("device__attribute_compute_capability_major"),
        attribute("device__attribute_compute_capability_minor"),
    )
    if not compute_capability and isinstance(major, float) and isinstance(minor, float):
        compute_capability = f"{int(major)}.{int(minor)}"
    clock_khz = attribute("device__attribute_clock_rate")
    max_warps = as_int(attribute("device__attribute_max_warps_per_multiprocessor"))
    theoretical_warps = attribute("sm__maximum_warps_avg_per_active_cycle")
    theoretical_pct = attribute("sm__maximum_warps_per_active_cycle_pct")
    if (
        max_warps is None
        and isinstance(theoretical_warps, float)
        and isinstance(theoretical_pct, float)
        and theoretical_pct > 0
    ):  # theoretical warps per SM / theoretical occupancy = the SM's warp limit
        max_warps = int(round(theoretical_warps * 100.0 / theoretical_pct))
    extra: dict[str, object] = {}
    for attribute_name, key in _DEVICE_EXTRA.items():
        value = as_int(attribute(f"device__attribute_{attribute_name}"))
        if value is not None:
            extra[key] = value
    for attribute_name, key in _KHZ_EXTRA.items():
        value = attribute(f"device__attribute_{attribute_name}")
        if isinstance(value, float):
            extra[key] = value * 1e3
    name = attribute("device__attribute_display_name")
    device = Device(
        name=name if isinstance(name, str) else None,
        compute_capability=compute_capability or None,
        sm_count=as_int(attribute("device__attribute_multiprocessor_count")) or as_int(attribute("launch__sm_count")),
        sm_clock_hz=clock_khz * 1e3 if isinstance(clock_khz, float) else None,
        max_warps_per_sm=max_warps,
        extra=extra,
    )
    warnings = []
    identity = [c for c in ("device_id", "_cc") if c in launches.columns]
    if identity and launches.select(identity).unique().height > 1:
        warnings.append(
            f"launches ran on {launches.select(identity).unique().height} devices; the import's "
            "device fields describe the first launch's device"
        )
    if device == Device():
        return None, warnings
    return device, warnings
