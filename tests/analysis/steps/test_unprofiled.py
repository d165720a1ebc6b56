"""Steps as the program runs them (issue 41): workloads written by others (torchvision, timm, Hugging Face, Lightning
Fabric; a DataLoader, torch.compile, a CUDA graph, generate) recorded on an H200, each timed with CUDA events without
the profiler before it was traced (sample_traces/steps/h200_programs/timings.csv), then traced at several
torch.profiler settings. The replay without the profiler is judged against those timings, beside the trivial
answer (the traced step taken as the step)."""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import REAL_EXPORTS, run_cli, skip_or_fail
from tracekit.analysis.steps import analyze_steps
from tracekit.analysis.steps.calibration import SHIPPED_SCALES, shipped
from tracekit.analysis.steps.profiler_cost import (
    CPU_CUDA,
    CUDA_ONLY,
    SETTINGS,
    SHAPES,
    calibration_to_dict,
    fit,
    setting_of,
)
from tracekit.analysis.steps.program import GPU_BOUND_PCT, ProgramSteps, analyze_program
from tracekit.host_events import HostEvents
from tracekit.steps import read_events

PROGRAMS = Path(__file__).resolve().parents[3] / "sample_traces" / "steps" / "h200_programs"
WORKLOADS = (
    "hf_gpt2_compile",
    "hf_gpt2_cudagraph",
    "hf_gpt2_generate",
    "hf_gpt2_train",
    "hf_gpt2_train_item",
    "lightning_fabric_resnet18",
    "timm_vit_small_train",
    "tv_resnet18_loader0",
    "tv_resnet18_loader4",
    "tv_resnet50_train",
)
SHAPES_TRACES = tuple(f"{w}.shapes" for w in WORKLOADS)  # record_shapes: the setting most traces are recorded with
_events: dict[str, HostEvents] = {}
_programs: dict[str, ProgramSteps] = {}


def events(name: str) -> HostEvents:
    if name not in _events:
        _events[name] = read_events(PROGRAMS / f"{name}.pt.trace.json.gz")
    return _events[name]


def program(name: str) -> ProgramSteps:
    if name not in _programs:
        _programs[name] = analyze_program(events(name), shipped())
    return _programs[name]


def real_ms(name: str) -> float:
    """The median unprofiled step of the trace's own process (CUDA events, timed before the trace): the replay's
    figure is its median step too."""
    workload, setting = name.split(".")
    with open(PROGRAMS / "timings.csv") as handle:
        rows = csv.DictReader(handle)
        return next(float(r["median_event_ms"]) for r in rows if (r["workload"], r["setting"]) == (workload, setting))


def test_the_replay_is_nearer_the_program_than_the_trace_on_the_set():
    """On every workload's record_shapes trace: the replay's step nearer the CUDA-event timing than the traced step
    on at least 80% of them, and its median error under half the traced one's (benchmarks/bench_steps.py prints
    every setting, in sample and held out)."""
    replay_errors, traced_errors = [], []
    for name in SHAPES_TRACES:
        found, real = program(name), real_ms(name) * 1e6
        replay_errors.append(abs(found.median_step_ns / real - 1))
        traced_errors.append(abs(found.traced_step_ns / real - 1))
    nearer = sum(r <= t for r, t in zip(replay_errors, traced_errors, strict=True))
    assert nearer >= 0.8 * len(SHAPES_TRACES), (replay_errors, traced_errors)
    assert statistics.median(replay_errors) < 0.5 * statistics.median(traced_errors)


@pytest.mark.parametrize("name", ["hf_gpt2_train.shapes", "tv_resnet50_train.cpu_cuda", "hf_gpt2_train_item.shapes"])
def test_the_replay_is_within_10_percent_of_the_program(name):
    """A GPU-bound step at two settings, and a host-bound one (benchmarks/bench_steps.py prints them all: the same
    program timed in two processes differs by more than 10% on half of them, so no single trace is held closer)."""
    found, real = program(name), real_ms(name) * 1e6
    assert abs(found.median_step_ns / real - 1) <= 0.10, (found.median_step_ns, real)
    assert found.calibration.startswith("shipped: NVIDIA H200")


