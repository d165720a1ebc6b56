"""The real-kernel tuning set (issue 26): kernels other people wrote, at the launch configurations their users try.

Liger-Kernel's Triton kernels (liger-kernel 0.8.5 from PyPI, carried to the GPU machine as its wheel, not copied
here) are launched through Liger's own forward functions; only the launch configuration Liger would pick
(`calculate_settings` -> BLOCK_SIZE, num_warps) is replaced, the way a user tuning them would. The total work of a
kernel is the same in every configuration. Beside them: cuBLAS/cuBLASLt GEMMs of each tensor data type, SDPA
attention and ATen's elementwise add, sum and copy, for the tensor roofline and for the ceilings real kernels reach.

Modes (run by make_real_kernels.sh):
  time OUT.csv      CUDA-event timings, median of RUNS runs, L2 flushed before each run (a 256 MiB memset)
  ncu [GROUP]       each configuration once between cudaProfilerStart/Stop, in an NVTX range named KERNEL.CONFIG
                    (GROUP: tuning or library)
REAL_SET=tutorials selects Triton's tutorial kernels instead (make_tutorials.sh), REAL_SET=inductor the kernels
TorchInductor generates (inductor_kernels.py, make_inductor.sh), REAL_SET=cub CUB's block primitives (cub_kernels.py,
make_cub.sh).
"""

from __future__ import annotations

import csv
import os
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F  # noqa: N812

RUNS = int(os.environ.get("RUNS", "15"))
ROWS = 16384


@dataclass(frozen=True)
class Config:
    kernel: str  # the kernel family (one Liger op or one library call)
    config: str  # the launch configuration's name
    group: str  # "tuning" (the same kernel at other launch configurations) or "library" (one launch each)
    block_size: int  # Triton BLOCK_SIZE (elements a program handles per step), 0 for library calls
    num_warps: int  # Triton num_warps, 0 for library calls
    work: str  # the problem, the same in every configuration of a kernel
    bytes_compulsory: int
    flops: int
    run: Callable[[], object]


def _patch(module: object, name: str, value: object) -> Callable[[], None]:
    old = getattr(module, name)
    setattr(module, name, value)
    return lambda: setattr(module, name, old)


def _with_settings(module: object, block_size: int, num_warps: int, call: Callable[[], object]) -> Callable[[], object]:
    """Call a Liger forward with the launch configuration replaced (its `calculate_settings` returns ours)."""

    def run() -> object:
        undo = _patch(module, "calculate_settings", lambda n: (block_size, num_warps))
        try:
            return call()
        finally:
            undo()

    return run


