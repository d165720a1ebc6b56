"""Nsight Compute binary reports (`.ncu-rep`), read through NVIDIA's `ncu_report` module (`tracekit[ncu]`).

Every action (one profiled kernel launch) of every range becomes a launch, and every metric of it a metric row
with its kind kept: strings as "text" (in `text_value`), unsigned integers as "int", floats as "float"; units
are normalized to base units with the value scaled (no unit: null, as in the CSV reader). Instance-valued
metrics (per-SM, per-opcode, per-source-line ...) keep only their aggregate value, the one Nsight Compute shows
on its details and raw pages; the instances are dropped. A metric the report lists but holds no value for keeps
its row with a null value. Values are kept as stored: a small negative counter value stays negative (ncu's
pages print it as 0). Grid and block come from `launch__grid_dim_*` / `launch__block_dim_*`; reports that carry
only the totals `launch__grid_size` / `launch__block_size` give (total, 1, 1).

Rule results (`IAction.rule_results()`: what Nsight Compute's rules concluded, OPT/WRN/INF messages) become
text metric rows exactly as the details-page CSV reader stores them, so the verdict reads both the same way:
name `rule:<rule identifier>`, section the rule's section identifier ("SpeedOfLight"), text_value
`[<type>] <message>` and, where the rule estimated one, the speedup as value with unit "%". The message's link
markup is rendered as ncu's CSV prints it (`@section:Id:Text@` -> "Text", `@url:Text:Link@` -> "Text (Link)").
A rule result without a message is not stored (ncu prints none). Older reports without rule results give none.

Each report is read in a child process (`python -m tracekit.importers.ncu_rep REPORT OUT`), for two reasons.
The library keeps state between reports: in one process, the units of some derived metrics of the second
report loaded follow the first (derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2 of the H100 sample
reads "inst" after the RTX 2080 Ti report was loaded, "thread" alone, as ncu's own CSV export says). And a
damaged file must end in one InputError line: `load_report` does not raise on a truncated or corrupt file, it
returns a context with no ranges or actions with no metrics and logs protobuf errors to the C-level stderr
(captured here and folded into the message); a crash of the library would only end the child.
"""

from __future__ import annotations

import math
import mmap
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.errors import InputError
from tracekit.importers import ncu_source
from tracekit.importers.units import normalize_unit
from tracekit.parsed import INCOMPLETE_LAUNCH_METRIC, LAUNCH_SCHEMA, METRIC_SCHEMA, Device, ParsedImport, conform
from tracekit.scratch import prefix as scratch_prefix
from tracekit.scratch import scratch_dir

FORMAT = "ncu-rep"
# A launch whose profiling did not finish (the application ended mid-profile): kept, with a text metric saying what
# it lacks (tracekit.parsed.INCOMPLETE_LAUNCH_METRIC), which the analysis flags; it is not one of Nsight's rules.
INCOMPLETE_SECTION = "tracekit"
INCOMPLETE_TEXT = (
    "the report holds no %s for this launch: ncu's profiling of it did not finish (the application ended or was "
    "stopped mid-profile), so its timing and launch configuration are unknown"
)
MAGIC = b"NVR\x00"
INSTALL_HINT = "reading .ncu-rep files needs NVIDIA's ncu_report module: pip install 'tracekit[ncu]'"
CORRUPT = "the report holds no profiling results: the file is truncated or corrupt, or ncu profiled no kernel"
# The process-info block stores the tool's version as the value of this key (a protobuf string field).
VERSION_KEY = b"Nsight Compute Target"

# launch__* metric -> launch field (integers in the report's base units: threads, registers, bytes).
LAUNCH_METRICS = {
    "launch__grid_dim_x": "grid_x",
    "launch__grid_dim_y": "grid_y",
    "launch__grid_dim_z": "grid_z",
    "launch__block_dim_x": "block_x",
    "launch__block_dim_y": "block_y",
    "launch__block_dim_z": "block_z",
    "launch__registers_per_thread": "registers_per_thread",
    "launch__shared_mem_per_block_static": "static_smem_bytes",
    "launch__shared_mem_per_block_dynamic": "dynamic_smem_bytes",
    "launch__stream_id": "stream_id",
    "launch__context_id": "context_id",
    "launch__device_id": "device_id",
}
DURATION_METRIC = "gpu__time_duration.sum"
RULE_PREFIX = "rule:"  # as importers/ncu_csv/reader.py names rule rows
# ncu_report's MsgType -> the "Rule Type" cell ncu's details page prints (NONE prints no type).
RULE_TYPES = {"MsgType_OK": "INF", "MsgType_OPTIMIZATION": "OPT", "MsgType_WARNING": "WRN", "MsgType_ERR": "ERR"}
# Link markup in rule messages: @url:<text>:<link>@, @section:<id>:<text>@, @sass:<address>:<text>@,
# @source:<file>:<line>:<text>@ (older reports: @source:<address>:<text>@).
_RULE_LINK = re.compile(r"@(url|section|sass|source):([^@]*)@")

