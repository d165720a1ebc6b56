"""What every view shows of HTA's trace-wide analyses (`tracekit.analysis.trace_features`): the tables, worded
once, and the JSON (exact values) that `tracekit features --json`, `tracekit diff --json` and the API give."""

from __future__ import annotations

import dataclasses

import polars as pl

from tracekit import figures
from tracekit import format as fmt
from tracekit.analysis.trace_features import KernelCounters, TraceFeatures
from tracekit.analysis.trace_features.counters import FLOP_COLUMNS
from tracekit.analysis.trace_features.diff import TraceDiff
from tracekit.analysis.trace_features.series import MAX_POINTS
from tracekit.present.sections import Figure, Table

SCHEMA = "tracekit.trace_features/1"
DIFF_SCHEMA = "tracekit.trace_diff/1"
COUNTER_KERNEL_ROWS = 20  # the profiled kernels with the most FLOPs listed in the text views (all in the JSON)
COLLECTIVE_ROWS = 20  # the longest collectives listed one by one in the text views (all of them in the JSON)
DIFF_ROWS = 30


def features_json(found: TraceFeatures, series: bool = False) -> dict[str, object]:
    """The analyses as JSON: every summary and every collective; the time series only when asked (two rows per
    launch: a trace of a million launches gives millions)."""
    queues: dict[str, object] = {"full_at": found.queues.full_at}
    queues["streams"] = [dataclasses.asdict(s) for s in found.queues.streams]
    bandwidth: dict[str, object] = {"kinds": [dataclasses.asdict(k) for k in found.bandwidth.kinds]}
    if series:
        queues["series"] = found.queues.series.to_dicts()
        bandwidth["series"] = found.bandwidth.series.to_dicts()
    delays = found.launch_delays
    sequences = found.sequences
    return {
        "schema": SCHEMA,
        "source": found.source,
        "rank": found.rank,
        "device_name": found.device_name,
        "queue_length": queues,
        "memory_bandwidth": bandwidth,
        "collectives": {
            "groups": [dataclasses.asdict(g) for g in found.collectives.groups],
            "collectives": found.collectives.table.to_dicts(),
            "without_metadata": found.collectives.without_metadata,
        },
        "launch_delays": {
            "launches": delays.launches,
            "median_delay_ns": delays.median_delay_ns,
            "p95_delay_ns": delays.p95_delay_ns,
            "shorter_than_call": delays.shorter_than_call,
            "long_calls": delays.long_calls,
            "long_delays": delays.long_delays,
            "operators": [dataclasses.asdict(o) for o in delays.operators],
        },
        "operators": found.operators.sort("gpu_ns", "cpu_ns", "operator", descending=[True, True, False]).to_dicts(),
        "kernel_sequences": {
            "small_ns": sequences.small_ns,
            "min_length": sequences.min_length,
            "max_length": sequences.max_length,
            "small_kernels": sequences.small_kernels,
            "kernels": sequences.kernels,
            "sequences": [dataclasses.asdict(s) | {"launches_saved": s.launches_saved} for s in sequences.sequences],
        },
        "kernel_counters": counters_json(found.counters),
    }


def counters_json(counters: KernelCounters) -> dict[str, object] | None:
    """The range profiler's counters per kernel and per operator; None for a trace recorded without it."""
    if not counters.kernels.height:
        return None
    return {
        "note": COUNTER_TIMES,
        "metrics": list(counters.metrics),
        "kernel_launch_calls": counters.launch_calls,
        "paired_with_launches": counters.paired,
        "operators": counters.operators.to_dicts(),
        "kernels": counters.kernels.to_dicts(),
    }


def _gbps(value: float | None) -> str:
    return fmt.bandwidth(value * 1e9) if value is not None else fmt.MISSING


