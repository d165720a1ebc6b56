"""What to try first for a step: each idle cause with the fix the literature gives for it, and the step time it
would save at most (the idle it explains: the GPU cannot finish sooner than its busy time allows)."""

from __future__ import annotations

from tracekit.analysis.steps.types import (
    HOST_WORK,
    LAUNCH_BOUND,
    SYNCHRONIZATION,
    WAITING,
    Step,
    Suggestion,
)

# PyTorch's performance tuning guide: pinned memory and non_blocking copies, avoiding unnecessary
# synchronizations (.item(), .cpu(), printing tensors), CUDA graphs for launch-bound steps, more DataLoader
# workers for a host-bound input pipeline.
FIXES = {
    SYNCHRONIZATION: "remove the synchronization (keep values on the GPU instead of .item()/.cpu(), copy from pinned "
    "memory with non_blocking=True), so the host queues the next work while the GPU runs",
    LAUNCH_BOUND: "launch fewer, larger kernels: replay the step from a CUDA graph (torch.cuda.graphs, "
    "torch.compile mode='reduce-overhead'), fuse small operators, or run a larger batch per launch",
    HOST_WORK: "overlap the host's work with the GPU's: load data in DataLoader workers with pin_memory and "
    "prefetching, move Python work out of the step",
    WAITING: "check the cross-stream dependency (cudaStreamWaitEvent): start the producing work earlier or on the "
    "same stream",
}


def idle_suggestions(step: Step) -> list[Suggestion]:
    """Every named cause of the step's idle time with its fix, largest first."""
    found = []
    for cause in step.causes:
        if cause.cause in FIXES and cause.idle_ns > 0:
            found.append(Suggestion("idle", cause.cause, FIXES[cause.cause], cause.idle_ns, 0, cause.idle_ns))
    return found
