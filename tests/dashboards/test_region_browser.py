"""Headless Chromium on the launch page's region figures (`tracekit serve` over a SQLite file): the warp timeline
coloured by region (binned zoomed out, every bar zoomed in) and each region's occupancy over time, on the real
warp-specialized sample (sample_traces/regions/ws_pipeline.v2.gz) checked against a plain reading of its CSV, and
region names that look like markup shown as text."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest

from tracekit.ingest import ingest
from tracekit.store import Store

pytest.importorskip("selenium", minversion="4", reason="browser tests need selenium 4 (pip install 'selenium>=4.20')")
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
WS_PIPELINE = REPO / "sample_traces" / "regions" / "ws_pipeline.v2.gz"
PROTON = REPO / "sample_traces" / "regions" / "proton_matmul.chrome_trace.gz"
TIMELINE = "#region-timeline .js-plotly-plot"
OCCUPANCY = "#region-occupancy .js-plotly-plot"
ODD_NAMES = ("<b>load</b>", "mma & %{y} <img src=x onerror=alert(1)>")


def plain_regions() -> tuple[list[dict], int]:
    """The sample's region rows as csv reads them, and the SM count its header states."""
    with gzip.open(WS_PIPELINE, "rt") as handle:
        lines = list(handle)
    sm_count = int(next(line for line in lines if line.startswith("# sm_count:")).split(":")[1])
    rows = [r for r in csv.DictReader(line for line in lines if not line.startswith("#")) if r["region"]]
    return rows, sm_count


def odd_names_trace(path: Path) -> Path:
    """A small v2 trace whose region names look like markup and like plotly templates."""
    origin = 1_700_000_000_000_000_000
    lines = [
        "# tracekit-warp-trace v2",
        "# kernel: odd_names",
        "# sm_count: 2",
        "launch,sm_id,block_id,warp_in_block,region,start_ns,end_ns,start_cycles,end_cycles",
    ]
    for sm in range(2):
        for warp in range(2):
            t = origin + 100 * warp
            lines.append(f"0,{sm},{sm},{warp},{ODD_NAMES[0]},{t},{t + 400},,")
            lines.append(f'0,{sm},{sm},{warp},"{ODD_NAMES[1]}",{t + 500},{t + 900},,')
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory, start_server, browser):
    folder = tmp_path_factory.mktemp("regions")
    db_url = f"sqlite:///{folder / 'store.sqlite'}"
    store = Store.open(db_url)
    ingest(store, WS_PIPELINE)
    ingest(store, odd_names_trace(folder / "odd_names.csv"))
    ingest(store, PROTON)
    launches = store.launches()
    ids = dict(zip(launches["kernel_name"].to_list(), launches["id"].to_list(), strict=True))
    server = start_server(db_url)
    return server.url, browser, ids


def wait(driver, condition, timeout_s: float = 60):
    return WebDriverWait(
        driver, timeout_s, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException]
    ).until(condition)


def legend(driver, graph: str) -> list[str]:
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, f"{graph} g.legend text.legendtext")]


def drawn(driver) -> tuple[list[str], int]:
    """The timeline's trace types (legend-only entries left out) and how many bars its scatter traces hold."""
    return driver.execute_script(
        f"const gd = document.querySelector('{TIMELINE}');"
        "const shown = gd.data.filter(t => !(t.x && t.x.length === 1 && t.x[0] === null));"
        "return [shown.map(t => t.type || 'scatter'),"
        " shown.filter(t => (t.type || 'scatter') === 'scatter').reduce((n, t) => n + t.x.length / 3, 0)];"
    )


def dash_idle(driver) -> bool:
    """No component waits for a callback's answer (Dash marks those with data-dash-is-loading)."""
    return driver.execute_script("return !document.querySelector('[data-dash-is-loading=\"true\"]');")


def zoom(driver, update: str) -> None:
    """`Plotly.relayout` on the timeline once every earlier answer has arrived, as a user's next drag would be."""
    wait(driver, dash_idle)
    # dcc.Graph binds its relayout listener once plotly's draw resolves, a moment after the first SVG appears.
    wait(
        driver,
        lambda d: d.execute_script(
            f"const gd = document.querySelector('{TIMELINE}');"
            "return !!(gd._ev && gd._ev.listeners('plotly_relayout').length);"
        ),
    )
    driver.execute_script(f"Plotly.relayout(document.querySelector('{TIMELINE}'), {update});")


