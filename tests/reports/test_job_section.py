"""The reports' job section (HTML, Markdown, JSON) and `tracekit job --format`, on a SYNTHETIC job
(`tracekit.job.synthetic`: a host-sync straggler on rank 1, clock offsets up to 500 us, rank 3's trace sampled):
the straggler, its cause, each step's last rank, the recovered clock offsets and the sampled flag, as
`tracekit.present.job` words them; the heat map's and the timeline's data embedded in the HTML."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tracekit.analysis.job.types import SYNC, JobResult
from tracekit.job.run import map_rank, reduce_job
from tracekit.job.synthetic import SyntheticJob, load_template, offsets, write_job
from tracekit.present import job as present
from tracekit.reports.html import report_html
from tracekit.reports.markdown import md, report_markdown
from tracekit.steps import calibration_of

JOB = SyntheticJob(ranks=4, steps=4, cause="sync", straggler=1, delay_ns=2_000_000, sampled_rank=3, seed=11)
OFFSET_TOLERANCE_NS = 10_000


@pytest.fixture(scope="module")
def job_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("job")
    write_job(JOB, folder, load_template(kernels_per_group=3))
    return folder


@pytest.fixture(scope="module")
def job_result(job_folder, tmp_path_factory) -> JobResult:
    """The job's map and reduce in this process (the Dask path is the same functions, tests/job/), without the
    profiler as `tracekit job` reads it by default."""
    parquet = tmp_path_factory.mktemp("parquet")
    for position, path in enumerate(sorted(job_folder.iterdir())):
        map_rank(str(path), position, str(parquet), calibration_of())
    return reduce_job(parquet)


def test_the_synthetic_job_is_what_the_sections_show(job_result):
    """The values the sections are checked against: the injected straggler, cause and offsets, the sampled rank."""
    assert job_result.straggler.rank == 1 and job_result.straggler.cause == SYNC
    # what the job would gain: the 2 ms injected, though the sampled rank's trace lacks the kernels after each
    # all-reduce (the collective still gates what follows it on its stream)
    assert abs(job_result.straggler.gain_ns - JOB.delay_ns) <= 0.1 * JOB.delay_ns
    injected = offsets(JOB)
    assert max(abs(int(v)) for v in injected) > 100_000
    assert all(abs(c.offset_ns - int(injected[c.rank])) <= OFFSET_TOLERANCE_NS for c in job_result.clocks)
    assert [c.rank for c in job_result.clocks if c.sampled] == [3]
    assert [t.rank for t in job_result.timelines] == [1, job_result.typical_rank]


def _embedded_figures(section: str) -> list[dict]:
    return [
        json.loads(found)
        for found in re.findall(r'<script type="application/json" id="fig-\d+-data">(.*?)</script>', section)
    ]


def test_the_html_section(job_result):
    page = report_html([], {}, jobs=[job_result])
    section = page[page.index('<section class="job"') :]
    assert html.escape(present.headline(job_result)) in section
    assert "rank 1 holds the job back" in section and "cause: host sync" in section
    # which program the figures describe, and the calibration that took the profiler out
    assert job_result.unprofiled and html.escape(present.program_line(job_result)) in section
    assert "without the profiler: step " in section and html.escape(job_result.calibration or "-") in section
    for row in present.step_rows(job_result):
        assert row["last rank"] == "1" and row["cause"] == SYNC
        assert f'<td class="num">{html.escape(row["late by"])}</td>' in section
    injected = offsets(JOB)
    for clock in job_result.clocks:
        shown = html.escape(present.clock_table(job_result).rows[clock.rank][1])
        assert shown in section
        assert abs(clock.offset_ns - int(injected[clock.rank])) <= OFFSET_TOLERANCE_NS
    assert "yes: " in section  # rank 3's sampled trace, its dropped time not idle
    heatmap, timeline = _embedded_figures(section)
    z = heatmap["data"][0]["z"]
    assert heatmap["data"][0]["y"] == ["0", "1", "2", "3"]
    assert all(max(range(4), key=lambda r: z[r][step]) == 1 for step in range(len(z[0])))
    rows = {y for trace in timeline["data"] for y in trace["y"]}
    assert rows == {"rank 1 (straggler)", f"rank {job_result.typical_rank} (typical)"}
    sync = [t for t in timeline["data"] if t["name"] == "GPU idle: host sync"]
    on_straggler = sum(w for t in sync for y, w in zip(t["y"], t["x"], strict=True) if y == "rank 1 (straggler)")
    assert on_straggler > 1_500  # µs: the 2 ms of host code after its sync


def test_the_markdown_section(job_result):
    text = report_markdown([], jobs=[job_result])
    assert f"**{md(present.headline(job_result))}**" in text
    assert f"- {md(present.program_line(job_result))}" in text
    for row in present.step_rows(job_result):
        assert "| " + " | ".join(md(cell) for cell in row.values()) + " |" in text
    for row in present.clock_table(job_result).rows:
        assert "| " + " | ".join(md(cell) for cell in row) + " |" in text
    assert "<svg" not in text and "figure" not in text  # tables and lines only


def test_the_report_command_takes_a_folder_of_rank_traces(job_folder, tmp_path):
    """`tracekit report DIR --format json`: the job's `tracekit.job/1` object after the launches' (none here)."""
    done = run_cli("report", str(job_folder), "--format", "json", "--db", f"sqlite:///{tmp_path / 's.sqlite'}")
    assert done.returncode == 0, done.stderr
    (found,) = json.loads(done.stdout)
    assert found["schema"] == "tracekit.job/1"
    assert found["straggler"]["rank"] == 1 and found["straggler"]["cause"] == SYNC
    injected = offsets(JOB)
    assert all(abs(c["offset_ns"] - int(injected[c["rank"]])) <= OFFSET_TOLERANCE_NS for c in found["clocks"])
    assert [c["rank"] for c in found["clocks"] if c["sampled"]] == [3]


def test_tracekit_job_writes_the_same_section_as_html(job_folder, tmp_path, job_result):
    out = tmp_path / "job.html"
    done = run_cli("job", str(job_folder), "--workers", "1", "--format", "html", "-o", str(out))
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert html.escape(present.headline(job_result)) in page
    assert len(_embedded_figures(page)) == 2
    done = run_cli("job", str(job_folder), "--format", "md", "--json")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "disagree" in done.stderr


def _texts(node) -> list[str]:
    """The text of a Dash component tree, depth first."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list | tuple):
        return [text for child in node for text in _texts(child)]
    children = getattr(node, "children", None)
    return [] if children is None else _texts(children)


def test_one_wording_in_every_view(job_result):
    """The headline and the straggler's cause lines are the same words in the CLI's text, the Markdown, the HTML
    and the dashboard's job page (`present.job`); the page's tables hold the report's rows."""
    from dashboards.pages_job import job_view
    from tracekit.cli.job_command import job_lines

    content = present.job_content(job_result)
    page = job_view(content)
    texts = _texts(page)
    cli_text = "\n".join(job_lines(job_result))
    markdown = report_markdown([], jobs=[job_result]).replace("\\", "")
    report = html.unescape(report_html([], {}, jobs=[job_result]))
    for line in [content.headline, *content.lines]:
        assert line in texts and line in cli_text and line in report
        assert md(line).replace("\\", "") in markdown
    steps = page.children[[getattr(c, "id", None) for c in page.children].index("job-steps")]
    assert [list(row.values()) for row in steps.data] == present.step_table(job_result).rows
