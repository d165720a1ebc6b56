"""Four launches of one Proton-instrumented Triton kernel in one profiling session; writes one Chrome trace.

python3 proton_repeat.py OUT_DIR  ->  OUT_DIR/proton_repeat.chrome_trace

Proton writes every launch of a session into one file with the same "<kernel> Core<sm> CTA<cta>" names, so a
reader must tell the launches apart itself. The launches differ in size so that each one's scope count is known
from its shape alone: CTAs x 4 warps x (2 K steps + 2) scopes ("load" and "dot" per K step, "mainloop", "store").
"""

from __future__ import annotations

import os
import sys

import torch
import triton
import triton.profiler as proton
from proton_matmul import matmul_kernel

SIZES = (512, 512, 256, 384)  # M = N = K of each launch, in launch order
BM, BN, BK, WARPS = 128, 128, 64, 4


def launch(size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple[int]]:
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(size, BM) * triton.cdiv(size, BN),)
    matmul_kernel[grid](a, b, c, size, size, size, BM=BM, BN=BN, BK=BK, num_warps=WARPS, num_stages=1)
    return a, b, c, grid


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for size in SIZES:  # compile (and warm) outside the profiled session
        launch(size)
    torch.cuda.synchronize()
    proton.start(
        os.path.join(out_dir, "proton_repeat"),
        backend="instrumentation",
        data="trace",
        mode=proton.mode.Default(buffer_size=1 << 20),
    )
    results = []
    for size in SIZES:
        results.append(launch(size))
        torch.cuda.synchronize()
    proton.finalize()
    for size, (a, b, c, grid) in zip(SIZES, results, strict=True):
        torch.testing.assert_close(c.float(), (a.float() @ b.float()).half().float(), atol=0.5, rtol=0.02)
        steps = size // BK
        print(
            f"launch M=N=K={size}: grid {grid}, {WARPS} warps, {steps} K steps, "
            f"expected scopes {grid[0] * WARPS * (2 * steps + 2)}"
        )


if __name__ == "__main__":
    main(sys.argv[1])
