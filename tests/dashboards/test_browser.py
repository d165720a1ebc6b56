"""Headless Chromium driving the real dashboard (`tracekit serve` over a SQLite file): upload, library, launch
page with its warp timeline, compare, a malformed upload, delete. One browser and one server for the module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracekit import format as display
from tracekit.api import analyze_stored, predict_stored
from tracekit.ingest import ingest
from tracekit.present.prediction import prediction_text
from tracekit.present.rules.notes import counters_evidence
from tracekit.store import Store

pytest.importorskip("selenium", minversion="4", reason="browser tests need selenium 4 (pip install 'selenium>=4.20')")
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.browser

XSS_KERNEL = "<img src=x onerror=alert(1)>"
NSYS_ONE_KERNEL = "nsys_2025.5.2_RTX3060_perfsandbox_report1.sqlite"  # README: 1 kernel, kernVectorAdd
NSYS_KERNEL_NAME = "kernVectorAdd(const float *, const float *, float *, int)"
GRAPH = "#warp-timeline .js-plotly-plot"


@pytest.fixture(scope="module")
def files(tmp_path_factory, write_warp_trace, synthetic_warps) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("uploads")
    garbage = folder / "garbage.txt"
    garbage.write_bytes(b"this is not a profile\x01\x02\n42,43\n")
    return {
        "small": write_warp_trace(folder / "small_trace.csv", XSS_KERNEL, synthetic_warps(64)),  # 256 warps
        "big": write_warp_trace(folder / "big_trace.csv", "big_kernel", synthetic_warps(2000)),  # 8000 warps
        "garbage": garbage,
    }


@pytest.fixture(scope="module")
def site(tmp_path_factory, start_server, browser):
    """The server's store URL, base address, and the browser (started first, so a missing Chromium skips
    before any server starts)."""
    db_url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'store.sqlite'}"
    server = start_server(db_url)
    return db_url, server.url, browser


def wait(driver, condition, timeout_s: float = 30):
    """Poll `condition`; an element re-rendered while it was read (stale) counts as not yet."""
    return WebDriverWait(
        driver, timeout_s, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
    ).until(condition)


def upload(driver, base_url: str, paths: list[Path]) -> list[list[str]]:
    """Drop files on the upload page; returns the status table's rows (file, result, details)."""
    driver.get(f"{base_url}/upload")
    file_input = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#upload input[type=file]"))
    file_input.send_keys("\n".join(str(p) for p in paths))
    rows = wait(
        driver,
        lambda d: (
            (found := d.find_elements(By.CSS_SELECTOR, "#upload-status-table tbody tr"))
            and len(found) == len(paths)
            and found
        ),
        timeout_s=60,
    )
    return [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")][:3] for row in rows]


def field_values(driver, table_id: str) -> dict[str, str]:
    """A field / value table on the page (`present.launch.launch_table`), as drawn: each row's field and value."""
    rows = driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tbody tr")
    cells = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in rows]
    return {row[0]: row[1] for row in cells}


def no_alert(driver) -> bool:
    try:
        _ = driver.switch_to.alert
    except NoAlertPresentException:
        return True
    return False


def graph_points(driver) -> tuple[list[str], int]:
    """Trace types of the timeline and the number of x values the browser holds."""
    return driver.execute_script(
        f"const gd = document.querySelector('{GRAPH}');"
        "return [gd.data.map(t => t.type || 'scatter'), gd.data.reduce((n, t) => n + (t.x ? t.x.length : 0), 0)];"
    )


def launch_id_of(db_url: str, kernel: str, files: dict[str, Path], real_export) -> int:
    """The launch of `kernel`, importing the test files when an earlier test did not (ingest is idempotent)."""
    store = Store.open(db_url)
    for path in (files["small"], files["big"], real_export(NSYS_ONE_KERNEL)):
        ingest(store, path)
    launches = store.launches()
    return int(launches.filter(launches["kernel_name"] == kernel)["id"][0])