def test_no_saving_exceeds_the_idle_time_of_the_program():
    """The "what to try" savings fit in the idle the program really has (its measured step less the GPU's busy time
    in the step: the profiler leaves GPU durations as they are), give or take 10% of it and 1% of the step, on at
    least 8 of the 10 record_shapes traces. The miss: Lightning's replay takes out too little (35 ms against 19 ms:
    host work where the program idles less)."""
    holds = []
    for name in SHAPES_TRACES:
        found, real = program(name), real_ms(name) * 1e6
        shown = found.unprofiled.steps[found.unprofiled.representative_step]
        idle = max(0.0, real - shown.busy_ns)
        holds.append(all(s.saves_high_ns <= idle * 1.10 + 0.01 * real for s in found.unprofiled.what_to_try))
    assert sum(holds) >= 8, dict(zip(SHAPES_TRACES, holds, strict=True))


SECOND = PROGRAMS.parent / "h200_programs_2"  # a second process of each program, and three programs added later


def test_the_replay_holds_on_a_recording_and_programs_it_was_not_fitted_on():
    """Held out: the second recording's record_shapes traces (a second process of each program, and BERT,
    MobileNetV3 and ConvNeXt-T, added after the replay was designed), at the record_shapes scale fitted without them
    (the first and third recordings give the shipped one, 3: benchmarks/bench_steps.py prints the fit without each
    recording): the replay nearer the program's own CUDA-event timing than the traced step on at least 80% of them,
    its median error under a third of the traced one's.
    """
    with open(SECOND / "timings.csv") as handle:
        real = {f"{r['workload']}.{r['setting']}": float(r["median_event_ms"]) * 1e6 for r in csv.DictReader(handle)}
    names = sorted(name for name in real if name.endswith(".shapes"))
    assert len(names) == 12
    replay_errors, traced_errors = [], []
    for name in names:
        found = analyze_program(read_events(SECOND / f"{name}.pt.trace.json.gz"), shipped())
        replay_errors.append(abs(found.median_step_ns / real[name] - 1))
        traced_errors.append(abs(found.traced_step_ns / real[name] - 1))
    nearer = sum(r <= t for r, t in zip(replay_errors, traced_errors, strict=True))
    assert nearer >= 0.8 * len(names), dict(zip(names, zip(replay_errors, traced_errors, strict=True), strict=True))
    assert statistics.median(replay_errors) < statistics.median(traced_errors) / 3


@pytest.mark.parametrize("setting", ["cpu_cuda", "cuda_only", "shapes"])
def test_what_recording_each_gpu_activity_costs_the_gpu_comes_out(setting):
    """GPT-2 replayed from a CUDA graph is all GPU work: no cost taken out of the host moves its step, yet its
    program runs 1.1-1.3% faster than its traced kernels (CUPTI's record of each of its 1,259 activities costs the
    GPU about 0.43 us). With that taken out of each activity's latency behind its stream's work, the replay comes
    within 0.5% of the program's step on the second recording, at every setting, and the interval holds it."""
    from tracekit.analysis.steps.calibration import with_gpu_activity

    name = f"hf_gpt2_cudagraph.{setting}"
    real = float(timing_row(SECOND, name)["median_event_ms"]) * 1e6
    events = read_events(SECOND / f"{name}.pt.trace.json.gz")
    found = analyze_program(events, shipped())
    assert found.gpu_bound and abs(found.median_step_ns / real - 1) < 0.005
    assert found.low_ns <= real <= found.high_ns
    host_only = analyze_program(events, with_gpu_activity(shipped(), 0.0))
    assert host_only.median_step_ns > 1.008 * real  # the GPU's cost left in


