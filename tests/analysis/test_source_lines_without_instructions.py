"""Source lines whose samples have no instruction behind them (Proton's PC sampling: no PC, SASS or counters): only
what the stalls alone say is named. Rows built here, one per line, as `importers.proton_pcsampling` writes them."""

from __future__ import annotations

import json

import polars as pl
import pytest

from tracekit.analysis.source_lines import (
    KIND_ATOMICS,
    KIND_CHAIN,
    KIND_MEMORY,
    ORDERED_ATOMICS_MIN_MEMBAR,
    analyze_source_lines,
)
from tracekit.parsed import SOURCE_SAMPLE_SCHEMA, conform
from tracekit.present.source_lines import evidence_words


def frame(lines: dict[int, dict[str, int]], with_sass: bool = False) -> pl.DataFrame:
    rows = [
        {
            "launch_key": 0,
            "function": "k",
            "pc_offset": 16 * n if with_sass else None,
            "sass": "IMAD R1, R2, R3, R4" if with_sass else None,
            "file": "k.py",
            "line": line,
            "samples": sum(stalls.values()),
            "stall_samples": json.dumps(stalls),
        }
        for n, (line, stalls) in enumerate(lines.items())
    ]
    return conform(pl.DataFrame(rows, infer_schema_length=None), SOURCE_SAMPLE_SCHEMA)


def by_line(result) -> dict[int, object]:
    return {x.line: x for x in result.lines}


def test_a_line_waiting_at_memory_barriers_is_atomics_contention() -> None:
    at_threshold = round(100 * ORDERED_ATOMICS_MIN_MEMBAR)
    lines = {
        5: {"membar": at_threshold, "long_scoreboard": 100 - at_threshold},
        6: {"membar": at_threshold - 1, "long_scoreboard": 101 - at_threshold},
        7: {"long_scoreboard": 300},
    }
    result = analyze_source_lines(frame(lines), duration_ns=1000.0)
    assert result is not None
    kinds = {line: x.kind for line, x in by_line(result).items()}
    assert kinds == {5: KIND_ATOMICS, 6: KIND_MEMORY, 7: KIND_MEMORY}
    atomic = by_line(result)[5]
    assert atomic.samples_share == 100 / 500
    # at least the line's own samples, at most every ordered-atomics line's: here the same
    assert (atomic.gain_share_low, atomic.gain_share_high) == pytest.approx((0.2 * 0.9, 0.2 * 1.1))
    assert result.lines[0].line == 5  # the one fixable line ranks first though line 7 has more samples
    assert f"{at_threshold}% of its samples wait at a memory barrier" in evidence_words(atomic.evidence)


def test_the_same_stalls_with_instructions_are_judged_by_their_instructions() -> None:
    """An ncu line (SASS, PCs) is not read from its stalls: membar waits on an IMAD are not atomics."""
    result = analyze_source_lines(frame({5: {"membar": 50, "long_scoreboard": 50}}, with_sass=True), 1000.0)
    assert result is not None and result.lines[0].kind != KIND_ATOMICS


def test_no_dependency_chain_is_claimed_without_instructions() -> None:
    """short_scoreboard and wait are a chain only where the line's instructions rule memory out."""
    stalls = {5: {"short_scoreboard": 80, "selected": 20}}
    without = analyze_source_lines(frame(stalls), 1000.0)
    with_sass = analyze_source_lines(frame(stalls, with_sass=True), 1000.0)
    assert without is not None and with_sass is not None
    assert (without.lines[0].kind, without.lines[0].gain_share) == (KIND_MEMORY, None)
    assert with_sass.lines[0].kind == KIND_CHAIN
