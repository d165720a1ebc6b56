"""A trace's whole timeline as the step analysis reads it: every GPU activity, every CUDA API call, and the CPU
ranges (operators, annotations) around them, as polars frames.

The launch tables keep kernels for the per-launch engine; a step is about what happened between them too: the
copies and sets, the host thread's launch and sync calls, the operator that launched each kernel. Readers that can
see the host side (Kineto, Nsight Systems) fill a `HostEvents`; `tracekit.analysis.steps` reads it. Times in ns on
the trace's own clock; columns a source cannot give stay null.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from tracekit.parsed import ColumnTypes, conform, empty_frame

KERNEL, MEMCPY, MEMSET = "kernel", "memcpy", "memset"

# One row per GPU activity (kernel, copy or set), in start order.
GPU_OP_SCHEMA: ColumnTypes = {
    "kind": pl.Utf8,  # kernel | memcpy | memset
    "name": pl.Utf8,  # the kernel's name, or the profiler's name of the copy ("Memcpy HtoD (Pageable -> Device)")
    "device_id": pl.Int64,
    "stream_id": pl.Int64,
    "correlation_id": pl.Int64,  # the launching API call's id (a CUDA graph's kernels share their cudaGraphLaunch's)
    "graph_id": pl.Int64,  # the CUDA graph the kernel was replayed from, where the profiler says so
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "size_bytes": pl.Int64,  # copies and sets
    "copy_kind": pl.Utf8,  # HtoD, DtoH, DtoD, ... (copies)
    "pageable": pl.Boolean,  # a copy from or to pageable host memory (synchronous for the host)
    "operator": pl.Utf8,  # the outermost CPU operator (ATen op) open on the launching thread at the launch call
    "annotation_path": pl.Utf8,  # the user annotations (record_function, NVTX) open there, outermost first
    # a collective's metadata, as the profiler wrote it on the kernel (Kineto: NCCL kernels), null elsewhere
    "collective": pl.Utf8,  # allreduce, broadcast, allgather, ...
    "collective_in_elements": pl.Int64,  # elements of the input message (In msg nelems)
    "collective_out_elements": pl.Int64,
    "collective_dtype": pl.Utf8,  # PyTorch's name of the element type (Float, BFloat16, Long, ...)
    "process_group_name": pl.Utf8,  # "0"
    "process_group_description": pl.Utf8,  # "default_pg"
    "process_group_ranks": pl.Utf8,  # "[0, 1]", as written
    "group_size": pl.Int64,
}

# One row per CUDA runtime/driver API call on a CPU thread.
CALL_SCHEMA: ColumnTypes = {
    "name": pl.Utf8,  # cudaLaunchKernel, cudaStreamSynchronize, cudaMemcpyAsync, cudaGraphLaunch, ...
    "thread": pl.Int64,  # process and thread, one number per CPU thread
    "correlation_id": pl.Int64,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
}

# One row per CPU range: an operator (cpu_op), a user annotation (record_function, ProfilerStep#N) or an NVTX range.
RANGE_SCHEMA: ColumnTypes = {
    "name": pl.Utf8,
    "domain": pl.Utf8,  # cpu_op | user_annotation | nvtx:<domain> | python_function | memory (an instant)
    "thread": pl.Int64,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
}

# One row per counter of a kernel the CUPTI range profiler measured (Kineto's `cuda_profiler_range` events, one
# per kernel, its counters in `args`): long, since the metrics are whatever the profiler was asked for. The range's
# times are the profiler's, not the kernel's: the range profiler replays each kernel to count it, and Kineto lays
# the ranges out one after the other over the profiling window (HTA's A100 trace: 77 ranges of exactly 121.431 ms).
COUNTER_SCHEMA: ColumnTypes = {
    "kernel_index": pl.Int64,  # the range's position among the trace's ranges, in time order (0, 1, ...)
    "name": pl.Utf8,  # the kernel's name ("__missing__" where the profiler had none)
    "device_id": pl.Int64,
    "start_ns": pl.Int64,  # the range, as written: not the kernel's run
    "end_ns": pl.Int64,
    "metric": pl.Utf8,  # smsp__sass_thread_inst_executed_op_ffma_pred_on.sum, dram__bytes_read.sum, ...
    "value": pl.Float64,
}

TORCH_PROFILER, NSYS = "torch.profiler", "nsys"
RECORDERS = {"kineto": TORCH_PROFILER, "nsys-sqlite": NSYS}  # by the format of the file read

OPERATOR_DOMAIN = "cpu_op"
ANNOTATION_DOMAIN = "user_annotation"
PYTHON_DOMAIN = "python_function"  # a Python frame with_stack recorded
MEMORY_DOMAIN = "memory"  # an allocation or free profile_memory recorded


@dataclass(frozen=True)
class HostEvents:
    """One trace's GPU activities, API calls and CPU ranges (one rank of a job: `rank` where the trace says)."""

    gpu: pl.DataFrame = field(default_factory=lambda: empty_frame(GPU_OP_SCHEMA))
    calls: pl.DataFrame = field(default_factory=lambda: empty_frame(CALL_SCHEMA))
    ranges: pl.DataFrame = field(default_factory=lambda: empty_frame(RANGE_SCHEMA))
    rank: int | None = None
    device_name: str | None = None
    source: str | None = None  # the file or import it was read from, for messages
    profiler_options: tuple[str, ...] = ()  # what the profiler recorded beyond the timeline (record_shapes, ...)
    recorded_by: str | None = None  # the profiler that wrote it (RECORDERS' values), whose own cost is in the trace
    counters: pl.DataFrame = field(default_factory=lambda: empty_frame(COUNTER_SCHEMA))  # CUPTI range profiler

    def conformed(self) -> HostEvents:
        """The same events with every frame in its schema, sorted by start."""
        return HostEvents(
            gpu=sorted_by(conform(self.gpu, GPU_OP_SCHEMA), "start_ns", "end_ns"),
            calls=sorted_by(conform(self.calls, CALL_SCHEMA), "start_ns"),
            ranges=sorted_by(conform(self.ranges, RANGE_SCHEMA), "start_ns"),
            rank=self.rank,
            device_name=self.device_name,
            source=self.source,
            profiler_options=self.profiler_options,
            recorded_by=self.recorded_by,
            counters=conform(self.counters, COUNTER_SCHEMA).sort("kernel_index", "metric"),
        )


def sorted_by(frame: pl.DataFrame, first: str, then: str | None = None) -> pl.DataFrame:
    """`frame` sorted by `first` (then `then`); a frame already in that order (a profiler writes most of its
    events in time order) is returned as it is: a sort copies every column of a million-row frame."""
    keys = (first,) if then is None else (first, then)
    if frame.height < 2 or any(frame[key].null_count() for key in keys):
        return frame.sort(*keys)
    if then is None:
        ordered = frame[first].is_sorted()
    else:
        step, tie = pl.col(first).diff(), pl.col(then).diff()
        ordered = frame.select(((step > 0) | ((step == 0) & (tie >= 0))).fill_null(True).all()).item()
    return frame if ordered else frame.sort(*keys)
