"""Headless Chromium on the steps page of the real server (`tracekit serve`): at 1400x900 the step timeline and
the breakdown are drawn above the fold, with the figures the page's tables state."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracekit.ingest import ingest
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
    shots(browser, "steps_page")
