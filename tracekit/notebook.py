"""A result in a notebook: `LaunchResult._repr_html_` (the headline, the speed-of-light chart, the roofline and
What to try first) and `result.figure(name)` (plotly figures), mixed into the result `tracekit.api` hands out.

Renders only what the engine returned: the answer's charts are the plotly dicts the report and the dashboard draw
(`tracekit.present.launch.answer_figures`), `figure(name)` uses the same builders (`tracekit.figures`). Everything
from an input is escaped; plotly.js comes from its CDN (`include_plotlyjs`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from tracekit.analysis.comparison import Comparison
    from tracekit.analysis.predict import Prediction
    from tracekit.analysis.types import LaunchAnalysis
    from tracekit.present.sections import Table

FIGURES = (
    "speed_of_light",
    "roofline",
    "occupancy",
    "stalls",
    "sweep",
    "warp_timeline",
    "occupancy_time",
    "latency",
)
TRACE_FIGURES = ("warp_timeline", "occupancy_time", "latency")  # drawn from the launch's figure aggregates


def launch_figure(result: LaunchAnalysis, name: str, aggregates: Mapping[str, Any] | None = None) -> go.Figure:
    """The named figure of one result, the plotly dict the report and the launch page draw (`tracekit.present`),
    as a figure; `aggregates`: `tracekit.api.launch_aggregates(store, launch_id)`, for the trace's figures.
    ValueError for an unknown name or a launch without its data."""
    from tracekit import figures
    from tracekit.present.launch import answer_figures, launch_figures, trace_frames

    if name not in FIGURES:
        raise ValueError(f"no figure {name!r}: one of {', '.join(FIGURES)}")
    if name in TRACE_FIGURES and aggregates is None:
        raise ValueError(f"the {name} figure draws the launch's figure aggregates: pass aggregates=")
    spec: dict[str, Any] | None
    if name == "occupancy":
        spec = figures.occupancy_spec(result)
    else:
        answer = name in ("speed_of_light", "roofline")
        drawn = answer_figures(result) if answer else launch_figures(result, trace_frames(aggregates))
        spec = next((chart.spec for chart in drawn if chart.key == name), None)
    if spec is None:
        raise ValueError(f"launch {result.launch_id} has no data for the {name} figure")
    return figures.unchecked_figure(spec["data"], spec["layout"])


def _tries(result: LaunchAnalysis) -> list[Any] | str:
    """The predictor's changes from the result alone (a notebook has no store), or why there are none."""
    from tracekit.analysis.predict import NOTHING_TO_PREDICT, predictable, what_to_try
    from tracekit.errors import TracekitError

    if not predictable(result):
        return NOTHING_TO_PREDICT
    try:
        return what_to_try(result)
    except (TracekitError, ValueError, TypeError) as exc:
        return str(exc)


def launch_html(result: LaunchAnalysis) -> str:
    """The result as a notebook shows it: escaped text, the charts as plotly HTML (plotly.js from the CDN)."""
    from tracekit.present.verdict import verdict_text

    verdict = result.classification
    name = html.escape(result.kernel.name or f"launch {result.launch_id}")
    mode = verdict_text(verdict)
    parts = [
        '<div class="tracekit-result">',
        f"<h3 style='font-family:monospace'>{name}</h3>",
        f"<p><b>{html.escape(verdict.headline or mode)}</b><br>{html.escape(mode)}</p>",
    ]
    import plotly.io as pio

    from tracekit.present.launch import ANSWER_FIGURE_HEIGHT, answer_figures, launch_tables
    from tracekit.present.try_first import try_first

    script: str | bool = "cdn"
    for chart in answer_figures(result):  # the section's plotly dicts, drawn as the report and the launch page do
        parts.append(
            pio.to_html(
                chart.spec,
                include_plotlyjs=script,
                full_html=False,
                default_height=ANSWER_FIGURE_HEIGHT,
                validate=False,
            )
        )
        script = False  # one script tag for the cell

    section = try_first(result, _tries(result))
    if section.items:
        items = "".join(
            f"<li><b>{html.escape(item.line)}</b>; {html.escape(item.basis)}</li>" for item in section.items
        )
        parts.append(f"<h4>{html.escape(section.heading)}</h4><ol>{items}</ol>")
    else:
        parts.append(f"<h4>{html.escape(section.heading)}</h4><p>{html.escape(section.note or '')}</p>")
    parts += [table_html(table) for table in launch_tables(result)]
    parts.append("</div>")
    return "\n".join(parts)


def prediction_html(prediction: Prediction, result: LaunchAnalysis | None = None) -> str:
    """A prediction as a notebook shows it: the answer, what binds before and after, the basis, and the derivation
    folded (`present.prediction`, the words `tracekit predict` prints)."""
    from tracekit.present.prediction import prediction_table, prediction_text

    text = prediction_text(prediction, result)
    lines = [f"measured ceilings: {path}" for path in text.profiles]
    steps = "".join(f"<li>{html.escape(step)}</li>" for step in text.steps)
    return (
        f'<div class="tracekit-prediction"><p><b>{html.escape(text.answer)}</b></p>'
        + table_html(prediction_table(text))
        + "".join(f"<p>{html.escape(line)}</p>" for line in lines)
        + f"<details><summary>How</summary><ul>{steps}</ul></details></div>"
    )


def comparison_html(comparison: Comparison) -> str:
    """A comparison as a notebook shows it: the table `tracekit compare` prints (present.comparison)."""
    from tracekit.present.comparison import comparison_table

    return f'<div class="tracekit-comparison">{table_html(comparison_table(comparison))}</div>'


def table_html(table: Table) -> str:
    """A table `tracekit.present` decided, as a notebook shows it: its title, columns, rows and note, escaped."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    note = f"<p>{html.escape(table.note)}</p>" if table.note else ""
    return (
        f"<h4>{html.escape(table.title)}</h4><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{note}"
    )


class NotebookDisplay:
    """Mixed into `api.LaunchResult`: how a result shows itself in Jupyter, and its figures."""

    def _repr_html_(self) -> str:
        return launch_html(self)  # type: ignore[arg-type]

    def figure(self, name: str, aggregates: Mapping[str, Any] | None = None) -> go.Figure:
        """`result.figure("speed_of_light" | "roofline" | "occupancy" | "stalls" | "sweep")`: a plotly figure;
        "warp_timeline", "occupancy_time" and "latency" with `aggregates=tracekit.api.launch_aggregates(store, id)`."""
        return launch_figure(self, name, aggregates)  # type: ignore[arg-type]
