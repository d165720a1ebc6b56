"""The held-out source-lines cases (sample_traces/source_lines/heldout_cases.csv, issue 45): added after the analysis
was tuned on cases.csv, to be recorded on the GPU machine with `make_source_lines.sh OUT_DIR heldout`. Until they
are recorded, what can be checked here is that each case is complete: its problem and fixed lines marked in its own
source file, both kernels launched under its name by heldout_main.cu, its kind one the evaluation knows."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

SET = Path(__file__).resolve().parents[2] / "sample_traces" / "source_lines"
LAUNCH = re.compile(r'launches\.push_back\(\{"(\w+)", "(before|after)", "(\w+)"')
MARKER = re.compile(r"\[(\w+): (limiter|fixed)\]")


def _cases(name: str) -> list[dict[str, str]]:
    return list(csv.DictReader((SET / name).read_text().splitlines()))


def _marker_files() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted((SET / "src").glob("*.cu")):
        for case, role in MARKER.findall(path.read_text()):
            found.setdefault((case, role), []).append(path.name)
    return found


def test_held_out_cases_are_new_and_cover_the_kinds() -> None:
    heldout, tuned = _cases("heldout_cases.csv"), _cases("cases.csv")
    assert {c["case"] for c in heldout}.isdisjoint({c["case"] for c in tuned})
    assert {c["kind"] for c in heldout} >= {"divergence", "bank conflict", "uncoalesced access", "dependency chain"}
    assert {c["kind"] for c in heldout} <= {c["kind"] for c in tuned}
    assert all(c["source"] for c in heldout)


def test_each_held_out_case_marks_its_lines_in_a_file_of_its_own() -> None:
    marks = _marker_files()
    tuned_files = {f for c in _cases("cases.csv") for role in ("limiter", "fixed") for f in marks[(c["case"], role)]}
    for case in _cases("heldout_cases.csv"):
        for role in ("limiter", "fixed"):
            [file] = marks[(case["case"], role)]  # exactly one marker of each role
            assert file.startswith("heldout_") and file not in tuned_files, (case["case"], file)


def test_heldout_main_launches_both_kernels_of_each_case() -> None:
    launched = LAUNCH.findall((SET / "src" / "heldout_main.cu").read_text())
    variants = {(case, variant) for case, variant, _ in launched}
    for case in _cases("heldout_cases.csv"):
        assert {(case["case"], "before"), (case["case"], "after")} <= variants, case["case"]
    kernels = [kernel for _, _, kernel in launched]
    assert len(kernels) == len(set(kernels))  # each kernel once: ncu's per-kernel exports need distinct names


def test_evaluate_without_a_recording_says_so_in_one_line(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(SET / "evaluate.py"), str(SET / "heldout_cases.csv"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    assert run.stderr.strip() == f"evaluate.py: {tmp_path / 'timings.csv'} not found"
    assert run.stdout == ""
