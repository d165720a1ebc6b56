"""The HTML report's steps section: an import holding a host timeline gets the figures and tables of `tracekit step
IMPORT` (same wording, `tracekit.present.steps`), its timeline and breakdown embedded; imports without one get none."""

from __future__ import annotations

import html
from pathlib import Path

from tracekit.api import analyze_stored
from tracekit.ingest import ingest
from tracekit.present import steps as present
from tracekit.reports import steps_section
from tracekit.reports.html import report_html
from tracekit.steps import program_of
from tracekit.store import Store

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "sample_traces/steps/h200"


def test_the_report_shows_the_steps_of_a_trace(sqlite_store: Store):
    trace, _ = ingest(sqlite_store, H200 / "resnet_cudagraph.pt.trace.json.gz")
    profile, _ = ingest(sqlite_store, REPO / "sample_traces/torch_step/torch_step.raw.csv")
    steps = steps_section.gather(sqlite_store, [trace.import_id, profile.import_id])
    assert len(steps) == 1  # the ncu import holds no host timeline
    results = analyze_stored(sqlite_store, sqlite_store.launches(import_id=trace.import_id))
    page = report_html(results, {}, full=set(), steps=steps)
    program = program_of(str(trace.import_id), None, sqlite_store)
    expected = program.unprofiled  # the section shows the step as the program runs it
    step = expected.steps[expected.representative_step]
    section = page[page.index('<section class="steps">') :].replace('<td class="num">', "<td>")  # numbers align right
    assert html.escape(present.program_headline(program)) in section
    assert "profiler cost taken out per shipped: NVIDIA H200" in section
    assert html.escape(present.step_heading(step)) in section
    for row in present.step_rows(expected) + present.cause_rows(step) + present.category_rows(step):
        for cell in row.values():
            assert f"<td>{html.escape(cell)}</td>" in section
    assert section.count('class="figure"') == 2  # the timeline and the breakdown
    assert "693 replayed from CUDA graphs" in section


def test_the_markdown_report_shows_the_same_steps(sqlite_store: Store):
    """`tracekit report --format md` of a trace: the steps section after the launches, the same rows and
    suggestions (`tracekit.present.steps`), escaped as the rest of the Markdown report."""
    from tracekit.reports.markdown import md, report_markdown

    trace, _ = ingest(
        sqlite_store, REPO / "sample_traces/steps/h100_loader_light/lean/resnet_loader_item_sync.pt.trace.json.gz"
    )
    found = steps_section.gather_steps(sqlite_store, [trace.import_id])
    assert [i for i, _ in found] == [trace.import_id]
    results = analyze_stored(sqlite_store, sqlite_store.launches(import_id=trace.import_id))
    text = report_markdown(results, steps=[r for _, r in found])
    program = program_of(str(trace.import_id), None, sqlite_store)
    expected = program.unprofiled
    step = expected.steps[expected.representative_step]
    assert f"### {md(present.program_headline(program))}" in text
    section = text[text.index(f"#### {md(present.title(expected))}") :]
    assert section.index("**Idle time by cause**") < section.index("**What to try first**")
    for row in present.step_rows(expected) + present.cause_rows(step) + present.category_rows(step):
        assert "| " + " | ".join(md(cell) for cell in row.values()) + " |" in section
    first = md(present.suggestion_line(expected.what_to_try[0]))
    assert f"1. {first}" in section and first.startswith("synchronization: up to ")
