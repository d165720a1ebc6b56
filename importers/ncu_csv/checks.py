"""Validation of the table rows: a row too short or cut off, and a cell that must be a number, each refused with
one line naming the file line (and the column).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.ncu_csv.table import CsvTable, csv_fields
from tracekit.importers.ncu_csv.values import integer_expr, non_empty


def require_fields(path: Path, table: CsvTable, rows: pl.DataFrame, mask: pl.Expr, expected: str) -> None:
    """Raise for the first row that `mask` marks as too short: a truncated last row or a malformed one."""
    line = rows.select(pl.col("_line").filter(mask).first()).item()
    if line is None:
        return
    text = table.rows[table.line_numbers.index(line)]
    count = len(csv_fields(text))
    truncated = line == table.line_numbers[-1] and not table.ends_with_newline
    what = "truncated row" if truncated else "row too short"
    raise InputError(str(path), f"{what}: {count} fields, expected {expected}", line)


def require_last_row(path: Path, table: CsvTable, expected: int) -> None:
    """A file cut right after a field of its last row: fewer fields than the header, no final newline."""
    if table.ends_with_newline:
        return
    count = len(csv_fields(table.rows[-1]))
    if count < expected:
        raise InputError(str(path), f"truncated row: {count} fields, expected {expected}", table.line_numbers[-1])


def raise_first_bad(path: Path, rows: pl.DataFrame, bad: dict[str, tuple[pl.Expr, str]]) -> None:
    """InputError for the first column of `bad` (column -> (mask, what is wrong)) with a row where its mask
    holds, naming that column's first such row (file line); one query for all columns."""
    if not bad:
        return
    first = rows.select(mask.arg_true().first().alias(column) for column, (mask, _) in bad.items()).row(0)
    for (column, (_, what)), index in zip(bad.items(), first, strict=True):
        if index is not None:
            raise InputError(str(path), f"{column} {rows[column][index]!r} {what}", int(rows["_line"][index]), column)


def parse_integers(path: Path, rows: pl.DataFrame, column: str) -> pl.DataFrame:
    """`column` parsed as integers (separators removed, empty -> null); a non-number is an InputError."""
    parsed = integer_expr(column)
    raise_first_bad(path, rows, {column: (parsed.is_null() & non_empty(column), "is not a number")})
    return rows.with_columns(parsed.alias(column))
