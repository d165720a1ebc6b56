"""`tracekit step` on real PyTorch profiler traces: the text and --json show the analysis' figures, bad input is
one line with exit code 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl

from tests.helpers import run_cli
from tracekit.analysis.steps import analyze_steps
from tracekit.importers.kineto import read_host_events

REPO = Path(__file__).resolve().parents[2]
TORCH_STEP = REPO / "sample_traces/torch_step/torch_step.pt.trace.json"


def tracekit(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=REPO)


def test_json_is_the_analysis(real_export):
    """--traced --json: the trace's own steps; plain --json holds the same as its `traced` member."""
    path = real_export("kineto_GH200_transformer.pt.trace.json")
    done = tracekit("step", str(path), "--traced", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    program = json.loads(tracekit("step", str(path), "--json").stdout)
    assert program["schema"] == "tracekit.program-steps/1" and program["traced"] == data
    expected = analyze_steps(read_host_events(path))
    assert data["schema"] == "tracekit.steps/1"
    assert [s["busy_ns"] for s in data["steps"]] == [s.busy_ns for s in expected.steps]
    assert [s["idle_ns"] for s in data["steps"]] == [s.idle_ns for s in expected.steps]
    for step in data["steps"]:
        assert sum(c["idle_ns"] for c in step["causes"]) == step["idle_ns"]
        assert abs(step["busy_pct"] - 100 * step["busy_ns"] / step["span_ns"]) < 1e-9


def test_text_names_steps_causes_and_fixes(real_export):
    done = tracekit("step", str(real_export("kineto_GH200_transformer.pt.trace.json")))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "3 steps (ProfilerStep)" in out
    for label in ("ProfilerStep#7", "ProfilerStep#8", "ProfilerStep#9"):
        assert label in out
    assert "Idle time by cause" in out and "GPU time by category:" in out and "what to try first" in out


def test_named_step_and_two_traces_as_ranks():
    done = tracekit("step", str(TORCH_STEP), str(TORCH_STEP), "--step", "step", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["schema"] == "tracekit.step-ranks/1"
    assert [r["detected_by"] for r in data["ranks"]] == ["range step", "range step"]
    (aligned,) = data["aligned"]
    assert aligned["spread_ns"] == 0 and aligned["straggler"] is None  # same trace twice, no communication


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    for args, message in (
        ((str(TORCH_STEP), "--step", "forward"), "no range named 'forward'"),
        ((str(REPO / "sample_traces/torch_step/torch_step.raw.csv"),), "has no host timeline"),
        ((str(tmp_path / "absent.json"),), "no such file"),
    ):
        done = tracekit("step", *args)
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], done.stderr
        assert "Traceback" not in done.stderr


def test_a_stored_import_is_a_source_and_is_deleted_with_it(tmp_path):
    """`tracekit import` keeps a trace's host timeline: `tracekit step IMPORT` shows the file's figures; an import
    without one is one line; `tracekit rm` removes it with the import."""
    import sqlite3

    db = str(tmp_path / "store.sqlite")
    raw = REPO / "sample_traces/torch_step/torch_step.raw.csv"
    done = tracekit("import", str(TORCH_STEP), str(raw), "--db", db)
    assert done.returncode == 0, done.stderr
    from_file = json.loads(tracekit("step", str(TORCH_STEP), "--json").stdout)
    stored = tracekit("step", "1", "--json", "--db", db)
    assert stored.returncode == 0, stored.stderr
    from_import = json.loads(stored.stdout)
    assert from_import["unprofiled"]["steps"] == from_file["unprofiled"]["steps"]
    assert from_import["traced"]["steps"] == from_file["traced"]["steps"]
    assert from_import["setting"] == from_file["setting"] and from_import["calibration"] == from_file["calibration"]
    refused = tracekit("step", "import:2", "--db", db)
    assert refused.returncode == 2 and "holds no host timeline" in refused.stderr
    assert tracekit("rm", "1", "--db", db).returncode == 0
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT COUNT(*) FROM host_event_chunks").fetchone() == (0,)


def test_a_stored_import_keeps_what_the_profiler_recorded(tmp_path):
    """A trace recorded with record_shapes warns that the profiler may cause its launch-bound idle; stored with
    `tracekit import`, `tracekit step IMPORT` gives the same warnings as the file."""
    trace = REPO / "sample_traces/steps/h200/resnet_baseline.pt.trace.json.gz"
    db = str(tmp_path / "store.sqlite")
    assert tracekit("import", str(trace), "--db", db).returncode == 0
    from_file = json.loads(tracekit("step", str(trace), "--json").stdout)
    from_import = json.loads(tracekit("step", "1", "--json", "--db", db).stdout)
    assert any("record_shapes" in w for w in from_file["traced"]["warnings"])
    assert from_import["traced"]["warnings"] == from_file["traced"]["warnings"]
    assert from_import["setting"] == from_file["setting"] == "shapes"


def test_a_gloo_job_communicates_on_host_threads():
    """Gloo runs each collective on a worker thread of the host (its `gloo:all_reduce` range), no kernel on the GPU:
    those count as the step's communication. On the dry run's loader delay (sample_traces/jobs: rank 1 sleeps 10 ms
    before each step; unprofiled, the job's step is 15 ms longer than the baseline's), rank 1 is the rank the other
    waits for in every step, and rank 0's wait is longer than any in the baseline."""
    from tracekit.importers.kineto import read_host_events

    jobs = REPO / "sample_traces/jobs/h200_gloo_dryrun"
    waits = {}
    for job in ("resnet50.loader_delay", "resnet50.baseline"):
        done = tracekit("step", str(jobs / job), "--json")
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        for rank, result in enumerate(data["ranks"]):
            worker = read_host_events(jobs / job / f"rank{rank}.pt.trace.json.gz").ranges.filter(
                (pl.col("domain") == "user_annotation") & pl.col("name").str.starts_with("gloo:")
            )
            for step in result["steps"]:
                inside = worker.filter((pl.col("start_ns") >= step["start_ns"]) & (pl.col("end_ns") <= step["end_ns"]))
                longest = int((inside["end_ns"] - inside["start_ns"]).max() or 0)
                assert inside.height and longest <= step["communication_ns"] <= step["span_ns"]
        aligned = data["aligned"]
        assert all(a["straggler"] is not None for a in aligned)
        waits[job] = [max(r["communication_wait_ns"] for r in a["ranks"]) for a in aligned]
        if job == "resnet50.loader_delay":
            assert [a["straggler"] for a in aligned] == [1] * 5
    assert min(waits["resnet50.loader_delay"]) > max(waits["resnet50.baseline"])