def test_a_graph_replayed_step_on_another_machine_is_called_gpu_bound():
    """Held out (the first step set, on the 2-GPU host, never fitted on): Llama-small replayed from a CUDA graph runs
    0.61 ms a step, 91% of it GPU work. Traced it read 0.66 ms, 84% busy, and was called not GPU-bound; with the
    GPU's cost per recorded activity taken out it is within 3% and GPU-bound. ResNet-50 from a graph: within 1%
    (2.4% over before)."""
    for variant, within in (("llama_small_cudagraph", 0.03), ("resnet_cudagraph", 0.01)):
        real = first_set_step_ms(variant) * 1e6
        found = analyze_program(read_events(FIRST_SET / f"{variant}.pt.trace.json.gz"), shipped())
        assert found.gpu_bound and abs(found.median_step_ns / real - 1) < within, (variant, found.median_step_ns)
        assert abs(found.median_step_ns / real - 1) < abs(found.traced_step_ns / real - 1)


OTHER_MACHINE = PROGRAMS.parent / "h200x2_programs"  # six of the programs on the 2-GPU host: never fitted on


def test_the_interval_holds_the_program_on_a_machine_it_was_not_fitted_on():
    """The interval is the profiler's process-to-process cost draw and the GPU work's own spread, sized on the three
    recordings of the 16-core host: on the 2-GPU host's 20 processes it holds the program's step on at least 90%
    (the old 0.5x-1.5x interval, with the GPU work only allowed shorter, held 13 of the 20)."""
    with open(OTHER_MACHINE / "timings.csv") as handle:
        real = {f"{r['workload']}.{r['setting']}": float(r["median_event_ms"]) * 1e6 for r in csv.DictReader(handle)}
    assert len(real) == 20
    held = {
        name: found.low_ns <= ms <= found.high_ns
        for name, ms in real.items()
        for found in [analyze_program(read_events(OTHER_MACHINE / f"{name}.pt.trace.json.gz"), shipped())]
    }
    assert sum(held.values()) >= 0.9 * len(held), sorted(name for name, ok in held.items() if not ok)


def timing_row(folder: Path, name: str) -> dict[str, str]:
    with open(folder / "timings.csv") as handle:
        return next(r for r in csv.DictReader(handle) if f"{r['workload']}.{r['setting']}" == name)


@pytest.mark.parametrize(("name", "uneven"), [("tv_resnet18_loader4.cuda_only", True), ("hf_gpt2_train.shapes", False)])
def test_steps_that_vary_widely_are_said_to_be_one_draw(name, uneven):
    """ResNet-18 fed by four DataLoader workers waits on them every few steps (its own timed steps ran 8-89 ms
    around a 10.9 ms median): the two recorded steps that stand for the run are 7.4 and 32.7 ms replayed, and their
    median is one draw of that. The analysis says so, with the steps' range; GPT-2's even steps get no such note."""
    from tracekit.analysis.steps.analysis import UNEVEN_STEPS, standing_for_the_run

    timed = timing_row(SECOND, name)
    assert (float(timed["max_event_ms"]) / float(timed["min_event_ms"]) > UNEVEN_STEPS) == uneven  # the program's
    found = analyze_program(read_events(SECOND / f"{name}.pt.trace.json.gz"), shipped())
    spans = [s.span_ns for s in standing_for_the_run(found.unprofiled.steps)]
    said = [w for w in found.unprofiled.warnings if "recorded steps that stand for the run vary" in w]
    assert bool(said) == uneven
    if uneven:
        assert f"vary {min(spans) / 1e6:.2f} to {max(spans) / 1e6:.2f} ms" in said[0]


def test_a_gpu_bound_step_is_called_so_and_its_advice_is_about_kernels():
    """GPT-2 training is GPU-bound (its busy time over its unprofiled step, from the trace's own kernels: >= 90%);
    traced with CUDA activity only it reads below that: the replay calls it GPU-bound and suggests its kernels."""
    name = "hf_gpt2_train.cuda_only"
    traced_step = analyze_steps(events(name))
    shown = traced_step.steps[traced_step.representative_step]
    assert shown.busy_ns / (real_ms(name) * 1e6) >= GPU_BOUND_PCT / 100
    found = program(name)
    assert found.gpu_bound and found.busy_pct >= GPU_BOUND_PCT
    assert found.unprofiled.what_to_try and {s.kind for s in found.unprofiled.what_to_try} == {"kernel"}
    kernels = events(name).gpu.filter(pl.col("kind") == "kernel").group_by("name").agg(pl.col("end_ns").count())
    assert {s.what for s in found.unprofiled.what_to_try} <= set(kernels["name"].to_list())


