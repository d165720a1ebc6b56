"""The launch page as a one-screen answer, in headless Chromium at 1400x900 against the real `tracekit serve`: a
counters-only launch, a traced launch and a region launch (each trace paired with its profiled run's counters).
The headline, the speed-of-light chart, the roofline and What to try first sit inside the first 900 px of each; no
empty placeholder section is drawn.
A screenshot of each is taken; with TRACEKIT_UPDATE_SCREENSHOTS=1 it replaces docs/screenshots/launch_<kind>.png (the
README shows one), otherwise it goes to the test's temp dir, so an ordinary run leaves the tracked files alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tracekit.api import analyze_stored
from tracekit.ingest import ingest
from tracekit.store import Store

pytest.importorskip("selenium", minversion="4", reason="browser tests need selenium 4 (pip install 'selenium>=4.20')")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "sample_traces" / "h100"
SCREENSHOTS = REPO / "docs" / "screenshots"
UPDATE_SCREENSHOTS = os.environ.get("TRACEKIT_UPDATE_SCREENSHOTS") == "1"
FOLD_PX = 900
# What an empty placeholder section said before sections without data were left out.
PLACEHOLDERS = ("Needs per-warp timings", "Needs Nsight Compute", "Needs named regions", "no per-warp timings")


@pytest.fixture(scope="module")
def site(tmp_path_factory, start_server, browser):
    db_url = f"sqlite:///{tmp_path_factory.mktemp('answer') / 'store.sqlite'}"
    store = Store.open(db_url)
    for path in (
        H100 / "samples.raw.csv",
        H100 / "vector_add_64warps.csv.gz",
        REPO / "sample_traces" / "regions" / "ws_pipeline.v2.gz",
        REPO / "sample_traces" / "regions" / "ws_pipeline.raw.csv.gz",  # its profiled launch (make_regions.sh)
    ):
        ingest(store, path)
    launches = store.launches()
    ids = {}
    for row in launches.iter_rows(named=True):
        kind = "traced" if row["format"] == "warp-trace" and row["kernel_name"] == "vector_add" else None
        kind = kind or ("region" if row["format"] == "region-trace" else None)
        if row["format"] == "ncu-csv" and row["kernel_name"].startswith("black_scholes("):
            kind = "counters"
        if kind:
            ids[kind] = int(row["id"])
    results = {kind: analyze_stored(store, [launch_id])[0] for kind, launch_id in ids.items()}
    store.engine.dispose()
    server = start_server(db_url)
    browser.set_window_size(1400, FOLD_PX)
    return server.url, browser, ids, results


def wait(driver, condition, timeout_s: float = 60):
    return WebDriverWait(
        driver, timeout_s, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException]
    ).until(condition)


def top_px(driver, selector: str) -> float | None:
    """The element's top in page coordinates (None when absent)."""
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]);"
        "return e ? e.getBoundingClientRect().top + window.scrollY : null;",
        selector,
    )


def open_answer(driver, base_url: str, launch_id: int) -> None:
    driver.get(f"{base_url}/launch/{launch_id}")
    wait(driver, lambda d: d.find_elements(By.ID, "verdict-headline"))
    # Every figure of the answer drawn, and Dash waiting for no callback.
    wait(
        driver,
        lambda d: d.execute_script(
            "return [...document.querySelectorAll('#verdict-panel .dash-graph')]"
            ".every(g => g.querySelector('.main-svg'))"
            " && !document.querySelector('[data-dash-is-loading=\"true\"]');"
        ),
    )


@pytest.mark.parametrize("kind", ["counters", "traced", "region"])
def test_the_answer_is_above_the_fold(site, kind):
    base_url, driver, ids, results = site
    result = results[kind]
    open_answer(driver, base_url, ids[kind])
    headline = driver.find_element(By.ID, "verdict-headline")
    assert headline.text == result.classification.headline
    assert top_px(driver, "#verdict-headline") < FOLD_PX
    page_text = driver.find_element(By.TAG_NAME, "main").text
    assert not [p for p in PLACEHOLDERS if p in page_text]
    if kind != "counters":  # a trace answers with the counters of its paired profiled launch
        assert result.pairing.status == "paired" and result.counters_from is not None
    for selector in ("#sol-figure .main-svg", "#roofline-figure .main-svg", "#what-to-try li"):
        top = top_px(driver, selector)
        assert top is not None and top < FOLD_PX, (selector, top)
    # The charts hold the engine's numbers: each unit's % of peak, the roofline's achieved FLOP/s.
    bars = driver.execute_script("return document.querySelector('#sol-figure .js-plotly-plot').data[0].x;")
    assert sorted(bars, reverse=True)[0] == pytest.approx(result.classification.utilization[0].pct)
    roofline = result.ceilings.roofline
    points = driver.execute_script(
        "return document.querySelector('#roofline-figure .js-plotly-plot').data"
        ".filter(t => t.mode === 'markers').map(t => t.y[0]);"
    )
    assert points and all(y == pytest.approx(roofline.achieved_flop_per_s) for y in points)
    assert len(driver.find_elements(By.CSS_SELECTOR, "#what-to-try li")) >= 1
    if kind == "traced":
        assert top_px(driver, "#warp-timeline") > FOLD_PX  # the trace's figures follow the answer
    if kind == "counters":
        assert driver.find_elements(By.ID, "warp-timeline") == []  # no empty timeline frame
    if kind == "region":  # the named regions are drawn too, after the answer
        assert driver.find_elements(By.CSS_SELECTOR, "#region-panel .js-plotly-plot")


@pytest.mark.parametrize("kind", ["counters", "traced", "region"])
def test_screenshot_of_the_first_screen(site, kind, tmp_path):
    """The first screen (1400x900) of each page as a PNG: into docs/screenshots/launch_<kind>.png when
    TRACEKIT_UPDATE_SCREENSHOTS=1 (how the docs' pictures are redrawn), else into the test's temp dir."""
    base_url, driver, ids, _ = site
    open_answer(driver, base_url, ids[kind])
    driver.execute_script("window.scrollTo(0, 0);")
    folder = SCREENSHOTS if UPDATE_SCREENSHOTS else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"launch_{kind}.png"
    assert driver.save_screenshot(str(path))
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert path.stat().st_size > 20_000  # a drawn page, not a blank one
