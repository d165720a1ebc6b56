"""Two launches of a kernel, line by line (`tracekit compare`'s A/B by line): which source lines grew and which
shrank, in time and in their key counters.

A line's time is its share of the launch's warp samples times the launch's duration: the sample counts of two
profiles are not comparable (each run samples at its own interval and for its own length), their shares of a
measured duration are. Without a duration on both sides the shares are compared.

Lines are matched by their text where the reports embed the source (a fix moves lines up or down; the same
statement is the same line), a comment and spacing aside, the n-th occurrence of a text with the n-th; else by file
and line number. A line found on one side only was removed or added by the change. Pure polars; no I/O.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import polars as pl

from tracekit.analysis.source_lines import SourceLine, SourceLines, file_lines

CHANGE_COUNTERS = ("inst_executed", "l2_sectors_global_excess", "shared_wavefronts_excess", "divergent_branches")
MIN_CHANGE_SHARE = 0.01  # a line whose time moved by less than this share of A's duration is unchanged
_COMMENT = re.compile(r"//.*$")

Side = tuple[SourceLines, pl.DataFrame, float | None]  # a launch's lines, its embedded files, its duration


@dataclass(frozen=True)
class LineSide:
    """A line as one launch ran it."""

    file: str | None
    line: int | None
    samples: int
    samples_share: float
    time_ns: float | None  # samples_share x the launch's duration
    kind: str
    counters: tuple[int, ...]  # CHANGE_COUNTERS, in order


@dataclass(frozen=True)
class LineChange:
    text: str | None  # the line's source text (untrusted), None where no side embeds it
    a: LineSide | None  # None: the line is new in B
    b: LineSide | None  # None: the line is gone in B
    change_ns: float | None  # B's time on the line less A's; None without both durations
    change_share: float  # B's share of its samples less A's share of its own


@dataclass(frozen=True)
class LineChanges:
    duration_a_ns: float | None
    duration_b_ns: float | None
    samples_a: int
    samples_b: int
    by_time: bool  # changes are in time (both durations known), else in share of the samples
    grew: tuple[LineChange, ...]  # largest growth first
    shrank: tuple[LineChange, ...]  # largest drop first
    unchanged: int  # lines on both sides that moved by less than MIN_CHANGE_SHARE
    matched_by_text: bool


def _normalized(text: str) -> str:
    return " ".join(_COMMENT.sub("", text).split())


def _keyed(side: Side, by_text: bool) -> dict[tuple, tuple[SourceLine, str | None]]:
    """Each line of a side under its matching key, with its text."""
    result, files, _ = side
    keyed: dict[tuple, tuple[SourceLine, str | None]] = {}
    seen: dict[tuple, int] = defaultdict(int)
    texts: dict[str | None, list[str] | None] = {}
    for line in sorted(result.lines, key=lambda x: (x.file or "", x.line or 0, x.pc_offset or 0)):
        if line.file not in texts:
            texts[line.file] = file_lines(files, line.file)
        lines = texts[line.file]
        text = lines[line.line - 1] if lines and line.line is not None and 0 < line.line <= len(lines) else None
        name = (line.file or "").rsplit("/", 1)[-1]
        if line.line is None:
            base: tuple = ("pc", line.pc_offset, line.sass)
        elif by_text and text is not None and _normalized(text):
            base = ("text", name, _normalized(text))
        else:
            base = ("line", name, line.line)
        keyed[(*base, seen[base])] = (line, text)
        seen[base] += 1
    return keyed


def _side(line: SourceLine, duration_ns: float | None) -> LineSide:
    return LineSide(
        line.file,
        line.line,
        line.samples,
        line.samples_share,
        line.samples_share * duration_ns if duration_ns else None,
        line.kind,
        tuple(int(getattr(line, name)) for name in CHANGE_COUNTERS),
    )


def _embeds_text(side: Side) -> bool:
    result, files, _ = side
    return any(file_lines(files, line.file) is not None for line in result.lines[:1])


def line_changes(a: Side, b: Side) -> LineChanges:
    """B's lines against A's: the lines that grew and those that shrank, each with both sides' samples, time, kind
    and counters."""
    (result_a, _, duration_a), (result_b, _, duration_b) = a, b
    by_text = _embeds_text(a) and _embeds_text(b)
    by_time = bool(duration_a) and bool(duration_b)
    lines_a, lines_b = _keyed(a, by_text), _keyed(b, by_text)
    changes = []
    unchanged = 0
    for key in [*lines_a, *(k for k in lines_b if k not in lines_a)]:
        found_a, found_b = lines_a.get(key), lines_b.get(key)
        side_a = _side(found_a[0], duration_a) if found_a else None
        side_b = _side(found_b[0], duration_b) if found_b else None
        text = (found_a or found_b or (None, None))[1]
        share = (side_b.samples_share if side_b else 0.0) - (side_a.samples_share if side_a else 0.0)
        change_ns = None
        if by_time:
            change_ns = ((side_b.time_ns or 0.0) if side_b else 0.0) - ((side_a.time_ns or 0.0) if side_a else 0.0)
        size = change_ns / duration_a if change_ns is not None and duration_a else share
        if abs(size) < MIN_CHANGE_SHARE:
            unchanged += side_a is not None and side_b is not None
            continue
        changes.append((size, LineChange(text, side_a, side_b, change_ns, share)))
    grew = tuple(c for size, c in sorted(changes, key=lambda sc: -sc[0]) if size > 0)
    shrank = tuple(c for size, c in sorted(changes, key=lambda sc: sc[0]) if size < 0)
    return LineChanges(
        duration_a,
        duration_b,
        result_a.total_samples,
        result_b.total_samples,
        by_time,
        grew,
        shrank,
        unchanged,
        by_text,
    )
