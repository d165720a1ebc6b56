"""The library lists each launch's verdict and limiter from the engine, sortable and filterable (in headless
Chromium, against the real server), with durations in engineering units; and the GPU time of an Nsight Systems
import, as `tracekit summary` gives it."""

from __future__ import annotations

from pathlib import Path

import pytest
from dash import dash_table

from tracekit.analysis.gpu_time import gpu_time
from tracekit.api import TraceAnalysis, analyze_stored, launch_catalog
from tracekit.dashboards import pages_library
from tracekit.format import kernel_name
from tracekit.ingest import ingest
from tracekit.store import Store

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces" / "h100"
T4 = "nsys_2025.3.1_T4_nsightful_power_iteration_baseline.sqlite"


def by_id(component, wanted: str):
    if getattr(component, "id", None) == wanted:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children] if children is not None else []:
        found = by_id(child, wanted)
        if found is not None:
            return found
    return None


def test_library_rows_carry_the_engines_verdict_and_limiter(sqlite_store: Store):
    for name in ("samples.raw.csv", "vector_add_08warps.csv.gz", "reduce_neighbored.csv.gz"):
        ingest(sqlite_store, SAMPLES / name)
    page = pages_library.layout(TraceAnalysis(sqlite_store))
    table = by_id(page, "launches-table")
    assert isinstance(table, dash_table.DataTable)
    assert (table.sort_action, table.filter_action) == ("native", "native")
    names = {column["id"]: column["name"] for column in table.columns}
    assert names["verdict"] == "verdict" and names["limiter"] == "limiter" and names["duration_s"] == "duration"
    results = {r.launch_id: r.classification for r in analyze_stored(sqlite_store, sqlite_store.launches())}
    assert len(table.data) == len(results) == 16
    for row in table.data:
        verdict = results[row["id"]]
        assert (row["verdict"], row["limiter"]) == (verdict.mode, verdict.limiter or "")
    modes = {row["verdict"] for row in table.data}
    assert "latency-bound" in modes and "throughput-bound" in modes  # the samples hold both
    first = next(row for row in table.data if row["kernel_name"].startswith("vector_add(const float *"))
    assert first["kernel"] == "vector_add" and first["duration_s"] == pytest.approx(256_800e-9)
    duration = next(column for column in table.columns if column["id"] == "duration_s")["format"].to_plotly_json()
    assert duration["specifier"] == "$.4~s" and duration["locale"]["symbol"] == ["", "s"]  # 256.8µs


def test_the_catalog_is_read_again_only_when_the_launches_changed(sqlite_store: Store, monkeypatch):
    """The library asks `api.launch_catalog` on every callback: the same frame while no import or delete changed
    the launches (one count query), a new one after."""
    first_import, _ = ingest(sqlite_store, SAMPLES / "samples.raw.csv")
    reads = []
    original = Store.launches

    def counted(self, *args, **kwargs):
        if not args and not kwargs:
            reads.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Store, "launches", counted)
    catalog = launch_catalog(sqlite_store)
    assert launch_catalog(sqlite_store) is catalog and len(reads) == 1
    assert catalog["id"].to_list() == sqlite_store.launches(import_id=first_import.import_id)["id"].to_list()
    second, _ = ingest(sqlite_store, SAMPLES / "vector_add_16warps.csv.gz")
    grown = launch_catalog(sqlite_store)
    assert len(reads) == 2 and grown.height == catalog.height + sqlite_store.launches(import_id=second.import_id).height
    sqlite_store.delete_import(second.import_id)
    assert launch_catalog(sqlite_store)["id"].to_list() == catalog["id"].to_list() and len(reads) == 3


def test_gpu_time_panel_is_the_summary(sqlite_store: Store, real_export):
    result, _ = ingest(sqlite_store, real_export(T4))
    page = pages_library.layout(TraceAnalysis(sqlite_store))
    # Over PAGED_LAUNCHES launches, the page is drawn first and its tables filled after (`show_gpu_time`).
    assert sqlite_store.launch_count() > pages_library.PAGED_LAUNCHES
    assert by_id(page, "gpu-time-kernels").data == [] and by_id(page, "gpu-time-import").value == result.import_id
    kernels, copies = pages_library.gpu_time_rows(
        TraceAnalysis(sqlite_store), result.import_id, launch_catalog(sqlite_store)
    )
    summary = gpu_time(
        sqlite_store.launches(import_id=result.import_id), sqlite_store.memcpys(result.import_id), kernel_name
    )
    assert [(r["name"], r["count"]) for r in kernels] == [(r.name, r.count) for r in summary.kernels]
    assert kernels[0]["name"] == "gemv2T_kernel_val" and kernels[0]["total_s"] == pytest.approx(
        summary.kernels[0].total_ns / 1e9
    )
    assert [(r["name"], r["count"]) for r in copies] == [("DtoH", 89)]


