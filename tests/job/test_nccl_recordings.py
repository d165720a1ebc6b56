"""The job analysis on REAL two-GPU jobs (sample_traces/jobs/h200x2_nccl: DDP and FSDP over NCCL on two H200s,
each rank timed with CUDA events without the profiler before its trace; rank 1 is the injected one). The traced
ranks do not pay the profiler alike: the rank whose host falls behind arrives last at every all-reduce, so the job
as traced has a straggler the program lacks. `tracekit job` replays the job without the profiler by default; its
step is judged against the CUDA-event step, beside the traced step (the trivial answer)."""

from __future__ import annotations

import csv
import statistics
from functools import cache
from pathlib import Path

import pytest

from tracekit.analysis.job.types import COMPUTE, HOST, JobResult
from tracekit.analysis.job.unprofiled import REPLAY_ERROR_PCT
from tracekit.job.run import map_rank, reduce_job
from tracekit.present.job import headline
from tracekit.present.steps import program_headline
from tracekit.steps import calibration_of, program_of

JOBS = Path(__file__).resolve().parents[2] / "sample_traces" / "jobs" / "h200x2_nccl"
NO_STRAGGLER = ("resnet50.baseline", "resnet50.item_sync", "gpt2.baseline", "fsdp_gpt2.baseline")


@cache
def analyzed(job: str, traced: bool, tmp: Path) -> JobResult:
    parquet = tmp / f"{job}.{'traced' if traced else 'replayed'}"
    for position, path in enumerate(sorted((JOBS / job).glob("rank*.pt.trace.json.gz"))):
        map_rank(str(path), position, str(parquet), None if traced else calibration_of())
    return reduce_job(parquet)


