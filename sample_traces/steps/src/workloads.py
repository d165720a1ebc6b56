"""Workloads written by others, timed without the profiler first, then traced at each torch.profiler setting
(issue 41: step figures that hold for the program as it runs), and the profiler's own host cost per recorded event.

    python3 workloads.py time-and-trace OUTDIR WORKLOAD SETTING   # one workload at one setting, its own process
    python3 workloads.py cost OUTDIR SETTING              # the per-event cost micro-benchmarks

For each workload and setting, in this order, in a process of its own (a profiler that has run once leaves the
process slower, by 5-35% on these workloads: `timings_after.csv`):
1. WARMUP unprofiled steps, then MEASURED steps between CUDA events: the step time as the program runs is the
   period from the first step's start event to the last step's end event over the step count (the host running
   ahead of the GPU is inside it, as it is in the program); each step's own event pair is kept too. Written to
   `timings.csv` before any profiler is loaded.
2. The trace at that setting (SETTINGS): a `torch.profiler.profile` with schedule(wait=1, warmup=1,
   active=ACTIVE): the ProfilerStep#N ranges mark the recorded steps.
3. MEASURED unprofiled steps again: what the profiler leaves behind once it ends (`timings_after.csv`).
4. With COST_IN_PROCESS=1, the per-event cost loops (`tracekit/profiler_cost_bench.py`) in the same process, at the
   same setting (`profiler_cost_in_process.csv`): whether a process's own loops see its profiler's cost.
"""

from __future__ import annotations

import csv
import gzip
import os
import shutil
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

WARMUP, MEASURED = 10, 20
ACTIVE = int(os.environ.get("ACTIVE_STEPS", "3"))  # the profiler schedule's recorded steps
SETTINGS = ("shapes", "cpu_cuda", "cuda_only", "stack", "memory")  # tracekit/profiler_cost_bench.py's
# with_stack and profile_memory on four workloads (their traces are the largest)
FULL_SETTINGS = ("tv_resnet50_train", "hf_gpt2_train")

Step = Callable[[], None]


def _train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: Callable[[], tuple]) -> Step:
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        inputs, target = batch()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(inputs), target)
        loss.backward()
        optimizer.step()

    return step


def tv_resnet50_train() -> Step:
    """torchvision's ResNet-50, batch 32 at 224 x 224, SGD with momentum (the ImageNet reference recipe's)."""
    import torchvision

    model = torchvision.models.resnet50().cuda()
    x = torch.randn(32, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (32,), device="cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    return _train_step(model, opt, lambda: (x, y))


def _loader_step(workers: int) -> Step:
    """torchvision's ResNet-18 fed by a DataLoader over FakeData (PIL images made and converted on the CPU, as a
    folder of JPEGs would be): with no workers the main thread prepares every batch."""
    import torchvision
    from torchvision import transforms

    data = torchvision.datasets.FakeData(
        size=100_000, image_size=(3, 128, 128), num_classes=100, transform=transforms.ToTensor()
    )
    loader = torch.utils.data.DataLoader(
        data,
        batch_size=64,
        num_workers=workers,
        pin_memory=workers > 0,
        persistent_workers=workers > 0,
        shuffle=True,
    )
    batches = iter(loader)
    model = torchvision.models.resnet18(num_classes=100).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def batch() -> tuple:
        x, y = next(batches)
        return x.cuda(non_blocking=True), y.cuda(non_blocking=True)

    return _train_step(model, opt, batch)


def tv_resnet18_loader0() -> Step:
    return _loader_step(0)


def tv_resnet18_loader4() -> Step:
    return _loader_step(4)


def timm_vit_small_train() -> Step:
    """timm's ViT-S/16 at 224 x 224, batch 32, AdamW, bf16 autocast (timm's training script's --amp)."""
    import timm

    model = timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=1000).cuda()
    x = torch.randn(32, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (32,), device="cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inner = _train_step(model, opt, lambda: (x, y))

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            inner()

    return step


def _gpt2(compiled: bool = False) -> tuple[torch.nn.Module, torch.Tensor]:
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config()).cuda()  # GPT-2 small: 12 layers, 768 wide, 124M parameters
    model.config.use_cache = False
    ids = torch.randint(0, 50257, (8, 256), device="cuda")
    return (torch.compile(model) if compiled else model), ids


def _gpt2_step(item: bool = False, compiled: bool = False) -> Step:
    """Hugging Face GPT-2 small, batch 8 x 256 tokens, AdamW, the language-model loss; `.item()` logs the loss every
    step as a training loop printing it would."""
    model, ids = _gpt2(compiled)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    losses = []

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        if item:
            losses.append(loss.item())

    return step


def hf_gpt2_train() -> Step:
    return _gpt2_step()


def hf_gpt2_train_item() -> Step:
    return _gpt2_step(item=True)


def hf_gpt2_compile() -> Step:
    return _gpt2_step(compiled=True)


