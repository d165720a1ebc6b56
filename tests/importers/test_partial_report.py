"""A report whose last launch was cut off (the application ended mid-profile): every good launch imports, the
broken one is kept marked incomplete with one warning line, and its analysis says what it lacks."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tracekit.importers import read_file

REPORT = "ncu_rep_2025_RTX5060Ti_occupancy_45launches_windows.ncu-rep"


def _durations(path) -> list[float]:
    """Each action's gpu__time_duration.sum straight from ncu_report, independently of the reader."""
    ncu_report = pytest.importorskip("ncu_report")
    context = ncu_report.load_report(str(path))
    values = []
    for range_index in range(context.num_ranges()):
        report_range = context.range_by_idx(range_index)
        for action_index in range(report_range.num_actions()):
            metric = report_range.action_by_idx(action_index).metric_by_name("gpu__time_duration.sum")
            values.append(math.nan if metric is None else metric.as_double())
    return values


def test_cut_off_launch_is_kept_marked_incomplete(real_export, tmp_path):
    path = real_export(REPORT)
    durations = _durations(path)
    assert len(durations) == 45 and math.isnan(durations[-1]) and not any(map(math.isnan, durations[:-1]))
    parsed = read_file(path)
    assert parsed.launches.height == 45
    assert parsed.launches["duration_ns"][:44].to_list() == pytest.approx(durations[:44])
    last = parsed.launches.row(44, named=True)
    assert last["duration_ns"] is None and last["grid_x"] is None and last["block_x"] is None
    assert [w for w in parsed.warnings if "did not finish" in w] == [
        "launch 45 of 45 (ID 44, transposeMatrixOccupancyOptimized(float *, float *, int, int)) has no duration, "
        "grid or block: ncu's profiling of it did not finish; imported marked incomplete"
    ]
    db = tmp_path / "s.sqlite"
    run = [sys.executable, "-m", "tracekit.cli.main"]
    done = subprocess.run([*run, "import", str(path), "--db", str(db)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # one warning line for the cut-off launch (and one saying the report has no source counters: issue 45)
    warnings = done.stderr.splitlines()
    assert "45 launches" in done.stdout and sum("did not finish" in w for w in warnings) == 1
    assert all(w.startswith("tracekit: warning: ") for w in warnings) and len(warnings) == 2
    done = subprocess.run(
        [*run, "analyze", "launch:45", "--json", "--db", str(db)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)[0]
    assert result["duration_ns"] is None and result["kernel"]["grid"] == [None, None, None]
    verdict = result["classification"]
    assert verdict["flags"][0] == "incomplete-launch"
    assert verdict["evidence"][0].startswith("The launch's profile is incomplete: the report holds no duration, grid")
    # what it lacks is data on the source (the engine writes no sentence); present words it first
    assert verdict["evidence"][0] == f"The launch's profile is incomplete: {result['source']['incomplete_launch']}."
    assert not any(rule["name"] == "IncompleteLaunch" for rule in verdict["nsight_rules"])  # not one of Nsight's
    done = subprocess.run(
        [*run, "analyze", "launch:44", "--json", "--db", str(db)], capture_output=True, text=True, timeout=300
    )
    assert "incomplete-launch" not in json.loads(done.stdout)[0]["classification"]["flags"]  # a finished launch
