"""The door from a profiler file or a stored import to the step analysis (`tracekit.analysis.steps`): reads the
trace's host timeline with the reader its content names, and joins a step with the per-launch engine (the stored
launches and their paired Nsight Compute results) for what to try and the step what-if. The CLI's `tracekit step`,
`TraceAnalysis.steps()` and the dashboard page all call these functions."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit.analysis.steps import StepError, StepsResult, analyze_steps
from tracekit.analysis.steps.ranks import AlignedStep, align
from tracekit.analysis.steps.types import Suggestion
from tracekit.analysis.steps.whatif import LaunchSpeedup, StepWhatIf, step_what_if
from tracekit.errors import InputError, TracekitError
from tracekit.host_events import HostEvents

if TYPE_CHECKING:
    from tracekit.store import Store

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


_IMPORT_REF = re.compile(r"^(?:import:)?(\d+)$")


def is_import_ref(source: str | Path) -> bool:
    """`7` or `import:7` (and no file of that name): a stored import."""
    return bool(_IMPORT_REF.match(str(source).strip())) and not Path(source).exists()


def events_of(source: str | Path, store: Store | None = None) -> HostEvents:
    """The host timeline of a trace file, or of a stored import (`7`, `import:7`) from `store`."""
    if not is_import_ref(source):
        return read_events(source)
    if store is None:
        raise TracekitError(f"{source}: an import id needs a store (--db)")
    from tracekit.store import host_events

    import_id = int(_IMPORT_REF.match(str(source).strip()).group(1))  # type: ignore[union-attr]
    with store.engine.connect() as connection:
        events = host_events.load(connection, import_id)
    if events is None:
        found = store.get_import(import_id)  # raises NotFoundError, naming the store
        raise TracekitError(
            f"import {import_id} ({found['format']}) holds no host "
            "timeline: steps need a PyTorch profiler trace or an nsys export, imported by this version"
        )
    return events


def steps_of(source: str | Path, step: str | None = None, store: Store | None = None) -> StepsResult:
    """The steps of one trace file or stored import; a name no range has, or a trace without GPU activity, is one
    line."""
    events = events_of(source, store)
    try:
        return analyze_steps(events, step)
    except StepError as exc:
        raise TracekitError(f"{source}: {exc}") from None


def ranks_of(
    sources: list[str | Path], step: str | None = None, store: Store | None = None
) -> tuple[list[StepsResult], tuple[AlignedStep, ...]]:
    """Each rank's steps (one trace per rank) and the steps aligned across ranks."""
    results = [steps_of(source, step, store) for source in sources]
    return results, align(results)


def _import(store: Store, path: str | Path) -> int:
    from tracekit.ingest import ingest

    result, _ = ingest(store, path)
    return int(result.import_id)


def launch_speedups(
    store: Store, import_id: int, kernel: str, knobs: dict[str, Any]
) -> tuple[dict[int, LaunchSpeedup], str]:
    """The per-launch prediction (`tracekit.api.predict_stored`: each launch paired with its Nsight Compute
    result) for every stored launch of `kernel` in the import, by the launch call's correlation id."""
    from tracekit.api import analyze_stored, predict_stored

    launches = store.launches(import_id=import_id).filter(pl.col("kernel_name").str.contains(kernel, literal=True))
    if launches.height == 0:
        raise TracekitError(f"no kernel whose name contains {kernel!r} in the trace")
    results = analyze_stored(store, launches)
    found: dict[int, LaunchSpeedup] = {}
    change = ""
    for correlation, result in zip(launches["correlation_id"].to_list(), results, strict=True):
        if correlation is None:
            continue
        prediction = predict_stored(store, result, **knobs)
        change = prediction.change.describe()
        got = prediction.predicted
        found[int(correlation)] = LaunchSpeedup(got.speedup, got.low, got.high)
    return found, change


