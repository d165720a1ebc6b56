"""Headless Chromium on the job page of the real server (`tracekit serve`): the rank traces of a SYNTHETIC job
(`tracekit.job.synthetic`: a data-loading straggler on rank 2, clock offsets up to 500 us) dropped at once; the page
names the straggler and its cause, draws the ranks-by-step heat map with the straggler's row the hottest, the
straggler's step beside a typical rank's, and the clocks it recovered."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tracekit.job.synthetic import SyntheticJob, load_template, offsets, write_job

pytest.importorskip("selenium", minversion="4", reason="browser tests need selenium 4 (pip install 'selenium>=4.20')")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.browser

JOB = SyntheticJob(ranks=4, steps=4, cause="loader", straggler=2, delay_ns=2_000_000, seed=5)
UNITS_NS = {"ns": 1, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def duration_ns(text: str) -> float:
    """A duration as `tracekit.format.duration` writes it ("-110.4 µs"), in ns."""
    found = re.fullmatch(r"(-?[\d,.]+) (ns|µs|ms|s)", text.strip())
    assert found, text
    return float(found.group(1).replace(",", "")) * UNITS_NS[found.group(2)]


@pytest.fixture(scope="module")
def rank_traces(tmp_path_factory) -> list[Path]:
    return write_job(JOB, tmp_path_factory.mktemp("job"), load_template(kernels_per_group=3))


def test_a_dropped_job_shows_its_straggler_heat_map_and_timeline(tmp_path, start_server, browser, shots, rank_traces):
    server = start_server(f"sqlite:///{tmp_path / 'store.sqlite'}")
    browser.set_window_size(1400, 1000)
    browser.get(f"{server.url}/job")
    wait = WebDriverWait(browser, 180, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException])
    drop = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#job-upload input[type=file]"))
    drop.send_keys("\n".join(str(p) for p in rank_traces))
    headline = wait.until(lambda d: d.find_element(By.ID, "job-headline")).text
    assert headline.startswith("4 ranks, 4 steps: rank 2 holds the job back"), headline
    assert "cause: data loading" in headline
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#job-timeline .main-svg"))
    shots(browser, "job_page")

    # the heat map: a row per rank, a column per step, rank 2 the latest in every step
    heat = browser.execute_script(
        "const gd = document.querySelector('#job-heatmap .js-plotly-plot');"
        "return [gd.data[0].type, gd.data[0].y, gd.data[0].x, gd.data[0].z];"
    )
    kind, ranks, steps, late_ms = heat
    assert kind == "heatmap" and ranks == ["0", "1", "2", "3"] and steps == ["0", "1", "2", "3"]
    for column in range(4):
        by_rank = [row[column] for row in late_ms]
        assert max(range(4), key=lambda r: by_rank[r]) == 2
        assert by_rank[2] > 1.5  # ms: the 2 ms injected, less what the others' noise takes
    assert browser.find_elements(By.CSS_SELECTOR, "#job-heatmap .hm, #job-heatmap image")  # drawn, not only data

    # the timeline: the straggler's row beside a typical rank's, its idle gap of data loading the longer
    rows, loader_us = browser.execute_script(
        "const gd = document.querySelector('#job-timeline .js-plotly-plot');"
        "const rows = [...new Set(gd.data.flatMap(t => t.y))];"
        "const loader = gd.data.filter(t => t.name === 'GPU idle: data loading');"
        "const sums = {}; loader.forEach(t => t.y.forEach((y, i) => { sums[y] = (sums[y] || 0) + t.x[i]; }));"
        "return [rows, sums];"
    )
    straggler_row = "rank 2 (straggler)"
    typical = next(r for r in rows if r.endswith("(typical)"))
    assert sorted(rows) == sorted([straggler_row, typical])
    assert loader_us[straggler_row] - loader_us[typical] > 1_500  # µs: the 2 ms longer DataLoader range
    assert browser.find_elements(By.CSS_SELECTOR, "#job-timeline .bars path")

    # the clocks recovered within 10 us of the injected offsets; the trace shown by its file name
    cells = [
        [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        for row in browser.find_elements(By.CSS_SELECTOR, "#job-clocks tbody tr")
    ]
    clocks = {int(c[0]): c for c in cells if c}
    injected = offsets(JOB)
    assert sorted(clocks) == [0, 1, 2, 3]
    for rank, row in clocks.items():
        assert abs(duration_ns(row[1]) - int(injected[rank])) <= 10_000
        assert row[-1] == rank_traces[rank].name
