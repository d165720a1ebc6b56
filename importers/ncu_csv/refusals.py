"""What a file with no Nsight Compute table is, said in one line: ncu's text output (rerun with --csv), the
console output of a run that wrote a report (import the .ncu-rep), a run that profiled no kernel, or the
profiler's own ==ERROR== line.
"""

from __future__ import annotations

import re

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


def no_table_reason(tool_lines: list[tuple[int, str]], text: str = "") -> tuple[str, int | None]:
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
