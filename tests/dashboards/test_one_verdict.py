"""One launch, one verdict: every path that shows an analysis shows the same one.

Every launch of sample_traces/ and ../shared/real_exports/ goes through the engine (computed fresh, into the
store's cache) and `tracekit analyze --json` (read back through the cache); the first import of each format through
`tracekit report --format json`; the first launch of each reader on each device through the dashboard's JSON API,
computed afresh (one request computes one launch, ~0.2 s each: 11,000 launches would take the suite's whole budget);
six small profiled imports through `tracekit compare --json`; and a few launches through the launch page as a real
headless Chromium draws it.
Each must give the same mode, limiter, flags and key numbers.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import polars as pl
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from sqlalchemy import text

from tests.helpers import REAL_EXPORTS, run_cli, skip_or_fail
from tracekit.analysis.types import LaunchAnalysis, to_json_dict
from tracekit.api import analysis_dict, analyze_stored
from tracekit.errors import TracekitError
from tracekit.ingest import ingest
from tracekit.store import Store
from tracekit.stored.cache import CACHE_VERSION

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_traces"
# Every trace, each profiled set once (the .ncu-rep of the latency-hiding samples, the raw page of the verdict
# cases), the Nsight Systems export and the region recordings.
SAMPLE_FILES = [
    *sorted(SAMPLES.rglob("*.csv.gz")),
    SAMPLES / "h100" / "samples.ncu-rep.gz",
    SAMPLES / "h100" / "samples.sqlite",
    SAMPLES / "verdict_cases" / "h100" / "cases.raw.csv",
    SAMPLES / "regions" / "ws_pipeline.v2.gz",
    SAMPLES / "regions" / "proton_matmul.chrome_trace.gz",
]
# What must agree across paths: the verdict, and the numbers it rests on.
KEY_FIELDS = [
    "classification.mode",
    "classification.limiter",
    "classification.flags",
    "classification.needed_occupancy_warps_per_sm",
    "duration_ns",
    "occupancy.theoretical_pct",
    "occupancy.achieved_pct",
    "warps.mean_latency_ns",
    "warps.mean_occupancy_warps_per_sm",
    "tail.tail_fraction",
    "sweep.needed_occupancy_warps_per_sm",
    "counters_from.launch_id",
    "pairing.status",
]


def lookup(result: dict, path: str):
    value = result
    for part in path.split("."):
        if value is None:
            return None
        value = value.get(part)
    return value


def key_numbers(result: dict) -> dict:
    return {path: lookup(result, path) for path in KEY_FIELDS}


def tracekit(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=ROOT)


@pytest.fixture(scope="module")
def store_url(tmp_path_factory) -> str:
    if not REAL_EXPORTS.is_dir():
        skip_or_fail(f"{REAL_EXPORTS} is absent (the shared real exports live beside the checkout)")
    url = f"sqlite:///{tmp_path_factory.mktemp('one-verdict') / 'store.sqlite'}"
    store = Store.open(url)
    for path in SAMPLE_FILES:
        ingest(store, path)  # every sample must import
    for path in sorted(REAL_EXPORTS.iterdir()):
        try:
            ingest(store, path)
        except TracekitError:
            continue  # the files a reader must refuse (their own tests check the refusal)
    return url


@pytest.fixture(scope="module")
def engine_analyses(store_url) -> dict[int, LaunchAnalysis]:
    """Computed fresh by the engine: the store's cache is empty until this fills it, so the CLI and the API below
    read what the engine computed back through the cache, as a user's second look does."""
    store = Store.open(store_url)
    launch_ids = store.launches()["id"].to_list()
    assert store.cached_results(launch_ids, CACHE_VERSION) == {}
    results = {int(r.launch_id or 0): r for r in analyze_stored(store, store.launches())}
    assert len(store.cached_results(launch_ids, CACHE_VERSION)) == len(launch_ids)
    return results


@pytest.fixture(scope="module")
def engine_results(engine_analyses) -> dict[int, dict]:
    """The engine's results as JSON (what_to_try aside: the predictor runs where a view shows it)."""
    return {launch_id: to_json_dict(result) for launch_id, result in engine_analyses.items()}


def test_the_store_holds_every_sample_and_real_export(store_url, engine_results) -> None:
    store = Store.open(store_url)
    formats = set(store.imports()["format"].to_list())
    assert {"warp-trace", "ncu-rep", "nsys-sqlite", "ncu-csv"} <= formats
    assert any(result["regions"] for result in engine_results.values())
    assert len(engine_results) == store.launches().height > 4000


