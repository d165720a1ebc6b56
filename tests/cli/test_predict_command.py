"""`tracekit predict` over a recorded H100 sweep (sample_traces/sweeps): text, --json, and one-line refusals."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SWEEP = REPO / "sample_traces" / "sweeps" / "h100" / "sweep_gather.raw.csv.gz"


def tracekit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", *args], capture_output=True, text=True, timeout=300, cwd=REPO
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The random-gather sweep (16 launches) imported into a scratch store: launch 1 is 8 warps per SM."""
    folder = tmp_path_factory.mktemp("predict")
    raw = folder / "sweep_gather.raw.csv"
    with gzip.open(SWEEP, "rb") as src, raw.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    path = str(folder / "store.sqlite")
    done = tracekit("import", str(raw), "--db", path)
    assert done.returncode == 0, done.stderr
    return path


def test_text_names_speedup_interval_basis_and_steps(db: str) -> None:
    done = tracekit("predict", "launch:1", "--smem", "28160", "--db", db)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "launch 1: sweep_gather" in out and "smem 28160" in out
    assert "speed-up" in out and "interval" in out and "basis:" in out
    for step in ("occupancy:", "achieved:", "concurrency:", "waves:", "launch_rate:", "result:"):
        assert f"- {step}" in out


def test_json_fields_and_values(db: str) -> None:
    done = tracekit("predict", "launch:1", "--smem", "28160", "--json", "--db", db)
    assert done.returncode == 0, done.stderr
    [p] = json.loads(done.stdout)
    assert p["schema"] == "tracekit.prediction/1"
    assert p["current"]["theoretical_warps_per_sm"] == 8 and p["new"]["theoretical_warps_per_sm"] == 64
    got = p["predicted"]
    assert got["low"] <= got["speedup"] <= got["high"]
    assert got["duration_ns"] == pytest.approx(p["current_duration_ns"] / got["speedup"])
    # Measured on the H100: 1,055 us at 8 warps per SM, 649 us at 64 (timings.csv): 1.63x.
    assert got["speedup"] == pytest.approx(1.63, rel=0.10)
    assert p["basis"] and p["findings"][0]["step"] == "occupancy"


@pytest.mark.parametrize(
    ("args", "limit"),
    [
        (("--block", "2048"), "1024-thread limit"),
        (("--smem", "300000"), "bytes of shared memory per block"),
        (("--regs", "300"), "registers per thread"),
    ],
)
def test_impossible_configuration_is_one_line_exit_2(db: str, args: tuple[str, ...], limit: str) -> None:
    done = tracekit("predict", "launch:1", *args, "--db", db)
    assert done.returncode == 2
    assert limit in done.stderr and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
