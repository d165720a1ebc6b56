"""A step analysis as every view shows it (`tracekit step`, the steps page, the HTML report): the steps table, the
idle causes with their evidence, GPU time by category and operator, and what to try first, numbers formatted by
`tracekit.format`."""

from __future__ import annotations

from tracekit import format as fmt
from tracekit.analysis.steps.compare import StepComparison
from tracekit.analysis.steps.profiler_cost import CPU_CUDA, CUDA_ONLY, MEMORY, ROCM, SHAPES, STACK
from tracekit.analysis.steps.program import COST_HIGH, COST_LOW, GPU_VARIATION, ProgramSteps
from tracekit.analysis.steps.types import Step, StepsResult, Suggestion
from tracekit.host_events import NSYS
from tracekit.present.sections import Table

STEP_COLUMNS = ("step", "span", "GPU busy", "busy", "idle", "kernels", "largest idle cause")
WAITING_SHARE = 0.10  # collectives with no computation beside them for this share of the step lead the headline


def _share(part: int, whole: int) -> str:
    return fmt.percent(100.0 * part / whole) if whole else "-"


def title(result: StepsResult) -> str:
    rank = f", rank {result.rank}" if result.rank is not None else ""
    device = f" on {result.device_name}" if result.device_name else ""
    return (
        f"{result.source or 'trace'}: {fmt.plural(len(result.steps), 'step')} ({result.detected_by}){rank}{device}; "
        f"median step {fmt.duration(result.median_step_ns)}"
    )


def step_rows(result: StepsResult) -> list[dict[str, str]]:
    rows = []
    for step in result.steps:
        top = step.causes[0] if step.causes and step.causes[0].idle_ns else None
        rows.append(
            dict(
                zip(
                    STEP_COLUMNS,
                    (
                        step.label,
                        fmt.duration(step.span_ns),
                        fmt.duration(step.busy_ns),
                        fmt.percent(step.busy_pct),
                        fmt.duration(step.idle_ns),
                        f"{step.kernels:,}",
                        f"{top.cause} {fmt.duration(top.idle_ns)}" if top else "-",
                    ),
                    strict=True,
                )
            )
        )
    return rows


def step_heading(step: Step) -> str:
    graphs = f" ({step.graph_kernels:,} replayed from CUDA graphs)" if step.graph_kernels else ""
    return (
        f"step {step.label}: span {fmt.duration(step.span_ns)}, GPU busy {fmt.duration(step.busy_ns)} "
        f"({fmt.percent(step.busy_pct)}), idle {fmt.duration(step.idle_ns)}; {fmt.plural(step.kernels, 'kernel')}"
        f"{graphs}, {fmt.plural(step.copies, 'copy', 'copies')}, {fmt.plural(step.sets, 'set')}"
    )


LONG_NAME = 60  # characters: a kernel's whole signature is cut to its base name past this


def _short(name: str) -> str:
    """An API call or operator as it is; a kernel's long signature as its base name (after "before ")."""
    if len(name) <= LONG_NAME:
        return name
    prefix = "before " if name.startswith("before ") else ""
    return prefix + fmt.kernel_name(name.removeprefix(prefix))


CAUSE_COLUMNS = ("cause", "idle", "share", "gaps", "evidence")


def cause_rows(step: Step) -> list[dict[str, str]]:
    """The named causes (idle > 0), largest first, with their largest pieces of evidence."""
    return [
        dict(
            zip(
                CAUSE_COLUMNS,
                (
                    cause.cause,
                    fmt.duration(cause.idle_ns),
                    _share(cause.idle_ns, step.idle_ns),
                    f"{cause.gaps:,}",
                    "; ".join(
                        f"{e.kind} {_short(e.name)} {fmt.duration(e.idle_ns)}".replace("  ", " ")
                        for e in cause.evidence
                    ),
                ),
                strict=True,
            )
        )
        for cause in step.causes
        if cause.idle_ns
    ]


def cause_table(step: Step) -> Table:
    """Why the GPU idled in the step: `cause_rows` under its title, as `tracekit step`, the reports and the steps
    page show it; a step without idle time says so."""
    rows = [list(row.values()) for row in cause_rows(step)]
    return Table(
        "Idle time by cause", list(CAUSE_COLUMNS), rows, note=None if rows else "The GPU does not idle in this step."
    )


