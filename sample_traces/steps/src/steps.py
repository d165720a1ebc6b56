"""Whole training and inference steps with known causes of GPU idle time, for issue 28 (step analysis).

Each variant is one step of a hand-written model with one thing changed: how the batch reaches the GPU, a sync,
host work, a CUDA graph, or the launch configuration of one Triton kernel. Modes (make_steps.sh runs them):

  steps.py variants OUTDIR                  write OUTDIR/variants.csv (what each variant changes and shows)
  steps.py time OUTDIR NAME...              unprofiled CUDA-event timings -> OUTDIR/step_timings.csv (+ summary)
  steps.py trace OUTDIR NAME...             Kineto trace of 5 steps -> OUTDIR/<variant>.pt.trace.json.gz
  steps.py ncu NAME                         one step between cudaProfilerStart/Stop, each op in an NVTX range
  steps.py ddp OUTDIR                       two-rank DDP ResNet step (plain and with a straggler), if 2 GPUs

NAME is a variant or a group (resnet, llama, kernels, guard, grad_norms, loader, all). Each variant runs inside
try/except, so one failing variant is logged and the others still run. Timing and tracing run in separate
processes, so the profiler (CUPTI) is never attached while a step is timed.
"""

from __future__ import annotations

import contextlib
import csv
import gc
import gzip
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

WARMUP_STEPS = 10
MEASURED_STEPS = 20
NCU_WARMUP_STEPS = 5
TRACE_WAIT, TRACE_WARMUP, TRACE_ACTIVE = 1, 2, 5
# A slow data loader: host work with no CUDA call before each step. A pause only leaves the GPU idle when the
# host then falls behind it; in a GPU-bound step the host runs ahead by up to a whole step, so the pause is at
# least the baseline's measured median step (step_summary.csv, written by the time phase before the pause
# variants run) and at least HOST_PAUSE_S. STEPS_HOST_PAUSE_S (seconds) overrides it.
HOST_PAUSE_S = 0.003
STRAGGLER_PAUSE_S = 0.005  # DDP: rank 1's extra host work before each step, at least 1.5x the baseline step

# ResNet-34 layout of BasicBlocks, fp32 (cuDNN may use TF32, PyTorch's default for convolutions).
RESNET_BATCH, RESNET_IMAGE, RESNET_CLASSES, RESNET_BLOCKS = 64, 128, 100, (3, 4, 6, 3)
# STEPS_RESNET_BATCH: a larger batch makes the step GPU-bound under the profiler too (its host work per step is
# 2-3x the batch-64 step's GPU time), so a sync or a pageable copy is what leaves the GPU idle, not the profiler.
RESNET_BATCH = int(os.environ.get("STEPS_RESNET_BATCH", RESNET_BATCH))
RESNET_HOST_BATCHES = 4  # the synthetic CPU dataset: this many distinct batches, cycled
# Llama-style decoder (hidden 2048, 16 heads of 128, SwiGLU 5632, vocab 32000), bf16, inference forward.
LLAMA_LAYERS, LLAMA_HIDDEN, LLAMA_HEADS, LLAMA_INTER, LLAMA_VOCAB = 6, 2048, 16, 5632, 32000
LLAMA_SMALL = (1, 64)  # batch x tokens: launch-bound
LLAMA_LARGE = (8, 1024)  # batch x tokens: GPU-bound
# Default kernel configurations: Liger-Kernel's calculate_settings for RMSNorm (BLOCK_SIZE 2048 -> 8 warps);
# Triton's vector-add tutorial for the flat elementwise SwiGLU.
RMS_WARPS, SWIGLU_BLOCK, SWIGLU_WARPS = 8, 1024, 4
RMS_WARPS_VARIED = (1, 2, 4, 8, 16, 32)
SWIGLU_VARIED = ((1024, 4), (128, 1), (4096, 16), (16384, 4))

Region = Callable[[str], contextlib.AbstractContextManager[object]]
Step = Callable[[int, Region], object]


# --------------------------------------------------------------------------------------------------------------
# Variants


@dataclass(frozen=True)
class Variant:
    name: str
    model: str  # resnet | llama_small | llama_large
    changes: str  # what differs from the model's baseline
    shows: str  # the cause of idle time (or the kernel change) it was built to show
    pinned: bool = True
    item_sync: bool = False
    nan_guard: bool = False  # assert torch.isfinite(h).all() on the residual stream after every block (syncs)
    grad_norm_items: bool = False  # each parameter's gradient norm read with .item() after backward (one sync each)
    host_prep: bool = False  # each batch prepared on the host thread (uint8 images to normalized fp32) before its copy
    host_pause_s: float = 0.0
    cudagraph: bool = False
    rms_warps: int = RMS_WARPS
    swiglu_block: int = SWIGLU_BLOCK
    swiglu_warps: int = SWIGLU_WARPS
    kernel_varied: str = ""  # the Triton kernel whose configuration this variant changes (ncu profiles it)
    group: str = ""


