"""nvprof's tables, as CSV (`nvprof --csv`) or as text, with its `==PID==` lines and application output around them.

Three tables are read, told apart by their header, never by the file name:
- GPU trace (`--print-gpu-trace`): a row per kernel launch or memory copy. Kernels become launches (start,
  duration, grid, block, registers, static and dynamic shared memory, device, context, stream, correlation id:
  the `Correlation_ID` column or the `[N]` nvprof appends to the name); memory copies become copies.
  Memsets and Unified Memory events are not stored.
- metrics and events (`--metrics`, `--events`): a row per (device, kernel, metric) with Invocations, Min, Max,
  Avg. One launch per (device, kernel) with an `invocations` metric, as the Nsight Compute summary page is read:
  `<metric>` holds the Avg, `<metric>.min` and `<metric>.max` the others. Each metric nvprof names is also
  stored under the Nsight Compute id the analysis reads, converted (`nvprof_names`), so a table with
  `achieved_occupancy`, `dram_utilization`, `branch_efficiency` ... gets a verdict.
- summary (the default output): a row per kernel with Calls, Avg, Min, Max. One launch per GPU-activity kernel
  (`invocations` = Calls, duration_ns = Avg, `gpu__time_duration.sum[.min|.max]`); memory copies and API calls
  are totals, not copies, and are left out with a warning.

CSV cells hold a number with the unit of the table's units row (`ms,ms,,,...,KB,B,MB/s`), or a number with its
unit glued on (`126.02GB/s`, `83.3%`); text cells always glue it (`6.4049ms`, `38.147MB`). Sizes and rates use
binary prefixes (a trace's Size / Duration equals its Throughput only with KB = 1024 B). Text tables are sliced
by their header: nvprof right-aligns each column to its header's last character and left-aligns the Name.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.nvprof_names import (
    L1_SHARED,
    L1_SHARED_LEVELS,
    NVPROF_SUMS,
    NVPROF_TO_NCU,
)
from tracekit.parsed import LAUNCH_SCHEMA, MEMCPY_SCHEMA, METRIC_SCHEMA, Device, ParsedImport, conform, empty_frame

FORMAT = "nvprof"
TRACE_FORMAT = "nvprof-trace"  # an import's format when the file is a GPU trace: a timeline, as nsys's

_PID_LINE = re.compile(r"^==\d+== ")
_SNIFF = re.compile(
    rb"^(?:==\d+== (?:NVPROF is profiling|Profiling application|Profiling result|Metric result|Event result)"
    rb'|"?Type"?,"?Time\(%\)"?,|"?Time\(%\)"?,"?Time"?,"?Calls"?,'
    rb'|"Start","Duration","Grid X"|"Device","Kernel","Invocations","(?:Metric|Event) Name")',
    re.MULTILINE,
)

_TIME_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
_BINARY = {"": 1.0, "K": 2.0**10, "M": 2.0**20, "G": 2.0**30, "T": 2.0**40}
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_QUANTITY = re.compile(rf"^({_NUMBER})\s*([A-Za-z/%]*)$")
_LEVEL = re.compile(r"^(Idle|Low|Mid|High|Max)\s*\((\d+)\)$")
_DEVICE = re.compile(r"^(.*?)\s*\((\d+)\)$")
_CORRELATION_SUFFIX = re.compile(r"\s\[(\d+)\]$")
_COPY_KIND = re.compile(r"^\[CUDA memcpy (\w+)\]$")


def sniff(head: bytes) -> bool:
    """nvprof's own `==PID==` lines, or the header of one of its CSV tables."""
    if b"\x00" in head:
        return False
    return bool(_SNIFF.search(head.lstrip(b"\xef\xbb\xbf")))


@dataclass
class _Table:
    kind: str  # "trace" | "metrics" | "summary"
    csv: bool
    header_index: int
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (1-based line, cells)
    units: dict[str, str]


def read(path: Path, **options: Any) -> ParsedImport:
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig", errors="replace")
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None
    lines = text.splitlines()
    tables = _tables(lines)
    if not tables:
        raise InputError(str(path), _no_table_reason(lines))
    table = min(tables, key=lambda t: ("metrics", "trace", "summary").index(t.kind))
    warnings = [line.split("== ", 1)[1] for line in lines if _PID_LINE.match(line) and "Warning" in line]
    if table.kind == "trace":
        parsed = _trace(path, table)
    elif table.kind == "metrics":
        parsed = _metrics(path, table)
    else:  # several runs' outputs in one file: each summary's kernels
        parsed = _summary(path, [t for t in tables if t.kind == "summary"])
    parsed.warnings = warnings + parsed.warnings
    return parsed


