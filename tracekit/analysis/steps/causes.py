"""Why the GPU idled: every idle gap of a step split among causes that sum to it exactly.

A gap ends when the next GPU activity starts; that activity's API call (found by correlation id; a CUDA graph's
kernels by their cudaGraphLaunch) says which host thread the GPU was waiting for and when the work was issued; a
launch's work counts as queued once its call returns (while a slow launch call runs, the GPU waits on the host).
- synchronization: what the host's synchronizing calls (cudaDeviceSynchronize, cudaStreamSynchronize, `.item()`'s
  copy, a synchronous or pageable cudaMemcpy: `calls.py`) cost the gap. Between issuing the work the GPU finished
  when the gap began and issuing the next, the host thread was blocked in them for B; without them it would have
  issued the next work B sooner, so the gap's host part h shrinks to max(0, h - B): min(h, B) of it is the syncs'
  (a sync that waited long for a full queue takes the whole gap after it; one that began after the GPU had run
  dry takes only its own call). The rest, the last h - B of the host's time outside syncs before the launch, is
  judged by what the host did then. What B leaves unspent carries to the gaps after (`_carried`): a sync that
  drained the queue leaves the host launching just in time until it is ahead again, and without the sync it would
  have been B ahead, so those gaps are the sync's too, up to B in all (through later, shorter syncs).
- launch-bound: the host was issuing work (inside an API call, or inside an operator that launches kernels: the
  framework's dispatch) but not as fast as the GPU ran it.
- kernel wait (HTA's name): the next work was already queued when the gap began, and the GPU itself took the time
  between one activity's end and the next one's start (its launch latency, about 1-2 us a kernel; shorter for
  kernels replayed from a CUDA graph), at most the gap's last LAUNCH_LATENCY_NS. No host habit causes it; only
  fewer kernels remove it. Where the host issued the work inside the gap, the latency after its call is part of
  launching late (launch-bound), or the syncs' as far as their lead outlasts the gap's host part (without them the
  work would have been queued).
- stalled queue: the rest of a queued gap, longer than launch latency explains: something held work already
  queued. Its evidence is what the trace shows (`_stall_kind`): a CUDA graph's replay (its own dependencies),
  dropped events (launches with no GPU activity: the GPU ran work the trace lost), or work outside the trace
  (another process on the GPU). No fix is offered: the trace cannot say which.
- host work: the host thread was outside every launch, sync or wait call and every launching operator (data
  loading, Python, a pause) while the GPU had nothing queued.
- start-up: the host thread was in one-time work (`startup_work`: allocation, module loading, context, stream and
  handle creation, a slow first call): not a step's habit, and no fix is offered. Time in a sync is the sync's,
  time in start-up work otherwise start-up, issuing otherwise launch-bound, the rest host work (`HostTime`, which
  the critical path's host links read too).
- waiting on stream/event: the next activity was queued behind a cudaStreamWaitEvent.
- unattributed: a gap whose next activity has no API call in the trace (work issued before the profiler started,
  or a trace without the runtime calls).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import polars as pl

from tracekit.analysis.steps.calls import (
    EVENT_RECORD_CALLS,
    FIRST_CALL_SLOWER,
    GRAPH_LAUNCH_CALLS,
    LAUNCH,
    OTHER,
    SLOW_CALL_NS,
    STARTUP_CALLS,
    SYNC,
    WAIT,
)
from tracekit.analysis.steps.intervals import contains, measure, measure_before, merge
from tracekit.analysis.steps.types import (
    CAUSES,
    HOST_WORK,
    KERNEL_WAIT,
    LAUNCH_BOUND,
    STALLED_QUEUE,
    START_UP,
    SYNCHRONIZATION,
    UNATTRIBUTED,
    WAITING,
    Evidence,
    IdleCause,
)

EVIDENCE_PER_CAUSE = 3
CAUSE_TYPE = pl.Enum(CAUSES)  # one byte a row where a gap's causes are listed, not a string
CLASS_TYPE = pl.Enum((LAUNCH, SYNC, WAIT, OTHER))  # the same for the class of each gap's launch call
KIND_TYPE = pl.Enum(("call", "host gap", "queued", "graph replay", "dropped events", "outside the trace"))
FAR = 2**62
# The most a queued activity waits on the GPU's own launch latency: 1-3 us between queued kernels on an H100 or
# H200, at most 12 us in the recorded steps (sample_traces/steps), profiled; a longer wait is a stalled queue.
LAUNCH_LATENCY_NS = 50_000


def dispatch_ranges(ranges: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """The outermost CPU operators that issued at least one launch call: the framework's dispatch of kernels
    (thread, start_ns, end_ns)."""
    ops = ranges.filter(pl.col("domain") == "cpu_op").select("thread", "start_ns", "end_ns").sort("thread", "start_ns")
    reach = pl.col("end_ns").cum_max().shift(1).over("thread")
    top = ops.filter(pl.col("start_ns") >= reach.fill_null(-FAR)).with_row_index("op")
    issued = calls.filter(pl.col("call_class") == LAUNCH).select("thread", "start_ns").sort("start_ns")
    if top.height == 0 or issued.height == 0:
        return top.clear().drop("op")
    found = issued.join_asof(
        top.sort("start_ns"), on="start_ns", by="thread", strategy="backward", check_sortedness=False
    )
    hit = found.filter(pl.col("end_ns") > pl.col("start_ns"))["op"].unique()
    return top.filter(pl.col("op").is_in(hit.implode())).drop("op")


def attribute(pieces: pl.DataFrame, gpu: pl.DataFrame, calls: pl.DataFrame, ranges: pl.DataFrame) -> Attributed:
    """Every idle piece split among the causes (see `Attributed`). `calls` carries `call_class`
    (calls.call_class)."""
    host = classify_host(calls, ranges)
    amounts = _amounts(pieces, gpu, calls, host)
    # one cause at a time, only its positive pieces (an unpivot of every piece x cause is 5 rows per gap)
    long = pl.concat(
        [
            amounts.filter(pl.col(cause) > 0).select(
                "piece",
                "step",
                "start_ns",
                "end_ns",
                "stall_kind",
                pl.lit(cause, CAUSE_TYPE).alias("cause"),
                pl.col(cause).alias("idle_ns"),
            )
            for cause in CAUSES
        ]
    )
    long = long.with_columns(
        kind=pl.when(pl.col("cause") == HOST_WORK)
        .then(pl.lit("host gap", KIND_TYPE))
        .when(pl.col("cause") == KERNEL_WAIT)
        .then(pl.lit("queued", KIND_TYPE))
        .when(pl.col("cause") == STALLED_QUEUE)
        .then(pl.col("stall_kind"))
        .otherwise(pl.lit("call", KIND_TYPE)),
    ).select("piece", "step", "cause", "idle_ns", "kind", "start_ns", "end_ns")
    return Attributed(long, amounts.select("piece", "next_row", "call_row"), gpu, calls, host.startup_work)


def _with_next(pieces: pl.DataFrame, gpu: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """Each piece with the activity that ended its gap (`next_row`) and that activity's launch call (thread,
    issue_ns, call_class, call_row, waited). Names stay out of this per-piece frame: the next activity and its
    call are kept as row numbers; the lookups die with this function (a trace of millions of gaps)."""
    nexts = (
        gpu.select("start_ns", "correlation_id")
        .with_row_index("next_row")
        .sort("start_ns", "correlation_id")
        .unique("start_ns", keep="first")
        .select(pl.col("start_ns").alias("gap_end_ns"), "correlation_id", "next_row")
    )
    launch_calls = _waited(calls).unique("correlation_id", keep="first")
    return (
        pieces.with_row_index("piece")
        .join(nexts, on="gap_end_ns", how="left")
        .join(launch_calls, on="correlation_id", how="left")
        .drop("correlation_id")
    )


def _amounts(pieces: pl.DataFrame, gpu: pl.DataFrame, calls: pl.DataFrame, host_time: HostTime) -> pl.DataFrame:
    """Each piece's idle time per cause (one column per cause), with piece, step, start_ns, end_ns,
    next_row and call_row; each intermediate column is dropped once used (a million-gap trace)."""
    frame = _with_previous(_with_next(pieces, gpu, calls), gpu, calls)
    main = _main_thread(calls)
    no_call = pl.col("issue_ns").is_null()
    # a launch's work is queued once its call returns: while the call runs (a slow first launch, a lock), the GPU
    # waits on the host issuing it, not on its own latency
    queued = pl.when(pl.col("call_class") == LAUNCH).then(pl.max_horizontal("issue_ns", "returned_ns"))
    frame = frame.with_columns(queued_ns=queued.otherwise("issue_ns").fill_null(pl.lit(FAR)))
    # no activity after the gap in the trace: judged on the thread that issued the work the GPU finished last (the
    # one it was following), else the main launching thread; an activity whose call is not in the trace (issued
    # before the profiler started): unattributed
    frame = frame.with_columns(
        known=~no_call | pl.col("next_row").is_null(),
        thread=pl.when(pl.col("next_row").is_null())
        .then(pl.col("previous_thread").fill_null(pl.lit(main, pl.Int64)))
        .otherwise("thread"),
        issue_ns=pl.when(no_call).then(pl.lit(FAR)).otherwise("issue_ns"),
        waited=pl.col("waited").fill_null(False),
    )
    syncs = calls.filter(pl.col("call_class") == SYNC)
    # a gap that began inside a sync whose next activity's call is unknown: the sync's (no thread to judge on)
    drained = contains(merge(syncs), frame["gap_start_ns"])
    host_end = pl.min_horizontal("end_ns", pl.max_horizontal("start_ns", "queued_ns"))
    gap_host_end = pl.min_horizontal("gap_end_ns", pl.max_horizontal("gap_start_ns", "queued_ns"))
    since = pl.min_horizontal(pl.col("previous_issue_ns").fill_null(pl.col("gap_start_ns")), "gap_start_ns")
    # the part of the piece in the last LAUNCH_LATENCY_NS of its gap: what launch latency can explain
    recent = (pl.col("end_ns") - pl.max_horizontal("start_ns", pl.col("gap_end_ns") - LAUNCH_LATENCY_NS)).clip(0)
    frame = frame.with_columns(
        drained=drained, host_end_ns=host_end, gap_host_end_ns=gap_host_end, since_ns=since, recent_ns=recent
    )
    frame = frame.with_columns(stall_kind=_stall_kind(frame, gpu, calls))
    frame = frame.drop("issue_ns", "returned_ns", "queued_ns", "previous_issue_ns", "previous_thread")
    threads, by_thread = frame["thread"], host_time.syncing
    frame = frame.with_columns(_residual_start(frame, by_thread))
    frame = frame.drop("gap_start_ns", "gap_end_ns", "gap_host_end_ns", "since_ns")
    r, h = frame["residual_ns"], frame["host_end_ns"]
    frame = frame.with_columns(
        in_sync=measure(by_thread, r, h, threads),
        in_dispatch=measure(host_time.issuing, r, h, threads),
        in_startup=measure(host_time.starting, r, h, threads),
    )
    length, host = pl.col("end_ns") - pl.col("start_ns"), pl.col("host_end_ns") - pl.col("start_ns")
    residual = pl.col("host_end_ns") - pl.col("residual_ns")  # the host time not the syncs' (in this piece)
    gpu_part = length - host
    # the part after the next activity was issued: its own call's (a synchronous copy), a stream wait, or the
    # launch's latency on the GPU (a sync in progress did not cause it)
    sync_gpu = pl.when(pl.col("call_class") == SYNC).then(gpu_part).otherwise(0)
    wait_gpu = pl.when(pl.col("waited") & (pl.col("call_class") != SYNC)).then(gpu_part).otherwise(0)
    # the launch's latency on the GPU: the GPU's own (kernel wait) where the work was queued before the gap began,
    # as far as launch latency explains it (the rest a stalled queue); part of launching late where the host issued
    # it inside the gap
    latency = gpu_part - sync_gpu - wait_gpu
    queued_wait = pl.when(host == 0).then(pl.min_horizontal(latency, "recent_ns")).otherwise(0)
    start_up = pl.col("in_startup") - pl.col("in_sync")  # the start-up calls' time outside syncs
    judged = pl.col("thread").is_not_null() & pl.col("known")
    traced = pl.col("drained") | judged
    # issued late: the latency is the syncs' as far as their lead outlasts the host part, the rest launching late
    late = pl.when(host > 0).then(latency).otherwise(0)
    late_sync = pl.when(judged).then(pl.min_horizontal(late, "lead_left_ns")).otherwise(0)
    named = {
        SYNCHRONIZATION: pl.when(judged).then(host - residual + pl.col("in_sync")).otherwise(host)
        + sync_gpu
        + late_sync,
        LAUNCH_BOUND: pl.when(judged).then(pl.col("in_dispatch") - pl.col("in_startup")).otherwise(0)
        + late
        - late_sync,
        KERNEL_WAIT: queued_wait,
        STALLED_QUEUE: pl.when(host == 0).then(latency).otherwise(0) - queued_wait,
        WAITING: wait_gpu,
        HOST_WORK: pl.when(judged).then(residual - pl.col("in_dispatch")).otherwise(0),
        START_UP: pl.when(judged).then(start_up).otherwise(0),
    }
    shares = frame.select(
        "piece",
        "step",
        "start_ns",
        "end_ns",
        "next_row",
        "call_row",
        "stall_kind",
        **{cause: pl.when(traced).then(value).otherwise(0).fill_null(0) for cause, value in named.items()},
    )
    return shares.with_columns(
        **{UNATTRIBUTED: (pl.col("end_ns") - pl.col("start_ns")) - pl.sum_horizontal(*named)},
    )


def _with_previous(frame: pl.DataFrame, gpu: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """Each piece with `previous_issue_ns` and `previous_thread`: when and by which thread the work the GPU
    finished as its gap began was issued (the latest issue among the activities ending then; null where their
    calls are not in the trace). Looked up by a sorted search, not joined: a join copies the per-piece frame."""
    starts = frame["gap_start_ns"]
    ending = gpu.select(pl.col("end_ns").alias("gap_start_ns"), "correlation_id").filter(
        pl.col("gap_start_ns").is_in(starts.implode())
    )
    issued = calls.select(
        "correlation_id", pl.col("start_ns").alias("previous_issue_ns"), pl.col("thread").alias("previous_thread")
    ).filter(pl.col("correlation_id").is_in(ending["correlation_id"].implode()))
    ends = (
        ending.join(issued.unique("correlation_id", keep="first"), on="correlation_id")
        .sort("gap_start_ns", "previous_issue_ns")
        .unique("gap_start_ns", keep="last", maintain_order=True)
    )
    if ends.height == 0:
        return frame.with_columns(previous_issue_ns=pl.lit(None, pl.Int64), previous_thread=pl.lit(None, pl.Int64))
    at = ends["gap_start_ns"].search_sorted(starts).clip(upper_bound=ends.height - 1)
    hit = ends["gap_start_ns"].gather(at) == starts
    return frame.with_columns(
        previous_issue_ns=ends["previous_issue_ns"].gather(at).zip_with(hit, pl.Series([None], dtype=pl.Int64)),
        previous_thread=ends["previous_thread"].gather(at).zip_with(hit, pl.Series([None], dtype=pl.Int64)),
    )


def _residual_start(frame: pl.DataFrame, syncs: pl.DataFrame) -> pl.DataFrame:
    """Per piece, where the host time that is not the syncs' begins (`residual_ns`, clipped to the piece's host
    part): the gap's host part [D, H) loses min(h, B) to the syncs, B the thread's time in syncs since the previous
    work's issue plus what the thread's last sync left unspent (`_carried`); the remaining h - B is the last h - B
    of its time outside syncs before H. `lead_left_ns`, max(0, B - h), is what of B the host part left: a host that
    would have issued the work that much before the gap began also hides the launch's latency after H."""
    d, end, threads = frame["gap_start_ns"], frame["gap_host_end_ns"], frame["thread"]
    at_d, at_end = measure_before(syncs, d, threads), measure_before(syncs, end, threads)
    blocked = (at_end - measure_before(syncs, frame["since_ns"], threads)).clip(lower_bound=0)
    blocked = _carried(threads, blocked, (frame["gap_end_ns"] - d).clip(lower_bound=0))
    h = end - d
    free = h - (at_end - at_d).clip(lower_bound=0)  # the host's time outside syncs in the gap
    at = _after_free(syncs, d - at_d, free - (h - blocked).clip(lower_bound=0), threads)
    at = at.fill_null(d).alias("at")
    return frame.select(
        residual_ns=pl.max_horizontal("start_ns", pl.min_horizontal(at, "host_end_ns")),
        lead_left_ns=(blocked - h).clip(lower_bound=0),
    )


