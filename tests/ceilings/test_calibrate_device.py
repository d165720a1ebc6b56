"""`tracekit calibrate` on a real GPU: a short run (--quick) through the real CLI, its profile read back.

Needs an NVIDIA GPU and nvcc. CI has no GPU, so without one this test skips and says why; it is marked `needs_gpu`,
the one skip tests/conftest.py lets pass in CI (no CI runner has a GPU). It runs on the GPU machine
(see docs/ceilings.md, "How the shipped profiles were measured")."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tracekit.ceilings import ceilings_for
from tracekit.ceilings.calibrate import find_nvcc, query_gpu

REPO = Path(__file__).resolve().parents[2]


def _gpu_or_skip() -> dict[str, str]:
    gpu = query_gpu(["name", "compute_cap"])
    if gpu is None:
        reason = "needs an NVIDIA GPU (nvidia-smi sees none here): tracekit calibrate measures a real device"
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    if find_nvcc() is None:
        reason = "needs nvcc (the CUDA toolkit) to build calibrate's benchmarks"
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    return gpu


@pytest.mark.needs_gpu
def test_quick_calibrate_measures_this_gpu(tmp_path: Path) -> None:
    gpu = _gpu_or_skip()
    profile_path, raw_path = tmp_path / "profile.json", tmp_path / "raw.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracekit.cli.main",
            "calibrate",
            "--quick",
            "-o",
            str(profile_path),
            "--raw",
            str(raw_path),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "calibrate: DRAM streams" in done.stderr  # progress on stderr
    profile = ceilings_for(None, None, override=profile_path)
    assert profile.device_name == gpu["name"] and profile.compute_capability == gpu["compute_cap"]
    assert profile.source == f"measured: {profile_path.name}"
    for name in ("dram_stream_bytes_per_s", "dram_random_sector_bytes_per_s", "fp32_flop_per_s", "fp64_flop_per_s"):
        ceiling = getattr(profile, name)
        assert ceiling is not None and ceiling.value > 0, name
        if ceiling.nominal is not None:  # achievable, never above the datasheet (5% for clock and rounding)
            assert ceiling.value <= 1.05 * ceiling.nominal, (name, ceiling)
    stream, scattered = profile.dram_stream_bytes_per_s, profile.dram_random_sector_bytes_per_s
    assert stream is not None and scattered is not None and scattered.value < stream.value
    assert profile.l2_bytes_per_s is not None and profile.l2_bytes_per_s.value > stream.value
    assert profile.shared_bytes_per_s is not None and profile.shared_bytes_per_s.value > profile.l2_bytes_per_s.value
    assert set(profile.block_launch_per_s_per_sm) == {32, 64, 128, 256, 512, 1024}
    assert profile.launch_overhead_s is not None and 1e-7 < profile.launch_overhead_s.value < 1e-4
    assert profile.tensor_flop_per_s.get("fp16") is not None
    curve = profile.dram_latency_curve
    assert len(curve) >= 3 and curve[-1].latency_ns > curve[0].latency_ns  # loaded latency grows with throughput
    assert profile.dram_unloaded_latency_ns is not None and 200 < profile.dram_unloaded_latency_ns.value < 3000
    raw = json.loads(raw_path.read_text())
    assert raw["quick"] is True and raw["command"].startswith("tracekit calibrate --quick")
    assert all(len(p["seconds"]) >= 2 for p in raw["points"] if "seconds" in p)
    shown = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "ceilings", "--ceilings", str(profile_path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["source"] == f"measured: {profile_path.name}"


def test_calibrate_refuses_in_one_line_without_a_gpu_or_nvcc(tmp_path: Path) -> None:
    """Where there is no GPU (CI), the refusal is one line and exit 2; with a GPU this checks nothing more."""
    if query_gpu(["name"]) is not None and find_nvcc() is not None:
        return
    done = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "calibrate", "-o", str(tmp_path / "p.json")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracekit: error: calibrate needs ")
    assert not (tmp_path / "p.json").exists()
    assert shutil.which("nvidia-smi") is None or "GPU" in lines[0] or "nvcc" in lines[0]
