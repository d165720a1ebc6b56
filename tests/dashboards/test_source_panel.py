"""The launch page's source panel (issue 45) in headless Chromium at 1400x900 against the real `tracekit serve`: the
recorded H200 report of sample_traces/source_lines imported whole, its transposeNaive launch shown with the code
(embedded in the report), the heat column and the limiter's line marked above the fold; an Nsight Compute launch
without source samples gets one line saying so and no panel; a Source-page CSV whose source text is hostile shows
that text as text.

Expected values come from the API (`tracekit lines`' figures) and from the kernel's own source: the line the case
marks `[transpose_naive: limiter]` in sample_traces/source_lines/src/transpose.cu."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tracekit import format as fmt
from tracekit.api import source_lines
from tracekit.ingest import ingest
from tracekit.present.source_lines import NO_SOURCE, limiter_sentence
from tracekit.store import Store

pytest.importorskip("selenium", minversion="4", reason="browser tests need selenium 4 (pip install 'selenium>=4.20')")
pytest.importorskip("ncu_report", reason="the .ncu-rep reader needs NVIDIA's ncu_report (pip install ncu-report)")
from selenium.webdriver.common.by import By  # noqa: E402

from tests.dashboards.test_launch_answer import FOLD_PX, top_px, wait  # noqa: E402
from tests.helpers import HOSTILE_SOURCE as HOSTILE  # noqa: E402
from tests.helpers import hostile_source_csv as hostile_csv  # noqa: E402
from tests.helpers import marked_line  # noqa: E402

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
SET = REPO / "sample_traces" / "source_lines"


@pytest.fixture(scope="module")
def site(tmp_path_factory, start_server, browser):
    folder = tmp_path_factory.mktemp("source")
    db_url = f"sqlite:///{folder / 'store.sqlite'}"
    store = Store.open(db_url)
    report = ingest(store, SET / "h200" / "source_lines.ncu-rep.gz")[0].import_id
    plain = ingest(store, REPO / "sample_traces" / "h100" / "memcpy_1load.csv.gz")[0].import_id
    hostile = ingest(store, hostile_csv(folder))[0].import_id
    launches = store.launches()
    [transpose] = [
        int(row["id"])
        for row in launches.filter(pl.col("import_id") == report).iter_rows(named=True)
        if row["kernel_name"].startswith("transposeNaive(")
    ]
    ids = {
        "report": report,
        "transpose": transpose,
        "none": int(launches.filter(pl.col("import_id") == plain)["id"][0]),
        "hostile": int(launches.filter(pl.col("import_id") == hostile)["id"][0]),
    }
    views = {kind: source_lines(store, launch_id) for kind, launch_id in ids.items() if kind != "report"}
    views |= {
        int(launch_id): source_lines(store, int(launch_id))
        for launch_id in launches.filter(pl.col("import_id") == report)["id"]
    }
    store.engine.dispose()
    server = start_server(db_url)
    browser.set_window_size(1400, FOLD_PX)
    return server.url, browser, ids, views


def first_screen_px(driver) -> float:
    """Where the first screen ends, in page coordinates: the window's viewport (a 1400x900 window shows less than
    900 px of page), at most the fold the answer's tests use."""
    return min(FOLD_PX, driver.execute_script("return window.innerHeight;"))


def top_row_bottom_px(driver) -> tuple[str, float]:
    """The rank-1 line of the listing: its line number and its bottom in page coordinates."""
    return driver.execute_script(
        "const r = document.querySelector('#source-code tr[data-rank=\"1\"]');"
        "return [r.dataset.line, r.getBoundingClientRect().bottom + window.scrollY];"
    )


def open_page(driver, base_url: str, launch_id: int) -> None:
    driver.get(f"{base_url}/launch/{launch_id}")
    wait(driver, lambda d: d.find_elements(By.ID, "verdict-headline"))
    wait(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, '[data-dash-is-loading="true"]'))


