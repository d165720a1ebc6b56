"""What a CUDA (or HIP) API call does to the GPU's queue: the one home of the call names the step analysis knows.

A launch call enqueues work and returns (the host runs ahead of the GPU); a synchronizing call blocks the host
until the GPU has drained what it waits for (CUDA Runtime API, "API synchronization behavior": cudaMemcpy, and
cudaMemcpyAsync from or to pageable host memory, which the driver stages through a pinned buffer, return only
once the copy is done or staged; cudaFree synchronizes the device); a wait call makes a stream wait on an event
recorded on another stream, on the GPU. Nsight Systems suffixes versions (`cudaLaunchKernel_v7000`) and
per-thread streams (`_ptsz`, `_ptds`); these are removed before the name is looked up.
"""

from __future__ import annotations

import polars as pl

LAUNCH, SYNC, WAIT, OTHER = "launch", "sync", "wait", "other"

LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cudaLaunchCooperativeKernelMultiDevice",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuLaunchCooperativeKernel",
        "cudaGraphLaunch",
        "cuGraphLaunch",
        "cudaMemcpyAsync",
        "cudaMemcpy2DAsync",
        "cudaMemcpy3DAsync",
        "cudaMemcpyPeerAsync",
        "cudaMemsetAsync",
        "cudaMemset2DAsync",
        "cuMemcpyAsync",
        "cuMemcpyHtoDAsync",
        "cuMemcpyDtoHAsync",
        "cuMemcpyDtoDAsync",
        "cuMemsetD8Async",
        "cuMemsetD32Async",
        "cudaEventRecord",
        "cudaEventRecordWithFlags",
        "cuEventRecord",
        "cuEventRecordWithFlags",
        # HIP (ROCm's Kineto traces), the same semantics under AMD's names
        "hipLaunchKernel",
        "hipExtLaunchKernel",
        "hipModuleLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipLaunchCooperativeKernel",
        "hipGraphLaunch",
        "hipMemcpyAsync",
        "hipMemcpy2DAsync",
        "hipMemsetAsync",
        "hipEventRecord",
    }
)
SYNC_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaThreadSynchronize",
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cuEventSynchronize",
        "cudaMemcpy",
        "cudaMemcpy2D",
        "cudaMemcpy3D",
        "cudaMemcpyToSymbol",
        "cudaMemcpyFromSymbol",
        "cudaMemcpyPeer",
        "cudaMemset",
        "cuMemcpy",
        "cuMemcpyHtoD",
        "cuMemcpyDtoH",
        "cuMemcpyDtoD",
        "cudaFree",
        "cudaFreeHost",
        "cuMemFree",
        "hipDeviceSynchronize",
        "hipStreamSynchronize",
        "hipEventSynchronize",
        "hipMemcpy",
        "hipMemcpyWithStream",  # HIP: returns once the copy is done
        "hipMemset",
        "hipFree",
    }
)
# launch calls that enqueue a marker, not work: no profiler records a GPU activity for them (a launch without one
# is otherwise a dropped event)
EVENT_RECORD_CALLS = frozenset(
    {"cudaEventRecord", "cudaEventRecordWithFlags", "cuEventRecord", "cuEventRecordWithFlags", "hipEventRecord"}
)
WAIT_CALLS = frozenset({"cudaStreamWaitEvent", "cuStreamWaitEvent", "hipStreamWaitEvent"})
GRAPH_LAUNCH_CALLS = frozenset({"cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch"})
# One-time start-up: allocations (the caching allocator growing), module loading, context, stream and handle
# creation (cuBLAS and cuDNN handles create streams, events and workspaces through these), graph instantiation.
STARTUP_CALLS = frozenset(
    {
        "cudaMalloc",
        "cudaMallocHost",
        "cudaHostAlloc",
        "cudaMallocManaged",
        "cudaMallocPitch",
        "cudaMalloc3D",
        "cudaHostRegister",
        "cudaStreamCreate",
        "cudaStreamCreateWithFlags",
        "cudaStreamCreateWithPriority",
        "cudaEventCreate",
        "cudaEventCreateWithFlags",
        "cudaGraphInstantiate",
        "cudaGraphInstantiateWithFlags",
        "cuMemAlloc",
        "cuMemAllocHost",
        "cuMemHostAlloc",
        "cuMemCreate",
        "cuMemMap",
        "cuMemAddressReserve",
        "cuModuleLoad",
        "cuModuleLoadData",
        "cuModuleLoadDataEx",
        "cuModuleLoadFatBinary",
        "cuModuleGetFunction",
        "cuLibraryLoadData",
        "cuLibraryLoadFromFile",
        "cuCtxCreate",
        "cuDevicePrimaryCtxRetain",
        "cuStreamCreate",
        "cuGraphInstantiate",
    }
)
# A launch or other non-blocking call this slow did one-time work: the driver loading a kernel's module on its first
# use (CUDA's lazy loading, the default since CUDA 12.2) or initializing the context on the first call; in steady
# state such calls take microseconds, profiled tens of them. An operator's first call this slow, and this many
# times slower than every later call of it, did one-time work too (cuDNN and cuBLAS handles, their libraries loaded).
SLOW_CALL_NS = 1_000_000
FIRST_CALL_SLOWER = 10
_SUFFIX = r"(_v\d+)?(_ptsz|_ptds)?(_v\d+)?$"


def base_name(name: pl.Expr) -> pl.Expr:
    """The API name without Nsight Systems' version and per-thread-stream suffixes."""
    return name.str.replace(_SUFFIX, "")


def call_class(calls: pl.DataFrame, gpu: pl.DataFrame) -> pl.DataFrame:
    """`calls` with `base` (the plain API name), `call_class` (launch, sync, wait, other) and `pageable_copy`. An
    async copy whose GPU copy is pageable is a sync: the host waits while the driver stages it."""
    pageable = gpu.filter(pl.col("pageable").fill_null(False) & pl.col("correlation_id").is_not_null())
    pageable_ids = pageable["correlation_id"].unique()
    base = base_name(pl.col("name"))
    return calls.with_columns(
        base=base, pageable_copy=pl.col("correlation_id").is_in(pageable_ids.implode()).fill_null(False)
    ).with_columns(
        call_class=pl.when(pl.col("base").is_in(list(SYNC_CALLS)) | pl.col("pageable_copy"))
        .then(pl.lit(SYNC))
        .when(pl.col("base").is_in(list(WAIT_CALLS)))
        .then(pl.lit(WAIT))
        .when(pl.col("base").is_in(list(LAUNCH_CALLS)))
        .then(pl.lit(LAUNCH))
        .otherwise(pl.lit(OTHER))
    )