def category_rows(step: Step) -> list[dict[str, str]]:
    return [
        {
            "category": c.category,
            "GPU time": fmt.duration(c.gpu_ns),
            "share": _share(c.gpu_ns, step.busy_ns),
            "activities": f"{c.count:,}",
        }
        for c in step.categories
    ]


def operator_rows(step: Step, top: int = 5) -> list[dict[str, str]]:
    return [
        {
            "operator": " > ".join(p for p in (o.annotation_path, o.operator) if p) or "(no operator)",
            "GPU time": fmt.duration(o.gpu_ns),
            "kernels": f"{o.count:,}",
        }
        for o in step.operators[:top]
    ]


def try_note(result: StepsResult) -> str:
    """What the savings of What to try first are (`advice.typical_step`)."""
    n = len(result.steps)
    return "the step time each would save" + (f", the median over the {n} steps" if n > 1 else "")


def suggestion_line(s: Suggestion) -> str:
    if s.kind == "copy" and s.saves_low_ns > 0:
        saved = f"{fmt.duration(s.saves_ns)} ({fmt.duration(s.saves_low_ns)} to {fmt.duration(s.saves_high_ns)})"
        return f"{s.what}: {saved}: {s.fix}"
    if s.kind == "kernel" and not s.saves_high_ns:  # a GPU-bound step's kernel, no change predicted for it yet
        return f"kernel {fmt.kernel_name(s.what)}: {s.fix}"
    if s.kind == "kernel":
        saved = f"{fmt.duration(s.saves_ns)} ({fmt.duration(s.saves_low_ns)} to {fmt.duration(s.saves_high_ns)})"
        return f"kernel {fmt.kernel_name(s.what)}: {saved}: {s.fix}"
    return f"{s.what}: up to {fmt.duration(s.saves_high_ns)}: {s.fix}"


def critical_path_line(result: StepsResult) -> str | None:
    """The representative step's critical path in one line: its links and the time on it by what bound each."""
    if not result.critical_path:
        return None
    by_reason: dict[str, int] = {}
    for link in result.critical_path:
        by_reason[link.reason] = by_reason.get(link.reason, 0) + link.end_ns - link.start_ns
    kernels = sum(1 for link in result.critical_path if link.kind == "gpu")
    ranked = sorted(by_reason.items(), key=lambda item: -item[1])
    parts = ", ".join(f"{reason} {fmt.duration(ns)}" for reason, ns in ranked)
    activities = fmt.plural(kernels, "GPU activity", "GPU activities")
    return f"critical path: {activities}; time on it by what bound each link: {parts}"


def _signed_duration(ns: int) -> str:
    return ("+" if ns > 0 else "-" if ns < 0 else "±") + fmt.duration(abs(ns))


def comparison_headline(c: StepComparison) -> str:
    """The change in one line: the step before and after, and the part that grew most."""
    line = (
        f"step {fmt.duration(c.before_step_ns)} -> {fmt.duration(c.after_step_ns)} "
        f"({_signed_duration(c.after_step_ns - c.before_step_ns)}, median steps)"
    )
    if c.grew_most is None:
        return f"{line}; no part grew by more than one step of the baseline varies (±{fmt.duration(c.noise_ns)}, 95%)"
    grew = c.grew_most
    return f"{line}; grew most: {grew.kind} {grew.part} {_signed_duration(grew.change_ns)}"


def comparison_rows(c: StepComparison) -> list[dict[str, str]]:
    """Busy, idle, pageable copies, then each part (idle causes and GPU time by category), largest change first;
    means per step."""
    totals = [
        ("GPU busy", c.before_busy_ns, c.after_busy_ns),
        ("idle", c.before_idle_ns, c.after_idle_ns),
    ]
    if c.before_pageable_copy_ns or c.after_pageable_copy_ns:
        totals.append(("pageable copies (GPU)", c.before_pageable_copy_ns, c.after_pageable_copy_ns))
    parts = [(f"{p.kind}: {p.part}", p.before_ns, p.after_ns) for p in c.changes]
    return [
        {"part": name, "before": fmt.duration(a), "after": fmt.duration(b), "change": _signed_duration(b - a)}
        for name, a, b in [*totals, *parts]
    ]


