"""Nsight Compute's Source page as CSV (`ncu --import R.ncu-rep --page source --csv --print-source ...`), both shapes:

- SASS only (`--print-source sass`): a `"Kernel Name",NAME` line, a header starting `"Address","Source"`, one row
  per instruction. No file or line: the samples are kept by instruction (pc_offset, SASS).
- CUDA with its SASS beneath (`--print-source cuda,sass`): per file of the kernel, `"File Path",PATH` and
  `"Function Name",NAME`, a header starting `"Line No","Source","Address","Source"`, then each source line's row
  (its number, its text, its totals) followed by its instructions' rows (empty line number, address, SASS). ncu
  repeats an instruction under a line and separates runs with `"..."` rows: an address is kept once per kernel.

Each kernel becomes one launch (the page carries no launch configuration or timing), its instructions rows of
`SOURCE_SAMPLE_SCHEMA` with the counters of `ncu_source`; the source lines' text the page printed is kept as the
file's text (lines it did not print are empty).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.ncu_source import sass_access, source_frame
from tracekit.parsed import LAUNCH_SCHEMA, SOURCE_FILE_SCHEMA, SOURCE_SAMPLE_SCHEMA, ParsedImport, conform

FORMAT = "ncu-source-csv"
SASS_HEADER = '"Address","Source"'
CUDA_HEADER = '"Line No","Source","Address","Source"'
# CSV column -> SOURCE_SAMPLE_SCHEMA column
COLUMNS = {
    "# Samples": "samples",
    "Instructions Executed": "inst_executed",
    "Thread Instructions Executed": "thread_inst_executed",
    "Predicated-On Thread Instructions Executed": "thread_inst_executed_true",
    "L2 Theoretical Sectors Global": "l2_sectors_global",
    "L2 Theoretical Sectors Global Ideal": "l2_sectors_global_ideal",
    "L2 Theoretical Sectors Global Excessive": "l2_sectors_global_excess",
    "L1 Tag Requests Global": "l1_requests_global",
    "L1 Wavefronts Shared": "shared_wavefronts",
    "L1 Wavefronts Shared Ideal": "shared_wavefronts_ideal",
    "L1 Wavefronts Shared Excessive": "shared_wavefronts_excess",
    "L1 Conflicts Shared N-Way": "shared_conflicts_nway",
    "Divergent Branches": "divergent_branches",
}
# The CSV's short stall names -> the reasons of smsp__pcsamp_warps_issue_stalled_* (as the .ncu-rep reader keeps).
STALLS = {
    "stall_barrier": "barrier",
    "stall_branch_resolving": "branch_resolving",
    "stall_dispatch": "dispatch_stall",
    "stall_drain": "drain",
    "stall_imc": "imc_miss",
    "stall_lg": "lg_throttle",
    "stall_long_sb": "long_scoreboard",
    "stall_math": "math_pipe_throttle",
    "stall_membar": "membar",
    "stall_mio": "mio_throttle",
    "stall_misc": "misc",
    "stall_no_inst": "no_instructions",
    "stall_not_selected": "not_selected",
    "stall_selected": "selected",
    "stall_short_sb": "short_scoreboard",
    "stall_sleep": "sleeping",
    "stall_tex": "tex_throttle",
    "stall_wait": "wait",
    "stall_gmma": "warpgroup_arrive",
}


def sniff(head: bytes) -> bool:
    text = head[:4096].decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = text.splitlines()
    if len(lines) >= 2 and lines[0].startswith('"Kernel Name",') and lines[1].startswith(SASS_HEADER):
        return True
    return (
        len(lines) >= 3
        and lines[0].startswith('"File Path",')
        and lines[1].startswith('"Function Name",')
        and lines[2].startswith(CUDA_HEADER)
    )


def read(path: Path, **options: Any) -> ParsedImport:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace").lstrip("\ufeff").replace("\x00", "\ufffd")
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None
    kernels: dict[str, dict[str, Any]] = {}
    header: list[str] | None = None
    kernel: dict[str, Any] | None = None
    file_path: str | None = None
    line_no: int | None = None
    cuda_shape = False
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not any(cell.strip() for cell in row):
            continue
        first = row[0]
        if first in ("Kernel Name", "Function Name") and len(row) >= 2:
            kernel = kernels.setdefault(row[1], {"rows": {}, "lines": {}})
            header = None
            continue
        if first == "File Path" and len(row) >= 2:
            file_path, line_no, header = row[1], None, None
            continue
        if first in ("Address", "Line No"):
            header, cuda_shape = row, first == "Line No"
            continue
        if header is None or kernel is None:
            raise InputError(
                str(path), f"line {number}: a row before any kernel name and header; not ncu's Source page"
            )
        cells = dict(zip(header[2:] if cuda_shape else header, row[2:] if cuda_shape else row, strict=False))
        if cuda_shape and first.strip():
            line_no = _int(first, path, number)
            kernel["lines"].setdefault(file_path, {})[line_no] = row[1]
            continue
        address_text = cells.get("Address", "")
        if address_text in ("", "...", "-"):
            continue
        try:
            address = int(address_text, 16)
        except ValueError:
            raise InputError(str(path), f"line {number}: address {address_text[:40]!r} is not hexadecimal") from None
        if address in kernel["rows"]:
            continue  # ncu repeats an instruction under its line
        kernel["rows"][address] = _instruction(
            cells, file_path if cuda_shape else None, line_no if cuda_shape else None, path, number
        )
    if not kernels or not any(k["rows"] for k in kernels.values()):
        raise InputError(str(path), "no instruction rows: the Source page export is empty")
    return _parsed(kernels, cuda_shape)


def _int(cell: str, path: Path, number: int) -> int:
    try:
        return int(cell.replace(",", ""))
    except ValueError:
        raise InputError(str(path), f"line {number}: {cell[:40]!r} is not a number") from None


def _number(cell: str | None, path: Path, number: int) -> float | None:
    if cell is None or cell.strip() in ("", "-"):
        return None
    try:
        return float(cell.replace(",", ""))
    except ValueError:
        raise InputError(str(path), f"line {number}: {cell[:40]!r} is not a number") from None


def _instruction(cells: dict[str, str], file_path: str | None, line: int | None, path: Path, number: int) -> dict:
    sass = (cells.get("Source") or "").strip() or None
    out: dict[str, Any] = {"sass": sass, "file": file_path, "line": line}
    for column, field in COLUMNS.items():
        value = _number(cells.get(column), path, number)
        out[field] = value if field == "shared_conflicts_nway" or value is None else round(value)
    stalls = {}
    for column, reason in STALLS.items():
        value = _number(cells.get(column), path, number)
        if value:
            stalls[reason] = round(value)
    out["stall_samples"] = json.dumps(stalls, sort_keys=True)
    out["address_space"], out["operation"] = sass_access(sass)
    return out


def _parsed(kernels: dict[str, dict[str, Any]], cuda_shape: bool) -> ParsedImport:
    launches, samples, files, warnings = [], [], [], []
    for key, (name, kernel) in enumerate(kernels.items()):
        launches.append({"launch_key": key, "kernel_name": name, "source_launch_id": str(key)})
        start = min(kernel["rows"]) if kernel["rows"] else 0
        for address, row in sorted(kernel["rows"].items()):
            samples.append({"launch_key": key, "function": name, "pc_offset": address - start, **row})
        for file_path, lines in kernel["lines"].items():
            if file_path is None or not lines:
                continue
            text = "\n".join(lines.get(n, "") for n in range(1, max(lines) + 1))
            files.append({"launch_key": key, "path": file_path, "text": text})
    if not cuda_shape:
        warnings.append(
            "a SASS-only Source page (--print-source sass): no source lines, the samples are kept by instruction"
        )
    warnings.append("ncu's Source page carries no launch configuration or timing: the launches have none")
    return ParsedImport(
        format=FORMAT,
        tool="Nsight Compute",
        launches=conform(pl.DataFrame(launches), LAUNCH_SCHEMA),
        source_samples=source_frame(samples, SOURCE_SAMPLE_SCHEMA),
        source_files=source_frame(files, SOURCE_FILE_SCHEMA),
        warnings=warnings,
    )
