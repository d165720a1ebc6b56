"""Triton kernels with a known line-level problem and its fix, timed with CUDA events first, then PC-sampled by
Proton (Triton's profiler, CUPTI PC sampling): issue 45's Proton reader is tested on what this writes.

    python3 proton_cases.py OUTDIR time      # CUDA-event timings first (OUTDIR/timings.csv)
    python3 proton_cases.py OUTDIR           # then, in a new process, Proton's PC sampling (proton_pcsampling.hatchet)

Cases (each a kernel before its fix and after; the problem line carries `[case: limiter]`, the fix's `[case: fixed]`):
- strided_gather: a copy that reads with a stride of 33 elements (32 sectors for 32 lanes), against the plain copy
  (the coalescing example of every CUDA performance guide, here in Triton);
- atomic_histogram: every element adds to one of 16 global bins with an atomic, against a per-block histogram
  reduced in registers and added once per block (the privatization of PMPP ch. 9).
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import sys
import traceback
from pathlib import Path

import torch
import triton
import triton.language as tl

N = 1 << 24
BLOCK = 1024
STRIDE = 33
BINS = 16


@triton.jit
def strided_gather(src, dst, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src + (offs * STRIDE) % n, mask=mask)  # [strided_gather: limiter]
    tl.store(dst + offs, x, mask=mask)


@triton.jit
def plain_copy(src, dst, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src + offs, mask=mask)  # [strided_gather: fixed]
    tl.store(dst + offs, x, mask=mask)


@triton.jit
def atomic_histogram(keys, bins, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    k = tl.load(keys + offs, mask=mask, other=0) % BINS
    tl.atomic_add(bins + k, 1, mask=mask)  # [atomic_histogram: limiter]


@triton.jit
def block_histogram(keys, bins, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    k = tl.load(keys + offs, mask=mask, other=0) % BINS
    counts = tl.histogram(k, BINS)  # N is a multiple of BLOCK: every lane holds a key
    tl.atomic_add(bins + tl.arange(0, BINS), counts)  # [atomic_histogram: fixed]


def launches():
    src = torch.randn(N, device="cuda")
    dst = torch.empty_like(src)
    keys = torch.randint(0, 1 << 20, (N,), device="cuda", dtype=torch.int32)
    bins = torch.zeros(BINS, device="cuda", dtype=torch.int32)
    grid = (triton.cdiv(N, BLOCK),)
    return {
        ("strided_gather", "before"): lambda: strided_gather[grid](src, dst, N, STRIDE=STRIDE, BLOCK=BLOCK),
        ("strided_gather", "after"): lambda: plain_copy[grid](src, dst, N, STRIDE=STRIDE, BLOCK=BLOCK),
        ("atomic_histogram", "before"): lambda: atomic_histogram[grid](keys, bins, N, BINS=BINS, BLOCK=BLOCK),
        ("atomic_histogram", "after"): lambda: block_histogram[grid](keys, bins, N, BINS=BINS, BLOCK=BLOCK),
    }


def time_all(out: Path) -> None:
    rows = []
    for (case, variant), launch in launches().items():
        for _ in range(5):
            launch()
        torch.cuda.synchronize()
        times = []
        for _ in range(51):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            launch()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e6)
        rows.append(
            {
                "case": case,
                "variant": variant,
                "median_ns": round(statistics.median(times)),
                "min_ns": round(min(times)),
                "max_ns": round(max(times)),
                "launches": len(times),
            }
        )
        print(rows[-1], flush=True)
    with open(out / "timings.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def profile(out: Path) -> None:
    import triton.profiler as proton

    tried = []
    attempts = [
        dict(backend="cupti", mode="pcsampling"),
        dict(backend="cupti_pcsampling"),
    ]
    for kwargs in attempts:
        try:
            proton.start(str(out / "proton_pcsampling"), context="shadow", **kwargs)
        except Exception as error:  # noqa: BLE001 - an API of another Triton version: try the next form
            tried.append(f"{kwargs}: {type(error).__name__}: {error}")
            continue
        tried.append(f"{kwargs}: started")
        for (case, variant), launch in launches().items():
            with proton.scope(f"{case}.{variant}"):
                for _ in range(20):
                    launch()
        torch.cuda.synchronize()
        proton.finalize()
        break
    (out / "proton_api.log").write_text("\n".join(tried) + "\n")
    print("\n".join(tried), flush=True)


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    (out / "versions.txt").write_text(
        json.dumps(
            {
                "torch": torch.__version__,
                "triton": triton.__version__,
                "gpu": torch.cuda.get_device_name(),
                "cuda": torch.version.cuda,
            }
        )
        + "\n"
    )
    if sys.argv[2:] == ["time"]:
        time_all(out)  # timings first, in a process of its own, before any profiler is loaded
        return
    try:
        # in a process of its own: Proton reads each kernel's line table when its module loads, so no kernel may
        # have loaded before the profiler starts
        profile(out)
    except Exception:  # noqa: BLE001 - the log says why, the timings stay
        traceback.print_exc()
        (out / "proton_error.log").write_text(traceback.format_exc())
    for path in sorted(out.iterdir()):
        print(path.name, path.stat().st_size)


if __name__ == "__main__":
    os.environ.setdefault("TRITON_PRINT_AUTOTUNING", "0")
    main()