def tuning_configs() -> list[Config]:
    import importlib

    import triton

    def liger(name: str) -> object:  # the op's own module (the package namespace re-exports functions by name)
        return importlib.import_module(f"liger_kernel.ops.{name}")

    rms_norm, fused_add_rms_norm, poly_norm, softmax = (
        liger(n) for n in ("rms_norm", "fused_add_rms_norm", "poly_norm", "softmax")
    )
    geglu, swiglu, relu_squared, layer_norm, kl_div = (
        liger(n) for n in ("geglu", "swiglu", "relu_squared", "layer_norm", "kl_div")
    )

    dev = "cuda"
    out: list[Config] = []
    warps = (1, 2, 4, 8, 16, 32)
    bf16 = torch.bfloat16
    hidden = 4096

    x = torch.randn(ROWS, hidden, device=dev, dtype=bf16)
    r = torch.randn(ROWS, hidden, device=dev, dtype=bf16)
    w = torch.randn(hidden, device=dev, dtype=bf16)
    a2 = torch.randn(ROWS, hidden, device=dev, dtype=bf16)
    xf = torch.randn(ROWS, hidden, device=dev, dtype=torch.float32)
    ln_x = torch.randn(8192, 8192, device=dev, dtype=torch.float16)
    ln_w = torch.randn(8192, device=dev, dtype=torch.float16)
    ln_b = torch.randn(8192, device=dev, dtype=torch.float16)
    pw = torch.randn(3, device=dev, dtype=bf16)
    pb = torch.randn(1, device=dev, dtype=bf16)
    row_bytes = ROWS * hidden * 2
    block = triton.next_power_of_2(hidden)

    families: list[tuple[str, object, Callable[[], object], int, str]] = [
        (
            "liger_rms_norm",
            rms_norm,
            lambda: rms_norm.rms_norm_forward(x, w, 1e-6, 0.0, "llama", True),
            2 * row_bytes,
            f"rows {ROWS} x {hidden} bf16, llama casting",
        ),
        (
            "liger_fused_add_rms_norm",
            fused_add_rms_norm,
            lambda: fused_add_rms_norm.fused_add_rms_norm_forward(x, r, w, 1e-6, 0.0, "llama"),
            4 * row_bytes,
            f"rows {ROWS} x {hidden} bf16, residual add",
        ),
        (
            "liger_poly_norm",
            poly_norm,
            lambda: poly_norm.poly_norm_forward(x, pw, pb, 1e-6),
            2 * row_bytes,
            f"rows {ROWS} x {hidden} bf16",
        ),
        ("liger_softmax", softmax, lambda: softmax._softmax_forward(xf), 4 * row_bytes, f"rows {ROWS} x {hidden} fp32"),
        ("liger_geglu", geglu, lambda: geglu.geglu_forward(x, a2), 3 * row_bytes, f"rows {ROWS} x {hidden} bf16, tanh"),
        ("liger_swiglu", swiglu, lambda: swiglu.swiglu_forward(x, a2), 3 * row_bytes, f"rows {ROWS} x {hidden} bf16"),
        (
            "liger_relu_squared",
            relu_squared,
            lambda: relu_squared.relu_squared_forward(x),
            2 * row_bytes,
            f"rows {ROWS} x {hidden} bf16",
        ),
    ]
    for name, module, call, nbytes, work in families:
        for nw in warps:
            out.append(
                Config(
                    name, f"w{nw:02d}", "tuning", block, nw, work, nbytes, 0, _with_settings(module, block, nw, call)
                )
            )
    # Layer norm over rows of 8,192 fp16, one row per program (the held-out case of issue 26).
    for nw in warps:
        out.append(
            Config(
                "liger_layer_norm",
                f"w{nw:02d}",
                "tuning",
                8192,
                nw,
                "rows 8192 x 8192 fp16",
                2 * 8192 * 8192 * 2,
                0,
                _with_settings(layer_norm, 8192, nw, lambda: layer_norm.layer_norm_forward(ln_x, ln_w, ln_b, 1e-5)),
            )
        )
    # KL divergence over a 32,000-word vocabulary: BLOCK_SIZE (elements per loop step) and num_warps both tuned.
    yp = torch.randn(4096, 32000, device=dev).log_softmax(-1)
    yt = torch.randn(4096, 32000, device=dev).softmax(-1)
    for bs, nw in ((16384, 16), (16384, 32), (16384, 4), (8192, 8), (4096, 4), (2048, 4), (1024, 2)):

        def run(bs: int = bs, nw: int = nw) -> object:
            undo1 = _patch(kl_div, "MAX_FUSED_SIZE", bs)
            undo2 = _patch(kl_div, "get_num_warps", lambda _b, nw=nw: nw)
            try:
                return kl_div.kldiv_forward_triton(yp, yt, False, "sum", 1e-10)
            finally:
                undo2()
                undo1()

        out.append(
            Config(
                "liger_kl_div",
                f"b{bs:05d}_w{nw:02d}",
                "tuning",
                bs,
                nw,
                "4096 x 32000 fp32, sum",
                2 * 4096 * 32000 * 4,
                0,
                run,
            )
        )
    return out


