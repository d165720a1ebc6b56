"""A Triton matmul instrumented with Proton's intra-kernel scopes; writes Proton's Chrome trace.

python3 proton_matmul.py OUT_DIR  ->  OUT_DIR/proton_matmul.chrome_trace (+ whatever else Proton writes there)

Scopes: "load" (the two tile loads of each K step), "dot" (the MMA of each K step), "store" (the epilogue), with
"mainloop" around the K loop. Proton times them with the SM clock (cycles) per warp.
"""

from __future__ import annotations

import contextlib
import os
import sys

import torch
import triton
import triton.language as tl
import triton.profiler as proton
import triton.profiler.language as pl

with contextlib.suppress(AttributeError):  # older Proton has no semantic switch
    pl.enable_semantic("triton")


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    grid_n = tl.cdiv(N, BN)
    pid_m = pid // grid_n
    pid_n = pid % grid_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    pl.enter_scope("mainloop")
    for k in range(0, K, BK):
        pl.enter_scope("load")
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        pl.exit_scope("load")
        pl.enter_scope("dot")
        acc = tl.dot(a, b, acc)
        pl.exit_scope("dot")
    pl.exit_scope("mainloop")
    pl.enter_scope("store")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))
    pl.exit_scope("store")


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    M = N = K = 1024
    BM, BN, BK = 128, 128, 64
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    matmul_kernel[grid](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_warps=4, num_stages=1)  # compile, no profiling
    torch.cuda.synchronize()
    base = os.path.join(out_dir, "proton_matmul")
    try:
        mode = proton.mode.Default(buffer_size=1 << 20)
    except Exception as exc:  # noqa: BLE001 - older Proton: default mode
        print("proton.mode.Default(buffer_size=...) unavailable:", exc)
        mode = None
    kwargs = {"backend": "instrumentation", "data": "trace"}
    if mode is not None:
        kwargs["mode"] = mode
    try:
        proton.start(base, **kwargs)
    except TypeError as exc:
        print("proton.start with data='trace' failed:", exc)
        kwargs.pop("data")
        proton.start(base, **kwargs)
    matmul_kernel[grid](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_warps=4, num_stages=1)
    torch.cuda.synchronize()
    proton.finalize()
    torch.testing.assert_close(c.float(), (a.float() @ b.float()).half().float(), atol=0.5, rtol=0.02)
    print("grid", grid, "num_warps 4; outputs:", sorted(os.listdir(out_dir)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
