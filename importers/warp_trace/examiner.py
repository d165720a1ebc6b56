"""cuda_scheduling_examiner's JSON log: per-block start/end times and SM ids, one launch per kernel entry.

The log times blocks, not warps: each block becomes one record with `warp_in_block` 0 (with a warning).
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.warp_trace.columns import Table, typed_column


def read_scheduling_examiner(path: Path, document: dict[str, Any]) -> Table:
    """cuda_scheduling_examiner's log: each `times` entry with `block_times` is one kernel launch."""
    launches: list[dict[str, Any]] = []
    starts: list[Any] = []  # as the log has them: numbers, checked below
    ends: list[Any] = []
    smids: list[Any] = []
    offsets: list[int] = []
    labels: list[str] = []
    launch_numbers: list[int] = []
    block_ids: list[int] = []
    for index, entry in enumerate(document["times"]):
        if not isinstance(entry, dict) or "block_times" not in entry:
            continue  # the leading {} and the CPU-times entries
        label = f"times[{index}]"
        block_times, block_smids = entry.get("block_times"), entry.get("block_smids")
        if block_smids is None:
            raise InputError(
                str(path), f'{label} has no "block_smids" (an older log without SM ids); SM ids are required'
            )
        if not isinstance(block_times, list) or not isinstance(block_smids, list):
            raise InputError(str(path), f'{label}: "block_times" and "block_smids" must be lists')
        if len(block_times) != 2 * len(block_smids):
            raise InputError(
                str(path),
                f'{label}: "block_times" has {len(block_times)} values, expected 2 per '
                f'block for the {len(block_smids)} blocks in "block_smids"',
            )
        block_count = entry.get("block_count", document.get("block_count"))
        if block_count is not None and block_count != len(block_smids):
            raise InputError(
                str(path), f'{label}: "block_count" is {block_count} but "block_smids" lists {len(block_smids)} blocks'
            )
        offsets.append(len(smids))
        labels.append(label)
        launch_numbers.extend([len(launches)] * len(block_smids))
        block_ids.extend(range(len(block_smids)))
        starts.extend(block_times[0::2])
        ends.extend(block_times[1::2])
        smids.extend(block_smids)
        launches.append(
            {
                "launch": len(launches),
                "kernel_name": entry.get("kernel_name") or document.get("label") or document.get("benchmark_name"),
                "grid_x": block_count if block_count is not None else len(block_smids),
                "grid_y": 1,
                "grid_z": 1,
                "block_x": entry.get("thread_count", document.get("thread_count")),
                "block_y": 1,
                "block_z": 1,
                "dynamic_smem_bytes": entry.get("shared_memory"),
                "source_launch_id": label,
            }
        )
    if not launches:
        raise InputError(str(path), 'no kernel entries with "block_times" in "times": nothing to import')

    def where(row: int) -> tuple[int | None, str]:
        launch = bisect.bisect_right(offsets, row) - 1
        return None, f"{labels[launch]} block {row - offsets[launch]}"

    seconds = {}
    for name, values in (("start", starts), ("end", ends)):
        series = pl.Series(name, values, strict=False)
        if not series.dtype.is_numeric() or series.null_count():
            bad = next(
                i for i, value in enumerate(values) if not isinstance(value, int | float) or isinstance(value, bool)
            )
            raise InputError(
                str(path), f"{where(bad)[1]}: block {name} time {values[bad]!r} is not a number of seconds"
            )
        seconds[name] = series.cast(pl.Float64)
    raw = pl.DataFrame(
        {"launch": launch_numbers, "block_id": block_ids, "sm_id": pl.Series(smids, strict=False)},
        schema_overrides={"launch": pl.Int64, "block_id": pl.Int64},
    )
    rows = pl.DataFrame(
        {
            "launch": raw["launch"],
            "sm_id": typed_column(path, raw, "sm_id", "block_smids", where),
            "block_id": raw["block_id"],
            "warp_in_block": pl.repeat(0, raw.height, dtype=pl.Int64, eager=True),
            "start_ns": (seconds["start"] * 1e9).round().cast(pl.Int64),
            "end_ns": (seconds["end"] * 1e9).round().cast(pl.Int64),
        }
    )
    columns = {
        "launch": "times",
        "sm_id": "block_smids",
        "block_id": "block index",
        "warp_in_block": "-",
        "start_ns": "block_times",
        "end_ns": "block_times",
    }
    warnings = [
        "per-block timings: each block is imported as one warp record (warp_in_block 0); "
        "cuda_scheduling_examiner logs times in seconds since the program start"
    ]
    launch_info = pl.DataFrame(launches, infer_schema_length=None)
    return Table(rows, columns, where, {}, launch_info=launch_info, tool="cuda_scheduling_examiner", warnings=warnings)
