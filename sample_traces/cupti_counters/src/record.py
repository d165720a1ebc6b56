"""A PyTorch trace with CUPTI range-profiler counters per kernel (HTA's "CUPTI counter analysis"), for issue 43.

    python3 record.py OUTDIR

torchvision's ResNet-18 forward and backward (batch 32) and a bf16 GEMM, traced by torch.profiler with
`_ExperimentalConfig(profiler_metrics=..., profiler_measure_per_kernel=True)`: Kineto then profiles each kernel in
its own CUPTI range and writes its counters as a `cuda_profiler_range` event. Two traces: the counters alone
(CPU activity and the range profiler, as HTA's docs record them) and the counters with CUDA activity too, if this
torch allows both at once (the log says). The SASS FLOP counts are checked against the GEMM's own 2*M*N*K.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import traceback
from pathlib import Path

import torch
import torchvision
from torch._C._profiler import _ExperimentalConfig
from torch.profiler import ProfilerActivity, profile, record_function

METRICS = [
    "kineto__tensor_core_insts",
    "kineto__cuda_core_flops",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
]
M = N = K = 2048


def work() -> None:
    model = torchvision.models.resnet18().cuda()
    x = torch.randn(32, 3, 224, 224, device="cuda")
    a = torch.randn(M, K, device="cuda")
    b = torch.randn(K, N, device="cuda")
    for _ in range(2):  # warm-up
        model(x).sum().backward()
        torch.mm(a, b)
    torch.cuda.synchronize()

    def step() -> None:
        with record_function("resnet18_step"):
            model(x).sum().backward()
        with record_function(f"fp32_gemm_{M}x{N}x{K}"):
            torch.mm(a, b)
        torch.cuda.synchronize()

    return step


def record(out: Path, name: str, activities: list) -> None:
    step = work()
    config = _ExperimentalConfig(profiler_metrics=METRICS, profiler_measure_per_kernel=True)
    with profile(activities=activities, record_shapes=True, experimental_config=config) as prof:
        step()
    raw = out / f"{name}.pt.trace.json"
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as src, gzip.open(str(raw) + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    with open(raw) as handle:
        events = json.load(handle)["traceEvents"]
    cats = {}
    for e in events:
        cats[e.get("cat")] = cats.get(e.get("cat"), 0) + 1
    ranges = [e for e in events if e.get("cat") == "cuda_profiler_range"]
    print(name, "categories", cats, flush=True)
    for e in ranges[:3]:
        print("  ", json.dumps(e)[:600], flush=True)
    raw.unlink()


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    print("torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
    for name, activities in (
        ("counters_cpu", [ProfilerActivity.CPU]),
        ("counters_cpu_cuda", [ProfilerActivity.CPU, ProfilerActivity.CUDA]),
    ):
        try:
            record(out, name, activities)
        except Exception:  # noqa: BLE001 - the log says why; the other trace is still tried
            traceback.print_exc()


if __name__ == "__main__":
    main()
