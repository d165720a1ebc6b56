"""HTA's trace-wide analyses of one trace, together: what `tracekit features` shows."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.analysis.trace_features.bandwidth import MemoryBandwidth, memory_bandwidth
from tracekit.analysis.trace_features.collectives import Collectives, collectives
from tracekit.analysis.trace_features.counters import KernelCounters, kernel_counters
from tracekit.analysis.trace_features.diff import operator_totals
from tracekit.analysis.trace_features.launch_delays import LaunchDelays, launch_delays
from tracekit.analysis.trace_features.queues import QueueLengths, queue_lengths
from tracekit.analysis.trace_features.sequences import SMALL_KERNEL_NS, KernelSequences, kernel_sequences
from tracekit.analysis.trace_features.series import peaks
from tracekit.host_events import HostEvents


@dataclass(frozen=True)
class TraceFeatures:
    source: str | None
    rank: int | None
    device_name: str | None
    queues: QueueLengths
    bandwidth: MemoryBandwidth
    collectives: Collectives
    launch_delays: LaunchDelays
    sequences: KernelSequences
    # the two series as their charts draw them (`series.peaks`): stream_id, time_ns, queue_length; kind, time_ns,
    # bandwidth_gbps
    queue_chart: pl.DataFrame
    bandwidth_chart: pl.DataFrame
    operators: pl.DataFrame  # each operator's count, CPU and GPU time (`diff.operator_totals`): one side of a diff
    counters: KernelCounters  # the CUPTI range profiler's kernel counters (no kernels where it was not used)


def trace_features(events: HostEvents, small_kernel_ns: int = SMALL_KERNEL_NS, top: int = 10) -> TraceFeatures:
    """Every trace-wide analysis of one host timeline (read from a file or kept by an import)."""
    events = events.conformed()  # an import stored before a column existed reads it as null
    gpu, calls = events.gpu, events.calls
    queues, bandwidth = queue_lengths(gpu, calls), memory_bandwidth(gpu)
    return TraceFeatures(
        source=events.source,
        rank=events.rank,
        device_name=events.device_name,
        queues=queues,
        bandwidth=bandwidth,
        collectives=collectives(gpu),
        launch_delays=launch_delays(gpu, calls),
        sequences=kernel_sequences(gpu, small_ns=small_kernel_ns, top=top),
        queue_chart=peaks(queues.series, "stream_id", "queue_length"),
        bandwidth_chart=peaks(bandwidth.series, "kind", "bandwidth_gbps"),
        operators=operator_totals(events),
        counters=kernel_counters(events.counters, calls, events.ranges),
    )
