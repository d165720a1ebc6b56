"""The README's quick start is what CI runs: its test command is the fast one, and `.ci/run` runs it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_quick_start_test_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick_start = readme[readme.index("## Quick start") : readme.index("## What it reads")]
    [command] = re.findall(r"^pip install -e '\.\[test\]' && (pytest.*)$", quick_start, re.MULTILINE)
    assert command == "pytest -n auto"  # one worker per core: about half the time of a bare `pytest`
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(rf"^step {re.escape(command)}( |$)", ci, re.MULTILINE), "CI no longer runs the README's command"
    assert "uv pip install -q --compile-bytecode -e '.[test]'" in ci  # the README's install, with uv
