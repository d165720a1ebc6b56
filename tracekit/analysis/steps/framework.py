"""Whether a trace is of a PyTorch program: what decides the advice's words (a DataLoader, torch.compile and
pin_memory mean nothing to a CUDA C program) and whether a repeating pattern of kernels may be taken for steps (a
training or inference loop; a CUDA program's streams repeat one kernel over chunks of one run, which are no steps)."""

from __future__ import annotations

import polars as pl

from tracekit.host_events import KERNEL, HostEvents

# ATen's operators and the profiler's step marks on the host; ATen's and c10's kernels on the GPU (a trace of the
# GPU alone, such as an nsys export of a PyTorch program without its NVTX ranges, still names them). Not CUTLASS's:
# cuBLAS names its kernels after it and CUDA programs call both (a CUTLASS benchmark's GEMMs are no PyTorch loop)
_HOST_MARK = r"^(aten::|ProfilerStep#|autograd::|Optimizer\.)"
_KERNEL_MARK = r"(at::native|at::cuda|c10::|pytorch_flash|cudnn)"


def is_pytorch(events: HostEvents) -> bool:
    if events.ranges.height and events.ranges.select(pl.col("name").str.contains(_HOST_MARK).any()).item():
        return True
    kernels = events.gpu.filter(pl.col("kind") == KERNEL)["name"].drop_nulls()
    return bool(kernels.len() and kernels.str.contains(_KERNEL_MARK).any())