def _carried(threads: pl.Series, blocked: pl.Series, host: pl.Series) -> pl.Series:
    """Each piece's sync time B with what its thread's syncs left unspent. Without the syncs the host would have
    issued everything after them B earlier (B: their blocked time), so the gaps that follow, each waiting h on the
    host, would not have waited until that lead was spent: the first min(h, B) of the first, then
    min(h', B - min(h, B)) of the next, ... (a sync that drained the queue also leaves the host launching just in
    time until it is ahead again, and those gaps are the sync's too). A later sync adds its own B to the lead it
    finds (a loop of short syncs after one that drained the queue: a gradient norm read per parameter), up to the
    thread's longest sync: the launch queue bounds how far ahead a host gets, and that sync shows how far it got."""
    if blocked.len() == 0:
        return blocked
    pieces = pl.DataFrame({"thread": threads, "blocked": blocked, "host": host}).with_row_index("piece")
    pieces = pieces.with_columns(
        spent=(pl.col("host").cum_sum() - pl.col("host")).over("thread"),
        deepest=pl.col("blocked").max().over("thread"),
    )
    syncs = pieces.filter(pl.col("blocked") > 0).sort("thread", "piece", nulls_last=True)
    leads: list[int] = []
    thread_of, lead_ns, at_ns = object(), 0, 0  # the thread, its lead and its spent time at its last sync
    for thread, sync_ns, spent_ns, deepest_ns in zip(
        syncs["thread"].to_list(),
        syncs["blocked"].to_list(),
        syncs["spent"].to_list(),
        syncs["deepest"].to_list(),
        strict=True,
    ):
        if thread != thread_of:
            thread_of, lead_ns, at_ns = thread, 0, 0
        lead_ns = min(deepest_ns, max(0, lead_ns - (spent_ns - at_ns)) + sync_ns)
        at_ns = spent_ns
        leads.append(lead_ns)
    lead = syncs.select("piece", pl.Series("lead_ns", leads, dtype=pl.Int64))
    pieces = pieces.join(lead, on="piece", how="left").with_columns(
        lead=pl.col("lead_ns").is_not_null().cum_sum().over("thread")
    )
    by_lead = ["thread", "lead"]
    spent_before = pl.col("spent") - pl.col("spent").first().over(by_lead)
    carried = pl.col("lead_ns").first().over(by_lead).fill_null(0) - spent_before
    return pieces.sort("piece").select(carried.clip(lower_bound=0).alias("blocked")).to_series()


