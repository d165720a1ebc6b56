"""In CI a skip is a failure: tests/conftest.py turns any skipped test (or module) into a failed one when `CI`
is set, so a missing ../shared file, server, browser or package can never pass silently there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBE = """
import pytest

pytest.importorskip("a_module_that_does_not_exist_anywhere")


def test_never_collected():
    pass
"""
PROBE_TEST = """
import pytest


def test_skips():
    pytest.skip("a fixture file is absent")


def test_passes():
    pass
"""


def run(folder: Path, ci: bool, *options: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": "true"} if ci else {})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            # the probes need only tests.conftest: Hypothesis' and Dash's plugins took 3 of each run's 4.7 s
            "-p",
            "no:hypothesispytest",
            "-p",
            "no:dash",
            "-p",
            "tests.conftest",
            "-c",
            str(REPO / "pyproject.toml"),
            "--rootdir",
            str(REPO),
            *options,
            str(folder),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )


def test_skips_fail_in_ci_and_skip_outside(tmp_path):
    (tmp_path / "test_probe_skip.py").write_text(PROBE_TEST)
    ci = run(tmp_path, ci=True)
    assert ci.returncode == 1, ci.stdout
    assert "1 failed, 1 passed" in ci.stdout
    assert "skipped in CI, which must run every test: Skipped: a fixture file is absent" in ci.stdout
    local = run(tmp_path, ci=False)
    assert local.returncode == 0, local.stdout
    assert "1 passed, 1 skipped" in local.stdout


def test_module_skips_fail_in_ci(tmp_path):
    (tmp_path / "test_probe_module.py").write_text(PROBE)
    ci = run(tmp_path, ci=True)
    assert ci.returncode != 0, ci.stdout
    assert "ERROR test_probe_module.py - skipped in CI, which must run every test" in ci.stdout
    local = run(tmp_path, ci=False)
    assert local.returncode == 5 and "1 skipped" in local.stdout, local.stdout  # 5: no test ran, none failed


PROBE_GPU = """
import pytest


@pytest.mark.needs_gpu
def test_gpu():
    pytest.skip("needs an NVIDIA GPU")
"""


def test_a_needs_gpu_skip_stays_a_skip_in_ci(tmp_path):
    """The documented exemption (tests/conftest.py): CI has no GPU, so a `needs_gpu` test skips there too."""
    (tmp_path / "test_probe_gpu.py").write_text(PROBE_GPU)
    ci = run(tmp_path, ci=True)
    assert ci.returncode == 0, ci.stdout
    assert "1 skipped" in ci.stdout


def test_skips_fail_in_ci_with_the_tests_spread_over_workers(tmp_path):
    """.ci/run spreads the files over xdist workers: a skip in a worker, at run or at import, still fails there."""
    (tmp_path / "test_probe_skip.py").write_text(PROBE_TEST)
    (tmp_path / "test_probe_module.py").write_text(PROBE)
    (tmp_path / "test_probe_gpu.py").write_text(PROBE_GPU)
    ci = run(tmp_path, True, "-n", "2")  # --dist loadfile comes from pyproject.toml
    assert ci.returncode == 1, ci.stdout
    assert "bringing up nodes" in ci.stdout  # xdist ran it
    assert "skipped in CI, which must run every test: Skipped: a fixture file is absent" in ci.stdout
    assert "ERROR test_probe_module.py - skipped in CI, which must run every test" in ci.stdout
    summary = ci.stdout.splitlines()[-1]  # the needs_gpu skip stays a skip
    assert summary.startswith("1 failed, 1 passed, 1 skipped, ") and " 1 error in " in summary, summary
