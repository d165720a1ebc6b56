"""One step replayed with changed kernel durations, and its critical path.

Each GPU activity starts when its last constraint is met, plus that constraint's latency: its launch call issued
it (host: a launch's latency, several us), the activity before it on its stream ended (stream order), or work on
another stream it waited for ended (an event: inferred where neither of the first two explains its start and another
stream's activity ended just before it; both a queue's latency, about 1 us). The binding constraint's latency is the
trace's; the others' are the trace's typical ones (`_latencies`), so a change that makes another constraint bind
starts the activity after that one's latency. A host thread blocked in a synchronizing call returns once the GPU
work it waited for ends (plus the observed return latency), and everything that thread does afterwards moves by as
much. Replaying the step with some kernels shorter moves every activity and sync by what its constraints allow: a
kernel off the critical path buys nothing, one on it buys its saving until another path binds. Walking back from the
step's last activity along the binding constraints gives the critical path.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from tracekit.analysis.steps.calls import SYNC
from tracekit.analysis.steps.causes import HostSpans, HostTime
from tracekit.analysis.steps.types import SYNCHRONIZATION, PathSegment, Step

EVENT_TOLERANCE_NS = 2_000  # a cross-stream wait is inferred when another stream's work ended this close before
NONE = -(2**62)


@dataclass(slots=True)  # one per GPU activity: a million-kernel trace holds a million
class Op:
    index: int
    name: str
    kind: str
    stream: int
    start: int
    end: int
    issue: int | None
    thread: int | None
    correlation: int | None = None
    prev: int | None = None  # the activity before it on its stream
    dep: int | None = None  # the other stream's activity it waited for
    latency: int = 0  # after its binding constraint, as the trace shows
    binding: str = "host"
    # after each constraint (see `_latencies`): where another constraint binds after a change, the activity starts
    # that constraint's latency after it, not the one the trace showed after its old one
    host_latency: int = 0
    queue_latency: int = 0

    def ready_at(self, host: int, stream: int, event: int) -> int:
        """When the activity starts, given when its launch was issued and its stream's and event's work ended."""
        starts = [
            at + latency
            for at, latency in ((host, self.host_latency), (stream, self.queue_latency), (event, self.queue_latency))
            if at != NONE
        ]
        return max(starts) if starts else self.start


@dataclass(frozen=True)
class Replay:
    start_ns: int
    end_ns: int  # the step's end: its last activity or its host end, after the change
    op_end_ns: tuple[int, ...]


@dataclass(frozen=True)
class StepTimeline:
    """One step's activities and synchronizing calls, in the order they happened."""

    ops: tuple[Op, ...]
    syncs: tuple[tuple[int, int, int], ...]  # thread, start_ns, end_ns
    window_start_ns: int
    host_end_ns: int  # when the host left the step's range
    host_thread: int | None


def timeline(gpu: pl.DataFrame, calls: pl.DataFrame, step: Step) -> StepTimeline:
    """The activities that start inside the step's window with their launch calls, and the sync calls there."""
    start_ns, end_ns = step.start_ns, step.end_ns
    ops_frame = (
        gpu.filter((pl.col("start_ns") >= start_ns) & (pl.col("start_ns") < end_ns))
        .join(
            calls.unique("correlation_id", keep="first").select(
                "correlation_id", pl.col("start_ns").alias("issue_ns"), "thread"
            ),
            on="correlation_id",
            how="left",
        )
        .sort("start_ns", "end_ns")
    )
    columns = ("name", "kind", "stream_id", "start_ns", "end_ns", "issue_ns", "thread", "correlation_id")
    ops = [
        Op(i, name or "", kind, stream if stream is not None else -1, s, e, issue, thread, correlation)
        for i, (name, kind, stream, s, e, issue, thread, correlation) in enumerate(
            ops_frame.select(columns).iter_rows()
        )
    ]
    _constraints(ops)
    syncs_frame = calls.filter(
        (pl.col("call_class") == SYNC) & (pl.col("end_ns") > start_ns) & (pl.col("start_ns") < end_ns)
    ).sort("end_ns")
    syncs = tuple(
        (int(t), int(s), int(e)) for t, s, e in syncs_frame.select("thread", "start_ns", "end_ns").iter_rows()
    )
    threads = [op.thread for op in ops if op.thread is not None]
    host_thread = max(set(threads), key=threads.count) if threads else None
    return StepTimeline(tuple(ops), syncs, start_ns, step.host_end_ns, host_thread)


