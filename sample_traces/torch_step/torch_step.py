"""One step of a small PyTorch block (GEMMs, a softmax, a layer norm, elementwise ops), recorded twice.

`python3 torch_step.py kineto OUT.pt.trace.json` records the step with torch.profiler and exports its Kineto
Chrome trace; `ncu ... --profile-from-start off --nvtx python3 torch_step.py ncu` profiles the same step, which
the script brackets with cudaProfilerStart/Stop. Each op sits in an NVTX range (ncu) and a record_function of
the same name (Kineto), so both files name the ops alike. Warm-up steps run first, outside both recordings, so
cuBLAS heuristics and the caching allocator are settled and both recordings see the same kernels.
"""

from __future__ import annotations

import contextlib
import sys

import torch
import torch.nn.functional as F

TOKENS, WIDTH, HIDDEN, HEADS = 4096, 1024, 4096, 8


def make() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    cuda = {"device": "cuda", "dtype": torch.float32}
    return {
        "x": torch.randn(TOKENS, WIDTH, **cuda),
        "w_qkv": torch.randn(3 * WIDTH, WIDTH, **cuda) / WIDTH**0.5,
        "w_up": torch.randn(HIDDEN, WIDTH, **cuda) / WIDTH**0.5,
        "w_down": torch.randn(WIDTH, HIDDEN, **cuda) / HIDDEN**0.5,
        "gamma": torch.ones(WIDTH, **cuda),
        "beta": torch.zeros(WIDTH, **cuda),
    }


def step(t: dict[str, torch.Tensor], region) -> torch.Tensor:
    with region("layer_norm"):
        h = F.layer_norm(t["x"], (WIDTH,), t["gamma"], t["beta"])
    with region("qkv_gemm"):
        qkv = h @ t["w_qkv"].T
    q, k, v = qkv.view(TOKENS, 3, HEADS, WIDTH // HEADS).unbind(1)
    q, k, v = (z[:512].transpose(0, 1) for z in (q, k, v))  # 8 heads x 512 tokens x 128
    with region("scores_gemm"):
        scores = q @ k.transpose(1, 2)
    with region("softmax"):
        p = torch.softmax(scores, dim=-1)
    with region("attention_gemm"):
        o = p @ v
    with region("mlp_up_gemm"):
        up = h @ t["w_up"].T
    with region("gelu"):
        up = F.gelu(up)
    with region("mlp_down_gemm"):
        down = up @ t["w_down"].T
    with region("residual_add"):
        out = t["x"] + down
    return out.sum() + o.sum()


@contextlib.contextmanager
def nvtx_region(name: str):
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


def main() -> None:
    mode = sys.argv[1]
    torch.backends.cuda.matmul.allow_tf32 = False
    tensors = make()
    for _ in range(5):
        step(tensors, nvtx_region)
    torch.cuda.synchronize()
    if mode == "ncu":
        torch.cuda.cudart().cudaProfilerStart()
        with nvtx_region("step"):
            step(tensors, nvtx_region)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
    elif mode == "kineto":
        from torch.profiler import ProfilerActivity, profile, record_function

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            with record_function("step"):
                step(tensors, record_function)
            torch.cuda.synchronize()
        prof.export_chrome_trace(sys.argv[2])
    else:
        raise SystemExit(f"unknown mode {mode!r}: kineto OUT.json | ncu")
    print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
