"""The job analysis on REAL ranks: issue 46's DDP dry run (sample_traces/jobs/h200_gloo_dryrun: 2 ranks sharing one
H200 over gloo, so every collective runs on host threads; rank 1 is the injected one). Its README gives what was
injected and the unprofiled step times: only the 10 ms loader delay moves the job's step beyond the run-to-run
spread, so only there is a straggler to name."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from tracekit.analysis.job.analysis import analyze_job
from tracekit.analysis.job.rank import RankTables, needs_host_collectives, rank_tables
from tracekit.analysis.job.types import JobResult
from tracekit.job.host_comms import read_host_collectives
from tracekit.job.read import read_rank

JOBS = Path(__file__).resolve().parents[2] / "sample_traces" / "jobs" / "h200_gloo_dryrun"
NO_STRAGGLER = ("resnet50.baseline", "resnet50.slow_backward", "gpt2.baseline", "gpt2.slow_backward")
STEPS = 5


@cache
def tables(job: str) -> tuple[RankTables, ...]:
    found = []
    for path in sorted((JOBS / job).glob("rank*.pt.trace.json.gz")):
        frames = read_rank(path)
        assert needs_host_collectives(frames)  # gloo: no NCCL kernel on the GPU
        found.append(rank_tables(frames, read_host_collectives(path)))
    return tuple(found)


@cache
def analyzed(job: str) -> JobResult:
    ranks = tables(job)
    kernels = pl.concat([t.kernels for t in ranks]).filter(~pl.col("collective"))
    kernel_time = kernels.group_by("rank", "step", "name").agg(
        (pl.col("end_ns") - pl.col("start_ns")).sum().alias("gpu_ns")
    )
    return analyze_job(
        pl.concat([t.summary for t in ranks]),
        pl.concat([t.steps for t in ranks]),
        pl.concat([t.collectives for t in ranks]),
        lambda wanted: kernel_time.filter(pl.col("rank").is_in(wanted)),
    )


@pytest.mark.parametrize(("job", "per_step"), [("resnet50.loader_delay", 5), ("gpt2.baseline", 13)])
def test_the_gloo_all_reduces_are_read_from_the_host_and_matched(job, per_step):
    """DDP's gradient buckets: one c10d::allreduce_ and one gloo:all_reduce range each; the buffers' broadcasts
    (rooted) left out; the copies to the host and back counted as the collectives' work, not computation."""
    for rank in tables(job):
        collectives = rank.collectives
        assert collectives.height == per_step * STEPS
        assert set(collectives["collective"]) == {"allreduce"}
        assert set(collectives["process_group"]) == {"0"}  # distributedInfo's one process group
        assert (collectives["end_ns"] > collectives["start_ns"]).all()
        assert collectives.group_by("step").len()["len"].to_list() == [per_step] * STEPS
        copies = rank.kernels.filter("collective")
        assert copies.height >= 2 * per_step * STEPS and set(copies["kind"]) == {"memcpy"}
    result = analyzed(job)
    assert result.matched_by == "order"
    assert [c.collectives for c in result.clocks] == [per_step * STEPS] * 2


@pytest.mark.parametrize("job", ["resnet50.loader_delay", "gpt2.baseline"])
def test_event_records_are_launches_without_activity_not_dropped_events(job):
    """The calls are classed as the step analysis classes them (`steps.calls`): cudaEventRecord is a launch there,
    but it enqueues a marker, which no profiler records as GPU activity, so it never counts as a launch whose
    activity the profiler dropped (it did, 115-195 a rank, when the job read it as one: both ranks flagged sampled,
    70-500 ms of their GPU gaps not counted as idle)."""
    for path in sorted((JOBS / job).glob("rank*.pt.trace.json.gz")):
        calls = read_rank(path).calls
        assert calls.filter((pl.col("kind") == "launch") & (pl.col("name") == "cudaEventRecord")).height > 100
    result = analyzed(job)
    assert all(c.missing_launches == 0 and not c.sampled and c.dropped_ns == 0 for c in result.clocks)
    assert not any("launches have no GPU activity" in w for w in result.warnings)


@pytest.mark.parametrize("job", ["resnet50.loader_delay", "resnet50.item_sync", *NO_STRAGGLER])
def test_two_processes_on_one_host_share_one_clock(job):
    """Both ranks ran on one machine: the offset the collectives' ends give is near zero (their ends on the two
    ranks differ by tens to hundreds of microseconds, gloo's worker threads waking at different moments)."""
    clocks = analyzed(job).clocks
    assert clocks[0].offset_ns == 0
    assert abs(clocks[1].offset_ns) < 100_000


