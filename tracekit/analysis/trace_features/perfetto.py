"""A step's critical path written back as a Chrome trace (JSON), to open in ui.perfetto.dev or chrome://tracing
beside the rest of the step (HTA's `overlay_critical_path_analysis`).

The step's GPU activities (one track per stream), its API calls and CPU ranges (one track per thread), and a
"Critical path" process holding the path's links in order, each with its reason; every activity on the path has
`args.critical` 1 (HTA's mark, so a filter written for HTA's overlaid trace finds them) and the path's links are
joined by flow arrows. Times are the trace's own (µs, as Chrome traces are written).
"""

from __future__ import annotations

import polars as pl

from tracekit.analysis.steps.types import PathSegment, Step
from tracekit.host_events import HostEvents

GPU_PID, CPU_PID, PATH_PID = 1, 2, 3
NS_PER_US = 1000.0


def _x(name: str, pid: int, tid: int, start_ns: int, end_ns: int, args: dict[str, object]) -> dict[str, object]:
    return {
        "ph": "X",
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": start_ns / NS_PER_US,
        "dur": (end_ns - start_ns) / NS_PER_US,
        "args": args,
    }


def _meta(pid: int, name: str, tid: int | None = None) -> dict[str, object]:
    """A process's name, or a thread's (a track) where `tid` is given."""
    kind = "process_name" if tid is None else "thread_name"
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid or 0, "args": {"name": name}}


def critical_path_trace(events: HostEvents, step: Step, path: tuple[PathSegment, ...]) -> dict[str, object]:
    """The Chrome trace of `step` with its critical path `path` flagged and laid out on a track of its own."""
    start_ns, end_ns = step.start_ns, max(step.end_ns, max((s.end_ns for s in path), default=step.end_ns))
    inside = (pl.col("end_ns") > start_ns) & (pl.col("start_ns") < end_ns)
    on_path = {(s.name, s.start_ns, s.end_ns) for s in path if s.kind == "gpu"}
    trace: list[dict[str, object]] = [_meta(GPU_PID, "GPU"), _meta(CPU_PID, "CPU"), _meta(PATH_PID, "Critical path")]
    gpu = events.gpu.filter(inside).select("name", "kind", "stream_id", "start_ns", "end_ns", "correlation_id")
    for stream in gpu["stream_id"].unique().sort().to_list():
        trace.append(_meta(GPU_PID, f"stream {stream}" if stream is not None else "stream ?", stream or -1))
    for name, kind, stream, start, end, correlation in gpu.iter_rows():
        args: dict[str, object] = {"kind": kind, "correlation": correlation}
        if (name, start, end) in on_path:
            args["critical"] = 1
        trace.append(_x(name or "", GPU_PID, stream if stream is not None else -1, start, end, args))
    for name, thread, start, end, correlation in (
        events.calls.filter(inside).select("name", "thread", "start_ns", "end_ns", "correlation_id").iter_rows()
    ):
        trace.append(_x(name or "", CPU_PID, thread or 0, start, end, {"correlation": correlation}))
    for name, domain, thread, start, end in (
        events.ranges.filter(inside).select("name", "domain", "thread", "start_ns", "end_ns").iter_rows()
    ):
        trace.append(_x(name or "", CPU_PID, thread or 0, start, end, {"domain": domain}))
    for index, segment in enumerate(path):
        link = {"link": index, "kind": segment.kind, "reason": segment.reason, "critical": 1}
        trace.append(_x(segment.name, PATH_PID, 0, segment.start_ns, segment.end_ns, link))
        if index:  # a flow arrow from the link before to this one
            before = path[index - 1]
            trace.append(
                {
                    "ph": "s",
                    "id": index,
                    "name": "critical path",
                    "cat": "critical_path",
                    "pid": PATH_PID,
                    "tid": 0,
                    "ts": before.start_ns / NS_PER_US,
                }
            )
            trace.append(
                {
                    "ph": "f",
                    "bp": "e",
                    "id": index,
                    "name": "critical path",
                    "cat": "critical_path",
                    "pid": PATH_PID,
                    "tid": 0,
                    "ts": segment.start_ns / NS_PER_US,
                }
            )
    return {
        "traceEvents": trace,
        "displayTimeUnit": "ns",
        "otherData": {"step": step.label, "source": events.source, "critical_path_links": len(path)},
    }
