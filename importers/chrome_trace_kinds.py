"""What a Chrome-trace JSON without GPU kernel events is, in one true line: the refusal for a PyTorch profiler
trace that recorded no kernel, and for the Chrome traces no reader takes (a legacy CPU-only autograd trace, a
host-side trace of CUDA API calls, a web browser's performance trace).

Chrome's trace format (the Trace Event Format) is written by many tools; only its events say which one. An event
list is judged by what it holds, never by the file name: its categories (`cat`), its process names (`pid`) and
its event names. The counts in a message come from the whole file, so they are what an independent reader counts.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from tracekit.errors import InputError
from tracekit.importers.regions_common import load_json, plain_head

# A CUDA runtime or driver API call that launches GPU work (kernels, cooperative kernels, graphs).
_LAUNCH_CALL = re.compile(r"^cu(?:da)?(?:Launch|GraphLaunch)")
_CUDA_API = re.compile(r"^cu(?:da)?[A-Z]\w*$")
# Kineto's CPU-side categories (older Kineto capitalised them) and its CUPTI range-profiler category.
_CALL_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "Driver"})
_CPU_OP_CATS = frozenset({"cpu_op", "Operator"})
_RANGE_PROFILER_CAT = "cuda_profiler_range"
# torch.autograd.profiler's export_chrome_trace (PyTorch 1.x) names its two processes so.
_LEGACY_CPU_PID, _LEGACY_GPU_PID = "CPU functions", "CUDA functions"
# Categories only a web browser's tracing writes (Chrome DevTools, chrome://tracing, Perfetto's Chrome data source).
_BROWSER_CATS = re.compile(
    r"^(?:disabled-by-default-)?(?:devtools\b|blink\b|v8\b|toplevel\b|loading\b|cc\b|gpu\b|viz\b)"
)
_JSON_TRACE = re.compile(rb'^(?:\{[^\x00]*"traceEvents"\s*:|\[\s*\{[^\x00]*"ph"\s*:)', re.DOTALL)
MAX_SHOWN = 3
# A Chrome trace no reader takes is parsed whole to say what it is; past this size the generic refusal is cheaper.
MAX_DESCRIBED_BYTES = 512 * 2**20


def _shown(name: object) -> str:
    """An event name as a message shows it: printable characters only, at most 60."""
    text = "".join(ch if ch.isprintable() else "?" for ch in str(name))
    return text if len(text) <= 60 else f"{text[:57]}..."


def _top(counter: Counter[str]) -> str:
    return ", ".join(_shown(name) for name, _ in counter.most_common(MAX_SHOWN))


def describe(events: list[Any]) -> str:
    """Why these events give tracekit no launch, and what to record instead."""
    records = [e for e in events if isinstance(e, dict)]
    cats = Counter(c for e in records if isinstance(c := e.get("cat"), str))
    calls = Counter(str(e.get("name")) for e in records if e.get("cat") in _CALL_CATS and e.get("ph") == "X")
    launches = sum(n for name, n in calls.items() if _LAUNCH_CALL.match(name))
    n_calls, ranges = sum(calls.values()), cats[_RANGE_PROFILER_CAT]
    cpu_ops = sum(cats[c] for c in _CPU_OP_CATS)
    if ranges:
        return (
            f"a PyTorch profiler trace with {n_calls:,} CUDA runtime calls ({launches:,} kernel launches) and "
            f"{ranges:,} CUPTI range-profiler events (cuda_profiler_range) but no GPU kernel activity: it was "
            "recorded in the range profiler's mode (torch.profiler's experimental_config with profiler_metrics), "
            "which writes each kernel's counters as a range instead of its kernel event; record again without "
            "profiler_metrics to import the kernels"
        )
    if n_calls:
        what = (
            f"{launches:,} of them kernel launches whose kernel events are missing (CUDA activity was not recorded)"
            if launches
            else f"none of them a kernel launch ({_top(calls)})"
        )
        advice = (
            "record with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])"
            if launches
            else "the profiled code ran no GPU kernel; profile the steps that run the GPU work"
        )
        return (
            f"a PyTorch profiler trace with {n_calls:,} CUDA runtime calls, {what}, and no GPU kernel activity: "
            f"{advice}"
        )
    if cpu_ops:
        return (
            f"a CPU-only PyTorch profiler trace ({cpu_ops:,} CPU operator events, no CUDA runtime calls and no GPU "
            "kernel activity): it was recorded without ProfilerActivity.CUDA; record with "
            "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])"
        )
    pids = Counter(p for e in records if isinstance(p := e.get("pid"), str))
    if pids[_LEGACY_CPU_PID] or pids[_LEGACY_GPU_PID]:
        gpu = pids[_LEGACY_GPU_PID]
        if gpu:
            return (
                f"a legacy torch.autograd.profiler trace (export_chrome_trace) with {gpu:,} GPU kernel events, "
                "which record no grid, block or device: profile with torch.profiler.profile(activities="
                "[ProfilerActivity.CPU, ProfilerActivity.CUDA]) and import its trace"
            )
        return (
            f"a CPU-only PyTorch profiler trace (legacy torch.autograd.profiler export_chrome_trace: "
            f"{pids[_LEGACY_CPU_PID]:,} CPU operator events, no GPU kernel activity): it was recorded without "
            "use_cuda; profile with torch.profiler.profile(activities=[ProfilerActivity.CPU, "
            "ProfilerActivity.CUDA]) and import its trace"
        )
    names = Counter(str(e.get("name")) for e in records if e.get("ph") in ("X", "B"))
    api = Counter({name: n for name, n in names.items() if _CUDA_API.match(name)})
    if api and api.total() * 2 > names.total():
        return (
            f"a Chrome trace of host-side CUDA API calls ({api.total():,} calls: {_top(api)}) with no GPU kernel "
            "activity: it shows when the CPU called CUDA, not what the GPU ran; record the GPU side with "
            "nsys profile --trace=cuda and import its SQLite export (nsys export --type sqlite)"
        )
    browser = Counter({cat: n for cat, n in cats.items() if any(_BROWSER_CATS.match(c) for c in cat.split(","))})
    if browser:
        return (
            f"a web browser's performance trace (Chrome DevTools or chrome://tracing; categories {_top(browser)}), "
            "not a GPU profile"
        )
    return (
        f"a Chrome trace of {len(records):,} events ({_top(cats) or _top(names) or 'none named'}) with no GPU kernel "
        "events and no intra-kernel region layout tracekit reads (kernels come from torch.profiler traces, regions "
        "from the sm-row, cuprof and CuTe DSL profilers: --map layout=NAME forces one)"
    )


def no_gpu_activity(path: Path) -> str:
    """The refusal of a PyTorch profiler trace whose events hold no kernel and no memory copy."""
    document = load_json(path)
    events = document.get("traceEvents") if isinstance(document, dict) else document
    return describe(events if isinstance(events, list) else [])


def unread_chrome_trace(path: Path, head: bytes) -> str | None:
    """What a Chrome-trace JSON that no reader took is; None when the file is not one."""
    text = plain_head(head).removeprefix(b"\xef\xbb\xbf").lstrip()
    if not _JSON_TRACE.match(text[:4096]):
        return None
    try:
        if path.stat().st_size > MAX_DESCRIBED_BYTES:
            return None
        document = load_json(path, MAX_DESCRIBED_BYTES)
    except (OSError, InputError, RecursionError):  # not JSON after all, or too large to describe: the generic line
        return None
    events = document.get("traceEvents") if isinstance(document, dict) else document
    return describe(events) if isinstance(events, list) else None
