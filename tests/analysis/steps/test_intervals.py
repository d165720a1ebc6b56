"""The interval union against a brute-force count of covered nanoseconds, per thread and over all (hypothesis)."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.analysis.steps.intervals import contains, gaps, measure, merge

intervals = st.lists(
    st.tuples(st.integers(1, 3), st.integers(0, 200), st.integers(0, 30)).map(lambda t: (t[0], t[1], t[1] + t[2])),
    max_size=40,
)


def covered(rows: list[tuple[int, int, int]], thread: int | None) -> set[int]:
    return {p for t, a, b in rows if thread is None or t == thread for p in range(a, b)}


@settings(max_examples=150, deadline=None)
@given(intervals, st.integers(0, 250), st.integers(0, 100))
def test_union_measure_and_gaps(rows, start, length):
    frame = pl.DataFrame(rows, schema={"thread": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64}, orient="row")
    end = start + length
    for thread in (1, 2, 3):
        found = measure(merge(frame, by="thread"), pl.Series([start]), pl.Series([end]), pl.Series([thread]))[0]
        assert found == len([p for p in covered(rows, thread) if start <= p < end])
    whole = merge(frame)
    points = covered(rows, None)
    assert measure(whole, pl.Series([start]), pl.Series([end]))[0] == len([p for p in points if start <= p < end])
    holes = gaps(whole, start, end)
    assert sum(b - a for a, b in holes.iter_rows()) == length - len([p for p in points if start <= p < end])
    inside = contains(whole, pl.Series([start]))[0]
    assert inside == any(a <= start <= b for _, a, b in rows if b > a)


@settings(max_examples=60, deadline=None)
@given(intervals, st.lists(st.tuples(st.sampled_from([None, 1, 2, 3, 4]), st.integers(0, 250)), max_size=12))
def test_measure_by_group_far_apart_and_null_groups(rows, queries):
    """Per-thread measures at many times at once: the same whether the groups fit one int64 axis or not (times
    2**61 ns apart take the as-of join), and a null thread (on either side) matches nothing."""
    far = 2**61
    shifted = rows + [(None, far, far + 10)]
    frame = pl.DataFrame(shifted, schema={"thread": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64}, orient="row")
    merged = merge(frame, by="thread")
    threads = pl.Series([t for t, _ in queries] + [2], dtype=pl.Int64)
    ends = pl.Series([a for _, a in queries] + [far + 5], dtype=pl.Int64)
    found = measure(merged, pl.Series([0] * len(threads)), ends, threads).to_list()
    expected = [
        len([p for p in covered(rows, t) if p < b]) if t is not None else 0 for t, b in zip(threads, ends, strict=True)
    ]
    assert found == expected
    near = merge(pl.DataFrame(rows, schema=frame.schema, orient="row"), by="thread")
    assert measure(near, pl.Series([0] * len(threads)), ends, threads).to_list() == expected
