"""Headless Chromium on the steps page of the real server (`tracekit serve`): at 1400x900 the step timeline and
the breakdown are drawn above the fold, with the figures the page's tables state."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import HTA_CUPTI_TRACE, real_export_path
from tracekit.ingest import ingest
from tracekit.present import steps as present
from tracekit.steps import program_of
from tracekit.store import Store

pytest.importorskip("selenium", minversion="4", reason="browser tests need selenium 4 (pip install 'selenium>=4.20')")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.browser

H200 = Path(__file__).resolve().parents[2] / "sample_traces/steps/h200"


def test_timeline_and_breakdown_above_the_fold(tmp_path, start_server, browser, shots):
    db_url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    result, _ = ingest(Store.open(db_url), H200 / "llama_small_eager.pt.trace.json.gz")
    server = start_server(db_url)
    browser.set_window_size(1400, 900)
    browser.get(f"{server.url}/steps?import={result.import_id}")
    wait = WebDriverWait(browser, 60, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException])
    timeline = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#steps-timeline .main-svg"))
    breakdown = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#steps-breakdown .main-svg"))
    bars = browser.find_elements(By.CSS_SELECTOR, "#steps-timeline .bars path")
    assert len(bars) > 100  # 135 kernels, their launch calls and the idle gaps between them
    fold = browser.execute_script("return window.innerHeight")
    for element in (timeline, breakdown):
        top = browser.execute_script("return arguments[0].getBoundingClientRect().top", element)
        assert 0 <= top < fold
    first_row = browser.find_elements(By.CSS_SELECTOR, "#steps-table tbody tr")
    assert first_row and "ProfilerStep#" in first_row[1].text
    # the step as the program runs it leads the page, as `tracekit step` leads with it, and names its calibration
    found = program_of(str(result.import_id), None, Store.open(db_url))
    headline = browser.find_element(By.ID, "steps-program")
    assert headline.text == present.program_headline(found)
    assert 0 <= browser.execute_script("return arguments[0].getBoundingClientRect().top", headline) < fold
    notes = browser.find_element(By.ID, "steps-program-notes").text
    assert "profiler cost taken out per shipped: NVIDIA H200" in notes
    shots(browser, "steps_page")


def test_a_step_against_its_baseline_in_the_browser(tmp_path, start_server, browser, shots):
    """The CUDA-graph Llama step against the eager one: the comparison's headline above the timeline, the timeline
    still above the fold, the table of parts below with the kernel wait and launch-bound idle the graph removed."""
    db_url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    store = Store.open(db_url)
    eager, _ = ingest(store, H200 / "llama_small_eager.pt.trace.json.gz")
    graph, _ = ingest(store, H200 / "llama_small_cudagraph.pt.trace.json.gz")
    server = start_server(db_url)
    browser.set_window_size(1400, 900)
    browser.get(f"{server.url}/steps?import={graph.import_id}&baseline={eager.import_id}")
    wait = WebDriverWait(browser, 60, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException])
    timeline = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#steps-timeline .main-svg"))
    headline = browser.find_element(By.ID, "steps-compare-headline").text
    assert headline.startswith(f"Against import {eager.import_id} (baseline): step ") and " -> " in headline
    fold = browser.execute_script("return window.innerHeight")
    assert 0 <= browser.execute_script("return arguments[0].getBoundingClientRect().top", timeline) < fold
    found = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#steps-compare tbody tr"))
    cells = [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in found]
    rows = {c[0]: c for c in cells if c}  # the header row holds th cells only
    assert rows["idle: launch-bound"][-1].startswith("-")  # the graph took launch-bound idle away
    shots(browser, "steps_against_baseline")


def test_trace_analyses_in_the_browser(tmp_path, start_server, browser, shots):
    """The DDP rank's steps page in Chromium: HTA's trace analyses below the step, the collectives with their
    process group and ranks beside each, as `tracekit features IMPORT` lists them."""
    from tracekit.api import TraceAnalysis
    from tracekit.present import trace_features as hta

    db_url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    result, _ = ingest(Store.open(db_url), H200 / "ddp_rank0.pt.trace.json.gz")
    server = start_server(db_url)
    browser.set_window_size(1400, 900)
    browser.get(f"{server.url}/steps?import={result.import_id}")
    wait = WebDriverWait(browser, 60, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException])
    section = wait.until(lambda d: d.find_element(By.ID, "steps-hta"))
    found = TraceAnalysis(Store.open(db_url)).features(str(result.import_id))
    tables, charts = hta.feature_tables(found), hta.feature_figures(found)
    titles = [h.text for h in section.find_elements(By.TAG_NAME, "h4")]
    assert titles == [t.title for t in tables] + [c.title for c in charts]
    for chart in charts:  # each line drawn: a stream's queue, a kind's bandwidth
        lines = wait.until(
            lambda d, key=chart.key: d.find_elements(By.CSS_SELECTOR, f"#steps-hta-{key} .scatterlayer .trace")
        )
        assert len(lines) == len(chart.spec["data"])
    rows = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#steps-hta-2 tbody tr"))
    collectives = next(t for t in tables if t.title == "Collectives")
    shown = [r.text for r in rows]
    for row in collectives.rows:  # collective, process group, ranks, count
        assert any(all(cell in text for cell in (row[0], row[2], row[3], row[5])) for text in shown), row
    browser.execute_script("arguments[0].scrollIntoView()", section)
    shots(browser, "steps_trace_analyses")
    browser.execute_script("arguments[0].scrollIntoView()", browser.find_element(By.ID, "steps-hta-queue_length"))
    shots(browser, "steps_trace_charts")


def test_kernel_counters_in_the_browser(tmp_path, start_server, browser, shots):
    """HTA's CUPTI range-profiler trace in Chromium: no step (the one line says why), and its kernel counters per
    operator and per kernel, as `tracekit features IMPORT` lists them."""
    from tracekit.api import TraceAnalysis
    from tracekit.present import trace_features as hta

    db_url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    result, _ = ingest(Store.open(db_url), real_export_path(HTA_CUPTI_TRACE))
    server = start_server(db_url)
    browser.set_window_size(1400, 900)
    browser.get(f"{server.url}/steps?import={result.import_id}")
    wait = WebDriverWait(browser, 60, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException])
    section = wait.until(lambda d: d.find_element(By.ID, "steps-hta"))
    assert "CUPTI range profiler" in browser.find_element(By.ID, "steps-missing").text
    counters = hta.counter_tables(TraceAnalysis(Store.open(db_url)).features(str(result.import_id)))
    titles = [h.text for h in section.find_elements(By.TAG_NAME, "h4")]
    assert titles[-2:] == [t.title for t in counters]
    index = titles.index(counters[0].title)
    rows = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"#steps-hta-{index} tbody tr"))
    shown = [r.text for r in rows]
    for row in counters[0].rows:  # operator, kernels, FLOPs
        assert any(all(cell in text for cell in (row[0], row[1], row[-1])) for text in shown), row
    browser.execute_script("arguments[0].scrollIntoView()", browser.find_element(By.ID, f"steps-hta-{index}"))
    shots(browser, "steps_kernel_counters")
