"""The batch report's source-lines section (issue 45) on the recorded H200 set of sample_traces/source_lines: the
HTML, Markdown and JSON reports show, for each launch with source samples, the lines and figures `tracekit lines`
shows (its JSON is the reference here); a launch without source samples gets no section; a hostile source text is
escaped in each format."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import HOSTILE_SOURCE as HOSTILE
from tests.helpers import hostile_source_csv as hostile_csv
from tests.helpers import marked_line
from tests.reports.conftest import run_tracekit
from tracekit import format as fmt
from tracekit.ingest import ingest
from tracekit.reports.markdown import md
from tracekit.store import Store

pytest.importorskip("ncu_report", reason="the .ncu-rep reader needs NVIDIA's ncu_report (pip install ncu-report)")

REPO = Path(__file__).resolve().parents[2]
SET = REPO / "sample_traces" / "source_lines"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A store holding the recorded report, an Nsight Compute CSV without source samples and a hostile Source-page
    CSV: (db path, folder, launch ids of transposeNaive and reduce1 from the report, of the plain CSV and of the
    hostile one)."""
    folder = tmp_path_factory.mktemp("source-report")
    db = str(folder / "store.sqlite")
    store = Store.open(db)
    imports = [
        ingest(store, path)[0].import_id
        for path in (
            SET / "h200" / "source_lines.ncu-rep.gz",
            REPO / "sample_traces" / "h100" / "memcpy_1load.csv.gz",
            hostile_csv(folder),
        )
    ]
    launches = store.launches()
    store.engine.dispose()

    def first(import_id: int, prefix: str = "") -> int:
        rows = launches.filter((pl.col("import_id") == import_id) & pl.col("kernel_name").str.starts_with(prefix))
        return int(rows["id"][0])

    ids = {
        "transpose": first(imports[0], "transposeNaive("),
        "reduce1": first(imports[0], "reduce1("),
        "none": first(imports[1]),
        "hostile": first(imports[2]),
    }
    return db, folder, ids


def lines_json(db: str, launch: int) -> dict:
    done = run_tracekit("lines", str(launch), "--json", "--db", db)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def report(db: str, folder: Path, ids: dict[str, int], fmt: str) -> str:
    out = folder / f"report.{fmt}"
    sources = [f"launch:{ids[k]}" for k in ("transpose", "reduce1", "none", "hostile")]
    done = run_tracekit("report", *sources, "--format", fmt, "-o", str(out), "--db", db)
    assert done.returncode == 0, done.stderr
    return out.read_text()


def test_json_report_holds_the_lines_tracekit_lines_shows(stored):
    db, folder, ids = stored
    launches = {x["launch_id"]: x for x in json.loads(report(db, folder, ids, "json"))}
    for kind in ("transpose", "reduce1", "hostile"):
        assert launches[ids[kind]]["source_lines"] == lines_json(db, ids[kind]), kind
    assert "source_lines" not in launches[ids["none"]]
    top = launches[ids["transpose"]]["source_lines"]["lines"][0]
    assert top["line"] == marked_line(SET / "src" / "transpose.cu", "[transpose_naive: limiter]")
    assert launches[ids["hostile"]]["source_lines"]["lines"][0]["text"] == HOSTILE  # data, exactly as recorded


def test_html_report_section_shows_the_hot_lines_escaped(stored):
    db, folder, ids = stored
    page = report(db, folder, ids, "html")
    sections = dict(re.findall(r'<section id="launch-(\d+)">(.*?)</section>', page, re.S))
    for kind in ("transpose", "reduce1"):
        data = lines_json(db, ids[kind])
        section = sections[str(ids[kind])]
        top = data["lines"][0]
        row = re.search(rf'<tr( class="limiter")? data-line="{top["line"]}">(.*?)</tr>', section, re.S)
        assert row is not None, kind
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(2))
        assert cells[0] == fmt.fraction(top["samples_share"]) and cells[1] == str(top["line"])
        assert html.unescape(cells[3]).strip() == top["text"]
        assert (row.group(1) is not None) == top["holds_limiter"] and (cells[2] == "◆") == top["holds_limiter"]
        assert html.escape(data["limiter"]["sentence"]) in section
        assert html.escape(data["fix"]["sentence"]) in section
    assert data["lines"][0]["kind"] == "bank conflict"  # reduce1: the case's kind (cases.csv), line 33
    assert 'class="source-code"' not in sections[str(ids["none"])]
    hostile = sections[str(ids["hostile"])]
    assert "<script>alert(1)" not in hostile and "<img src=x" not in hostile
    assert html.escape(HOSTILE) in hostile


def test_markdown_report_section_shows_the_same_figures(stored):
    db, folder, ids = stored
    text = report(db, folder, ids, "md")
    data = lines_json(db, ids["transpose"])
    top = data["lines"][0]
    section = text.split(f'<a id="launch-{ids["transpose"]}"></a>')[1].split('<a id="launch-')[0]
    row = next(line for line in section.splitlines() if line.startswith(f"| {fmt.fraction(top['samples_share'])} |"))
    assert f"| {top['line']} | ◆ | {md(top['text'])} | {top['kind']} |" in row
    ranked = next(line for line in section.splitlines() if line.startswith("| 1 | "))
    assert md(top["place"]) in ranked and md(top["stall_words"]) in ranked and md(top["gain_words"]) in ranked
    assert md(data["fix"]["sentence"]) in section
    plain = text.split(f'<a id="launch-{ids["none"]}"></a>')[1].split('<a id="launch-')[0]
    assert "Source lines" not in plain
    hostile = text.split(f'<a id="launch-{ids["hostile"]}"></a>')[1]
    assert "<script>" not in hostile and "&lt;script&gt;alert(1)&lt;/script&gt;" in hostile