@pytest.mark.browser
def test_library_sorts_and_filters_by_verdict_in_chromium(tmp_path_factory, start_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    db_url = f"sqlite:///{tmp_path_factory.mktemp('library') / 'store.sqlite'}"
    store = Store.open(db_url)
    for name in ("samples.raw.csv", "reduce_neighbored.csv.gz"):
        ingest(store, SAMPLES / name)
    results = analyze_stored(store, store.launches())
    throughput_bound = sorted(r.launch_id for r in results if r.classification.mode == "throughput-bound")
    assert throughput_bound
    server = start_server(db_url)
    browser.get(f"{server.url}/library")
    wait = WebDriverWait(browser, 60, poll_frequency=0.2)

    def column_texts(column: str) -> list[str]:
        cells = browser.find_elements(By.CSS_SELECTOR, f'#launches-table td[data-dash-column="{column}"]')
        return [cell.text for cell in cells]

    wait.until(lambda d: len(column_texts("verdict")) == 15)
    assert set(column_texts("verdict")) == {r.classification.mode for r in results}
    assert "256.8µs" in column_texts("duration_s")  # the first vector_add launch, 256,800 ns
    box = browser.find_element(By.CSS_SELECTOR, '#launches-table th[data-dash-column="verdict"] input')
    box.send_keys("throughput", Keys.ENTER)
    wait.until(lambda d: set(column_texts("verdict")) == {"throughput-bound"})
    links = [
        cell.text for cell in browser.find_elements(By.CSS_SELECTOR, '#launches-table td[data-dash-column="link"]')
    ]
    assert sorted(int(text.split()[-1]) for text in links) == throughput_bound


# ---- a large store: a page at a time ---------------------------------------------------------------------------


@pytest.fixture
def paged_store(sqlite_store: Store, monkeypatch) -> Store:
    """The H100 samples' raw page and three traces (16 launches), with the paging threshold below that."""
    for name in ("samples.raw.csv", "vector_add_08warps.csv.gz", "reduce_neighbored.csv.gz"):
        ingest(sqlite_store, SAMPLES / name)
    monkeypatch.setattr(pages_library, "PAGED_LAUNCHES", 5)
    monkeypatch.setattr(pages_library, "PAGE_SIZE", 4)
    return sqlite_store


def test_a_large_store_sends_one_page_with_the_verdicts_of_its_launches(paged_store: Store):
    page = pages_library.layout(TraceAnalysis(paged_store))
    table = by_id(page, "launches-table")
    assert (table.page_action, table.filter_action, table.sort_action) == ("custom", "custom", "custom")
    assert table.page_count == 4 and len(table.data) == 4  # 16 launches, 4 a page
    assert by_id(page, "launches-paged").data is True
    assert by_id(page, "launches-note").children.startswith("16 launches: shown a page at a time")
    # Drawn from the first page's launches alone, each verdict to follow; what the page then asks for
    # (`fill_first_page`: the page shown, with its verdicts) holds the same launches with the engine's verdicts.
    assert {row["verdict"] for row in table.data} == {pages_library.ANALYSING}
    rows, pages, _ = pages_library.launch_page(TraceAnalysis(paged_store), 0, 4, None, None)
    assert [row["id"] for row in rows] == [row["id"] for row in table.data] and pages == 4
    shown = [row["id"] for row in rows]
    results = {r.launch_id: r.classification for r in analyze_stored(paged_store, shown)}
    for row in rows:
        assert (row["verdict"], row["limiter"]) == (results[row["id"]].mode, results[row["id"]].limiter or "")


def test_a_large_stores_page_is_filtered_and_sorted_by_the_server(paged_store: Store):
    launches = paged_store.launches()
    vector_adds = launches.filter(launches["kernel_name"].str.starts_with("vector_add"))
    rows, pages, note = pages_library.launch_page(
        TraceAnalysis(paged_store),
        0,
        4,
        [{"column_id": "duration_s", "direction": "desc"}],
        "{kernel} contains VECTOR_add",
    )
    assert note == "" and pages == -(-vector_adds.height // 4)
    assert {row["kernel"] for row in rows} == {"vector_add"}
    longest_first = sorted(vector_adds["duration_ns"].to_list(), reverse=True)[:4]
    assert [row["duration_s"] for row in rows] == pytest.approx([d / 1e9 for d in longest_first], rel=1e-12)
    longest = launches["duration_ns"].max()
    rows, pages, _ = pages_library.launch_page(
        TraceAnalysis(paged_store), 0, 4, None, f"{{duration_s}} >= {longest / 1e9}"
    )
    assert [row["duration_s"] for row in rows] == pytest.approx([longest / 1e9], rel=1e-12) and pages == 1
    rows, _, _ = pages_library.launch_page(TraceAnalysis(paged_store), 9, 4, None, '{kernel} = "reduceNeighbored"')
    assert rows and {row["kernel"] for row in rows} == {"reduceNeighbored"}  # past the end: the last page


def test_a_large_store_says_what_it_cannot_filter_or_sort_by(paged_store: Store):
    rows, pages, note = pages_library.launch_page(TraceAnalysis(paged_store), 0, 4, None, "{verdict} contains latency")
    assert note.startswith("Filter not applied: the verdict is known for the launches shown only")
    assert pages == 4 and len(rows) == 4  # the filter is dropped, not half applied
    rows, _, note = pages_library.launch_page(
        TraceAnalysis(paged_store), 0, 4, [{"column_id": "verdict", "direction": "asc"}], ""
    )
    assert note == "Not sorted by verdict or limiter: they are known for the launches shown only."
    for query, message in (
        ("{duration_s} > fast", "'fast' is not a number (duration_s)"),
        ("{nothing} = 1", "no column 'nothing' to filter"),
        ("duration_s > 1", "cannot apply the filter 'duration_s > 1'"),
    ):
        assert (
            pages_library.launch_page(TraceAnalysis(paged_store), 0, 4, None, query)[2]
            == f"Filter not applied: {message}."
        )


@pytest.mark.browser
def test_a_large_store_pages_filters_and_sorts_on_the_server_in_chromium(tmp_path_factory, start_server, browser):
    """What the table's filter boxes and headers send (its own filter syntax) is applied by the server."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    db_url = f"sqlite:///{tmp_path_factory.mktemp('paged') / 'store.sqlite'}"
    store = Store.open(db_url)
    for name in ("samples.raw.csv", "vector_add_08warps.csv.gz", "reduce_neighbored.csv.gz"):
        ingest(store, SAMPLES / name)
    launches = store.launches()
    server = start_server(db_url, env={"TRACEKIT_PAGED_LAUNCHES": "5"})
    browser.get(f"{server.url}/library")
    # cells re-rendered while read count as not yet
    wait = WebDriverWait(browser, 60, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException])

    def column_texts(column: str) -> list[str]:
        cells = browser.find_elements(By.CSS_SELECTOR, f'#launches-table td[data-dash-column="{column}"]')
        return [cell.text for cell in cells]

    wait.until(lambda d: len(column_texts("kernel")) == launches.height)  # 16: one page
    wait.until(lambda d: pages_library.ANALYSING not in column_texts("verdict"))  # the verdicts follow
    assert browser.find_element(By.ID, "launches-note").text.startswith("16 launches: shown a page at a time")
    box = browser.find_element(By.CSS_SELECTOR, '#launches-table th[data-dash-column="kernel"] input')
    box.send_keys("vector", Keys.ENTER)
    vector_adds = launches.filter(launches["kernel_name"].str.starts_with("vector_add")).height
    wait.until(lambda d: column_texts("kernel") == ["vector_add"] * vector_adds)
    assert all(text for text in column_texts("verdict"))  # each shown launch analysed
    box = browser.find_element(By.CSS_SELECTOR, '#launches-table th[data-dash-column="duration_s"] input')
    box.send_keys(">0.00025", Keys.ENTER)  # the raw page's vector_add launches are 256.8 and 269.2 us
    wait.until(lambda d: sorted(column_texts("duration_s")) == ["256.8µs", "269.2µs"])
