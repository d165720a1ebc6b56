"""A launch's source lines in words, as every view shows them (`tracekit lines`, its JSON, the report section, the
launch page's source panel): where each line is, its kind, its share of the samples and its stalls, the evidence,
what fixing it buys. Source text comes from the profiled files and is untrusted: views print it as plain text
(the CLI's console escapes control characters; HTML views escape it), never as markup."""

from __future__ import annotations

from typing import Any

import polars as pl

from tracekit import format as fmt
from tracekit.analysis.source_lines import SourceLine, SourceLines

SCHEMA = "tracekit.source_lines/1"
TOP_STALLS = 3
STALL_WORDS = {
    "long_scoreboard": "waiting on global/local memory",
    "short_scoreboard": "waiting on shared memory or a special function",
    "lg_throttle": "global/local memory queue full",
    "mio_throttle": "shared-memory queue full",
    "barrier": "waiting at a barrier",
    "wait": "fixed-latency dependency",
    "drain": "draining stores at exit",
    "math_pipe_throttle": "math pipe busy",
    "not_selected": "ready, another warp issued",
    "selected": "issuing",
    "branch_resolving": "resolving a branch",
    "dispatch_stall": "dispatch stall",
    "no_instructions": "instruction cache miss or after a jump",
    "imc_miss": "constant cache miss",
    "membar": "memory barrier",
    "tex_throttle": "texture queue full",
    "sleeping": "sleeping",
    "misc": "other",
    "warpgroup_arrive": "waiting for a warpgroup",
}


def place(line: SourceLine) -> str:
    """ "transpose.cu:37", or the instruction where the SASS has no source lines ("PC 0x280")."""
    if line.line is None:
        return f"PC {line.pc_offset:#x}" if line.pc_offset is not None else "unknown line"
    name = (line.file or "?").rsplit("/", 1)[-1]
    return f"{name}:{line.line}"


def stall_words(line: SourceLine, top: int = TOP_STALLS) -> str:
    if not line.samples:
        return "no samples"
    parts = [f"{fmt.percent(100 * s.samples / line.samples)} {s.reason}" for s in line.stalls[:top]]
    return ", ".join(parts)


def gain_words(line: SourceLine, duration_ns: float | None) -> str:
    if line.gain_share is None or line.gain_share_low is None or line.gain_share_high is None:
        return ""
    share = (
        f"~{fmt.percent(100 * line.gain_share)} of the time "
        f"({fmt.percent(100 * line.gain_share_low)} to {fmt.percent(100 * line.gain_share_high)})"
    )
    if duration_ns:
        share += (
            f", {fmt.duration(line.gain_share * duration_ns)} "
            f"({fmt.duration(line.gain_share_low * duration_ns)} to {fmt.duration(line.gain_share_high * duration_ns)})"
        )
    return share


def source_text(files: pl.DataFrame, line: SourceLine) -> str | None:
    """The line's text from the embedded file (untrusted: plain text only), None where the report has none."""
    if line.line is None or files.height == 0 or line.file is None:
        return None
    match = files.filter(pl.col("path") == line.file)
    if match.height == 0 or match["text"][0] is None:
        return None
    lines = str(match["text"][0]).splitlines()
    return lines[line.line - 1].strip() if 0 < line.line <= len(lines) else None


def fix_sentence(result: SourceLines) -> str | None:
    fix = result.fix
    if fix is None:
        return None
    head = next((x for x in result.lines if x.file == fix.file and x.line == fix.line), None)
    where = place(head) if head is not None else f"line {fix.line}"
    words = gain_words(head, fix.duration_ns) if head is not None else ""
    return f"Fixing {where} ({fix.kind}) buys {words}."


def line_rows(result: SourceLines, files: pl.DataFrame, duration_ns: float | None) -> list[dict[str, Any]]:
    """One dict per ranked line: what the table, the JSON and the panel show (exact numbers beside the words)."""
    limiter_places = {(f, ln) for f, ln, _ in result.limiter.lines} if result.limiter else set()
    rows = []
    for rank, line in enumerate(result.lines, start=1):
        rows.append(
            {
                "rank": rank,
                "place": place(line),
                "file": line.file,
                "line": line.line,
                "pc_offset": line.pc_offset,
                "sass": line.sass,
                "inline_chain": list(line.inline_chain),
                "kind": line.kind,
                "evidence": line.evidence,
                "holds_limiter": (line.file, line.line) in limiter_places and line.line is not None,
                "samples": line.samples,
                "samples_share": line.samples_share,
                "stalls": {s.reason: s.samples for s in line.stalls},
                "stall_words": stall_words(line),
                "l2_sectors_global": line.l2_sectors_global,
                "l2_sectors_global_excess": line.l2_sectors_global_excess,
                "shared_wavefronts": line.shared_wavefronts,
                "shared_wavefronts_excess": line.shared_wavefronts_excess,
                "shared_conflicts_nway": line.shared_conflicts_nway,
                "divergent_branches": line.divergent_branches,
                "active_lanes_share": line.active_lanes_share,
                "operations": list(line.operations),
                "gain_share": line.gain_share,
                "gain_share_low": line.gain_share_low,
                "gain_share_high": line.gain_share_high,
                "gain_words": gain_words(line, duration_ns),
                "text": source_text(files, line),
            }
        )
    return rows


def to_json(launch_id: int, kernel: str | None, result: SourceLines, files: pl.DataFrame, duration_ns: float | None):
    """What `tracekit lines --json` prints and the API's `to_dict` returns."""
    fix = result.fix
    return {
        "schema": SCHEMA,
        "launch_id": launch_id,
        "kernel_name": kernel,
        "duration_ns": duration_ns,
        "total_samples": result.total_samples,
        "limiter": None
        if result.limiter is None
        else {
            "limiter": result.limiter.limiter,
            "counter": result.limiter.counter,
            "lines": [{"file": f, "line": ln, "share": s} for f, ln, s in result.limiter.lines],
            "sentence": result.limiter.sentence,
        },
        "fix": None
        if fix is None
        else {
            "file": fix.file,
            "line": fix.line,
            "kind": fix.kind,
            "saved_share": fix.saved_share,
            "saved_share_low": fix.saved_share_low,
            "saved_share_high": fix.saved_share_high,
            "saved_ns": fix.saved_ns,
            "saved_ns_low": fix.saved_ns_low,
            "saved_ns_high": fix.saved_ns_high,
            "sentence": fix_sentence(result),
            "basis": fix.basis,
        },
        "notes": list(result.notes),
        "lines": line_rows(result, files, duration_ns),
    }
