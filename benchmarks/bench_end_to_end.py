"""What the user waits for, end to end: each `tracekit` command as a whole process, next to its floor.

The floor of a file is a whole Python process that imports polars and reads the same file (so start-up counts on
both sides); a command that works on the store (analyze, report, the dashboard) is set against the floor of the
file its data came from. Every figure is the median of `--repeat` runs; wall seconds and the process's peak RSS
(the kernel's accounting of the finished child, `wait4`). What a run needs before it (a fresh store, an empty
analysis cache) is done between runs and not timed.

Inputs, built once in `--dir` (default: a folder under the system's temp folder), from real files replicated:
- ncu details CSV: the H100 sample's `--page details` (14 launches) repeated to 1,008 launches, IDs renumbered;
- ncu raw CSV: the H100 sample's `--page raw` (14 launches x 2,238 metrics) repeated to 1,008 launches;
- nsys SQLite: the H100 sample's Nsight Systems export with its kernel rows repeated to 100,000 kernels;
- Kineto trace: the recorded PyTorch step (sample_traces/torch_step) with its kernel events and their launch
  calls repeated to 100,000 kernels (JSON, as `export_chrome_trace` writes it);
- warp trace: 10M synthetic warps (csv.gz, tracekit-warp-trace v1, H100-like: 132 SMs, 8 warps per block);
- warp trace with a per-row `kernel` column: the same 10M warps as four kernels' launches one after another.

    python benchmarks/bench_end_to_end.py [--backend sqlite postgres] [--repeat 3] [--only NAME ...]
        [--dir DIR] [--print-commands]

With --print-commands nothing is timed: each case's two command lines are printed (the store-side ones with
the set-up they need inlined), to time them with another harness.
"""

from __future__ import annotations