def _constraints(ops: list[Op]) -> None:
    """Each activity's stream predecessor, inferred event dependency, binding constraint and fixed latency."""
    last_on: dict[int, int] = {}
    ended_on: dict[int, list[tuple[int, int]]] = {}  # stream -> (end, index), sorted, for the event inference
    for op in ops:
        op.prev = last_on.get(op.stream)
        last_on[op.stream] = op.index
        host = op.issue if op.issue is not None else NONE
        stream = ops[op.prev].end if op.prev is not None else NONE
        ready = max(host, stream)
        if op.start - ready > EVENT_TOLERANCE_NS:
            # the activity of another stream that ended last before this one started (one look-up per stream)
            latest: tuple[int, int] | None = None
            for other, ended in ended_on.items():
                if other == op.stream:
                    continue
                at = bisect.bisect_right(ended, (op.start, len(ops))) - 1
                if at >= 0 and (latest is None or ended[at] > latest):
                    latest = ended[at]
            if latest is not None and op.start - latest[0] <= EVENT_TOLERANCE_NS:
                op.dep = latest[1]
        event = ops[op.dep].end if op.dep is not None else NONE
        ready = max(host, stream, event)
        op.binding = "event" if ready == event and event != NONE else "stream" if ready == stream else "host"
        op.latency = max(0, op.start - ready) if ready != NONE else 0
        bisect.insort(ended_on.setdefault(op.stream, []), (op.end, op.index))
    _latencies(ops)


# Where the trace has no activity of a kind bound by a constraint: about what an H100 or H200 shows unprofiled
# between a launch call's start and its kernel's start, and between two kernels queued back to back.
HOST_LATENCY_NS = 5_000
QUEUE_LATENCY_NS = 1_000


