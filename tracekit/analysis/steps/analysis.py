"""A trace's steps: windows, busy and idle time, idle causes, categories, operators, critical path and what to try
first, from one trace's `HostEvents` (a pure function: no I/O)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

import polars as pl

from tracekit.analysis.steps import advice, busy, categories, causes, operators
from tracekit.analysis.steps.calls import GRAPH_LAUNCH_CALLS, SYNC, call_class
from tracekit.analysis.steps.critical_path import critical_path, timeline
from tracekit.analysis.steps.detect import Windows, detect
from tracekit.analysis.steps.framework import is_pytorch
from tracekit.analysis.steps.types import STEPS_SCHEMA, IdleCause, Step, StepsResult
from tracekit.host_events import ANNOTATION_DOMAIN, KERNEL, MEMCPY, MEMSET, HostEvents


class StepError(ValueError):
    """The trace cannot be cut into steps as asked (no range of that name, no GPU activity)."""


def device_events(events: HostEvents) -> tuple[pl.DataFrame, list[str]]:
    """The GPU activities of the device that ran most of them (a step is one GPU's timeline)."""
    gpu = events.gpu
    warnings: list[str] = []
    devices = gpu.group_by("device_id").len().sort("len", "device_id", descending=[True, False])
    if devices.height > 1:
        chosen = devices["device_id"][0]
        warnings.append(
            f"GPU activity on {devices.height} devices; the steps are those of device {chosen}, which ran the most"
        )
        gpu = gpu.filter(pl.col("device_id") == chosen)
    return gpu, warnings


def _idle(
    gpu: pl.DataFrame, calls: pl.DataFrame, ranges: pl.DataFrame, windows: pl.DataFrame
) -> tuple[list[int], list[tuple[IdleCause, ...]], list[int]]:
    """Per window: its busy time, its idle causes and the synchronization idle of its pageable copies. The per-gap
    frames behind them end here (a trace of millions of gaps)."""
    merged = busy.gpu_union(gpu)
    busy_ns = busy.busy_per_window(merged, windows).to_list()
    attributed = causes.attribute(busy.idle_pieces(merged, windows), gpu, calls, ranges)
    syncs = calls.filter(pl.col("call_class") == SYNC)
    return (
        busy_ns,
        causes.summarize(attributed, windows.height, syncs),
        causes.pageable_sync_idle(attributed, windows.height, syncs),
    )


T = TypeVar("T")


def standing_for_the_run(steps: Sequence[T]) -> list[T]:
    """The steps that stand for the run: all but the trace's first where there are three or more (see below)."""
    return list(steps[1:] if len(steps) >= 3 else steps)


def median_bounds_ns(spans: Sequence[int]) -> tuple[int, int]:
    """The shortest and longest span the median of these steps could be, at about 95%: the order statistics that
    bound a median whatever the steps' distribution (n/2 -+ 1.96 sqrt(n)/2 in rank; the shortest and longest of five
    or fewer), so a long run's odd step does not stretch it and a few recorded steps bound it by their range."""
    run = sorted(spans)
    if not run:
        return 0, 0
    k = max(0, math.floor((len(run) - 1.96 * math.sqrt(len(run))) / 2))
    return run[k], run[len(run) - 1 - k]


# Where the median of the steps that stand for the run could lie more than this apart (longest over shortest), it is
# one draw of a step that varies: on the set's DataLoader-fed programs (a batch every few steps waits on the workers)
# the replay's median missed the program's by more than 10% on 15 of the 17 traces over it, and on 34 of the 133
# below (the four recordings, at the shipped calibration).
UNEVEN_STEPS = 1.5


def uneven_steps_warning(spans: Sequence[int], pytorch: bool) -> str | None:
    """Said when the median of the recorded steps that stand for the run is that uncertain: how many were recorded
    bounds what their median can say about the program's step."""
    low, high = median_bounds_ns(spans)
    if low <= 0 or high / low <= UNEVEN_STEPS:
        return None
    more = (
        "record more steps (the profiler schedule's active=) or anchor the replay on the program's own step time"
        if pytorch
        else "record more of the loop"
    )
    spread = f"vary {min(spans) / 1e6:.2f} to {max(spans) / 1e6:.2f} ms"
    if (low, high) != (min(spans), max(spans)):
        spread += f", and their median could lie anywhere from {low / 1e6:.2f} to {high / 1e6:.2f} ms"
    cause = " (a DataLoader that falls behind every few steps makes them so)" if pytorch else ""
    return (
        f"the {len(spans)} recorded steps that stand for the run {spread}{cause}, so their median is one draw of a "
        f"step that varies this much: {more}"
    )


def median_span_ns(spans: Sequence[int]) -> int:
    """The median of the spans of the steps that stand for the run (the upper one of an even count), 0 for none."""
    run = sorted(standing_for_the_run(spans))
    return run[len(run) // 2] if run else 0


def _windows(events: HostEvents, step: str | None) -> tuple[pl.DataFrame, list[str], pl.DataFrame, bool, Windows]:
    """The device's GPU activities, the warnings about them, the classified calls, whether the trace is a PyTorch
    program's, and its step windows."""
    gpu, warnings = device_events(events)
    if gpu.height == 0:
        raise StepError("the trace holds no GPU activity (kernels, copies or sets): no step to measure")
    calls = call_class(events.calls, gpu)
    pytorch = is_pytorch(events)
    try:
        return gpu, warnings, calls, pytorch, detect(gpu, calls, events.ranges, step, by_pattern=pytorch)
    except LookupError as exc:
        raise StepError(str(exc)) from None


def median_step_ns(events: HostEvents, step: str | None = None) -> int:
    """The median step alone (`analyze_steps(...).median_step_ns`, without the causes, breakdowns and critical
    path): what a replay at another cost scale is read for (the interval's ends, the anchor's search)."""
    *_, found = _windows(events, step)
    return median_span_ns([end - start for start, end in zip(found.starts_ns, found.ends_ns, strict=True)])


def analyze_steps(events: HostEvents, step: str | None = None) -> StepsResult:
    """Every step of the trace (see the package's modules for each part)."""
    gpu, warnings, calls, pytorch, windows_found = _windows(events, step)
    windows = busy.window_frame(windows_found.starts_ns, windows_found.ends_ns)
    busy_ns, per_step_causes, pageable_sync = _idle(gpu, calls, events.ranges, windows)
    graph_ids = calls.filter(pl.col("base").is_in(list(GRAPH_LAUNCH_CALLS)))["correlation_id"].drop_nulls()
    # only the columns the breakdowns read: the per-step assignment below copies every column it is given
    labelled = gpu.select(
        "kind",
        "start_ns",
        "end_ns",
        "operator",
        "annotation_path",
        "size_bytes",
        pageable=pl.col("pageable").fill_null(False) & (pl.col("kind") == MEMCPY),
        category=categories.category(pl.col("name"), pl.col("kind")),
        from_graph=pl.col("graph_id").is_not_null() | pl.col("correlation_id").is_in(graph_ids.implode()),
    )
    assigned = operators.clipped(labelled, windows)
    counts = assigned.group_by("step").agg(
        kernels=(pl.col("kind") == KERNEL).sum(),
        graph_kernels=((pl.col("kind") == KERNEL) & pl.col("from_graph")).sum(),
        copies=(pl.col("kind") == MEMCPY).sum(),
        sets=(pl.col("kind") == MEMSET).sum(),
        pageable_ns=pl.when("pageable").then(pl.col("end_ns") - pl.col("start_ns")).otherwise(0).sum(),
        pageable_bytes=pl.when("pageable").then(pl.col("size_bytes").fill_null(0)).otherwise(0).sum(),
    )
    count_of = {row[0]: row[1:] for row in counts.iter_rows()}
    per_category = operators.categories(assigned, windows.height)
    per_operator = operators.operators(assigned.filter(pl.col("kind") == KERNEL), windows.height)
    host_collectives = events.ranges.filter(
        (pl.col("domain") == ANNOTATION_DOMAIN) & pl.col("name").str.contains(categories.HOST_COLLECTIVE_RANGE)
    )
    comm, overlap = operators.communication_overlap(
        labelled.filter(pl.col("kind") == KERNEL), windows, host_collectives
    )
    steps = []
    for index, (label, start, end) in enumerate(
        zip(windows_found.labels, windows["start_ns"].to_list(), windows["end_ns"].to_list(), strict=True)
    ):
        kernels, graph_kernels, copies, sets, pageable_ns, pageable_bytes = count_of.get(index, (0,) * 6)
        span = end - start
        steps.append(
            Step(
                index=index,
                label=label,
                start_ns=start,
                end_ns=end,
                host_end_ns=windows_found.host_ends_ns[index],
                span_ns=span,
                busy_ns=int(busy_ns[index]),
                idle_ns=span - int(busy_ns[index]),
                kernels=int(kernels),
                graph_kernels=int(graph_kernels),
                copies=int(copies),
                sets=int(sets),
                causes=per_step_causes[index],
                categories=per_category[index],
                operators=per_operator[index],
                communication_ns=comm[index],
                communication_overlap_ns=overlap[index],
                pageable_copy_ns=int(pageable_ns),
                pageable_copy_bytes=int(pageable_bytes),
                pageable_sync_idle_ns=pageable_sync[index],
            )
        )
    # The steps that stand for the run: all but the trace's first where there are three or more. The first follows
    # work the profiler did not record (its warm-up): a sync that drained the queue before it, or the profiler's own
    # start, reads as the cause of its leading gap, and found by its launches its start is its first call, the
    # host's work before that unseen. Their median span, the step shown (span nearest it) and the savings of what to
    # try first (each cause's median over them) come from these.
    run = standing_for_the_run(steps)
    spans = [s.span_ns for s in run]
    median = median_span_ns([s.span_ns for s in steps])
    representative = min(run, key=lambda s: (abs(s.span_ns - median), s.index)) if run else None
    typical = advice.typical_step(run, representative) if representative else None
    found = (
        advice.worth_trying(
            advice.idle_suggestions(typical, pytorch)
            + advice.copy_suggestions(typical, advice.pinned_rate(gpu), pytorch),
            typical,
            max(spans) - min(spans) if len(spans) >= 2 else None,
        )
        if typical
        else []
    )
    tries = tuple(sorted(found, key=lambda s: -s.saves_ns))
    for said in (advice.profiler_warning(events.profiler_options), uneven_steps_warning(spans, pytorch)):
        if said:
            warnings.append(said)
    host = causes.classify_host(calls, events.ranges)
    path = critical_path(timeline(gpu, calls, representative), host) if representative else ()
    return StepsResult(
        schema=STEPS_SCHEMA,
        source=events.source,
        rank=events.rank,
        device_name=events.device_name,
        detected_by=windows_found.detected_by,
        steps=tuple(steps),
        median_step_ns=median,
        representative_step=representative.index if representative else None,
        critical_path=path,
        what_to_try=tries,
        warnings=tuple(warnings),
    )
