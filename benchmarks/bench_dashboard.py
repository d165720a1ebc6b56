"""The launch page's first draw for big launches: server-side time and bytes sent, next to the store read.

Run: python benchmarks/bench_dashboard.py [--warps 262144 10000000] [--browser]

For each size a synthetic H100-like launch (`bench_analysis_warps.synthesize`: 132 SMs, 8 blocks of 8 warps
resident per SM, log-normal warp latencies of ~3 µs) is written to a fresh SQLite store. Then, cold (a new app, so
nothing cached):
- baseline: `Store.warps`, the time polars needs to read the launch's warps from the store;
- the steps the page's callback runs, one by one: relative times, `analyze_launch`, the figure frames
  (`views`), the warp timeline figure;
- the page's callback as the browser calls it (`/_dash-update-component`), cold and then warm (cached), with the
  size of the JSON answer; then a what-if and a zoom callback on the warm cache.
With --browser (262,144 warps or fewer only) headless Chromium loads the page and the time until every figure is
drawn is printed. Peak memory is the process's maximum resident set.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from bench_analysis_warps import SM_COUNT, synthesize  # noqa: E402

from tracekit.analysis import timeline, views  # noqa: E402
from tracekit.analysis.result import LaunchInput, analyze_launch  # noqa: E402
from tracekit.dashboards.app import create_app  # noqa: E402
from tracekit.dashboards.pages_launch import timeline_view  # noqa: E402
from tracekit.parsed import LAUNCH_SCHEMA, Device, ParsedImport, conform  # noqa: E402
from tracekit.store import Store  # noqa: E402

BROWSER_MAX_WARPS = 262_144


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def timed(label: str, function, baseline_s: float | None = None, extra: str = ""):
    started = time.perf_counter()
    value = function()
    seconds = time.perf_counter() - started
    ratio = f"{seconds / baseline_s:6.2f}x read" if baseline_s else ""
    print(f"  {label:<50} {seconds:8.3f} s  {ratio:>12}  {extra}", flush=True)
    return value, seconds


def make_store(folder: Path, warp_count: int) -> tuple[str, int]:
    warps = synthesize(warp_count).with_columns(launch_key=pl.lit(0, pl.Int64))
    blocks = int(warps["block_id"].max()) + 1
    launches = conform(
        pl.DataFrame(
            {
                "launch_key": [0],
                "kernel_name": ["bench_kernel"],
                "grid_x": [blocks],
                "grid_y": [1],
                "grid_z": [1],
                "block_x": [256],
                "block_y": [1],
                "block_z": [1],
                "registers_per_thread": [32],
                "static_smem_bytes": [0],
                "dynamic_smem_bytes": [0],
            }
        ),
        LAUNCH_SCHEMA,
    )
    parsed = ParsedImport(
        format="warp-trace",
        launches=launches,
        warps=warps,
        device=Device(
            name="synthetic H100", compute_capability="9.0", sm_count=SM_COUNT, sm_clock_hz=1.98e9, max_warps_per_sm=64
        ),
    ).conformed()
    url = f"sqlite:///{folder / 'bench.sqlite'}"
    store = Store.open(url)
    source = folder / "source.bin"
    source.write_bytes(b"synthetic")
    _, seconds = timed_quiet(lambda: store.add_import(parsed, source, sha256=f"{warp_count:064x}"))
    print(f"{warps.height:,} warps ({blocks:,} blocks on {SM_COUNT} SMs); stored in {seconds:.1f} s", flush=True)
    store.engine.dispose()
    return url, int(Store.open(url).launches()["id"][0])


def timed_quiet(function):
    started = time.perf_counter()
    return function(), time.perf_counter() - started


def callback(client, payload: dict) -> tuple[bytes, float]:
    started = time.perf_counter()
    response = client.post("/_dash-update-component", json=payload)
    seconds = time.perf_counter() - started
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return response.get_data(), seconds


def route_payload(launch_id: int) -> dict:
    return {
        "output": "page.children",
        "outputs": {"id": "page", "property": "children"},
        "inputs": [
            {"id": "url", "property": "pathname", "value": f"/launch/{launch_id}"},
            {"id": "url", "property": "search", "value": ""},
        ],
        "changedPropIds": ["url.pathname"],
        "state": [],
    }


def what_if_payload(launch_id: int) -> dict:
    return {
        "output": "whatif-result.children",
        "outputs": {"id": "whatif-result", "property": "children"},
        "inputs": [
            {"id": "whatif-block", "property": "value", "value": 128},
            {"id": "whatif-registers", "property": "value", "value": 40},
            {"id": "whatif-smem", "property": "value", "value": 0},
        ],
        "changedPropIds": ["whatif-registers.value"],
        "state": [{"id": "launch-id", "property": "data", "value": launch_id}],
    }


def zoom_payload(launch_id: int, window_us: tuple[float, float]) -> dict:
    return {
        "output": "..warp-timeline.figure...timeline-note.children..",
        "outputs": [{"id": "warp-timeline", "property": "figure"}, {"id": "timeline-note", "property": "children"}],
        "inputs": [
            {
                "id": "warp-timeline",
                "property": "relayoutData",
                "value": {"xaxis.range[0]": window_us[0], "xaxis.range[1]": window_us[1]},
            },
            {"id": "timeline-sm", "property": "value", "value": "all"},
        ],
        "changedPropIds": ["warp-timeline.relayoutData"],
        "state": [{"id": "launch-id", "property": "data", "value": launch_id}],
    }


def browser_draw_s(url: str, launch_id: int) -> float | None:
    """Seconds from navigation to every figure of the launch page drawn, in headless Chromium."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.wait import WebDriverWait
        from werkzeug.serving import make_server
    except ImportError as exc:
        print(f"  browser: skipped ({exc})")
        return None
    chromium, chromedriver = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    if not chromium or not chromedriver:
        print("  browser: skipped (no chromium / chromedriver)")
        return None
    server = make_server("127.0.0.1", 0, create_app(url).server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1800"):
        options.add_argument(flag)
    options.binary_location = chromium
    driver = webdriver.Chrome(options=options, service=Service(chromedriver))
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        driver.get(f"{base}/upload")  # the app's scripts into the browser's cache first: time the page, not them
        WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.ID, "upload"))
        started = time.perf_counter()
        driver.get(f"{base}/launch/{launch_id}")
        figures = ("warp-timeline", "occupancy-time-figure", "latency-figure")
        WebDriverWait(driver, 120, poll_frequency=0.05).until(
            lambda d: all(d.find_elements(By.CSS_SELECTOR, f"#{f} .main-svg") for f in figures)
        )
        return time.perf_counter() - started
    finally:
        driver.quit()
        server.shutdown()


