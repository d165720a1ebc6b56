"""A step's kernels read from the store for `analysis.steps.predicted`: the trace and its Nsight Compute results
imported, the trace's steps found once, the step's launches analysed and their counters read in one pass."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from tracekit.analysis.predict import Change
from tracekit.analysis.steps.critical_path import StepTimeline
from tracekit.analysis.steps.predicted import kernel_suggestions, kernel_what_if, kernels_by_name, ranked_with_kernels
from tracekit.analysis.steps.types import Step, StepsResult
from tracekit.analysis.steps.whatif import StepWhatIf, step_line
from tracekit.errors import TracekitError
from tracekit.steps import import_trace, program_of_events, read_events, replayed_events, stored_events
from tracekit.store import Store
from tracekit.stored.analyses import analyze_stored
from tracekit.stored.predictions import counters_reader


@dataclass(frozen=True)
class TraceStep:
    """A trace imported and its host timeline read once: its steps, the representative one and its timeline, for
    every kernel replayed on it."""

    import_id: int
    result: StepsResult
    step: Step | None  # None: the trace has no step
    line: StepTimeline | None
    spans_ns: tuple[int, ...]


def trace_step(store: Store, trace: str | Path, profiles: Sequence[str | Path], step: str | None) -> TraceStep:
    """Imports `profiles` (Nsight Compute results of the trace's kernels) and `trace` (its launches pair with them),
    reads the trace's host timeline once and finds its steps."""
    for profile in profiles:
        import_trace(store, profile)
    import_id = import_trace(store, trace)
    kept = stored_events(store, import_id)  # the timeline the import kept: the trace is not parsed again
    events = dataclasses.replace(kept, source=str(trace)) if kept is not None else read_events(trace)
    # the step as the program runs it: what-if and kernel suggestions replay the same timeline `tracekit step` shows
    program = program_of_events(events, trace, step)
    replayed = replayed_events(events, program)
    result = program.unprofiled
    spans = tuple(s.span_ns for s in result.steps)
    if result.representative_step is None:
        return TraceStep(import_id, result, None, None, spans)
    chosen = result.steps[result.representative_step]
    return TraceStep(import_id, result, chosen, step_line(replayed, chosen), spans)


def step_launches(store: Store, traced: TraceStep) -> pl.DataFrame:
    """The stored launches of the representative step's kernels (by their launch calls' correlation ids)."""
    ops = traced.line.ops if traced.line is not None else ()
    ids = [o.correlation for o in ops if o.kind == "kernel" and o.correlation is not None]
    return store.launches(import_id=traced.import_id).filter(pl.col("correlation_id").is_in(ids))


def step_what_if(
    store: Store,
    trace: str | Path,
    kernel: str,
    knobs: Mapping[str, object],
    profiles: Sequence[str | Path] = (),
    step: str | None = None,
) -> StepWhatIf:
    """The step time after changing `kernel`'s launch (knobs of `tracekit predict`: block, regs, smem, ...), the
    trace's representative step replayed with the predicted duration of each of the kernel's launches in it.
    `profiles`: Nsight Compute results of the same kernels, imported so that the launches pair with them."""
    traced = trace_step(store, trace, profiles, step)
    if traced.step is None or traced.line is None:
        raise TracekitError(f"{trace}: no step to replay")
    named = store.launches(import_id=traced.import_id).filter(pl.col("kernel_name").str.contains(kernel, literal=True))
    if named.height == 0:
        raise TracekitError(f"no kernel whose name contains {kernel!r} in the trace")
    launches = step_launches(store, traced).filter(pl.col("kernel_name").str.contains(kernel, literal=True))
    members = list(zip(launches["correlation_id"].to_list(), analyze_stored(store, launches), strict=True))
    inputs_of = counters_reader(store, [r for _, r in members])
    change = Change.from_knobs(knobs)
    return kernel_what_if(traced.line, traced.step, members, inputs_of, kernel, change, traced.spans_ns)


def steps_with_kernels(
    store: Store, trace: str | Path, profiles: Sequence[str | Path], step: str | None = None, top: int = 5
) -> StepsResult:
    """The steps of `trace` with its kernels' suggestions (from `profiles`, Nsight Compute results of its kernels:
    the step's kernels with no counters to predict from are left out) ranked among the idle causes' by the step
    time they would save."""
    traced = trace_step(store, trace, profiles, step)
    launches = step_launches(store, traced)
    if traced.step is None or traced.line is None or launches.height == 0:
        return ranked_with_kernels(traced.result, [])
    analysed = zip(launches["correlation_id"].to_list(), analyze_stored(store, launches), strict=True)
    by_name = kernels_by_name([(int(c), a) for c, a in analysed if c is not None])
    inputs_of = counters_reader(store, [a for members in by_name.values() for _, a in members])
    kernels = kernel_suggestions(traced.line, traced.step, by_name, inputs_of, traced.spans_ns, top)
    return ranked_with_kernels(traced.result, kernels)
