"""The job analysis on SYNTHETIC jobs (tracekit.job.synthetic: a recorded DDP rank with one injected cause, clock
offsets up to 500 us): the straggler named with the right cause in >= 95% of the steps late beyond the noise, none
where none was injected, offsets within 10 us, a sampled rank flagged, and the gain the replay finds (the
straggler's cause at the others' median) within 5% of the delay of each step's true gain, the simulated job's step
with the injection less the same job's without it (the same draws). The synthetic host pays the profiler's cost of
its events, so the same holds for the job replayed without the profiler (`tracekit job`'s default), whose step is
the simulated program's without that cost. The map runs in this process here (the Dask path has its own tests);
every rank still goes through its gzipped trace file."""

from __future__ import annotations

import statistics
from dataclasses import replace

import polars as pl
import pytest

from tracekit.analysis.job.analysis import analyze_job
from tracekit.analysis.job.rank import rank_tables
from tracekit.analysis.job.types import COMMUNICATION, COMPUTE, LOADER, SYNC, JobResult
from tracekit.analysis.steps.calibration import shipped
from tracekit.job.read import read_rank
from tracekit.job.run import map_rank, reduce_job
from tracekit.job.synthetic import SyntheticJob, Template, collective_ends, load_template, offsets, write_job

EXPECTED = {"compute": COMPUTE, "loader": LOADER, "sync": SYNC, "link": COMMUNICATION}


@pytest.fixture(scope="module")
def small_template():
    return load_template(kernels_per_group=3)


def analyzed(job: SyntheticJob, folder, template) -> JobResult:
    tables = [rank_tables(read_rank(path)) for path in write_job(job, folder, template)]
    kernels = pl.concat([t.kernels for t in tables]).filter(~pl.col("collective"))
    kernel_time = kernels.group_by("rank", "step", "name").agg(
        (pl.col("end_ns") - pl.col("start_ns")).sum().alias("gpu_ns")
    )
    return analyze_job(
        pl.concat([t.summary for t in tables]),
        pl.concat([t.steps for t in tables]),
        pl.concat([t.collectives for t in tables]),
        lambda ranks: kernel_time.filter(pl.col("rank").is_in(ranks)),
    )


def step_ends_ns(job: SyntheticJob, template: Template) -> list[int]:
    """Each step's last all-reduce end on the latest rank, the lockstep simulated (true time)."""
    ends: list[int] = collective_ends(job, template)[:, :, -1].max(axis=0).tolist()
    return ends


def true_gains_ns(job: SyntheticJob, template: Template) -> list[int]:
    """Per step, what the job's step (from one step's last all-reduce end to the next's, the lockstep simulated)
    loses to the injection: its step time with it less without it (the same noise, offsets and jitter drawn)."""

    def step_ns(of: SyntheticJob) -> list[int]:
        ends = step_ends_ns(of, template)
        return [b - a for a, b in zip([0, *ends], ends, strict=False)]

    return [a - b for a, b in zip(step_ns(job), step_ns(replace(job, cause=None)), strict=True)]


def assert_gain_recovered(job: SyntheticJob, template: Template, result: JobResult) -> None:
    """Each step's replayed gain within 5% of the injected delay of the true gain (measured: within 72 us of 2 ms
    over these cases), the job's within 1% of the true mean; the true gain itself is the delay less what the next
    latest rank's own noise hides (0.91-1.0 of it here)."""
    truth = true_gains_ns(job, template)
    assert all(0.85 * job.delay_ns < t <= job.delay_ns + 10_000 for t in truth)
    found = [s.gain_ns for s in result.step_stragglers]
    assert all(abs(f - t) <= 0.05 * job.delay_ns for f, t in zip(found, truth, strict=True)), (found, truth)
    assert abs(result.straggler.gain_ns - sum(truth) / len(truth)) <= 0.01 * job.delay_ns


def offset_error_ns(job: SyntheticJob, result: JobResult) -> int:
    injected = offsets(job)
    assert max(abs(int(v)) for v in injected) > 100_000  # the offsets drawn are large, not all near zero
    return max(abs(clock.offset_ns - int(injected[clock.rank])) for clock in result.clocks)


@pytest.mark.parametrize(
    ("ranks", "cause"),
    [(8, "compute"), (8, "loader"), (8, "sync"), (8, "link"), (64, "compute"), (64, "link"), (512, "sync")],
)
def test_the_injected_straggler_and_cause_are_named(tmp_path, small_template, ranks, cause):
    job = SyntheticJob(ranks=ranks, steps=5, cause=cause, straggler=ranks - 3, delay_ns=2_000_000, seed=ranks)
    result = analyzed(job, tmp_path, small_template)
    late = [s for s in result.step_stragglers if s.spread_ns > s.noise_ns]
    assert len(late) == job.steps
    right = [s for s in late if s.rank == job.straggler and s.cause == EXPECTED[cause]]
    assert len(right) >= 0.95 * len(late)
    assert result.straggler.rank == job.straggler
    assert result.straggler.cause == EXPECTED[cause]
    assert_gain_recovered(job, small_template, result)
    assert offset_error_ns(job, result) <= 10_000
    if cause == "compute":
        assert result.step_stragglers[0].longer_kernels[0].excess_ns > 0.9 * job.delay_ns


