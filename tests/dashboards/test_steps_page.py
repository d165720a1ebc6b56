"""The steps page over a real store: the same figures as `tracekit step IMPORT`, the timeline's lanes and idle gaps
coloured by cause, names from the trace as text; a bad or missing import is a not-found page."""

from __future__ import annotations

from pathlib import Path

from tests.dashboards.test_app import plotted
from tests.dashboards.test_library import by_id
from tracekit.api import TraceAnalysis
from tracekit.dashboards import pages_steps
from tracekit.ingest import ingest
from tracekit.present import steps as present
from tracekit.steps import compared, program_of
from tracekit.store import Store

H200 = Path(__file__).resolve().parents[2] / "sample_traces/steps/h200"
# the GPU-bound batch-512 recording: its .item() sync leaves the GPU idle in every step
H200_B512 = H200.parent / "h200_b512"


def test_steps_page_shows_the_analysis(sqlite_store: Store):
    result, _ = ingest(sqlite_store, H200_B512 / "resnet_item_sync.pt.trace.json.gz")
    ref = str(result.import_id)
    page = pages_steps.layout(TraceAnalysis(sqlite_store), ref)
    program = program_of(ref, None, sqlite_store)
    expected = program.unprofiled  # the page shows the step as the program runs it
    assert by_id(page, "steps-program").children == present.program_headline(program)
    assert by_id(page, "steps-table").data == present.step_rows(expected)
    step = expected.steps[expected.representative_step]
    assert by_id(page, "steps-causes").data == present.cause_rows(step)
    assert by_id(page, "steps-heading").children == present.step_heading(step)
    timeline = plotted(by_id(page, "steps-timeline").figure)
    names = {trace.name for trace in timeline.data}
    # replayed without the profiler the host issues ahead of this GPU-bound step: its idle is the .item() sync's
    assert {"idle: synchronization", "convolution", "launch call"} <= names
    lanes = {y for trace in timeline.data for y in trace.y}
    assert "GPU idle" in lanes and any(lane.startswith("stream ") for lane in lanes)
    assert any(lane.startswith("thread ") for lane in lanes)
    breakdown = plotted(by_id(page, "steps-breakdown").figure)
    idle = sum(t.x[0] for t in breakdown.data if t.y[0] == "idle by cause")
    assert abs(idle - step.idle_ns / 1e6) < 1e-9
    # kernel names reach the figure escaped (plotly reads a subset of HTML in hover text)
    hover = [c[0] for trace in timeline.data for c in (trace.customdata or [])]
    assert hover and not any("<" in text for text in hover)


def test_chooser_and_refusals(sqlite_store: Store):
    ingest(sqlite_store, H200 / "llama_small_cudagraph.pt.trace.json.gz")
    chooser = pages_steps.layout(TraceAnalysis(sqlite_store), None)
    assert "import 1" in str(chooser)
    assert "not an import id" in str(pages_steps.layout(TraceAnalysis(sqlite_store), "x"))
    assert "no import with id 9" in str(pages_steps.layout(TraceAnalysis(sqlite_store), "9"))


def test_the_page_states_the_critical_path_as_the_cli_does(sqlite_store: Store):
    result, _ = ingest(sqlite_store, H200 / "llama_large_eager.pt.trace.json.gz")
    ref = str(result.import_id)
    line = by_id(pages_steps.layout(TraceAnalysis(sqlite_store), ref), "steps-critical-path").children
    assert line == present.critical_path_line(program_of(ref, None, sqlite_store).unprofiled)
    assert line.startswith("critical path: ") and "stream" in line


def test_a_step_against_its_baseline_shows_what_the_cli_shows(sqlite_store: Store):
    """/steps?import=A&baseline=B: the comparison's headline and table are `tracekit step A --baseline B`'s, the
    built-in .item() sync among what grew; the page links every other stored trace as a baseline."""
    base, _ = ingest(sqlite_store, H200_B512 / "resnet_baseline.pt.trace.json.gz")
    synced, _ = ingest(sqlite_store, H200_B512 / "resnet_item_sync.pt.trace.json.gz")
    page = pages_steps.layout(TraceAnalysis(sqlite_store), str(synced.import_id), None, str(base.import_id))
    expected = compared(str(base.import_id), str(synced.import_id), None, sqlite_store)
    assert by_id(page, "steps-compare").data == present.comparison_rows(expected)
    headline = by_id(page, "steps-compare-headline").children
    assert headline.endswith(present.comparison_headline(expected))
    sync = next(c for c in expected.changes if c.part == "synchronization")
    assert sync.change_ns > 0 and expected.after_step_ns > expected.before_step_ns
    assert f"/steps?import={synced.import_id}&baseline={base.import_id}" in str(
        pages_steps.layout(TraceAnalysis(sqlite_store), str(synced.import_id))
    )
    assert "not an import id" in str(pages_steps.layout(TraceAnalysis(sqlite_store), str(synced.import_id), None, "x"))
    assert "no import with id 9" in str(
        pages_steps.layout(TraceAnalysis(sqlite_store), str(synced.import_id), None, "9")
    )
