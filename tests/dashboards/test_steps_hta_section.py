"""The steps page shows HTA's trace analyses of the import (`tracekit features IMPORT`): the same tables, with the
DDP trace's collectives and their metadata (sample_traces/steps/h200, two ranks on H200s)."""

from __future__ import annotations

from pathlib import Path

from tests.dashboards.test_library import by_id
from tests.helpers import HTA_CUPTI_TRACE, real_export_path
from tracekit.analysis.trace_features import trace_features
from tracekit.api import TraceAnalysis
from tracekit.dashboards import pages_steps
from tracekit.importers.kineto import read_host_events
from tracekit.ingest import ingest
from tracekit.present import trace_features as hta
from tracekit.store import Store

DDP = Path(__file__).resolve().parents[2] / "sample_traces/steps/h200/ddp_rank0.pt.trace.json.gz"


def test_steps_page_shows_the_trace_analyses(sqlite_store: Store):
    result, _ = ingest(sqlite_store, DDP)
    page = pages_steps.layout(TraceAnalysis(sqlite_store), str(result.import_id))
    expected = hta.feature_tables(trace_features(read_host_events(DDP)))
    for index, table in enumerate(expected):
        shown = by_id(page, f"steps-hta-{index}")
        assert [c["name"] for c in shown.columns] == table.columns
        assert [[row[c] for c in table.columns] for row in shown.data] == table.rows
    collectives = by_id(page, "steps-hta-2").data
    assert {row["collective"] for row in collectives} == {"allreduce", "broadcast"}
    assert all(row["process group"] == "default_pg (0)" and row["ranks"] == "[0, 1]" for row in collectives)
    assert "Launch queue per stream" in str(by_id(page, "steps-hta"))


def test_against_a_baseline_the_page_diffs_the_operators(sqlite_store: Store):
    """The straggler run's rank 0 against the plain run's: the operator diff `tracekit diff` prints, on the page."""
    from tracekit.analysis.trace_features.diff import operator_diff

    straggler = DDP.parent / "ddp_straggler_rank0.pt.trace.json.gz"
    baseline, _ = ingest(sqlite_store, DDP)
    after, _ = ingest(sqlite_store, straggler)
    page = pages_steps.layout(TraceAnalysis(sqlite_store), str(after.import_id), None, str(baseline.import_id))
    expected = hta.diff_table(operator_diff(read_host_events(DDP), read_host_events(straggler)))
    shown = by_id(page, "steps-operator-diff")
    assert [[row[c] for c in expected.columns] for row in shown.data] == expected.rows
    assert "AccumulateGrad" in shown.data[0]["operator"]


def test_a_range_profiled_import_shows_its_kernel_counters(sqlite_store: Store):
    """HTA's CUPTI range-profiler trace has no step (no kernel activity): the page says why and shows the counters."""
    cupti = real_export_path(HTA_CUPTI_TRACE)
    result, _ = ingest(sqlite_store, cupti)
    page = pages_steps.layout(TraceAnalysis(sqlite_store), str(result.import_id))
    assert "CUPTI range profiler" in str(by_id(page, "steps-missing").children)
    expected = hta.feature_tables(trace_features(read_host_events(cupti)))
    assert expected[-2].title == "Kernel counters per operator (CUPTI range profiler)"
    for index, table in enumerate(expected):
        shown = by_id(page, f"steps-hta-{index}")
        assert [[row[c] for c in table.columns] for row in shown.data] == table.rows
    operators = by_id(page, f"steps-hta-{len(expected) - 2}").data
    assert operators[0]["operator"] == "aten::conv2d" and operators[0]["kernels"] == "38"


def test_a_trace_without_counters_shows_no_counter_table(sqlite_store: Store):
    result, _ = ingest(sqlite_store, DDP)
    page = pages_steps.layout(TraceAnalysis(sqlite_store), str(result.import_id))
    assert "Kernel counters" not in str(by_id(page, "steps-hta"))
