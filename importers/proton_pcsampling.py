"""Triton Proton's PC sampling (`proton.start(backend="cupti", mode="pcsampling")`): the source-line samples below
each kernel of a Proton `.hatchet` tree, as rows of `tracekit.parsed.SOURCE_SAMPLE_SCHEMA`.

Proton samples warps with CUPTI's PC sampling and folds the samples by source line: below a kernel node, one node
per line named `<file>:<line>@<function>` (the file as the profiled machine saw it; the function is the Triton
function the line belongs to, an inlined `@triton.jit` helper under its caller's kernel) whose metrics are
`num_samples`, `num_stalled_samples` and `stalled_<reason>`. CUPTI reports each sample under its stall reason and,
when the warp did not issue, again under the reason's `_not_issued` twin; Proton adds both to `num_samples` but only
the first to `num_stalled_samples` and `stalled_<reason>` (`CuptiPCSampling::processPCSamplingData`), so the
line's samples, as Nsight Compute counts them (`smsp__pcsamp_sample_count`, `selected` included), are
`num_stalled_samples` = the sum of `stalled_<reason>`; `num_samples` minus them are the not-issued ones counted twice.
A kernel node's own samples are those Proton could not map to a line (code without line info, library kernels).
`proton_hatchet` reads the tree and calls `line_rows` for each kernel.

Proton records no instruction addresses, SASS or counters besides the samples, and embeds no source text: a row
per line has `pc_offset`, `sass`, `address_space` and `operation` empty, `samples` = `num_stalled_samples`, the stall
reasons under the names the Nsight Compute readers keep (`smsp__pcsamp_warps_issue_stalled_<reason>`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from tracekit.errors import InputError

SAMPLES_METRIC = "num_samples"  # what marks a node with PC samples (issued and not-issued counted twice)
STALLED_METRIC = "num_stalled_samples"  # the samples, once each
STALL_PREFIX = "stalled_"
# CUPTI's stall-reason names as Proton writes them (lowercased, after `stalled_`) -> ncu's reasons, where they differ
STALL_ALIASES = {"no_instruction": "no_instructions"}
_LINE_NAME = re.compile(r"^(?P<file>.*):(?P<line>\d{1,9})@(?P<function>.*)$", re.DOTALL)
NO_SOURCE_TEXT = (
    "Proton's PC sampling has no instruction addresses, SASS or source text: lines are ranked by their stalled "
    "samples and their kind comes from the stall reasons alone"
)


def is_line_node(node: Any) -> bool:
    """A node below a kernel that carries PC samples (`num_samples`) and no device: one source line's samples."""
    metrics = node.get("metrics") if isinstance(node, dict) else None
    return isinstance(metrics, dict) and SAMPLES_METRIC in metrics and "device_id" not in metrics


def has_samples(metrics: dict[str, Any]) -> bool:
    return _count(metrics.get(SAMPLES_METRIC)) > 0


def stall_reason(metric: str) -> str:
    """Proton's `stalled_long_scoreboard` -> `long_scoreboard`, `stalled_not_Selected` -> `not_selected`."""
    reason = metric[len(STALL_PREFIX) :].lower()
    return STALL_ALIASES.get(reason, reason)


def line_rows(
    launch_key: int, kernel_name: str, kernel_metrics: dict[str, Any], children: list[Any], where: str, path: str
) -> list[dict[str, Any]]:
    """The kernel's sample rows: one per line node below it (document order), and one without a line for the
    samples on the kernel node itself."""
    rows = []
    if has_samples(kernel_metrics):
        rows.append(_row(launch_key, kernel_name, None, None, None, kernel_metrics, where, path))
    for child in children:
        if not is_line_node(child):
            continue
        frame = child.get("frame")
        name = frame.get("name") if isinstance(frame, dict) else None
        if not isinstance(name, str):
            raise InputError(path, f"{where}: a PC-sampling node whose frame has no name")
        match = _LINE_NAME.match(name)
        file, line, function = (match["file"], int(match["line"]), match["function"]) if match else (None, None, name)
        inlined = function if function and function != kernel_name else None
        rows.append(_row(launch_key, kernel_name, file or None, line or None, inlined, child["metrics"], where, path))
    return rows


def _row(
    launch_key: int,
    kernel_name: str,
    file: str | None,
    line: int | None,
    inlined: str | None,
    metrics: dict[str, Any],
    where: str,
    path: str,
) -> dict[str, Any]:
    stalls: dict[str, int] = {}
    for metric, value in metrics.items():
        if isinstance(metric, str) and metric.startswith(STALL_PREFIX):
            count = _count(value, where, path, metric)
            if count:
                reason = stall_reason(metric)
                stalls[reason] = stalls.get(reason, 0) + count
    return {
        "launch_key": launch_key,
        "function": kernel_name,
        "pc_offset": None,
        "sass": None,
        "file": file,
        "line": line,
        "inline_chain": inlined,
        "samples": _count(metrics[STALLED_METRIC], where, path, STALLED_METRIC)
        if STALLED_METRIC in metrics
        else sum(stalls.values()),
        "stall_samples": json.dumps(stalls, sort_keys=True),
        "address_space": None,
        "operation": None,
    }


def _count(value: Any, where: str = "", path: str = "", metric: str = "") -> int:
    """A sample count: a non-negative whole number (absent: 0)."""
    if value is None:
        return 0
    number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not number or value < 0 or value != int(value):
        if not path:
            return 0
        raise InputError(path, f"{where}: {metric} is {str(value)[:40]!r}, not a sample count")
    return int(value)