def _variants() -> list[Variant]:
    out = [
        Variant(
            "resnet_baseline",
            "resnet",
            "baseline: pinned host batch copied with non_blocking=True, no per-step sync",
            "none built in (GPU-bound training step)",
            group="resnet",
        ),
        Variant(
            "resnet_pageable",
            "resnet",
            "host batch in pageable memory (same .to(non_blocking=True)): the host-to-device copy is synchronous",
            "synchronization: synchronous copy of pageable memory",
            pinned=False,
            group="resnet",
        ),
        Variant(
            "resnet_item_sync",
            "resnet",
            "loss.item() at the end of every step",
            "synchronization: .item() (cudaStreamSynchronize / device-to-host copy)",
            item_sync=True,
            group="resnet",
        ),
        Variant(
            "resnet_host_pause",
            "resnet",
            f"time.sleep(max({HOST_PAUSE_S} s, resnet_baseline's median step)) of host work with no CUDA call at "
            "the start of every step (the pause used: host_pause_ms in step_summary.csv)",
            "host work with no CUDA call (slow data loader)",
            host_pause_s=HOST_PAUSE_S,
            group="resnet",
        ),
        Variant(
            "resnet_cudagraph",
            "resnet",
            "whole step (forward, backward, SGD step) captured once in a CUDA graph and replayed; batch copied "
            "into static input buffers",
            "CUDA graph: kernels replayed from one graph launch (fewer launches, less host overhead)",
            cudagraph=True,
            group="resnet",
        ),
        Variant(
            "llama_small_eager",
            "llama_small",
            f"batch {LLAMA_SMALL[0]} x {LLAMA_SMALL[1]} tokens, eager",
            "launch-bound: the host launches slower than the GPU runs the short kernels",
            group="llama",
        ),
        Variant(
            "llama_small_cudagraph",
            "llama_small",
            "same forward replayed from a CUDA graph",
            "CUDA graph removes the launch-bound idle time",
            cudagraph=True,
            group="llama",
        ),
        Variant(
            "llama_large_eager",
            "llama_large",
            f"batch {LLAMA_LARGE[0]} x {LLAMA_LARGE[1]} tokens, eager; RMSNorm num_warps={RMS_WARPS}, SwiGLU "
            f"BLOCK_SIZE={SWIGLU_BLOCK} num_warps={SWIGLU_WARPS} (the kernel variants' baseline)",
            "none built in (GPU-bound); baseline of the kernel-configuration variants",
            group="llama",
        ),
        Variant(
            "llama_large_nan_guard",
            "llama_large",
            "llama_large_eager with `assert torch.isfinite(h).all()` on the residual stream after every attention "
            f"and MLP block ({2 * LLAMA_LAYERS} checks per forward: each reads a GPU bool on the host)",
            "synchronization: a Python check of a GPU tensor (device-to-host copy, cudaStreamSynchronize) after "
            "every block; llama_large_eager is the same step with the syncs removed",
            nan_guard=True,
            group="guard",
        ),
        Variant(
            "resnet_grad_norm_items",
            "resnet",
            "resnet_baseline with every parameter's gradient norm read on the host after backward "
            "(`[p.grad.norm().item() for p in model.parameters()]`, as a training loop logs them)",
            "synchronization: one .item() per parameter (device-to-host copy, cudaStreamSynchronize); "
            "resnet_baseline is the same step without them",
            grad_norm_items=True,
            group="grad_norms",
        ),
    ]
    # A training loop that prepares each batch on its own thread (as a DataLoader with num_workers=0 does): the host
    # work overlaps the GPU's previous step unless something makes the host wait for the GPU first.
    loader = (
        "batch prepared on the host thread each step (uint8 images scaled to fp32 into a host buffer) before it is "
        "copied"
    )
    out += [
        Variant(
            "resnet_loader_baseline",
            "resnet",
            f"{loader}; pinned buffers, .to(non_blocking=True), no per-step sync",
            "none built in (GPU-bound: the host prepares the next batch while the GPU runs this step)",
            host_prep=True,
            group="loader",
        ),
        Variant(
            "resnet_loader_item_sync",
            "resnet",
            f"{loader}; loss.item() at the end of every step",
            "synchronization: .item() makes the host wait for the GPU, so the next batch's preparation no longer "
            "overlaps the GPU's work",
            host_prep=True,
            item_sync=True,
            group="loader",
        ),
        Variant(
            "resnet_loader_pageable",
            "resnet",
            f"{loader}; pageable buffers (same .to(non_blocking=True)): the copy is synchronous",
            "synchronization: synchronous copy of pageable memory",
            host_prep=True,
            pinned=False,
            group="loader",
        ),
    ]
    for w in RMS_WARPS_VARIED:
        out.append(
            Variant(
                f"llama_large_rms_w{w}",
                "llama_large",
                f"llama_large_eager with the Triton RMSNorm launched with num_warps={w} (default {RMS_WARPS})",
                "kernel change: RMSNorm launch configuration (num_warps)",
                rms_warps=w,
                kernel_varied="rms_norm",
                group="kernels",
            )
        )
    for block, w in SWIGLU_VARIED:
        out.append(
            Variant(
                f"llama_large_swiglu_b{block}_w{w}",
                "llama_large",
                f"llama_large_eager with the Triton SwiGLU launched with BLOCK_SIZE={block} num_warps={w} "
                f"(default {SWIGLU_BLOCK}, {SWIGLU_WARPS})",
                "kernel change: SwiGLU launch configuration (BLOCK_SIZE, num_warps)",
                swiglu_block=block,
                swiglu_warps=w,
                kernel_varied="swiglu",
                group="kernels",
            )
        )
    return out