def test_upload_several_files_then_see_them_in_the_library(site, files, real_export, shots):
    db_url, base_url, driver = site
    paths = [real_export(NSYS_ONE_KERNEL), files["small"], files["big"]]
    rows = upload(driver, base_url, paths)
    shots(driver, "upload")
    # The browser may hand the files over in another order than they were given.
    assert sorted(row[:2] for row in rows) == sorted([p.name, "imported"] for p in paths)
    assert [row[2].split(" imported as import ")[1].split(" with ")[1] for row in rows] == ["1 launch"] * 3
    store = Store.open(db_url)
    assert sorted(store.imports()["name"].to_list()) == sorted(p.name for p in paths)

    driver.find_element(By.LINK_TEXT, "Library").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#launches-table td[data-dash-column=kernel_name]"))
    shots(driver, "library")
    import_names = [c.text for c in driver.find_elements(By.CSS_SELECTOR, "#imports-table td[data-dash-column=name]")]
    assert sorted(import_names) == sorted(p.name for p in paths)
    kernels = [
        c.text for c in driver.find_elements(By.CSS_SELECTOR, "#launches-table td[data-dash-column=kernel_name]")
    ]
    assert sorted(kernels) == sorted([NSYS_KERNEL_NAME, XSS_KERNEL, "big_kernel"])
    assert driver.find_elements(By.CSS_SELECTOR, "img[src=x]") == [] and no_alert(driver)

    # Native filtering: typing in the kernel column's filter keeps one row.
    kernel_filter = driver.find_element(By.CSS_SELECTOR, "#launches-table th[data-dash-column=kernel_name] input")
    kernel_filter.send_keys("big_kernel\n")
    wait(
        driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#launches-table td[data-dash-column=kernel_name]")) == 1
    )


def test_launch_page_draws_each_warp_and_shows_names_as_text(site, files, real_export, shots, synthetic_warps):
    db_url, base_url, driver = site
    launch_id = launch_id_of(db_url, XSS_KERNEL, files, real_export)
    driver.get(f"{base_url}/library")
    link = wait(driver, lambda d: d.find_element(By.LINK_TEXT, f"launch {launch_id}"))
    link.click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"{GRAPH} .main-svg"))
    shots(driver, "launch_small")
    assert driver.current_url.endswith(f"/launch/{launch_id}")
    types, points = graph_points(driver)
    assert len(types) > 0 and set(types) == {"scatter"}
    assert points == 3 * len(synthetic_warps(64))  # every warp drawn: start, end, gap
    fields = field_values(driver, "launch-table")  # present's launch table, as the report shows it
    assert fields["kernel"] == fields["signature"] == XSS_KERNEL
    assert fields["grid"] == "64 x 1 x 1" and fields["block"] == "128 x 1 x 1"
    assert driver.find_element(By.CSS_SELECTOR, "h2.kernel-name").text == XSS_KERNEL
    assert driver.find_elements(By.CSS_SELECTOR, "img[src=x]") == [] and no_alert(driver)
    for slot in ("verdict-panel", "occupancy-panel", "occupancy-time-panel", "latency-panel", "littles-law-panel"):
        assert driver.find_element(By.ID, slot).is_displayed()


def ready_to_zoom(driver, graph: str) -> bool:
    """The figure is drawn, dcc.Graph listens to its relayout events (it binds them once plotly's draw has
    resolved, a moment after the first SVG appears) and Dash waits for no callback's answer."""
    return driver.execute_script(
        "const gd = document.querySelector(arguments[0]);"
        "return !!(gd && gd.querySelector('.main-svg') && gd._ev && gd._ev.listeners('plotly_relayout').length)"
        " && !document.querySelector('[data-dash-is-loading=\"true\"]');",
        graph,
    )