def _no_table_reason(lines: list[str]) -> str:
    api_trace = any(re.match(r'^"?Start"?,"?Duration"?,"?Name"?', line) for line in lines)
    if api_trace:
        return (
            "nvprof's CUDA API trace (--print-api-trace), which holds no GPU work: rerun with "
            "nvprof --print-gpu-trace --csv, or nvprof -o profile.nvvp, and import that"
        )
    return (
        "nvprof output without a table tracekit reads (a GPU trace, --metrics/--events, or the summary): "
        "rerun with nvprof --print-gpu-trace --csv --log-file trace.csv, or nvprof -o profile.nvvp"
    )


# ---- finding the tables -------------------------------------------------------------------------------------

_TEXT_HEADERS = {
    "trace": re.compile(r"^\s*Start\s+Duration\s+.*\bName\s*$"),
    "metrics": re.compile(r"^\s*Invocations\s+(?:Metric|Event) Name\s+.*\b(?:Avg|Total)\s*$"),
    "summary": re.compile(r"^\s*(?:Type\s+)?Time\(%\)\s+Time\s+Calls\s+Avg\s+Min\s+Max\s+Name\s*$"),
}


def _csv_kind(cells: list[str]) -> str | None:
    if cells[:3] == ["Start", "Duration", "Grid X"]:
        return "trace"
    if (
        cells[:3] == ["Device", "Kernel", "Invocations"]
        and len(cells) > 3
        and cells[3] in ("Metric Name", "Event Name")
    ):
        return "metrics"
    if cells[:4] in (["Type", "Time(%)", "Time", "Calls"], ["Time(%)", "Time", "Calls", "Avg"]):
        return "summary"
    return None


def _tables(lines: list[str]) -> list[_Table]:
    tables: list[_Table] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        cells = next(csv.reader([line])) if line.startswith(('"', "Time(%)")) else []
        kind = _csv_kind(cells) if cells else None
        if kind:
            table = _Table(kind, True, index, cells, [], {})
            index = _csv_rows(lines, index + 1, table)
            tables.append(table)
            continue
        for kind, pattern in _TEXT_HEADERS.items():
            if pattern.match(line):
                table = _Table(kind, False, index, line.split(), [], {})
                index = _text_rows(lines, index + 1, table, line)
                tables.append(table)
                break
        else:
            index += 1
    return tables


def _csv_rows(lines: list[str], index: int, table: _Table) -> int:
    """The CSV rows after a header, up to the first line that is not one (blank, `==`, application output)."""
    first = True
    while index < len(lines):
        line = lines[index]
        if not line.strip() or _PID_LINE.match(line) or line.startswith("======== "):
            break
        cells = next(csv.reader([line]))
        if len(cells) < len(table.header) - 1:
            break
        if first and table.kind != "metrics" and _is_units_row(cells, table.header):
            table.units = dict(zip(table.header, cells, strict=False))
        else:
            table.rows.append((index + 1, cells))
        first = False
        index += 1
    return index


def _is_units_row(cells: list[str], header: list[str]) -> bool:
    """The units row: every cell empty or a bare unit (`ms`, `KB`, `GB/s`, `%`)."""
    return all(not c or re.fullmatch(r"[A-Za-z/%]+", c) for c in cells) and any(cells)


def _split_labels(header_line: str) -> list[tuple[str, int]]:
    """Header labels (runs of words separated by single spaces) and their end columns."""
    return [(m.group(0), m.end()) for m in re.finditer(r"\S+(?: \S+)*", header_line)]


