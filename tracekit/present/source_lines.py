"""A launch's source lines in words, as every view shows them (`tracekit lines`, its JSON, the report section, the
launch page's source panel): where each line is, its kind, its share of the samples and its stalls, the evidence,
what fixing it buys. The analysis gives the evidence, the limiter's lines and the notes as codes and numbers
(`analysis.source_lines.LineEvidence`, `LimiterLines`, `SourceLinesNote`): they are worded here, once. Source text
comes from the profiled files and is untrusted: views print it as plain text (the CLI's console escapes control
characters; HTML views escape it), never as markup."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tracekit import format as fmt
from tracekit.analysis.source_line_changes import (
    CHANGE_COUNTERS,
    MIN_CHANGE_SHARE,
    LineChange,
    LineChanges,
    LineSide,
)
from tracekit.analysis.source_lines import (
    KIND_BANK,
    EvidenceCode,
    LimiterLines,
    LineEvidence,
    SourceLine,
    SourceLines,
    SourceLinesNote,
    file_lines,
    line_text,
)
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
COUNTER_WORDS = {
    "inst_executed": "instructions",
    "l2_sectors_global_excess": "excess L2 sectors",
    "shared_wavefronts_excess": "excess shared wavefronts",
    "divergent_branches": "divergent branches",
}
BOUND_WORDS = {"dram": "DRAM-bound", "l2": "L2-bound", "memory": "memory-bound", "l1/shared": "L1/shared-bound"}
NOTE_WORDS = {SourceLinesNote.NO_LINE_INFO: "the SASS has no source lines (built without -lineinfo): lines are unknown"}
FIX_BASIS = (
    "between the part of the line's own samples its waste stands for (the waits the fix removes) and, where "
    "its waits show the pipe full, the launch's whole waste of this kind as a share of its traffic (time "
    "proportional to the traffic the limiter sees), widened by a tenth"
)


def _pct(share: float) -> str:
    """A share as a whole percent ("35%"): the evidence's coarse figures, exact values beside them in the JSON."""
    return f"{100 * share:.0f}%"


def _conflict_words(evidence: LineEvidence) -> str:
    """A bank conflict named with its worst N-way where it has one: "a 4-way bank conflict"."""
    nway = evidence.conflict_nway
    return f"a {f'{nway:.0f}-way ' if nway and nway > 1 else ''}bank conflict"


def evidence_words(evidence: LineEvidence) -> str:
    """The counters behind a line's kind, in words: "a 4-way bank conflict: 30% of its shared wavefronts are
    excess" (every view's `evidence`)."""
    e = evidence
    match e.code:
        case EvidenceCode.LOCAL_MEMORY:
            return f"local-memory loads/stores; {_pct(e.samples_share or 0.0)} of the samples"
        case EvidenceCode.GLOBAL_ATOMICS:
            return f"global atomics; {_pct(e.samples_share or 0.0)} of the samples"
        case EvidenceCode.ORDERED_ATOMICS:
            return (
                f"{_pct(e.stall_share or 0.0)} of its samples wait at a memory barrier, as ordered (acquire/release) "
                f"atomics do (no instructions in the profile to confirm it); {_pct(e.samples_share or 0.0)} of the "
                "samples"
            )
        case EvidenceCode.BANK_CONFLICT:
            return f"{_conflict_words(e)}: {_pct(e.excess_share or 0.0)} of its shared wavefronts are excess"
        case EvidenceCode.UNCOALESCED:
            per = (
                f", {e.sectors_per_needed:.1f} sectors for each one needed" if e.sectors_per_needed is not None else ""
            )
            return f"{_pct(e.excess_share or 0.0)} of its L2 sectors are excess{per}"
        case EvidenceCode.BRANCH_LANES:
            where = ", ".join(str(x) for x in e.body_lines)
            plural = "s" if len(e.body_lines) > 1 else ""
            lanes = _pct(e.active_lanes_share or 0.0)
            return f"the branch it decides runs line{plural} {where} with {lanes} of the lanes active"
        case EvidenceCode.OWN_LANES:
            return f"{_pct(e.active_lanes_share or 0.0)} of the lanes active on average"
        case EvidenceCode.BARRIER_WAIT:
            words = f"{_pct(e.stall_share or 0.0)} of its samples wait at the barrier"
            if e.stretch_idle_share:
                words += f"; lanes idle in the steps it ends: {_pct(e.stretch_idle_share)} of the samples"
            return words
        case EvidenceCode.DEPENDENCY_CHAIN:
            return f"{_pct(e.stall_share or 0.0)} of its samples wait on the previous instruction's result"
        case EvidenceCode.JOINED_CHAIN:
            return (
                f"lines {e.line_first}-{e.line_last}, one chain: {_pct(e.stall_share or 0.0)} of their samples wait "
                "on the previous instruction's result"
            )
        case EvidenceCode.MEMORY_WAIT:
            return f"{_pct(e.stall_share or 0.0)} of its samples wait on memory ({e.stall})"
        case EvidenceCode.ISSUE:
            return f"{_pct(e.stall_share or 0.0)} of its samples issue or wait to ({e.stall})"
        case EvidenceCode.TOP_STALL:
            return f"top stall {e.stall}"
        case EvidenceCode.NO_SAMPLES:
            return "no samples"


