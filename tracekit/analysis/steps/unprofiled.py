"""The trace replayed without the profiler: the same GPU work, the host's time less what recording it cost.

The host threads that launch the GPU's work (the main thread and autograd's) are one chain of CUDA calls in time
order. Between two calls the host did the program's work plus the profiler's: every operator, Python frame,
annotation and memory event recorded there cost `profiler_cost` its measured time, which comes out of the gap; a
call costs what CUPTI's interception of it costs, out of its own recorded length as far as that goes and the rest out
of the host time just before it (CUPTI timestamps a call inside its callbacks: part of their cost lies outside).
A synchronizing call returns when the GPU work it waited for ends in the replay (plus the latency of its return as
recorded), so the host moves with the GPU where it waited on it. Each GPU activity starts when its launch call was
made in the replay, the activity before it on its stream has ended, and any other stream's activity it waited on has
ended (`critical_path._constraints`), plus that constraint's latency (`critical_path._latencies`): a launch's
(call to start, several us) after the call, a queue's (about 1 us) after the stream's or the event's work. Where the
trace shows a launch-bound activity that the faster host now queues early, it follows its stream's work by a queue's
latency, not the launch's it showed. GPU durations are kept: the profiler's cost is the host's.

The result is a `HostEvents` on the replayed clock, so the step analysis reads it as it reads a trace: the step
windows (as CUDA events would time them), busy and idle by cause, the critical path and what to try all come from
the one replay. `scale` multiplies every per-event cost: 1 is the calibration; `anchored` finds the scale at which
the replayed median step equals a step time the user measured.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from tracekit.analysis.steps.calls import SYNC, call_class
from tracekit.analysis.steps.critical_path import NONE, Op, _constraints
from tracekit.analysis.steps.profiler_cost import RUNTIME, ProfilerCost, recorded_cost_ns
from tracekit.host_events import HostEvents

if TYPE_CHECKING:  # numpy in the functions that use it: every command imports this module (through tracekit.api)
    import numpy as np

MIN_CALL_NS = 500  # no API call returns faster than this, whatever its recording cost
LAUNCHING_SHARE = 0.01  # a thread that made at least this share of the launch calls is one of the host chain's


@dataclass(frozen=True, slots=True)  # one per host call of the chain
class Mark:
    start_ns: int
    end_ns: int
    sync: bool
    waited_op: int | None  # the GPU activity a synchronizing call waited for (the last to end during it)


def _host_threads(calls: pl.DataFrame) -> list[int]:
    launches = calls.filter(pl.col("call_class") == "launch").group_by("thread").len()
    total = int(launches["len"].sum() or 0)
    return sorted(t for t, n in launches.iter_rows() if t is not None and n >= LAUNCHING_SHARE * total)


class _Clock:
    """The host chain's replayed times: marks in order, each with its replayed start and end, and the recording
    cost before each point, to map any host time (a range, another thread's call) onto the replayed clock."""

    def __init__(self, marks: list[Mark], cost_at: np.ndarray, cost_cum: np.ndarray) -> None:
        self.marks = marks
        self.cost_at, self.cost_cum = cost_at, cost_cum
        self.new_start = [0] * len(marks)
        self.new_end = [0] * len(marks)
        self.ends = [m.end_ns for m in marks]

    def cost_before(self, t: np.ndarray | int) -> np.ndarray:
        """The recording cost of every event that began before `t`."""
        return self.cost_cum[self.cost_at.searchsorted(t, side="left")]

    def after(self, orig_ns: int, new_ns: int, at_ns: int) -> int:
        """Host time `at_ns`, reached by the host's own work from `orig_ns` (replayed at `new_ns`)."""
        removed = float(self.cost_before(at_ns) - self.cost_before(orig_ns))
        return new_ns + max(0, round((at_ns - orig_ns) - removed))

    def map_one(self, t: int) -> int:
        """One host time on the replayed clock (as `map`), while the replay is under way: from the marks replayed
        so far."""
        k = bisect.bisect_right(self.ends, t) - 1
        return t if k < 0 else self.after(self.ends[k], self.new_end[k], t)

    def map(self, times: np.ndarray) -> np.ndarray:
        """Host times on the replayed clock, once every mark is replayed: each between the two marks around it,
        in proportion (a range or another thread's call keeps its place between the chain's calls; one that began
        just before a call never lands after it), shifted as the first and last marks are outside them."""
        import numpy as np  # here, not at import (see TYPE_CHECKING above)

        if not self.marks:
            return times
        recorded = np.array([t for m in self.marks for t in (m.start_ns, m.end_ns)], dtype=np.float64)
        replayed = np.array([t for pair in zip(self.new_start, self.new_end, strict=True) for t in pair], np.float64)
        order = np.argsort(recorded, kind="stable")
        recorded, replayed = recorded[order], np.maximum.accumulate(replayed[order])
        inside = np.interp(times, recorded, replayed)
        before = times + (replayed[0] - recorded[0])
        after = times + (replayed[-1] - recorded[-1])
        mapped = np.where(times < recorded[0], before, np.where(times > recorded[-1], after, inside))
        return np.round(mapped).astype(np.int64)


def replay_without_profiler(events: HostEvents, cost: ProfilerCost, scale: float = 1.0) -> HostEvents:
    """`events` replayed with the profiler's host cost (`cost`, times `scale`) taken out (see the module)."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    gpu = events.gpu.sort("start_ns", "end_ns")
    calls = call_class(events.calls, gpu).with_row_index("call_row")
    threads = _host_threads(calls)
    chain = calls.filter(pl.col("thread").is_in(threads)).sort("start_ns")
    recorded = recorded_cost_ns(events, cost, threads)
    cost_at = recorded["start_ns"].to_numpy()
    cost_cum = np.concatenate([[0.0], np.cumsum(recorded["cost_ns"].to_numpy() * scale)])
    runtime_ns = cost.of(RUNTIME) * scale

    ops = _ops(gpu, calls)
    by_correlation: dict[int, list[int]] = {}
    for op in ops:
        if op.correlation is not None:
            by_correlation.setdefault(op.correlation, []).append(op.index)
    ends_sorted = sorted((op.end, op.index) for op in ops)
    marks = [
        Mark(s, e, cls == SYNC, _waited(ends_sorted, s, e) if cls == SYNC else None)
        for s, e, cls in chain.select("start_ns", "end_ns", "call_class").iter_rows()
    ]
    clock = _Clock(marks, cost_at, cost_cum)
    new_op_end = [0] * len(ops)
    new_op_start = [0] * len(ops)
    scheduled = [False] * len(ops)

    def place(index: int, issue_new: int | None) -> None:
        op = ops[index]
        host = issue_new if issue_new is not None else NONE
        stream = new_op_end[op.prev] if op.prev is not None and scheduled[op.prev] else NONE
        event = new_op_end[op.dep] if op.dep is not None and scheduled[op.dep] else NONE
        start = op.ready_at(host, stream, event) if max(host, stream, event) != NONE else clock.map_one(op.start)
        new_op_start[index], new_op_end[index] = start, start + (op.end - op.start)
        scheduled[index] = True

    def schedule(index: int, issue_new: int | None) -> None:
        """Place an activity, and first whatever it waits for that is not placed yet: work queued on its stream or
        the stream it waited on before the trace began, or launched by another thread (each at its own launch, on
        the replayed clock), in stream order."""
        waiting, seen = [], set()
        pending_ops = [p for p in (ops[index].prev, ops[index].dep) if p is not None]
        while pending_ops:
            j = pending_ops.pop()
            if scheduled[j] or j in seen:
                continue
            seen.add(j)
            waiting.append(j)
            pending_ops += [p for p in (ops[j].prev, ops[j].dep) if p is not None]
        for j in sorted(waiting):  # activities are numbered in start order: what one waits for comes first
            if not scheduled[j]:
                issue = ops[j].issue
                place(j, clock.map_one(issue) if issue is not None else None)
        place(index, issue_new)

    chained = set(chain["correlation_id"].drop_nulls().to_list())
    # activities not launched from the chain (another thread's, or queued before the trace began), in time order
    unchained = sorted((op.start, op.index) for op in ops if op.correlation not in chained)
    pending = 0
    previous: tuple[int, int] | None = None  # the last mark's end, recorded and replayed
    correlations = chain["correlation_id"].to_list()
    for k, mark in enumerate(marks):
        recorded_ns = mark.end_ns - mark.start_ns
        # what recording the call cost: inside the call as far as its recorded length allows, the rest just before
        in_call_ns = min(runtime_ns, max(0.0, recorded_ns - MIN_CALL_NS))
        new_start = mark.start_ns
        if previous is not None:
            reached = clock.after(previous[0], previous[1], mark.start_ns) - round(runtime_ns - in_call_ns)
            new_start = max(previous[1], reached)
        while pending < len(unchained) and unchained[pending][0] <= mark.start_ns:
            index = unchained[pending][1]
            issue = ops[index].issue
            schedule(index, clock.map_one(issue) if issue is not None else None)
            pending += 1
        duration = max(MIN_CALL_NS, round(recorded_ns - in_call_ns))
        new_end = new_start + duration
        for index in by_correlation.get(correlations[k], ()) if correlations[k] is not None else ():
            if not scheduled[index]:
                schedule(index, new_start)
        if mark.sync and mark.waited_op is not None:
            waited = mark.waited_op
            if not scheduled[waited]:
                schedule(waited, None)
            new_end = max(new_start + MIN_CALL_NS, new_op_end[waited] + (mark.end_ns - ops[waited].end))
        clock.new_start[k], clock.new_end[k] = new_start, new_end
        previous = (mark.end_ns, new_end)
    for _, index in unchained[pending:]:
        issue = ops[index].issue
        schedule(index, clock.map_one(issue) if issue is not None else None)
    for index in range(len(ops)):
        if not scheduled[index]:
            schedule(index, None)
    return _replayed_events(events, gpu, calls, chain, clock, new_op_start, new_op_end)


def _ops(gpu: pl.DataFrame, calls: pl.DataFrame) -> list[Op]:
    """The GPU activities with their launch call's start and thread, and their constraints as the trace shows."""
    columns = ("name", "kind", "stream_id", "start_ns", "end_ns", "issue_ns", "thread", "correlation_id")
    frame = (
        gpu.select("name", "kind", "stream_id", "start_ns", "end_ns", "correlation_id")
        .with_row_index("op_row")
        .join(
            calls.unique("correlation_id", keep="first").select(
                "correlation_id", pl.col("start_ns").alias("issue_ns"), "thread"
            ),
            on="correlation_id",
            how="left",
        )
        .sort("op_row")
        .select(columns)
    )
    names: dict[str, str] = {}  # each kernel's name held once, however many times it ran
    ops = [
        Op(i, names.setdefault(name or "", name or ""), kind, -1 if stream is None else stream, s, e, issue, thread, c)
        for i, (name, kind, stream, s, e, issue, thread, c) in enumerate(frame.iter_rows())
    ]
    _constraints(ops)
    return ops


def _waited(ends_sorted: list[tuple[int, int]], start_ns: int, end_ns: int) -> int | None:
    """The activity a synchronizing call waited for: the last one to end while the call was blocked."""
    k = bisect.bisect_right(ends_sorted, (end_ns, 2**62)) - 1
    return ends_sorted[k][1] if k >= 0 and ends_sorted[k][0] >= start_ns else None


def _replayed_events(
    events: HostEvents,
    gpu: pl.DataFrame,
    calls: pl.DataFrame,
    chain: pl.DataFrame,
    clock: _Clock,
    op_start: list[int],
    op_end: list[int],
) -> HostEvents:
    """The trace's frames on the replayed clock: GPU activities as replayed, the chain's calls as replayed, every
    other call and range mapped through the host clock."""

    def mapper(times: pl.Series) -> pl.Series:
        return pl.Series(clock.map(times.to_numpy()), dtype=pl.Int64)

    new_gpu = gpu.with_columns(
        start_ns=pl.Series(op_start, dtype=pl.Int64), end_ns=pl.Series(op_end, dtype=pl.Int64)
    ).sort("start_ns", "end_ns")
    in_chain = chain.select(
        "call_row",
        new_start=pl.Series(clock.new_start, dtype=pl.Int64),
        new_end=pl.Series(clock.new_end, dtype=pl.Int64),
    )
    new_calls = (
        calls.join(in_chain, on="call_row", how="left")
        .with_columns(
            start_ns=pl.coalesce("new_start", pl.col("start_ns").map_batches(mapper)),
            end_ns=pl.coalesce("new_end", pl.col("end_ns").map_batches(mapper)),
        )
        .select(events.calls.columns)
        .sort("start_ns")
    )
    new_ranges = events.ranges.with_columns(
        start_ns=pl.col("start_ns").map_batches(mapper), end_ns=pl.col("end_ns").map_batches(mapper)
    )
    return HostEvents(
        gpu=new_gpu,
        calls=new_calls,
        ranges=new_ranges,
        rank=events.rank,
        device_name=events.device_name,
        source=events.source,
        profiler_options=(),
    ).conformed()
