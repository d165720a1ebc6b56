"""`analysis.source_line_changes` on the recorded H200 set (sample_traces/source_lines): a launch against itself
moves no line; without embedded text lines match by number; with it, by their text across a fix that moves them."""

from __future__ import annotations

import polars as pl
import pytest

from tests.helpers import SOURCE_LINES_SET, marked_line
from tests.importers.test_ncu_source import parsed
from tracekit.analysis.source_line_changes import line_changes
from tracekit.analysis.source_lines import analyze_source_lines

pytest.importorskip("ncu_report")


def side(kernel: str, with_text: bool = True):
    p = parsed()
    [(key, duration)] = [
        (k, d)
        for k, n, d in p.launches.select("launch_key", "kernel_name", "duration_ns").rows()
        if n.startswith(kernel + "(")
    ]
    result = analyze_source_lines(p.source_samples.filter(pl.col("launch_key") == key), duration)
    assert result is not None
    files = p.source_files.filter(pl.col("launch_key") == key) if with_text else p.source_files.clear()
    return result, files, duration


def test_a_launch_against_itself_moves_no_line() -> None:
    a = side("transposeNaive")
    changes = line_changes(a, a)
    assert changes.grew == () and changes.shrank == ()
    assert changes.unchanged == len(a[0].lines)
    assert changes.by_time and changes.matched_by_text


def test_without_text_lines_match_by_number() -> None:
    changes = line_changes(side("transposeNaive", False), side("transposeCoalesced", False))
    assert not changes.matched_by_text
    moved = changes.grew + changes.shrank
    assert all(c.a.line == c.b.line for c in moved if c.a is not None and c.b is not None)
    assert all(c.text is None for c in moved)
    limiter = marked_line(SOURCE_LINES_SET / "src" / "transpose.cu", "[transpose_naive: limiter]")
    assert changes.shrank[0].a is not None and changes.shrank[0].a.line == limiter


def test_with_text_a_statement_that_moved_is_one_line() -> None:
    """transposeCoalesced and transposeNoBankConflicts hold the same statements at other line numbers."""
    a, b = side("transposeCoalesced"), side("transposeNoBankConflicts")
    changes = line_changes(a, b)
    both = [c for c in changes.grew + changes.shrank if c.a is not None and c.b is not None]
    assert both and all(c.a.line != c.b.line for c in both)  # the same text, moved
    assert all(c.text is not None for c in both)
    total_a = sum(x.samples for x in a[0].lines)
    assert sum(c.a.samples for c in changes.grew + changes.shrank if c.a) <= total_a
