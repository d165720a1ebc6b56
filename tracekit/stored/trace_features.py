"""HTA's trace-wide analyses (`tracekit.analysis.trace_features`) on a trace file or a stored import's host
timeline: what `tracekit features`, `tracekit diff` and `tracekit step --critical-path-trace` ask the door for."""

from __future__ import annotations

from pathlib import Path

from tracekit.analysis.trace_features import TraceFeatures as TraceFeatures  # the door's `features` returns it
from tracekit.analysis.trace_features import trace_features
from tracekit.analysis.trace_features.diff import TraceDiff, operator_diff, totals_diff
from tracekit.analysis.trace_features.perfetto import critical_path_trace
from tracekit.analysis.trace_features.sequences import SMALL_KERNEL_NS
from tracekit.errors import TracekitError
from tracekit.steps import analyze_events, events_of
from tracekit.store import Store


def features_of(
    store: Store | None, source: str | Path, small_kernel_ns: int = SMALL_KERNEL_NS, top: int = 10
) -> TraceFeatures:
    """Queue lengths, copy bandwidth, collectives, launch delays and kernel sequences of one trace or import."""
    return trace_features(events_of(source, store), small_kernel_ns, top)


def diff_of(store: Store | None, before: str | Path, after: str | Path) -> TraceDiff:
    """`after` against `before`, operator by operator (trace files or stored imports)."""
    return operator_diff(events_of(before, store).conformed(), events_of(after, store).conformed())


def diff_of_features(before: TraceFeatures, after: TraceFeatures) -> TraceDiff:
    """Two traces already analysed (`features_of`), `after` against `before`, operator by operator: the steps page's
    diff against its baseline, without reading either trace again."""
    return totals_diff(before.operators, after.operators, before.source, after.source)


def critical_path_trace_of(store: Store | None, source: str | Path, step: str | None = None) -> dict[str, object]:
    """The representative step of `source` as a Chrome trace with its critical path flagged (to open in Perfetto)."""
    events = events_of(source, store)
    result = analyze_events(events, source, step)
    if result.representative_step is None or not result.critical_path:
        raise TracekitError(f"{source}: no step with GPU work, so no critical path to write")
    return critical_path_trace(events, result.steps[result.representative_step], result.critical_path)
