"""A stored launch's source lines (issue 45), joined to its verdict: what `tracekit lines` and the API show."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.analysis.source_lines import SourceLines, analyze_source_lines
from tracekit.store import Store


@dataclass(frozen=True)
class SourceLinesView:
    """One launch's source lines and what the views word them with (`present.source_lines.to_json`)."""

    launch_id: int
    kernel_name: str | None
    result: SourceLines
    files: pl.DataFrame  # the source files the report embedded
    duration_ns: float | None


def source_lines(store: Store, launch_id: int, top: int | None = None) -> SourceLinesView | None:
    """A launch's source lines ranked with their kind, the lines holding the verdict's limiter and what fixing the
    top one buys; None when the launch has no source samples."""
    from tracekit.store.source_lines import launch_source_files, launch_source_samples
    from tracekit.stored.analyses import analyze_stored

    samples = launch_source_samples(store, launch_id)
    if samples.height == 0:
        return None
    launch = store.launches(launch_ids=[launch_id]).row(0, named=True)
    limiter = None
    if launch.get("duration_ns") is not None:  # a Source-page CSV alone has no counters for a verdict
        limiter = analyze_stored(store, [launch_id])[0].classification.limiter
    result = analyze_source_lines(samples, launch.get("duration_ns"), limiter, top)
    if result is None:
        return None
    files = launch_source_files(store, launch_id)
    return SourceLinesView(launch_id, launch.get("kernel_name"), result, files, launch.get("duration_ns"))