def _after_free(merged: pl.DataFrame, free_before: pl.Series, amounts: pl.Series, groups: pl.Series) -> pl.Series:
    """The earliest time at which the time outside `merged` (per group) reaches `free_before + amount`: the inverse
    of F(t) = t - (the union's length before t). For n = F(start) + amount that time is n plus the union's length
    through the last interval whose F at its start is below n (F is flat across an interval). Null where the
    amount is 0 (the start itself)."""
    query = pl.DataFrame({"n": free_before + amounts, "group": groups, "amount": amounts}).with_row_index("row")
    query = query.filter(pl.col("amount") > 0)
    out = pl.Series("at", [None] * len(amounts), dtype=pl.Int64)
    if merged.height == 0 or query.height == 0:
        return out
    key = merged.columns[0]
    table = merged.select(
        pl.col(key).cast(query.schema["group"]).alias("group"),
        (pl.col("start_ns") - pl.col("before_ns")).alias("n"),
        (pl.col("before_ns") + pl.col("end_ns") - pl.col("start_ns")).alias("union_ns"),
    ).sort("n")
    found = (
        query.sort("n")
        .join_asof(table, on="n", by="group", strategy="backward", allow_exact_matches=False, check_sortedness=False)
        .select("row", (pl.col("n") + pl.col("union_ns").fill_null(0)).alias("at"))
    )
    out.scatter(found["row"], found["at"])
    return out


