"""A benchmark as people write one, traced without ProfilerStep: the profiler is started before the model exists,
so the trace holds the process's one-time start-up (the caching allocator's first cudaMalloc calls, cuDNN and
cuBLAS handle creation, each kernel's module loaded lazily on its first launch) and one warm-up step, then the
measured steps, each ended by torch.cuda.synchronize().

    python3 startup.py time OUTDIR     # unprofiled, fresh process: warm-up and measured steps by CUDA events
    python3 startup.py trace OUTDIR [NAME]  # fresh process: the same run under torch.profiler, NAME.pt.trace.json
    python3 startup.py hog SECONDS     # another process's work on the same GPU: large matmuls for SECONDS

`make_startup.sh` also traces the run a second time with a `hog` process beside it (`benchmark_shared_gpu`): the
GPU time-slices between the two processes, so the traced process's queued kernels wait while the other's run,
work its trace does not hold.
"""

from __future__ import annotations

import csv
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

WARMUP_STEPS = 1
MEASURED_STEPS = 6
BATCH = 64


class Net(nn.Module):
    """A small convolutional classifier (convolutions, BatchNorm, ReLU, a linear head): cuDNN and cuBLAS both."""

    def __init__(self) -> None:
        super().__init__()
        self.convs = nn.ModuleList(
            [nn.Conv2d(3, 64, 3, padding=1)] + [nn.Conv2d(64, 64, 3, padding=1) for _ in range(5)]
        )
        self.norms = nn.ModuleList([nn.BatchNorm2d(64) for _ in range(6)])
        self.head = nn.Linear(64, 100)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = F.relu(norm(conv(x)))
        return self.head(x.mean(dim=(2, 3)))


def run(timings: list[tuple[str, int, float]] | None) -> None:
    """Build the model on the GPU, one warm-up step, then the measured steps (each synchronized)."""
    model = Net().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(BATCH, 3, 64, 64, device="cuda")
    labels = torch.randint(0, 100, (BATCH,), device="cuda")

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()

    for phase, count in (("warmup", WARMUP_STEPS), ("measured", MEASURED_STEPS)):
        for index in range(count):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            torch.cuda.synchronize()
            if timings is not None:
                timings.append((phase, index, start.elapsed_time(end)))


def main() -> None:
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "hog":
        a = torch.randn(8192, 8192, device="cuda")
        deadline = time.perf_counter() + float(out)
        while time.perf_counter() < deadline:
            for _ in range(20):
                a = torch.tanh(a @ a)
            torch.cuda.synchronize()
        return
    os.makedirs(out, exist_ok=True)
    if mode == "time":
        timings: list[tuple[str, int, float]] = []
        began = time.perf_counter()
        run(timings)
        with open(os.path.join(out, "step_timings.csv"), "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["phase", "step_index", "step_ms"])
            writer.writerows((p, i, f"{ms:.4f}") for p, i, ms in timings)
        print(f"time ok: {time.perf_counter() - began:.2f} s in all, {timings}")
        return
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run(None)
    name = sys.argv[3] if len(sys.argv) > 3 else "benchmark_startup"
    prof.export_chrome_trace(os.path.join(out, f"{name}.pt.trace.json"))  # make_startup.sh gzips it


if __name__ == "__main__":
    main()