# device__attribute_* -> Device.extra key: the per-SM and per-block limits the occupancy model needs.
DEVICE_EXTRA_METRICS = {
    "device__attribute_max_registers_per_multiprocessor": "max_registers_per_sm",
    "device__attribute_max_shared_memory_per_multiprocessor": "max_shared_memory_per_sm_bytes",
    "device__attribute_max_blocks_per_multiprocessor": "max_blocks_per_sm",
    "device__attribute_max_threads_per_multiprocessor": "max_threads_per_sm",
    "device__attribute_num_schedulers_per_multiprocessor": "schedulers_per_sm",
    "device__attribute_max_warps_per_scheduler": "max_warps_per_scheduler",
    "device__attribute_max_ipc_per_multiprocessor": "max_ipc_per_sm",
    "device__attribute_max_registers_per_block": "max_registers_per_block",
    "device__attribute_max_shared_memory_per_block": "max_shared_memory_per_block_bytes",
    "device__attribute_max_shared_memory_per_block_optin": "max_shared_memory_per_block_optin_bytes",
    "device__attribute_reserved_shared_memory_per_block": "reserved_shared_memory_per_block_bytes",
    "device__attribute_max_threads_per_block": "max_threads_per_block",
    "device__attribute_l2_cache_size": "l2_cache_size_bytes",
}


def sniff(head: bytes) -> bool:
    return head.startswith(MAGIC)


def read(path: Path, **options: Any) -> ParsedImport:
    path = Path(path)
    try:
        import ncu_report  # noqa: F401 - only to say early that it is missing
    except ImportError:
        raise InputError(str(path), INSTALL_HINT) from None
    with tempfile.TemporaryDirectory(prefix=scratch_prefix("ncu-rep"), dir=scratch_dir()) as scratch:
        output = Path(scratch) / "actions.pickle"
        done = subprocess.run([sys.executable, "-m", __name__, str(path), str(output)], capture_output=True)
        library_log = done.stderr.decode(errors="replace")
        if done.returncode != 0 or not output.exists():
            why = f"signal {-done.returncode}" if done.returncode < 0 else _last_error_line(library_log)
            raise InputError(
                str(path), f"the ncu_report library failed on the file ({why}); the file is truncated or corrupt"
            )
        result = pickle.loads(output.read_bytes())  # written by our own child process just now
    if "error" in result:
        raise InputError(str(path), f"cannot read the report ({result['error']}); the file is truncated or corrupt")
    actions = result["actions"]
    if not actions or any(not action["metrics"] for action in actions):
        detail = _last_error_line(library_log)
        raise InputError(str(path), CORRUPT + (f" ({detail})" if detail else ""))
    return _parsed(path, actions)


def _child_main(report_path: str, output_path: str) -> None:
    """In the child process: extract the report's actions and pickle them (or the error) to `output_path`."""
    import ncu_report

    try:
        result: dict[str, Any] = {"actions": _load_actions(ncu_report, Path(report_path))}
    except Exception as exc:  # noqa: BLE001 - the SWIG layer raises anything on a damaged file
        result = {"error": f"{type(exc).__name__}: {exc}"}
    Path(output_path).write_bytes(pickle.dumps(result))


def _last_error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and "InitializeLog" not in line]
    if not lines:
        return ""
    line = lines[-1]
    return line.split("] ", 1)[1] if "] " in line else line


def _load_actions(ncu_report, path: Path) -> list[dict[str, Any]]:
    """Everything needed from the report, as plain Python values, one dict per action in report order."""
    context = ncu_report.load_report(str(path))
    if context is None:
        return []
    actions = []
    for range_index in range(context.num_ranges()):
        report_range = context.range_by_idx(range_index)
        for action_index in range(report_range.num_actions()):
            action = report_range.action_by_idx(action_index)
            actions.append(
                {
                    "demangled": action.name(action.NameBase_DEMANGLED),
                    "mangled": action.name(action.NameBase_MANGLED),
                    "nvtx_path": _nvtx_path(action),
                    "metrics": _metrics(action),
                    "rules": _rules(ncu_report, action),
                    "source": _source(action),
                }
            )
    return actions


def _source(action) -> dict[str, Any] | str:
    """The Source page's counters by instruction (`ncu_source.instructions`); the error text when the library
    cannot read them (a warning, not a refusal: the metrics stand)."""
    try:
        return ncu_source.instructions(action)
    except Exception as exc:  # noqa: BLE001 - the SWIG layer raises anything on a damaged source block
        return f"{type(exc).__name__}: {exc}"