def queue_table(found: TraceFeatures) -> Table:
    queues = found.queues
    rows = [
        [
            str(s.stream_id),
            fmt.number(s.device_id) if s.device_id is not None else fmt.MISSING,
            fmt.number(s.launches),
            fmt.number(s.max_length),
            fmt.number(s.mean_length),
            fmt.number(s.p95_length),
            fmt.duration(s.full_ns),
        ]
        for s in queues.streams
    ]
    note = (
        f"Launches issued but not started, per stream. A stream's queue is full at {queues.full_at}: the next "
        "launch call waits for the GPU, so time full is time the host was held back by a GPU-bound step."
    )
    if not rows:
        note = "No activity in the trace has its launch call (by correlation id): no queue to follow."
    columns = ["stream", "device", "launches", "longest", "mean (time-weighted)", "p95", "time full"]
    return Table("Launch queue per stream", columns, rows, note)


def bandwidth_table(found: TraceFeatures) -> Table:
    rows = [
        [
            k.kind,
            fmt.number(k.count),
            fmt.size(k.total_bytes),
            fmt.duration(k.busy_ns),
            _gbps(k.median_gbps),
            _gbps(k.p95_gbps),
            _gbps(k.max_gbps),
            _gbps(k.peak_concurrent_gbps),
        ]
        for k in found.bandwidth.kinds
    ]
    note = "Each copy's or set's bytes over its time; the peak adds those running at once."
    columns = ["kind", "count", "bytes", "time", "median rate", "p95 rate", "max rate", "peak at once"]
    return Table("Copy and set bandwidth", columns, rows, note if rows else "No copies or sets with a size.")


def collective_tables(found: TraceFeatures) -> list[Table]:
    """The collectives by kind and group, then the longest one by one, each with its metadata beside it."""
    summary = found.collectives
    groups = [
        [
            g.collective,
            g.dtype or fmt.MISSING,
            g.process_group,
            g.ranks or fmt.MISSING,
            fmt.number(g.group_size) if g.group_size is not None else fmt.MISSING,
            fmt.number(g.count),
            fmt.size(g.total_bytes) if g.total_bytes is not None else fmt.MISSING,
            fmt.duration(g.total_ns),
            _gbps(g.median_algbw_gbps),
            _gbps(g.median_busbw_gbps),
        ]
        for g in summary.groups
    ]
    note = "Bus bandwidth: the algorithm bandwidth times what each rank moves over the links (nccl-tests' factors)."
    if summary.without_metadata:
        note += f" {fmt.plural(summary.without_metadata, 'NCCL kernel')} without metadata in the trace left out."
    if not groups:
        note = "No collective with metadata in the trace (PyTorch 2.1+ writes it on NCCL kernels)."
        if summary.without_metadata:
            note += f" {fmt.plural(summary.without_metadata, 'NCCL kernel')} without it."
    columns = ["collective", "dtype", "process group", "ranks", "group size", "count", "bytes", "time"]
    by_group = Table("Collectives", [*columns, "median algbw", "median busbw"], groups, note)
    longest = summary.table.sort("duration_ns", descending=True).head(COLLECTIVE_ROWS)
    rows = [
        [
            fmt.kernel_name(r["name"]),
            r["collective"],
            fmt.size(r["message_bytes"]) if r["message_bytes"] is not None else fmt.MISSING,
            fmt.number(r["in_elements"]) if r["in_elements"] is not None else fmt.MISSING,
            r["dtype"] or fmt.MISSING,
            r["process_group"],
            r["ranks"] or fmt.MISSING,
            fmt.duration(r["duration_ns"]),
            _gbps(r["busbw_gbps"]),
            r["operator"] or "(no operator)",
        ]
        for r in longest.iter_rows(named=True)
    ]
    title = f"Longest collectives ({len(rows)} of {summary.table.height})"
    columns = ["kernel", "collective", "message", "elements", "dtype", "process group", "ranks", "time", "busbw"]
    return [by_group, Table(title, [*columns, "operator"], rows)] if rows else [by_group]