def test_cli_analyze_and_report_print_the_engines_verdicts(store_url, engine_results) -> None:
    imports = Store.open(store_url).imports()
    analyzed = tracekit("analyze", *map(str, imports["id"]), "--json", "--db", store_url)
    assert analyzed.returncode == 0, analyzed.stderr
    results = {result["launch_id"]: result for result in json.loads(analyzed.stdout)}
    assert results.keys() == engine_results.keys()
    for launch_id, result in results.items():
        assert key_numbers(result) == key_numbers(engine_results[launch_id]), launch_id
    # `report --format json` prints what `analyze --json` prints (tests/reports/test_report.py compares the bytes),
    # with each launch's source lines where it has them:
    # the first import of each format, rather than all 11,584 launches again with their predictions.
    firsts = imports.group_by("format", maintain_order=True).head(1)["id"]
    reported = tracekit("report", *map(str, firsts), "--format", "json", "--db", store_url)
    assert reported.returncode == 0, reported.stderr
    shown = json.loads(reported.stdout)
    assert len(shown) > 100 and {r["source"]["format"] for r in shown} == set(imports["format"])
    for result in shown:
        # the report adds a launch's source lines (`tracekit lines --json`'s object) where it has source samples
        lines = result.pop("source_lines", None)
        assert result == results[result["launch_id"]], result["launch_id"]
        if lines is not None:
            assert lines["launch_id"] == result["launch_id"] and lines["lines"]


def test_compare_shows_each_sides_engine_verdict(store_url, engine_results) -> None:
    store = Store.open(store_url)
    sizes = store.launches().group_by("import_id").len()
    profiled = (
        store.imports()
        .filter(pl.col("format").is_in(["ncu-rep", "ncu-csv"]))
        .join(sizes, left_on="id", right_on="import_id")
        .filter(pl.col("len").is_between(2, 20))  # several launches per side, at a few seconds per compare
    )["id"].to_list()
    assert len(profiled) >= 6
    for import_id in profiled[:6]:
        compared = tracekit("compare", str(import_id), str(import_id), "--format", "json", "--db", store_url)
        assert compared.returncode == 0, compared.stderr
        for pair in json.loads(compared.stdout)["pairs"]:
            first = engine_results[pair["launch_ids_a"][0]]
            texts = {field["field"]: field for field in pair["comparison"]["text_fields"]}
            assert texts["verdict"]["a"] == texts["verdict"]["b"] == first["classification"]["mode"]
            assert texts["limiter"]["a"] == first["classification"]["limiter"]
            fields = {field["field"]: field for field in pair["comparison"]["fields"]}
            durations = [engine_results[i]["duration_ns"] for i in pair["launch_ids_a"]]
            if all(d is not None for d in durations):
                assert fields["duration_ns"]["a"] == pytest.approx(sum(durations) / len(durations))


def sampled_launches(store_url: str) -> list[int]:
    """The first launch of each reader on each device: every reader and every kind of source, each answered by the
    server (the CLI test above checks every launch; one per import took a third of the suite's longest file)."""
    launches = Store.open(store_url).launches()
    return launches.group_by("format", "device_name", maintain_order=True).head(1)["id"].to_list()


def test_dashboard_api_serves_the_engines_result(store_url, engine_analyses, start_server) -> None:
    store = Store.open(store_url)
    with store.engine.begin() as connection:  # the server must compute, not read what the CLI cached
        connection.execute(text("delete from analysis_results"))
    server = start_server(store_url)
    for launch_id in sampled_launches(store_url):
        with urllib.request.urlopen(f"{server.url}/api/launches/{launch_id}/analysis", timeout=60) as response:
            served = json.loads(response.read())
        expected = analysis_dict(store, engine_analyses[launch_id])  # with its what_to_try
        assert served == json.loads(json.dumps(expected)), launch_id
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{server.url}/api/launches/999999/analysis", timeout=60)
    assert missing.value.code == 404


def test_launch_page_in_chromium_shows_the_engines_verdict(store_url, engine_results, start_server, browser) -> None:
    server = start_server(store_url)
    launches = Store.open(store_url).launches()
    chosen = [
        int(launches.filter(pl.col("kernel_name") == "vector_add")["id"][-1]),  # a trace paired with counters
        int(launches.filter(pl.col("kernel_name").str.starts_with("permute("))["id"][-1]),  # counters only
        int(launches.filter(pl.col("format") == "nsys-sqlite")["id"][0]),  # a timing
    ]
    for launch_id in chosen:
        browser.get(f"{server.url}/launch/{launch_id}")
        shown = WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.ID, "verdict-mode"))[0].text
        verdict = engine_results[launch_id]["classification"]
        expected = verdict["mode"] + (f", limited by {verdict['limiter']}" if verdict["limiter"] else "")
        if verdict["tied_limiters"]:  # the units within a few points of the limiter, named too
            expected += f" (tied with {', '.join(verdict['tied_limiters'])})"
        assert shown == expected, launch_id
        api = browser.execute_script(
            "const r = new XMLHttpRequest(); r.open('GET', arguments[0], false); r.send(); return r.responseText;",
            f"/api/launches/{launch_id}/analysis",
        )
        assert key_numbers(json.loads(api)) == key_numbers(engine_results[launch_id])
