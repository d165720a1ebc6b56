"""Self-contained HTML reports: one file that opens offline, plotly's JavaScript inlined once, no network fetch.

Every string from an input (kernel names above all) goes through `esc`; figures (`tracekit.dashboards.figures`,
shared with the dashboard) carry only our own text, and their JSON is embedded with `<` escaped, so no input can
close a tag.
Tables come first and read without JavaScript; figures are drawn from embedded JSON when the page loads
(lazily, as they scroll into view, when a report holds many).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
import plotly.offline

from tracekit import format as fmt
from tracekit.analysis.job.types import JobResult
from tracekit.analysis.trace_features import TraceFeatures
from tracekit.analysis.types import LaunchAnalysis
from tracekit.format import fraction
from tracekit.present import trace_features as hta
from tracekit.present.comparison import ComparedPair, comparison_charts, comparison_table, pair_heading, side_launch
from tracekit.present.job import JobContent, job_content
from tracekit.present.launch import LaunchContent, index_table, launch_content, trace_frames
from tracekit.present.prediction import PredictionTables
from tracekit.present.regions import region_charts
from tracekit.present.sections import Figure, Table
from tracekit.present.source_lines import SourcePanel, changes_sentence, changes_tables
from tracekit.present.try_first import Tries, TryFirst

if TYPE_CHECKING:
    import plotly.graph_objects as go

EAGER_FIGURE_LIMIT = 40  # more figures than this are drawn as they scroll into view
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True, "showLink": False}

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1200px;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-top: 2px solid #ccc; padding-top: .6em; margin-top: 2em; }
h3 { font-size: 1.05em; margin-bottom: .3em; }
table { border-collapse: collapse; margin: .4em 0 1em; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.kernel { font-family: ui-monospace, monospace; word-break: break-all; }
.verdict { background: #fff8e1; border-left: 4px solid #f0a500; padding: .5em 1em; margin: .6em 0; }
.verdict.failed { background: #fdecea; border-color: #d93025; } .verdict.passed { background: #e8f5e9;
       border-color: #2e7d32; }
.flag { display: inline-block; background: #eee; border-radius: 3px; padding: 0 .4em; margin-right: .3em; }
.note { color: #555; font-size: .85em; margin-top: -.6em; }
.figure { min-height: 300px; margin: .5em 0 1.2em; }
table.source-code td { border: none; padding: 0 .5em; } table.source-code td.code { white-space: pre;
       font-family: ui-monospace, monospace; } table.source-code tr.limiter td.code { font-weight: 600; }
"""

RENDER_SCRIPT = """
(function () {
  var config = %(config)s, eagerLimit = %(eager)d;
  var divs = Array.prototype.slice.call(document.querySelectorAll("div.figure"));
  function draw(div) {
    if (div.dataset.drawn) { return; }
    div.dataset.drawn = "1";
    var spec = JSON.parse(document.getElementById(div.id + "-data").textContent);
    Plotly.newPlot(div, spec.data, spec.layout, config);
  }
  if (divs.length <= eagerLimit || !("IntersectionObserver" in window)) { divs.forEach(draw); return; }
  var observer = new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (entry.isIntersecting) { draw(entry.target); observer.unobserve(entry.target); }
    });
  }, {rootMargin: "600px"});
  divs.forEach(function (div) { observer.observe(div); });
})();
"""


def esc(text: Any) -> str:
    return html.escape(fmt.escape_control(str(text)), quote=True)


def _numeric(cell: str) -> bool:
    return bool(cell) and (cell[0].isdigit() or (cell[0] in "+-" and cell[1:2].isdigit()))


def render_table(
    table: Table, link_column: int | None = None, heading: bool = True, linked: set[str] | None = None
) -> str:
    """A table; with `link_column` that column holds anchors and the next cell links to it (only to the anchors
    in `linked`, when given: the launches that have a section)."""
    columns = [c for i, c in enumerate(table.columns) if i != link_column]
    parts = [
        f"<h3>{esc(table.title)}</h3>" if heading else "",
        "<table><thead><tr>",
        "".join(f"<th>{esc(c)}</th>" for c in columns),
        "</tr></thead><tbody>",
    ]
    for row in table.rows:
        cells = []
        anchor = row[link_column] if link_column is not None else None
        for i, cell in enumerate(row):
            if i == link_column:
                continue
            css = ' class="num"' if _numeric(cell) else ""
            text = esc(cell)
            if (
                link_column is not None
                and anchor is not None
                and i == link_column + 1
                and (linked is None or anchor in linked)
            ):
                text = f'<a href="#{esc(anchor)}">{text}</a>'
            cells.append(f"<td{css}>{text}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</tbody></table>")
    if table.note:
        parts.append(f'<p class="note">{esc(table.note)}</p>')
    return "".join(parts)


