"""Finding the table in an `ncu --csv` file: the text (UTF-8 or UTF-16), the header line naming "Kernel Name",
the tool lines (==PROF==, ==WARNING==...) and application output set aside, and the rows read into a frame.

A clean file (ASCII, a quoted header and only quoted rows after it) is read straight from its bytes; anything
else line by line. A file without a header is refused with the reason `refusals` gives.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import overload

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.ncu_csv.refusals import no_table_reason
from tracekit.parsed import ColumnTypes

TOOL_LINE = re.compile(r"^==(PROF|WARNING|ERROR|INFO|WARN)==")
_QUOTE = ord('"')
_TYPE_SAMPLE_ROWS = 20  # raw page: the rows that decide which columns are read as numbers


@dataclass
class CsvTable:
    """The table's header and where its rows are: as text lines, or (a clean file) as the file's bytes."""

    header: list[str]
    header_line: int
    line_numbers: Sequence[int]  # the file line of each table row
    tool_lines: list[tuple[int, str]] = field(default_factory=list)
    ends_with_newline: bool = True
    lines: list[str] | None = None  # the table rows as in the file; split from `data` on first use
    data: bytes | None = None  # a clean file: every line after the header line is a table row
    body_start: int = 0  # offset of the first table row in `data`

    @property
    def rows(self) -> list[str]:
        """The table lines after the header, as in the file."""
        if self.lines is None:
            assert self.data is not None, "a table without its lines is a clean file's bytes"
            first = self.header_line  # 0-based index of the line after the header
            self.lines = self.data.decode("ascii").split("\n")[first : first + len(self.line_numbers)]
        return self.lines

    def head(self, count: int) -> list[str]:
        """The first `count` rows, without splitting a whole clean file (the raw page reads its units and sample)."""
        if self.lines is not None or self.data is None:
            return self.rows[:count]
        rows, start = [], self.body_start
        for _ in range(min(count, len(self.line_numbers))):
            end = self.data.find(b"\n", start)
            end = len(self.data) if end < 0 else end
            rows.append(self.data[start:end].decode("ascii"))
            start = end + 1
        return rows

    def csv_source(self, skip: int) -> tuple[bytes, int]:
        """What polars reads for the rows after the first `skip`: bytes, and how many of their lines to skip."""
        if self.data is not None:
            return self.data, self.header_line + skip  # the file itself: no copy, no re-encoding
        return "\n".join(self.rows[skip:]).encode(), 0


def decode_bytes(data: bytes, strict: bool) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="strict" if strict else "replace")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="strict" if strict else "replace")


def read_bytes(path: Path) -> bytes:
    """The file's bytes, once checked to be text at all (not empty, no NUL bytes)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None
    if not data or data.isspace():
        raise InputError(str(path), "the file is empty")
    if b"\x00" in data and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        offset = data.index(b"\x00")
        raise InputError(
            str(path),
            f"binary data (NUL byte at offset {offset}), not an Nsight Compute CSV",
            data.count(b"\n", 0, offset) + 1,
        )
    return data


def _decode_text(path: Path, data: bytes) -> str:
    try:
        return decode_bytes(data, strict=True)
    except UnicodeDecodeError as exc:
        raise InputError(
            str(path),
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            data.count(b"\n", 0, exc.start) + 1,
        ) from None


def csv_fields(line: str) -> list[str]:
    return next(csv.reader([line]), [])


def _header_fields(line: str) -> list[str] | None:
    """The header's fields when `line` is the table header (it names "Kernel Name"), else None."""
    if "Kernel Name" in line and line.count('"') % 2 == 0:
        fields = csv_fields(line)
        if "Kernel Name" in fields:
            return [f.strip() for f in fields]
    return None


def _is_tool_line(line: str) -> bool:
    return line.startswith("==") and TOOL_LINE.match(line) is not None


def locate_table(path: Path, data: bytes) -> CsvTable:
    """The header line and the table lines after it; tool lines and application output are set aside."""
    table = _locate_clean_table(data) or _locate_table_in_text(path, _decode_text(path, data))
    if not table.line_numbers:
        raise InputError(str(path), "the Nsight Compute table has a header but no rows", table.header_line)
    if not table.ends_with_newline and table.rows[-1].count('"') % 2:
        raise InputError(str(path), "truncated row: the file ends inside a quoted field", table.line_numbers[-1])
    return table


def _locate_clean_table(data: bytes) -> CsvTable | None:
    """The usual `ncu --csv` file found without decoding and splitting all of it; None for anything else.

    Clean: ASCII, Unix line ends, a quoted header, and every line after it a quoted table row (no tool lines or
    application output in between). polars then reads the rows straight from the file's bytes.
    """
    if not data.isascii() or b"\r" in data:
        return None
    tool_lines: list[tuple[int, str]] = []
    start, number, header = 0, 1, None
    while header is None:
        end = data.find(b"\n", start)
        if end < 0:
            return None
        line = data[start:end].decode("ascii")
        if _is_tool_line(line):
            tool_lines.append((number, line))
        elif line.strip():
            header = _header_fields(line)
        start, number = end + 1, number + 1
    header_line = number - 1
    if not line.startswith('"'):
        return None
    body_start = row_start = end + 1
    row_count, size = 0, len(data)
    while row_start < size:  # find() is memchr; bytes.count() would be several times slower
        if data[row_start] != _QUOTE:
            return None  # a blank line, tool line or application output after the header
        row_count += 1
        row_end = data.find(b"\n", row_start)
        if row_end < 0:
            break
        row_start = row_end + 1
    if not row_count:
        return None
    return CsvTable(
        header=header,
        header_line=header_line,
        line_numbers=range(header_line + 1, header_line + 1 + row_count),
        tool_lines=tool_lines,
        ends_with_newline=data.endswith(b"\n"),
        data=data,
        body_start=body_start,
    )


