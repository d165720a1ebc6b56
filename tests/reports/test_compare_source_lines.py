"""`tracekit compare` A/B by source line (issue 45) on real before/after pairs of the recorded H200 set
(sample_traces/source_lines): transposeNaive -> transposeCoalesced and reduce1 -> reduce2, each profiled with the
source counters. The line each case marks `[case: limiter]` in its source is the line that shrank most, gone in
B with its excess counter; the line marked `[case: fixed]` is among those that grew. The text, JSON, Markdown and
HTML forms show the same lines and figures, `tracekit lines` the same times; a side without a duration compares
shares; hostile source text is escaped."""

from __future__ import annotations

import html
import json

import polars as pl
import pytest

from tests.helpers import HOSTILE_SOURCE, SOURCE_LINES_SET, hostile_source_csv, marked_line
from tests.reports.conftest import run_tracekit
from tracekit.ingest import ingest
from tracekit.reports.markdown import md
from tracekit.store import Store

pytest.importorskip("ncu_report", reason="the .ncu-rep reader needs NVIDIA's ncu_report (pip install ncu-report)")

TRANSPOSE = SOURCE_LINES_SET / "src" / "transpose.cu"
REDUCTION = SOURCE_LINES_SET / "src" / "reduction.cu"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The recorded report and a hostile reduce1 Source-page CSV in one store: (db, folder, launch ids by kernel)."""
    folder = tmp_path_factory.mktemp("compare-lines")
    db = str(folder / "store.sqlite")
    store = Store.open(db)
    report = ingest(store, SOURCE_LINES_SET / "h200" / "source_lines.ncu-rep.gz")[0].import_id
    hostile = ingest(store, hostile_source_csv(folder))[0].import_id
    launches = store.launches()
    store.engine.dispose()
    ids = {
        row["kernel_name"].split("(")[0]: int(row["id"])
        for row in launches.filter(pl.col("import_id") == report).iter_rows(named=True)
    }
    ids["hostile"] = int(launches.filter(pl.col("import_id") == hostile)["id"][0])
    return db, folder, ids


def compare(db: str, a: int, b: int, kernel_a: str, kernel_b: str, *args: str):
    done = run_tracekit(
        "compare", f"launch:{a}", f"launch:{b}", "--kernel-a", kernel_a, "--kernel-b", kernel_b, "--db", db, *args
    )
    assert done.returncode == 0, done.stderr
    return done


def lines_of(db: str, launch: int) -> dict:
    done = run_tracekit("lines", str(launch), "--json", "--top", "1000", "--db", db)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("case", "before", "after", "source"),
    [
        ("transpose_naive", "transposeNaive", "transposeCoalesced", TRANSPOSE),
        ("reduce_bank", "reduce1", "reduce2", REDUCTION),
    ],
)
def test_the_limiter_line_shrank_most_and_the_fixed_line_grew(stored, case, before, after, source):
    db, _, ids = stored
    data = json.loads(compare(db, ids[before], ids[after], before, after, "--json").stdout)
    [pair] = data["pairs"]
    lines = pair["source_lines"]
    assert lines["by_time"] and lines["matched_by_text"]
    shrank = lines["shrank"][0]
    assert shrank["a"]["line"] == marked_line(source, f"[{case}: limiter]")
    assert shrank["b"] is None  # the statement is rewritten by the fix: gone in B
    fixed = marked_line(source, f"[{case}: fixed]")
    assert any(change["b"] and change["b"]["line"] == fixed and change["a"] is None for change in lines["grew"])
    # the same time `tracekit lines` gives the line: its share of A's samples times A's duration
    a_lines = lines_of(db, ids[before])
    [line] = [x for x in a_lines["lines"] if x["line"] == shrank["a"]["line"]]
    assert shrank["change_ns"] == pytest.approx(-line["samples_share"] * a_lines["duration_ns"])
    assert shrank["a"]["samples"] == line["samples"] and shrank["a"]["kind"] == line["kind"]
    key = {"transpose_naive": "l2_sectors_global_excess", "reduce_bank": "shared_wavefronts_excess"}[case]
    assert shrank["a"]["counters"][key] == line[key] > 0
    # every line that moved, with A's and B's time summing to the change
    for change in lines["grew"] + lines["shrank"]:
        time_a = change["a"]["time_ns"] if change["a"] else 0.0
        time_b = change["b"]["time_ns"] if change["b"] else 0.0
        assert change["change_ns"] == pytest.approx(time_b - time_a)
    assert [c["change_ns"] for c in lines["shrank"]] == sorted(c["change_ns"] for c in lines["shrank"])


def test_text_markdown_and_html_show_the_same_lines(stored):
    db, folder, ids = stored
    args = (db, ids["transposeNaive"], ids["transposeCoalesced"], "transposeNaive", "transposeCoalesced")
    lines = json.loads(compare(*args, "--json").stdout)["pairs"][0]["source_lines"]
    shrank = lines["shrank"][0]
    text = compare(*args).stdout
    assert lines["sentence"] in " ".join(text.split())
    row = next(line for line in text.splitlines() if shrank["change_words"] in line)
    assert f"transpose.cu:{shrank['a']['line']} -> gone" in row and shrank["a"]["kind"] in row
    markdown = compare(*args, "--format", "md").stdout
    assert md(lines["sentence"]) in markdown
    md_row = next(line for line in markdown.splitlines() if line.startswith(f"| {md(shrank['change_words'])} |"))
    assert md(shrank["text"].strip()) in md_row
    page_path = folder / "compare.html"
    compare(*args, "--format", "html", "-o", str(page_path))
    page = page_path.read_text()
    assert html.escape(lines["sentence"]) in page
    row_html = next(row for row in page.split("<tr>") if f">{html.escape(shrank['change_words'])}</td>" in row)
    assert f"<td>transpose.cu:{shrank['a']['line']} -&gt; gone</td>" in row_html


def test_a_side_without_a_duration_compares_shares_and_escapes_hostile_text(stored):
    """The hostile CSV is reduce1's Source page alone (no duration): against the report's reduce1, shares."""
    db, folder, ids = stored
    args = (db, ids["reduce1"], ids["hostile"], "reduce1", "reduce1")
    lines = json.loads(compare(*args, "--json").stdout)["pairs"][0]["source_lines"]
    assert not lines["by_time"]
    assert all(change["change_ns"] is None for change in lines["grew"] + lines["shrank"])
    texts = [change["text"] for change in lines["grew"] + lines["shrank"]]
    assert HOSTILE_SOURCE in texts  # its line 33 no longer matches the report's text: moved, as data
    page_path = folder / "hostile.html"
    compare(*args, "--format", "html", "-o", str(page_path))
    page = page_path.read_text()
    assert "<script>alert(1)" not in page and html.escape(HOSTILE_SOURCE) in page