class FigureSink:
    """Collects figures as embedded JSON with page-unique ids."""

    def __init__(self) -> None:
        self.count = 0

    def embed(self, figure: go.Figure | dict[str, Any]) -> str:
        """A figure or a plotly dict (a section's `Figure.spec`), embedded as JSON as it is (no validation)."""
        self.count += 1
        figure_id = f"fig-{self.count}"
        spec = orjson.dumps(
            figure if isinstance(figure, dict) else figure.to_plotly_json(),
            option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS,
        ).decode()  # the encoder plotly.io uses, without plotly's validators (imported and run per figure)
        spec = spec.replace("/", "\\u002f").replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        return (
            f'<div class="figure" id="{figure_id}"></div>'
            f'<script type="application/json" id="{figure_id}-data">{spec}</script>'
        )


def _page(title: str, body: list[str], sink: FigureSink) -> str:
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    scripts = ""
    if sink.count:
        script = RENDER_SCRIPT % {"config": orjson.dumps(PLOTLY_CONFIG).decode(), "eager": EAGER_FIGURE_LIMIT}
        scripts = f"<script>{plotly.offline.get_plotlyjs()}</script><script>{script}</script>"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        f'<h1>{esc(title)}</h1><p class="note">made by tracekit, {generated}</p>'
        + "".join(body)
        + scripts
        + "</body></html>\n"
    )


def _verdict_block(content: LaunchContent) -> str:
    flags = "".join(f'<span class="flag">{esc(flag)}</span>' for flag in content.flags)
    evidence = "".join(f"<li>{esc(line)}</li>" for line in content.evidence)
    advice = "".join(f"<li>{esc(line)}</li>" for line in content.advice)
    return (
        f'<div class="verdict"><strong>Verdict: {esc(content.verdict)}</strong> {flags}'
        f"<ul>{evidence}</ul>" + (f"<p><strong>Advice</strong></p><ul>{advice}</ul>" if advice else "") + "</div>"
    )


def _try_first_block(section: TryFirst) -> str:
    """What to try first: the predicted changes, best first, or why there are none."""
    if not section.items:
        return f'<div class="try-first"><h3>{esc(section.heading)}</h3><p>{esc(section.note)}</p></div>'
    items = "".join(
        f"<li>{esc(item.line)}"
        f'<div class="note">basis: {esc(item.basis)}{esc("; " + item.nsight) if item.nsight else ""}</div></li>'
        for item in section.items
    )
    return f'<div class="try-first"><h3>{esc(section.heading)}</h3><ol>{items}</ol></div>'


def _predictions_block(predictions: PredictionTables) -> str:
    """What to try first's changes, each as the table `tracekit predict` prints under its answer, and the measured
    ceilings they cite, once."""
    ceilings = f'<p class="note">{esc(predictions.ceilings)}</p>' if predictions.ceilings else ""
    return (
        f'<div class="predictions"><h3>{esc(predictions.heading)}</h3>'
        + "".join(render_table(table) for table in predictions.tables)
        + ceilings
        + "</div>"
    )


ANSWER_CHARTS = ("speed_of_light", "roofline")
TRACE_CHARTS = ("warp_timeline", "occupancy_time", "latency")


def _chart(chart: Figure, sink: FigureSink) -> str:
    """A section's chart under its title, with its note."""
    note = f'<p class="note">{esc(chart.note)}</p>' if chart.note else ""
    return f"<h3>{esc(chart.title)}</h3>" + sink.embed(chart.spec) + note


def _source_block(panel: SourcePanel) -> str:
    """The launch page's source panel: the sentences, the code with its samples column coloured by heat and the
    limiter's lines marked, the stall reasons and the ranked lines. The code is the profiled file's text, escaped."""
    sentences = "".join(f"<p>{esc(sentence)}</p>" for sentence in panel.sentences)
    rows = "".join(
        ('<tr class="limiter"' if code.holds_limiter else "<tr")
        + f' data-line="{esc(code.number or "")}">'
        + f'<td class="num" style="background: rgba(214, 69, 44, {code.heat:.3f})">{esc(code.share)}</td>'
        + f'<td class="num">{esc(code.place if code.number is None else code.number)}</td>'
        + f"<td>{'◆' if code.holds_limiter else ''}</td>"
        + f'<td class="code">{esc(code.text)}</td><td>{esc(code.kind)}</td></tr>'
        for code in panel.code
    )
    return (
        f'<div class="source-lines"><h3>{esc(panel.title)}</h3>{sentences}'
        f'<table class="source-code"><tbody>{rows}</tbody></table><p class="note">{esc(panel.code_note)}</p>'
        + render_table(panel.stalls)
        + render_table(panel.lines)
        + "</div>"
    )