def hf_gpt2_cudagraph() -> Step:
    """The whole GPT-2 training step captured once and replayed (PyTorch's CUDA Graphs docs, "whole-network
    capture": static input, capturable AdamW, warm-up on a side stream first)."""
    model, ids = _gpt2()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
    return graph.replay


def hf_gpt2_generate() -> Step:
    """GPT-2 small generating 16 tokens greedily after a 32-token prompt, batch 4 (one step: one `generate`)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config()).cuda().eval()
    prompt = torch.randint(0, 50257, (4, 32), device="cuda")
    mask = torch.ones_like(prompt)

    def step() -> None:
        with torch.no_grad():
            model.generate(
                prompt, attention_mask=mask, max_new_tokens=16, min_new_tokens=16, do_sample=False, pad_token_id=0
            )

    return step


def lightning_fabric_resnet18() -> Step:
    """torchvision's ResNet-18 trained through Lightning Fabric (bf16-mixed, Fabric's own DataLoader wrapping, which
    moves each batch to the GPU), the loop Fabric's docs show."""
    import torch.nn.functional as F
    import torchvision
    from lightning.fabric import Fabric

    fabric = Fabric(accelerator="cuda", devices=1, precision="bf16-mixed")
    fabric.launch()
    model = torchvision.models.resnet18(num_classes=100)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model, opt = fabric.setup(model, opt)
    data = torch.utils.data.TensorDataset(torch.randn(1024, 3, 128, 128), torch.randint(0, 100, (1024,)))
    loader = fabric.setup_dataloaders(torch.utils.data.DataLoader(data, batch_size=64, shuffle=True))

    def forever():  # type: ignore[no-untyped-def]
        while True:
            yield from loader

    batches = forever()

    def step() -> None:
        x, y = next(batches)
        opt.zero_grad(set_to_none=True)
        fabric.backward(F.cross_entropy(model(x), y))
        opt.step()

    return step