def library_configs() -> list[Config]:
    dev = "cuda"
    out: list[Config] = []
    n = 8192
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
        a = torch.randn(n, n, device=dev, dtype=dtype)
        bm = torch.randn(n, n, device=dev, dtype=dtype)
        out.append(
            Config(
                "cublas_gemm",
                name,
                "library",
                0,
                0,
                f"{n}^3 {name}",
                3 * n * n * 2,
                2 * n**3,
                lambda a=a, bm=bm: torch.matmul(a, bm),
            )
        )
    af = torch.randn(n, n, device=dev)
    bf = torch.randn(n, n, device=dev)

    def tf32() -> object:
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return torch.matmul(af, bf)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False

    out.append(Config("cublas_gemm", "tf32", "library", 0, 0, f"{n}^3 tf32", 3 * n * n * 4, 2 * n**3, tf32))
    out.append(
        Config(
            "cublas_gemm",
            "fp32_simt",
            "library",
            0,
            0,
            "4096^3 fp32 (no tf32)",
            3 * 4096 * 4096 * 4,
            2 * 4096**3,
            lambda: torch.matmul(af[:4096, :4096], bf[:4096, :4096]),
        )
    )
    a8 = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
    b8 = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t().contiguous().t()
    one = torch.ones((), device=dev)
    out.append(
        Config(
            "cublaslt_gemm",
            "fp8_e4m3",
            "library",
            0,
            0,
            f"{n}^3 fp8 e4m3 -> bf16",
            2 * n * n + 2 * n * n,
            2 * n**3,
            lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
        )
    )
    ai = torch.randint(-8, 8, (n, n), device=dev, dtype=torch.int8)
    bi = torch.randint(-8, 8, (n, n), device=dev, dtype=torch.int8)
    out.append(
        Config(
            "cublas_gemm",
            "int8",
            "library",
            0,
            0,
            f"{n}^3 int8 -> int32",
            2 * n * n + 4 * n * n,
            2 * n**3,
            lambda: torch._int_mm(ai, bi),
        )
    )
    q = torch.randn(8, 16, 4096, 128, device=dev, dtype=torch.bfloat16)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    attn_flops = 4 * 8 * 16 * 4096 * 4096 * 128
    for backend, label in ((SDPBackend.FLASH_ATTENTION, "flash"), (SDPBackend.CUDNN_ATTENTION, "cudnn")):

        def attn(backend: SDPBackend = backend) -> object:
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v)

        out.append(
            Config(
                "sdpa_attention",
                label,
                "library",
                0,
                0,
                "b8 h16 s4096 d128 bf16, not causal",
                4 * q.numel() * 2,
                attn_flops,
                attn,
            )
        )
    big = 1 << 28
    xa = torch.randn(big, device=dev)
    xb = torch.randn(big, device=dev)
    xc = torch.empty(big, device=dev)
    out.append(
        Config(
            "aten_add",
            "fp32_2p28",
            "library",
            0,
            0,
            "2^28 fp32 a+b",
            3 * big * 4,
            big,
            lambda: torch.add(xa, xb, out=xc),
        )
    )
    out.append(Config("aten_sum", "fp32_2p28", "library", 0, 0, "2^28 fp32 sum", big * 4, big, lambda: xa.sum()))
    out.append(
        Config("aten_copy", "fp32_2p28", "library", 0, 0, "2^28 fp32 copy", 2 * big * 4, 0, lambda: xc.copy_(xa))
    )
    return out


