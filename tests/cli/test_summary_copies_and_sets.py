"""`tracekit summary` and `tracekit step` count the same copies and sets of an nsys export: the memsets too,
counted here from the export's tables with sqlite3."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.helpers import run_cli


def _count(path, table: str) -> int:
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True) as connection:
        return int(connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


@pytest.mark.parametrize(
    "name", ["nsys_2026.1_RTX5080_copies_no_kernels.sqlite", "nsys_2022.1_RTX2070S_dlprof_training.sqlite"]
)
def test_summary_and_step_count_the_same_copies_and_sets(real_export, tmp_path, name):
    path = real_export(name)
    copies, sets = _count(path, "CUPTI_ACTIVITY_KIND_MEMCPY"), _count(path, "CUPTI_ACTIVITY_KIND_MEMSET")
    assert sets > 0
    summary = run_cli("summary", "--db", str(tmp_path / "store.db"), "--json", str(path))
    assert summary.returncode == 0, summary.stderr
    [rows] = json.loads(summary.stdout)
    by_kind = {row["name"]: row["count"] for row in rows["memcpys"]}
    assert by_kind.pop("Memset") == sets
    assert sum(by_kind.values()) == copies
    step = run_cli("step", "--traced", "--json", str(path))
    assert step.returncode == 0, step.stderr
    steps = json.loads(step.stdout)["steps"]
    assert sum(s["copies"] for s in steps) == copies and sum(s["sets"] for s in steps) == sets
