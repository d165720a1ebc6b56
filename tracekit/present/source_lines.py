"""A launch's source lines in words, as every view shows them (`tracekit lines`, its JSON, the report section, the
launch page's source panel): where each line is, its kind, its share of the samples and its stalls, the evidence,
what fixing it buys. Source text comes from the profiled files and is untrusted: views print it as plain text
(the CLI's console escapes control characters; HTML views escape it), never as markup."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tracekit import format as fmt
from tracekit.analysis.source_lines import SourceLine, SourceLines, file_lines, line_text
from tracekit.present.sections import Table

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
    text = line_text(files, line.file, line.line)
    return None if text is None else text.strip()


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


def to_json(
    launch_id: int,
    kernel: str | None,
    result: SourceLines,
    files: pl.DataFrame,
    duration_ns: float | None,
    top: int | None = None,
) -> dict[str, Any]:
    """What `tracekit lines --json` prints and the report's JSON holds (its `top` lines, all when None)."""
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
        "lines": line_rows(result, files, duration_ns)[:top],
    }


# ---- the launch page's source panel and the report's section ------------------------------------------------------

HOW_TO_RECORD = "profile it with ncu --set full --import-source yes (SourceCounters), built with nvcc -lineinfo"
NO_SOURCE = f"No source samples for this launch: {HOW_TO_RECORD}."
PANEL_TITLE = "Source lines"
LISTING_MAX_LINES = 24  # the code shown around the hot lines: enough for a kernel's body, short enough to fit
LISTING_MARGIN = 1  # lines of context above and below the sampled ones
NAMED_KIND_SHARE = 0.01  # a line's kind is shown in the listing from this share of the samples up
STALL_ROWS = 6
REPORT_TOP_LINES = 10  # the ranked lines a report shows of each launch (`tracekit lines`' default)
LINES_COLUMNS = ["#", "line", "kind", "samples", "top stalls", "evidence", "fixing it buys", "source"]
STALL_COLUMNS = ["stall reason", "share of samples", "most on"]


@dataclass(frozen=True)
class CodeLine:
    """One row of the panel's listing: a line of the file holding the top line (or, without embedded text, one
    ranked line), its heat (its share of the launch's samples) and what the analysis named it."""

    number: int | None
    place: str  # "transpose.cu:16"
    text: str  # the line as the report embedded it: untrusted, plain text only
    heat: float  # share of the launch's warp samples, 0..1
    share: str  # the heat written ("90.9%"), "" for a line without samples
    kind: str  # the line's kind where it holds NAMED_KIND_SHARE of the samples or more, else ""
    rank: int | None  # its rank among the lines (1: the fix worth most), None for a line without samples
    holds_limiter: bool
    detail: str  # evidence and top stalls, for a tooltip or a note


@dataclass(frozen=True)
class SourcePanel:
    """What the launch page's source panel and the report's section show of one launch's source lines."""

    title: str
    sentences: list[str]  # the limiter's lines, what fixing the top one buys, the notes
    file: str | None  # the file the listing shows ("transpose.cu"), None without embedded text
    code: list[CodeLine]
    code_note: str
    stalls: Table  # the stall reasons of the launch's samples, largest first
    lines: Table  # the ranked lines, as `tracekit lines` prints them


def _base_name(path: str | None) -> str:
    return (path or "?").rsplit("/", 1)[-1]


def _limiter_places(result: SourceLines) -> set[tuple[str | None, int | None]]:
    return {(f, ln) for f, ln, _ in result.limiter.lines} if result.limiter else set()


def _detail(line: SourceLine) -> str:
    return f"{line.kind}: {line.evidence}; stalls: {stall_words(line)}"


def panel_sentences(result: SourceLines) -> list[str]:
    sentences = [result.limiter.sentence] if result.limiter else []
    fix = fix_sentence(result)
    if fix:
        sentences.append(fix)
    return sentences + [f"Note: {note}" for note in result.notes]


