"""What to try first for a step: each idle cause with the fix the literature gives for it, and the step time it
would save at most (the idle it explains: the GPU cannot finish sooner than its busy time allows)."""

from __future__ import annotations

import statistics
from dataclasses import replace

import polars as pl

from tracekit.analysis.steps.types import (
    CAUSES,
    HOST_WORK,
    KERNEL_WAIT,
    LAUNCH_BOUND,
    SYNCHRONIZATION,
    WAITING,
    IdleCause,
    Step,
    Suggestion,
)
from tracekit.host_events import MEMCPY

# PyTorch's performance tuning guide: pinned memory and non_blocking copies, avoiding unnecessary
# synchronizations (.item(), .cpu(), printing tensors), CUDA graphs for launch-bound steps, more DataLoader
# workers for a host-bound input pipeline.
FIXES = {
    SYNCHRONIZATION: "remove the synchronization (keep values on the GPU instead of .item()/.cpu(), copy from pinned "
    "memory with non_blocking=True), so the host queues the next work while the GPU runs",
    LAUNCH_BOUND: "launch fewer, larger kernels: replay the step from a CUDA graph (torch.cuda.graphs, "
    "torch.compile mode='reduce-overhead'), fuse small operators, or run a larger batch per launch",
    KERNEL_WAIT: "run fewer kernels: fuse operators (torch.compile) or run a larger batch per launch; a CUDA graph "
    "shortens the GPU's gap between the kernels it replays",
    HOST_WORK: "overlap the host's work with the GPU's: load data in DataLoader workers with pin_memory and "
    "prefetching, move Python work out of the step",
    WAITING: "check the cross-stream dependency (cudaStreamWaitEvent): start the producing work earlier or on the "
    "same stream",
}


# The same fixes in a CUDA program's terms (CUDA C++ Best Practices Guide: asynchronous transfers from pinned memory,
# overlapping transfers and kernels on streams, CUDA graphs for sequences of short kernels).
CUDA_FIXES = {
    SYNCHRONIZATION: "remove the synchronization (cudaDeviceSynchronize, cudaStreamSynchronize, a blocking "
    "cudaMemcpy): wait on events only where a result is needed, and copy from pinned memory with cudaMemcpyAsync",
    LAUNCH_BOUND: "launch fewer, larger kernels: capture the sequence in a CUDA graph (stream capture, "
    "cudaGraphLaunch), fuse short kernels, or give each launch more work",
    KERNEL_WAIT: "run fewer kernels: fuse short kernels or replay them from a CUDA graph, which shortens the GPU's "
    "gap between the kernels it replays",
    HOST_WORK: "overlap the host's work with the GPU's: queue the GPU's work asynchronously on streams and do the "
    "host's part while it runs",
    WAITING: "check the cross-stream dependency (cudaStreamWaitEvent): record the event earlier or run the two on "
    "one stream",
}
CUDA_PAGEABLE_FIX = (
    "copy from pinned host memory (cudaMallocHost or cudaHostRegister) with cudaMemcpyAsync: the driver stages a "
    "pageable copy through its own pinned buffer, at a fraction of the link's rate, and the host waits for it"
)


# A pinned copy this large moves at the host link's rate (smaller ones are dominated by their fixed latency).
PINNED_REFERENCE_BYTES = 1 << 20
PAGEABLE_FIX = (
    "copy from pinned host memory (pin_memory=True in the DataLoader, or tensor.pin_memory()) with "
    "non_blocking=True: the driver stages a pageable copy through its own pinned buffer, at a fraction of the "
    "link's rate, and the host waits for it"
)


def pinned_rate(gpu: pl.DataFrame) -> float | None:
    """Bytes per ns of the trace's fastest copy of pinned host memory of PINNED_REFERENCE_BYTES or more (what the
    link reaches on this machine); None without one."""
    pinned = gpu.filter(
        (pl.col("kind") == MEMCPY)
        & ~pl.col("pageable").fill_null(False)
        & pl.col("copy_kind").is_in(["HtoD", "DtoH"])
        & (pl.col("size_bytes") >= PINNED_REFERENCE_BYTES)
        & (pl.col("end_ns") > pl.col("start_ns"))
    )
    if pinned.height == 0:
        return None
    return float(pinned.select((pl.col("size_bytes") / (pl.col("end_ns") - pl.col("start_ns"))).max()).item())