def launch_delay_table(found: TraceFeatures, top: int = 15) -> Table:
    delays = found.launch_delays
    rows = [
        [
            o.operator or "(no operator)",
            fmt.number(o.launches),
            fmt.duration(o.median_delay_ns),
            fmt.duration(o.p95_delay_ns),
            fmt.duration(o.max_delay_ns),
            fmt.duration(o.median_call_ns),
            fmt.number(o.shorter_than_call),
        ]
        for o in delays.operators[:top]
    ]
    note = (
        f"From the launch call's return to the start on the GPU, {fmt.plural(delays.launches, 'launch')}: median "
        f"{fmt.duration(delays.median_delay_ns)}, p95 {fmt.duration(delays.p95_delay_ns)}; a delay includes the "
        f"time queued behind earlier work. {fmt.number(delays.shorter_than_call)} ran shorter than their launch "
        f"call, {fmt.number(delays.long_calls)} launch calls took over 50 µs, {fmt.number(delays.long_delays)} "
        "delays were over 100 µs."
    )
    if not delays.launches:
        note = "No activity in the trace has its launch call (by correlation id)."
    title = f"Launch delay per operator (top {len(rows)} of {len(delays.operators)} by total delay)"
    columns = ["operator", "launches", "median", "p95", "max", "median launch call", "shorter than call"]
    return Table(title, columns, rows, note)


def sequence_table(found: TraceFeatures) -> Table:
    sequences = found.sequences
    rows = [
        [
            str(i),
            " > ".join(fmt.kernel_name(n) for n in s.names),
            fmt.number(len(s.names)),
            fmt.number(s.count),
            fmt.duration(s.kernel_ns),
            fmt.duration(s.span_ns),
            fmt.number(s.launches_saved),
        ]
        for i, s in enumerate(sequences.sequences, start=1)
    ]
    note = (
        f"Runs of {sequences.min_length} to {sequences.max_length} consecutive kernels on one stream, each under "
        f"{fmt.duration(sequences.small_ns)} ({fmt.number(sequences.small_kernels)} of "
        f"{fmt.plural(sequences.kernels, 'kernel')}), that repeat: fusing one saves all but one launch per run."
    )
    columns = ["#", "kernels", "length", "runs", "kernel time", "span", "launches saved"]
    return Table("Repeated small-kernel sequences (fusion candidates)", columns, rows, note)


COUNTER_TIMES = (
    "The CUPTI range profiler replays each kernel to count it: the trace's range for a kernel is the profiler's, "
    "not the kernel's run time, so it gives no duration and no FLOP rate."
)
MISSING_NAME, UNNAMED = "__missing__", "(not named by the profiler)"  # Kineto's name for a range without one
_PRECISION_LABELS = {"fp64_flops": "FP64", "fp32_flops": "FP32", "fp16_flops": "FP16"}


def _flop(value: float | None) -> str:
    return fmt.si(value, "FLOP") if value is not None else fmt.MISSING


def counter_tables(found: TraceFeatures, top: int = COUNTER_KERNEL_ROWS) -> list[Table]:
    """FLOPs per operator and per kernel from the range profiler's SASS counts; none for a trace without them."""
    counters = found.counters
    if not counters.kernels.height:
        return []
    flop_columns = [f"{_PRECISION_LABELS[c]} FLOPs" for c in FLOP_COLUMNS]
    pairing = (
        f"Each kernel is the one its launch call started ({fmt.plural(counters.launch_calls, 'kernel launch call')},"
        " paired in order as HTA pairs them); the operator is the outermost one open at the call."
        if counters.paired
        else f"The trace has {fmt.plural(counters.launch_calls, 'kernel launch call')} for "
        f"{fmt.plural(counters.kernels.height, 'profiled kernel')}: which call launched which kernel is unknown, so "
        "no operator is named."
    )
    formula = "FLOPs from the SASS instruction counts: add + mul + 2 x fma per precision (Nsight Compute's roofline)."
    operator_rows = [
        [
            r["operator"] or "(no operator)",
            fmt.number(r["kernels"]),
            *(_flop(r[c]) for c in FLOP_COLUMNS),
            _flop(r["flops"]),
        ]
        for r in counters.operators.iter_rows(named=True)
    ]
    per_operator = Table(
        "Kernel counters per operator (CUPTI range profiler)",
        ["operator", "kernels", *flop_columns, "FLOPs"],
        operator_rows,
        f"{formula} {pairing} {COUNTER_TIMES}",
    )
    ranked = counters.kernels.sort("flops", "kernel_index", descending=[True, False], nulls_last=True).head(top)
    kernel_rows = [
        [
            str(r["kernel_index"]),
            UNNAMED if r["name"] in (None, MISSING_NAME) else fmt.kernel_name(r["name"]),
            r["top_operator"] or fmt.MISSING,
            r["bottom_operator"] or fmt.MISSING,
            *(_flop(r[c]) for c in FLOP_COLUMNS),
            _flop(r["flops"]),
        ]
        for r in ranked.iter_rows(named=True)
    ]
    per_kernel = Table(
        f"Profiled kernels by FLOPs ({len(kernel_rows)} of {counters.kernels.height})",
        ["#", "kernel", "operator", "innermost operator", *flop_columns, "FLOPs"],
        kernel_rows,
        f"# is the kernel's place in the run. Every recorded counter is in --json "
        f"({fmt.plural(len(counters.metrics), 'metric')}).",
    )
    return [per_operator, per_kernel]