@dataclass(frozen=True)
class HostTime:
    """What the host's time is, as the causes judge it, per thread (merged: thread, start_ns, end_ns, before_ns),
    by priority: in a synchronizing call (synchronization); else in one-time start-up work (start-up); else issuing
    work, in a launch, wait or sync call or an operator that launches (launch-bound); else host work. Each union
    holds the ones before it, so the time of each cause in [a, b) is one union's measure less the one before."""

    syncing: pl.DataFrame  # synchronizing calls
    starting: pl.DataFrame  # those and start-up work
    issuing: pl.DataFrame  # those and issuing work
    startup_work: pl.DataFrame  # the start-up work itself, named (`startup_work`): what start-up evidence is called

    def window(self, start_ns: int, end_ns: int) -> HostSpans:
        """The three unions inside [start_ns, end_ns), per thread, as sorted lists (one step's, for `split`)."""
        found: dict[int | None, list[list[tuple[int, int]]]] = {}
        for k, union in enumerate((self.syncing, self.starting, self.issuing)):
            rows = union.filter((pl.col("end_ns") > start_ns) & (pl.col("start_ns") < end_ns))
            for thread, a, b in rows.select("thread", "start_ns", "end_ns").iter_rows():
                found.setdefault(thread, [[], [], []])[k].append((a, b))
        return HostSpans(found)


