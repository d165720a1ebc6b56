"""Data-parallel jobs with a known straggler (issue 46), timed without the profiler first, then traced per rank.

    python3 ddp_job.py OUTDIR MODEL VARIANT [--world N] [--backend nccl|gloo]

MODEL: resnet50 (torchvision's ResNet-50, batch 32 at 224 x 224, SGD) or gpt2 (a Hugging Face GPT-2 small config,
batch 8 x 256 tokens, AdamW), each wrapped in DistributedDataParallel; fsdp_gpt2 wraps GPT-2 in FSDP (NCCL only).
VARIANT (the injected rank is the last one):
- baseline;
- slow_backward: the injected rank's backward runs an extra matmul (a hook on the first layer's weight gradient)
  whose cost is measured alone first (`injected_ms` in timings.csv);
- loader_delay: the injected rank sleeps LOADER_DELAY_S before each step (its batch arrives late);
- item_sync: the injected rank reads `loss.item()` every step (the host waits for the GPU);
- p2p_disabled: baseline with NCCL_P2P_DISABLE=1 for the whole job.
Each rank: WARMUP steps, MEASURED steps between CUDA events (its unprofiled step times, written before any profiler
is loaded), then torch.profiler (CPU + CUDA) over ACTIVE steps (ACTIVE_STEPS in the environment, default 15:
5 decided less, `h200x2_nccl/` was recorded with ACTIVE_STEPS=5): OUTDIR/MODEL.VARIANT/rankR.pt.trace.json.gz.
With one GPU, `--backend gloo` puts every rank on it: a dry run of the scripts, the ranks sharing the GPU.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import shutil
import statistics
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WARMUP, MEASURED = 5, 20
ACTIVE = int(os.environ.get("ACTIVE_STEPS", "15"))  # the traced steps
LOADER_DELAY_S = 0.010
VARIANTS = ("baseline", "slow_backward", "loader_delay", "item_sync", "p2p_disabled")


def build(model_name: str, device: torch.device, wrap: str):
    if model_name == "resnet50":
        import torchvision

        model = torchvision.models.resnet50().to(device)
        x = torch.randn(32, 3, 224, 224, device=device)
        y = torch.randint(0, 1000, (32,), device=device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        first = model.conv1.weight

        def loss_of(m):
            return torch.nn.functional.cross_entropy(m(x), y)
    else:
        from transformers import GPT2Config, GPT2LMHeadModel

        model = GPT2LMHeadModel(GPT2Config()).to(device)
        ids = torch.randint(0, 50257, (8, 256), device=device)
        optimizer = None
        first = model.transformer.wte.weight

        def loss_of(m):
            return m(input_ids=ids, labels=ids).loss

    if wrap == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel

        model = FullyShardedDataParallel(model, device_id=device)
    else:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    if optimizer is None or wrap == "fsdp":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return model, optimizer, loss_of, first


def extra_matmul(device: torch.device, size: int = 4096):
    a = torch.randn(size, size, device=device)

    def run() -> None:
        torch.mm(a, a)

    return run


def measured_ms(fn, repeat: int = 20) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / repeat


def worker(rank: int, world: int, args: argparse.Namespace, port: int) -> None:
    gpus = torch.cuda.device_count()
    device = torch.device("cuda", rank % gpus)
    torch.cuda.set_device(device)
    dist.init_process_group(args.backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    injected = rank == world - 1
    wrap = "fsdp" if args.model == "fsdp_gpt2" else "ddp"
    model, optimizer, loss_of, first = build("gpt2" if wrap == "fsdp" else args.model, device, wrap)
    injected_ms = 0.0
    if injected and args.variant == "slow_backward":
        matmul = extra_matmul(device)
        injected_ms = measured_ms(matmul)
        first.register_hook(lambda grad: (matmul(), grad)[1])
    elif injected and args.variant == "loader_delay":
        injected_ms = LOADER_DELAY_S * 1e3

    def step() -> None:
        if injected and args.variant == "loader_delay":
            time.sleep(LOADER_DELAY_S)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(model)
        loss.backward()
        optimizer.step()
        if injected and args.variant == "item_sync":
            loss.item()

    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(MEASURED)]
    for start, end in events:
        start.record()
        step()
        end.record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) for s, e in events]
    period = events[0][0].elapsed_time(events[-1][1]) / MEASURED
    out = Path(args.outdir) / f"{args.model}.{args.variant}"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f".timings_rank{rank}.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "model",
                "variant",
                "rank",
                "injected",
                "injected_ms",
                "period_ms",
                "median_ms",
                "min_ms",
                "max_ms",
                "steps",
                "backend",
                "world",
            ]
        )
        writer.writerow(
            [
                args.model,
                args.variant,
                rank,
                int(injected),
                f"{injected_ms:.4f}",
                f"{period:.4f}",
                f"{statistics.median(times):.4f}",
                f"{min(times):.4f}",
                f"{max(times):.4f}",
                MEASURED,
                args.backend,
                world,
            ]
        )
    dist.barrier()
    from torch.profiler import ProfilerActivity, profile, schedule

    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=1, warmup=1, active=ACTIVE, repeat=1),
    ) as prof:
        for _ in range(2 + ACTIVE):
            step()
            prof.step()
    raw = out / f"rank{rank}.pt.trace.json"
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as src, gzip.open(str(raw) + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("model", choices=("resnet50", "gpt2", "fsdp_gpt2"))
    parser.add_argument("variant", choices=VARIANTS)
    parser.add_argument("--world", type=int, default=max(2, torch.cuda.device_count()))
    parser.add_argument("--backend", default="nccl", choices=("nccl", "gloo"))
    parser.add_argument("--port", type=int, default=29611)
    args = parser.parse_args()
    if args.variant == "p2p_disabled":
        os.environ["NCCL_P2P_DISABLE"] = "1"
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    mp.spawn(worker, args=(args.world, args, args.port), nprocs=args.world, join=True)
    out = Path(args.outdir) / f"{args.model}.{args.variant}"
    rows = []
    for rank in range(args.world):
        part = out / f".timings_rank{rank}.csv"
        lines = part.read_text().splitlines()
        rows += lines[1:] if rows else lines
        part.unlink()
    (out / "timings.csv").write_text("\n".join(rows) + "\n")
    print((out / "timings.csv").read_text(), flush=True)


if __name__ == "__main__":
    main()
