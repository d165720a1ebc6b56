"""Helpers the test folders share (importable as `tests.helpers`; pytest puts the repo root on sys.path)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from tracekit.importers.units import normalize_unit

IN_CI = bool(os.environ.get("CI"))
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1800",
]
METRIC_COLUMNS = ["launch_id", "section", "name", "unit", "value", "text_value", "kind"]


def skip_or_fail(reason: str) -> None:
    """Skip with a printed reason outside CI; fail in CI, where a missing server or browser must not pass."""
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    print(f"SKIP: {reason}")
    pytest.skip(reason)


def headless_chromium(profile_dir: Path):
    """Debian's Chromium through Selenium 4 and chromedriver, headless, with a fresh profile."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not chromium or not chromedriver:
        skip_or_fail("browser tests need chromium and chromedriver (apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        skip_or_fail("browser tests need selenium 4 (pip install 'selenium>=4.20')")
    options = webdriver.ChromeOptions()
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}"]:
        options.add_argument(flag)
    options.binary_location = chromium
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(chromedriver))
    driver.set_page_load_timeout(60)
    return driver


def ncu_rep_action(path: Path):
    """The first launch of a real .ncu-rep, read with NVIDIA's ncu_report module (the independent view)."""
    ncu_report = pytest.importorskip("ncu_report")
    return ncu_report.load_report(str(path)).range_by_idx(0).action_by_idx(0)


def ncu_rep_metrics(action) -> pl.DataFrame:
    """ncu_report -> the long metrics frame, units scaled to base units as the importers do."""
    rows = []
    for name in action.metric_names():
        value = action[name].value()
        if isinstance(value, int | float) and not isinstance(value, bool):
            unit, factor = normalize_unit(action[name].unit())
            rows.append((1, None, name, unit, float(value) * factor, None, "float"))
        else:
            rows.append((1, None, name, action[name].unit(), None, None if value is None else str(value), "text"))
    return pl.DataFrame(rows, schema=METRIC_COLUMNS, orient="row")
