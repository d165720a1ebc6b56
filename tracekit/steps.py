"""The door from a profiler file or a stored import to the step analysis (`tracekit.analysis.steps`): reads the
trace's host timeline with the reader its content names, and joins a step with the per-launch engine (the stored
launches and their paired Nsight Compute results) for what to try and the step what-if. The CLI's `tracekit step`,
`TraceAnalysis.steps()` and the dashboard page all call these functions."""

from __future__ import annotations

from pathlib import Path

from tracekit.analysis.steps import StepError, StepsResult, analyze_steps
from tracekit.analysis.steps.ranks import AlignedStep, align
from tracekit.errors import InputError, TracekitError
from tracekit.host_events import HostEvents

HOST_READERS = {"kineto": "kineto", "nsys-sqlite": "nsys_sqlite"}


def read_events(path: str | Path) -> HostEvents:
    """The host timeline of a PyTorch profiler trace or an Nsight Systems SQLite export."""
    from tracekit.importers import detect_format, reader

    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), "no such file" if not path.exists() else "not a regular file")
    fmt = detect_format(path)
    if fmt not in HOST_READERS:
        raise InputError(
            str(path), f"a {fmt} file has no host timeline: steps need a PyTorch profiler trace or an nsys export"
        )
    module = reader(HOST_READERS[fmt])
    events: HostEvents = module.read_host_events(path)
    return events


def steps_of(path: str | Path, step: str | None = None) -> StepsResult:
    """The steps of one trace file; a name no range has, or a trace without GPU activity, is one line."""
    events = read_events(path)
    try:
        return analyze_steps(events, step)
    except StepError as exc:
        raise TracekitError(f"{path}: {exc}") from None


def ranks_of(paths: list[str | Path], step: str | None = None) -> tuple[list[StepsResult], tuple[AlignedStep, ...]]:
    """Each rank's steps (one trace per rank) and the steps aligned across ranks."""
    results = [steps_of(path, step) for path in paths]
    return results, align(results)