def _rules(ncu_report, action) -> list[tuple[str, str | None, str, float | None]] | str:
    """(rule identifier, section identifier, "[OPT] message", estimated speedup %) per rule result with a
    message; the error text when the library cannot read them (a warning, not a refusal: the metrics stand)."""
    if not hasattr(action, "rule_results"):
        return []  # an ncu_report older than the rule-results interface
    types = {getattr(ncu_report, name): label for name, label in RULE_TYPES.items() if hasattr(ncu_report, name)}
    rows = []
    try:
        for result in action.rule_results():
            if not result.has_rule_message():
                continue
            message = result.rule_message()
            text = _plain_text(str(message.get("message") or ""))
            kind = types.get(message.get("type"))
            speedup = None
            if result.has_speedup_estimation():
                speedup = float(result.speedup_estimation()["speedup"])
            rows.append(
                (
                    str(result.rule_identifier()),
                    result.section_identifier() or None,
                    f"[{kind}] {text}" if kind else text,
                    speedup,
                )
            )
    except Exception as exc:  # noqa: BLE001 - the SWIG layer raises anything on a damaged rule block
        return f"{type(exc).__name__}: {exc}"
    return rows


def _plain_text(message: str) -> str:
    """A rule message with its link markup rendered as ncu's CSV export prints it."""

    def render(match: re.Match[str]) -> str:
        kind, body = match.group(1), match.group(2)
        if kind == "url":
            text, _, link = body.partition(":")
            return f"{text} ({link})" if link else text
        return body.rsplit(":", 1)[-1]

    return _RULE_LINK.sub(render, message)


def _metric_sections(action) -> dict[str, str]:
    """metric name -> the first section (as Nsight Compute names it) that shows the metric."""
    sections: dict[str, str] = {}
    for section in action.sections():
        for metric in [*section.header_metrics(), *section.body_metrics()]:
            sections.setdefault(metric.name(), section.name())
    return sections


def _metrics(action) -> list[tuple[str | None, str, str | None, Any, str]]:
    """(section, name, unit, aggregate value, kind) per metric."""
    sections = _metric_sections(action)
    rows = []
    for name in action.metric_names():
        metric = action.metric_by_name(name)
        if metric is None:
            continue
        value = metric.value() if metric.has_value() else None
        rows.append((sections.get(name), name, metric.unit(), value, _kind(metric, value)))
    return rows


def _kind(metric, value: Any) -> str:
    value_kind = metric.kind()
    if value_kind in (metric.ValueKind_UINT32, metric.ValueKind_UINT64):
        return "int"
    if value_kind in (metric.ValueKind_DOUBLE, metric.ValueKind_FLOAT):
        return "float"
    if value_kind == metric.ValueKind_STRING:
        return "text"
    if isinstance(value, bool | int):
        return "int"
    return "float" if isinstance(value, float) else "text"


def _nvtx_path(action) -> str | None:
    """The push/pop NVTX ranges open at the launch, domain by domain, outermost first."""
    state = action.nvtx_state()
    if state is None:
        return None
    names = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        if domain is not None:
            names.extend(domain.push_pop_ranges())
    return " > ".join(names) if names else None