def what_if(
    store: Store,
    trace: str | Path,
    kernel: str,
    knobs: dict[str, Any],
    profiles: list[str | Path] | None = None,
    step: str | None = None,
) -> StepWhatIf:
    """The step time after changing `kernel`'s launch (knobs of `tracekit predict`: block, regs, smem, ...), the
    trace's representative step replayed with each launch's predicted duration. `profiles`: Nsight Compute
    results of the same kernels, imported so that the launches pair with them."""
    for profile in profiles or []:
        _import(store, profile)
    import_id = _import(store, trace)
    result = steps_of(trace, step)
    speedups, change = launch_speedups(store, import_id, kernel, knobs)
    if result.representative_step is None:
        raise TracekitError(f"{trace}: no step to replay")
    chosen = result.steps[result.representative_step]
    spans = tuple(s.span_ns for s in result.steps)
    return step_what_if(read_events(trace), chosen, speedups, kernel, change, spans)


def _knobs(change: Any) -> dict[str, Any]:
    """A predictor `Change` as `predict_stored`'s knobs."""
    names = {
        "threads_per_block": "block",
        "registers_per_thread": "regs",
        "dynamic_shared_mem_bytes": "smem",
        "warps_per_sm": "warps_per_sm",
        "ilp": "ilp",
        "grid_blocks": "grid",
    }
    return {knob: getattr(change, field) for field, knob in names.items() if getattr(change, field) is not None}


def kernel_suggestions(store: Store, trace: str | Path, result: StepsResult, top: int = 5) -> list[Suggestion]:
    """The kernels of the representative step whose best predicted change (`what_to_try_for`: from their paired
    Nsight Compute results) would shorten the step most, the change replayed on the step for every launch of the
    kernel; kernels with no counters to predict from are left out."""
    from tracekit.api import analyze_stored, predict_stored, what_to_try_for

    if result.representative_step is None:
        return []
    chosen = result.steps[result.representative_step]
    import_id = _import(store, trace)
    events = read_events(trace)
    in_step = events.gpu.filter(
        (pl.col("kind") == "kernel") & (pl.col("start_ns") >= chosen.start_ns) & (pl.col("start_ns") < chosen.end_ns)
    )
    launches = store.launches(import_id=import_id).filter(
        pl.col("correlation_id").is_in(in_step["correlation_id"].drop_nulls().implode())
    )
    if launches.height == 0:
        return []
    analyses = analyze_stored(store, launches)
    by_name: dict[str, list[tuple[int, Any]]] = {}
    for correlation, analysis in zip(launches["correlation_id"].to_list(), analyses, strict=True):
        if correlation is not None and analysis.classification.utilization:
            by_name.setdefault(analysis.kernel.name or "", []).append((int(correlation), analysis))
    found = []
    for name, members in by_name.items():
        longest = max(members, key=lambda m: m[1].duration_ns or 0)[1]
        best = what_to_try_for(store, longest, top=1)
        if not isinstance(best, list) or not best:
            continue
        knobs = _knobs(best[0].change)
        speedups: dict[int, LaunchSpeedup] = {}
        for correlation, analysis in members:
            try:
                got = predict_stored(store, analysis, **knobs).predicted
            except TracekitError:
                continue
            speedups[correlation] = LaunchSpeedup(got.speedup, got.low, got.high)
        replayed = step_what_if(
            events, chosen, speedups, name, best[0].change.describe(), tuple(s.span_ns for s in result.steps)
        )
        verdict = longest.classification
        headline = getattr(verdict, "headline", None) or f"{verdict.mode}-bound"
        found.append(
            Suggestion(
                "kernel",
                name,
                f"{replayed.change} ({headline}; {best[0].predicted.speedup:.2f}x per launch predicted, "
                f"{fmt_plural(replayed.launches)} in the step)",
                replayed.current_ns - replayed.predicted_ns,
                replayed.current_ns - replayed.high_ns,
                replayed.current_ns - replayed.low_ns,
            )
        )
    found.sort(key=lambda s: -s.saves_ns)
    return found[:top]


def fmt_plural(count: int) -> str:
    return f"{count} launch" if count == 1 else f"{count} launches"


def steps_with_kernels(
    store: Store, trace: str | Path, profiles: list[str | Path], step: str | None = None
) -> StepsResult:
    """The steps of `trace` with the kernels' suggestions (from `profiles`, Nsight Compute results of its
    kernels) ranked among the idle causes' by the step time they would save."""
    for profile in profiles:
        _import(store, profile)
    result = steps_of(trace, step)
    kernels = kernel_suggestions(store, trace, result)
    ranked = sorted([*result.what_to_try, *kernels], key=lambda s: -s.saves_ns)
    return dataclasses.replace(result, what_to_try=tuple(ranked))