SETTING_WORDS = {
    CUDA_ONLY: "CUDA activity only",
    CPU_CUDA: "CPU operators and CUDA activity",
    SHAPES: "CPU operators with record_shapes",
    MEMORY: "CPU operators with profile_memory",
    STACK: "CPU operators with with_stack",
    NSYS: "Nsight Systems",
    ROCM: "the PyTorch profiler on ROCm",
}


def program_headline(p: ProgramSteps) -> str:
    """The step as the program runs it, first: its time without the profiler beside the traced one, its GPU busy
    share, and where to look. A trace with no repeating step is said to have none, and measured whole."""
    # a trace whose profiler's cost no calibration measured is shown as traced, and says so
    uncalibrated = f"as traced ({SETTING_WORDS.get(p.setting, p.setting)}: nothing taken out)"
    if p.unprofiled.detected_by == "whole trace":
        taken = (
            f"{fmt.duration(p.median_step_ns)} without the profiler ({fmt.duration(p.traced_step_ns)} traced)"
            if p.calibrated
            else f"{fmt.duration(p.median_step_ns)} {uncalibrated}"
        )
        return (
            f"no repeating step found (not a training or inference loop): the whole trace, {taken}; "
            f"GPU busy {fmt.percent(p.busy_pct)}"
        )
    line = (
        f"step {fmt.duration(p.median_step_ns)} without the profiler ({fmt.duration(p.traced_step_ns)} traced, "
        f"{p.profiler_slowdown:.2f}x); GPU busy {fmt.percent(p.busy_pct)}"
        if p.calibrated
        else f"step {fmt.duration(p.median_step_ns)} {uncalibrated}; GPU busy {fmt.percent(p.busy_pct)}"
    )
    if p.gpu_bound:
        return f"{line}: GPU-bound, so speed up the kernels (the top kernels below)"
    if p.exposed_communication_ns >= WAITING_SHARE * p.median_step_ns > 0:
        return (
            f"{line}, of it {fmt.duration(p.exposed_communication_ns)} a step in collectives with no computation "
            "beside them: waiting for the other ranks as much as moving data (`tracekit job` on every rank's trace "
            "says whom it waits for)"
        )
    shown = p.unprofiled.representative_step
    idle = p.unprofiled.steps[shown].idle_ns if shown is not None else 0
    return f"{line}: the GPU idles {fmt.duration(idle)} a step (what to try below)"


def program_lines(p: ProgramSteps) -> list[str]:
    """The headline, the interval, and which profiler setting and calibration the replay took out."""
    lines = [
        program_headline(p),
        f"  interval {fmt.duration(p.low_ns)} to {fmt.duration(p.high_ns)} ("
        + (f"the profiler's costs at {COST_LOW:g}x to {COST_HIGH:g}x the calibration's, " if p.calibrated else "")
        + f"the GPU work {100 * GPU_VARIATION:g}% either way"
        + (", and where the median of the recorded steps could lie)" if len(p.unprofiled.steps) > 1 else ")"),
        f"  recorded with {SETTING_WORDS.get(p.setting, p.setting)}; profiler cost taken out per {p.calibration}",
    ]
    if p.after_trace is not None:
        lines.append(
            "  once its trace ends the profiler stays in the process (CUPTI subscribed) unless it runs with "
            f"TEARDOWN_CUPTI=1: host-bound programs ran their later steps {p.after_trace.slowdown:.2f}x slower, "
            f"{p.after_trace.torn_down:.2f}x with it ({p.after_trace.source})"
        )
    if p.anchor_ns is not None and p.replay_alone_ns is not None:
        off = 100.0 * (p.replay_alone_ns / p.anchor_ns - 1) if p.anchor_ns else 0.0
        lines.append(
            f"  anchored on your step time {fmt.duration(p.anchor_ns)}: the replay alone gave "
            f"{fmt.duration(p.replay_alone_ns)} ({off:+.1f}%); the profiler's costs scaled {p.cost_scale:.2f}x "
            "to meet it"
        )
    return lines