@pytest.mark.parametrize("ranks", [8, 64])
def test_no_straggler_where_none_was_injected(tmp_path, small_template, ranks):
    job = SyntheticJob(ranks=ranks, steps=5, cause=None, seed=100 + ranks)
    result = analyzed(job, tmp_path, small_template)
    assert result.straggler.rank is None
    assert all(s.rank is None for s in result.step_stragglers)
    assert not any(c.significant for c in result.collectives)
    assert offset_error_ns(job, result) <= 10_000


def test_a_sampled_rank_is_flagged_and_its_dropped_spans_are_not_idle(tmp_path, small_template):
    job = SyntheticJob(ranks=8, steps=4, cause=None, sampled_rank=2, seed=5)
    result = analyzed(job, tmp_path, small_template)
    flagged = [c.rank for c in result.clocks if c.sampled]
    assert flagged == [2]
    sampled = next(c for c in result.clocks if c.rank == 2)
    # the second group's kernels (3 of them a step, dropped with their launches kept) leave one gap a step
    group_ns = sum(d for _, d in small_template.groups[1])
    assert sampled.missing_launches == 3 * job.steps
    assert abs(sampled.dropped_ns - job.steps * group_ns) < 0.1 * job.steps * group_ns
    cells = {(c.rank, c.step): c for c in result.cells}
    for step in range(job.steps):
        # its idle is that of an unsampled rank (the loader's), not the dropped gap's
        assert cells[(2, step)].idle_ns < cells[(3, step)].idle_ns + 200_000
        assert cells[(2, step)].dropped_ns > 0.9 * group_ns
    assert result.straggler.rank is None
    assert any("rank 2" in w and "not counted as idle" in w for w in result.warnings)


@pytest.mark.parametrize("cause", [*EXPECTED, None])
def test_two_ranks_judged_over_the_steps(tmp_path, small_template, cause):
    """Two ranks: the median arrival is their midpoint, so the straggler's variation is all the noise one
    collective has; the job's straggler is judged over the steps (a t test of each rank's lateness a step)."""
    job = SyntheticJob(ranks=2, steps=5, cause=cause, straggler=1, delay_ns=2_000_000, seed=3)
    result = analyzed(job, tmp_path, small_template)
    found = result.straggler
    if cause is None:
        assert found.rank is None and found.t < found.t_needed
        assert all(s.rank is None for s in result.step_stragglers)
        return
    assert found.rank == 1 and found.cause == EXPECTED[cause] and found.t > found.t_needed
    assert [s.rank for s in result.step_stragglers] == [1] * job.steps
    assert_gain_recovered(job, small_template, result)


def median_period_ns(job: SyntheticJob, template: Template) -> float:
    """The simulated job's median step as the loop's period (one step's last all-reduce end to the next's), as the
    job analysis measures its step."""
    ends = step_ends_ns(job, template)
    return statistics.median(b - a for a, b in zip(ends, ends[1:], strict=False))


@pytest.mark.parametrize(("ranks", "cause"), [(8, "compute"), (8, "loader"), (8, "sync"), (8, "link"), (64, None)])
def test_the_job_without_the_profiler_names_the_straggler_and_the_programs_step(tmp_path, small_template, ranks, cause):
    """`tracekit job`'s default path (each rank replayed without the profiler, the map run here rank by rank):
    the straggler, its cause and its gain as on the traced path, and the job's step the program's, not the
    traced one."""
    job = SyntheticJob(ranks=ranks, steps=5, cause=cause, straggler=ranks - 3, delay_ns=2_000_000, seed=ranks)
    parquet = tmp_path / "parquet"
    for position, path in enumerate(write_job(job, tmp_path / "ranks", small_template)):
        map_rank(str(path), position, str(parquet), shipped())
    result = reduce_job(parquet)
    assert result.unprofiled and result.calibration is not None and "shipped" in result.calibration
    program = median_period_ns(replace(job, profiler_cost=False), small_template)  # the same draws, no profiler
    # the profiler's cost is a visible part of the traced step, and the replay takes it out
    assert result.traced_step_ns > 1.01 * program
    assert abs(result.step_ns - program) <= 0.005 * result.step_ns
    assert abs(result.traced_step_ns - median_period_ns(job, small_template)) <= 0.005 * result.traced_step_ns
    if cause is None:
        assert result.straggler.rank is None
        assert all(s.rank is None for s in result.step_stragglers)
        return
    late = [s for s in result.step_stragglers if s.spread_ns > s.noise_ns]
    right = [s for s in late if s.rank == job.straggler and s.cause == EXPECTED[cause]]
    assert len(late) == job.steps and len(right) >= 0.95 * len(late)
    assert result.straggler.rank == job.straggler and result.straggler.cause == EXPECTED[cause]
    assert_gain_recovered(job, small_template, result)