VARIANTS = {v.name: v for v in _variants()}
DDP_VARIANTS = {
    "ddp": "two-rank DistributedDataParallel ResNet step (NCCL all-reduce of gradients), pinned batches",
    "ddp_straggler": f"as ddp, rank 1 sleeps max({STRAGGLER_PAUSE_S} s, 1.5x resnet_baseline's median step) of "
    "host work before each step (a straggler; the pause used: host_pause_ms in step_summary.csv)",
}


def expand(names: list[str]) -> list[Variant]:
    out: list[Variant] = []
    for name in names:
        if name in VARIANTS:
            out.append(VARIANTS[name])
        elif name in ("resnet", "llama", "kernels", "guard", "grad_norms", "loader", "all"):
            out.extend(v for v in VARIANTS.values() if name in ("all", v.group))
        else:
            raise SystemExit(f"unknown variant or group {name!r}; known: {', '.join(VARIANTS)}")
    return out


def host_pause(outdir: Path, floor_s: float, factor: float) -> float:
    """The pause: STEPS_HOST_PAUSE_S if set, else max(floor_s, factor x resnet_baseline's median step)."""
    if os.environ.get("STEPS_HOST_PAUSE_S"):
        return float(os.environ["STEPS_HOST_PAUSE_S"])
    baseline_ms = 0.0
    with contextlib.suppress(OSError, ValueError, KeyError), open(outdir / "step_summary.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["variant"] == "resnet_baseline":
                baseline_ms = float(row["median_step_ms"])
    return max(floor_s, factor * baseline_ms / 1e3)


def calibrated(v: Variant, outdir: Path) -> Variant:
    if not v.host_pause_s:
        return v
    return replace(v, host_pause_s=host_pause(outdir, v.host_pause_s, 1.0))


def write_variants(outdir: Path) -> None:
    fields = [
        "variant",
        "model",
        "changes",
        "shows",
        "cudagraph",
        "pinned",
        "item_sync",
        "nan_guard",
        "grad_norm_items",
    ]
    fields += ["host_prep", "host_pause_s"]
    fields += ["rms_warps", "swiglu_block", "swiglu_warps", "kernel_varied", "group"]
    with open(outdir / "variants.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(fields)
        for v in VARIANTS.values():
            d = asdict(v)
            d["variant"] = d.pop("name")
            wr.writerow([d[k] for k in fields])
        for name, changes in DDP_VARIANTS.items():
            shows = "communication (NCCL all-reduce) overlapped with backward"
            if "straggler" in name:
                shows = "straggler: rank 0 waits in the all-reduce for rank 1's host work"
            pause = STRAGGLER_PAUSE_S if "straggler" in name else 0.0  # the floor; the pause used is in the summary
            row = dict.fromkeys(fields, "") | dict.fromkeys(("cudagraph", "item_sync", "nan_guard"), False)
            row |= {"grad_norm_items": False, "host_prep": False, "pinned": True, "group": "ddp"}
            row |= {"variant": name, "model": "resnet_ddp", "changes": changes, "shows": shows, "host_pause_s": pause}
            wr.writerow([row[k] for k in fields])


# --------------------------------------------------------------------------------------------------------------
# Regions: no-op for timing, record_function for Kineto, NVTX for Nsight Compute (same names in both).


@contextlib.contextmanager
def no_region(name: str) -> Iterator[None]:
    yield


@contextlib.contextmanager
def nvtx_region(name: str) -> Iterator[None]:
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


def kineto_region(name: str) -> contextlib.AbstractContextManager[object]:
    return torch.profiler.record_function(name)


# --------------------------------------------------------------------------------------------------------------
# Triton kernels, Liger-Kernel style, launch configuration as a parameter.


@triton.jit
def rms_norm_fwd_kernel(Y, Y_row_stride, X, X_row_stride, W, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    """One program per row: y = x / sqrt(mean(x^2) + eps) * w, in fp32, stored in the input dtype."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * X_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(Y + row * Y_row_stride + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_fwd_kernel(A, B, C, n_elements, BLOCK_SIZE: tl.constexpr):
    """Elementwise over a flat buffer: c = silu(a) * b, silu in fp32."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    a = tl.load(A + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + offs, mask=mask, other=0.0)
    c = (a * tl.sigmoid(a)).to(b.dtype) * b
    tl.store(C + offs, c, mask=mask)


def rms_norm(x: torch.Tensor, w: torch.Tensor, num_warps: int, eps: float = 1e-6) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1])
    assert x2.stride(1) == 1
    y = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    block = triton.next_power_of_2(n_cols)
    rms_norm_fwd_kernel[(n_rows,)](
        y, y.stride(0), x2, x2.stride(0), w, n_cols, eps, BLOCK_SIZE=block, num_warps=num_warps
    )
    return y.view(x.shape)


def swiglu(gate: torch.Tensor, up: torch.Tensor, block: int, num_warps: int) -> torch.Tensor:
    assert gate.is_contiguous() and up.is_contiguous() and gate.shape == up.shape
    out = torch.empty_like(up)
    n = gate.numel()
    swiglu_fwd_kernel[(triton.cdiv(n, block),)](gate, up, out, n, BLOCK_SIZE=block, num_warps=num_warps)
    return out


# --------------------------------------------------------------------------------------------------------------
# Models


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        identity = x if self.down is None else self.down(x)
        return F.relu(out + identity, inplace=True)


class ResNet(nn.Module):
    def __init__(self, blocks: tuple[int, ...] = RESNET_BLOCKS, classes: int = RESNET_CLASSES) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
        )
        layers: list[nn.Module] = []
        cin = 64
        for i, n in enumerate(blocks):
            cout = 64 * 2**i
            for j in range(n):
                layers.append(BasicBlock(cin, cout, 2 if (j == 0 and i > 0) else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def host_dataset(pinned: bool) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """A synthetic CPU dataset: a few distinct image batches (fp32, NCHW) and labels, pinned or pageable."""
    g = torch.Generator().manual_seed(0)
    shape = (RESNET_BATCH, 3, RESNET_IMAGE, RESNET_IMAGE)
    xs = [torch.randn(shape, generator=g) for _ in range(RESNET_HOST_BATCHES)]
    ys = [torch.randint(0, RESNET_CLASSES, (RESNET_BATCH,), generator=g) for _ in range(RESNET_HOST_BATCHES)]
    if pinned:
        xs, ys = [x.pin_memory() for x in xs], [y.pin_memory() for y in ys]
    return xs, ys


# Host buffers a prepared batch is written into, reused in turn: the host runs at most about one step ahead of the
# GPU (the launch queue holds fewer launches than two ResNet steps), so a buffer's non_blocking copy has finished
# before it is written again.
PREP_BUFFERS = 4
# STEPS_PREP: how the host scales a batch (mul: torch.mul(uint8, 1/255, out=fp32), about 22 ms for batch 512 on the
# H100 host of h100_loader/; copy_scale: copy_ then mul_, for a lighter host share of the step)
PREP = os.environ.get("STEPS_PREP", "mul")


def host_loader(pinned: bool) -> Callable[[int], torch.Tensor]:
    """Batch i prepared on the calling thread: uint8 images (a synthetic set, cycled) scaled to fp32 in [0, 1]
    into the next host buffer (pinned or pageable), as a loader's collate and ToTensor do."""
    g = torch.Generator().manual_seed(1)
    shape = (RESNET_BATCH, 3, RESNET_IMAGE, RESNET_IMAGE)
    raw = [torch.randint(0, 256, shape, generator=g, dtype=torch.uint8) for _ in range(RESNET_HOST_BATCHES)]
    buffers = [torch.empty(shape, pin_memory=pinned) for _ in range(PREP_BUFFERS)]

    def prepare(i: int) -> torch.Tensor:
        out = buffers[i % PREP_BUFFERS]
        if PREP == "copy_scale":  # two passes the CPU threads share: uint8 to fp32, then scaled in place
            return out.copy_(raw[i % len(raw)]).mul_(1.0 / 255.0)
        return torch.mul(raw[i % len(raw)], 1.0 / 255.0, out=out)  # one pass, promoted uint8 -> fp32

    return prepare


def build_resnet(v: Variant, device: torch.device, ddp_rank: int | None = None) -> Step:
    torch.manual_seed(0)
    model: nn.Module = ResNet().to(device)
    if ddp_rank is not None:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[ddp_rank])
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    xs, ys = host_dataset(v.pinned)
    prepare = host_loader(v.pinned) if v.host_prep else None

    if not v.cudagraph:

        def step(i: int, region: Region) -> object:
            if v.host_pause_s:
                time.sleep(v.host_pause_s)  # host work, no CUDA call
            if prepare is not None:
                with region("host_prep"):
                    prepared = prepare(i)
            with region("h2d_copy"):
                x = (prepared if prepare is not None else xs[i % len(xs)]).to(device, non_blocking=True)
                y = ys[i % len(ys)].to(device, non_blocking=True)
            with region("zero_grad"):
                opt.zero_grad(set_to_none=True)
            with region("forward"):
                loss = F.cross_entropy(model(x), y)
            with region("backward"):
                loss.backward()
            if v.grad_norm_items:
                with region("grad_norms"):
                    [p.grad.norm().item() for p in model.parameters() if p.grad is not None]
            with region("optimizer"):
                opt.step()
            if v.item_sync:
                with region("loss_item"):
                    return loss.item()
            return loss

        return step

    # CUDA graph of the whole step. Warm up on a side stream (cuDNN and cuBLAS handles, SGD momentum buffers, the
    # allocator), then capture forward, backward and the SGD step (SGD keeps no step counter on the host, so it
    # needs no capturable flag); no host syncs inside the capture.
    static_x = torch.empty((RESNET_BATCH, 3, RESNET_IMAGE, RESNET_IMAGE), device=device)
    static_y = torch.zeros((RESNET_BATCH,), dtype=torch.int64, device=device)
    static_x.copy_(xs[0])
    static_y.copy_(ys[0])
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(static_x), static_y).backward()
            opt.step()
    torch.cuda.current_stream(device).wait_stream(side)
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = F.cross_entropy(model(static_x), static_y)
        static_loss.backward()
        opt.step()
    torch.cuda.synchronize(device)

    def graph_step(i: int, region: Region) -> object:
        with region("h2d_copy"):
            static_x.copy_(xs[i % len(xs)], non_blocking=True)
            static_y.copy_(ys[i % len(ys)], non_blocking=True)
        with region("graph_replay"):
            graph.replay()
        return static_loss

    # The graph reads and writes the parameters, gradients and momentum buffers in place: keep them alive.
    graph_step.keep = (graph, model, opt, static_x, static_y)  # type: ignore[attr-defined]
    return graph_step


