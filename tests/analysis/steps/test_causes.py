"""What a synchronizing call costs the idle gaps after it, on small timelines whose answer follows from the
counterfactual: without the sync the host would have issued everything after it as much sooner as it sat blocked
in it, and no sooner (causes.py). One thread, one stream, one step, times in ns."""

from __future__ import annotations

import polars as pl
import pytest

from tracekit.analysis.steps import analyze_steps
from tracekit.analysis.steps.causes import LAUNCH_LATENCY_NS
from tracekit.analysis.steps.types import (
    HOST_WORK,
    KERNEL_WAIT,
    LAUNCH_BOUND,
    STALLED_QUEUE,
    SYNCHRONIZATION,
    UNATTRIBUTED,
)
from tracekit.host_events import HostEvents

THREAD = 1


def timeline(calls: list[tuple[str, int, int, int]], gpu: list[tuple[str, int, int, int, bool]]) -> HostEvents:
    """`calls`: (name, correlation, start, end); `gpu`: (kind, correlation, start, end, pageable); one
    ProfilerStep#1 range over all of it."""
    end = max(e for *_, e, _ in gpu)
    return HostEvents(
        gpu=pl.DataFrame(
            [
                {"kind": k, "name": f"{k} {c}", "device_id": 0, "stream_id": 7, "correlation_id": c, "start_ns": s}
                | {"end_ns": e, "pageable": p}
                for k, c, s, e, p in gpu
            ]
        ),
        calls=pl.DataFrame(
            [{"name": n, "thread": THREAD, "correlation_id": c, "start_ns": s, "end_ns": e} for n, c, s, e in calls]
        ),
        ranges=pl.DataFrame(
            [{"name": "ProfilerStep#1", "domain": "user_annotation", "thread": THREAD, "start_ns": 0, "end_ns": end}]
        ),
    ).conformed()


def causes_of(events: HostEvents) -> dict[str, int]:
    (step,) = analyze_steps(events).steps
    found = {c.cause: c.idle_ns for c in step.causes}
    assert sum(found.values()) == step.idle_ns and found[UNATTRIBUTED] == 0
    return found