def test_timeline_bins_when_zoomed_out_and_draws_warps_when_zoomed_in(site, files, real_export, shots, synthetic_warps):
    db_url, base_url, driver = site
    launch_id = launch_id_of(db_url, "big_kernel", files, real_export)
    driver.get(f"{base_url}/launch/{launch_id}")
    wait(driver, lambda d: ready_to_zoom(d, GRAPH))
    types, points = graph_points(driver)
    assert types == ["heatmap"] and points <= 20_000
    # Zoom as a drag on the time axis does: the server sends the warps of [2, 5.5] µs.
    driver.execute_script(
        f"Plotly.relayout(document.querySelector('{GRAPH}'), {{'xaxis.range[0]': 2.0, 'xaxis.range[1]': 5.5}});"
    )
    expected = sum(1 for _, _, _, start, end in synthetic_warps(2000) if end > 2000 and start < 5500)
    wait(driver, lambda d: graph_points(d)[0][0] == "scatter")
    shots(driver, "launch_zoomed")
    assert graph_points(driver)[1] == 3 * expected
    wait(driver, lambda d: ready_to_zoom(d, GRAPH))
    driver.execute_script(f"Plotly.relayout(document.querySelector('{GRAPH}'), {{'xaxis.autorange': true}});")
    wait(driver, lambda d: graph_points(d)[0] == ["heatmap"])


def test_compare_page_shows_both_launches(site, files, real_export, shots):
    db_url, base_url, driver = site
    a = launch_id_of(db_url, XSS_KERNEL, files, real_export)
    b = launch_id_of(db_url, NSYS_KERNEL_NAME, files, real_export)
    driver.get(f"{base_url}/compare?a={a}&b={b}")
    wait(driver, lambda d: d.find_elements(By.ID, "launch-table-b"))
    shots(driver, "compare")
    kernels = [field_values(driver, f"launch-table-{side}")["signature"] for side in "ab"]
    assert kernels == [XSS_KERNEL, NSYS_KERNEL_NAME]
    assert driver.find_elements(By.CSS_SELECTOR, "img[src=x]") == [] and no_alert(driver)


def test_malformed_upload_shows_its_error_and_stores_nothing(site, files, shots):
    db_url, base_url, driver = site
    before = Store.open(db_url).imports().height
    [(file_name, result, details)] = upload(driver, base_url, [files["garbage"]])
    shots(driver, "upload_error")
    assert (file_name, result) == ("garbage.txt", "error")
    assert details.startswith("garbage.txt") and "tracekit-upload-" not in details
    assert Store.open(db_url).imports().height == before


def test_delete_an_import_after_confirming(site, files, real_export):
    db_url, base_url, driver = site
    launch_id_of(db_url, XSS_KERNEL, files, real_export)
    store = Store.open(db_url)
    imports = store.imports()
    target = int(imports.filter(imports["name"] == files["small"].name)["id"][0])
    driver.get(f"{base_url}/library")
    rows = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#imports-table tbody tr"))
    for row in rows:
        cells = row.find_elements(By.CSS_SELECTOR, "td[data-dash-column=id]")
        if cells and cells[0].text == str(target):
            row.find_element(By.CSS_SELECTOR, "input[type=checkbox]").click()
    driver.find_element(By.ID, "delete-imports").click()
    alert = wait(driver, expected_conditions.alert_is_present())
    assert f"Delete import {target} " in alert.text
    alert.accept()
    wait(driver, lambda d: d.find_element(By.ID, "delete-status").text == f"Deleted import {target}.")
    assert target not in store.imports()["id"].to_list()
    assert store.imports().height == imports.height - 1


# ---- the analysis panels, on the team's H100 samples -------------------------------------------------------------

VECTOR_ADD = [f"h100/vector_add_{warps:02d}warps.csv.gz" for warps in (8, 16, 32, 64)]


def vector_add_ids(db_url: str, sample_trace) -> list[int]:
    """The launches of the four vector_add traces (8, 16, 32, 64 warps per SM), imported when not yet."""
    store = Store.open(db_url)
    ids = []
    for name in VECTOR_ADD:
        result, _ = ingest(store, sample_trace(name))
        ids.append(int(store.launches(import_id=result.import_id)["id"][0]))
    return ids


def type_into(driver, element_id: str, text: str) -> None:
    """Replace a number input's text and press Enter (the calculator's inputs apply on Enter)."""
    field = driver.find_element(By.ID, element_id)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(text, Keys.ENTER)