def _text_rows(lines: list[str], index: int, table: _Table, header_line: str) -> int:
    labels = _split_labels(header_line)
    table.header = [label for label, _ in labels]
    kernel = device = None
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            if table.kind == "metrics":  # nvprof ends the table with the output; blank lines may sit inside
                index += 1
                continue
            break
        if _PID_LINE.match(line) or line.startswith("======== "):
            break
        if table.kind == "metrics":
            device_match = re.match(r'^Device "(.*)"\s*$', line)
            if device_match:
                device = device_match.group(1)
                index += 1
                continue
            kernel_match = re.match(r"^\s+Kernel: (.*)$", line)
            if kernel_match:
                kernel = kernel_match.group(1).strip()
                index += 1
                continue
            cells = _slice(line, labels, name_column=None)
            table.rows.append((index + 1, [device or "", kernel or "", *cells]))
        elif table.kind == "summary":
            if not table.rows and re.fullmatch(r"[\s%A-Za-z/]*", line):  # the units line, under its columns
                table.units = dict(zip(table.header, _slice(line, labels, name_column="Name"), strict=False))
                index += 1
                continue
            summary_cells = _summary_text_cells(line, labels)
            if summary_cells is None:
                break
            table.rows.append((index + 1, summary_cells))
        else:
            table.rows.append((index + 1, _slice(line, labels, name_column="Name")))
        index += 1
    if table.kind == "metrics":
        table.header = ["Device", "Kernel", *table.header]
    return index


def _slice(line: str, labels: list[tuple[str, int]], name_column: str | None) -> list[str]:
    """Cells of a right-aligned text row; the `name_column` (left-aligned, last) takes the rest of the line."""
    cells: list[str] = []
    start = 0
    for position, (label, end) in enumerate(labels):
        if label == name_column and position == len(labels) - 1:
            name_start = labels[position - 1][1] if position else 0
            cells.append(line[name_start:].strip())
            break
        cells.append(line[start:end].strip())
        start = end
    return cells


def _summary_text_cells(line: str, labels: list[tuple[str, int]]) -> list[str] | None:
    """A text summary row: `[Type:]` then Time(%), Time, Calls, Avg, Min, Max and the name (whitespace-split: the
    Type column's label, "GPU activities:", is wider than its header)."""
    has_type = labels[0][0] == "Type"
    kind = ""
    body = line
    if has_type:
        match = re.match(r"^\s*([^:]*?):\s", line)
        if match and not re.match(rf"^\s*{_NUMBER}", line):
            kind, body = match.group(1).strip(), line[match.end() :]
    parts = body.split(None, 6)
    if len(parts) < 7 or not _QUANTITY.match(parts[0]):
        return None
    return ([kind] if has_type else []) + parts


# ---- values ---------------------------------------------------------------------------------------------------


def _quantity(cell: str, unit: str = "") -> tuple[float | None, str | None, str | None]:
    """(value in base units, base unit, text) of one nvprof cell: `6.4049ms` -> 6404900.0 ns; `Low (2)` -> 2.0
    with text; `-` or empty -> nothing."""
    cell = cell.strip()
    if cell in ("", "-", "n/a"):
        return None, None, None
    level = _LEVEL.match(cell)
    if level:
        return float(level.group(2)), "level", cell
    match = _QUANTITY.match(cell)
    if not match:
        return None, None, cell
    value = float(match.group(1))
    suffix = match.group(2) or unit
    if suffix in _TIME_NS:
        return value * _TIME_NS[suffix], "ns", None
    size = re.fullmatch(r"([KMGT]?)B(/s)?", suffix)
    if size:
        return value * _BINARY[size.group(1)], "byte/s" if size.group(2) else "byte", None
    return value, suffix or None, None


def _number(path: Path, line: int, column: str, cell: str, unit: str = "") -> float | None:
    value, _, text = _quantity(cell, unit)
    if text is not None and value is None:
        raise InputError(str(path), f"{column} is {cell!r}, not a number", line)
    if value is not None and (math.isnan(value) or value < 0):
        raise InputError(str(path), f"{column} is {cell!r}, impossible", line)
    return value


def _integer(path: Path, line: int, column: str, cell: str, unit: str = "") -> int | None:
    value = _number(path, line, column, cell, unit)
    return None if value is None else int(round(value))


def _device(cell: str) -> tuple[str | None, int | None]:
    cell = cell.strip()
    if not cell or cell == "-":
        return None, None
    match = _DEVICE.match(cell)
    return (match.group(1), int(match.group(2))) if match else (cell, None)


def _name_and_correlation(name: str) -> tuple[str, int | None]:
    match = _CORRELATION_SUFFIX.search(name)
    return (name[: match.start()], int(match.group(1))) if match else (name, None)