@dataclass(frozen=True)
class HostSpans:
    """`HostTime` inside one window, per thread: the three unions as sorted, disjoint lists."""

    by_thread: dict[int | None, list[list[tuple[int, int]]]]

    def split(self, thread: int | None, start_ns: int, end_ns: int) -> list[tuple[str, int, int]]:
        """[start_ns, end_ns) of the thread cut into consecutive (cause, start_ns, end_ns) by HostTime's priority."""
        if end_ns <= start_ns:
            return []
        unions = [_clipped(u, start_ns, end_ns) for u in self.by_thread.get(thread, [[], [], []])]
        edges = sorted({start_ns, end_ns, *(t for u in unions for a, b in u for t in (a, b))})
        found: list[tuple[str, int, int]] = []
        for a, b in zip(edges, edges[1:], strict=False):
            cause = next(
                (c for c, u in zip((SYNCHRONIZATION, START_UP, LAUNCH_BOUND), unions, strict=True) if _covers(u, a)),
                HOST_WORK,
            )
            if found and found[-1][0] == cause:
                found[-1] = (cause, found[-1][1], b)
            else:
                found.append((cause, a, b))
        return found


def _clipped(intervals: list[tuple[int, int]], start_ns: int, end_ns: int) -> list[tuple[int, int]]:
    """The sorted disjoint intervals that overlap [start_ns, end_ns), clipped to it."""
    lo = max(0, bisect.bisect_right(intervals, (start_ns, FAR)) - 1)
    hi = bisect.bisect_left(intervals, (end_ns, -FAR))
    return [(max(a, start_ns), min(b, end_ns)) for a, b in intervals[lo:hi] if b > start_ns]


