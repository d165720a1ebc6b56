"""`tracekit report` of a trace import carries HTA's trace analyses after the steps, in HTML and Markdown: the
same tables as `tracekit features IMPORT` (`tracekit.present.trace_features`), escaped as the rest of each report."""

from __future__ import annotations

import html
import subprocess
from pathlib import Path

from tests.helpers import HTA_CUPTI_TRACE, real_export_path, run_cli
from tracekit.analysis.trace_features import trace_features
from tracekit.importers.kineto import read_host_events
from tracekit.present import trace_features as hta
from tracekit.reports.markdown import md

REPO = Path(__file__).resolve().parents[2]
DDP = REPO / "sample_traces/steps/h200/ddp_rank0.pt.trace.json.gz"


def tracekit(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=REPO)


def test_both_reports_show_the_trace_analyses(tmp_path):
    db = str(tmp_path / "store.sqlite")
    assert tracekit("import", str(DDP), "--db", db).returncode == 0
    tables = hta.feature_tables(trace_features(read_host_events(DDP)))
    page_path, text_path = tmp_path / "report.html", tmp_path / "report.md"
    done = tracekit("report", "import:1", "--db", db, "--output", str(page_path))
    assert done.returncode == 0, done.stderr
    page = page_path.read_text()
    section = page[page.index('<section class="trace-features">') :]
    assert "Import 1: trace analyses (as HTA has them)" in section
    for table in tables:
        assert f"<h3>{html.escape(table.title)}</h3>" in section
        for row in table.rows:
            assert all(html.escape(cell) in section for cell in row)
    assert "default_pg (0)" in section
    done = tracekit("report", "import:1", "--db", db, "--format", "md", "--output", str(text_path))
    assert done.returncode == 0, done.stderr
    text = text_path.read_text()
    section = text[text.index("### Import 1: trace analyses (as HTA has them)") :]
    for table in tables:
        assert md(table.title) in section
    collectives = next(t for t in tables if t.title == "Collectives")
    assert all(md(row[2]) in section and md(row[6]) in section for row in collectives.rows)


def test_a_range_profiled_import_reports_its_kernel_counters(tmp_path):
    """HTA's CUPTI range-profiler trace: no launch, no step, but both reports show its kernel counters (the tables
    `tracekit features` shows); the DDP trace, recorded without the range profiler, has no counter table."""
    cupti = real_export_path(HTA_CUPTI_TRACE)
    db = str(tmp_path / "store.sqlite")
    assert tracekit("import", str(cupti), "--db", db).returncode == 0
    assert tracekit("import", str(DDP), "--db", db).returncode == 0
    counters = hta.counter_tables(trace_features(read_host_events(cupti)))
    assert [t.title for t in counters][0] == "Kernel counters per operator (CUPTI range profiler)"
    page_path, text_path = tmp_path / "report.html", tmp_path / "report.md"
    done = tracekit("report", "import:1", "import:2", "--db", db, "--output", str(page_path))
    assert done.returncode == 0, done.stderr
    page = page_path.read_text()
    first = page[page.index("Import 1: trace analyses (as HTA has them)") : page.index("Import 2: trace analyses")]
    second = page[page.index("Import 2: trace analyses (as HTA has them)") :]
    for table in counters:
        assert f"<h3>{html.escape(table.title)}</h3>" in first
        for row in table.rows:
            assert all(html.escape(cell) in first for cell in row)
    assert "Kernel counters" not in second
    done = tracekit("report", "import:1", "--db", db, "--format", "md", "--output", str(text_path))
    assert done.returncode == 0, done.stderr
    text = text_path.read_text()
    section = text[text.index("### Import 1: trace analyses (as HTA has them)") :]
    assert all(md(table.title) in section for table in counters)
    assert md(counters[0].rows[0][0]) in section and md(counters[0].rows[0][-1]) in section
