"""A step's kernels predicted and replayed on the step: the per-launch predictor (`tracekit.analysis.predict`)
joined with the step's timeline (`whatif`), so a kernel's best change is ranked by the step time it saves.

Pure: the caller reads each launch's analysis and the predictor's inputs (`InputsOf`) from its store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from tracekit.analysis.predict import Change, PredictInputs, predict, what_to_try
from tracekit.analysis.steps.critical_path import StepTimeline
from tracekit.analysis.steps.types import Step, StepsResult, Suggestion
from tracekit.analysis.steps.whatif import LaunchSpeedup, StepWhatIf, step_what_if
from tracekit.analysis.types import LaunchAnalysis
from tracekit.errors import TracekitError

InputsOf = Callable[[LaunchAnalysis], PredictInputs]
# The launches of one kernel in a step: (its launch call's correlation id, the launch's analysis)
Members = Sequence[tuple[int, LaunchAnalysis]]


def launch_speedups(
    members: Members, inputs_of: InputsOf, change: Change, skip_failed: bool
) -> dict[int, LaunchSpeedup]:
    """The per-launch prediction of `change` for each member, by correlation id; `skip_failed`: a launch the
    predictor refuses is left out, else its error raised."""
    found: dict[int, LaunchSpeedup] = {}
    for correlation, result in members:
        try:
            got = predict(inputs_of(result), change).predicted
        except TracekitError:
            if skip_failed:
                continue
            raise
        found[correlation] = LaunchSpeedup(got.speedup, got.low, got.high)
    return found


def kernel_what_if(
    line: StepTimeline,
    step: Step,
    members: Members,
    inputs_of: InputsOf,
    kernel: str,
    change: Change,
    spans_ns: Sequence[int] = (),
) -> StepWhatIf:
    """The step replayed with every launch of `kernel` in it (`members`) changed by `change`."""
    speedups = launch_speedups(members, inputs_of, change, skip_failed=False)
    return step_what_if(line, step, speedups, kernel, change.describe(), spans_ns)


def kernels_by_name(members: Members) -> dict[str, list[tuple[int, LaunchAnalysis]]]:
    """The step's launches that have counters to predict from (their utilization), grouped by kernel name."""
    by_name: dict[str, list[tuple[int, LaunchAnalysis]]] = {}
    for correlation, analysis in members:
        if analysis.classification.utilization:
            by_name.setdefault(analysis.kernel.name or "", []).append((correlation, analysis))
    return by_name


def kernel_suggestion(
    line: StepTimeline, step: Step, name: str, members: Members, inputs_of: InputsOf, spans_ns: Sequence[int]
) -> Suggestion | None:
    """The best predicted change of the kernel's longest launch (`what_to_try`), replayed on the step for every
    launch of the kernel; None when nothing is predicted to help."""
    longest = max(members, key=lambda m: m[1].duration_ns or 0)[1]
    try:
        best = what_to_try(inputs_of(longest), top=1)
    except TracekitError:
        return None
    if not best:
        return None
    speedups = launch_speedups(members, inputs_of, best[0].change, skip_failed=True)
    replayed = step_what_if(line, step, speedups, name, best[0].change.describe(), spans_ns)
    verdict = longest.classification
    launches = f"{replayed.launches} launch" if replayed.launches == 1 else f"{replayed.launches} launches"
    return Suggestion(
        "kernel",
        name,
        f"{replayed.change} ({verdict.headline or verdict.mode}; {best[0].predicted.speedup:.2f}x per launch "
        f"predicted, {launches} in the step)",
        replayed.current_ns - replayed.predicted_ns,
        replayed.current_ns - replayed.high_ns,
        replayed.current_ns - replayed.low_ns,
    )


def kernel_suggestions(
    line: StepTimeline,
    step: Step,
    by_name: Mapping[str, Members],
    inputs_of: InputsOf,
    spans_ns: Sequence[int],
    top: int = 5,
) -> list[Suggestion]:
    """The kernels whose best predicted change would shorten the step most, best first."""
    found = [
        s
        for name, members in by_name.items()
        if (s := kernel_suggestion(line, step, name, members, inputs_of, spans_ns))
    ]
    found.sort(key=lambda s: -s.saves_ns)
    return found[:top]


def ranked_with_kernels(result: StepsResult, kernels: Sequence[Suggestion]) -> StepsResult:
    """The steps' suggestions and the kernels' ranked together by the step time they would save."""
    return replace(result, what_to_try=tuple(sorted([*result.what_to_try, *kernels], key=lambda s: -s.saves_ns)))
