"""A stored launch's source lines (issue 45), joined to its verdict: what `tracekit lines`, the launch page's source
panel, the report's section and `compare`'s lines show."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from tracekit.analysis.source_line_changes import LineChanges, line_changes
from tracekit.analysis.source_lines import SourceLines, analyze_source_lines
from tracekit.analysis.types import LaunchAnalysis
from tracekit.store import Store


@dataclass(frozen=True)
class SourceLinesView:
    """One launch's source lines and what the views word them with (`present.source_lines.to_json`)."""

    launch_id: int
    kernel_name: str | None
    result: SourceLines
    files: pl.DataFrame  # the source files the report embedded
    duration_ns: float | None


def source_lines(
    store: Store, launch_id: int, top: int | None = None, analysis: LaunchAnalysis | None = None
) -> SourceLinesView | None:
    """A launch's source lines ranked with their kind, the lines holding the verdict's limiter and what fixing the
    top one buys; None when the launch has no source samples. `analysis`: the launch's, when the caller holds it
    (else it is read: `stored.analyses`)."""
    from tracekit.store.source_lines import launch_source_files, launch_source_samples
    from tracekit.stored.analyses import analyze_stored

    samples = launch_source_samples(store, launch_id)
    if samples.height == 0:
        return None
    launch = store.launches(launch_ids=[launch_id]).row(0, named=True)
    limiter = None
    if analysis is not None:
        limiter = analysis.classification.limiter
    elif launch.get("duration_ns") is not None:  # a Source-page CSV alone has no counters for a verdict
        limiter = analyze_stored(store, [launch_id])[0].classification.limiter
    result = analyze_source_lines(samples, launch.get("duration_ns"), limiter, top)
    if result is None:
        return None
    files = launch_source_files(store, launch_id)
    return SourceLinesView(launch_id, launch.get("kernel_name"), result, files, launch.get("duration_ns"))


def source_line_views(store: Store, results: Iterable[LaunchAnalysis]) -> dict[int, SourceLinesView]:
    """The source lines of those of `results` that have source samples, by launch id (the report's sections)."""
    from tracekit.store.source_lines import source_sample_counts

    by_id = {int(r.launch_id): r for r in results if r.launch_id is not None}
    with_samples = source_sample_counts(store, list(by_id)) if by_id else {}
    views = {launch_id: source_lines(store, launch_id, analysis=by_id[launch_id]) for launch_id in with_samples}
    return {launch_id: view for launch_id, view in views.items() if view is not None}


def source_line_changes(
    store: Store, launch_a: int, launch_b: int, analyses: tuple[LaunchAnalysis, LaunchAnalysis] | None = None
) -> LineChanges | None:
    """Launch B's source lines against launch A's (`analysis.source_line_changes`); None unless both have source
    samples."""
    view_a = source_lines(store, launch_a, analysis=analyses[0] if analyses else None)
    view_b = source_lines(store, launch_b, analysis=analyses[1] if analyses else None)
    if view_a is None or view_b is None:
        return None
    return line_changes(
        (view_a.result, view_a.files, view_a.duration_ns), (view_b.result, view_b.files, view_b.duration_ns)
    )