def test_sample_trace_page_draws_the_timeline_verdict_and_sweep(site, sample_trace, shots):
    db_url, base_url, driver = site
    ids = vector_add_ids(db_url, sample_trace)
    driver.get(f"{base_url}/launch/{ids[0]}")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"{GRAPH} .main-svg"))
    types, points = graph_points(driver)
    assert types == ["heatmap"] and 0 < points <= 20_000  # 16,384 warps: binned per SM
    # 8 warps per SM, far below the ~33 the sweep says hide the latency: latency-bound, no unit limits it
    assert driver.find_element(By.ID, "verdict-mode").text == "latency-bound"
    assert driver.find_elements(By.CSS_SELECTOR, "#verdict-evidence li")
    for figure_id in ("occupancy-time-figure", "latency-figure", "sweep-figure"):
        wait(driver, lambda d, f=figure_id: d.find_elements(By.CSS_SELECTOR, f"#{f} .main-svg"))
    measured = driver.execute_script("return document.querySelector('#sweep-figure .js-plotly-plot').data[0].x.length")
    assert measured == 4  # one point per traced launch of vector_add
    shots(driver, "launch_vector_add")


def test_the_plotting_library_loads_with_the_app_shell_before_any_figure(site):
    """A page without figures (upload) still loads plotly.js: a launch page's figures then draw as soon as the
    page arrives instead of waiting for the library."""
    _, base_url, driver = site
    driver.get(f"{base_url}/upload")
    wait(driver, lambda d: d.find_elements(By.ID, "upload"))
    assert not driver.find_elements(By.CSS_SELECTOR, "#page .js-plotly-plot")
    wait(driver, lambda d: d.execute_script("return typeof window.Plotly !== 'undefined'"))


def test_a_big_launch_is_drawn_first_and_its_verdict_follows(tmp_path, start_server, browser, sample_trace):
    """A server told to defer analyses above 100 warps, a 16,384-warp launch not analysed yet: its page asks for
    the analysis after drawing, and the verdict that arrives is the engine's, with the panels that need it."""
    db_url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    launch_id = vector_add_ids(db_url, sample_trace)[0]
    server = start_server(db_url, env={"TRACEKIT_DEFER_ANALYSIS_WARPS": "100"})
    browser.get(f"{server.url}/launch/{launch_id}")
    for figure_id in ("warp-timeline", "occupancy-time-figure", "latency-figure"):
        wait(browser, lambda d, f=figure_id: d.find_elements(By.CSS_SELECTOR, f"#{f} .main-svg"))
    shown = wait(browser, lambda d: d.find_elements(By.ID, "verdict-mode"), timeout_s=60)[0].text
    assert shown == "latency-bound"  # as the page that analyses inline shows it (the test above)
    assert not browser.find_elements(By.ID, "analysis-running")
    for table in ("tail-table", "latency-table", "littles-law-table", "whatif-occupancy"):
        assert browser.find_elements(By.ID, table), table
    evidence = browser.find_element(By.ID, "pairing-evidence").text
    result = analyze_stored(Store.open(db_url), [launch_id])[0]  # the page's analysis, now in the store
    assert evidence == counters_evidence(result) and shown == result.classification.mode


def test_what_if_occupancy_follows_the_typed_registers(site, sample_trace, shots):
    db_url, base_url, driver = site
    launch_id = vector_add_ids(db_url, sample_trace)[0]
    driver.get(f"{base_url}/launch/{launch_id}")
    occupancy = wait(driver, lambda d: d.find_element(By.ID, "whatif-occupancy"))
    assert occupancy.text.startswith("Theoretical occupancy 8 of 64 warps per SM (12.5%), limited by shared memory")
    type_into(driver, "whatif-smem", "0")
    wait(driver, lambda d: "64 of 64 warps per SM" in d.find_element(By.ID, "whatif-occupancy").text)
    # 64 registers per thread: 2,048 per warp, 8 warps per sub-partition, 32 per SM.
    type_into(driver, "whatif-registers", "64")
    wait(
        driver,
        lambda d: d.find_element(By.ID, "whatif-occupancy").text.startswith(
            "Theoretical occupancy 32 of 64 warps per SM (50.0%), limited by registers"
        ),
    )
    # The prediction is tracekit predict's (api.predict_stored) for the changed knobs, with its interval and basis.
    store = Store.open(db_url)
    expected = predict_stored(store, analyze_stored(store, [launch_id])[0], regs=64, smem=0)
    got = expected.predicted
    speedup = f"speed-up {display.number(got.speedup, digits=3)}x (interval {display.number(got.low, digits=3)}x to "
    wait(driver, lambda d: d.find_element(By.ID, "whatif-prediction").text.startswith("regs 64, smem 0: predicted"))
    assert speedup in driver.find_element(By.ID, "whatif-prediction").text
    result = analyze_stored(store, [launch_id])[0]
    words = prediction_text(expected, result)  # tracekit predict's lines: binds and basis (profile cited once)
    table = driver.find_element(By.ID, "whatif-prediction-table").text
    assert f"binds {words.binds}" in table and f"basis {words.basis}" in table
    driver.execute_script("arguments[0].scrollIntoView()", driver.find_element(By.ID, "what-if-panel"))
    shots(driver, "what_if")
    type_into(driver, "whatif-block", "2048")
    wait(driver, lambda d: "over the 1024-thread limit" in d.find_element(By.ID, "whatif-occupancy").text)


