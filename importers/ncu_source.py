"""Nsight Compute's Source page: per-instruction (SASS, PC) counters and their source lines, from an `.ncu-rep`.

With the SourceCounters section (`--set full`), a report holds source-correlated metrics: instance-valued metrics
whose correlation IDs are the addresses of the kernel's SASS instructions (warp-state samples by stall reason,
instructions executed, L2 sectors, shared wavefronts, divergent branches, ...). `ncu_report` maps an address to
its SASS text (`sass_by_pc`) and, for code built with `-lineinfo`, to its file and line (`source_info`);
`source_files` holds the text of files recorded with `--import-source yes`. `instructions` runs in the child
process `ncu_rep` reads a report in (plain Python values only: they are pickled back); `frame` turns them into
the rows of `tracekit.parsed.SOURCE_SAMPLE_SCHEMA`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import polars as pl

from tracekit.parsed import SOURCE_FILE_SCHEMA, SOURCE_SAMPLE_SCHEMA, conform, empty_frame

SAMPLES_METRIC = "smsp__pcsamp_sample_count"
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
FUNCTION_START_METRIC = "launch__function_pcs"
# Source-correlated metric -> column. Names are those of ncu 2023 to 2025 (SourceCounters section).
COUNTER_COLUMNS = {
    "inst_executed": "inst_executed",
    "thread_inst_executed": "thread_inst_executed",
    "thread_inst_executed_true": "thread_inst_executed_true",
    "memory_l2_theoretical_sectors_global": "l2_sectors_global",
    "memory_l2_theoretical_sectors_global_ideal": "l2_sectors_global_ideal",
    "derived__memory_l2_theoretical_sectors_global_excessive": "l2_sectors_global_excess",
    "memory_l1_wavefronts_shared": "shared_wavefronts",
    "memory_l1_wavefronts_shared_ideal": "shared_wavefronts_ideal",
    "derived__memory_l1_wavefronts_shared_excessive": "shared_wavefronts_excess",
    "derived__memory_l1_conflicts_shared_nway": "shared_conflicts_nway",
    "smsp__branch_targets_threads_divergent": "divergent_branches",
    "memory_l1_tag_requests_global": "l1_requests_global",
}
NO_SOURCE_COUNTERS = (
    "{count} has no source counters (record with --set full or --section SourceCounters to see lines); "
    "its other metrics are imported"
)


def instructions(action) -> dict[str, Any]:
    """The action's source-correlated counters per instruction address, with SASS, file and line; {} when the
    report has none. Values are plain floats/ints/strings."""
    names = set(action.metric_names())
    if SAMPLES_METRIC not in names and "inst_executed" not in names:
        return {}
    wanted = [name for name in names if name.startswith(STALL_PREFIX) or name in COUNTER_COLUMNS]
    wanted += [name for name in (SAMPLES_METRIC,) if name in names]
    by_address: dict[int, dict[str, float]] = {}
    for name in wanted:
        metric = action.metric_by_name(name)
        if metric is None or not metric.has_correlation_ids():
            continue
        ids = metric.correlation_ids()
        for index in range(metric.num_instances()):
            address = int(ids.as_uint64(index))
            by_address.setdefault(address, {})[name] = float(metric.as_double(index))
    start = action.metric_by_name(FUNCTION_START_METRIC)
    function_start = round(start.as_double()) if start is not None and start.has_value() else None
    rows = []
    for address in sorted(by_address):
        info = action.source_info(address)
        rows.append(
            {
                "address": address,
                "sass": action.sass_by_pc(address) or None,
                "file": (info.file_name() or None) if info is not None else None,
                "line": (int(info.line()) or None) if info is not None else None,
                "counters": by_address[address],
            }
        )
    try:
        files = {str(path): str(text) for path, text in action.source_files().items()}
    except Exception:  # noqa: BLE001 - the SWIG layer raises anything on a damaged source block
        files = {}
    return {"function_start": function_start, "rows": rows, "files": files}


def frames(actions: list[dict[str, Any]], kernels: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """(source samples, source files, warnings) for the actions, whose `source` entry `instructions` filled."""
    sample_rows: list[dict[str, Any]] = []
    file_rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    without = 0
    for key, action in enumerate(actions):
        source = action.get("source") or {}
        kernel = kernels[key]
        if not source.get("rows"):
            without += 1
            continue
        start = source.get("function_start")
        for row in source["rows"]:
            counters = row["counters"]
            sample_rows.append(instruction_row(key, kernel, row, counters, start))
        for path, text in sorted(source.get("files", {}).items()):
            file_rows.append({"launch_key": key, "path": path, "text": (text or "").replace("\x00", "\ufffd") or None})
    if without:
        count = "the report" if without == len(actions) else f"{without} of the report's {len(actions)} launches"
        warnings.insert(0, NO_SOURCE_COUNTERS.format(count=count))
    return source_frame(sample_rows, SOURCE_SAMPLE_SCHEMA), source_frame(file_rows, SOURCE_FILE_SCHEMA), warnings


def source_frame(rows: list[dict[str, Any]], schema) -> pl.DataFrame:
    if not rows:
        return empty_frame(schema)
    return conform(pl.DataFrame(rows, infer_schema_length=None), schema)


def instruction_row(
    key: int, kernel: str, row: dict[str, Any], counters: dict[str, float], start: int | None
) -> dict[str, Any]:
    stalls = {
        name[len(STALL_PREFIX) :]: int(value)
        for name, value in sorted(counters.items())
        if name.startswith(STALL_PREFIX) and not name.endswith("_not_issued") and value
    }
    address = int(row["address"])
    sass = row["sass"]
    space, operation = sass_access(sass)
    out: dict[str, Any] = {
        "launch_key": key,
        "function": kernel,
        "pc_offset": address - start if start is not None and address >= start else address,
        "sass": sass,
        "file": row["file"],
        "line": row["line"],
        "samples": _int(counters.get(SAMPLES_METRIC)),
        "stall_samples": json.dumps(stalls, sort_keys=True),
        "address_space": space,
        "operation": operation,
    }
    for metric, column in COUNTER_COLUMNS.items():
        value = counters.get(metric)
        out[column] = (
            (float(value) if column == "shared_conflicts_nway" else _int(value)) if value is not None else None
        )
    return out


def _int(value: float | None) -> int | None:
    return None if value is None else round(value)


# SASS opcode (the mnemonic before the first '.') -> (address space, operation).
_OPCODES = {
    "LDG": ("global", "load"),
    "STG": ("global", "store"),
    "LD": ("generic", "load"),
    "ST": ("generic", "store"),
    "LDS": ("shared", "load"),
    "STS": ("shared", "store"),
    "LDSM": ("shared", "load"),
    "LDL": ("local", "load"),
    "STL": ("local", "store"),
    "LDC": ("constant", "load"),
    "ATOMG": ("global", "atomic"),
    "ATOM": ("generic", "atomic"),
    "ATOMS": ("shared", "atomic"),
    "RED": ("global", "reduction"),
    "REDG": ("global", "reduction"),
    "REDUX": (None, "warp reduction"),
    "BAR": (None, "barrier"),
    "LDGSTS": ("global", "copy to shared"),
    "BRA": (None, "branch"),
}
_OPCODE = re.compile(r"^\s*(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)")


def sass_access(sass: str | None) -> tuple[str | None, str | None]:
    """(address space, operation) of a SASS instruction, from its opcode ("LDG.E.SYS" -> global load)."""
    if not sass:
        return None, None
    match = _OPCODE.match(sass)
    if match is None:
        return None, None
    return _OPCODES.get(match.group(1), (None, None))
