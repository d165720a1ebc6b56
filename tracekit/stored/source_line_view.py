"""A stored launch's source lines (issue 45), joined to its verdict: what `tracekit lines` and the API show."""

from __future__ import annotations

from typing import Any

from tracekit.store import Store


def source_lines(store: Store, launch_id: int, top: int | None = None) -> dict[str, Any] | None:
    """A launch's source lines ranked with their kind, the lines holding the verdict's limiter and what fixing the
    top one buys, as `tracekit lines --json` prints it; None when the launch has no source samples."""
    from tracekit.analysis.source_lines import analyze_source_lines
    from tracekit.present.source_lines import to_json
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
    return to_json(
        launch_id, launch.get("kernel_name"), result, launch_source_files(store, launch_id), launch.get("duration_ns")
    )
