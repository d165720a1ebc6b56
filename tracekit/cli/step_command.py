"""`tracekit step`: where a PyTorch (or any CUDA) step's time goes, why the GPU idles, and what to try first."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Annotated, Any

import typer

from tracekit import format as fmt
from tracekit.analysis.steps.compare import StepComparison
from tracekit.analysis.steps.program import ProgramSteps
from tracekit.analysis.steps.ranks import AlignedStep
from tracekit.analysis.steps.types import Step, StepsResult
from tracekit.analysis.steps.whatif import StepWhatIf
from tracekit.cli.common import DbOption, JsonOption, busy, console, open_store, print_json, print_table
from tracekit.errors import TracekitError
from tracekit.present import steps as present
from tracekit.present.sections import Table

TOP_ROWS = 5


def steps_dict(result: StepsResult) -> dict[str, Any]:
    """The --json object: `tracekit.steps/1`, every field of the result (ns, exact)."""
    data = dataclasses.asdict(result)
    for step, source in zip(data["steps"], result.steps, strict=True):
        step["busy_pct"] = source.busy_pct
    return data


WIDTHS = {"step": -24, "span": 10, "GPU busy": 10, "busy": 6, "idle": 10, "kernels": 8, "largest idle cause": 0}


def _row(cells: dict[str, str]) -> str:
    """A row of the steps table: text columns left, numbers right, at the widths above."""
    parts = []
    for key, value in cells.items():
        width = WIDTHS[key]
        parts.append(value[:24].ljust(-width) if width < 0 else value.rjust(width) if width else value)
    return "  " + " ".join(parts)


def table_lines(result: StepsResult) -> list[str]:
    header = {key: key for key in present.STEP_COLUMNS}
    return [present.title(result), _row(header), *(_row(row) for row in present.step_rows(result))]


# What the text prints, in order: a line, or a table `tracekit.present` decided (printed by `print_table`).
Shown = str | Table


def show(items: Iterable[Shown]) -> None:
    for item in items:
        if isinstance(item, Table):
            print_table(item)
        else:
            console.print(item, markup=False)


def step_lines(step: Step) -> list[Shown]:
    """One step in detail: idle causes with evidence (the table every view shows), categories, operators,
    communication."""
    lines: list[Shown] = [present.step_heading(step), present.cause_table(step)]
    lines.append("  GPU time by category:")
    for row in present.category_rows(step):
        lines.append(
            f"    {row['category']:<28} {row['GPU time']:>10} {row['share']:>6} ({row['activities']} activities)"
        )
    lines.append("  GPU time by operator (kernels):")
    for row in present.operator_rows(step):
        lines.append(f"    {row['GPU time']:>10}  {row['operator']} ({row['kernels']} kernels)")
    if step.communication_ns:
        lines.append(
            f"  communication {fmt.duration(step.communication_ns)}, of which "
            f"{fmt.duration(step.communication_overlap_ns)} overlapped computation"
        )
    return lines


def result_lines(result: StepsResult) -> list[Shown]:
    lines: list[Shown] = [*table_lines(result)]
    if result.representative_step is not None:
        lines += ["", *step_lines(result.steps[result.representative_step])]
    path = present.critical_path_line(result)
    if path:
        lines.append(f"  {path}")
    if result.what_to_try:
        lines.append(f"  what to try first ({present.try_note(result)}):")
        lines += [f"    - {present.suggestion_line(s)}" for s in result.what_to_try]
    lines += [f"  warning: {w}" for w in result.warnings]
    return lines


def rank_lines(aligned: tuple[AlignedStep, ...]) -> list[str]:
    lines = ["ranks aligned by step:"]
    for step in aligned:
        straggler = f"straggler rank {step.straggler}" if step.straggler is not None else "no communication"
        lines.append(f"  {step.label}: spread {fmt.duration(step.spread_ns)}, {straggler}")
        for r in step.ranks:
            lines.append(
                f"    rank {r.rank}: step {fmt.duration(r.span_ns)}, busy {fmt.duration(r.busy_ns)}, "
                f"communication {fmt.duration(r.communication_ns)} (waiting {fmt.duration(r.communication_wait_ns)})"
            )
    return lines


def what_if_lines(found: StepWhatIf) -> list[str]:
    saved = found.current_ns - found.predicted_ns
    return [
        f"step {found.label}: {found.kernel} -- {found.change}",
        f"  predicted step {fmt.duration(found.predicted_ns)} (now {fmt.duration(found.current_ns)}), interval "
        f"{fmt.duration(found.low_ns)} to {fmt.duration(found.high_ns)} (the kernel's predicted interval replayed, "
        f"and ±{fmt.duration(found.spread_ns)} for one step's own variation: 95% from "
        f"{fmt.plural(found.spread_steps, 'step')}); saves {fmt.duration(saved)}",
        f"  the kernel's {fmt.plural(found.launches, 'launch', 'launches')} in the step: "
        f"{fmt.duration(found.kernel_ns)} now, {fmt.duration(found.kernel_predicted_ns)} predicted "
        "(the step gains only what its critical path gains)",
    ]


def _what_if(
    sources: list[str],
    kernel: str | None,
    knobs: dict[str, Any],
    profiles: list[str],
    step: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    from tracekit.api import step_what_if

    if kernel is None or not knobs or len(sources) != 1:
        raise TracekitError("a step what-if takes one trace, --kernel NAME and a change (--block, --regs, ...)")
    store = open_store(db)
    with busy("predicting the step"):
        found = step_what_if(store, sources[0], kernel, knobs, list(profiles), step)
    if as_json:
        print_json({"schema": "tracekit.step-what-if/1", **dataclasses.asdict(found)})
        return
    for line in what_if_lines(found):
        console.print(line, markup=False)


def comparison_lines(found: StepComparison) -> list[str]:
    lines = [f"{found.after_source} against {found.before_source}:", f"  {present.comparison_headline(found)}"]
    lines.append(f"  {'per step (means)':<36} {'before':>10} {'after':>10} {'change':>10}")
    for row in present.comparison_rows(found):
        lines.append(f"    {row['part']:<34} {row['before']:>10} {row['after']:>10} {row['change']:>10}")
    return lines


def _compare(baseline: str, sources: list[str], step: str | None, db: str | None, as_json: bool) -> None:
    from tracekit.steps import compared, is_import_ref

    if len(sources) != 1:
        raise TracekitError("--baseline compares one trace with its baseline: give one trace")
    store = open_store(db) if is_import_ref(baseline) or is_import_ref(sources[0]) else None
    with busy("reading 2 traces"):
        found = compared(baseline, sources[0], step, store)
    if as_json:
        print_json(dataclasses.asdict(found))
        return
    for line in comparison_lines(found):
        console.print(line, markup=False)


def program_dict(found: ProgramSteps) -> dict[str, Any]:
    """The --json object: `tracekit.program-steps/1`, the replay without the profiler and the traced steps."""
    data = dataclasses.asdict(found)
    data["unprofiled"], data["traced"] = steps_dict(found.unprofiled), steps_dict(found.traced)
    data["profiler_slowdown"] = found.profiler_slowdown
    return data


def program_lines(found: ProgramSteps) -> list[Shown]:
    return [*present.program_lines(found), "", *result_lines(found.unprofiled)]


def _program(
    source: str, step: str | None, store: Any, step_time: str | None, calibration: str | None, as_json: bool
) -> None:
    from tracekit.steps import calibration_of, program_of

    anchor_ns = fmt.parse_step_time(step_time) if step_time is not None else None
    with busy("replaying the steps without the profiler"):
        found = program_of(source, step, store, anchor_ns, calibration_of(calibration))
    if as_json:
        print_json(program_dict(found))
        return
    show(program_lines(found))


def step_command(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="A PyTorch profiler trace or nsys SQLite export, or a stored import of one (7, import:7); several, "
            "or a folder of them: one per rank."
        ),
    ],
    step: Annotated[
        str | None,
        typer.Option("--step", help="The record_function or NVTX range that marks one step (default: ProfilerStep#N)."),
    ] = None,
    kernel: Annotated[
        str | None, typer.Option("--kernel", help="What-if: the kernel (name contains this) whose launch changes.")
    ] = None,
    block: Annotated[int | None, typer.Option("--block", help="What-if: threads per block.")] = None,
    regs: Annotated[int | None, typer.Option("--regs", help="What-if: registers per thread.")] = None,
    smem: Annotated[int | None, typer.Option("--smem", help="What-if: dynamic shared memory per block, bytes.")] = None,
    warps_per_sm: Annotated[int | None, typer.Option("--warps-per-sm", help="What-if: target warps per SM.")] = None,
    grid: Annotated[int | None, typer.Option("--grid", help="What-if: blocks in the grid (same total work).")] = None,
    ncu: Annotated[
        list[str] | None,
        typer.Option("--ncu", help="What-if: an Nsight Compute result of the kernel (imported to pair with it)."),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="Compare: the same step without your change (a trace or stored import); the trace given is the "
            "step with it. Prints what each part took in both and which grew.",
        ),
    ] = None,
    traced: Annotated[
        bool,
        typer.Option(
            "--traced",
            help="Show the steps as the profiler recorded them (its own host work included) instead of the replay "
            "without it.",
        ),
    ] = False,
    step_time: Annotated[
        str | None,
        typer.Option(
            "--step-time",
            help="Your program's own step time (22.7ms, 0.5s) or rate (44/s), from its log: pins the replay "
            "without the profiler to it.",
        ),
    ] = None,
    calibration: Annotated[
        str | None,
        typer.Option(
            "--calibration",
            help="A profiler calibration (tracekit calibrate --profiler); default: this machine's, else the shipped.",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Where each step's time goes as the program runs it (the trace replayed without the profiler's own host
    work): GPU busy and idle, idle causes, categories, operators, what to try first."""
    from tracekit.steps import ranks_of

    if baseline is not None:
        _compare(baseline, sources, step, db, as_json)
        return

    knobs = {"block": block, "regs": regs, "smem": smem, "warps_per_sm": warps_per_sm, "grid": grid}
    knobs = {k: v for k, v in knobs.items() if v is not None}
    if kernel is not None or knobs:
        _what_if(sources, kernel, knobs, ncu or [], step, db, as_json)
        return
    if ncu:
        from tracekit.api import steps_with_kernels

        if len(sources) != 1:
            raise TracekitError("--ncu ranks one trace's kernels: give one trace")
        with busy("analyzing the step's kernels"):
            result = steps_with_kernels(open_store(db), sources[0], list(ncu), step)
        if as_json:
            print_json(steps_dict(result))
            return
        show(result_lines(result))
        return

    from tracekit.api import rank_files
    from tracekit.steps import is_import_ref

    expanded: list[str] = []  # a folder stands for the rank traces in it
    for source in sources:
        expanded += [source] if is_import_ref(source) else [str(path) for path in rank_files([source])]
    sources = expanded
    store = open_store(db) if any(is_import_ref(source) for source in sources) else None
    if len(sources) == 1 and not traced:
        _program(sources[0], step, store, step_time, calibration, as_json)
        return
    with busy(f"reading {fmt.plural(len(sources), 'trace')}"):
        results, aligned = ranks_of(list(sources), step, store)
    if as_json:
        payload: Any = steps_dict(results[0])
        if len(results) > 1:
            payload = {
                "schema": "tracekit.step-ranks/1",
                "ranks": [steps_dict(r) for r in results],
                "aligned": [dataclasses.asdict(a) for a in aligned],
            }
        print_json(payload)
        return
    for index, result in enumerate(results):
        if index:
            console.print("", markup=False)
        show(result_lines(result))
    if len(results) > 1:
        console.print("", markup=False)
        for line in rank_lines(aligned):
            console.print(line, markup=False)