def _triplet(cell: str) -> tuple[int | None, int | None, int | None] | None:
    """`(39063 1 1)` of a text trace's Grid Size / Block Size."""
    match = re.fullmatch(r"\((\d+) (\d+) (\d+)\)", cell.strip())
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


# ---- GPU trace ------------------------------------------------------------------------------------------------


def _trace(path: Path, table: _Table) -> ParsedImport:
    launches: list[dict[str, Any]] = []
    copies: list[dict[str, Any]] = []
    known = {"Start", "Duration", "Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z"}
    known |= {"Registers Per Thread", "Static SMem", "Dynamic SMem", "Size", "Throughput", "SrcMemType"}
    known |= {"DstMemType", "Device", "Context", "Stream", "Name", "Correlation_ID", "Grid Size", "Block Size"}
    known |= {"Regs*", "SSMem*", "DSMem*", "Src Dev", "Src Ctx", "Dst Dev", "Dst Ctx", "Unified Memory"}
    known |= {"Virtual Address", "Src Dev", "Src Ctx"}
    extra_columns = [c for c in table.header if c not in known]
    metric_rows: list[dict[str, Any]] = []
    for line, cells in table.rows:
        row = dict(zip(table.header, cells, strict=False))
        u = table.units
        name, correlation = _name_and_correlation(row.get("Name", "").strip())
        if "Correlation_ID" in row and row["Correlation_ID"].strip():
            correlation = _integer(path, line, "Correlation_ID", row["Correlation_ID"])
        start = _number(path, line, "Start", row.get("Start", ""), u.get("Start", ""))
        duration = _number(path, line, "Duration", row.get("Duration", ""), u.get("Duration", ""))
        device_name, device_id = _device(row.get("Device", ""))
        common = {
            "start_ns": None if start is None else int(round(start)),
            "end_ns": None if start is None or duration is None else int(round(start + duration)),
            "stream_id": _integer(path, line, "Stream", row.get("Stream", "")),
            "device_id": device_id,
        }
        copy = _COPY_KIND.match(name)
        if copy:
            size = _number(path, line, "Size", row.get("Size", ""), u.get("Size", ""))
            copies.append({**common, "kind": copy.group(1), "size_bytes": None if size is None else int(round(size))})
            continue
        grid = _triplet(row.get("Grid Size", "")) or tuple(
            _integer(path, line, f"Grid {axis}", row.get(f"Grid {axis}", "")) for axis in "XYZ"
        )
        block = _triplet(row.get("Block Size", "")) or tuple(
            _integer(path, line, f"Block {axis}", row.get(f"Block {axis}", "")) for axis in "XYZ"
        )
        if name.startswith("[") or grid[0] is None:  # memset, Unified Memory events
            continue
        if duration is None:
            raise InputError(str(path), f"kernel {name!r} has no duration", line)
        key = len(launches)
        launches.append(
            {
                **common,
                "launch_key": key,
                "kernel_name": name,
                "mangled_name": name if name.startswith("_Z") else None,
                "grid_x": grid[0],
                "grid_y": grid[1],
                "grid_z": grid[2],
                "block_x": block[0],
                "block_y": block[1],
                "block_z": block[2],
                "registers_per_thread": _integer(
                    path, line, "Registers Per Thread", row.get("Registers Per Thread", row.get("Regs*", ""))
                ),
                "static_smem_bytes": _integer(
                    path, line, "Static SMem", row.get("Static SMem", row.get("SSMem*", "")), u.get("Static SMem", "")
                ),
                "dynamic_smem_bytes": _integer(
                    path,
                    line,
                    "Dynamic SMem",
                    row.get("Dynamic SMem", row.get("DSMem*", "")),
                    u.get("Dynamic SMem", ""),
                ),
                "context_id": _integer(path, line, "Context", row.get("Context", "")),
                "correlation_id": correlation,
                "source_launch_id": None if correlation is None else str(correlation),
                "duration_ns": duration,
                "_device_name": device_name,
            }
        )
        for column in extra_columns:  # --print-gpu-trace --metrics: a metric per extra column
            value, unit, text = _quantity(row.get(column, ""), u.get(column, ""))
            if value is not None or text is not None:
                metric_rows.append({"launch_key": key, "name": column, "unit": unit, "value": value, "text": text})
    if not launches and not copies:
        raise InputError(str(path), "nvprof's GPU trace holds no kernel launch or memory copy", table.header_index + 1)
    device = _common_device([launch.pop("_device_name") for launch in launches])
    warnings = [] if launches else ["nvprof's GPU trace holds memory copies but no kernel launch"]
    metrics = _metric_frame(metric_rows)
    return ParsedImport(
        format=TRACE_FORMAT,
        tool="nvprof",
        device=device,
        launches=conform(pl.DataFrame(launches, schema_overrides=LAUNCH_SCHEMA), LAUNCH_SCHEMA)
        if launches
        else conform(empty_frame(LAUNCH_SCHEMA), LAUNCH_SCHEMA),
        metrics=metrics,
        memcpys=conform(pl.DataFrame(copies), MEMCPY_SCHEMA) if copies else empty_frame(MEMCPY_SCHEMA),
        warnings=warnings,
    )


