"""One pass of ~30 PyTorch ops whose kernels CUPTI and Nsight Compute spell differently (issue 29).

CUB's scans, sorts and selects (`DeviceScanKernel<...Policy...>`, `DeviceRadixSort...`), ATen kernels named by a
lambda (`elementwise_kernel<..., gpu_kernel_impl_nocast<...{lambda(float)#1}...>>`), index kernels, reductions,
normalizations. `kineto OUT.json` records the pass with the PyTorch profiler; `ncu` runs the same pass between
cudaProfilerStart/Stop for Nsight Compute, each op in an NVTX range of its name (as `record_function` in Kineto).
Five warm-up passes first, outside both recordings, so both see the same kernels.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch
import torch.nn.functional as F  # noqa: N812


def ops() -> list[tuple[str, Callable[[], object]]]:
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(1 << 22, device="cuda", generator=g)
    xi = torch.randint(0, 1000, (1 << 20,), device="cuda", generator=g)
    m = torch.randn(2048, 1024, device="cuda", generator=g)
    h = torch.randn(4096, 1024, device="cuda", dtype=torch.float16, generator=g)
    idx = torch.randint(0, 2048, (4096,), device="cuda", generator=g)
    emb = torch.randn(32000, 512, device="cuda", generator=g)
    tok = torch.randint(0, 32000, (8192,), device="cuda", generator=g)
    ln = torch.nn.LayerNorm(1024, device="cuda", dtype=torch.float16)
    return [
        ("cumsum_float", lambda: torch.cumsum(x, 0)),  # CUB DeviceScan (init + scan kernels)
        ("cumsum_int", lambda: torch.cumsum(xi, 0)),
        ("sort", lambda: torch.sort(x)),  # CUB radix sort (onesweep / histogram kernels)
        ("sort_int", lambda: torch.sort(xi)),
        ("unique", lambda: torch.unique(xi)),
        ("nonzero", lambda: torch.nonzero(x > 0)),  # CUB select
        ("argsort_rows", lambda: torch.argsort(m, dim=1)),  # segmented sort
        ("topk", lambda: torch.topk(x, 64)),
        ("where", lambda: torch.where(x > 0, x, -x)),
        ("clamp_strided", lambda: m.t().clamp(-1, 1)),  # non-contiguous: elementwise_kernel with a lambda
        ("to_half_strided", lambda: m.t().half()),
        ("add_vectorized", lambda: x + 1.0),
        ("mul_strided", lambda: m[:, ::2] * 3.0),
        ("gelu", lambda: F.gelu(x)),
        ("sigmoid_half", lambda: torch.sigmoid(h)),
        ("pow", lambda: x.pow(3)),
        ("sum_rows", lambda: m.sum(1)),  # reduce_kernel with a lambda functor
        ("mean", lambda: x.mean()),
        ("amax", lambda: m.amax(0)),
        ("var", lambda: torch.var(m, 1)),
        ("softmax", lambda: torch.softmax(m, 1)),
        ("log_softmax_half", lambda: torch.log_softmax(h, 1)),
        ("layer_norm", lambda: ln(h)),
        ("index_select", lambda: m.index_select(0, idx)),
        ("gather", lambda: torch.gather(m, 0, idx[:2048, None].expand(2048, 1024))),
        ("scatter_add", lambda: torch.zeros(2048, device="cuda").scatter_add_(0, idx, torch.ones(4096, device="cuda"))),
        ("embedding", lambda: F.embedding(tok, emb)),
        ("index_put", lambda: m.index_put((idx[:2048],), torch.ones(2048, 1024, device="cuda"), accumulate=True)),
        ("cat", lambda: torch.cat([m, m, m], 1)),
        ("dropout", lambda: F.dropout(m, 0.1, training=True)),
        ("masked_fill", lambda: m.masked_fill(m > 0.5, 0.0)),
        ("bincount", lambda: torch.bincount(xi)),
    ]


def one_pass(todo: list[tuple[str, Callable[[], object]]], annotate: Callable[[str], object]) -> None:
    for name, op in todo:
        with annotate(name):  # type: ignore[attr-defined]
            op()
    torch.cuda.synchronize()


class _Nvtx:
    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        torch.cuda.nvtx.range_push(self.name)

    def __exit__(self, *exc: object) -> None:
        torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    mode = sys.argv[1]
    todo = ops()
    for _ in range(5):
        one_pass(todo, _Nvtx)
    if mode == "kineto":
        from torch.profiler import ProfilerActivity, profile, record_function

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            one_pass(todo, record_function)
        prof.export_chrome_trace(sys.argv[2])
    elif mode == "ncu":
        torch.cuda.cudart().cudaProfilerStart()
        one_pass(todo, _Nvtx)
        torch.cuda.cudart().cudaProfilerStop()
    else:
        raise SystemExit(f"unknown mode {mode}")