def test_the_setting_is_read_from_the_trace():
    for path in sorted(PROGRAMS.glob("hf_gpt2_train.*.pt.trace.json.gz")):
        name = path.name.removesuffix(".pt.trace.json.gz")
        assert setting_of(events(name)) == name.split(".")[1]


def test_an_anchor_pins_the_replay_and_says_how_far_it_was():
    name = "tv_resnet18_loader0.shapes"
    real = round(real_ms(name) * 1e6)
    anchored = analyze_program(events(name), shipped(), anchor_ns=real)
    assert anchored.anchor_ns == real
    assert abs(anchored.median_step_ns / real - 1) <= 0.02
    assert anchored.replay_alone_ns == program(name).median_step_ns


def test_a_cuda_program_of_streams_gets_no_steps_and_no_pytorch_advice():
    """A CUDA C program (vectorAdd over chunks on streams, nsys 2022.4 on a T4, from a public repository): its one
    kernel repeats over the chunks of one run, which are no steps; its advice names CUDA's calls, not PyTorch's."""
    path = REAL_EXPORTS / "nsys_2022.4_T4_streams_report2.sqlite"
    if not path.exists():
        skip_or_fail(f"{path} is absent (the shared real exports live beside the checkout)")
    found = analyze_program(read_events(path), shipped())
    assert found.unprofiled.detected_by == "whole trace" and len(found.unprofiled.steps) == 1
    words = " ".join(s.fix for s in found.unprofiled.what_to_try)
    assert found.unprofiled.what_to_try
    for pytorch in ("DataLoader", "torch.compile", "pin_memory", ".item()", "torch.cuda"):
        assert pytorch not in words
    assert found.setting == "nsys" and found.calibration.startswith("uncalibrated")
    from tracekit.present.steps import program_headline

    assert "as traced (Nsight Systems: nothing taken out)" in program_headline(found)


def test_a_long_run_of_steps_bounds_its_median_by_order_not_by_its_odd_step():
    """A PyTorch program under Nsight Systems (an RTX A5000, from a public repository): 200 steps of two kernels,
    199 standing for the run at about 0.4 ms and a few far longer (one 8.4 ms). The median of 199 steps is pinned
    near its value, so the interval does not stretch to the longest step and no warning calls the median one draw;
    its cost is uncalibrated, and the interval does not claim a calibration's costs."""
    from tracekit.analysis.steps.analysis import median_bounds_ns, standing_for_the_run
    from tracekit.present.steps import program_lines

    path = REAL_EXPORTS / "nsys_2025.3.2_RTXA5000_torch_overlap_noext"
    if not path.exists():
        skip_or_fail(f"{path} is absent (the shared real exports live beside the checkout)")
    found = analyze_program(read_events(path), shipped())
    spans = sorted(s.span_ns for s in standing_for_the_run(found.unprofiled.steps))
    assert len(spans) == 199 and spans[-1] > 10 * found.median_step_ns
    low, high = median_bounds_ns(spans)
    assert spans[0] < low <= found.median_step_ns <= high < spans[-1]
    assert found.high_ns < 1.1 * found.median_step_ns
    assert not any("recorded steps that stand for the run vary" in w for w in found.unprofiled.warnings)
    assert not found.calibrated
    interval = program_lines(found)[1]
    assert "calibration's" not in interval and "3% either way" in interval


def test_the_median_bounds_are_the_order_statistics_of_a_median():
    """Five steps or fewer: their range; more: the ranks n/2 -+ 1.96 sqrt(n)/2, whatever the spans' values."""
    from tracekit.analysis.steps.analysis import median_bounds_ns

    assert median_bounds_ns([]) == (0, 0)
    assert median_bounds_ns([30, 10]) == (10, 30)
    assert median_bounds_ns([5, 1, 4, 2, 3]) == (1, 5)
    assert median_bounds_ns(list(range(100, 0, -1))) == (41, 60)  # ranks 40 and 59 of 0..99