def test_compare_page_shows_the_difference_table_and_links_the_time_axes(site, sample_trace, shots):
    db_url, base_url, driver = site
    ids = vector_add_ids(db_url, sample_trace)
    a, b = ids[0], ids[3]
    driver.get(f"{base_url}/compare?a={a}&b={b}")
    rows = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#compare-diff-table tbody tr"))
    cells = {
        row.find_elements(By.TAG_NAME, "td")[0].text: [c.text for c in row.find_elements(By.TAG_NAME, "td")[1:]]
        for row in rows
    }
    durations = dict(Store.open(db_url).launches(launch_ids=[a, b]).select("id", "duration_ns").iter_rows())
    assert cells["duration"][:2] == [display.duration(durations[a]), display.duration(durations[b])]
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#compare-occupancy-figure .main-svg"))
    matches = driver.execute_script(
        "return document.querySelector('#compare-occupancy-figure .js-plotly-plot').layout.xaxis2.matches"
    )
    assert matches == "x"
    # Zoom A's time axis: B's follows.
    driver.execute_script(
        "Plotly.relayout(document.querySelector('#compare-occupancy-figure .js-plotly-plot'), "
        "{'xaxis.range[0]': 10, 'xaxis.range[1]': 40});"
    )
    wait(
        driver,
        lambda d: (
            d.execute_script(
                "return document.querySelector('#compare-occupancy-figure .js-plotly-plot')._fullLayout.xaxis2.range"
            )
            == [10, 40]
        ),
    )
    driver.execute_script("arguments[0].scrollIntoView()", driver.find_element(By.ID, "compare-diff-table"))
    shots(driver, "compare_vector_add")


# Every table on the page as drawn: its rows of cell texts, header row first.
DRAWN_TABLES = (
    "return Array.from(document.querySelectorAll('table')).map("
    "t => Array.from(t.rows).map(r => Array.from(r.cells).map(c => c.textContent.trim())))"
)


def test_launch_page_draws_the_tables_every_view_shows(site, sample_trace, shots):
    """vector_add at 8 warps per SM (its kernel's sweep over four traces): every table `present.launch.launch_tables`
    decides (the launch's own among them, not the stored row) is drawn whole, cell for cell, as the reports and the
    CLI show it (tests/reports/test_one_presentation.py); the compare page draws each side's launch table."""
    from tracekit.present.launch import launch_table, launch_tables

    db_url, base_url, driver = site
    ids = vector_add_ids(db_url, sample_trace)
    results = analyze_stored(Store.open(db_url), [ids[0], ids[3]])
    driver.get(f"{base_url}/launch/{ids[0]}")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#launch-table tbody tr"))
    drawn = driver.execute_script(DRAWN_TABLES)
    tables = launch_tables(results[0])
    assert tables[0].title == "Launch" and len(tables) >= 6
    for table in tables:
        assert [table.columns, *table.rows] in drawn, table.title
    driver.get(f"{base_url}/compare?a={ids[0]}&b={ids[3]}")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#launch-table-b tbody tr"))
    drawn = driver.execute_script(DRAWN_TABLES)
    for result in results:
        table = launch_table(result)
        assert [table.columns, *table.rows] in drawn, result.launch_id
