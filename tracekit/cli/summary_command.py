"""`tracekit summary`: where a timeline's GPU time went, per kernel and per kind of memory copy, as `nsys stats`
prints it in cuda_gpu_kern_sum and cuda_gpu_mem_time_sum."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tracekit import format as fmt
from tracekit.api import GpuTime, TimeRow, gpu_time_of
from tracekit.cli.common import DbOption, JsonOption, NamesOption, console, open_store, print_json
from tracekit.errors import TracekitError
from tracekit.format import NameStyle
from tracekit.ingest import ingest
from tracekit.store import Store

_IMPORT_REF = re.compile(r"^(?:import:)?(\d+)$")
# formats whose launches and copies are a timeline of the whole run
TIMED_FORMATS = ("nsys-sqlite", "kineto", "nsys-stats-csv", "nvprof-nvvp", "nvprof-trace")


def import_id_of(store: Store, reference: str) -> int:
    """An import id (`7`, `import:7`) or a file, imported on the way."""
    match = _IMPORT_REF.match(reference.strip())
    if match and not Path(reference).exists():
        import_id = int(match.group(1))
        store.get_import(import_id)  # NotFoundError names the store
        return import_id
    if reference.strip().startswith("launch:"):
        raise TracekitError(f"{reference}: summary takes an import (an id or a file), not a launch")
    result, _ = ingest(store, reference)
    return result.import_id


def summarize(store: Store, import_id: int, names: NameStyle = NameStyle.base) -> GpuTime:
    return gpu_time_of(store, import_id, partial(fmt.kernel_name, style=names))


def time_table(title: str, rows: list[TimeRow], label: str, with_bytes: bool = False) -> Table:
    """One summary as a terminal table: numbers right-aligned, times in engineering units."""
    columns = ["time (%)", "total", "count", "mean", "median", "min", "max", "std dev"]
    if with_bytes:
        columns.append("total size")
    table = Table(*columns, label, title=title, title_justify="left")
    for column in table.columns[:-1]:
        column.justify = "right"
    table.columns[-1].overflow = "fold"  # on a narrow terminal the name wraps, never ends in "…"
    for row in rows:
        cells = [
            fmt.fraction(row.share),
            fmt.duration(row.total_ns),
            fmt.number(row.count),
            fmt.duration(row.mean_ns),
            fmt.duration(row.median_ns),
            fmt.duration(row.min_ns),
            fmt.duration(row.max_ns),
            fmt.duration(row.std_ns),
        ]
        if with_bytes:
            cells.append(fmt.size(row.total_bytes))
        table.add_row(*cells, row.name)
    return table


def summary_command(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="Timelines (Nsight Systems exports, PyTorch profiler traces, nsys stats GPU traces): files or import "
            "ids (7, import:7).",
            show_default=False,
        ),
    ],
    names: NamesOption = NameStyle.base,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Per-kernel and per-memory-copy GPU time of Nsight Systems exports (count, total, mean, median, min, max,
    std dev, share), like `nsys stats --report cuda_gpu_kern_sum,cuda_gpu_mem_time_sum`."""
    store = open_store(db)
    summaries = []
    for source in sources:
        import_id = import_id_of(store, source)
        info = store.get_import(import_id)
        if info["format"] not in TIMED_FORMATS:
            raise TracekitError(
                f"{source}: import {import_id} is {info['format']}; the GPU time summary needs an Nsight Systems "
                "export or another timeline of each launch and copy (a PyTorch profiler trace, an nsys stats GPU "
                "trace)"
            )
        summaries.append((import_id, info, summarize(store, import_id, names)))
    if as_json:
        print_json([{"import_id": i, "name": info["name"], **s.to_dict()} for i, info, s in summaries])
        return
    for import_id, info, summary in summaries:
        launches = fmt.plural(sum(r.count for r in summary.kernels), "launch")
        copies = fmt.plural(sum(r.count for r in summary.memcpys), "copy", "copies")
        console.print(
            f"import {import_id}: {info['name']} ({info.get('device_name') or 'device n/a'}): kernels "
            f"{fmt.duration(summary.kernel_ns)} in {launches}, memory copies {fmt.duration(summary.memcpy_ns)} in "
            f"{copies}",
            markup=False,
        )
        if summary.kernels:
            console.print(time_table("GPU kernels (share of kernel time)", summary.kernels, "kernel"))
        if summary.memcpys:
            console.print(
                time_table("Memory copies (share of copy time)", summary.memcpys, "operation", with_bytes=True)
            )