def bench(warp_count: int, browser: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="tracekit-bench-dashboard-") as folder:
        url, launch_id = make_store(Path(folder), warp_count)
        store = Store.open(url)
        print(f"cold steps (launch {launch_id}):")
        warps, read_s = timed("baseline: Store.warps (polars reads the store)", lambda: store.warps(launch_id))
        launch = store.launches(launch_ids=[launch_id]).row(0, named=True)
        rel, _ = timed("timeline.relative_times", lambda: timeline.relative_times(warps), read_s)
        metrics = store.metrics([launch_id])
        timed("analyze_launch", lambda: analyze_launch(LaunchInput(launch, metrics, rel)), read_s)
        timed(
            "views: occupancy_over_time + latency_histogram",
            lambda: (views.occupancy_over_time(rel, SM_COUNT), views.latency_histogram(rel)),
            read_s,
        )
        timed("timeline_view (heatmap of the launch)", lambda: timeline_view(rel, None, None), read_s)
        warps = rel = None  # free them before the app reads its own copy

        client = create_app(url).server.test_client()
        print("the page's callbacks, as the browser calls them:")
        body, cold_s = callback(client, route_payload(launch_id))
        print(
            f"  {'launch page, cold (read + analysis + figures + JSON)':<50} {cold_s:8.3f} s  "
            f"{cold_s / read_s:6.2f}x read  {len(body) / 1e6:.2f} MB JSON",
            flush=True,
        )
        check_page(body)
        body, warm_s = callback(client, route_payload(launch_id))
        print(f"  {'launch page, warm (cached analysis)':<50} {warm_s:8.3f} s  {'':>12}  {len(body) / 1e6:.2f} MB JSON")
        body, seconds = callback(client, what_if_payload(launch_id))
        print(f"  {'what-if callback':<50} {seconds:8.3f} s  {'':>12}  {len(body) / 1e3:.1f} kB JSON")
        span_us = launch_span_us(store, launch_id)
        body, seconds = callback(client, zoom_payload(launch_id, (span_us * 0.5, span_us * 0.502)))
        print(f"  {'zoom callback (0.2% of the launch)':<50} {seconds:8.3f} s  {'':>12}  {len(body) / 1e6:.2f} MB JSON")
        if browser:
            if warp_count > BROWSER_MAX_WARPS:
                print(f"  browser: skipped above {BROWSER_MAX_WARPS:,} warps")
            else:
                draw_s = browser_draw_s(url, launch_id)
                if draw_s is not None:
                    print(f"  {'browser: navigation to all figures drawn (cold)':<50} {draw_s:8.3f} s")
        print(f"peak RSS {peak_rss_gb():.2f} GB", flush=True)
        store.engine.dispose()


def launch_span_us(store: Store, launch_id: int) -> float:
    warps = store.warps(launch_id)
    return float(warps["end_ns"].max() - warps["start_ns"].min()) / 1000.0


def check_page(body: bytes) -> None:
    """The answer is the launch page with its figures, not an error page."""
    text = json.dumps(json.loads(body))
    for needed in ("warp-timeline", "occupancy-time-figure", "latency-figure", "verdict-mode"):
        assert needed in text, f"{needed} missing from the page"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warps", type=int, nargs="+", default=[262_144, 10_000_000])
    parser.add_argument(
        "--browser", action="store_true", help=f"also draw in headless Chromium (<= {BROWSER_MAX_WARPS:,} warps)"
    )
    args = parser.parse_args()
    for warp_count in args.warps:
        bench(warp_count, args.browser)


if __name__ == "__main__":
    main()