def _common_device(names: list[str | None]) -> Device | None:
    distinct = sorted({n for n in names if n})
    return Device(name=distinct[0]) if distinct else None


# ---- metrics and events -----------------------------------------------------------------------------------------


def _metrics(path: Path, table: _Table) -> ParsedImport:
    name_column = "Metric Name" if "Metric Name" in table.header else "Event Name"
    for column in ("Device", "Kernel", "Invocations", name_column, "Avg"):
        if column not in table.header:
            raise InputError(str(path), f"nvprof metrics table without a {column!r} column", table.header_index + 1)
    launches: dict[tuple[str, str], dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for line, cells in table.rows:
        row = dict(zip(table.header, cells, strict=False))
        if not row.get(name_column, "").strip():
            continue
        key = (row["Device"].strip(), row["Kernel"].strip())
        if key not in launches:
            invocations = _integer(path, line, "Invocations", row["Invocations"])
            device_name, device_id = _device(key[0])
            launches[key] = {
                "launch_key": len(launches),
                "kernel_name": key[1],
                "mangled_name": key[1] if key[1].startswith("_Z") else None,
                "device_id": device_id,
                "_device_name": device_name,
            }
            rows.append(
                {"launch_key": launches[key]["launch_key"], "name": "invocations", "unit": None, "value": invocations}
            )
        launch_key = launches[key]["launch_key"]
        name = row[name_column].strip()
        for stat, suffix in (("Avg", ""), ("Min", ".min"), ("Max", ".max"), ("Total", ".total")):
            if stat not in row:
                continue
            value, unit, text = _quantity(row[stat])
            if value is None and text is None:
                continue
            rows.append({"launch_key": launch_key, "name": name + suffix, "unit": unit, "value": value, "text": text})
    if not launches:
        raise InputError(str(path), "nvprof's metrics table has no rows", table.header_index + 1)
    frame = [dict(launch) for launch in launches.values()]
    device = _common_device([launch.pop("_device_name") for launch in frame])
    return ParsedImport(
        format=FORMAT,
        tool="nvprof",
        device=device,
        launches=conform(pl.DataFrame(frame, schema_overrides=LAUNCH_SCHEMA), LAUNCH_SCHEMA),
        metrics=_metric_frame(rows),
        warnings=[
            "nvprof's metrics table gives no launch timing or configuration: duration, grid and block are unknown"
        ],
    )


def _metric_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The metric rows, plus each mapped nvprof metric under its Nsight Compute id (`nvprof_names`)."""
    if not rows:
        return empty_frame(METRIC_SCHEMA)
    by_launch: dict[int, dict[str, float]] = {}
    for row in rows:
        if row.get("value") is not None:
            by_launch.setdefault(row["launch_key"], {}).setdefault(row["name"], row["value"])
    mapped: list[dict[str, Any]] = []
    for launch_key, values in by_launch.items():
        for name, (ncu_id, factor) in NVPROF_TO_NCU.items():
            if name in values and ncu_id not in values:
                mapped.append({"launch_key": launch_key, "name": ncu_id, "value": values[name] * factor})
        for ncu_id, (first, second) in NVPROF_SUMS.items():
            if first in values and second in values:
                mapped.append({"launch_key": launch_key, "name": ncu_id, "value": values[first] + values[second]})
        levels = [values[name] for name in L1_SHARED_LEVELS if name in values]
        if levels:
            mapped.append({"launch_key": launch_key, "name": L1_SHARED, "value": 10.0 * max(levels)})
    for row in mapped:
        row["section"] = "nvprof, as Nsight Compute"
        row["unit"] = _ncu_unit(row["name"])
    return pl.DataFrame(
        [
            {
                "launch_key": row["launch_key"],
                "section": row.get("section", "nvprof"),
                "name": row["name"],
                "unit": row.get("unit"),
                "value": None if row.get("value") is None else float(row["value"]),
                "text_value": row.get("text"),
                "kind": "text" if row.get("value") is None else "float",
            }
            for row in [*rows, *mapped]
        ],
        schema=METRIC_SCHEMA,
    )


def _ncu_unit(ncu_id: str) -> str | None:
    """The base unit of a mapped Nsight Compute id, from its name's suffix."""
    if ".pct" in ncu_id:
        return "%"
    if ncu_id.endswith(".per_second"):
        return "byte/s"
    if ncu_id.startswith("dram__bytes"):
        return "byte"
    return None


# ---- summary ---------------------------------------------------------------------------------------------------


def _summary(path: Path, tables: list[_Table]) -> ParsedImport:
    """Every summary's kernels: a log of several nvprof runs (one summary each) has the kernels of each run that
    profiled some, and a run that profiled none ("No kernels were profiled.") adds nothing."""
    launches: list[dict[str, Any]] = []
    metrics: list[dict[str, Any]] = []
    aggregated = 0
    rows = [(table, line, cells) for table in tables for line, cells in table.rows]
    kind = ""
    previous: _Table | None = None
    with_kernels: set[int] = set()
    for table, line, cells in rows:
        if table is not previous:
            kind, previous = "", table
        row = dict(zip(table.header, cells, strict=False))
        kind = row.get("Type", "").strip() or kind  # text summaries name the type on its first row only
        name, _ = _name_and_correlation(row.get("Name", "").strip())
        if kind and kind != "GPU activities":
            continue
        if name.startswith("["):
            aggregated += 1
            continue
        u = table.units
        calls = _integer(path, line, "Calls", row.get("Calls", ""))
        stats = {stat: _number(path, line, stat, row.get(stat, ""), u.get(stat, "")) for stat in ("Avg", "Min", "Max")}
        total = _number(path, line, "Time", row.get("Time", ""), u.get("Time", ""))
        key = len(launches)
        with_kernels.add(table.header_index)
        launches.append(
            {
                "launch_key": key,
                "kernel_name": name,
                "mangled_name": name if name.startswith("_Z") else None,
                "duration_ns": stats["Avg"],
            }
        )
        metrics.append({"launch_key": key, "name": "invocations", "unit": None, "value": calls})
        for stat, suffix in (("Avg", ""), ("Min", ".min"), ("Max", ".max")):
            metrics.append(
                {"launch_key": key, "name": "gpu__time_duration.sum" + suffix, "unit": "ns", "value": stats[stat]}
            )
        metrics.append({"launch_key": key, "name": "gpu__time_duration.total", "unit": "ns", "value": total})
    if not launches:
        runs = f"none of its {len(tables)} summaries lists" if len(tables) > 1 else "nvprof's summary lists"
        raise InputError(
            str(path),
            f"{runs} a kernel (only memory copies and API calls): rerun with "
            "nvprof --print-gpu-trace --csv, or nvprof -o profile.nvvp",
            tables[0].header_index + 1,
        )
    warnings = ["nvprof's summary gives each kernel's totals, not its launches: one launch per kernel (Avg)"]
    if len(tables) > 1:
        warnings.append(
            f"{len(tables)} nvprof summaries (runs) in one file: the kernels of the {len(with_kernels)} that "
            "profiled some are imported, each run's kernels as launches of their own"
        )
    if aggregated:
        warnings.append(f"{aggregated} memory copy or memset rows of the summary are totals and are not stored")
    return ParsedImport(
        format=FORMAT,
        tool="nvprof",
        launches=conform(pl.DataFrame(launches, schema_overrides=LAUNCH_SCHEMA), LAUNCH_SCHEMA),
        metrics=_metric_frame(metrics),
        warnings=warnings,
    )