def _launch_section(
    result: LaunchAnalysis,
    content: LaunchContent,
    views: dict[str, Any] | None,
    sink: FigureSink,
    sweeps_drawn: dict[tuple, str],
    source: SourcePanel | None = None,
) -> str:
    parts = [
        f'<section id="{esc(content.anchor)}"><h2>Launch {esc(content.launch_id)}: '
        f'<span class="kernel">{esc(content.kernel_name)}</span></h2>',
    ]
    # The launch page's order: the engine's headline, speed of light and roofline (the section's plotly dicts, as
    # the launch page and a notebook draw them), then the evidence and the tables.
    if result.classification.headline:
        parts.append(f'<p class="headline"><strong>{esc(result.classification.headline)}</strong></p>')
    if len(content.findings) > 1:
        items = "".join(f"<li>{esc(fraction(share))}: {esc(text)}</li>" for share, text in content.findings)
        parts.append(f'<p class="note">Findings, by the time they cost:</p><ul class="findings">{items}</ul>')
    charts = {chart.key: chart for chart in content.figures}  # the section's plotly dicts (present.launch)
    for key in ANSWER_CHARTS:
        if key in charts:
            parts.append(_chart(charts[key], sink))
    if source is not None:  # the launch page's order: the answer's charts, the source lines, What to try first
        parts.append(_source_block(source))
    if content.try_first is not None:
        parts.append(_try_first_block(content.try_first))
    if content.predictions is not None:
        parts.append(_predictions_block(content.predictions))
    parts.append(_verdict_block(content))
    tables = {table.title: table for table in content.tables}
    for title in ("Launch", "Occupancy"):
        parts.append(render_table(tables.pop(title)))
    for key in TRACE_CHARTS:
        if key in charts:
            parts.append(_chart(charts[key], sink))
    for title, table in tables.items():
        parts.append(render_table(table))
        if title.startswith("Stalls") and "stalls" in charts:
            parts.append(sink.embed(charts["stalls"].spec))
        if title.startswith("Occupancy sweep") and result.sweep is not None and "sweep" in charts:
            sweep = result.sweep
            family = (content.kernel_name, sweep.latency_ns, sweep.throughput_bound_warps_per_ns_per_sm)
            if family in sweeps_drawn:
                parts.append(
                    f'<p class="note">The sweep figure is drawn at <a href="#{esc(sweeps_drawn[family])}">'
                    f"the kernel's first launch</a>.</p>"
                )
            else:
                sweeps_drawn[family] = content.anchor
                parts.append(sink.embed(charts["sweep"].spec))
    if views is not None and "region_timeline" in views:  # after the region table, the launch's last
        parts.append(_region_figures(views, sink))
    parts.append("</section>")
    return "".join(parts)


def _region_figures(views: dict[str, Any], sink: FigureSink) -> str:
    """The warp timeline coloured by region and each region's occupancy over time (`present.regions`, from the
    frames of `region_timeline.region_figure_frames`)."""
    charts = region_charts(
        views["region_timeline"], views["region_occupancy"], views["region_names"], views["region_time_unit"]
    )
    return "".join(_chart(chart, sink) for chart in charts)


def _job_section(content: JobContent, anchor: str, sink: FigureSink) -> str:
    """A job's section: the straggler and its cause, the ranks-by-step heat map and the straggler's step beside a
    typical rank's (`present.job`), each step's straggler and the clocks."""
    lines = "".join(f"<li>{esc(line)}</li>" for line in content.lines)
    warnings = "".join(f'<p class="note">warning: {esc(w)}</p>' for w in content.warnings)
    return (
        f'<section class="job" id="{esc(anchor)}"><h2>{esc(content.title)}</h2>'
        f'<div class="verdict"><strong>{esc(content.headline)}</strong><ul>{lines}</ul></div>'
        + "".join(_chart(chart, sink) for chart in content.figures)
        + "".join(render_table(table) for table in content.tables)
        + warnings
        + "</section>"
    )


def job_html(result: JobResult, title: str = "tracekit job") -> str:
    """A job alone (`tracekit job --format html`): its section as the batch report shows it."""
    sink = FigureSink()
    return _page(title, [_job_section(job_content(result), "job-1", sink)], sink)


