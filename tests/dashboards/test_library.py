"""The library lists each launch's verdict and limiter from the engine, sortable and filterable (in headless
Chromium, against the real server), with durations in engineering units; and the GPU time of an Nsight Systems
import, as `tracekit summary` gives it."""

from __future__ import annotations

from pathlib import Path

import pytest
from dash import dash_table

from tracekit.analysis.gpu_time import gpu_time
from tracekit.api import analyze_stored
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
    page = pages_library.layout(sqlite_store)
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


def test_gpu_time_panel_is_the_summary(sqlite_store: Store, real_export):
    result, _ = ingest(sqlite_store, real_export(T4))
    page = pages_library.layout(sqlite_store)
    kernels, copies = by_id(page, "gpu-time-kernels").data, by_id(page, "gpu-time-memcpys").data
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
