"""What Meta's Holistic Trace Analysis (HTA) computes from a trace that the step analysis does not, for its users
moving over: the launch queue's length per stream and the copy bandwidth over time (HTA's augmented counters),
each collective's metadata, launch delays per operator, repeated sequences of small kernels (fusion candidates),
the CUPTI range profiler's kernel counters (FLOPs per kernel and operator), an operator-level diff of two traces,
and the critical path as a trace to open in Perfetto. One concern per module, each a pure function over a trace's
host timeline (`tracekit.host_events.HostEvents`)."""

from tracekit.analysis.trace_features.bandwidth import CopyBandwidth, MemoryBandwidth, memory_bandwidth
from tracekit.analysis.trace_features.collectives import CollectiveGroup, Collectives, collectives
from tracekit.analysis.trace_features.counters import KernelCounters, kernel_counters
from tracekit.analysis.trace_features.features import TraceFeatures, trace_features
from tracekit.analysis.trace_features.launch_delays import LaunchDelays, OperatorDelay, launch_delays
from tracekit.analysis.trace_features.queues import QueueLengths, StreamQueue, queue_lengths
from tracekit.analysis.trace_features.sequences import KernelSequence, KernelSequences, kernel_sequences

__all__ = [
    "CollectiveGroup",
    "Collectives",
    "CopyBandwidth",
    "KernelCounters",
    "KernelSequence",
    "KernelSequences",
    "LaunchDelays",
    "MemoryBandwidth",
    "OperatorDelay",
    "QueueLengths",
    "StreamQueue",
    "TraceFeatures",
    "collectives",
    "kernel_counters",
    "kernel_sequences",
    "launch_delays",
    "memory_bandwidth",
    "queue_lengths",
    "trace_features",
]