def test_region_figures_draw_the_sample_with_names_as_text(site, shots):
    base_url, driver, ids = site
    rows, sm_count = plain_regions()
    names = {r["region"] for r in rows}
    driver.get(f"{base_url}/launch/{ids['ws_pipeline']}")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"{TIMELINE} .main-svg"))
    driver.execute_script("arguments[0].scrollIntoView()", driver.find_element(By.ID, "region-timeline"))
    wait(driver, lambda d: len(legend(d, TIMELINE)) == len(names))
    shots(driver, "region_timeline")
    # Zoomed out: 48,576 instances are binned into one heatmap, each region named in the legend as text.
    assert sorted(legend(driver, TIMELINE)) == sorted(names)
    types, bars = drawn(driver)
    assert types == ["heatmap"] and bars == 0
    cells = driver.execute_script(
        f"const z = document.querySelector('{TIMELINE}').data.find(t => t.type === 'heatmap').z;"
        "return z.reduce((n, row) => n + row.length, 0);"
    )
    assert cells <= 20_000
    assert "binned" in driver.find_element(By.ID, "region-timeline-note").text

    # Occupancy: a line per region, whose time integral x SMs is the region's total time in the file.
    wait(driver, lambda d: sorted(legend(d, OCCUPANCY)) == sorted(names))
    curves = driver.execute_script(
        f"return document.querySelector('{OCCUPANCY}').data.map(t => [t.customdata[0], t.x, t.y]);"
    )
    totals = {name: 0 for name in names}
    for r in rows:
        totals[r["region"]] += int(r["end_ns"]) - int(r["start_ns"])
    for name, xs, ys in curves:
        width_ns = (xs[1] - xs[0]) * 1000  # µs on the axis
        assert sum(ys) * width_ns * sm_count == pytest.approx(totals[name], rel=1e-6), name

    # Zoomed in on the first 0.2 µs: every instance in view is a bar, at its time, named.
    origin = min(int(r["start_ns"]) for r in rows)
    expected = sorted(
        (r["region"], int(r["start_ns"]) - origin, int(r["end_ns"]) - origin)
        for r in rows
        if int(r["start_ns"]) - origin < 200 and (int(r["end_ns"]) - origin > 0 or int(r["start_ns"]) >= origin)
    )
    zoom(driver, "{'xaxis.range[0]': 0, 'xaxis.range[1]': 0.2}")
    wait(driver, lambda d: "scatter" in drawn(d)[0] and dash_idle(d))
    shots(driver, "region_timeline_zoomed")
    types, bars = drawn(driver)
    assert set(types) == {"scatter"} and bars == len(expected)
    got = driver.execute_script(
        f"const gd = document.querySelector('{TIMELINE}'); const out = [];"
        "gd.data.filter(t => t.x.length > 1).forEach(t => { for (let i = 0; i < t.x.length; i += 3) {"
        " out.push([t.customdata[i][0], t.x[i], t.x[i + 1]]); } });"
        "return out;"
    )
    assert sorted((name, round(x0 * 1000), round(x1 * 1000)) for name, x0, x1 in got) == expected
    assert "each a bar" in driver.find_element(By.ID, "region-timeline-note").text
    zoom(driver, "{'xaxis.autorange': true}")
    wait(driver, lambda d: drawn(d)[0] == ["heatmap"] and dash_idle(d))
    assert "binned" in driver.find_element(By.ID, "region-timeline-note").text


def test_region_names_that_look_like_markup_are_text(site, shots):
    base_url, driver, ids = site
    driver.get(f"{base_url}/launch/{ids['odd_names']}")
    wait(driver, lambda d: len(legend(d, TIMELINE)) == 2)
    driver.execute_script("arguments[0].scrollIntoView()", driver.find_element(By.ID, "region-timeline"))
    shots(driver, "region_odd_names")
    assert sorted(legend(driver, TIMELINE)) == sorted(ODD_NAMES)
    assert sorted(legend(driver, OCCUPANCY)) == sorted(ODD_NAMES)
    assert sorted(
        c.text for c in driver.find_elements(By.CSS_SELECTOR, "#region-table tbody td:first-child")
    ) == sorted(ODD_NAMES)
    # Few instances: bars, whose hover labels carry the names as text too.
    assert drawn(driver) == [["scatter"] * 2, 8]
    assert driver.find_elements(By.CSS_SELECTOR, "#region-panel b, #region-panel img") == []
    try:
        _ = driver.switch_to.alert
        raise AssertionError("a region name ran as script")
    except NoAlertPresentException:
        pass


def test_regions_in_cycles_only_are_drawn_on_a_cycle_axis(site, shots):
    """Proton without the SM clock: regions in cycles, no warp records; the region figures still draw."""
    base_url, driver, ids = site
    driver.get(f"{base_url}/launch/{ids['matmul_kernel']}")
    wait(driver, lambda d: len(legend(d, TIMELINE)) == 4)
    driver.execute_script("arguments[0].scrollIntoView()", driver.find_element(By.ID, "region-timeline"))
    shots(driver, "region_proton_cycles")
    assert sorted(legend(driver, TIMELINE)) == ["dot", "load", "mainloop", "store"]
    titles = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#region-panel .g-xtitle")]
    assert titles == ["SM cycles since the first region started"] * 2