def _covers(intervals: list[tuple[int, int]], at: int) -> bool:
    """Whether the sorted disjoint intervals hold the instant `at`."""
    k = bisect.bisect_right(intervals, (at, FAR)) - 1
    return k >= 0 and intervals[k][0] <= at < intervals[k][1]


def classify_host(calls: pl.DataFrame, ranges: pl.DataFrame) -> HostTime:
    """The host's time by cause (`HostTime`); `calls` carries `call_class` (calls.call_class)."""
    columns = ("thread", "start_ns", "end_ns")
    syncs = calls.filter(pl.col("call_class") == SYNC).select(columns)
    named = startup_work(calls, ranges)
    startup = named.select(columns)
    return HostTime(
        syncing=merge(syncs, by="thread"),
        starting=merge(pl.concat([syncs, startup]), by="thread"),
        issuing=merge(pl.concat([_issuing(calls, ranges), startup]), by="thread"),
        startup_work=named,
    )


def _issuing(calls: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """The host's time issuing work (thread, start_ns, end_ns; overlapping): launch, wait and sync calls and the
    operators that launch kernels."""
    issuing = calls.filter(pl.col("call_class").is_in([LAUNCH, WAIT, SYNC])).select("thread", "start_ns", "end_ns")
    dispatch = dispatch_ranges(ranges, calls)
    return pl.concat([issuing, dispatch.select("thread", "start_ns", "end_ns")])


def startup_work(calls: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """The host's one-time start-up work (thread, start_ns, end_ns, name): STARTUP_CALLS; launch and other
    non-blocking calls of SLOW_CALL_NS or more; and each operator's first call where it took SLOW_CALL_NS or more
    and FIRST_CALL_SLOWER times each of its later calls (an operator called once is not judged; one name called from
    several places, a copy in and a copy out, has later calls as slow as its first)."""
    named = calls.filter(pl.col("base").is_in(list(STARTUP_CALLS)))
    slow = calls.filter(
        pl.col("call_class").is_in([LAUNCH, OTHER]) & (pl.col("end_ns") - pl.col("start_ns") >= SLOW_CALL_NS)
    )
    found = pl.concat([named, slow]).select("thread", "start_ns", "end_ns", name=pl.col("base")).unique()
    duration = pl.col("end_ns") - pl.col("start_ns")
    ops = ranges.filter(pl.col("domain") == "cpu_op").sort("start_ns")
    first = ops.group_by("name").agg(
        pl.col("thread", "start_ns", "end_ns").first(),
        first_ns=duration.first(),
        later_ns=duration.slice(1).max(),
    )
    first = first.filter(
        (pl.col("first_ns") >= SLOW_CALL_NS) & (pl.col("first_ns") >= FIRST_CALL_SLOWER * pl.col("later_ns"))
    )
    firsts = first.select("thread", "start_ns", "end_ns", name=pl.concat_str(pl.lit("first "), "name"))
    return pl.concat([found, firsts]).sort("start_ns")


def _stall_kind(frame: pl.DataFrame, gpu: pl.DataFrame, calls: pl.DataFrame) -> pl.Series:
    """What a piece's queued work may have waited on, were it stalled (the evidence of a stalled queue): a CUDA
    graph's own dependencies where it was replayed from one; dropped events where launch calls on its thread since
    the previous work's issue have no GPU activity in the trace (the profiler lost them: the GPU ran them then);
    else work outside the trace (another process on the GPU)."""
    graph_ids = calls.filter(pl.col("base").is_in(list(GRAPH_LAUNCH_CALLS)))["correlation_id"].drop_nulls()
    from_graph = gpu.select(
        pl.col("graph_id").is_not_null() | pl.col("correlation_id").is_in(graph_ids.implode()).fill_null(False)
    ).to_series()
    missing = calls.filter(
        (pl.col("call_class") == LAUNCH)
        & pl.col("correlation_id").is_not_null()
        & ~pl.col("base").is_in(list(EVENT_RECORD_CALLS))
        & ~pl.col("correlation_id").is_in(gpu["correlation_id"].drop_nulls().implode())
    ).select("thread", "start_ns", end_ns=pl.col("start_ns") + 1)
    until = pl.min_horizontal("issue_ns", "gap_end_ns")
    dropped = measure(merge(missing, by="thread"), frame["since_ns"], frame.select(until).to_series(), frame["thread"])
    graph = from_graph.gather(frame["next_row"]).fill_null(False)
    kinds = pl.DataFrame({"graph": graph, "dropped": dropped > 0}).select(
        pl.when("graph")
        .then(pl.lit("graph replay", KIND_TYPE))
        .when("dropped")
        .then(pl.lit("dropped events", KIND_TYPE))
        .otherwise(pl.lit("outside the trace", KIND_TYPE))
    )
    return kinds.to_series().alias("stall_kind")


@dataclass(frozen=True)
class Attributed:
    """Every (idle piece, cause) with idle_ns > 0 (`rows`: piece, step, cause, idle_ns, kind, start_ns, end_ns),
    and what names a piece's evidence (`details`: piece, next_row in `gpu`, call_row in `calls`), joined only to
    the evidence shown (a trace of millions of gaps never carries names on every row)."""

    rows: pl.DataFrame
    details: pl.DataFrame
    gpu: pl.DataFrame
    calls: pl.DataFrame
    startup: pl.DataFrame  # the host's one-time start-up work (`startup_work`), to name its evidence


def _named(top: pl.DataFrame, attributed: Attributed) -> pl.DataFrame:
    """The evidence rows with their names: the next activity's operator for host work, the call otherwise."""
    gpu = attributed.gpu.select(pl.col("name").alias("next_name"), "operator").with_row_index("next_row")
    calls = attributed.calls.select("base").with_row_index("call_row")
    found = top.join(attributed.details, on="piece", how="left")
    found = found.join(gpu, on="next_row", how="left").join(calls, on="call_row", how="left")
    return found.with_columns(
        name=pl.when((pl.col("cause") == HOST_WORK) & pl.col("next_row").is_null())
        .then(pl.lit("after the trace's last GPU activity"))  # no activity ended the gap
        .when(pl.col("cause") == HOST_WORK)
        .then(pl.concat_str(pl.lit("before "), pl.coalesce("operator", "next_name", pl.lit("an unnamed activity"))))
        .when(pl.col("cause") == WAITING)
        .then(pl.lit("cudaStreamWaitEvent"))
        .when(pl.col("cause") == SYNCHRONIZATION)
        .then(pl.lit("synchronizing call"))  # named after the call in `summarize`
        .when((pl.col("cause") == STALLED_QUEUE) & (pl.col("kind") != "graph replay"))
        .then(pl.concat_str(pl.lit("before "), pl.coalesce("operator", "next_name", pl.lit("?"))))
        .when(pl.col("cause") == START_UP)
        .then(pl.lit("start-up call"))  # named after the call in `summarize`
        .otherwise(pl.coalesce("base", "next_name", pl.lit("(unnamed)")))
    )


def _waited(calls: pl.DataFrame) -> pl.DataFrame:
    """Each launch call with its thread, issue time, class, plain name and whether a cudaStreamWaitEvent on its
    thread came after the previous launch (the work it issues may wait on another stream)."""
    ordered = calls.select("thread", "start_ns", "end_ns", "correlation_id", "call_class").with_row_index("call_row")
    ordered = ordered.sort("thread", "start_ns")
    last_wait = pl.when(pl.col("call_class") == WAIT).then(pl.col("start_ns")).forward_fill().over("thread")
    prev_launch = (
        pl.when(pl.col("call_class").is_in([LAUNCH, SYNC]))
        .then(pl.col("start_ns"))
        .shift(1)
        .forward_fill()
        .over("thread")
    )
    marked = ordered.with_columns(waited=(last_wait > prev_launch.fill_null(-FAR)).fill_null(False))
    return marked.filter(pl.col("correlation_id").is_not_null()).select(
        "correlation_id",
        "thread",
        pl.col("start_ns").alias("issue_ns"),
        pl.col("end_ns").alias("returned_ns"),
        pl.col("call_class").cast(CLASS_TYPE),
        "call_row",
        "waited",
    )


def _main_thread(calls: pl.DataFrame) -> int | None:
    """The thread that made most launch calls (a gap with no next activity is judged on it)."""
    launches = calls.filter(pl.col("call_class") == LAUNCH)
    if launches.height == 0:
        return None
    return int(launches.group_by("thread").len().sort("len", "thread", descending=[True, False])["thread"][0])


def summarize(attributed: Attributed, steps: int, syncs: pl.DataFrame) -> list[tuple[IdleCause, ...]]:
    """Per step, every cause (largest first) with its idle time, pieces and largest evidence."""
    rows = attributed.rows
    totals = rows.group_by("step", "cause").agg(pl.col("idle_ns").sum(), pl.len().alias("gaps"))
    top = (
        rows.group_by("step", "cause")
        .agg(pl.all().top_k_by("idle_ns", EVIDENCE_PER_CAUSE))
        .explode([c for c in rows.columns if c not in ("step", "cause")])
        .with_columns(pl.col("cause").cast(pl.Utf8), pl.col("kind").cast(pl.Utf8))
        .sort("step", "cause", "idle_ns", descending=[False, False, True])
    )
    top = _name_startup(_name_syncs(_named(top, attributed), syncs), attributed.startup)
    by_step: list[tuple[IdleCause, ...]] = []
    total_rows = {(s, c): (n, g) for s, c, n, g in totals.select("step", "cause", "idle_ns", "gaps").iter_rows()}
    evidence: dict[tuple[int, str], list[Evidence]] = {}
    for step, cause, idle, kind, name, start, end in top.select(
        "step", "cause", "idle_ns", "kind", "name", "start_ns", "end_ns"
    ).iter_rows():
        evidence.setdefault((step, cause), []).append(Evidence(kind, name or "", int(start), int(end), int(idle)))
    for step in range(steps):
        found = [
            IdleCause(
                cause,
                int(total_rows[(step, cause)][0]),
                int(total_rows[(step, cause)][1]),
                tuple(evidence.get((step, cause), ())),
            )
            for cause in CAUSES
            if (step, cause) in total_rows
        ]
        found += [IdleCause(cause, 0, 0, ()) for cause in CAUSES if (step, cause) not in total_rows]
        by_step.append(tuple(sorted(found, key=lambda c: (-c.idle_ns, CAUSES.index(c.cause)))))
    return by_step


def _sync_calls(rows: pl.DataFrame, syncs: pl.DataFrame) -> pl.DataFrame:
    """Each synchronization row (`row`) with the synchronizing call in progress at (or last before) its start, else
    the first to start inside it (a gap's row starts where the gap does, and the trace's last gap may hold a sync
    made after its start): `sync_call`, its name, and `pageable_copy`, whether it is a copy of pageable memory."""
    table = syncs.select(pl.col("start_ns").alias("at_ns"), pl.col("base").alias("sync_call"), "pageable_copy").sort(
        "at_ns"
    )
    found = (
        rows.filter(pl.col("cause") == SYNCHRONIZATION)
        .select("row", pl.col("start_ns").alias("at_ns"), "end_ns")
        .sort("at_ns")
        .join_asof(table, on="at_ns", strategy="backward")
    )
    inside = (
        found.filter(pl.col("sync_call").is_null())
        .select("row", "at_ns", "end_ns")
        .join_asof(table.with_columns(call_ns=pl.col("at_ns")), on="at_ns", strategy="forward")
        .filter(pl.col("call_ns") < pl.col("end_ns"))
    )
    return pl.concat([found.filter(pl.col("sync_call").is_not_null()), inside], how="diagonal_relaxed").select(
        "row", "sync_call", "pageable_copy"
    )


def _name_syncs(attributed: pl.DataFrame, syncs: pl.DataFrame) -> pl.DataFrame:
    """Synchronization evidence named after the synchronizing call in progress at (or last before) its start."""
    if syncs.height == 0 or attributed.height == 0:
        return attributed
    rows = attributed.with_row_index("row")
    rows = rows.join(_sync_calls(rows, syncs).drop("pageable_copy"), on="row", how="left")
    return rows.with_columns(name=pl.coalesce("sync_call", "name")).drop("row", "sync_call")


def _name_startup(attributed: pl.DataFrame, startup: pl.DataFrame) -> pl.DataFrame:
    """Start-up evidence named after the start-up work that overlaps it most (evidence rows are few: a cross join
    of them with the start-up work is small)."""
    rows = attributed.with_row_index("row")
    shown = rows.filter(pl.col("cause") == START_UP).select("row", "start_ns", "end_ns")
    if startup.height == 0 or shown.height == 0:
        return attributed
    work = startup.select(pl.col("start_ns").alias("work_start"), pl.col("end_ns").alias("work_end"), "name")
    overlap = pl.min_horizontal("end_ns", "work_end") - pl.max_horizontal("start_ns", "work_start")
    found = (
        shown.join(work, how="cross")
        .with_columns(overlap_ns=overlap)
        .filter(pl.col("overlap_ns") > 0)
        .sort("overlap_ns", "work_start", descending=[True, False])
        .unique("row", keep="first")
        .select("row", pl.col("name").alias("startup_work"))
    )
    rows = rows.join(found, on="row", how="left")
    return rows.with_columns(name=pl.coalesce("startup_work", "name")).drop("row", "startup_work")


def pageable_sync_idle(attributed: Attributed, steps: int, syncs: pl.DataFrame) -> list[int]:
    """Per step, the synchronization idle that copies of pageable memory cost (the host blocked while the driver
    staged them): pinned memory removes it with the copies' own slowness (`advice.copy_suggestions`)."""
    rows = attributed.rows.with_row_index("row")
    if syncs.height == 0 or rows.height == 0:
        return [0] * steps
    found = rows.join(_sync_calls(rows, syncs).filter("pageable_copy"), on="row", how="semi")
    per_step = dict(found.group_by("step").agg(pl.col("idle_ns").sum()).iter_rows())
    return [int(per_step.get(step, 0)) for step in range(steps)]
