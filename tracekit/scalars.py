"""Typed Python numbers from polars aggregates.

polars types `Series.max()`, `.min()`, `.sum()`, `.mean()` and `.item()` as any Python literal (a date, a string,
None...), whatever the column's type; these narrow the result of a numeric column to the number it is, with the
same result and the same TypeError for None as `int()` and `float()` themselves.
"""

from __future__ import annotations

from decimal import Decimal


def as_int(value: object) -> int:
    """`int(value)` for an aggregate of a numeric column."""
    if isinstance(value, int | float | Decimal):
        return int(value)
    raise TypeError(f"expected a number, got {value!r}")


def as_float(value: object) -> float:
    """`float(value)` for an aggregate of a numeric column."""
    if isinstance(value, int | float | Decimal):
        return float(value)
    raise TypeError(f"expected a number, got {value!r}")