def listing(result: SourceLines, files: pl.DataFrame) -> tuple[str | None, list[CodeLine]]:
    """The code around the hot lines of the file that holds the top line, each line with its heat; without the
    file's text, the ranked lines themselves. (file name or None, rows)."""
    limiter = _limiter_places(result)
    ranks = {(x.file, x.line): (rank, x) for rank, x in enumerate(result.lines, start=1) if x.line is not None}
    top = result.lines[0] if result.lines else None
    text = file_lines(files, top.file if top else None)
    if top is None or top.line is None or text is None:
        rows = []
        for position, ranked in enumerate(result.lines[:LISTING_MAX_LINES], start=1):
            rows.append(
                CodeLine(
                    ranked.line,
                    place(ranked),
                    source_text(files, ranked) or ranked.sass or "",
                    ranked.samples_share,
                    fmt.fraction(ranked.samples_share),
                    ranked.kind,
                    position,
                    (ranked.file, ranked.line) in limiter and ranked.line is not None,
                    _detail(ranked),
                )
            )
        return None, rows
    sampled = sorted(ln for (f, ln) in ranks if f == top.file and ln is not None)
    first, last = max(1, sampled[0] - LISTING_MARGIN), min(len(text), sampled[-1] + LISTING_MARGIN)
    if last - first + 1 > LISTING_MAX_LINES:  # a long body: the window centred on the top line
        first = max(1, min(top.line - LISTING_MAX_LINES // 2, len(text) - LISTING_MAX_LINES + 1))
        last = min(len(text), first + LISTING_MAX_LINES - 1)
    rows = []
    for number in range(first, last + 1):
        found = ranks.get((top.file, number))
        rank, line = found if found else (None, None)
        share = line.samples_share if line else 0.0
        rows.append(
            CodeLine(
                number,
                f"{_base_name(top.file)}:{number}",
                text[number - 1].rstrip(),
                share,
                fmt.fraction(share) if line and line.samples else "",
                line.kind if line and share >= NAMED_KIND_SHARE else "",
                rank,
                (top.file, number) in limiter,
                _detail(line) if line else "",
            )
        )
    return _base_name(top.file), rows


def stall_table(result: SourceLines) -> Table:
    """The launch's warp samples by stall reason (after the analysis's attribution), and the line holding most."""
    totals: dict[str, int] = {}
    most: dict[str, tuple[int, str]] = {}
    for line in result.lines:
        for stall in line.stalls:
            totals[stall.reason] = totals.get(stall.reason, 0) + stall.samples
            if stall.samples > most.get(stall.reason, (0, ""))[0]:
                most[stall.reason] = (stall.samples, place(line))
    total = result.total_samples or 1
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [
        [
            f"{reason} ({STALL_WORDS[reason]})" if reason in STALL_WORDS else reason,
            fmt.fraction(samples / total),
            f"{most[reason][1]} ({fmt.fraction(most[reason][0] / samples)})",
        ]
        for reason, samples in ranked[:STALL_ROWS]
    ]
    note = None
    if len(ranked) > STALL_ROWS:
        rest = sum(samples for _, samples in ranked[STALL_ROWS:])
        note = f"{len(ranked) - STALL_ROWS} other reasons: {fmt.fraction(rest / total)} of the samples."
    return Table("Stall reasons", STALL_COLUMNS, rows, note=note)


def lines_table(rows: list[dict[str, Any]]) -> Table:
    """The ranked lines (`line_rows`) as `tracekit lines` prints them; * marks the limiter's lines."""
    shown = []
    for row in rows:
        where = row["place"] + (" *" if row["holds_limiter"] else "")
        if row["inline_chain"]:
            where += " (inlined " + ", ".join(row["inline_chain"]) + ")"
        shown.append(
            [
                str(row["rank"]),
                where,
                row["kind"],
                fmt.fraction(row["samples_share"]),
                row["stall_words"],
                row["evidence"],
                row["gain_words"],
                (row["text"] or row["sass"] or "")[:80],
            ]
        )
    return Table("Source lines, ranked", LINES_COLUMNS, shown, note="* holds the limiter")


CODE_COLUMNS = ["samples", "line", "limiter", "code", "kind"]


def code_table(panel: SourcePanel) -> Table:
    """The panel's listing as a table (the Markdown report's; the HTML report colours the samples column)."""
    rows = [
        [
            code.share,
            code.place if code.number is None else str(code.number),
            "◆" if code.holds_limiter else "",
            code.text,
            code.kind,
        ]
        for code in panel.code
    ]
    return Table(panel.title, CODE_COLUMNS, rows, note=panel.code_note)


def source_panel(result: SourceLines, files: pl.DataFrame, duration_ns: float | None, top: int = 10) -> SourcePanel:
    """The source panel of a launch with source samples (`NO_SOURCE` says why a launch has none)."""
    file, code = listing(result, files)
    note = (
        "Heat: each line's share of the launch's warp samples; ◆ marks the lines that hold the limiter."
        if file
        else "The report embeds no source text (record with --import-source yes): the ranked lines instead."
    )
    ranked = line_rows(
        SourceLines(result.total_samples, result.lines[:top], result.limiter, result.fix, ()), files, duration_ns
    )
    return SourcePanel(
        title=PANEL_TITLE + (f": {file}" if file else ""),
        sentences=panel_sentences(result),
        file=file,
        code=code,
        code_note=note,
        stalls=stall_table(result),
        lines=lines_table(ranked),
    )