CASES = {
    # the host waits 985 ns in the sync for a full queue, then spends 500 ns before its next launch: all 500 are
    # the sync's (it held the host longer than that), and so is the next launch's 10 ns latency (issued 985 ns
    # sooner, the kernel would have been queued); the first kernel's launch returns inside the step's first gap, so
    # that gap is the host's launching (launch-bound: 5 ns in the call, 5 ns of latency after it)
    "a long wait drains the queue": (
        [("cudaLaunchKernel", 1, 0, 5), ("cudaStreamSynchronize", 2, 20, 1005), ("cudaLaunchKernel", 3, 1500, 1505)],
        [("kernel", 1, 10, 1000, False), ("kernel", 3, 1510, 1600, False)],
        {SYNCHRONIZATION: 510, KERNEL_WAIT: 0, LAUNCH_BOUND: 10, HOST_WORK: 0},
    ),
    # the GPU ran dry 10 ns after the sync began: the sync held the host 16 ns, so 16 of the 460 ns before the next
    # launch are its; the host's own 444 ns would have left the GPU idle without it
    "a short wait at the queue's end": (
        [("cudaLaunchKernel", 1, 0, 5), ("cudaStreamSynchronize", 2, 30, 46), ("cudaLaunchKernel", 3, 500, 505)],
        [("kernel", 1, 10, 40, False), ("kernel", 3, 510, 600, False)],
        {SYNCHRONIZATION: 16, KERNEL_WAIT: 0, LAUNCH_BOUND: 20, HOST_WORK: 444},
    ),
    # the GPU ran dry before the sync began (a host-bound step): only the call's own 16 ns
    "a sync after the queue ran dry": (
        [("cudaLaunchKernel", 1, 0, 5), ("cudaStreamSynchronize", 2, 30, 46), ("cudaLaunchKernel", 3, 500, 505)],
        [("kernel", 1, 10, 20, False), ("kernel", 3, 510, 600, False)],
        {SYNCHRONIZATION: 16, KERNEL_WAIT: 0, LAUNCH_BOUND: 20, HOST_WORK: 464},
    ),
    # a pageable copy holds the host 2,000 ns while the GPU copies; its DMA ends 16 ns after the call returns, and
    # the 84 ns until the next launch and its 10 ns latency are the sync's too (nothing could be queued behind the
    # copy), as are the 200 ns before the copy started (the driver staging it)
    "a synchronous copy's tail": (
        [("cudaMemcpyAsync", 1, 0, 2000), ("cudaLaunchKernel", 2, 2100, 2105)],
        [("memcpy", 1, 200, 2016, True), ("kernel", 2, 2110, 2200, False)],
        {SYNCHRONIZATION: 294, KERNEL_WAIT: 0, LAUNCH_BOUND: 0, HOST_WORK: 0},
    ),
    # the sync held the host 985 ns and the GPU ran dry as it returned; the host then launches just in time: the
    # GPU waits 105 ns on it before the first launch, 300 ns before the second, 700 before the third, and each
    # launch's latency is 10 ns. Without the sync each would have been issued 985 ns sooner, so the first two gaps
    # with their latencies (425 ns) and 560 ns of the third are the sync's: 985 ns, what it held the host; the
    # last 140 ns of the third the host would have spent anyway, and the third launch's latency was launching late
    "a drained queue refilled just in time": (
        [
            ("cudaLaunchKernel", 1, 0, 5),
            ("cudaStreamSynchronize", 2, 20, 1005),
            ("cudaLaunchKernel", 3, 1105, 1110),
            ("cudaLaunchKernel", 4, 1520, 1525),
            ("cudaLaunchKernel", 5, 2335, 2340),
        ],
        [
            ("kernel", 1, 10, 1000, False),
            ("kernel", 3, 1115, 1220, False),
            ("kernel", 4, 1530, 1635, False),
            ("kernel", 5, 2345, 2400, False),
        ],
        {SYNCHRONIZATION: 115 + 310 + 560, KERNEL_WAIT: 0, LAUNCH_BOUND: 20, HOST_WORK: 140},
    ),
    # a loop of short syncs after one that drained the queue (a gradient norm read per parameter): the second sync
    # holds the host only 28 ns, but the lead the first left (985 - 115 ns) is not lost to it: without either the
    # host would still be ahead, so the second gap (165 ns on the host, 10 ns latency) is the syncs' too
    "short syncs after a drain keep its lead": (
        [
            ("cudaLaunchKernel", 1, 0, 5),
            ("cudaStreamSynchronize", 2, 20, 1005),
            ("cudaLaunchKernel", 3, 1105, 1110),
            ("cudaStreamSynchronize", 4, 1112, 1140),
            ("cudaLaunchKernel", 5, 1300, 1305),
        ],
        [("kernel", 1, 10, 1000, False), ("kernel", 3, 1115, 1135, False), ("kernel", 5, 1310, 1400, False)],
        {SYNCHRONIZATION: 115 + 175, KERNEL_WAIT: 0, LAUNCH_BOUND: 10, HOST_WORK: 0},
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_sync_costs_the_gap_what_it_held_the_host(case):
    calls, gpu, expected = CASES[case]
    found = causes_of(timeline(calls, gpu))
    assert {cause: found[cause] for cause in expected} == expected


def test_queued_work_waits_on_launch_latency_and_no_longer():
    """Kernel 2 was queued long before kernel 1 ended: a 3 ns wait for it is the GPU's launch latency (kernel
    wait); 200 us is not, and all but the last LAUNCH_LATENCY_NS of it is a stalled queue, its evidence work
    outside the trace (nothing in the trace held it)."""
    calls = [("cudaLaunchKernel", 1, 0, 5), ("cudaLaunchKernel", 2, 20, 25)]
    short = causes_of(timeline(calls, [("kernel", 1, 10, 1000, False), ("kernel", 2, 1003, 1100, False)]))
    assert (short[KERNEL_WAIT], short[STALLED_QUEUE]) == (3, 0)
    stalled = timeline(calls, [("kernel", 1, 10, 1000, False), ("kernel", 2, 201_000, 201_100, False)])
    found = causes_of(stalled)
    assert (found[KERNEL_WAIT], found[STALLED_QUEUE]) == (LAUNCH_LATENCY_NS, 200_000 - LAUNCH_LATENCY_NS)
    (step,) = analyze_steps(stalled).steps
    (cause,) = [c for c in step.causes if c.cause == STALLED_QUEUE]
    assert [(e.kind, e.name, e.idle_ns) for e in cause.evidence] == [
        ("outside the trace", "before kernel 2", 200_000 - LAUNCH_LATENCY_NS)
    ]
    assert STALLED_QUEUE not in {s.what for s in analyze_steps(stalled).what_to_try}  # no "fuse operators"


def test_a_stall_behind_launches_without_gpu_activity_is_dropped_events():
    """A launch between kernel 1's and kernel 2's whose kernel is not in the trace: the profiler dropped it, and
    the GPU ran it while the trace shows it idle."""
    calls = [("cudaLaunchKernel", 1, 0, 5), ("cudaLaunchKernel", 3, 10, 15), ("cudaLaunchKernel", 2, 20, 25)]
    events = timeline(calls, [("kernel", 1, 10, 1000, False), ("kernel", 2, 201_000, 201_100, False)])
    (step,) = analyze_steps(events).steps
    (cause,) = [c for c in step.causes if c.cause == STALLED_QUEUE]
    assert [(e.kind, e.idle_ns) for e in cause.evidence] == [("dropped events", 200_000 - LAUNCH_LATENCY_NS)]


def test_a_stall_inside_a_graph_replay_is_the_graphs():
    """Two kernels replayed from one cudaGraphLaunch with 100 us between them: the graph's own dependencies (or
    work outside the trace), not launch latency."""
    calls = [("cudaLaunchKernel", 1, 0, 5), ("cudaGraphLaunch", 2, 20, 25)]
    gpu = [("kernel", 1, 10, 1000, False), ("kernel", 2, 1002, 1100, False), ("kernel", 2, 101_100, 101_200, False)]
    (step,) = analyze_steps(timeline(calls, gpu)).steps
    by_cause = {c.cause: c for c in step.causes}
    assert by_cause[KERNEL_WAIT].idle_ns == 2 + LAUNCH_LATENCY_NS
    stalled = by_cause[STALLED_QUEUE]
    assert [(e.kind, e.name, e.idle_ns) for e in stalled.evidence] == [
        ("graph replay", "cudaGraphLaunch", 100_000 - LAUNCH_LATENCY_NS)
    ]


def test_the_gap_while_the_next_launch_call_runs_is_launching():
    """Kernel 2's launch call began before kernel 1 ended and returned 500 ns later, kernel 2 starting just before
    it returned: the GPU waited on the host issuing it (launch-bound), not on its own latency (a slow first launch
    of 270 us in h200/resnet_pageable read as a kernel wait)."""
    calls = [("cudaLaunchKernel", 1, 0, 5), ("cudaLaunchKernel", 2, 900, 1500)]
    found = causes_of(timeline(calls, [("kernel", 1, 10, 1000, False), ("kernel", 2, 1495, 1600, False)]))
    assert (found[LAUNCH_BOUND], found[KERNEL_WAIT]) == (10 + 495, 0)