def limiter_sentence(limiter: LimiterLines) -> str:
    """Where the limiter is: "L1/shared-bound: 100% of the excess shared wavefronts are on line 37 (transpose.cu),
    a 32-way bank conflict", or by the warp samples "dram: 35% of the warp samples are on line 12 (x.cu), memory
    latency"."""
    file, line, share = limiter.lines[0]
    if limiter.counter is not None:
        bound = BOUND_WORDS.get(limiter.limiter or "", limiter.limiter)
        what = ""
        if limiter.top_kind == KIND_BANK and limiter.top_evidence is not None:
            what = f", {_conflict_words(limiter.top_evidence)}"
        counter = COUNTER_WORDS[limiter.counter]
        return f"{bound}: {_pct(share)} of the {counter} are on line {line} ({_base_name(file)}){what}"
    where = f"line {line} ({_base_name(file)})" if line is not None else "code without source lines"
    return (
        f"{limiter.limiter or 'no limiter named'}: {_pct(share)} of the warp samples are on {where}, {limiter.top_kind}"
    )


def note_words(note: SourceLinesNote) -> str:
    return NOTE_WORDS[note]


def _base_name(path: str | None) -> str:
    return (path or "?").rsplit("/", 1)[-1]


def place(line: SourceLine) -> str:
    """ "transpose.cu:37", "ilp.cu:10-13" for a finding over several lines (a dependency chain), or the instruction
    where the SASS has no source lines ("PC 0x280")."""
    if line.line is None:
        return f"PC {line.pc_offset:#x}" if line.pc_offset is not None else "unknown line"
    span = f"-{line.line_last}" if line.line_last is not None and line.line_last != line.line else ""
    return f"{_base_name(line.file)}:{line.line}{span}"


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


LIMITER_MARK_MIN_SHARE = 0.05  # a line is marked as holding the limiter from this share of its evidence up


def _limiter_places(result: SourceLines) -> set[tuple[str | None, int | None]]:
    """The lines marked as holding the limiter: those of `result.limiter` with `LIMITER_MARK_MIN_SHARE` of its
    evidence (the excess traffic, else the warp samples) or more; a line with a fraction of a percent does not."""
    if result.limiter is None:
        return set()
    return {(f, ln) for f, ln, share in result.limiter.lines if share >= LIMITER_MARK_MIN_SHARE}


