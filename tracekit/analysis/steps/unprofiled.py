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
latency, not the launch's it showed. GPU durations are kept; what CUPTI's record of each activity costs the GPU
(`ProfilerCost.gpu_activity_ns`) comes out of that activity's latency after its stream's work.

What is taken out never takes the host below the bare program (`ProfilerCost.bare_ns`): between two calls the host
keeps the time the events recorded there stand for without the profiler (an operator's dispatch, a range), and a
call that puts work on the GPU keeps a bare launching call's time over the stretch since the last call, where the
trace gave it that much. A calibration measured where the profiler cost more per event than it did in this trace
(another machine, or a step of many cheap operators) would otherwise leave a launch-dense eager step no host time.

The result is a `HostEvents` on the replayed clock, so the step analysis reads it as it reads a trace: the step
windows (as CUDA events would time them), busy and idle by cause, the critical path and what to try all come from
the one replay. `scale` multiplies every per-event cost: 1 is the calibration; `anchored` finds the scale at which
the replayed median step equals a step time the user measured.
"""

from __future__ import annotations

import bisect
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from tracekit.analysis.steps.calls import SYNC, call_class
from tracekit.analysis.steps.critical_path import NONE, Constraints, constraints, ready_at
from tracekit.analysis.steps.profiler_cost import RUNTIME, ProfilerCost, recorded_cost_ns
from tracekit.host_events import HostEvents, sorted_by

if TYPE_CHECKING:  # numpy in the functions that use it: every command imports this module (through tracekit.api)
    import numpy as np

MIN_CALL_NS = 500  # no API call returns faster than this, whatever its recording cost
LAUNCHING_SHARE = 0.01  # a thread that made at least this share of the launch calls is one of the host chain's


def _host_threads(calls: pl.DataFrame) -> list[int]:
    launches = calls.filter(pl.col("call_class") == "launch").group_by("thread").len()
    total = int(launches["len"].sum() or 0)
    return sorted(t for t, n in launches.iter_rows() if t is not None and n >= LAUNCHING_SHARE * total)


class _Clock:
    """The host chain's replayed times: its calls in order (recorded `start`, `end`), each with its replayed start
    and end, and the recording cost before each point, to map any host time (a range, another thread's call) onto
    the replayed clock."""

    def __init__(
        self, start: array[int], end: array[int], cost_at: np.ndarray, cost_cum: np.ndarray, bare_cum: np.ndarray
    ) -> None:
        self.start, self.end = start, end
        self.cost_at, self.cost_cum, self.bare_cum = cost_at, cost_cum, bare_cum
        self.new_start = array("q", [0]) * len(start)
        self.new_end = array("q", [0]) * len(start)
        self._points: tuple[np.ndarray, np.ndarray] | None = None  # `map`'s, once the replay is done

    def cost_before(self, t: np.ndarray | int) -> np.ndarray:
        """The recording cost of every event that began before `t`."""
        return self.cost_cum[self.cost_at.searchsorted(t, side="left")]

    def bare_between(self, orig_ns: int, at_ns: int) -> float:
        """What the events that began in [orig_ns, at_ns) stand for in the bare program."""
        first, last = self.cost_at.searchsorted([orig_ns, at_ns], side="left")
        return float(self.bare_cum[last] - self.bare_cum[first])

    def after(self, orig_ns: int, new_ns: int, at_ns: int) -> int:
        """Host time `at_ns`, reached by the host's own work from `orig_ns` (replayed at `new_ns`): the recorded
        time less the recording cost, never less than the bare program's time there (nor more than recorded)."""
        removed = float(self.cost_before(at_ns) - self.cost_before(orig_ns))
        return new_ns + _kept_ns(at_ns - orig_ns, removed, self.bare_between(orig_ns, at_ns))

    def map_one(self, t: int) -> int:
        """One host time on the replayed clock (as `map`), while the replay is under way: from the calls replayed
        so far (NONE stays NONE)."""
        if t == NONE:
            return NONE
        k = bisect.bisect_right(self.end, t) - 1
        return t if k < 0 else self.after(self.end[k], self.new_end[k], t)

    def map(self, times: np.ndarray) -> np.ndarray:
        """Host times on the replayed clock, once every call is replayed: each between the two calls around it,
        in proportion (a range or another thread's call keeps its place between the chain's calls; one that began
        just before a call never lands after it), shifted as the first and last calls are outside them."""
        import numpy as np  # here, not at import (see TYPE_CHECKING above)

        if not self.start:
            return times
        if self._points is None:  # the calls' recorded and replayed times in recorded order, once
            recorded = np.column_stack((_numpy(self.start), _numpy(self.end))).ravel().astype(np.float64)
            replayed = np.column_stack((_numpy(self.new_start), _numpy(self.new_end))).ravel().astype(np.float64)
            order = np.argsort(recorded, kind="stable")
            self._points = recorded[order], np.maximum.accumulate(replayed[order])
        recorded, replayed = self._points
        inside = np.interp(times, recorded, replayed)
        before = times + (replayed[0] - recorded[0])
        after = times + (replayed[-1] - recorded[-1])
        mapped = np.where(times < recorded[0], before, np.where(times > recorded[-1], after, inside))
        return np.round(mapped).astype(np.int64)


def _kept_ns(gap_ns: int, removed_ns: float, bare_ns: float) -> int:
    """What the host keeps of a recorded gap: the gap less its recording cost, never less than its events' bare time
    (nor more than the gap)."""
    return max(0, round(max(gap_ns - removed_ns, min(gap_ns, bare_ns))))


def _numpy(values: array[int]) -> np.ndarray:
    """A flat array of ints as numpy sees it (no copy)."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    return np.frombuffer(values, dtype=np.int64)


def _flat(values: np.ndarray) -> array[int]:
    """A column as a flat array of ints: 8 bytes an entry where a list holds a 32-byte Python int (a whole trace's
    replay reads a million activities), read back as Python ints (a numpy array's items are numpy scalars)."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    flat = array("q")
    flat.frombytes(np.ascontiguousarray(values, dtype=np.int64).data.cast("B"))  # its buffer, not a copy of it
    return flat


@dataclass(frozen=True)
class _Activities:
    """The GPU activities in start order, one entry each: when they ran, their launch call's start and their
    correlation id (NONE where none), and their constraints as the trace shows them."""

    start: array[int]
    end: array[int]
    issue: array[int]
    correlation: array[int]
    found: Constraints


def replay_without_profiler(
    events: HostEvents, cost: ProfilerCost, scale: float = 1.0, kept_ranges: pl.Expr | None = None
) -> HostEvents:
    """`events` replayed with the profiler's host cost (`cost`, times `scale`) taken out (see the module); of the
    host ranges, those `kept_ranges` selects (all by default: every range costs what recording it cost, but a caller
    that reads a few, a job its step and loader ranges, need not have a 100 MB rank's every operator replayed)."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    gpu = sorted_by(events.gpu, "start_ns", "end_ns")
    calls = call_class(events.calls, gpu).with_row_index("call_row")
    threads = _host_threads(calls)
    chain = sorted_by(calls.filter(pl.col("thread").is_in(threads)), "start_ns")
    recorded = recorded_cost_ns(events, cost, threads)
    cost_at = recorded["start_ns"].to_numpy()
    cost_cum = np.concatenate([[0.0], np.cumsum(recorded["cost_ns"].to_numpy() * scale)])
    bare_cum = np.concatenate([[0.0], np.cumsum(recorded["bare_ns"].to_numpy())])
    del recorded
    clock = _Clock(_flat(chain["start_ns"].to_numpy()), _flat(chain["end_ns"].to_numpy()), cost_at, cost_cum, bare_cum)
    new_op_start, new_op_end = _replayed_times(
        gpu, calls, chain, clock, cost.of(RUNTIME) * scale, cost.bare(RUNTIME), round(cost.gpu_activity_ns)
    )
    ranges = events.ranges if kept_ranges is None else events.ranges.filter(kept_ranges)
    return _replayed_events(events, gpu, calls, ranges, chain, clock, new_op_start, new_op_end)


def _replayed_times(
    gpu: pl.DataFrame,
    calls: pl.DataFrame,
    chain: pl.DataFrame,
    clock: _Clock,
    runtime_ns: float,
    bare_launch_ns: float,
    gpu_activity_ns: int,
) -> tuple[array[int], array[int]]:
    """Each GPU activity's replayed start and end (in `gpu`'s order), the chain's calls' replayed times set in
    `clock` (a function of its own: its arrays, tens of MB for a 100 MB rank, go before the output is built).
    `runtime_ns`: what recording a call cost; `bare_launch_ns`: a bare call that puts work on the GPU;
    `gpu_activity_ns`: what recording an activity cost the GPU, out of its latency after its stream's work."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    ops = _activities(gpu, calls)
    found = ops.found
    count = len(ops.start)
    starts, ends, correlations = _numpy(ops.start), _numpy(ops.end), _numpy(ops.correlation)
    # each chain call's activities (those of its correlation id, in start order): launched[first_of[k]:last_of[k]]
    by_correlation = np.argsort(correlations, kind="stable")
    sorted_correlations = correlations[by_correlation]
    called = chain["correlation_id"].fill_null(NONE).to_numpy()
    first_of = _flat(np.where(called == NONE, 0, np.searchsorted(sorted_correlations, called, "left")))
    last_of = _flat(np.where(called == NONE, 0, np.searchsorted(sorted_correlations, called, "right")))
    launched = _flat(by_correlation)
    # the activity each synchronizing call waited for: the last to end while it was blocked (-1: none)
    call_starts, call_ends = _numpy(clock.start), _numpy(clock.end)
    by_end = np.argsort(ends, kind="stable")
    last_ended = np.searchsorted(ends[by_end], call_ends, "right") - 1
    at = np.maximum(last_ended, 0)
    inside = (last_ended >= 0) & (ends[by_end[at]] >= call_starts) if count else np.zeros(len(call_ends), bool)
    waited = _flat(np.where(inside & (chain["call_class"] == SYNC).to_numpy(), by_end[at] if count else -1, -1))
    # activities not launched from the chain (another thread's, or queued before the trace began), in time order
    outside = np.nonzero(~np.isin(correlations, chain["correlation_id"].drop_nulls().to_numpy()))[0]
    outside = outside[np.lexsort((outside, starts[outside]))]
    unchained, unchained_start = _flat(outside), _flat(starts[outside])
    del by_correlation, sorted_correlations, called, call_starts, call_ends, by_end, last_ended, at, inside, outside
    new_op_start, new_op_end = array("q", [0]) * count, array("q", [0]) * count
    scheduled = bytearray(count)

    def place(index: int, issue_new: int) -> None:
        before, waited_for = found.prev[index], found.dep[index]
        stream = new_op_end[before] if before >= 0 and scheduled[before] else NONE
        event = new_op_end[waited_for] if waited_for >= 0 and scheduled[waited_for] else NONE
        recorded_start = ops.start[index]
        queued = max(0, found.queue_latency[index] - gpu_activity_ns)
        start = (
            ready_at(found.host_latency[index], queued, issue_new, stream, event, recorded_start)
            if max(issue_new, stream, event) != NONE
            else clock.map_one(recorded_start)
        )
        new_op_start[index], new_op_end[index] = start, start + (ops.end[index] - recorded_start)
        scheduled[index] = 1

    def schedule(index: int, issue_new: int) -> None:
        """Place an activity, and first whatever it waits for that is not placed yet: work queued on its stream or
        the stream it waited on before the trace began, or launched by another thread (each at its own launch, on
        the replayed clock), in stream order."""
        waiting, seen = [], set()
        pending_ops = [p for p in (found.prev[index], found.dep[index]) if p >= 0]
        while pending_ops:
            j = pending_ops.pop()
            if scheduled[j] or j in seen:
                continue
            seen.add(j)
            waiting.append(j)
            pending_ops += [p for p in (found.prev[j], found.dep[j]) if p >= 0]
        for j in sorted(waiting):  # activities are numbered in start order: what one waits for comes first
            if not scheduled[j]:
                place(j, clock.map_one(ops.issue[j]))
        place(index, issue_new)

    # the gap before each call (from the previous call's end): the recording cost of the events in it, and what
    # they stand for in the bare program (`_Clock.after`, for every call at once)
    removed, bare = _gaps(clock)
    pending = 0
    previous_end = previous_new_end = NONE  # the last call's end, recorded and replayed
    for k in range(len(clock.start)):
        call_start, call_end = clock.start[k], clock.end[k]
        recorded_ns = call_end - call_start
        # what recording the call cost: inside the call as far as its recorded length allows, the rest just before
        in_call_ns = min(runtime_ns, max(0.0, recorded_ns - MIN_CALL_NS))
        new_start = call_start
        if k > 0:
            kept = _kept_ns(call_start - previous_end, removed[k], bare[k])
            new_start = max(previous_new_end, previous_new_end + kept - round(runtime_ns - in_call_ns))
        while pending < len(unchained) and unchained_start[pending] <= call_start:
            schedule(unchained[pending], clock.map_one(ops.issue[unchained[pending]]))
            pending += 1
        duration = max(MIN_CALL_NS, round(recorded_ns - in_call_ns))
        # a call that launched GPU work after a new operator (or range) began: one more launching operator, which
        # keeps a bare launching call's time over the stretch since the last call
        if k > 0 and bare[k] > 0 and first_of[k] < last_of[k] and bare_launch_ns:
            floor_end = previous_new_end + round(min(call_end - previous_end, bare[k] + bare_launch_ns))
            new_start = max(new_start, floor_end - duration)
        new_end = new_start + duration
        for j in range(first_of[k], last_of[k]):
            if not scheduled[launched[j]]:
                schedule(launched[j], new_start)
        if waited[k] >= 0:
            if not scheduled[waited[k]]:
                schedule(waited[k], NONE)
            new_end = max(new_start + MIN_CALL_NS, new_op_end[waited[k]] + (call_end - ops.end[waited[k]]))
        clock.new_start[k], clock.new_end[k] = new_start, new_end
        previous_end, previous_new_end = call_end, new_end
    for index in unchained[pending:]:
        schedule(index, clock.map_one(ops.issue[index]))
    for index in range(count):
        if not scheduled[index]:
            schedule(index, NONE)
    return new_op_start, new_op_end


def _gaps(clock: _Clock) -> tuple[array[float], array[float]]:
    """Per chain call k >= 1, over the gap from call k-1's end to call k's start: the recording cost of the events
    that began in it and their bare time (entry 0 is 0), as flat arrays of floats (the replay's loop reads them one
    by one)."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    ends = clock.cost_at.searchsorted(_numpy(clock.end)[:-1], side="left")
    starts = clock.cost_at.searchsorted(_numpy(clock.start)[1:], side="left")
    removed, bare = array("d", [0.0]), array("d", [0.0])
    removed.frombytes(np.ascontiguousarray(clock.cost_cum[starts] - clock.cost_cum[ends], dtype=np.float64).tobytes())
    bare.frombytes(np.ascontiguousarray(clock.bare_cum[starts] - clock.bare_cum[ends], dtype=np.float64).tobytes())
    return removed, bare


def _activities(gpu: pl.DataFrame, calls: pl.DataFrame) -> _Activities:
    """The GPU activities (in `gpu`'s order) with their launch call's start and their constraints as the trace
    shows them."""
    frame = (
        gpu.select("kind", "stream_id", "start_ns", "end_ns", "correlation_id")
        .with_row_index("op_row")
        .join(
            calls.unique("correlation_id", keep="first").select("correlation_id", pl.col("start_ns").alias("issue_ns")),
            on="correlation_id",
            how="left",
        )
        .sort("op_row")
    )
    start, end = _flat(frame["start_ns"].to_numpy()), _flat(frame["end_ns"].to_numpy())
    issue = _flat(frame["issue_ns"].fill_null(NONE).to_numpy())
    found = constraints(
        _flat(frame["kind"].fill_null("").rank("dense").to_numpy()),
        _flat(frame["stream_id"].fill_null(-1).to_numpy()),
        start,
        end,
        issue,
    )
    return _Activities(start, end, issue, _flat(frame["correlation_id"].fill_null(NONE).to_numpy()), found)


def _replayed_events(
    events: HostEvents,
    gpu: pl.DataFrame,
    calls: pl.DataFrame,
    ranges: pl.DataFrame,
    chain: pl.DataFrame,
    clock: _Clock,
    op_start: array[int],
    op_end: array[int],
) -> HostEvents:
    """The trace's frames on the replayed clock: GPU activities as replayed, the chain's calls as replayed, every
    other call and range mapped through the host clock."""

    new_gpu = gpu.with_columns(start_ns=pl.Series(_numpy(op_start)), end_ns=pl.Series(_numpy(op_end)))
    # every call mapped through the host clock, then the chain's own replayed times put in their rows
    rows = chain["call_row"].to_numpy()
    starts, ends = clock.map(calls["start_ns"].to_numpy()), clock.map(calls["end_ns"].to_numpy())
    if len(rows):
        starts[rows], ends[rows] = _numpy(clock.new_start), _numpy(clock.new_end)
    new_calls = events.calls.with_columns(start_ns=pl.Series(starts), end_ns=pl.Series(ends))
    new_ranges = ranges.with_columns(
        start_ns=pl.Series(clock.map(ranges["start_ns"].to_numpy()), dtype=pl.Int64),
        end_ns=pl.Series(clock.map(ranges["end_ns"].to_numpy()), dtype=pl.Int64),
    )
    # in the input's columns (conforming a lean input would add its missing columns back, as nulls), sorted
    return HostEvents(
        gpu=sorted_by(new_gpu, "start_ns", "end_ns"),
        calls=sorted_by(new_calls, "start_ns"),
        ranges=sorted_by(new_ranges, "start_ns"),
        rank=events.rank,
        device_name=events.device_name,
        source=events.source,
        profiler_options=(),
    )