def _latencies(ops: list[Op]) -> None:
    """Each activity's latency after each constraint. The binding one is the trace's; a constraint that did not
    bind gets the trace's median for activities of the same kind it did bind (launch to start: a few us; queued
    back to back: about 1 us), capped so that it still would not have bound. A launch's latency is far longer than
    a queue's, so an activity the host issued late in the trace but finds queued once the host is faster (the
    profiler's cost out, a host change) follows its stream's work by a queue's latency, not a launch's."""
    typical: dict[tuple[str, str], int] = {}
    for binding in ("host", "stream"):
        for kind in {op.kind for op in ops}:
            found = sorted(op.latency for op in ops if op.binding == binding and op.kind == kind)
            if found:
                typical[binding, kind] = found[len(found) // 2]
    for op in ops:
        queued = max(ops[op.prev].end if op.prev is not None else NONE, ops[op.dep].end if op.dep is not None else NONE)
        if op.binding == "host":
            op.host_latency = op.latency
            usual = typical.get(("stream", op.kind), QUEUE_LATENCY_NS)
            op.queue_latency = max(0, min(usual, op.start - queued)) if queued != NONE else 0
        else:
            op.queue_latency = op.latency  # the stream's or the event's, whichever ended last
            usual = typical.get(("host", op.kind), HOST_LATENCY_NS)
            op.host_latency = max(0, min(usual, op.start - op.issue)) if op.issue is not None else 0


def replay(line: StepTimeline, duration_of: Callable[[Op], int] | None = None) -> Replay:
    """The step with each activity lasting `duration_of(op)` (default: as recorded)."""
    ops = line.ops
    new_end = [0] * len(ops)
    shifts: dict[int, tuple[list[int], list[int]]] = {}  # thread -> (sync end times, shift after each)

    def shift(thread: int | None, at: int) -> int:
        if thread is None or thread not in shifts:
            return 0
        times, values = shifts[thread]
        k = bisect.bisect_right(times, at) - 1
        return values[k] if k >= 0 else 0

    syncs = sorted(line.syncs, key=lambda s: s[2])
    ends_sorted = sorted((op.end, op.index) for op in ops)
    si = 0
    for op in ops:
        while si < len(syncs) and syncs[si][2] <= op.start:
            _apply_sync(syncs[si], ends_sorted, new_end, shifts, shift)
            si += 1
        host = op.issue + shift(op.thread, op.issue) if op.issue is not None else NONE
        stream = new_end[op.prev] if op.prev is not None else NONE
        event = new_end[op.dep] if op.dep is not None else NONE
        start = op.ready_at(host, stream, event)
        duration = duration_of(op) if duration_of else op.end - op.start
        new_end[op.index] = start + duration
    while si < len(syncs):
        _apply_sync(syncs[si], ends_sorted, new_end, shifts, shift)
        si += 1
    host_end = line.host_end_ns + shift(line.host_thread, line.host_end_ns)
    end = max([host_end, *new_end]) if ops else host_end
    return Replay(line.window_start_ns, end, tuple(new_end))


def _apply_sync(sync, ends_sorted, new_end, shifts, shift) -> None:  # type: ignore[no-untyped-def]
    """A sync on `thread` returns when the last activity that ended during it ends after the change."""
    thread, start, end = sync
    k = bisect.bisect_right(ends_sorted, (end, 2**62)) - 1
    before = shift(thread, start)
    new_start = start + before
    if k >= 0 and ends_sorted[k][0] >= start:
        op_end, index = ends_sorted[k]
        new_return = max(new_start, new_end[index] + (end - op_end))
    else:
        new_return = new_start + (end - start)
    times, values = shifts.setdefault(thread, ([], []))
    times.append(end)
    values.append(new_return - end)


def critical_path(line: StepTimeline, host: HostTime) -> tuple[PathSegment, ...]:
    """The chain of binding constraints that ends at the step's last activity, first link first. A host link, the
    host's time before it issued an activity the chain waited on, is read as the causes read a gap's host part
    (`_host_links`), so the path and the causes tell one story."""
    ops = line.ops
    if not ops:
        return ()
    spans = host.window(line.window_start_ns, max(line.host_end_ns, max(op.end for op in ops)))
    issued = sorted((op.issue, op.index) for op in ops if op.issue is not None)
    current: int | None = max(ops, key=lambda o: (o.end, o.index)).index
    path: list[PathSegment] = []
    seen = set()
    while current is not None and current not in seen:
        seen.add(current)
        op = ops[current]
        path.append(PathSegment("gpu", op.name, op.start, op.end, op.binding))
        if op.binding == "stream":
            current = op.prev
        elif op.binding == "event":
            current = op.dep
        elif op.issue is not None:
            # the host issued it late: back to the sync the host waited in before (through any sync that waited on
            # no GPU work: the host's own time goes on before it), else to the window start
            current, until = None, op.issue
            while True:
                before = [s for s in line.syncs if s[0] == op.thread and s[2] <= until]
                if not before:
                    path.extend(_host_links(spans, issued, ops, line.window_start_ns, until))
                    break
                _, s_start, s_end = before[-1]
                path.extend(_host_links(spans, issued, ops, s_end, until))
                waited = [o for o in ops if s_start <= o.end <= s_end]
                if waited:
                    current = max(waited, key=lambda o: o.end).index
                    path.append(PathSegment("host", "synchronizing call", s_start, s_end, SYNCHRONIZATION))
                    break
                path.extend(_host_links(spans, issued, ops, s_start, s_end))
                until = s_start
        else:
            current = None
    return tuple(reversed(path))


def _host_links(
    spans: HostSpans, issued: list[tuple[int, int]], ops: tuple[Op, ...], start_ns: int, end_ns: int
) -> list[PathSegment]:
    """The host's time [start_ns, end_ns) on the path, last link first (the path is built backwards): each stretch
    up to an activity's issue judged on the thread that issued it, as the causes judge a gap on the thread that
    issued the activity ending it, and cut by what that thread did (`causes.HostTime`: synchronization in a
    synchronizing call, start-up, launch-bound while issuing, host work otherwise), one link per run of a cause."""
    lo = bisect.bisect_right(issued, (start_ns, len(ops)))
    hi = bisect.bisect_left(issued, (end_ns, -1))
    cuts = [(at, ops[index].thread) for at, index in issued[lo:hi]]
    last_thread = ops[issued[hi][1]].thread if hi < len(issued) else None
    pieces: list[tuple[str, int, int]] = []
    at = start_ns
    for until, thread in [*cuts, (end_ns, last_thread)]:
        for cause, a, b in spans.split(thread, at, until):
            if pieces and pieces[-1][0] == cause and pieces[-1][2] == a:
                pieces[-1] = (cause, pieces[-1][1], b)
            else:
                pieces.append((cause, a, b))
        at = until
    return [PathSegment("host", "host", a, b, cause) for cause, a, b in reversed(pieces)]
