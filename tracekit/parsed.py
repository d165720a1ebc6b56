"""The in-memory form every importer produces and the store writes: one file's content as polars frames.

Importers fill a `ParsedImport`; `tracekit.store` writes it in one transaction. Frames use the column names
below (units in the names). Columns that a source cannot give are left null, never invented.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import polars as pl

# A polars type as polars takes it: a class (pl.Int64) or an instance (pl.List(pl.Int64)).
DType = pl.DataType | type[pl.DataType]
ColumnTypes = Mapping[str, DType]  # column name -> type

# A text metric an importer adds to a launch whose profile did not finish (an .ncu-rep cut off mid-profile): what it
# lacks. Not one of Nsight's rule results (those are named `rule:<id>`): the analysis flags the launch incomplete.
INCOMPLETE_LAUNCH_METRIC = "tracekit__incomplete_launch"

# One row per kernel launch. `launch_key` is the importer's own 0-based index, used to join the other frames.
LAUNCH_SCHEMA: ColumnTypes = {
    "launch_key": pl.Int64,
    "kernel_name": pl.Utf8,  # demangled (as the profiler shows it)
    "mangled_name": pl.Utf8,
    "grid_x": pl.Int64,
    "grid_y": pl.Int64,
    "grid_z": pl.Int64,
    "block_x": pl.Int64,
    "block_y": pl.Int64,
    "block_z": pl.Int64,
    "registers_per_thread": pl.Int64,
    "static_smem_bytes": pl.Int64,
    "dynamic_smem_bytes": pl.Int64,
    "stream_id": pl.Int64,
    "context_id": pl.Int64,
    "process_id": pl.Int64,
    "device_id": pl.Int64,
    "correlation_id": pl.Int64,
    "source_launch_id": pl.Utf8,  # the ID the profiler gave the launch (ncu "ID", nsys correlationId, ...)
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "duration_ns": pl.Float64,
    "nvtx_path": pl.Utf8,  # enclosing NVTX ranges, outermost first, joined with " > "
}

# One row per (launch, metric). Units are normalized to base units (ns, byte, byte/s, hz, %, ...).
METRIC_SCHEMA: ColumnTypes = {
    "launch_key": pl.Int64,
    "section": pl.Utf8,
    "name": pl.Utf8,
    "unit": pl.Utf8,
    "value": pl.Float64,  # numeric value in `unit`, null for text metrics
    "text_value": pl.Utf8,  # text metrics, and the original cell where useful
    "kind": pl.Utf8,  # "float" | "int" | "text"
}

# One row per warp: when it started and ended, where it ran.
WARP_SCHEMA: ColumnTypes = {
    "launch_key": pl.Int64,
    "sm_id": pl.Int32,
    "block_id": pl.Int64,  # linearized blockIdx
    "warp_in_block": pl.Int32,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "start_cycles": pl.Int64,  # raw clock64()/clock() reads where the source had them
    "end_cycles": pl.Int64,
}

# One row per named region instance recorded inside a kernel (intra-kernel profilers), one warp's interval.
# Times are as recorded: ns (`%globaltimer`) and/or SM cycles; a source that gives only one leaves the other null.
REGION_SCHEMA: ColumnTypes = {
    "launch_key": pl.Int64,
    "sm_id": pl.Int32,
    "block_id": pl.Int64,
    "warp_in_block": pl.Int32,
    "region": pl.Utf8,
    "depth": pl.Int32,  # nesting depth within the warp: 0 outermost
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "start_cycles": pl.Int64,
    "end_cycles": pl.Int64,
}

# One row per SASS instruction of a launch with its source-correlated counters (Nsight Compute's Source page):
# where it is (function, PC offset from the function's start, SASS, file and line where the code was built with
# -lineinfo) and what it cost. `stall_samples` is a JSON object {stall reason: warp-state samples}. Counters a
# source lacks stay null. `inline_chain` names the inlined functions an instruction came through, outermost first,
# where the source says (" > "-joined).
SOURCE_SAMPLE_SCHEMA: ColumnTypes = {
    "launch_key": pl.Int64,
    "function": pl.Utf8,
    "pc_offset": pl.Int64,
    "sass": pl.Utf8,
    "file": pl.Utf8,
    "line": pl.Int64,
    "inline_chain": pl.Utf8,
    "samples": pl.Int64,
    "stall_samples": pl.Utf8,
    "inst_executed": pl.Int64,
    "thread_inst_executed": pl.Int64,
    "thread_inst_executed_true": pl.Int64,  # predicated on: the lanes that did the work
    "l2_sectors_global": pl.Int64,
    "l2_sectors_global_ideal": pl.Int64,
    "l2_sectors_global_excess": pl.Int64,
    "l1_requests_global": pl.Int64,
    "shared_wavefronts": pl.Int64,
    "shared_wavefronts_ideal": pl.Int64,
    "shared_wavefronts_excess": pl.Int64,
    "shared_conflicts_nway": pl.Float64,
    "divergent_branches": pl.Int64,
    "address_space": pl.Utf8,  # global | shared | local | constant | generic
    "operation": pl.Utf8,  # load | store | atomic | reduction | barrier | branch ...
}

# The text of a source file a launch's samples point to, where the report embedded it (ncu --import-source yes).
SOURCE_FILE_SCHEMA: ColumnTypes = {
    "launch_key": pl.Int64,
    "path": pl.Utf8,
    "text": pl.Utf8,
}

# Nsight Systems extras: NVTX ranges and memory copies.
NVTX_SCHEMA: ColumnTypes = {
    "name": pl.Utf8,
    "domain": pl.Utf8,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "thread_id": pl.Int64,
}

MEMCPY_SCHEMA: ColumnTypes = {
    "kind": pl.Utf8,  # "HtoD", "DtoH", "DtoD", ...
    "size_bytes": pl.Int64,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "stream_id": pl.Int64,
    "device_id": pl.Int64,
}


def empty_frame(schema: ColumnTypes) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def conform(frame: pl.DataFrame, schema: ColumnTypes) -> pl.DataFrame:
    """Add the missing columns as nulls, cast to the schema's types and order, drop extra columns."""
    columns = [
        (pl.col(name) if name in frame.columns else pl.lit(None)).cast(dtype).alias(name)
        for name, dtype in schema.items()
    ]
    return frame.select(columns)


