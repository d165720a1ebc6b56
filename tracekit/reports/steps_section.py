"""The HTML report's steps section: for each import of the report that holds a host timeline (a PyTorch profiler
trace or an nsys export), the same figures and tables as `tracekit step IMPORT` and the steps page, worded by
`tracekit.present.steps` and drawn by `tracekit.figures`."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

from tracekit import figures
from tracekit.api import (
    Store,
    imports_with_host_timeline,
    program_of_import,
    program_timeline_of_import,
    trace_features,
)
from tracekit.errors import TracekitError
from tracekit.present import steps as present
from tracekit.reports.html import render_table


def gather_steps(store: Store, import_ids: Iterable[int]) -> list[tuple[int, Any]]:
    """(import id, steps) of each of these imports that holds a host timeline; an import whose steps cannot be cut
    is left out (its launches are still in the report)."""
    holding = {i for i, _ in imports_with_host_timeline(store)}
    found = []
    for import_id in sorted(set(import_ids) & holding):
        try:
            result = program_of_import(store, str(import_id))
        except TracekitError:
            continue
        if result.unprofiled.representative_step is not None:
            found.append((import_id, result))
    return found


def gather(store: Store, import_ids: Iterable[int]) -> list[tuple[Any, Any]]:
    """(steps without the profiler, timeline of the step shown) of each import `gather_steps` finds."""
    found = []
    for import_id, program in gather_steps(store, import_ids):
        try:
            found.append((program, program_timeline_of_import(store, str(import_id), program)))
        except TracekitError:
            continue
    return found


def gather_features(store: Store, import_ids: Iterable[int]) -> list[tuple[int, Any]]:
    """(import id, what `tracekit features IMPORT` shows) of each of these imports that holds a host timeline:
    HTA's trace analyses, after the steps in both reports."""
    holding = {i for i, _ in imports_with_host_timeline(store)}
    found = []
    for import_id in sorted(set(import_ids) & holding):
        try:
            found.append((import_id, trace_features.features_of(store, str(import_id))))
        except TracekitError:
            continue
    return found


def _table(rows: list[dict[str, str]]) -> str:
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(k)}</th>" for k in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row.values()) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render(program: Any, view: Any, sink: Any) -> str:
    """One import's steps section, as the program runs them; `sink` embeds the figures (`reports.html.FigureSink`)."""
    result = program.unprofiled
    step = result.steps[result.representative_step]
    notes = "".join(f"<li>{html.escape(line.strip())}</li>" for line in present.program_lines(program)[1:])
    tries = "".join(f"<li>{html.escape(present.suggestion_line(s))}</li>" for s in result.what_to_try)
    warnings = "".join(f'<p class="note">warning: {html.escape(w)}</p>' for w in result.warnings)
    return (
        f'<section class="steps"><h2>{html.escape(present.program_headline(program))}</h2><ul>{notes}</ul>'
        f"<h3>{html.escape(present.title(result))}</h3>"
        f"<p>{html.escape(present.step_heading(step))}</p>"
        + sink.embed(figures.step_timeline_spec(view))
        + sink.embed(figures.step_breakdown_spec(step))
        + "<h3>Steps</h3>"
        + _table(present.step_rows(result))
        + render_table(present.cause_table(step))
        + "<h3>GPU time by category</h3>"
        + _table(present.category_rows(step))
        + "<h3>GPU time by operator</h3>"
        + _table(present.operator_rows(step))
        + f"<p>{html.escape(present.critical_path_line(result) or '')}</p>"
        + (f"<h3>What to try first</h3><p>{html.escape(present.try_note(result))}</p><ol>{tries}</ol>" if tries else "")
        + warnings
        + "</section>"
    )
