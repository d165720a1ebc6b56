"""The profiler's host cost per recorded event, measured on this machine (`tracekit calibrate --profiler`; the
shipped calibration's `sample_traces/steps/src/workloads.py cost` runs the same loops).

Each loop's iterations record known events: CPU operators alone, an operator that launches a kernel, the same under
eight Python frames (with_stack records each), and a record_function range around an operator. Each is timed bare
(median of 5) and under one torch.profiler setting (median of 5), in a process of its own (a profiler that has run
once leaves the process slower); the events one profiled run recorded are counted from its own trace. Needs only
PyTorch and a CUDA GPU: `python -m tracekit.profiler_cost_bench SETTING` prints one JSON row per line.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LOOP = 3000
EVENT_KINDS = ("cpu_op", "python_function", "user_annotation", "cuda_runtime", "memory", "kernel")
SETTINGS: dict[str, dict[str, Any]] = {
    "shapes": {"activities": "cpu,cuda", "record_shapes": True},
    "cpu_cuda": {"activities": "cpu,cuda"},
    "cuda_only": {"activities": "cuda"},
    "stack": {"activities": "cpu,cuda", "record_shapes": True, "with_stack": True},
    "memory": {"activities": "cpu,cuda", "profile_memory": True},
}


def profiler_kwargs(setting: str) -> dict[str, Any]:
    from torch.profiler import ProfilerActivity

    options = dict(SETTINGS[setting])
    names = str(options.pop("activities")).split(",")
    options["activities"] = [ProfilerActivity.CPU if n == "cpu" else ProfilerActivity.CUDA for n in names]
    return options


def _nested(depth: int, body: Callable[[], None]) -> None:
    if depth == 0:
        body()
    else:
        _nested(depth - 1, body)


def cost_loops() -> dict[str, Callable[[], None]]:
    import torch

    cpu = torch.ones(16)
    gpu = torch.ones(16, device="cuda")

    def cpu_ops() -> None:
        for _ in range(LOOP):
            cpu.add_(1)

    def cuda_ops() -> None:
        for _ in range(LOOP):
            gpu.add_(1)

    def deep_cuda_ops() -> None:
        op = gpu.add_
        for _ in range(LOOP):
            _nested(8, lambda: op(1))

    def annotated_cuda_ops() -> None:
        for _ in range(LOOP):
            with torch.profiler.record_function("range"):
                gpu.add_(1)

    return {"cpu_ops": cpu_ops, "cuda_ops": cuda_ops, "deep_cuda_ops": deep_cuda_ops, "annotated": annotated_cuda_ops}


def host_ms(body: Callable[[], None]) -> float:
    import torch

    torch.cuda.synchronize()
    started = time.perf_counter()
    body()
    elapsed = time.perf_counter() - started
    torch.cuda.synchronize()
    return elapsed * 1e3


def recorded_events(path: Path) -> dict[str, int]:
    """The events a trace holds, by what each costs the host to record."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path) as handle:
        events = json.load(handle)["traceEvents"]
    counts = dict.fromkeys(EVENT_KINDS, 0)
    for event in events:
        kind = "memory" if event.get("name") == "[memory]" else event.get("cat")
        if kind in counts:
            counts[kind] += 1
    return counts


def measure(setting: str, export: Callable[[Any, Path], None] | None = None) -> list[dict[str, Any]]:
    """Each loop bare and under `setting`, with the events its profiled run recorded (`export` writes the trace;
    default: a plain Chrome trace in a temporary folder)."""
    from torch.profiler import profile

    loops = cost_loops()
    for body in loops.values():
        body()  # warm-up
    rows: list[dict[str, Any]] = []
    for name, body in loops.items():
        bare = statistics.median(host_ms(body) for _ in range(5))
        rows.append({"loop": name, "setting": "none", "iterations": LOOP, "host_ms": f"{bare:.4f}", "of": setting})
    with tempfile.TemporaryDirectory() as scratch:
        for name, body in loops.items():
            spent, counted = [], []
            for run in range(5):
                with profile(**profiler_kwargs(setting)) as prof:
                    spent.append(host_ms(body))
                path = Path(scratch) / f"cost_{name}.{setting}.{run}.pt.trace.json"
                (export or (lambda p, out: p.export_chrome_trace(str(out))))(prof, path)
                counted.append(recorded_events(path))
                path.unlink()
            # every run records the same events; a run whose CUDA activity was lost (seen with TEARDOWN_CUPTI=1:
            # some sessions' runtime calls and kernels never reach the trace) counts fewer, none counts more
            found = {kind: max(c[kind] for c in counted) for kind in EVENT_KINDS}
            row = {"loop": name, "setting": setting, "iterations": LOOP, "host_ms": f"{statistics.median(spent):.4f}"}
            rows.append({**row, "of": setting, **found})
    for row in rows:
        for kind in EVENT_KINDS:
            row.setdefault(kind, 0)
    return rows


if __name__ == "__main__":
    for found in measure(sys.argv[1]):
        print(json.dumps(found), flush=True)