def tutorial_configs() -> list[Config]:
    """Triton's tutorial kernels (triton_tutorials.py) at the configurations their readers try, the tutorial's
    default first."""
    import triton_tutorials as tt

    dev = "cuda"
    out: list[Config] = []
    n = 1 << 26
    xa, xb, xc = (torch.randn(n, device=dev) for _ in range(3))
    for bs, nw in ((1024, 4), (256, 4), (512, 4), (2048, 4), (4096, 4), (1024, 1), (1024, 8), (1024, 16)):
        out.append(
            Config(
                "triton_vector_add",
                f"b{bs:05d}_w{nw:02d}",
                "tuning",
                bs,
                nw,
                "2^26 fp32 a+b",
                3 * n * 4,
                n,
                lambda bs=bs, nw=nw: tt.add(xa, xb, xc, bs, nw),
            )
        )
    sx = torch.randn(65536, 1024, device=dev)
    sy = torch.empty_like(sx)
    for nw in (4, 1, 2, 8, 16, 32):
        out.append(
            Config(
                "triton_fused_softmax",
                f"w{nw:02d}",
                "tuning",
                1024,
                nw,
                "rows 65536 x 1024 fp32, one row per program",
                2 * sx.numel() * 4,
                0,
                lambda nw=nw: tt.softmax(sx, sy, nw),
            )
        )
    m, cols = 4096, 16384
    lx = torch.randn(m, cols, device=dev, dtype=torch.float16)
    lw, lb = torch.randn(cols, device=dev, dtype=torch.float16), torch.randn(cols, device=dev, dtype=torch.float16)
    ly = torch.empty_like(lx)
    mean, rstd = torch.empty(m, device=dev), torch.empty(m, device=dev)
    for bs, nw in ((16384, 8), (1024, 4), (2048, 4), (4096, 8), (8192, 8), (16384, 16), (16384, 32)):
        out.append(
            Config(
                "triton_layer_norm",
                f"b{bs:05d}_w{nw:02d}",
                "tuning",
                bs,
                nw,
                f"rows {m} x {cols} fp16, column loop",
                2 * lx.numel() * 2,
                0,
                lambda bs=bs, nw=nw: tt.layer_norm(lx, lw, lb, ly, mean, rstd, bs, nw),
            )
        )
    return out


def all_configs(group: str | None = None) -> list[Config]:
    """REAL_SET=tutorials: Triton's tutorial kernels (a tuning group of their own); else Liger's and the library's."""
    if os.environ.get("REAL_SET") == "tutorials":
        return tutorial_configs() if group in (None, "tuning") else []
    if os.environ.get("REAL_SET") == "inductor":
        import inductor_kernels

        return inductor_kernels.configs(Config) if group in (None, "tuning") else []
    if os.environ.get("REAL_SET") == "cub":
        import cub_kernels

        return cub_kernels.configs(Config) if group in (None, "tuning") else []
    configs: list[Config] = []
    if group in (None, "tuning"):
        configs += tuning_configs()
    if group in (None, "library"):
        configs += library_configs()
    return configs


def time_all(path: str) -> None:
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(
            [
                "kernel",
                "config",
                "group",
                "block_size",
                "num_warps",
                "work",
                "bytes_compulsory",
                "flops",
                "runs",
                "median_ns",
                "min_ns",
                "max_ns",
                "times_ns",
                "error",
            ]
        )
        for c in all_configs():
            try:
                for _ in range(3):  # warm-up: Triton JIT, cuBLAS heuristics, the caching allocator
                    c.run()
                torch.cuda.synchronize()
                times = []
                for _ in range(RUNS):
                    flush.zero_()
                    start = torch.cuda.Event(enable_timing=True)
                    end = torch.cuda.Event(enable_timing=True)
                    start.record()
                    c.run()
                    end.record()
                    end.synchronize()
                    times.append(round(start.elapsed_time(end) * 1e6))
                row = [statistics.median(times), min(times), max(times), " ".join(map(str, times)), ""]
            except Exception as exc:  # one kernel failing must not lose the others' timings
                row = ["", "", "", "", f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]]
            writer.writerow(
                [
                    c.kernel,
                    c.config,
                    c.group,
                    c.block_size,
                    c.num_warps,
                    c.work,
                    c.bytes_compulsory,
                    c.flops,
                    RUNS,
                    *row,
                ]
            )
            fh.flush()
            print(c.kernel, c.config, row[0] or row[-1], file=sys.stderr, flush=True)


def profile_all(group: str | None) -> None:
    cudart = torch.cuda.cudart()
    for c in all_configs(group):
        try:
            for _ in range(2):
                c.run()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push(f"{c.kernel}.{c.config}")
            cudart.cudaProfilerStart()
            c.run()
            torch.cuda.synchronize()
            cudart.cudaProfilerStop()
            torch.cuda.nvtx.range_pop()
        except Exception as exc:
            print(f"profile {c.kernel}.{c.config} failed: {exc}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = False
    mode = sys.argv[1]
    if mode == "time":
        time_all(sys.argv[2])
    elif mode == "ncu":
        profile_all(sys.argv[2] if len(sys.argv) > 2 else None)
    else:
        raise SystemExit(f"unknown mode {mode}")
