"""metric_comparison: the numeric metrics two launches share, and B / A."""

from __future__ import annotations

import polars as pl

from tracekit.analysis.metric_comparison import metric_comparison

COLUMNS = ["launch_id", "section", "name", "unit", "value", "text_value", "kind"]


def frame(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=COLUMNS, orient="row")


def test_joins_numeric_metrics_and_divides():
    a = frame(
        [
            (1, "S", "dram__bytes", "byte", 100.0, None, "float"),
            (1, "S", "only_in_a", "", 1.0, None, "float"),
            (1, "S", "zero", "", 0.0, None, "float"),
            (1, "S", "label", None, None, "x", "text"),
        ]
    )
    b = frame(
        [
            (2, "S", "dram__bytes", "byte", 250.0, None, "float"),
            (2, "S", "zero", "", 5.0, None, "float"),
            (2, "S", "label", None, None, "y", "text"),
        ]
    )
    shared = metric_comparison(a, b)
    assert shared.select("name", "value_a", "value_b", "ratio_b_to_a").rows() == [
        ("dram__bytes", 100.0, 250.0, 2.5),
        ("zero", 0.0, 5.0, None),
    ]


def test_first_value_of_a_repeated_metric_wins_and_units_must_match():
    a = frame(
        [
            (1, "S", "cycles", "cycle", 10.0, None, "float"),
            (1, "S", "cycles", "cycle", 99.0, None, "float"),
            (1, "S", "time", "ns", 4.0, None, "float"),
            (1, None, "nosection", None, 2.0, None, "float"),
        ]
    )
    b = frame(
        [
            (2, "S", "cycles", "cycle", 30.0, None, "float"),
            (2, "S", "time", "us", 8.0, None, "float"),
            (2, None, "nosection", None, 3.0, None, "float"),
        ]
    )
    shared = metric_comparison(a, b)
    # "time" is in ns on A and µs on B: not the same metric. Missing section and unit match each other.
    assert shared.select("section", "name", "unit", "ratio_b_to_a").rows() == [
        ("S", "cycles", "cycle", 3.0),
        ("", "nosection", "", 1.5),
    ]