@pytest.fixture(scope="module")
def job_of(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nccl")
    return lambda job, traced=False: analyzed(job, traced, tmp)


def timed_ns(job: str) -> float:
    with open(JOBS / job / "timings.csv", newline="") as handle:
        return 1e6 * statistics.median(float(row["median_ms"]) for row in csv.DictReader(handle))


def test_the_replayed_step_holds_for_the_program(job_of):
    """Over the nine jobs: the replayed step within 10% of the step CUDA events timed without the profiler on 7
    (median error 4.4%: `sample_traces/jobs/evaluate.py`), where the traced step is within 10% on none (22-89%
    off); on every job nearer the truth than the traced step."""
    jobs = sorted(p.name for p in JOBS.iterdir() if (p / "timings.csv").is_file())
    assert len(jobs) == 9
    errors, traced_errors = [], []
    for job in jobs:
        result, truth = job_of(job), timed_ns(job)
        assert result.unprofiled and result.setting == "cpu_cuda" and result.calibration
        errors.append(abs(result.step_ns - truth) / truth)
        traced_errors.append(abs(result.traced_step_ns - truth) / truth)
        # one host, one clock: the offsets found from the all-reduces' ends are the clocks' agreement
        assert all(abs(clock.offset_ns) <= 100_000 for clock in result.clocks)
    assert all(e < t for e, t in zip(errors, traced_errors, strict=True)), (errors, traced_errors)
    assert sum(e <= 0.10 for e in errors) >= 7 and statistics.median(errors) <= 0.05, errors
    assert min(traced_errors) > 0.20


@pytest.mark.parametrize("job", NO_STRAGGLER)
def test_no_straggler_where_the_program_has_none(job_of, job):
    result = job_of(job)
    assert result.straggler.rank is None, result.straggler
    assert result.straggler.t < result.straggler.t_needed


def test_the_traced_job_shows_the_profilers_straggler(job_of):
    """As traced, ResNet-50's baseline has rank 0 late at the all-reduces step after step (its host behind under
    the profiler): the straggler the replay without the profiler does not find."""
    traced = job_of("resnet50.baseline", traced=True)
    assert not traced.unprofiled and traced.straggler.rank == 0 and traced.straggler.cause == HOST
    assert job_of("resnet50.baseline").straggler.rank is None


@pytest.mark.xfail(
    strict=True,
    reason="known miss since the replay keeps the bare program's host time: the job's replayed step came nearer its "
    "timing (30.8 ms against 34.2; 28.3 before) while the step without the straggler's cause stayed at about 21 ms "
    "(the baseline job replays at 25.4, timed 26.6), so the gain reads 9.7 ms against the 7.6 ms measured (+29%)",
)
def test_the_loader_delay_is_named_with_its_cost(job_of):
    """Rank 1 sleeps 10 ms before each step: the job's unprofiled step grows by 7.6 ms over the baseline's (the
    rest hides behind rank 0's own work); the straggler is rank 1, its cause the host, its gain that cost."""
    result = job_of("resnet50.loader_delay")
    found = result.straggler
    assert found.rank == 1 and found.cause == HOST
    cost = timed_ns("resnet50.loader_delay") - timed_ns("resnet50.baseline")
    assert abs(found.gain_ns - cost) <= 0.25 * cost, (found.gain_ns, cost)


def test_one_rank_waiting_in_its_collectives_is_not_called_gpu_bound():
    """`tracekit step` on one rank: rank 1 of ResNet-50's baseline waits in its all-reduces for rank 0 (its NCCL
    kernels last until rank 0 arrives), so its GPU reads 98% busy; that time is the other rank's, not GPU-bound."""
    found = program_of(JOBS / "resnet50.baseline" / "rank1.pt.trace.json.gz")
    assert found.busy_pct > 95 and not found.gpu_bound
    assert found.exposed_communication_ns > 0.3 * found.median_step_ns
    assert "`tracekit job`" in program_headline(found)
    alone = program_of(JOBS / "resnet50.baseline" / "rank0.pt.trace.json.gz")  # the rank the other waits for
    assert alone.exposed_communication_ns < 0.1 * alone.median_step_ns


@pytest.mark.parametrize("job", ["resnet50.slow_backward", "gpt2.slow_backward"])
def test_over_fifteen_steps_the_slow_backward_is_named_with_its_cost(job_of, job):
    """Over 15 traced steps (`h200x2_nccl_15`) the 2.7 ms matmul on rank 1's backward is named: rank 1, compute,
    the gain within 25% of the matmul's own time, measured alone before the trace (`injected_ms`). GPT-2's needs the
    GEMMs that ran beside the other rank's waiting all-reduces taken back to their own time
    (`inflation.measure_inflation`): without it rank 0 looks the slower."""
    result = job_of(f"../h200x2_nccl_15/{job}")
    with open(JOBS.parent / "h200x2_nccl_15" / job / "timings.csv", newline="") as handle:
        injected_ns = 1e6 * max(float(row["injected_ms"]) for row in csv.DictReader(handle))
    found = result.straggler
    assert found.rank == 1 and found.cause == COMPUTE, found
    assert abs(found.gain_ns - injected_ns) <= 0.25 * injected_ns, (found.gain_ns, injected_ns)


def test_a_consistent_lateness_within_the_replays_error_is_not_named(job_of):
    """ResNet-50's baseline over 15 steps: rank 1 is late step after step (t above the bar) by what would save 0.6
    ms of a 25 ms step, less than the replay's own error (4.4%): no straggler, and the headline says why."""
    result = job_of("../h200x2_nccl_15/resnet50.baseline")
    found = result.straggler
    assert found.rank is None and found.t > found.t_needed
    assert 0 < found.withheld_gain_ns < REPLAY_ERROR_PCT / 100 * result.step_ns
    assert "within the replay's own error" in headline(result)


HELD_OUT = "../h200x2_nccl_15b"  # all nine jobs again over 15 steps, recorded after every constant here was set
HELD_OUT_JOBS = sorted(p.name for p in (JOBS.parent / "h200x2_nccl_15b").iterdir() if p.is_dir())


@pytest.mark.parametrize("job", HELD_OUT_JOBS)
def test_held_out_the_replayed_step_is_nearer_the_program_than_the_traced(job_of, job):
    """On a recording nothing was read from (`h200x2_nccl_15b`), each job's replayed step is nearer its CUDA-event
    step than the traced step is (over the nine: within 10% on 5, median 6.5%; traced on none, median 55%)."""
    result, truth = job_of(f"{HELD_OUT}/{job}"), timed_ns(f"{HELD_OUT}/{job}")
    assert abs(result.step_ns - truth) < abs(result.traced_step_ns - truth), (result.step_ns, truth)
    assert abs(result.traced_step_ns - truth) > 0.10 * truth


@pytest.mark.parametrize(
    "job, rank, cause",
    [
        ("gpt2.baseline", None, None),
        ("fsdp_gpt2.baseline", None, None),
        # the 10 ms sleep hides behind rank 0's GPU work: unprofiled, the job's step is the baseline's (+0.05 ms)
        ("gpt2.loader_delay", None, None),
        ("gpt2.slow_backward", 1, COMPUTE),
    ],
)
def test_held_out_gpt2_jobs_name_the_programs_straggler(job_of, job, rank, cause):
    """GPT-2's jobs on the held-out recording: the straggler the unprofiled timings show, or none; the matmul's gain
    within 25% of its own time measured alone."""
    found = job_of(f"{HELD_OUT}/{job}").straggler
    assert (found.rank, found.cause) == (rank, cause), found
    if rank is not None:
        with open(JOBS.parent / "h200x2_nccl_15b" / job / "timings.csv", newline="") as handle:
            injected_ns = 1e6 * max(float(row["injected_ms"]) for row in csv.DictReader(handle))
        assert abs(found.gain_ns - injected_ns) <= 0.25 * injected_ns, (found.gain_ns, injected_ns)


@pytest.mark.xfail(
    strict=True,
    reason="known miss: rank 1's host ran every operator 1.2-1.4x rank 0's under the "
    "profiler; the replay takes the same cost out of both, so the rest reads as rank 1's host",
)
@pytest.mark.parametrize("job", ["resnet50.baseline", "resnet50.p2p_disabled"])
def test_held_out_resnet_jobs_without_an_injection_name_no_straggler(job_of, job):
    assert job_of(f"{HELD_OUT}/{job}").straggler.rank is None