def report_html(
    results: Sequence[LaunchAnalysis],
    views: dict[int, dict[str, Any]],
    title: str = "tracekit report",
    full: set[int] | None = None,
    selection_note: str = "",
    tries: Mapping[int, Tries] | None = None,
    steps: Sequence[tuple[Any, Any]] = (),
    sources: Mapping[int, SourcePanel] | None = None,
    features: Sequence[tuple[int, TraceFeatures]] = (),
    jobs: Sequence[JobResult] = (),
) -> str:
    """The whole report: a summary table of every launch, then a full section (tables and figures) for each
    launch in `full` (all when None), so that a report of a thousand launches stays a few MB and readable.
    `tries`: `api.what_to_try_for` by launch id, shown as each section's What to try first. `steps`: the
    whole-step sections (`reports.steps_section.gather`), after the launches; `features`: each import's HTA trace
    analyses (`reports.steps_section.gather_features`), after them. `sources`: the source panels
    (`present.source_lines.source_panel`) of the launches that have source samples, by launch id. `jobs`: a
    section per job (`api.job` of a folder of rank traces), last.

    `views` maps launch ids to `api.launch_aggregates` frames (launches without a trace are absent)."""
    tries = tries or {}
    contents = [  # the tables only where a section shows them: formatting them all cost seconds at 1,000 launches
        launch_content(
            result,
            i,
            tables=full is None or result.launch_id in full,
            tries=tries.get(result.launch_id) if result.launch_id is not None else None,
            figures=True,  # its charts, as plotly dicts (present.launch: answer_figures, launch_figures)
            frames=trace_frames(views.get(result.launch_id)) if result.launch_id is not None else None,
        )
        for i, result in enumerate(results)
    ]
    sink = FigureSink()
    sweeps_drawn: dict[tuple, str] = {}
    detailed = [
        (result, content)
        for result, content in zip(results, contents, strict=True)
        if full is None or result.launch_id in full
    ]
    linked = {content.anchor for _, content in detailed}
    body = [render_table(index_table(results, contents), link_column=0, linked=linked)] if results else []
    if selection_note:
        body.append(f'<p class="note">{esc(selection_note)}</p>')
    for result, content in detailed:
        body.append(
            _launch_section(
                result,
                content,
                views.get(result.launch_id) if result.launch_id is not None else None,
                sink,
                sweeps_drawn,
                (sources or {}).get(result.launch_id) if result.launch_id is not None else None,
            )
        )
    if steps:
        from tracekit.reports import steps_section

        body.extend(steps_section.render(result, view, sink) for result, view in steps)
    for import_id, found in features:
        body.append(
            f'<section class="trace-features"><h2>Import {import_id}: trace analyses (as HTA has them)</h2>'
            + "".join(render_table(table) for table in hta.feature_tables(found))
            + "".join(_chart(chart, sink) for chart in hta.feature_figures(found))
            + "</section>"
        )
    body.extend(_job_section(job_content(job), f"job-{i}", sink) for i, job in enumerate(jobs, 1))
    return _page(title, body, sink)


def compare_html(
    pairs: list[ComparedPair], gate_messages: list[tuple[bool, str]], title: str = "tracekit comparison"
) -> str:
    """A against B per matched pair, the gates' outcome first, and overlaid figures where traces exist."""
    sink = FigureSink()
    body = []
    if gate_messages:
        failed = any(f for f, _ in gate_messages)
        lines = "".join(f"<li>{esc(message)}</li>" for _, message in gate_messages)
        body.append(
            f'<div class="verdict {"failed" if failed else "passed"}"><strong>Gates: '
            f"{'FAILED' if failed else 'passed'}</strong><ul>{lines}</ul></div>"
        )
    for number, pair in enumerate(pairs, 1):
        body.append(
            f'<section id="pair-{number}"><h2 class="kernel">{esc(pair_heading(pair))}</h2>'
            f'<p class="note">A = {esc(pair.reference_a)}, B = {esc(pair.reference_b)}</p>'
        )
        body.append(render_table(comparison_table(pair.comparison)))
        if pair.lines is not None:  # A/B by source line
            body.append(f'<p class="note source-changes">{esc(changes_sentence(pair.lines))}</p>')
            body.extend(render_table(table) for table in changes_tables(pair.lines) if table.rows)
        charts = comparison_charts(
            {"A": side_launch(pair.results_a), "B": side_launch(pair.results_b)},
            {"A": trace_frames(pair.views_a), "B": trace_frames(pair.views_b)},
        )
        if charts.note:
            body.append(f'<p class="note">{esc(charts.note)}</p>')
        body.extend(_chart(chart, sink) for chart in charts.figures)
        body.append("</section>")
    return _page(title, body, sink)