def _parsed(path: Path, actions: list[dict[str, Any]]) -> ParsedImport:
    metric_rows: list[tuple] = []
    launch_rows = []
    warnings: list[str] = []
    for key, action in enumerate(actions):
        numeric: dict[str, float] = {}
        for section, name, unit, value, kind in action["metrics"]:
            base_unit, factor = normalize_unit(unit)
            scaled = None
            if kind != "text" and value is not None:
                scaled = float(value) * factor
                numeric[name] = scaled
            text = value if kind == "text" else None
            metric_rows.append((key, section, name, base_unit or None, scaled, text, kind))
        rules = action.get("rules") or []
        if isinstance(rules, str):
            warnings.append(f"launch {key}: its rule results could not be read ({rules}); its metrics are imported")
            rules = []
        for rule, section, text, speedup in rules:
            unit = "%" if speedup is not None else None
            metric_rows.append((key, section, RULE_PREFIX + rule, unit, speedup, text, "text"))
        launch: dict[str, Any] = {
            "launch_key": key,
            "kernel_name": action["demangled"],
            "mangled_name": action["mangled"],
            "source_launch_id": str(key),  # ncu numbers results 0.. in report order (the CSV "ID")
            "duration_ns": numeric.get(DURATION_METRIC),
            "nvtx_path": action["nvtx_path"],
        }
        for metric, field in LAUNCH_METRICS.items():
            launch[field] = round(numeric[metric]) if metric in numeric else None
        for prefix, total in (("grid", "launch__grid_size"), ("block", "launch__block_size")):
            # Older reports carry only the totals: the launch shape is then (total, 1, 1), as ncu's pages show it.
            if launch[f"{prefix}_x"] is None and total in numeric:
                launch[f"{prefix}_x"] = round(numeric[total])
                launch[f"{prefix}_y"] = launch[f"{prefix}_y"] or 1
                launch[f"{prefix}_z"] = launch[f"{prefix}_z"] or 1
        lacks = _incomplete(launch)
        if lacks:
            launch["duration_ns"] = None  # NaN: ncu could not compute it
            what = _join(lacks)
            marker = (key, INCOMPLETE_SECTION, INCOMPLETE_LAUNCH_METRIC, None, None, INCOMPLETE_TEXT % what, "text")
            metric_rows.append(marker)
            warnings.append(
                f"launch {key + 1} of {len(actions)} (ID {key!r}, {launch['kernel_name']}) has no {what}: "
                "ncu's profiling of it did not finish; imported marked incomplete"
            )
        launch_rows.append(launch)
    launches = conform(pl.DataFrame(launch_rows, infer_schema_length=None), LAUNCH_SCHEMA)
    metrics = pl.DataFrame(metric_rows, schema=METRIC_SCHEMA, orient="row")
    for key, action in enumerate(actions):
        if isinstance(action.get("source"), str):
            warnings.append(f"launch {key + 1}: its source counters could not be read ({action['source']})")
            action["source"] = {}
    source_samples, source_files, source_warnings = ncu_source.frames(actions, [a["demangled"] for a in actions])
    warnings.extend(source_warnings)
    return ParsedImport(
        format=FORMAT,
        tool="Nsight Compute",
        tool_version=_tool_version(path),
        device=_device(actions, launches, warnings),
        launches=launches,
        metrics=metrics,
        source_samples=source_samples,
        source_files=source_files,
        warnings=warnings,
    )


def _incomplete(launch: dict[str, Any]) -> list[str]:
    """What a launch whose profiling did not finish lacks: its duration is NaN or missing (ncu writes NaN for
    what it could not compute), and with it, often, its grid and block. Empty for a complete launch."""
    duration = launch.get("duration_ns")
    if duration is not None and not math.isnan(duration):
        return []
    lacks = ["duration"]
    lacks += [name for name in ("grid", "block") if launch.get(f"{name}_x") is None]
    return lacks


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _device(actions: list[dict[str, Any]], launches: pl.DataFrame, warnings: list[str]) -> Device | None:
    """The device of the first result, from its device__attribute_* metrics (a warning when results differ)."""
    attributes = {
        name: value
        for _, name, _, value, _ in actions[0]["metrics"]
        if name.startswith("device__attribute_") and value is not None
    }
    if not attributes:
        warnings.append("the report has no device__attribute_* metrics: the device is unknown")
        return None
    device_ids = launches["device_id"].drop_nulls().unique(maintain_order=True).to_list()
    if len(device_ids) > 1:
        warnings.append(
            f"results ran on {len(device_ids)} devices (ids {device_ids}); the import's device "
            f"fields are those of device {device_ids[0]}, where the first result ran"
        )
    major = attributes.get("device__attribute_compute_capability_major")
    minor = attributes.get("device__attribute_compute_capability_minor")
    clock_khz = attributes.get("device__attribute_clock_rate")  # CUDA reports kHz; the metric has no unit
    warps = attributes.get("device__attribute_max_warps_per_multiprocessor")
    sm_count = attributes.get("device__attribute_multiprocessor_count")
    return Device(
        name=attributes.get("device__attribute_display_name"),
        compute_capability=f"{int(major)}.{int(minor)}" if major is not None and minor is not None else None,
        sm_count=int(sm_count) if sm_count is not None else None,
        sm_clock_hz=float(clock_khz) * 1e3 if clock_khz else None,
        max_warps_per_sm=int(warps) if warps is not None else None,
        extra={key: attributes[name] for name, key in DEVICE_EXTRA_METRICS.items() if name in attributes},
    )


def _tool_version(path: Path) -> str | None:
    """The ncu version that wrote the report ("2023.1.0.0"), from its process-info block, where present."""
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        at = data.find(VERSION_KEY)
        if at < 0:
            return None
        at += len(VERSION_KEY)
        if data[at : at + 1] != b"\x12":  # protobuf: field 2, length-delimited
            return None
        length, shift, at = 0, 0, at + 1
        while at < len(data) and shift < 35:  # varint length
            byte = data[at]
            length |= (byte & 0x7F) << shift
            at, shift = at + 1, shift + 7
            if not byte & 0x80:
                break
        text = data[at : at + length].decode(errors="replace").strip()
    return text.split()[0] if text else None


if __name__ == "__main__":
    _child_main(*sys.argv[1:3])
