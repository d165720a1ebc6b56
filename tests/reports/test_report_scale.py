"""`tracekit report` over many launches: every launch in the summary table, full sections (with figures) only for
the longest N (`--top`, default 20) and those chosen with `--launch`, and a file that stays a few MB."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import run_cli

REPO = Path(__file__).resolve().parents[2]
RAW = REPO / "sample_traces" / "h100" / "samples.raw.csv"
LAUNCHES = 56  # the H100 sample's 14 launches, four times over


def tracekit(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, env={**os.environ, "COLUMNS": "200"})


@pytest.fixture(scope="module")
def many_launches(tmp_path_factory) -> tuple[str, list[dict]]:
    """A store holding one import of LAUNCHES real launches (the sample's raw page repeated, IDs renumbered), and
    their analyses as `tracekit analyze --json` prints them."""
    folder = tmp_path_factory.mktemp("scale")
    lines = RAW.read_text(encoding="utf-8").splitlines()
    rows = list(csv.reader(line for line in lines if not line.startswith("==")))
    header, units, data = rows[0], rows[1], rows[2:]
    path = folder / "raw.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerows([header, units])
        for launch in range(LAUNCHES):
            writer.writerow([str(launch), *data[launch % len(data)][1:]])
    db = f"sqlite:///{folder / 'store.sqlite'}"
    assert tracekit("import", "--db", db, str(path)).returncode == 0
    analyzed = tracekit("analyze", "--db", db, "--json", "1")
    assert analyzed.returncode == 0, analyzed.stderr
    return db, json.loads(analyzed.stdout)


def sections(html_text: str) -> list[int]:
    return [int(i) for i in re.findall(r'<section id="[^"]*"><h2>Launch (\d+):', html_text)]


def summary_rows(html_text: str) -> int:
    table = html_text.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return table.count("<tr>")


def longest(results: list[dict], count: int) -> set[int]:
    ordered = sorted(results, key=lambda r: (r["duration_ns"] is None, -(r["duration_ns"] or 0), r["launch_id"]))
    return {r["launch_id"] for r in ordered[:count]}


def test_default_report_has_every_launch_in_the_summary_and_sections_for_the_20_longest(many_launches, tmp_path):
    db, results = many_launches
    out = tmp_path / "r.html"
    done = tracekit("report", "--db", db, "1", "-o", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert summary_rows(text) == LAUNCHES
    assert set(sections(text)) == longest(results, 20)
    assert f"Full sections (tables and figures) for 20 of {LAUNCHES} launches" in text
    # each section's figures are in it, and links go only to launches that have a section
    anchors = set(re.findall(r'<section id="([^"]+)">', text))
    assert len(anchors) == 20 and set(re.findall(r'href="#([^"]+)"', text)) == anchors
    assert out.stat().st_size < 8e6


def test_launch_and_top_choose_the_full_sections(many_launches, tmp_path):
    db, results = many_launches
    ids = [r["launch_id"] for r in results]
    out = tmp_path / "r.html"
    chosen = [ids[3], ids[40]]
    done = tracekit("report", "--db", db, "1", "--launch", str(chosen[0]), "--launch", str(chosen[1]), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(sections(out.read_text(encoding="utf-8"))) == sorted(chosen)  # --launch alone: only those

    done = tracekit("report", "--db", db, "1", "--launch", str(chosen[0]), "--top", "5", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert set(sections(out.read_text(encoding="utf-8"))) == longest(results, 5) | {chosen[0]}

    done = tracekit("report", "--db", db, "1", "--top", str(LAUNCHES), "-o", str(out))
    text = out.read_text(encoding="utf-8")
    assert sorted(sections(text)) == sorted(ids) and "Full sections" not in text


def test_an_unknown_launch_is_one_line_and_writes_nothing(many_launches, tmp_path):
    db, _ = many_launches
    out = tmp_path / "r.html"
    done = tracekit("report", "--db", db, "1", "--launch", "999999", "-o", str(out))
    assert done.returncode == 2
    assert done.stderr.strip() == "tracekit: error: --launch 999999: not among the launches the sources name"
    assert not out.exists()