def feature_tables(found: TraceFeatures) -> list[Table]:
    """Every table of `tracekit features`, in the order the text shows them (the kernel counters only where the
    trace has them)."""
    return [
        queue_table(found),
        bandwidth_table(found),
        *collective_tables(found),
        launch_delay_table(found),
        sequence_table(found),
        *counter_tables(found),
    ]


def feature_figures(found: TraceFeatures) -> list[Figure]:
    """The launch queue and the copy bandwidth over the trace, where the trace has them."""
    reduced = (
        f" A line of more than {fmt.number(MAX_POINTS)} changes is drawn as {fmt.number(MAX_POINTS)} stretches of"
        " time, each at its highest and where it ended."
    )
    charts = [c["time_ns"] for c in (found.queue_chart, found.bandwidth_chart) if c.height]
    start_ns = int(pl.concat(charts).min()) if charts else 0  # type: ignore[arg-type]
    shown = []
    if found.queue_chart.height:
        note = f"Launches issued but not started, per stream; full at {found.queues.full_at}." + reduced
        spec = figures.queue_length_spec(found.queue_chart, start_ns)
        shown.append(Figure("queue_length", "Launch queue over time", spec, note))
    if found.bandwidth_chart.height:
        note = "The copies and sets running at each instant, their rates added, per kind." + reduced
        spec = figures.copy_bandwidth_spec(found.bandwidth_chart, start_ns)
        shown.append(Figure("copy_bandwidth", "Copy and set bandwidth over time", spec, note))
    return shown


def diff_json(diff: TraceDiff) -> dict[str, object]:
    return {
        "schema": DIFF_SCHEMA,
        "before": diff.source_a,
        "after": diff.source_b,
        "added": diff.added,
        "removed": diff.removed,
        "changed": diff.changed,
        "same": diff.same,
        "operators": diff.table.to_dicts(),
    }


def diff_table(diff: TraceDiff, top: int = DIFF_ROWS) -> Table:
    def signed(ns: int) -> str:
        return ("+" if ns > 0 else "") + fmt.duration(ns)

    rows = [
        [
            r["operator"],
            r["status"],
            f"{fmt.number(r['count_a'])} -> {fmt.number(r['count_b'])}",
            f"{fmt.duration(r['gpu_ns_a'])} -> {fmt.duration(r['gpu_ns_b'])}",
            signed(r["gpu_delta_ns"]),
            f"{fmt.duration(r['cpu_ns_a'])} -> {fmt.duration(r['cpu_ns_b'])}",
            signed(r["cpu_delta_ns"]),
        ]
        for r in diff.table.head(top).iter_rows(named=True)
    ]
    note = (
        f"{fmt.plural(diff.added, 'operator')} added, {diff.removed} removed, {diff.changed} called a different "
        f"number of times, {diff.same} the same; largest GPU time change first ({len(rows)} of {diff.table.height})."
        " GPU time: the activities an operator launched as the outermost one; CPU time: its ranges, nested ones"
        " included. Traces of different lengths compare in total."
    )
    columns = ["operator", "status", "count", "GPU time", "GPU change", "CPU time", "CPU change"]
    return Table("Operators, after against before", columns, rows, note)