def test_a_cutlass_benchmark_is_no_pytorch_loop():
    """A CUTLASS benchmark under Nsight Systems (an A40, from a public repository): one GEMM kernel launched over and
    over. CUTLASS names no PyTorch program (cuBLAS names its kernels after it, and CUDA programs call both), so its
    repeats are no steps and its advice is about its kernel, with nothing of PyTorch's."""
    path = REAL_EXPORTS / "nsys_2023.2.3_A40_cutlassbench_report1.sqlite"
    if not path.exists():
        skip_or_fail(f"{path} is absent (the shared real exports live beside the checkout)")
    found = analyze_program(read_events(path), shipped())
    assert found.unprofiled.detected_by == "whole trace" and len(found.unprofiled.steps) == 1
    words = " ".join([*(s.fix for s in found.unprofiled.what_to_try), *found.unprofiled.warnings])
    assert found.unprofiled.what_to_try
    for pytorch in ("DataLoader", "torch.compile", "pin_memory", ".item()", "active="):
        assert pytorch not in words


def test_uneven_steps_are_said_in_the_programs_own_terms():
    """Steps whose median could lie over 1.5x apart are said to be one draw: a PyTorch program is told of its
    DataLoader and the profiler's schedule, a CUDA program only to record more of its loop; even steps, nothing."""
    from tracekit.analysis.steps.analysis import uneven_steps_warning

    spans = [27_000_000, 27_200_000, 26_600_000, 27_300_000, 299_000_000]
    cuda = uneven_steps_warning(spans, pytorch=False)
    assert cuda is not None and "26.60 to 299.00 ms" in cuda and "record more of the loop" in cuda
    assert "DataLoader" not in cuda and "active=" not in cuda
    torch = uneven_steps_warning(spans, pytorch=True)
    assert torch is not None and "DataLoader" in torch and "active=" in torch
    assert uneven_steps_warning(spans[:4], pytorch=True) is None


def test_a_rocm_trace_is_shown_as_traced_with_no_cuda_advice_about_cupti():
    """HTA's MI250 trace (torch.profiler on ROCm 6.2, from HTA's test data): roctracer, not CUPTI, intercepts its
    HIP calls, and no calibration measured it. Nothing is taken out, the headline says it is the traced step, and
    nothing tells the user about CUPTI staying subscribed after the trace."""
    from tracekit.present.steps import program_headline, program_lines

    path = PROGRAMS.parents[1] / "hta" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    found = analyze_program(read_events(path), shipped())
    assert found.setting == "rocm" and not found.calibrated and found.after_trace is None
    assert found.calibration.startswith("uncalibrated")
    headline = program_headline(found)
    assert "as traced" in headline and "without the profiler" not in headline
    assert not any("CUPTI" in line for line in program_lines(found))
    assert abs(found.median_step_ns - found.traced_step_ns) <= 0.001 * found.traced_step_ns