import argparse
import compileall
import csv
import json
import os
import re
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_traces" / "h100"
TORCH_STEP = REPO / "sample_traces" / "torch_step" / "torch_step.pt.trace.json"
BIN = Path(sys.executable).parent
# TRACEKIT_BENCH_CMD: another way to start tracekit (e.g. an older checkout's `python -m tracekit.cli.main`)
TRACEKIT = os.environ.get("TRACEKIT_BENCH_CMD") or (
    str(BIN / "tracekit") if (BIN / "tracekit").exists() else "tracekit"
)
PYTHON = sys.executable
POSTGRES_URL = os.environ.get("TRACEKIT_BENCH_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
LAUNCHES, NSYS_KERNELS, WARPS = 1008, 100_000, 10_000_000
SM_COUNT, WARPS_PER_BLOCK = 132, 8
KERNELS = ("gemm_tile_128x128", "softmax_forward", "layer_norm_forward", "elementwise_add")


# ---- inputs -----------------------------------------------------------------------------------------------------


def replicate_ncu_csv(source: Path, target: Path, launches: int) -> None:
    """Repeat the launches of an ncu CSV page (all of a launch's rows together) to `launches`, IDs renumbered."""
    lines = source.read_text(encoding="utf-8").splitlines()
    prof = [line for line in lines if line.startswith("==")]
    rows = list(csv.reader(line for line in lines if not line.startswith("==")))
    header = rows[0]
    body = rows[1:]
    units = []
    if body and body[0][0] == "":  # the raw page's units row
        units, body = [body[0]], body[1:]
    id_column = header.index("ID")
    by_launch: dict[str, list[list[str]]] = {}
    for row in body:
        by_launch.setdefault(row[id_column], []).append(row)
    groups = list(by_launch.values())
    with open(target, "w", newline="", encoding="utf-8") as handle:
        handle.write("\n".join(prof) + "\n")
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerows([header, *units])
        for launch in range(launches):
            for row in groups[launch % len(groups)]:
                writer.writerow([str(launch), *row[1:]] if id_column == 0 else row)


def replicate_nsys(source: Path, target: Path, kernels: int) -> None:
    """The export with its kernel rows repeated to `kernels`, each copy later in time with new correlation ids."""
    shutil.copyfile(source, target)
    target.chmod(0o644)
    connection = sqlite3.connect(target)
    table = "CUPTI_ACTIVITY_KIND_KERNEL"
    columns = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
    rows = connection.execute(f"SELECT * FROM {table} ORDER BY start").fetchall()
    start, end, correlation = columns.index("start"), columns.index("end"), columns.index("correlationId")
    span = max(r[end] for r in rows) - min(r[start] for r in rows) + 1000
    top = max(r[correlation] for r in rows) + 1
    copies = []
    for index in range(len(rows), kernels):
        row = list(rows[index % len(rows)])
        shift = (index // len(rows)) * span
        row[start] += shift
        row[end] += shift
        row[correlation] = top + index
        copies.append(row)
    connection.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", copies)
    connection.commit()
    connection.close()


def write_warp_trace(target: Path, warps: int, kernels: tuple[str, ...] = ()) -> None:
    """A v1 warp trace (csv.gz): blocks dealt to SMs in waves, warps of 20-40 us, %globaltimer ns. With
    `kernels`, a per-row `kernel` column: the warps split into one launch per kernel, run one after another
    (each launch's blocks numbered from 0; the header's grid is one launch's)."""
    per_launch = -(-warps // max(len(kernels), 1))
    blocks = -(-per_launch // WARPS_PER_BLOCK)
    resident_blocks = SM_COUNT * 8
    launch_span_ns = (blocks // resident_blocks + 1) * 45_000 + 50_000
    index = pl.int_range(warps, eager=True, dtype=pl.Int64)
    frame = (
        pl.DataFrame({"row": index % per_launch, "launch": index // per_launch})
        .select(
            *(
                [pl.col("launch").replace_strict(dict(enumerate(kernels)), return_dtype=pl.Utf8).alias("kernel")]
                if kernels
                else []
            ),
            ((pl.col("row") // WARPS_PER_BLOCK) % SM_COUNT).alias("sm_id"),
            (pl.col("row") // WARPS_PER_BLOCK).alias("block_id"),
            (pl.col("row") % WARPS_PER_BLOCK).alias("warp_in_block"),
            (
                1_700_000_000_000_000_000
                + pl.col("launch") * launch_span_ns
                + (pl.col("row") // WARPS_PER_BLOCK // resident_blocks) * 45_000
                + (pl.col("row") * 7919) % 5_000
            ).alias("start_ns"),
            (20_000 + (pl.col("row") * 104_729) % 20_000).alias("latency_ns"),
        )
        .with_columns(end_ns=pl.col("start_ns") + pl.col("latency_ns"))
        .drop("latency_ns")
    )
    header = (
        "# tracekit-warp-trace v1\n"
        + ("" if kernels else "# kernel: synthetic_10M\n")
        + "# device_name: NVIDIA H100 80GB HBM3\n"
        f"# compute_capability: 9.0\n# sm_count: {SM_COUNT}\n# sm_clock_hz: 1980000000\n"
        f"# max_warps_per_sm: 64\n# grid: {blocks},1,1\n# block: {WARPS_PER_BLOCK * 32},1,1\n"
        "# registers_per_thread: 32\n"
    )
    plain = target.with_suffix("")
    with open(plain, "w") as handle:
        handle.write(header)
        handle.flush()
        frame.write_csv(handle)
    with open(target, "wb") as handle:  # polars writes to the file descriptor: compress the written file after
        subprocess.run(["gzip", "-6", "-c", str(plain)], stdout=handle, check=True)
    plain.unlink()


def replicate_kineto(source: Path, target: Path, kernels: int) -> None:
    """The trace with its kernel events and their launch calls (cuda_runtime) repeated to `kernels`, each copy
    later in time with new correlation ids; the rest of the trace (CPU ops, annotations) once."""
    document = json.loads(source.read_text(encoding="utf-8"))
    events = document["traceEvents"]
    launched = [e for e in events if e.get("cat") == "kernel"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime" and "args" in e}
    times = [e["ts"] for e in events if isinstance(e.get("ts"), int | float)]
    span = max(times) - min(times) + 1000.0
    top = max(e["args"]["correlation"] for e in launched) + 1
    for index in range(len(launched), kernels):
        kernel = launched[index % len(launched)]
        shift = (index // len(launched)) * span
        correlation = top + index
        events.append({**kernel, "ts": kernel["ts"] + shift, "args": {**kernel["args"], "correlation": correlation}})
        call = calls.get(kernel["args"]["correlation"])
        if call is not None:
            events.append({**call, "ts": call["ts"] + shift, "args": {**call["args"], "correlation": correlation}})
    target.write_text(json.dumps(document), encoding="utf-8")


def inputs(folder: Path, wanted: set[str] | None = None) -> dict[str, Path]:
    """The inputs (those `wanted`, else all) built where missing."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {
        "details": folder / f"ncu_details_{LAUNCHES}.csv",
        "raw": folder / f"ncu_raw_{LAUNCHES}.csv",
        "nsys": folder / f"nsys_{NSYS_KERNELS}.sqlite",
        "kineto": folder / f"kineto_{NSYS_KERNELS}.pt.trace.json",
        "warps": folder / f"warps_{WARPS}.csv.gz",
        "warps_kernel": folder / f"warps_{WARPS}_kernel_column.csv.gz",
    }
    builders: dict[str, Callable[[Path], None]] = {
        "details": lambda p: replicate_ncu_csv(SAMPLES / "samples.details.csv", p, LAUNCHES),
        "raw": lambda p: replicate_ncu_csv(SAMPLES / "samples.raw.csv", p, LAUNCHES),
        "nsys": lambda p: replicate_nsys(SAMPLES / "samples.sqlite", p, NSYS_KERNELS),
        "kineto": lambda p: replicate_kineto(TORCH_STEP, p, NSYS_KERNELS),
        "warps": lambda p: write_warp_trace(p, WARPS),
        "warps_kernel": lambda p: write_warp_trace(p, WARPS, KERNELS),
    }
    for name, path in made.items():
        if not path.exists() and (wanted is None or name in wanted):
            started = time.perf_counter()
            partial = path.with_name(path.name + ".partial")
            builders[name](partial)
            partial.rename(path)
            print(f"(built {path.name}: {path.stat().st_size / 1e6:,.1f} MB in {time.perf_counter() - started:.1f} s)")
    return made


FLOORS = {
    # a whole Python process that imports polars and reads the file (every column as text: no inference)
    "details": "import polars as pl, sys; pl.read_csv(sys.argv[1], comment_prefix='==', infer_schema=False)",
    "raw": "import polars as pl, sys; pl.read_csv(sys.argv[1], comment_prefix='==', infer_schema=False)",
    "warps": "import polars as pl, sys; pl.read_csv(sys.argv[1], comment_prefix='#')",
    "warps_kernel": "import polars as pl, sys; pl.read_csv(sys.argv[1], comment_prefix='#')",
    "nsys": (
        "import polars as pl, sqlite3, sys; pl.read_database('select * from CUPTI_ACTIVITY_KIND_KERNEL', "
        "sqlite3.connect(f'file:{sys.argv[1]}?immutable=1', uri=True))"
    ),
    "kineto": "import polars, orjson, sys; orjson.loads(open(sys.argv[1], 'rb').read())",
}


def floor_argv(kind: str, path: Path) -> list[str]:
    return [PYTHON, "-c", FLOORS[kind], str(path)]


# ---- stores -----------------------------------------------------------------------------------------------------


# What a store keeps after an import's first analysis or first view: cached results and the launch page's figure
# aggregates. A "cold" command runs with both gone, as the first one after the import does.
CLEAR_SQL = "DELETE FROM {schema}analysis_results; DELETE FROM {schema}bulk_chunks WHERE kind LIKE 'view%'"


class Backend:
    """A store that can be emptied between runs, and one with the big imports kept for analyze/report."""

    name = ""

    def fresh_url(self) -> str:
        """An empty store at the current schema (made anew for each run, not timed)."""
        raise NotImplementedError

    def clear_cache(self, url: str) -> None:
        """Drop the cached analyses, so that the next command computes them (as the first one after import)."""
        raise NotImplementedError

    def clear_cache_shell(self, url: str) -> str:
        raise NotImplementedError


class SqliteBackend(Backend):
    name = "sqlite"

    def __init__(self, folder: Path):
        self.folder = folder
        self.template = folder / "empty-template.sqlite"
        self.count = 0
        from tracekit.store import Store

        if self.template.exists():
            self.template.unlink()
        Store.open(str(self.template)).engine.dispose()
        sqlite3.connect(self.template).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()

    def fresh_url(self) -> str:
        target = self.folder / "fresh.sqlite"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(self.template, target)
        return str(target)

    def kept_url(self, label: str) -> str:
        return str(self.folder / f"kept-{label}.sqlite")

    def clear_cache(self, url: str) -> None:
        with sqlite3.connect(url) as connection:
            connection.executescript(CLEAR_SQL.format(schema=""))

    def clear_cache_shell(self, url: str) -> str:
        return f"sqlite3 {shlex.quote(url)} {shlex.quote(CLEAR_SQL.format(schema=''))}"


class PostgresBackend(Backend):
    name = "postgres"

    def __init__(self, folder: Path, base_url: str = POSTGRES_URL):
        from sqlalchemy import create_engine, text

        self.folder = folder
        self.prefix = "tracekit_bench_" + re.sub(r"[^a-z0-9]+", "_", folder.name.lower())  # one set per --dir
        self.base_url = base_url
        self.admin = create_engine(base_url)
        self.text = text
        with self.admin.begin() as connection:
            connection.execute(text("select 1"))

    def _url(self, schema: str) -> str:
        return f"{self.base_url}?options=-csearch_path%3D{schema}"

    def _schema(self, schema: str, drop: bool) -> str:
        with self.admin.begin() as connection:
            if drop:
                connection.execute(self.text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
            connection.execute(self.text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
        from tracekit.store import Store

        Store.open(self._url(schema)).engine.dispose()
        return self._url(schema)

    def fresh_url(self) -> str:
        return self._schema(f"{self.prefix}_fresh", drop=True)

    def kept_url(self, label: str) -> str:
        return self._schema(f"{self.prefix}_{label}", drop=False)

    def clear_cache(self, url: str) -> None:
        schema = url.rsplit("%3D", 1)[1]
        with self.admin.begin() as connection:
            for statement in CLEAR_SQL.format(schema=f"{schema}.").split(";"):
                connection.execute(self.text(statement))

    def clear_cache_shell(self, url: str) -> str:
        schema = url.rsplit("%3D", 1)[1]
        return f"psql -q -h 127.0.0.1 -U postgres test -c {shlex.quote(CLEAR_SQL.format(schema=f'{schema}.'))}"


# ---- timing -----------------------------------------------------------------------------------------------------


@dataclass
class Figure:
    wall_s: list[float] = field(default_factory=list)
    rss_gb: list[float] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return statistics.median(self.wall_s)

    @property
    def rss(self) -> float:
        return statistics.median(self.rss_gb)


def run_once(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS GB) of one whole process; its output is thrown away, a failure stops the bench."""
    # The peak comes from /usr/bin/time: the rusage of a child forked from this (large) process would count
    # the memory it had before exec.
    with tempfile.NamedTemporaryFile("r") as peak, open(os.devnull, "wb") as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        status = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", peak.name, *argv],
            stdout=out,
            stderr=err,
            env={**os.environ, **(env or {})},
        ).returncode
        elapsed = time.perf_counter() - started
        if status != 0:
            err.seek(0)
            raise SystemExit(f"{shlex.join(argv)} failed:\n{err.read().decode(errors='replace')[-3000:]}")
        return elapsed, int(peak.read().split()[-1]) / 1024**2  # KiB


def measure(argv: list[str], repeat: int, before: Callable[[], None] | None = None) -> Figure:
    figure = Figure()
    for _ in range(repeat):
        if before:
            before()
        wall, rss = run_once(argv)
        figure.wall_s.append(wall)
        figure.rss_gb.append(rss)
    return figure


@dataclass
class Case:
    name: str
    floor_kind: str | None  # the input whose floor this is set against (None: `python -c 'import polars'`)
    target: float | None  # the ratio asked for
    argv: Callable[[Backend, dict[str, Path]], list[str]]
    before: Callable[[Backend, dict[str, Path]], Callable[[], None] | None] = lambda backend, files: None
    store_side: bool = True  # runs per backend
    note: str = ""


def import_argv(kind: str) -> Callable[[Backend, dict[str, Path]], list[str]]:
    def argv(backend: Backend, files: dict[str, Path]) -> list[str]:
        url = backend.fresh_url()
        return [*TRACEKIT.split(), "import", "--db", url, str(files[kind])]

    return argv


def fresh_before(backend: Backend, files: dict[str, Path]) -> Callable[[], None]:
    return lambda: backend.fresh_url()


KEPT: dict[tuple[str, str], tuple[str, str]] = {}  # (backend, input) -> (url, import id)


def kept_import(backend: Backend, files: dict[str, Path], kind: str) -> tuple[str, str]:
    """A store holding the input's import (made once per backend, not timed)."""
    key = (backend.name, kind)
    if key not in KEPT:
        url = backend.kept_url(kind)
        from tracekit.store import Store

        store = Store.open(url)
        if store.imports().height == 0:
            store.engine.dispose()
            run_once([*TRACEKIT.split(), "import", "--db", url, str(files[kind])])
            store = Store.open(url)
        KEPT[key] = (url, str(int(store.imports()["id"].max())))
        store.engine.dispose()
    return KEPT[key]


def stored_argv(kind: str, *args: str) -> Callable[[Backend, dict[str, Path]], list[str]]:
    def argv(backend: Backend, files: dict[str, Path]) -> list[str]:
        url, import_id = kept_import(backend, files, kind)
        return [*TRACEKIT.split(), args[0], "--db", url, import_id, *args[1:]]

    return argv


def clear_before(kind: str) -> Callable[[Backend, dict[str, Path]], Callable[[], None]]:
    def before(backend: Backend, files: dict[str, Path]) -> Callable[[], None]:
        url, _ = kept_import(backend, files, kind)
        return lambda: backend.clear_cache(url)

    return before


def report_output() -> str:
    return str(Path(tempfile.gettempdir()) / "tracekit-bench-report.html")


CASES = [
    Case("tracekit --help", None, 2.0, lambda b, f: [*TRACEKIT.split(), "--help"], store_side=False),
    Case("import ncu details CSV, 1,008 launches", "details", 5.0, import_argv("details"), fresh_before),
    Case("import ncu raw CSV, 1,008 launches x 2,238 metrics", "raw", 10.0, import_argv("raw"), fresh_before),
    Case("import nsys SQLite, 100k kernels", "nsys", 3.0, import_argv("nsys"), fresh_before),
    Case("import Kineto trace, 100k kernels (JSON)", "kineto", 3.0, import_argv("kineto"), fresh_before),
    Case("import warp trace, 10M warps (csv.gz)", "warps", 3.0, import_argv("warps"), fresh_before),
    Case(
        "import warp trace, 10M warps, kernel column (csv.gz)",
        "warps_kernel",
        3.0,
        import_argv("warps_kernel"),
        fresh_before,
    ),
    Case(
        "analyze --json, the stored 10M-warp launch (cold)",
        "warps",
        3.0,
        stored_argv("warps", "analyze", "--json"),
        clear_before("warps"),
    ),
    Case(
        "report (html) of the 1,008-launch raw import (cold)",
        "raw",
        8.0,
        stored_argv("raw", "report", "-o", report_output()),
        clear_before("raw"),
    ),
]


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def first_draw_s(url: str, launch_id: str) -> tuple[float, float]:
    """A fresh `tracekit serve` process on the store; headless Chromium loads the app once (its scripts cached),
    then the seconds from navigating to the launch page to its warp timeline, occupancy and latency figures
    drawn (the server computes what is not cached in the store), and to its verdict shown."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    port = free_port()
    server = subprocess.Popen(
        [*TRACEKIT.split(), "serve", "--db", url, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    options = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1800"):
        options.add_argument(flag)
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                driver.get(f"{base}/upload")
                WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.ID, "upload"))
                break
            except Exception:  # noqa: BLE001 - the server is still starting
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        started = time.perf_counter()
        driver.get(f"{base}/launch/{launch_id}")
        figures = ("warp-timeline", "occupancy-time-figure", "latency-figure")
        WebDriverWait(driver, 300, poll_frequency=0.05).until(
            lambda d: all(d.find_elements(By.CSS_SELECTOR, f"#{f} .main-svg") for f in figures)
        )
        drawn = time.perf_counter() - started
        WebDriverWait(driver, 300, poll_frequency=0.05).until(lambda d: d.find_elements(By.ID, "verdict-mode"))
        return drawn, time.perf_counter() - started
    finally:
        driver.quit()
        server.terminate()
        server.wait(30)


def library_view_s(url: str) -> tuple[float, float]:
    """A fresh `tracekit serve` process on the store; headless Chromium loads the app once (its scripts cached),
    then the seconds from navigating to the library to its launches table's first page shown, and to each of
    its launches' verdicts shown (the server analyses the page's launches that the store has no result for)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    port = free_port()
    server = subprocess.Popen(
        [*TRACEKIT.split(), "serve", "--db", url, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    options = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1800"):
        options.add_argument(flag)
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    verdicts = "#launches-table tbody td[data-dash-column=verdict]"
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                driver.get(f"{base}/upload")
                WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.ID, "upload"))
                break
            except Exception:  # noqa: BLE001 - the server is still starting
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        driver.get(f"{base}/library")
        # Timed by the page's own clock (ms since navigation started), polled inside the page: the WebDriver's
        # own polling waits on a busy renderer.
        driver.set_script_timeout(300)
        when = """
            const [selector, rowsOnly, done] = arguments;
            (function check() {
                const cells = [...document.querySelectorAll(selector)];
                if (cells.length >= 25 && cells.every(c => rowsOnly || c.innerText !== "analysing...")) {
                    done(performance.now());
                } else { setTimeout(check, 20); }
            })();
        """
        shown = driver.execute_async_script(when, verdicts, True) / 1000
        return shown, driver.execute_async_script(when, verdicts, False) / 1000
    finally:
        driver.quit()
        server.terminate()
        server.wait(30)


def measure_library(backend: Backend, files: dict[str, Path], repeat: int, cold: bool) -> tuple[Figure, Figure]:
    """(first page shown, its verdicts shown) in the library of the 100k-launch Nsight Systems import; `cold`:
    no analysis cached."""
    url, _ = kept_import(backend, files, "nsys")
    if not cold:  # the first page's analyses kept in the store by a first view
        library_view_s(url)
    shown, verdicts = Figure(), Figure()
    for _ in range(repeat):
        if cold:
            backend.clear_cache(url)
        shown_s, verdicts_s = library_view_s(url)
        shown.wall_s.append(shown_s)
        verdicts.wall_s.append(verdicts_s)
    return shown, verdicts


def measure_draws(backend: Backend, files: dict[str, Path], repeat: int, cold: bool) -> tuple[Figure, Figure]:
    """(first draw, verdict shown) of the launch page of the 10M-warp launch; `cold`: with nothing cached."""
    url, import_id = kept_import(backend, files, "warps")
    from tracekit.store import Store

    store = Store.open(url)
    launch_id = str(int(store.launches(import_id=int(import_id))["id"][0]))
    store.engine.dispose()
    if not cold:  # the analysis and the page's figure aggregates kept in the store by a first view
        run_once([*TRACEKIT.split(), "analyze", "--db", url, "--json", f"launch:{launch_id}"])
        first_draw_s(url, launch_id)
    drawn, verdict = Figure(), Figure()
    for _ in range(repeat):
        if cold:
            backend.clear_cache(url)
        drawn_s, verdict_s = first_draw_s(url, launch_id)
        drawn.wall_s.append(drawn_s)
        verdict.wall_s.append(verdict_s)
    return drawn, verdict


def print_commands(backends: list[Backend], files: dict[str, Path]) -> None:
    """Each case's command pair as shell lines (set-up inlined, a few ms: a file copy, or psql emptying the
    tables or the analysis cache), for another harness."""
    from tracekit.store.schema import metadata

    for case in CASES:
        for backend in backends if case.store_side else backends[:1]:
            argv = case.argv(backend, files)
            floor = (
                [PYTHON, "-c", "import polars"]
                if case.floor_kind is None
                else floor_argv(case.floor_kind, files[case.floor_kind])
            )
            command = shlex.join(argv)
            if case.name.startswith("import"):
                url = argv[argv.index("--db") + 1]
                if backend.name == "sqlite":
                    template = shlex.quote(str(backend.template))  # type: ignore[attr-defined]
                    command = f"rm -f {url} {url}-wal {url}-shm; cp {template} {url}; exec {command}"
                else:
                    schema = url.rsplit("%3D", 1)[1]
                    tables = ", ".join(f"{schema}.{table.name}" for table in metadata.sorted_tables)
                    reset = f"TRUNCATE {tables} RESTART IDENTITY CASCADE"
                    command = f"psql -q -h 127.0.0.1 -U postgres test -c {shlex.quote(reset)}; exec {command}"
            elif "cold" in case.name:
                command = f"{backend.clear_cache_shell(argv[argv.index('--db') + 1])}; exec {command}"
            print(f"# {case.name} [{backend.name if case.store_side else 'no store'}]")
            print(f"A: sh -c {shlex.quote(command)}")
            print(f"B: {shlex.join(floor)}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="+", help="cases whose name contains one of these words (dashboard: the draws)")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "tracekit-bench-e2e")
    parser.add_argument("--print-commands", action="store_true")
    parser.add_argument("--reset-postgres", metavar="URL", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.reset_postgres:
        PostgresBackend(options.dir).fresh_url()
        return
    # with --only, only the inputs of the chosen cases are built (the dashboard draws read the 10M-warp trace)
    chosen = [c for c in CASES if options.only and any(word in c.name for word in options.only)]
    wanted = {c.floor_kind for c in chosen if c.floor_kind} | (
        {"warps"} if "dashboard" in (options.only or []) else set()
    )
    files = inputs(options.dir, wanted if options.only and not options.print_commands else None)
    backends: list[Backend] = []
    for name in options.backend:
        try:
            backends.append(SqliteBackend(options.dir) if name == "sqlite" else PostgresBackend(options.dir))
        except Exception as exc:  # noqa: BLE001 - a missing server is reported, the other backend still runs
            print(f"({name}: skipped, {str(exc).splitlines()[0]})")
    if options.print_commands:
        print_commands(backends, files)
        return
    # As installed: `pip install` byte-compiles a package, and this checkout's editable install does not (nor does a
    # process here, with PYTHONDONTWRITEBYTECODE set), so every command would compile tracekit from source.
    for package in ("tracekit", "importers", "dashboards"):
        compileall.compile_dir(REPO / package, quiet=1)
    cases = [c for c in CASES if not options.only or any(word in c.name for word in options.only)]
    draws = not options.only or "dashboard" in options.only
    floors: dict[str, Figure] = {}
    print(f"{'work':<54}{'store':>9}{'tracekit s':>12}{'floor s':>9}{'ratio':>8}{'target':>8}{'peak GB':>9}")
    for case in cases:
        kind = case.floor_kind or "polars"
        if kind not in floors:
            floor = [PYTHON, "-c", "import polars"] if case.floor_kind is None else floor_argv(kind, files[kind])
            floors[kind] = measure(floor, options.repeat)
        for backend in backends if case.store_side else backends[:1]:
            before = case.before(backend, files)
            argv = case.argv(backend, files)
            figure = measure(argv, options.repeat, before)
            ratio = figure.wall / floors[kind].wall
            verdict = "" if case.target is None else ("ok" if ratio <= case.target else "MISS")
            print(
                f"{case.name:<54}{backend.name if case.store_side else '-':>9}{figure.wall:>12.2f}"
                f"{floors[kind].wall:>9.2f}{ratio:>7.1f}x{'<=' + format(case.target, 'g') + 'x':>8}"
                f"{figure.rss:>9.2f} {verdict}",
                flush=True,
            )
    for cold in (False, True) if draws else ():
        for backend in backends:
            drawn, shown = measure_draws(backend, files, options.repeat, cold)
            state = "nothing cached" if cold else "analysis cached"
            for label, figure, target in (
                (f"dashboard first draw, 10M-warp launch ({state})", drawn, "<=5 s"),
                (f"  its verdict shown ({state})", shown, ""),
            ):
                verdict = "" if not target else ("ok" if figure.wall <= 5.0 else "MISS")
                print(f"{label:<54}{backend.name:>9}{figure.wall:>12.2f}{'':>9}{'':>8}{target:>8}{'':>9} {verdict}")
    for cold in (True, False) if draws else ():
        for backend in backends:
            shown, verdicts = measure_library(backend, files, options.repeat, cold)
            state = "first view" if cold else "analyses cached"
            verdict = "ok" if shown.wall <= 2.0 else "MISS"
            label = f"library first page, 100k launches ({state})"
            print(f"{label:<54}{backend.name:>9}{shown.wall:>12.2f}{'':>9}{'':>8}{'<=2 s':>8}{'':>9} {verdict}")
            label = f"  its verdicts shown ({state})"
            print(f"{label:<54}{backend.name:>9}{verdicts.wall:>12.2f}")


if __name__ == "__main__":
    main()