def _locate_table_in_text(path: Path, text: str) -> CsvTable:
    """Any layout: line by line, skipping blank lines, tool lines and (quoted tables) unquoted output lines."""
    header: list[str] | None = None
    header_line = 0
    rows: list[str] = []
    line_numbers: list[int] = []
    tool_lines: list[tuple[int, str]] = []
    quoted_table = True
    for number, raw_line in enumerate(text.split("\n"), start=1):
        line = raw_line.rstrip("\r")
        if not line.strip():
            continue
        if _is_tool_line(line):
            tool_lines.append((number, line))
            continue
        if header is None:
            header = _header_fields(line)
            if header is not None:
                header_line = number
                quoted_table = line.startswith('"')
            continue
        if quoted_table and not line.startswith('"'):
            continue  # application output printed between table rows
        rows.append(line)
        line_numbers.append(number)
    if header is None:
        raise InputError(str(path), *no_table_reason(tool_lines, text))
    return CsvTable(
        header=header,
        header_line=header_line,
        line_numbers=line_numbers,
        tool_lines=tool_lines,
        ends_with_newline=text.endswith("\n"),
        lines=rows,
    )


def _unbalanced_quotes(path: Path, table: CsvTable) -> None:
    """After polars failed to read the table: name the first row whose quotes do not pair up."""
    for line, number in zip(table.rows, table.line_numbers, strict=True):
        if line.count('"') % 2:
            raise InputError(str(path), "unbalanced quotes in a table row", number)


@overload
def parse_rows(path: Path, table: CsvTable, skip: int = 0, strings_only: None = None) -> pl.DataFrame: ...


@overload
def parse_rows(path: Path, table: CsvTable, skip: int, strings_only: list[str]) -> pl.DataFrame | None: ...


def parse_rows(
    path: Path, table: CsvTable, skip: int = 0, strings_only: list[str] | None = None
) -> pl.DataFrame | None:
    """The table rows after the first `skip`, one column per header field, plus `_line`.

    By default every cell is a string (missing trailing fields are null). With `strings_only` (the raw page),
    the other columns whose first rows hold plain numbers are read as Float64, so that numbers are parsed while
    reading; a later cell that is not a number makes this return None (the caller then reads strings).
    """
    names = unique_names(table.header)
    numbers = table.line_numbers[skip:]
    source, skip_lines = table.csv_source(skip)

    def read_csv(schema: ColumnTypes) -> pl.DataFrame:
        # No header row: the schema gives the table's width; "insert" keeps a short first row from deciding it.
        return pl.read_csv(
            source,
            schema=schema,
            has_header=False,
            skip_lines=skip_lines,
            missing_columns="insert",
            quote_char='"',
            truncate_ragged_lines=True,
            raise_if_empty=False,
        )

    try:
        if strings_only is None:
            frame = read_csv({f"c{i}": pl.String for i in range(len(names))})
        else:
            sample = [csv_fields(line) for line in table.head(skip + _TYPE_SAMPLE_ROWS)[skip:]]
            columns = itertools.zip_longest(*sample, fillvalue="") if sample else itertools.repeat(())
            schema = {
                f"c{i}": pl.String if name in strings_only or not _numeric_cells(cells) else pl.Float64
                for i, (name, cells) in enumerate(zip(names, columns, strict=False))
            }
            try:
                frame = read_csv(schema)
            except pl.exceptions.PolarsError:
                return None
    except pl.exceptions.PolarsError as exc:
        _unbalanced_quotes(path, table)
        raise InputError(str(path), f"unreadable CSV table: {str(exc).splitlines()[0]}", table.header_line) from None
    if frame.height != len(numbers):
        _unbalanced_quotes(path, table)
        raise InputError(
            str(path), f"read {frame.height} table rows but the file has {len(numbers)}", table.header_line
        )
    frame.columns = names
    return frame.with_columns(pl.Series("_line", numbers, dtype=pl.Int64))


def _numeric_cells(cells: tuple[str, ...]) -> bool:
    """Every cell is a plain number or empty, and at least one is a number."""
    numbers = {cell for cell in cells if cell}  # distinct: launches repeat values (device, launch configuration)
    try:
        list(map(float, numbers))  # a loop in C: this runs for every column of every raw file
    except ValueError:
        return False
    return bool(numbers)


def unique_names(header: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    names = []
    for name in header:
        count = seen.get(name, 0)
        seen[name] = count + 1
        names.append(name if count == 0 else f"{name}#{count}")
    return names


def dtypes(frame: pl.DataFrame) -> dict[str, pl.DataType]:
    """Column name -> dtype; cheaper than `DataFrame.schema` on a frame with hundreds of columns."""
    return dict(zip(frame.columns, frame.dtypes, strict=True))


def narrow(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """`frame.select(columns)` without a query plan, whose cost grows with the frame's width (raw page)."""
    return pl.DataFrame([frame.get_column(c) for c in columns])