def test_the_cli_leads_with_the_program_and_names_the_calibration(tmp_path):
    trace = str(PROGRAMS / "hf_gpt2_train_item.shapes.pt.trace.json.gz")
    done = run_cli("step", trace)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("step ") and "without the profiler" in first and "traced" in first
    assert "profiler cost taken out per shipped: NVIDIA H200" in done.stdout
    as_json = json.loads(run_cli("step", trace, "--json").stdout)
    assert as_json["schema"] == "tracekit.program-steps/1"
    assert as_json["median_step_ns"] == as_json["unprofiled"]["median_step_ns"]
    assert as_json["traced"]["median_step_ns"] == as_json["traced_step_ns"] > as_json["median_step_ns"]
    # the Python API gives the same figures, from the same replay
    import tracekit

    api_found = tracekit.open(str(tmp_path / "api.sqlite")).program_steps(trace)
    assert api_found.median_step_ns == as_json["median_step_ns"] and api_found.calibration == as_json["calibration"]
    traced = run_cli("step", trace, "--traced")
    assert "without the profiler" not in traced.stdout and "ProfilerStep" in traced.stdout
    # a calibration file of the user's own is named in the output
    mine = tmp_path / "mine.json"
    data = calibration_to_dict(shipped())
    mine.write_text(json.dumps({**data, "name": "measured on my box"}))
    assert "measured on my box" in run_cli("step", trace, "--calibration", str(mine)).stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--step-time", "fast"), "--step-time 'fast': expected a positive duration"),
        (("--calibration", "/nonexistent/c.json"), "no such calibration file"),
    ],
)
def test_bad_step_time_or_calibration_is_one_line_and_exit_2(args, words):
    done = run_cli("step", str(PROGRAMS / "hf_gpt2_train_item.shapes.pt.trace.json.gz"), *args)
    assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_shipped_calibration_covers_every_setting():
    """Every setting has costs; as measured, recording shapes costs an operator more than not, and CUDA activity
    alone records no operator; the shipped costs are the measured ones times each setting's fitted scale."""
    calibration = shipped()
    assert set(calibration.costs) == set(SETTINGS)
    measured = fit(csv.DictReader((PROGRAMS / "profiler_cost.csv").read_text().splitlines()), "measured")
    assert measured.for_setting(SHAPES).of("cpu_op") > measured.for_setting(CPU_CUDA).of("cpu_op")
    assert calibration.for_setting(CUDA_ONLY).of("cpu_op") == 0
    for setting in SETTINGS:
        for kind, ns in measured.for_setting(setting).cost_ns.items():
            assert calibration.for_setting(setting).of(kind) == pytest.approx(round(ns) * SHIPPED_SCALES[setting])


THIRD = PROGRAMS.parent / "h200_programs_3"  # CUPTI torn down after each trace (TEARDOWN_CUPTI=1)
GPU_BOUND_PROGRAMS = ("hf_gpt2_compile", "hf_gpt2_cudagraph", "hf_gpt2_train", "hf_gpt2_train_item")


def after_over_before(folder: Path) -> list[float]:
    """Each host-bound program's unprofiled median step after its trace over before it, in the same process."""

    def medians(name: str) -> dict[tuple[str, str], float]:
        with open(folder / name) as handle:
            return {(r["workload"], r["setting"]): float(r["median_event_ms"]) for r in csv.DictReader(handle)}

    before, after = medians("timings.csv"), medians("timings_after.csv")
    return [after[key] / ms for key, ms in before.items() if key in after and key[0] not in GPU_BOUND_PROGRAMS]


def test_what_the_profiler_leaves_behind_is_said_where_it_slows_the_program(tmp_path):
    """Kineto keeps CUPTI subscribed once a trace ends unless the process runs with TEARDOWN_CUPTI=1: the first two
    recordings' host-bound programs ran their later steps slower, the third's (torn down) did not, and the shipped
    figures say so. A host-bound trace's analysis carries them and its views say how to avoid it; a GPU-bound
    program's (its later steps ran as before) and an Nsight Systems export's do not. The shipped figures count the
    traces whose replay is not GPU-bound (benchmarks/bench_steps.py); by program, as here, they come within 0.02."""
    kept = after_over_before(PROGRAMS) + after_over_before(SECOND)
    down = after_over_before(THIRD)
    assert len(kept) == 49 and len(down) == 29
    assert statistics.median(kept) > 1.1 > 1.0 > statistics.median(down)
    assert statistics.median(kept) == pytest.approx(shipped().after_trace.slowdown, abs=0.02)
    assert statistics.median(down) == pytest.approx(shipped().after_trace.torn_down, abs=0.02)
    host_bound = program("tv_resnet18_loader0.shapes")
    assert not host_bound.gpu_bound and host_bound.after_trace == shipped().after_trace
    assert program("hf_gpt2_train.cuda_only").gpu_bound and program("hf_gpt2_train.cuda_only").after_trace is None
    trace = str(PROGRAMS / "tv_resnet18_loader0.shapes.pt.trace.json.gz")
    shown = run_cli("step", trace).stdout
    assert "TEARDOWN_CUPTI=1" in shown and "later steps 1.17x slower, 0.99x with it" in shown
    assert json.loads(run_cli("step", trace, "--json").stdout)["after_trace"]["slowdown"] == 1.17
    markdown = tmp_path / "report.md"
    assert run_cli("report", trace, "-o", str(markdown)).returncode == 0
    assert "TEARDOWN_CUPTI=1" in markdown.read_text()
    nsys = REAL_EXPORTS / "nsys_2022.4_T4_streams_report2.sqlite"
    if not nsys.exists():
        skip_or_fail(f"{nsys} is absent (the shared real exports live beside the checkout)")
    assert analyze_program(read_events(nsys), shipped()).after_trace is None


