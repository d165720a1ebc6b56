"""The step analysis on a real Nsight Systems export (PyTorch with NVTX 'Iteration N' ranges, RTX A5000): busy
time against a union computed from the export's tables by plain SQL and Python."""

from __future__ import annotations

import sqlite3

import pytest

from tests.analysis.steps.independent import union_inside
from tracekit.analysis.steps import analyze_steps
from tracekit.analysis.steps.types import UNATTRIBUTED
from tracekit.importers.nsys_sqlite import read_host_events

EXPORT = "nsys_2025.3.2_RTXA5000_torch_overlap_noext"


def test_iterations_busy_and_causes(real_export):
    path = real_export(EXPORT)
    result = analyze_steps(read_host_events(path), "Iteration")
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
        intervals = [
            (int(a), int(b))
            for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY")
            for a, b in db.execute(f'SELECT start, "end" FROM {table}')
        ]
        marks = db.execute("SELECT COUNT(*) FROM NVTX_EVENTS WHERE text LIKE 'Iteration %'").fetchone()[0]
    assert len(result.steps) == marks == 20
    assert [s.label for s in result.steps] == [f"Iteration {i}" for i in range(20)]
    for step in result.steps:
        assert step.busy_ns == pytest.approx(union_inside(intervals, step.start_ns, step.end_ns), rel=0.01)
        assert sum(c.idle_ns for c in step.causes) == step.idle_ns
        assert next(c for c in step.causes if c.cause == UNATTRIBUTED).idle_ns <= 0.05 * step.idle_ns
    assert sum(s.kernels for s in result.steps) == 400 and sum(s.copies for s in result.steps) == 40