def copy_suggestions(step: Step, pinned_bytes_per_ns: float | None, pytorch: bool = True) -> list[Suggestion]:
    """Copies of pageable host memory: their own busy time that pinned memory shortens, and the synchronization
    idle the host's wait on them cost (`pageable_sync_idle_ns`: a pinned, non-blocking copy returns at once). With
    a pinned copy in the trace to go by, the busy part saved is the copies' time less what the same bytes take at
    its rate (the point and its low end); without one, up to the copies' time."""
    if step.pageable_copy_ns <= 0:
        return []
    waited = step.pageable_sync_idle_ns
    high = step.pageable_copy_ns + waited
    fix = PAGEABLE_FIX if pytorch else CUDA_PAGEABLE_FIX
    if not pinned_bytes_per_ns:
        return [Suggestion("copy", "pageable copies", fix, high, waited, high)]
    point = waited + max(0, int(step.pageable_copy_ns - step.pageable_copy_bytes / pinned_bytes_per_ns))
    return [Suggestion("copy", "pageable copies", fix, point, point, high)]


def profiler_warning(options: tuple[str, ...]) -> str | None:
    """What the profiler's per-operator options (record_shapes, with_stack, ...) may add to the traced step, said
    whenever one was on: its host work on every operator slows the host, so a step can run 39% longer traced
    without any cause in it looking host-bound."""
    if not options:
        return None
    return (
        f"the trace was recorded with {', '.join(options)}: the profiler's own host work per operator slows the "
        "host, so part of the launch-bound and host-work idle, and of the step, may not exist unprofiled (time the "
        "step with CUDA events to compare)"
    )


# A step whose kernels all replay from CUDA graphs already has what a graph gives.
REPLAYED_FIXES = FIXES | {
    LAUNCH_BOUND: "launch fewer, larger kernels: fuse small operators or run a larger batch per launch (the kernels "
    "already replay from a CUDA graph)",
    KERNEL_WAIT: "run fewer kernels: fuse operators or run a larger batch per launch (the kernels already replay "
    "from a CUDA graph)",
}


# A saving under this share of the step, and under how much the recorded steps vary, cannot be told from noise.
MIN_STEP_SHARE = 0.01


def worth_trying(found: list[Suggestion], step: Step, spread_ns: int | None) -> list[Suggestion]:
    """The suggestions that could save at least MIN_STEP_SHARE of the step or more than the recorded steps' spans
    vary (`spread_ns`, longest less shortest): a GPU-bound step varies by 0.1-0.3%, so a sync worth 0.7% still shows.
    One step (`spread_ns` None) says nothing of how steps vary: the share alone decides."""
    least = MIN_STEP_SHARE * step.span_ns
    return [s for s in found if s.saves_high_ns >= (least if spread_ns is None else min(least, spread_ns))]


def idle_suggestions(step: Step, pytorch: bool = True) -> list[Suggestion]:
    """Every named cause of the step's idle time with its fix (in PyTorch's terms or a CUDA program's), largest
    first."""
    fixes = REPLAYED_FIXES if step.kernels and step.graph_kernels == step.kernels else FIXES
    if not pytorch:
        fixes = CUDA_FIXES
    found = []
    for cause in step.causes:
        # the pageable copies' share of the synchronization is theirs (copy_suggestions), with pinned memory's fix
        idle = cause.idle_ns - (step.pageable_sync_idle_ns if cause.cause == SYNCHRONIZATION else 0)
        if cause.cause in fixes and idle > 0:
            found.append(Suggestion("idle", cause.cause, fixes[cause.cause], idle, 0, idle))
    return found


def typical_step(steps: tuple[Step, ...] | list[Step], representative: Step) -> Step:
    """The representative step with each idle cause and the pageable copies' figures at their median over the
    steps: what a fix saves a step, typically. One odd step, such as a trace's first, whose leading gap follows a
    sync the profiler's warm-up did not record, moves a cause's median no further than the next step's value."""

    def median(values: list[int]) -> int:
        return int(statistics.median(values))

    causes = []
    for cause in CAUSES:
        amounts = [next((c.idle_ns for c in s.causes if c.cause == cause), 0) for s in steps]
        mine = next((c for c in representative.causes if c.cause == cause), None)
        causes.append(
            replace(mine, idle_ns=median(amounts)) if mine is not None else IdleCause(cause, median(amounts), 0, ())
        )
    return replace(
        representative,
        causes=tuple(sorted(causes, key=lambda c: -c.idle_ns)),
        pageable_copy_ns=median([s.pageable_copy_ns for s in steps]),
        pageable_copy_bytes=median([s.pageable_copy_bytes for s in steps]),
        pageable_sync_idle_ns=median([s.pageable_sync_idle_ns for s in steps]),
    )
