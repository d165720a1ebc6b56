"""Warp traces as CSV (plain or gzip): the `# key: value` preamble, the header, the typed rows.

polars reads the rows itself, gzip included (faster than inflating to a file first); only a file the typed read
refuses is read again as text, to name the bad cell's line and column.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.warp_trace.columns import Table, resolve_columns, typed
from tracekit.importers.warp_trace.content import open_content
from tracekit.importers.warp_trace.reader import MAGIC, PREAMBLE_LIMIT_BYTES, SUPPORTED_VERSIONS


def read_csv(path: Path, content: Path, head: bytes, column_map: dict[str, str] | None) -> Table:
    """The rows of a CSV warp trace (`content`: the file, plain or gzip), typed, with its preamble's metadata."""
    if b"\x00" in head:
        raise InputError(str(path), "binary data: not a warp trace (expected CSV text, Parquet or JSON)")
    metadata, metadata_lines, _, header_line, version = read_preamble(path, content)
    try:
        raw_names = pl.read_csv(content, skip_lines=header_line - 1, n_rows=0, infer_schema=False, glob=False).columns
    except pl.exceptions.PolarsError as exc:
        raise InputError(str(path), f"unreadable CSV header: {str(exc).splitlines()[0]}", line=header_line) from None
    header_names = [name.strip() for name in raw_names]
    columns = resolve_columns(path, header_names, column_map, metadata, header_line)
    indices = [header_names.index(name) for name in columns.values()]
    fields_by_index = dict(zip(indices, columns, strict=True))
    dtypes: dict[str, type[pl.DataType]] = {
        raw_names[i]: (pl.Categorical if fields_by_index[i] == "kernel" else pl.Int64) for i in indices
    }

    def where(row: int) -> tuple[int | None, str]:
        line = csv_line_of_row(content, header_line, row)
        return line, f"line {line}"

    def read_rows(schema_overrides: dict[str, type[pl.DataType]] | None) -> pl.DataFrame:
        """The mapped columns, typed by `schema_overrides` (None: all as text)."""
        return pl.read_csv(
            content,
            has_header=True,
            skip_lines=header_line - 1,
            comment_prefix="#",
            columns=sorted(indices),
            glob=False,
            schema_overrides=schema_overrides,
            infer_schema=schema_overrides is not None,
        )

    try:
        frame = read_rows(dtypes)
        rows = frame.rename({raw_names[i]: fields_by_index[i] for i in indices})
    except pl.exceptions.PolarsError:
        # Slow path, only for files the typed read refuses: read as text to find the bad cell (or line).
        try:
            frame = read_rows(None)
        except pl.exceptions.PolarsError as exc:
            raise ragged_line_error(path, content, header_line, len(raw_names), exc) from None
        rows = frame.rename({raw_names[i]: fields_by_index[i] for i in indices})
        rows = typed(path, rows, columns, where, strip=True)
    tool = metadata.get("tool") or ("tracekit-warp-trace" if version else None)
    tool_version = metadata.get("tool_version") or version
    return Table(rows, columns, where, metadata, metadata_lines, tool=tool, tool_version=tool_version)


def read_preamble(path: Path, content: Path) -> tuple[dict[str, str], dict[str, int], str, int, str | None]:
    """Metadata lines, the header line (text and 1-based number) and the magic line's version, if any."""
    metadata: dict[str, str] = {}
    metadata_lines: dict[str, int] = {}
    version = None
    consumed = 0
    with open_content(content) as handle:
        for number, raw in enumerate(iter(lambda: handle.readline(PREAMBLE_LIMIT_BYTES), b""), start=1):
            consumed += len(raw)
            if consumed > PREAMBLE_LIMIT_BYTES:
                break
            try:
                line = raw.decode("utf-8").removeprefix("\ufeff").strip()
            except UnicodeDecodeError:
                raise InputError(
                    str(path), "not UTF-8 text: not a warp trace (expected CSV, Parquet or JSON)", line=number
                ) from None
            if not line:
                continue
            if not line.startswith("#"):
                return metadata, metadata_lines, line, number, version
            body = line[1:].strip()
            if body.startswith(MAGIC[2:].decode()):
                version = body.split()[-1] if len(body.split()) > 1 else None
                if version not in SUPPORTED_VERSIONS:
                    raise InputError(
                        str(path), f"unsupported warp trace version {version!r} (this tracekit reads v1)", line=number
                    )
                continue
            key, sep, value = body.partition(":")
            if sep and key.strip():
                key = key.strip().lower()
                metadata[key] = value.strip()
                metadata_lines[key] = number
    if consumed > PREAMBLE_LIMIT_BYTES:
        raise InputError(str(path), f"no CSV header in the first {PREAMBLE_LIMIT_BYTES:,} bytes: not a warp trace")
    raise InputError(
        str(path),
        "no CSV header line (expected e.g. launch,sm_id,block_id,warp_in_block,start_ns,"
        "end_ns after the # metadata lines)",
    )


def csv_line_of_row(content: Path, header_line: int, row: int) -> int:
    """The 1-based file line of data row `row` as polars counts rows (comment lines skipped, blank lines kept)."""
    seen = -1
    with open_content(content) as handle:
        for number, line in enumerate(handle, start=1):
            if number <= header_line or line.startswith(b"#"):
                continue
            seen += 1
            if seen == row:
                return number
    return header_line + 1 + row


def ragged_line_error(path: Path, content: Path, header_line: int, field_count: int, exc: Exception) -> InputError:
    with open_content(content) as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip(b"\r\n")
            if number <= header_line or not line or line.startswith(b"#"):
                continue
            count = line.count(b",") + 1
            if count != field_count:
                return InputError(str(path), f"{count} fields where the header has {field_count}", line=number)
    return InputError(str(path), f"unreadable CSV: {str(exc).splitlines()[0]}")