class Llama:
    """Decoder-only inference forward: RMSNorm, rotary embedding, SDPA attention, SwiGLU MLP; bf16 weights."""

    def __init__(self, v: Variant, device: torch.device) -> None:
        self.v = v
        g = torch.Generator(device=device).manual_seed(0)
        kw = {"device": device, "dtype": torch.bfloat16}
        h, i = LLAMA_HIDDEN, LLAMA_INTER

        def w(out: int, inp: int) -> torch.Tensor:
            return torch.randn(out, inp, generator=g, **kw) * inp**-0.5

        self.embed = torch.randn(LLAMA_VOCAB, h, generator=g, **kw) * 0.02
        self.layers = [
            {
                "attn_norm": torch.ones(h, **kw),
                "wqkv": w(3 * h, h),
                "wo": w(h, h),
                "mlp_norm": torch.ones(h, **kw),
                "w_gate": w(i, h),
                "w_up": w(i, h),
                "w_down": w(h, i),
            }
            for _ in range(LLAMA_LAYERS)
        ]
        self.norm = torch.ones(h, **kw)
        self.lm_head = w(LLAMA_VOCAB, h)
        batch, seq = LLAMA_SMALL if v.model == "llama_small" else LLAMA_LARGE
        self.ids = torch.randint(0, LLAMA_VOCAB, (batch, seq), generator=g, device=device)
        hd = h // LLAMA_HEADS
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd))
        freqs = torch.outer(torch.arange(seq, device=device, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.cos, self.sin = emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)

    def rotary(self, x: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * self.cos + rotated * self.sin

    def forward(self, ids: torch.Tensor, region: Region) -> torch.Tensor:
        v = self.v
        b, s = ids.shape
        nh, hd = LLAMA_HEADS, LLAMA_HIDDEN // LLAMA_HEADS
        with region("embedding"):
            h = F.embedding(ids, self.embed)
        for n, layer in enumerate(self.layers):
            with region(f"layer{n}"):
                with region("attn_norm"):
                    x = rms_norm(h, layer["attn_norm"], v.rms_warps)
                with region("qkv_proj"):
                    qkv = F.linear(x, layer["wqkv"]).view(b, s, 3, nh, hd)
                with region("rotary"):
                    q, k, val = (t.transpose(1, 2) for t in qkv.unbind(2))
                    q, k = self.rotary(q), self.rotary(k)
                with region("attention"):
                    o = F.scaled_dot_product_attention(q, k, val, is_causal=True)
                with region("o_proj"):
                    h = h + F.linear(o.transpose(1, 2).reshape(b, s, LLAMA_HIDDEN), layer["wo"])
                if v.nan_guard:
                    with region("nan_guard"):
                        assert bool(torch.isfinite(h).all()), f"non-finite activations after layer {n}'s attention"
                with region("mlp_norm"):
                    x = rms_norm(h, layer["mlp_norm"], v.rms_warps)
                with region("gate_up_proj"):
                    gate, up = F.linear(x, layer["w_gate"]), F.linear(x, layer["w_up"])
                with region("swiglu"):
                    a = swiglu(gate, up, v.swiglu_block, v.swiglu_warps)
                with region("down_proj"):
                    h = h + F.linear(a, layer["w_down"])
                if v.nan_guard:
                    with region("nan_guard"):
                        assert bool(torch.isfinite(h).all()), f"non-finite activations after layer {n}'s MLP"
        with region("final_norm"):
            x = rms_norm(h, self.norm, v.rms_warps)
        with region("lm_head"):
            return F.linear(x[:, -1], self.lm_head)  # next-token logits of the last position


def build_llama(v: Variant, device: torch.device) -> Step:
    model = Llama(v, device)
    if not v.cudagraph:

        def step(i: int, region: Region) -> object:
            with torch.no_grad():
                return model.forward(model.ids, region)

        return step

    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.no_grad():
        with torch.cuda.stream(side):
            for _ in range(3):  # compiles the Triton kernels, settles cuBLAS and the allocator
                model.forward(model.ids, no_region)
        torch.cuda.current_stream(device).wait_stream(side)
        torch.cuda.synchronize(device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = model.forward(model.ids, no_region)
    torch.cuda.synchronize(device)

    def graph_step(i: int, region: Region) -> object:
        with region("graph_replay"):
            graph.replay()
        return static_out

    graph_step.keep = (graph, model)  # type: ignore[attr-defined]  # the graph reads the weights in place
    return graph_step


def build(v: Variant, device: torch.device) -> Step:
    return build_resnet(v, device) if v.model == "resnet" else build_llama(v, device)


# --------------------------------------------------------------------------------------------------------------
# Modes


def setup() -> torch.device:
    # cuDNN's heuristics, not benchmark mode: the timing, trace and ncu processes then run the same kernels.
    torch.backends.cudnn.benchmark = False
    device = torch.device("cuda", torch.cuda.current_device())
    return device


def free() -> None:
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


TIMING_FIELDS = ["variant", "model", "rank", "step_index", "step_ms", "wall_ms"]
SUMMARY_FIELDS = ["variant", "model", "rank", "steps", "median_step_ms", "mean_step_ms", "min_step_ms"]
SUMMARY_FIELDS += ["max_step_ms", "wall_per_step_ms", "host_pause_ms"]


def append_csv(path: Path, fields: list[str], rows: list[dict[str, object]]) -> None:
    new = not path.exists()
    with open(path, "a", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=fields)
        if new:
            wr.writeheader()
        wr.writerows(rows)


def measure(
    step: Step, name: str, model: str, rank: int = 0, pause_s: float = 0.0
) -> tuple[list[dict[str, object]], dict[str, object]]:
    """WARMUP_STEPS, then MEASURED_STEPS each between two CUDA events (host work included: the start event is
    recorded before the step's host code runs) and time.perf_counter (host time to issue the step, no sync)."""
    for i in range(WARMUP_STEPS):
        step(i, no_region)
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(MEASURED_STEPS)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(MEASURED_STEPS)]
    walls = []
    t_first = time.perf_counter()
    for n in range(MEASURED_STEPS):
        t0 = time.perf_counter()
        starts[n].record()
        step(WARMUP_STEPS + n, no_region)
        ends[n].record()
        walls.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    wall_total_ms = (time.perf_counter() - t_first) * 1e3
    ms = [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
    rows: list[dict[str, object]] = [
        {
            "variant": name,
            "model": model,
            "rank": rank,
            "step_index": n,
            "step_ms": f"{ms[n]:.4f}",
            "wall_ms": f"{walls[n]:.4f}",
        }
        for n in range(MEASURED_STEPS)
    ]
    srt = sorted(ms)
    summary: dict[str, object] = {
        "variant": name,
        "model": model,
        "rank": rank,
        "steps": MEASURED_STEPS,
        "median_step_ms": f"{(srt[len(srt) // 2 - 1] + srt[len(srt) // 2]) / 2:.4f}",
        "mean_step_ms": f"{sum(ms) / len(ms):.4f}",
        "min_step_ms": f"{srt[0]:.4f}",
        "max_step_ms": f"{srt[-1]:.4f}",
        "wall_per_step_ms": f"{wall_total_ms / MEASURED_STEPS:.4f}",
        "host_pause_ms": f"{pause_s * 1e3:.3f}",
    }
    return rows, summary


def export_gzip(prof: torch.profiler.profile, path: Path) -> None:
    """Chrome trace, gzip'd (the JSON itself is several times larger than what may come back)."""
    plain = path.with_name(path.name.removesuffix(".gz"))
    prof.export_chrome_trace(str(plain))
    with open(plain, "rb") as src, gzip.open(path, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    plain.unlink()
    print(f"  wrote {path.name} ({path.stat().st_size / 1e6:.2f} MB)", flush=True)


def trace(step: Step, path: Path) -> None:
    """Kineto trace of TRACE_ACTIVE steps after WARMUP_STEPS unprofiled ones; ProfilerStep#N marks each step."""
    from torch.profiler import ProfilerActivity, profile, schedule

    for i in range(WARMUP_STEPS):
        step(i, no_region)
    torch.cuda.synchronize()
    # STEPS_ACTIVITIES=cuda records the GPU and the CUDA runtime calls only: no per-operator CPU events, whose
    # host time makes a small step host-bound under the profiler (ProfilerStep#N may then be absent, and steps are
    # found by their repeating kernels)
    activities = [ProfilerActivity.CUDA]
    if os.environ.get("STEPS_ACTIVITIES", "cpu,cuda") != "cuda":
        activities.insert(0, ProfilerActivity.CPU)
    with profile(
        activities=activities,
        schedule=schedule(wait=TRACE_WAIT, warmup=TRACE_WARMUP, active=TRACE_ACTIVE, repeat=1),
        # STEPS_RECORD_SHAPES=0 records a leaner trace: shapes cost the profiler host time on every op, and in a
        # host-bound step that overhead, not the variant's own cause, would leave the GPU idle
        record_shapes=os.environ.get("STEPS_RECORD_SHAPES", "1") != "0",
        with_stack=False,
        on_trace_ready=lambda p: export_gzip(p, path),
    ) as prof:
        for i in range(TRACE_WAIT + TRACE_WARMUP + TRACE_ACTIVE):
            step(WARMUP_STEPS + i, kineto_region)
            prof.step()
    torch.cuda.synchronize()


def run_each(variants: list[Variant], body: Callable[[Variant], None]) -> int:
    failed = 0
    for v in variants:
        t0 = time.perf_counter()
        try:
            body(v)
            print(f"ok {v.name} ({time.perf_counter() - t0:.1f} s)", flush=True)
        except Exception:  # one variant's failure must not stop the others
            failed += 1
            print(f"FAILED {v.name}:", flush=True)
            traceback.print_exc()
        with contextlib.suppress(Exception):
            free()
    return failed


def mode_time(outdir: Path, variants: list[Variant]) -> int:
    device = setup()

    def body(v: Variant) -> None:
        v = calibrated(v, outdir)
        step = build(v, device)
        rows, summary = measure(step, v.name, v.model, pause_s=v.host_pause_s)
        append_csv(outdir / "step_timings.csv", TIMING_FIELDS, rows)
        append_csv(outdir / "step_summary.csv", SUMMARY_FIELDS, [summary])
        print(f"  {v.name}: median {summary['median_step_ms']} ms, wall {summary['wall_per_step_ms']} ms/step")

    return run_each(variants, body)


def mode_trace(outdir: Path, variants: list[Variant]) -> int:
    device = setup()

    def body(v: Variant) -> None:
        v = calibrated(v, outdir)
        if v.host_pause_s:
            print(f"  {v.name}: host pause {v.host_pause_s * 1e3:.3f} ms", flush=True)
        trace(build(v, device), outdir / f"{v.name}.pt.trace.json.gz")

    return run_each(variants, body)


def mode_ncu(v: Variant) -> None:
    """Warm up, then one step between cudaProfilerStart/Stop (ncu --profile-from-start off), ops in NVTX ranges."""
    device = setup()
    step = build(v, device)
    for i in range(NCU_WARMUP_STEPS):
        step(i, no_region)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    with nvtx_region("step"):
        step(NCU_WARMUP_STEPS, nvtx_region)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print(f"ncu step of {v.name} done")


def ddp_worker(rank: int, world: int, outdir: str, name: str, port: int) -> None:
    import torch.distributed as dist

    os.environ["NCCL_NVLS_ENABLE"] = "0"
    os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
    os.environ["NVSHMEM_DISABLE_NVLS"] = "1"
    torch.cuda.set_device(rank)
    device = setup()
    dist.init_process_group(
        "nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, device_id=device
    )
    try:
        pause = host_pause(Path(outdir), STRAGGLER_PAUSE_S, 1.5) if name == "ddp_straggler" and rank == 1 else 0.0
        v = Variant(name, "resnet_ddp", DDP_VARIANTS[name], "", host_pause_s=pause)
        step = build_resnet(v, device, ddp_rank=rank)
        rows, summary = measure(step, name, v.model, rank, pause_s=pause)
        out = Path(outdir)
        append_csv(out / f".{name}_rank{rank}.timings.csv", TIMING_FIELDS, rows)
        append_csv(out / f".{name}_rank{rank}.summary.csv", SUMMARY_FIELDS, [summary])
        dist.barrier()
        trace(step, out / f"{name}_rank{rank}.pt.trace.json.gz")
        dist.barrier()
    finally:
        dist.destroy_process_group()


def mode_ddp(outdir: Path) -> int:
    import torch.multiprocessing as mp

    n = torch.cuda.device_count()
    if n < 2:
        print(f"ddp skipped: {n} GPU(s)")
        return 0
    failed = 0
    for k, name in enumerate(DDP_VARIANTS):
        try:
            mp.spawn(ddp_worker, args=(2, str(outdir), name, 29517 + k), nprocs=2, join=True)
            for kind, fields in (("timings", TIMING_FIELDS), ("summary", SUMMARY_FIELDS)):
                target = outdir / ("step_timings.csv" if kind == "timings" else "step_summary.csv")
                for rank in range(2):
                    part = outdir / f".{name}_rank{rank}.{kind}.csv"
                    with open(part, newline="") as f:
                        append_csv(target, fields, list(csv.DictReader(f)))
                    part.unlink()
            print(f"ok {name}", flush=True)
        except Exception:
            failed += 1
            print(f"FAILED {name}:", flush=True)
            traceback.print_exc()
    return failed


def main(argv: list[str]) -> int:
    usage = "usage: steps.py variants OUTDIR | time OUTDIR NAME... | trace OUTDIR NAME... | ncu NAME | ddp OUTDIR"
    if len(argv) < 2:
        raise SystemExit(usage)
    mode = argv[0]
    if mode == "ncu":
        mode_ncu(expand(argv[1:2])[0])
        return 0
    outdir = Path(argv[1])
    outdir.mkdir(parents=True, exist_ok=True)
    if mode == "variants":
        write_variants(outdir)
        return 0
    if mode == "ddp":
        return mode_ddp(outdir)
    if mode in ("time", "trace"):
        variants = expand(argv[2:] or ["all"])
        if not (outdir / "variants.csv").exists():
            write_variants(outdir)
        return (mode_time if mode == "time" else mode_trace)(outdir, variants)
    raise SystemExit(usage)


if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1:]) else 0)