def test_the_median_alone_is_the_analysis_median():
    """The interval's ends and the anchor's search read the replay's median step alone (`median_step_ns`, without
    causes, breakdowns or critical path): on every trace of the first recording, as traced and replayed at the
    interval's high cost scale, it is the full analysis's median step."""
    from tracekit.analysis.steps.analysis import median_step_ns
    from tracekit.analysis.steps.program import COST_HIGH
    from tracekit.analysis.steps.unprofiled import replay_without_profiler

    names = sorted(p.name.removesuffix(".pt.trace.json.gz") for p in PROGRAMS.glob("*.pt.trace.json.gz"))
    assert len(names) == 32
    for name in names:
        traced = events(name)
        replayed = replay_without_profiler(traced, shipped().for_setting(setting_of(traced)), COST_HIGH)
        for timeline in (traced, replayed):
            assert median_step_ns(timeline) == analyze_steps(timeline).median_step_ns > 0, name


FIRST_SET = PROGRAMS.parent / "h200"  # recorded before the replay existed; timed unprofiled in processes of their own


def first_set_step_ms(variant: str) -> float:
    with open(FIRST_SET / "step_summary.csv") as handle:
        return next(float(r["median_step_ms"]) for r in csv.DictReader(handle) if r["variant"] == variant)


def test_a_launch_bound_eager_step_stays_launch_bound_without_the_profiler():
    """Held out (the first step set, recorded before the replay was designed): Llama-small eager, 1 x 64 tokens,
    is launch-bound as the program runs it (2.41 ms a step; the same step from a CUDA graph runs in 0.61 ms). Its
    replay should come near its step and not call it GPU-bound, or a user is told to speed up kernels that are not
    what bounds it. It was a wrong verdict until the replay kept the bare program's host time: at the costs fitted on
    the 13 programs its replay took 5.03 ms out of the traced 5.59 ms (the profiler cost 3.18 ms) and reached the
    GPU's own 0.56 ms; its 638 operators and 141 launches a step need more host time than that without any
    profiler."""
    found = analyze_program(read_events(FIRST_SET / "llama_small_eager.pt.trace.json.gz"), shipped())
    real_ns = first_set_step_ms("llama_small_eager") * 1e6
    assert first_set_step_ms("llama_small_cudagraph") * 3 < first_set_step_ms("llama_small_eager")  # launch-bound
    assert abs(found.median_step_ns / real_ns - 1) <= 0.25, (found.median_step_ns, real_ns)
    assert not found.gpu_bound