def compacted(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with each text column in buffers of its own. A text column selected or filtered out of a larger frame
    points into that frame's buffers and keeps all of them alive (a rank's few hundred step ranges, taken from its
    replayed host timeline, held 39 MB of it); writing each string anew copies only what the rows hold."""
    text = [name for name, dtype in frame.schema.items() if dtype == pl.Utf8]
    return frame.with_columns(pl.concat_str([pl.col(name), pl.lit("")]).alias(name) for name in text)


@dataclass
class Device:
    name: str | None = None
    compute_capability: str | None = None  # "9.0"
    sm_count: int | None = None
    sm_clock_hz: float | None = None
    max_warps_per_sm: int | None = None
    extra: dict[str, object] = field(default_factory=dict)  # per-SM limits and other attributes


@dataclass
class ParsedImport:
    """Everything one input file holds, ready for the store."""

    format: str  # "ncu-csv", "ncu-rep", "nsys-sqlite", "warp-trace"
    tool: str | None = None  # "Nsight Compute", "Nsight Systems", "warp_trace.cuh", ...
    tool_version: str | None = None
    device: Device | None = None
    launches: pl.DataFrame = field(default_factory=lambda: empty_frame(LAUNCH_SCHEMA))
    metrics: pl.DataFrame = field(default_factory=lambda: empty_frame(METRIC_SCHEMA))
    warps: pl.DataFrame = field(default_factory=lambda: empty_frame(WARP_SCHEMA))
    nvtx_ranges: pl.DataFrame = field(default_factory=lambda: empty_frame(NVTX_SCHEMA))
    memcpys: pl.DataFrame = field(default_factory=lambda: empty_frame(MEMCPY_SCHEMA))
    regions: pl.DataFrame = field(default_factory=lambda: empty_frame(REGION_SCHEMA))
    source_samples: pl.DataFrame = field(default_factory=lambda: empty_frame(SOURCE_SAMPLE_SCHEMA))
    source_files: pl.DataFrame = field(default_factory=lambda: empty_frame(SOURCE_FILE_SCHEMA))
    warnings: list[str] = field(default_factory=list)

    def conformed(self) -> ParsedImport:
        """The same content with every frame in its schema (what the store expects)."""
        return ParsedImport(
            format=self.format,
            tool=self.tool,
            tool_version=self.tool_version,
            device=self.device,
            launches=conform(self.launches, LAUNCH_SCHEMA),
            metrics=conform(self.metrics, METRIC_SCHEMA),
            warps=conform(self.warps, WARP_SCHEMA),
            nvtx_ranges=conform(self.nvtx_ranges, NVTX_SCHEMA),
            memcpys=conform(self.memcpys, MEMCPY_SCHEMA),
            regions=conform(self.regions, REGION_SCHEMA),
            source_samples=conform(self.source_samples, SOURCE_SAMPLE_SCHEMA),
            source_files=conform(self.source_files, SOURCE_FILE_SCHEMA),
            warnings=list(self.warnings),
        )