def line_rows(result: SourceLines, files: pl.DataFrame, duration_ns: float | None) -> list[dict[str, Any]]:
    """One dict per ranked line: what the table, the JSON and the panel show (exact numbers beside the words)."""
    limiter_places = _limiter_places(result)
    rows = []
    for rank, line in enumerate(result.lines, start=1):
        rows.append(
            {
                "rank": rank,
                "place": place(line),
                "file": line.file,
                "line": line.line,
                "line_last": line.line_last,
                "pc_offset": line.pc_offset,
                "sass": line.sass,
                "inline_chain": list(line.inline_chain),
                "kind": line.kind,
                "evidence": evidence_words(line.evidence),
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
            "counter": None if result.limiter.counter is None else COUNTER_WORDS[result.limiter.counter],
            "lines": [{"file": f, "line": ln, "share": s} for f, ln, s in result.limiter.lines],
            "sentence": limiter_sentence(result.limiter),
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
            "basis": FIX_BASIS,
        },
        "notes": [note_words(note) for note in result.notes],
        "lines": line_rows(result, files, duration_ns)[:top],
    }


# ---- the launch page's source panel and the report's section ------------------------------------------------------

HOW_TO_RECORD = (
    "profile it with ncu --set full --import-source yes (SourceCounters), built with nvcc -lineinfo, or a Triton "
    'kernel with Proton\'s PC sampling (proton.start(backend="cupti", mode="pcsampling"))'
)
NO_SOURCE = f"No source samples for this launch: {HOW_TO_RECORD}."
PANEL_TITLE = "Source lines"
LISTING_MAX_LINES = 24  # the code shown around the hot lines: enough for a kernel's body, short enough to fit
LISTING_MARGIN = 1  # lines of context above and below the sampled ones
LISTING_ABOVE_TOP = 6  # at most this many lines above the top line: it stays on the page's first screen
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


def _detail(line: SourceLine) -> str:
    return f"{line.kind}: {evidence_words(line.evidence)}; stalls: {stall_words(line)}"


def panel_sentences(result: SourceLines) -> list[str]:
    sentences = [limiter_sentence(result.limiter)] if result.limiter else []
    fix = fix_sentence(result)
    if fix:
        sentences.append(fix)
    return sentences + [f"Note: {note_words(note)}" for note in result.notes]


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
    first = max(1, sampled[0] - LISTING_MARGIN, top.line - LISTING_ABOVE_TOP)
    last = min(len(text), sampled[-1] + LISTING_MARGIN, first + LISTING_MAX_LINES - 1)
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
        else (
            "The profile embeds no source text (Nsight Compute: record with --import-source yes; Proton embeds none): "
            "the ranked lines instead."
        )
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


# ---- compare: A/B by line -------------------------------------------------------------------------------------------

CHANGES_SCHEMA = "tracekit.source_line_changes/1"
CHANGE_ROWS = 8  # lines shown of those that grew, and of those that shrank
CHANGE_COLUMNS = [
    "change",
    "line A -> B",
    "code",
    "time A",
    "time B",
    "samples A -> B",
    "kind A -> B",
    "counters A -> B",
]


def _side_place(side: LineSide | None, missing: str) -> str:
    if side is None:
        return missing
    return f"{_base_name(side.file)}:{side.line}" if side.line is not None else "no line"


def _counter_words(change: LineChange) -> str:
    """The key counters that moved: "excess L2 sectors 14,680,064 -> 0"."""
    zero = (0,) * len(CHANGE_COUNTERS)
    a = change.a.counters if change.a else zero
    b = change.b.counters if change.b else zero
    return "; ".join(
        f"{COUNTER_WORDS[name]} {fmt.number(x)} -> {fmt.number(y)}"
        for name, x, y in zip(CHANGE_COUNTERS, a, b, strict=True)
        if x != y
    )