def hf_bert_train() -> Step:
    """Hugging Face BERT-base fine-tuned for sequence classification, batch 16 x 128 tokens, AdamW (the
    transformers text-classification example's model and optimizer). Held out: added after the replay was fitted."""
    from transformers import BertConfig, BertForSequenceClassification

    model = BertForSequenceClassification(BertConfig(num_labels=2)).cuda()
    ids = torch.randint(0, 30522, (16, 128), device="cuda")
    labels = torch.randint(0, 2, (16,), device="cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        model(input_ids=ids, labels=labels).loss.backward()
        opt.step()

    return step


def tv_mobilenet_v3_train() -> Step:
    """torchvision's MobileNetV3-Large, batch 64 at 224 x 224, RMSprop (its reference recipe's optimizer): many small
    kernels, so the host's launches bound it. Held out: added after the replay was fitted."""
    import torchvision

    model = torchvision.models.mobilenet_v3_large().cuda()
    x = torch.randn(64, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (64,), device="cuda")
    opt = torch.optim.RMSprop(model.parameters(), lr=0.064, alpha=0.9, eps=0.0316, momentum=0.9, weight_decay=1e-5)
    return _train_step(model, opt, lambda: (x, y))


def timm_convnext_tiny_train() -> Step:
    """timm's ConvNeXt-T, batch 32 at 224 x 224, channels-last, AdamW, bf16 autocast (timm's training script with
    --amp --channels-last). Held out: added after the replay was fitted."""
    import timm

    model = timm.create_model("convnext_tiny", pretrained=False).cuda().to(memory_format=torch.channels_last)
    x = torch.randn(32, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (32,), device="cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    inner = _train_step(model, opt, lambda: (x, y))

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            inner()

    return step


WORKLOADS: dict[str, Callable[[], Step]] = {
    f.__name__: f
    for f in (
        tv_resnet50_train,
        tv_resnet18_loader0,
        tv_resnet18_loader4,
        timm_vit_small_train,
        hf_gpt2_train,
        hf_gpt2_train_item,
        hf_gpt2_compile,
        hf_gpt2_cudagraph,
        hf_gpt2_generate,
        lightning_fabric_resnet18,
        hf_bert_train,
        tv_mobilenet_v3_train,
        timm_convnext_tiny_train,
    )
}


def timed(step: Step, steps: int) -> tuple[float, list[float]]:
    """The period (first start event to last end event, over `steps`) and each step's own event pair, in ms."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]
    torch.cuda.synchronize()
    for n in range(steps):
        starts[n].record()
        step()
        ends[n].record()
    torch.cuda.synchronize()
    return starts[0].elapsed_time(ends[-1]) / steps, [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]


def append_rows(path: Path, rows: list[dict[str, object]]) -> None:
    new = not path.exists()
    with open(path, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        if new:
            writer.writeheader()
        writer.writerows(rows)


def cpu_ticks() -> tuple[int, int]:
    """The machine's CPU time so far, all and stolen (by the hypervisor: /proc/stat's `steal`), in ticks: the host
    time a virtual machine's process lost to other guests is noise in every host-bound step."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields[:8]), fields[7]


def steal_pct(before: tuple[int, int], after: tuple[int, int]) -> float:
    total, stolen = after[0] - before[0], after[1] - before[1]
    return 100 * stolen / total if total else 0.0


def timing_rows(
    workload: str, setting: str, when: str, period_ms: float, each_ms: list[float], steal: float
) -> list[dict[str, object]]:
    return [
        {
            "workload": workload,
            "setting": setting,
            "when": when,
            "period_ms": f"{period_ms:.4f}",
            "median_event_ms": f"{statistics.median(each_ms):.4f}",
            "min_event_ms": f"{min(each_ms):.4f}",
            "max_event_ms": f"{max(each_ms):.4f}",
            "steps": len(each_ms),
            "steal_pct": f"{steal:.2f}",
            "each_ms": " ".join(f"{v:.4f}" for v in each_ms),
        }
    ]


def export_gzip(prof: torch.profiler.profile, path: Path) -> None:
    plain = path.with_name(path.name.removesuffix(".gz"))
    prof.export_chrome_trace(str(plain))
    with open(plain, "rb") as src, gzip.open(path, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    plain.unlink()
    print(f"  wrote {path.name} ({path.stat().st_size / 1e6:.2f} MB)", flush=True)


def profiler_kwargs(setting: str) -> dict[str, object]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from tracekit.profiler_cost_bench import profiler_kwargs as of_setting

    return of_setting(setting)


def trace(step: Step, path: Path, setting: str) -> None:
    from torch.profiler import profile, schedule

    with profile(
        schedule=schedule(wait=1, warmup=1, active=ACTIVE, repeat=1),
        on_trace_ready=lambda p: export_gzip(p, path),
        **profiler_kwargs(setting),  # type: ignore[arg-type]
    ) as prof:
        for _ in range(2 + ACTIVE):
            step()
            prof.step()
    torch.cuda.synchronize()


def time_and_trace(outdir: Path, workload: str, setting: str) -> None:
    """One workload at one profiler setting, in a process of its own (a profiler that has run once leaves the
    process slower: each trace gets the unprofiled timing of its own process, taken before it)."""
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    step = WORKLOADS[workload]()
    t0 = time.perf_counter()
    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize()
    print(f"{workload} {setting}: warm-up {time.perf_counter() - t0:.1f} s", flush=True)
    ticks = cpu_ticks()
    period, each = timed(step, MEASURED)
    steal = steal_pct(ticks, cpu_ticks())
    append_rows(outdir / "timings.csv", timing_rows(workload, setting, "before", period, each, steal))
    print(f"{workload} {setting}: {period:.3f} ms a step unprofiled ({steal:.1f}% stolen)", flush=True)
    t0, ticks = time.perf_counter(), cpu_ticks()
    trace(step, outdir / f"{workload}.{setting}.pt.trace.json.gz", setting)
    steal = steal_pct(ticks, cpu_ticks())
    print(f"{workload}: traced {setting} in {time.perf_counter() - t0:.1f} s ({steal:.1f}% stolen)", flush=True)
    ticks = cpu_ticks()
    period, each = timed(step, MEASURED)
    steal = steal_pct(ticks, cpu_ticks())
    append_rows(outdir / "timings_after.csv", timing_rows(workload, setting, "after the trace", period, each, steal))
    print(f"{workload} {setting}: {period:.3f} ms a step after the trace", flush=True)
    if os.environ.get("COST_IN_PROCESS"):  # the cost loops in this process, after its trace: its own draw
        sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
        from tracekit.profiler_cost_bench import measure

        rows = [{"workload": workload, **row} for row in measure(setting)]
        append_rows(outdir / "profiler_cost_in_process.csv", rows)
        print(f"{workload} {setting}: the cost loops in its process", flush=True)


# ---- the profiler's per-event host cost: tracekit's own loops (tracekit/profiler_cost_bench.py, torch only) ----


def cost(outdir: Path, setting: str) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the checkout: tracekit/profiler_cost_bench.py
    from tracekit.profiler_cost_bench import measure

    rows = measure(setting)  # its traces are counted and dropped: plain JSON in a temporary folder
    for row in rows:
        print(f"cost {row['loop']} {row['setting']}: {row['host_ms']} ms", flush=True)
    append_rows(outdir / "profiler_cost.csv", rows)


if __name__ == "__main__":
    mode, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    try:
        if mode == "cost":
            cost(out, sys.argv[3])
        else:
            time_and_trace(out, sys.argv[3], sys.argv[4])
    except Exception:  # a failure is logged and the process ends: its threads must not hold it until the timeout
        traceback.print_exc()
        os._exit(1)
    os._exit(0)  # DataLoader workers and compile threads must not hold the process open
