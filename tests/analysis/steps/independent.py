"""An independent reading of a Kineto trace for the step tests: the json module, plain Python lists and a sort,
nothing of tracekit's frames, so the busy/idle union is checked against a second computation."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def load(path: Path) -> list[dict]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)["traceEvents"]


def ns(value: float) -> int:
    return round(value * 1000)


def gpu_intervals(events: list[dict]) -> list[tuple[int, int]]:
    return [
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in events
        if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES
    ]


def union_inside(intervals: list[tuple[int, int]], start: int, end: int) -> int:
    """The length of the union of `intervals` inside [start, end), by sorting and sweeping."""
    clipped = sorted((max(a, start), min(b, end)) for a, b in intervals if b > start and a < end)
    total, reach = 0, start
    for a, b in clipped:
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total