def _change_words(change: LineChange, changes: LineChanges) -> str:
    if change.change_ns is not None and changes.duration_a_ns:
        sign = "+" if change.change_ns >= 0 else "-"
        share = fmt.fraction(change.change_ns / changes.duration_a_ns, signed=True)
        return f"{sign}{fmt.duration(abs(change.change_ns))} ({share} of A)"
    sign = "+" if change.change_share >= 0 else "-"
    return f"{sign}{fmt.significant(abs(change.change_share) * 100, fmt.PERCENT_DIGITS)} pts of the samples"


def _change_row(change: LineChange, changes: LineChanges) -> list[str]:
    def time(side: LineSide | None) -> str:
        if side is None:
            return "-"
        return fmt.duration(side.time_ns) if side.time_ns is not None else fmt.fraction(side.samples_share)

    def samples(side: LineSide | None) -> str:
        return "-" if side is None else f"{fmt.number(side.samples)} ({fmt.fraction(side.samples_share)})"

    kinds = [side.kind if side else "-" for side in (change.a, change.b)]
    return [
        _change_words(change, changes),
        f"{_side_place(change.a, 'new')} -> {_side_place(change.b, 'gone')}",
        (change.text or "").strip(),
        time(change.a),
        time(change.b),
        f"{samples(change.a)} -> {samples(change.b)}",
        kinds[0] if kinds[0] == kinds[1] else f"{kinds[0]} -> {kinds[1]}",
        _counter_words(change),
    ]


def changes_sentence(changes: LineChanges) -> str:
    """How the lines were matched and measured, and how many moved."""
    matched = "by their source text" if changes.matched_by_text else "by file and line number"
    measure = (
        "a line's time is its share of the warp samples times the launch's duration "
        f"(A {fmt.duration(changes.duration_a_ns)}, B {fmt.duration(changes.duration_b_ns)})"
        if changes.by_time
        else "shares of each launch's warp samples (a side has no duration)"
    )
    return (
        f"Source lines, B against A: {len(changes.grew)} grew, {len(changes.shrank)} shrank, {changes.unchanged} "
        f"changed by less than {fmt.fraction(MIN_CHANGE_SHARE)} of A; lines matched {matched}; {measure}."
    )


def changes_tables(changes: LineChanges) -> list[Table]:
    """The lines that grew and those that shrank, largest first (`CHANGE_ROWS` of each)."""
    tables = []
    for title, found in (
        ("Lines that grew (B over A)", changes.grew),
        ("Lines that shrank (B under A)", changes.shrank),
    ):
        rows = [_change_row(change, changes) for change in found[:CHANGE_ROWS]]
        note = f"{len(found) - CHANGE_ROWS} more." if len(found) > CHANGE_ROWS else None
        tables.append(Table(title, CHANGE_COLUMNS, rows, note=note))
    return tables


def _side_json(side: LineSide | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {
        "file": side.file,
        "line": side.line,
        "samples": side.samples,
        "samples_share": side.samples_share,
        "time_ns": side.time_ns,
        "kind": side.kind,
        "counters": dict(zip(CHANGE_COUNTERS, side.counters, strict=True)),
    }


def changes_json(changes: LineChanges) -> dict[str, Any]:
    """`tracekit compare --json`'s source lines of a pair (every line that moved, exact values)."""

    def rows(found: tuple[LineChange, ...]) -> list[dict[str, Any]]:
        return [
            {
                "text": change.text,
                "a": _side_json(change.a),
                "b": _side_json(change.b),
                "change_ns": change.change_ns,
                "change_share": change.change_share,
                "change_words": _change_words(change, changes),
            }
            for change in found
        ]

    return {
        "schema": CHANGES_SCHEMA,
        "sentence": changes_sentence(changes),
        "by_time": changes.by_time,
        "matched_by_text": changes.matched_by_text,
        "duration_a_ns": changes.duration_a_ns,
        "duration_b_ns": changes.duration_b_ns,
        "samples_a": changes.samples_a,
        "samples_b": changes.samples_b,
        "unchanged": changes.unchanged,
        "grew": rows(changes.grew),
        "shrank": rows(changes.shrank),
    }
