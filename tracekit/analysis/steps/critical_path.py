"""One step replayed with changed kernel durations, and its critical path.

Each GPU activity starts when its last constraint is met, plus that constraint's latency: its launch call issued
it (host: a launch's latency, several us), the activity before it on its stream ended (stream order), or work on
another stream it waited for ended (an event: inferred where neither of the first two explains its start and another
stream's activity ended just before it; both a queue's latency, about 1 us). The binding constraint's latency is the
trace's; the others' are the trace's typical ones (`constraints`), so a change that makes another constraint bind
starts the activity after that one's latency. A host thread blocked in a synchronizing call returns once the GPU
work it waited for ends (plus the observed return latency), and everything that thread does afterwards moves by as
much. Replaying the step with some kernels shorter moves every activity and sync by what its constraints allow: a
kernel off the critical path buys nothing, one on it buys its saving until another path binds. Walking back from the
step's last activity along the binding constraints gives the critical path.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Hashable, Sequence
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
    binding: str = "host"
    # after each constraint (`constraints`)
    host_latency: int = 0
    queue_latency: int = 0

    def ready_at(self, host: int, stream: int, event: int) -> int:
        """When the activity starts, given when its launch was issued and its stream's and event's work ended."""
        return ready_at(self.host_latency, self.queue_latency, host, stream, event, self.start)


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


HOST, STREAM, EVENT = 0, 1, 2  # the constraint that bound an activity's start (`Constraints.binding`)
BINDINGS = ("host", "stream", "event")


@dataclass(frozen=True)
class Constraints:
    """Each activity's constraints as the trace shows them, one entry per activity in start order: flat arrays, not
    an object per activity (a whole trace's replay holds a million activities: `unprofiled`)."""

    prev: array[int]  # the activity before it on its stream; -1: none
    dep: array[int]  # the other stream's activity it waited for; -1: none
    binding: array[int]  # HOST, STREAM or EVENT
    # after each constraint (see `constraints`): where another constraint binds after a change, the activity starts
    # that constraint's latency after it, not the one the trace showed after its old one
    host_latency: array[int]
    queue_latency: array[int]


def ready_at(host_latency: int, queue_latency: int, host: int, stream: int, event: int, recorded_start: int) -> int:
    """When an activity starts, given when its launch was issued and its stream's and event's work ended (NONE: no
    such constraint; none at all, it starts as recorded), each plus its latency."""
    start = NONE
    if host != NONE:
        start = host + host_latency
    if stream != NONE:
        start = max(start, stream + queue_latency)
    if event != NONE:
        start = max(start, event + queue_latency)
    return start if start != NONE else recorded_start


def constraints(
    kinds: Sequence[Hashable],
    streams: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    issues: Sequence[int],
) -> Constraints:
    """Each activity's stream predecessor, inferred event dependency, binding constraint and latency after each
    constraint (`kinds`: a label of its kind; `issues`: its launch call's start, NONE where none)."""
    prev, dep, binding, latency = _bindings(streams, starts, ends, issues)
    host_latency, queue_latency = _latencies(kinds, starts, ends, issues, prev, dep, binding, latency)
    return Constraints(prev, dep, binding, host_latency, queue_latency)


def _bindings(
    streams: Sequence[int], starts: Sequence[int], ends: Sequence[int], issues: Sequence[int]
) -> tuple[array[int], array[int], array[int], array[int]]:
    """Each activity's stream predecessor, the other stream's activity it waited for (inferred where neither its
    launch nor its stream explains its start and another stream's work ended just before it), the constraint that
    bound its start and its latency after it, as the trace shows."""
    count = len(starts)
    prev, dep = array("q", [-1]) * count, array("q", [-1]) * count
    binding, latency = array("b", [HOST]) * count, array("q", [0]) * count
    last_on: dict[int, int] = {}
    ended_on: dict[int, tuple[array[int], array[int]]] = {}  # stream -> (ends sorted, their activities)
    for index in range(count):
        stream_id, start, host = streams[index], starts[index], issues[index]
        before = last_on.get(stream_id, -1)
        prev[index], last_on[stream_id] = before, index
        stream = ends[before] if before >= 0 else NONE
        ready = max(host, stream)
        if start - ready > EVENT_TOLERANCE_NS:
            # the activity of another stream that ended last before this one started (one look-up per stream)
            latest_end, latest = NONE, -1
            for other, (other_ends, other_ops) in ended_on.items():
                at = bisect.bisect_right(other_ends, start) - 1
                if other != stream_id and at >= 0 and (other_ends[at], other_ops[at]) > (latest_end, latest):
                    latest_end, latest = other_ends[at], other_ops[at]
            if latest >= 0 and start - latest_end <= EVENT_TOLERANCE_NS:
                dep[index] = latest
        event = ends[dep[index]] if dep[index] >= 0 else NONE
        ready = max(host, stream, event)
        binding[index] = EVENT if ready == event and event != NONE else STREAM if ready == stream else HOST
        latency[index] = max(0, start - ready) if ready != NONE else 0
        own_ends, own_ops = ended_on.setdefault(stream_id, (array("q"), array("q")))
        at = bisect.bisect_right(own_ends, ends[index])  # after any that ended as it did: those came first
        own_ends.insert(at, ends[index])
        own_ops.insert(at, index)
    return prev, dep, binding, latency


# Where the trace has no activity of a kind bound by a constraint: about what an H100 or H200 shows unprofiled
# between a launch call's start and its kernel's start, and between two kernels queued back to back.
HOST_LATENCY_NS = 5_000
QUEUE_LATENCY_NS = 1_000


def _latencies(
    kinds: Sequence[Hashable],
    starts: Sequence[int],
    ends: Sequence[int],
    issues: Sequence[int],
    prev: array[int],
    dep: array[int],
    binding: array[int],
    latency: array[int],
) -> tuple[array[int], array[int]]:
    """Each activity's latency after its launch and after its stream's or event's work. The binding constraint's is
    the trace's; one that did not bind gets the trace's median for activities of the same kind it did bind (launch to
    start: a few us; queued back to back: about 1 us), capped so that it still would not have bound. A launch's
    latency is far longer than a queue's, so an activity the host issued late in the trace but finds queued once the
    host is faster (the profiler's cost out, a host change) follows its stream's work by a queue's latency, not a
    launch's."""
    bound: dict[tuple[int, Hashable], list[int]] = {}
    for index in range(len(starts)):
        if binding[index] != EVENT:
            bound.setdefault((binding[index], kinds[index]), []).append(latency[index])
    typical = {key: sorted(found)[len(found) // 2] for key, found in bound.items()}
    host_latency, queue_latency = array("q", [0]) * len(starts), array("q", [0]) * len(starts)
    for index in range(len(starts)):
        before, waited, start = prev[index], dep[index], starts[index]
        queued = max(ends[before] if before >= 0 else NONE, ends[waited] if waited >= 0 else NONE)
        if binding[index] == HOST:
            host_latency[index] = latency[index]
            usual = typical.get((STREAM, kinds[index]), QUEUE_LATENCY_NS)
            queue_latency[index] = max(0, min(usual, start - queued)) if queued != NONE else 0
        else:
            queue_latency[index] = latency[index]  # the stream's or the event's, whichever ended last
            usual = typical.get((HOST, kinds[index]), HOST_LATENCY_NS)
            issue = issues[index]
            host_latency[index] = max(0, min(usual, start - issue)) if issue != NONE else 0
    return host_latency, queue_latency


def _constraints(ops: list[Op]) -> None:
    """`constraints` set on a step's activities."""
    found = constraints(
        [op.kind for op in ops],
        [op.stream for op in ops],
        [op.start for op in ops],
        [op.end for op in ops],
        [op.issue if op.issue is not None else NONE for op in ops],
    )
    for index, op in enumerate(ops):
        op.prev = found.prev[index] if found.prev[index] >= 0 else None
        op.dep = found.dep[index] if found.dep[index] >= 0 else None
        op.binding = BINDINGS[found.binding[index]]
        op.host_latency, op.queue_latency = found.host_latency[index], found.queue_latency[index]


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