def test_the_delayed_loader_is_named_with_a_host_cause():
    """Rank 1 sleeps 10 ms before each step: it arrives last at the first buckets' all-reduces of every step,
    a host cause (no DataLoader range in the trace: GPU idle while the host runs no traced work)."""
    result = analyzed("resnet50.loader_delay")
    straggler = result.straggler
    assert straggler.rank == 1 and straggler.candidate == 1
    assert straggler.cause_group == "host"
    assert straggler.t > straggler.t_needed
    assert straggler.late_per_step_ns > 500_000
    assert straggler.steps_named == STEPS and straggler.share > 0.8
    for step in result.step_stragglers:
        assert step.rank == 1 and step.cause is not None
        assert step.causes[0].cause == step.cause and step.causes[0].excess_ns > 0
    # the host's excess in the steps' windows, summed: about the sleep in most steps
    host = sorted(s.causes[0].excess_ns for s in result.step_stragglers)
    assert host[STEPS // 2] > 5_000_000
    # the job's step with rank 1's host time set to rank 0's, replayed: some of the 10 ms sleep in every step (rank 0
    # had the shared GPU to itself meanwhile and got ahead, so its own host time in the windows is long too), never
    # more than the sleep; unprofiled, the job's step is 15 ms longer than the baseline's (the README's timings)
    assert all(0 < s.gain_ns < 10_000_000 for s in result.step_stragglers)
    assert 1_000_000 < straggler.gain_ns < 10_000_000


@pytest.mark.parametrize("job", NO_STRAGGLER)
def test_no_straggler_where_the_injection_is_within_the_noise(job):
    """Baselines, and a 2.7 ms matmul inside gloo's all-reduce variation: no rank is late consistently."""
    straggler = analyzed(job).straggler
    assert straggler.rank is None and straggler.cause is None and straggler.gain_ns == 0
    assert straggler.t < straggler.t_needed


def test_the_host_sync_is_the_latest_rank_but_within_its_variation():
    """`loss.item()` every step on rank 1: it is the latest rank on average (last at the first buckets in most
    steps) but its lateness varies from 0.3 to 10 ms a step, so the job names no straggler."""
    straggler = analyzed("resnet50.item_sync").straggler
    assert straggler.rank is None
    assert straggler.candidate == 1 and straggler.late_per_step_ns > 0
    assert 0 < straggler.t < straggler.t_needed


def test_the_cli_names_the_straggler_of_the_real_job():
    done = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "job", str(JOBS / "resnet50.loader_delay"), "--workers", "1"]
        + ["--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["ranks"] == 2 and found["steps"] == STEPS
    assert found["straggler"]["rank"] == 1 and found["straggler"]["cause_group"] == "host"
    assert found["matched_by"] == "order"
    assert abs(found["clocks"][1]["offset_ns"]) < 100_000
    assert all(step["rank"] == 1 for step in found["step_stragglers"])


def test_ranks_with_no_collective_are_one_line_and_exit_2(tmp_path):
    """Two traces of a single-GPU program (no NCCL kernel, no c10d call): nothing to line up, said in one line."""
    single = Path(__file__).resolve().parents[2] / "sample_traces" / "torch_step" / "torch_step.pt.trace.json"
    for rank in (0, 1):
        (tmp_path / f"rank{rank}.pt.trace.json").write_bytes(single.read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "job", str(tmp_path), "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("tracekit: error:")]
    assert errors == [
        "tracekit: error: no rank's trace holds a collective (an NCCL kernel, or a gloo c10d call and its worker "
        "range): nothing to line the ranks up on"
    ]


def test_two_steps_are_too_few_to_name_a_straggler():
    """The loader delay's first two steps alone: rank 1 is still last in each, but two steps give no step-to-step
    variation to judge it against, so the job names no straggler and says why."""
    ranks = tables("resnet50.loader_delay")
    kept = pl.col("step").is_in([2, 3])
    result = analyze_job(
        pl.concat([t.summary for t in ranks]),
        pl.concat([t.steps.filter(kept) for t in ranks]),
        pl.concat([t.collectives.filter(kept) for t in ranks]),
        lambda wanted: pl.DataFrame(schema={"rank": pl.Int64, "step": pl.Int64, "name": pl.Utf8, "gpu_ns": pl.Int64}),
    )
    assert result.steps == 2 and result.straggler.rank is None
    assert result.straggler.candidate == 1 and result.straggler.late_per_step_ns > 0
    assert any("too few to judge" in w for w in result.warnings)
