"""Markdown reports, fit for a pull-request comment: the same content as the HTML form, as tables and text.

Every string is escaped with `md`: inline Markdown punctuation gets a backslash, `<`, `>` and `&` become entities
(so an HTML tag in a kernel name shows as text), and line breaks become spaces (a table row is one line).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tracekit import format as fmt
from tracekit.analysis.job.types import JobResult
from tracekit.analysis.steps.program import ProgramSteps
from tracekit.analysis.trace_features import TraceFeatures
from tracekit.analysis.types import LaunchAnalysis
from tracekit.present import job as present_job
from tracekit.present import steps as present_steps
from tracekit.present import trace_features as hta
from tracekit.present.comparison import ComparedPair, comparison_table, pair_heading
from tracekit.present.launch import LaunchContent, index_table, launch_content
from tracekit.present.prediction import PredictionTables
from tracekit.present.sections import Table
from tracekit.present.source_lines import SourcePanel, changes_sentence, changes_tables, code_table
from tracekit.present.try_first import Tries, TryFirst

_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")  # inline markup; `(` `!` only act after `]`, escaped too


def md(text: Any) -> str:
    text = " ".join(fmt.escape_control(str(text)).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _PUNCTUATION.sub(r"\\\1", text)


def render_table(table: Table, link_column: int | None = None, heading: bool = True) -> list[str]:
    columns = [c for i, c in enumerate(table.columns) if i != link_column]
    lines = [f"**{md(table.title)}**", ""] if heading else []
    lines += ["| " + " | ".join(md(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    for row in table.rows:
        cells = []
        for i, cell in enumerate(row):
            if i == link_column:
                continue
            text = md(cell)
            if link_column is not None and i == link_column + 1:
                text = f"[{text}](#{row[link_column]})"  # anchors are our own ("launch-12")
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    if table.note:
        lines += ["", f"_{md(table.note)}_"]
    return lines + [""]


def try_first_lines(section: TryFirst) -> list[str]:
    """What to try first: the predicted changes, numbered, or why there are none."""
    lines = [f"**{md(section.heading)}**", ""]
    if not section.items:
        return lines + [md(section.note), ""]
    for i, item in enumerate(section.items, 1):
        nsight = f"; {md(item.nsight)}" if item.nsight else ""
        lines.append(f"{i}. {md(item.line)}; basis: {md(item.basis)}{nsight}")
    return lines + [""]


def prediction_lines(predictions: PredictionTables) -> list[str]:
    """What to try first's changes, each as the table `tracekit predict` prints under its answer, and the measured
    ceilings they cite, once."""
    lines = [f"**{md(predictions.heading)}**", ""]
    for table in predictions.tables:
        lines += render_table(table)
    return lines + ([md(predictions.ceilings), ""] if predictions.ceilings else [])


def source_lines(panel: SourcePanel) -> list[str]:
    """The launch page's source panel: its sentences, the code with each line's share of the samples (the
    profiled file's text, escaped), the stall reasons and the ranked lines."""
    lines = [f"**{md(panel.title)}**", ""] + [f"- {md(sentence)}" for sentence in panel.sentences] + [""]
    lines += render_table(code_table(panel), heading=False)
    return lines + render_table(panel.stalls) + render_table(panel.lines)


def _launch_lines(content: LaunchContent, source: SourcePanel | None = None) -> list[str]:
    lines = [f'<a id="{content.anchor}"></a>', "", f"### Launch {content.launch_id}: {md(content.kernel_name)}", ""]
    flags = f" ({', '.join(md(flag) for flag in content.flags)})" if content.flags else ""
    if content.headline:  # the launch page's order: the headline, the findings by cost, then the evidence
        lines += [f"**{md(content.headline)}**", ""]
    if len(content.findings) > 1:
        lines += ["Findings, by the time they cost:", ""]
        lines += [f"- {fmt.fraction(share)}: {md(text)}" for share, text in content.findings] + [""]
    if source is not None:  # the launch page's order: the source lines before What to try first
        lines += source_lines(source)
    if content.try_first is not None:
        lines += try_first_lines(content.try_first)
    if content.predictions is not None:
        lines += prediction_lines(content.predictions)
    lines += [f"**Verdict: {md(content.verdict)}**{flags}", ""]
    lines += [f"- {md(line)}" for line in content.evidence] + [""]
    if content.advice:
        lines += ["**Advice**", ""] + [f"- {md(line)}" for line in content.advice] + [""]
    for table in content.tables:
        lines += render_table(table)
    return lines


def _rows_table(title: str, rows: list[dict[str, str]]) -> list[str]:
    if not rows:
        return []
    return render_table(Table(title, list(rows[0]), [list(row.values()) for row in rows]))


def steps_lines(program: ProgramSteps) -> list[str]:
    """One import's whole-step section as the program runs it: the HTML report's and `tracekit step`'s tables and
    lines (`tracekit.present.steps`), without the charts."""
    result = program.unprofiled
    if result.representative_step is None:
        return []
    step = result.steps[result.representative_step]
    lines = [f"### {md(present_steps.program_headline(program))}", ""]
    lines += [f"- {md(line.strip())}" for line in present_steps.program_lines(program)[1:]] + [""]
    lines += [f"#### {md(present_steps.title(result))}", "", md(present_steps.step_heading(step)), ""]
    lines += _rows_table("Steps", present_steps.step_rows(result))
    lines += render_table(present_steps.cause_table(step))
    lines += _rows_table("GPU time by category", present_steps.category_rows(step))
    lines += _rows_table("GPU time by operator", present_steps.operator_rows(step))
    path = present_steps.critical_path_line(result)
    lines += [md(path), ""] if path else []
    if result.what_to_try:
        lines += [f"**What to try first** ({md(present_steps.try_note(result))})", ""]
        lines += [f"{i}. {md(present_steps.suggestion_line(s))}" for i, s in enumerate(result.what_to_try, 1)] + [""]
    return lines + [f"_warning: {md(w)}_" for w in result.warnings] + ([""] if result.warnings else [])


def job_lines(result: JobResult) -> list[str]:
    """A job's section: the HTML report's headline, cause lines and tables (`tracekit.present.job`), without the
    charts."""
    content = present_job.job_content(result, with_figures=False)
    lines = [f"### {md(content.title)}", "", f"**{md(content.headline)}**", ""]
    lines += [f"- {md(line)}" for line in content.lines] + [""]
    for table in content.tables:
        lines += render_table(table)
    return lines + [f"_warning: {md(w)}_" for w in content.warnings] + ([""] if content.warnings else [])


def job_markdown(result: JobResult, title: str = "tracekit job") -> str:
    """A job alone (`tracekit job --format md`)."""
    return "\n".join([f"## {md(title)}", "", *job_lines(result)]).rstrip() + "\n"


def report_markdown(
    results: Sequence[LaunchAnalysis],
    title: str = "tracekit report",
    tries: Mapping[int, Tries] | None = None,
    steps: Sequence[ProgramSteps] = (),
    sources: Mapping[int, SourcePanel] | None = None,
    features: Sequence[tuple[int, TraceFeatures]] = (),
    jobs: Sequence[JobResult] = (),
) -> str:
    """Every launch's section; `tries`: `api.what_to_try_for` by launch id (a launch without one says where to
    find it); `steps`: the whole-step results of the imports that hold a host timeline
    (`reports.steps_section.gather_steps`), after the launches; `features`: each import's HTA trace analyses
    (`reports.steps_section.gather_features`), after them; `sources`: the source panels of the launches that
    have source samples, by launch id; `jobs`: a section per job, last."""
    tries = tries or {}
    contents = [
        launch_content(result, i, tries=tries.get(result.launch_id) if result.launch_id is not None else None)
        for i, result in enumerate(results)
    ]
    lines = [f"## {md(title)}", ""]
    if results:
        lines += render_table(index_table(results, contents), link_column=0, heading=False)
    for launch, content in zip(results, contents, strict=True):
        lines += _launch_lines(content, (sources or {}).get(launch.launch_id or 0))
    for result in steps:
        lines += steps_lines(result)
    for import_id, found in features:
        lines += [f"### Import {import_id}: trace analyses (as HTA has them)", ""]
        for table in hta.feature_tables(found):
            lines += render_table(table)
    for job in jobs:
        lines += job_lines(job)
    return "\n".join(lines).rstrip() + "\n"


def compare_markdown(
    pairs: list[ComparedPair], gate_messages: list[tuple[bool, str]], title: str = "tracekit comparison"
) -> str:
    lines = [f"## {md(title)}", ""]
    if gate_messages:
        failed = any(f for f, _ in gate_messages)
        lines += [f"**Gates: {'FAILED' if failed else 'passed'}**", ""]
        lines += [f"- {md(message)}" for _, message in gate_messages] + [""]
    for pair in pairs:
        lines += [f"### {md(pair_heading(pair))}", "", f"A = {md(pair.reference_a)}, B = {md(pair.reference_b)}", ""]
        lines += render_table(comparison_table(pair.comparison), heading=False)
        if pair.lines is not None:  # A/B by source line
            lines += [md(changes_sentence(pair.lines)), ""]
            lines += [line for table in changes_tables(pair.lines) if table.rows for line in render_table(table)]
    return "\n".join(lines).rstrip() + "\n"