def test_the_replay_keeps_the_host_time_the_bare_program_needs():
    """However much cost is taken out (the anchor's search goes to 16x the calibration), the host keeps what its
    recorded events stand for without the profiler: Llama-small's step replayed at 16x is no shorter than its
    operators, ranges and launching calls at their bare times (the calibration's loops run bare), where without
    the floor it reaches the GPU's own time; a calibration without bare times (written before them) has no floor."""
    from tracekit.analysis.steps.analysis import median_step_ns
    from tracekit.analysis.steps.program import MAX_SCALE
    from tracekit.analysis.steps.unprofiled import replay_without_profiler

    traced = read_events(FIRST_SET / "llama_small_eager.pt.trace.json.gz")
    cost = shipped().for_setting(setting_of(traced))
    step = traced.ranges.filter(pl.col("name") == "ProfilerStep#4").row(0, named=True)
    inside = (pl.col("start_ns") >= step["start_ns"]) & (pl.col("start_ns") < step["end_ns"])
    ranges = traced.ranges.filter(inside & (pl.col("name") != "ProfilerStep#4"))
    launches = traced.calls.filter(inside & pl.col("correlation_id").is_in(traced.gpu["correlation_id"].implode()))
    bare_ns = sum(cost.bare(kind) * n for kind, n in ranges.group_by("domain").len().iter_rows())
    bare_ns += cost.bare("cuda_runtime") * launches.height
    assert launches.height == 141 and ranges.height == 701  # 638 operators and 63 of the program's own ranges
    gpu_ns = int(traced.gpu.filter(inside).select((pl.col("end_ns") - pl.col("start_ns")).sum()).item())
    floored = median_step_ns(replay_without_profiler(traced, cost, MAX_SCALE))
    assert floored >= 0.9 * bare_ns and bare_ns > 1.5 * gpu_ns
    unfloored = median_step_ns(replay_without_profiler(traced, replace(cost, bare_ns={}), MAX_SCALE))
    assert unfloored < 1.1 * gpu_ns


def test_a_calibration_file_carries_the_bare_times_and_an_older_one_reads_without(tmp_path):
    """`tracekit calibrate --profiler` writes the bare times and the GPU's cost per activity beside the costs; a file
    written before them still reads (no floor, no GPU cost), and the shipped bare times are the fit of the shipped
    loops' bare runs."""
    from tracekit.analysis.steps.profiler_cost import calibration_from_dict

    measured = fit(csv.DictReader((PROGRAMS / "profiler_cost.csv").read_text().splitlines()), "measured")
    for setting in SETTINGS:
        for kind, ns in measured.for_setting(setting).bare_ns.items():
            assert shipped().for_setting(setting).bare(kind) == pytest.approx(round(ns))
    assert 5_000 < measured.for_setting(SHAPES).bare("cuda_runtime") < 10_000  # a launching operator, bare
    assert 300 < measured.for_setting(SHAPES).bare("cpu_op") < 1_000  # a CPU operator alone
    data = calibration_to_dict(shipped())
    again = calibration_from_dict(json.loads(json.dumps(data)), "mine.json")
    assert again.for_setting(SHAPES).bare_ns == shipped().for_setting(SHAPES).bare_ns
    assert again.for_setting(SHAPES).gpu_activity_ns == shipped().for_setting(SHAPES).gpu_activity_ns > 0
    older = {k: v for k, v in data.items() if k not in ("bare_ns", "gpu_activity_ns")}
    assert calibration_from_dict(older, "old.json").for_setting(SHAPES).bare_ns == {}
    assert calibration_from_dict(older, "old.json").for_setting(SHAPES).gpu_activity_ns == 0.0


def test_the_fit_takes_the_median_of_several_processes():
    """`tracekit calibrate --profiler` runs each setting's loops in several processes: the fit of their rows is the
    fit of each row's median time, whatever the other draws were (one process slow, one fast, one as measured),
    and one process that lost its CUDA activity (no runtime call counted) does not lose the count."""
    rows = list(csv.DictReader((PROGRAMS / "profiler_cost.csv").read_text().splitlines()))
    once = fit(rows, "once")
    slow = [{**r, "host_ms": str(float(r["host_ms"]) * 1.5)} for r in rows]
    fast = [{**r, "host_ms": str(float(r["host_ms"]) * 0.7), "cuda_runtime": "0", "kernel": "0"} for r in rows]
    thrice = fit(rows + slow + fast, "thrice")
    for setting in SETTINGS:
        assert thrice.for_setting(setting).cost_ns == pytest.approx(once.for_setting(setting).cost_ns, abs=1e-6)
        assert thrice.for_setting(setting).bare_ns == pytest.approx(once.for_setting(setting).bare_ns, abs=1e-6)
    assert fit(rows + fast, "twice").for_setting(SHAPES).cost_ns != once.for_setting(SHAPES).cost_ns
