"""One reading of one step: the critical path's host links and the idle causes read the host's time the same way
(critical_path._host_links, causes.HostTime). The rule, checked on the step each result shows for every recorded
step and public Kineto trace, counting the path's host time only while the GPU idled (the causes explain idle
time; a host link also runs beside GPU work off the path):
- every host link is named by a host-side idle cause (synchronization, start-up, launch-bound, host work);
- the path holds no more synchronization than the causes: the time in synchronizing calls is the causes'
  synchronization, which adds the host's time after a sync that drained the queue (the sync's lead, causes.py);
- the host cause with the most time on the path is the step's largest host-side idle cause, unless the causes'
  synchronization holds at least as much idle as that cause does, or more than the path's synchronization by more
  than the two causes differ (that time, after a sync, is the sync's lead: the causes take it from the cause the
  host ran as, the path leaves it there; Lightning's step, launch-bound 10.0 ms and host work 9.7 ms on the path,
  has 8.8 and 9.0 ms of them after 1.9 ms of lead went to the sync).
Paths whose host time is under 1% of the step are not judged on the last point (nothing there to tell)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tracekit.analysis.steps import analyze_steps
from tracekit.analysis.steps.analysis import device_events
from tracekit.analysis.steps.busy import gpu_union
from tracekit.analysis.steps.intervals import measure
from tracekit.analysis.steps.types import HOST_WORK, LAUNCH_BOUND, START_UP, SYNCHRONIZATION
from tracekit.importers.kineto import read_host_events

STEPS = Path(__file__).resolve().parents[3] / "sample_traces/steps"
RECORDED = sorted(str(p.relative_to(STEPS)) for p in STEPS.rglob("*.pt.trace.json.gz"))
PUBLIC = ["kineto_2021_resnet50_nw0_train.pt.trace.json.gz", "kineto_GH200_transformer.pt.trace.json"]
HOST_CAUSES = (SYNCHRONIZATION, START_UP, LAUNCH_BOUND, HOST_WORK)


def _path_and_causes_agree(path: Path) -> None:
    events = read_host_events(path)
    result = analyze_steps(events)
    step = result.steps[result.representative_step]
    host = [link for link in result.critical_path if link.kind == "host"]
    assert {link.reason for link in host} <= set(HOST_CAUSES)
    union = gpu_union(device_events(events)[0])
    starts = pl.Series([link.start_ns for link in host], dtype=pl.Int64)
    ends = pl.Series([link.end_ns for link in host], dtype=pl.Int64)
    busy = measure(union, starts, ends).to_list() if host else []
    on_path = dict.fromkeys(HOST_CAUSES, 0)
    for link, busy_ns in zip(host, busy, strict=True):
        on_path[link.reason] += link.end_ns - link.start_ns - busy_ns
    idle = {c.cause: c.idle_ns for c in step.causes}
    assert on_path[SYNCHRONIZATION] <= idle[SYNCHRONIZATION]
    if sum(on_path.values()) >= 0.01 * step.span_ns:
        top = max(HOST_CAUSES, key=lambda c: on_path[c])
        largest = max(HOST_CAUSES, key=lambda c: idle[c])
        lead = idle[SYNCHRONIZATION] - on_path[SYNCHRONIZATION]
        assert top == largest or idle[SYNCHRONIZATION] >= idle[top] or lead > idle[largest] - idle[top], (
            on_path,
            idle,
        )


@pytest.mark.parametrize("trace", RECORDED)
def test_the_critical_path_and_the_causes_agree_on_a_recorded_step(trace, sample_trace):
    _path_and_causes_agree(sample_trace(f"steps/{trace}"))


@pytest.mark.parametrize("name", PUBLIC)
def test_the_critical_path_and_the_causes_agree_on_a_public_trace(name, real_export):
    _path_and_causes_agree(real_export(name))


def test_a_host_link_after_a_sync_is_named_by_what_the_host_did(sample_trace):
    """h200/resnet_pageable: the path used to name the 17.3 ms from the pageable copy's return to the next launch
    "host after a sync", where synchronization is 1.5 ms of the idle; the host was launching then (launch-bound,
    the step's largest cause), and the path says so."""
    result = analyze_steps(read_host_events(sample_trace("steps/h200/resnet_pageable.pt.trace.json.gz")))
    step = result.steps[result.representative_step]
    time_by = dict.fromkeys(HOST_CAUSES, 0)
    for link in result.critical_path:
        if link.kind == "host":
            time_by[link.reason] += link.end_ns - link.start_ns
    assert step.causes[0].cause == LAUNCH_BOUND
    assert max(time_by, key=lambda c: time_by[c]) == LAUNCH_BOUND
    assert time_by[SYNCHRONIZATION] <= next(c.idle_ns for c in step.causes if c.cause == SYNCHRONIZATION)


def test_the_path_goes_back_through_a_sync_that_waited_on_nothing(sample_trace):
    """tv_resnet18_loader0 (cpu_cuda): the DataLoader's 93.6 ms of host work opens the step, then a pageable copy's
    synchronizing call that finds the GPU idle. The path used to stop at that call and read the step as launch-bound;
    it goes on back through it to the step's start, and its largest host cause is the causes' own."""
    result = analyze_steps(
        read_host_events(sample_trace("steps/h200_programs/tv_resnet18_loader0.cpu_cuda.pt.trace.json.gz"))
    )
    step = result.steps[result.representative_step]
    host = [link for link in result.critical_path if link.kind == "host"]
    assert host[0].start_ns == step.start_ns
    time_by = dict.fromkeys(HOST_CAUSES, 0)
    for link in host:
        time_by[link.reason] += link.end_ns - link.start_ns
    assert max(time_by, key=lambda c: time_by[c]) == HOST_WORK == step.causes[0].cause
    assert time_by[HOST_WORK] >= 0.8 * step.causes[0].idle_ns