def test_the_hot_line_is_above_the_fold_with_its_share_and_the_limiter_mark(site):
    base_url, driver, ids, views = site
    view = views["transpose"]
    assert view is not None
    top = view.result.lines[0]
    # the ground truth: the line the published kernel's problem is on
    assert top.line == marked_line(SET / "src" / "transpose.cu", "[transpose_naive: limiter]")
    open_page(driver, base_url, ids["transpose"])
    panel_top = top_px(driver, "#source-panel")
    assert panel_top is not None and panel_top < FOLD_PX
    row = driver.find_element(By.CSS_SELECTOR, '#source-code tr[data-rank="1"]')
    assert row.get_attribute("data-line") == str(top.line)
    _, bottom = top_row_bottom_px(driver)
    assert bottom <= first_screen_px(driver)  # the whole hot line is on the first screen
    heat, number, mark, code, kind = (cell.text for cell in row.find_elements(By.TAG_NAME, "td"))
    assert heat == fmt.fraction(top.samples_share)
    assert top.samples_share > 0.5  # the naive store holds most of the samples
    assert number == str(top.line) and mark == "◆" and kind == top.kind == "uncoalesced access"
    assert "[transpose_naive: limiter]" in driver.execute_script("return arguments[0].textContent;", row)
    # every sampled line of the listing carries the API's share; the rows run in line order
    shown = driver.execute_script(
        "return [...document.querySelectorAll('#source-code tr')].map(r => [r.dataset.line, r.cells[0].textContent]);"
    )
    shares = {str(x.line): fmt.fraction(x.samples_share) for x in view.result.lines if x.samples}
    assert [int(line) for line, _ in shown] == sorted(int(line) for line, _ in shown)
    assert {line: text for line, text in shown if text} == {k: v for k, v in shares.items() if k in dict(shown)}
    sentences = driver.find_element(By.ID, "source-sentences").text
    assert view.result.limiter is not None and limiter_sentence(view.result.limiter) in sentences
    # the stall breakdown: the launch's largest reason first, with its share of the samples
    first = driver.find_elements(By.CSS_SELECTOR, "#source-stalls tbody tr")[0].find_elements(By.TAG_NAME, "td")
    totals: dict[str, int] = {}
    for line in view.result.lines:
        for stall in line.stalls:
            totals[stall.reason] = totals.get(stall.reason, 0) + stall.samples
    reason, samples = max(totals.items(), key=lambda kv: kv[1])
    assert first[0].text.startswith(reason)
    assert first[1].text == fmt.fraction(samples / view.result.total_samples)


def test_every_recorded_kernel_shows_its_top_line_on_the_first_screen(site):
    """The 20 launches of the recorded set (11 cases, before and after): each page's listing leads with the line the
    API ranks first, and shows it without scrolling."""
    base_url, driver, ids, views = site
    launches = sorted(key for key in views if isinstance(key, int))
    assert len(launches) == 20
    for launch_id in launches:
        view = views[launch_id]
        assert view is not None
        open_page(driver, base_url, launch_id)
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, '#source-code tr[data-rank="1"]'))
        line, bottom = top_row_bottom_px(driver)
        assert line == str(view.result.lines[0].line), launch_id
        assert bottom <= first_screen_px(driver), (launch_id, bottom)


def test_a_launch_without_source_samples_says_so_in_one_line(site):
    base_url, driver, ids, views = site
    assert views["none"] is None
    open_page(driver, base_url, ids["none"])
    assert driver.find_elements(By.ID, "source-panel") == []
    missing = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#not-recorded li")]
    assert missing.count(NO_SOURCE) == 1


def test_hostile_source_text_is_shown_as_text(site):
    base_url, driver, ids, views = site
    open_page(driver, base_url, ids["hostile"])
    wait(driver, lambda d: d.find_elements(By.ID, "source-code"))
    row = driver.find_element(By.CSS_SELECTOR, '#source-code tr[data-line="33"]')
    code = row.find_element(By.CSS_SELECTOR, "td.code")
    assert driver.execute_script("return arguments[0].textContent;", code) == HOSTILE
    assert driver.find_elements(By.CSS_SELECTOR, "#source-panel script, #source-panel img") == []
    assert driver.execute_script("return document.querySelectorAll('main img').length;") == 0
