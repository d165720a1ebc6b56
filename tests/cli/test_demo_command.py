"""`tracekit demo`, the README's first Quick start command, up to the point where it would start the dashboard."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import skip_or_fail

REPO = Path(__file__).resolve().parents[2]


def tracekit(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def test_demo_imports_the_samples_and_writes_a_report(tmp_path: Path) -> None:
    samples = REPO / "sample_traces"
    traces = sorted(samples.rglob("*.csv.gz"))
    if not traces:
        skip_or_fail("sample_traces/ holds no warp traces")
    db, report = tmp_path / "demo.sqlite", tmp_path / "demo.html"
    result = tracekit("demo", "--no-serve", "--db", str(db), "--report", str(report))
    assert result.returncode == 0, result.stderr
    imports = json.loads(tracekit("ls", "--json", "--db", str(db)).stdout)
    # Every trace, the reports' raw CSV exports and the Nsight Systems export.
    regions = [*samples.rglob("*.v2.gz"), *samples.rglob("*.chrome_trace.gz")]
    assert len(imports) == len(traces) + len(list(samples.rglob("*.raw.csv"))) + 1 + len(regions)
    assert {row["format"] for row in imports} == {
        "warp-trace",
        "ncu-csv",
        "nsys-sqlite",
        "region-trace",
        "proton-chrome",
        "ncu-source-csv",  # sample_traces/source_lines: Nsight Compute's Source page of each case
    }
    html = report.read_text()
    assert f"report of {sum(row['launch_count'] for row in imports):,} launches" in result.stdout
    assert "throughput-bound" in html and "latency-bound" in html
    # A second run finds what it imported already stored and adds nothing: one file of each format (the full set
    # again re-read and re-reported 1,209 launches for the same answer, a quarter of the suite's longest test).
    again_samples, one_per_format = tmp_path / "again", {row["format"]: row for row in imports}
    for row in one_per_format.values():
        source = REPO / row["source_path"]  # as the demo, run in the checkout, recorded it
        (again_samples / source.relative_to(samples).parent).mkdir(parents=True, exist_ok=True)
        (again_samples / source.relative_to(samples)).symlink_to(source)
    again = tracekit(
        "demo", "--no-serve", "--db", str(db), "--report", str(tmp_path / "again.html"), "--samples", str(again_samples)
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("already stored") == len(one_per_format) and "imported:" not in again.stdout
    assert json.loads(tracekit("ls", "--json", "--db", str(db)).stdout) == imports


def test_demo_without_samples_is_one_clear_line(tmp_path: Path) -> None:
    result = tracekit("demo", "--no-serve", "--db", str(tmp_path / "x.sqlite"), cwd=tmp_path)
    assert result.returncode == 2
    assert "no sample folder here" in result.stderr and "Traceback" not in result.stderr
