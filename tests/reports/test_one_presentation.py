"""One launch through every view (the CLI's text in a subprocess, Markdown, HTML, the dashboard's answer panel and
the notebook): the same headline in plain words and the same What to try first, always present, with the numbers
read from the profiler's own CSV. Issue 27: the content is decided once (`tracekit/present`), the views lay it out.
The JSON views too: `analyze --json`, `report --format json`, the HTTP API and `results.to_dicts()` print one
object per launch, and a prediction has one shape wherever it is printed (`predict --json`, `what_to_try`)."""

from __future__ import annotations

import csv
import html as html_text
import html.parser as html_parser
import os
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import run_cli
from tracekit import format as fmt
from tracekit.api import TraceAnalysis, analyze_stored, what_to_try_for
from tracekit.ingest import ingest
from tracekit.store import Store

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "sample_traces" / "verdict_cases" / "h100" / "cases.raw.csv"
TRACE = REPO / "sample_traces" / "h100" / "vector_add_08warps.csv.gz"
L1 = "l1tex__throughput.avg.pct_of_peak_sustained_active"


def raw_metric(path: Path, kernel: str, metric: str, nth: int = 0) -> float:
    """One metric of the `nth` launch of a kernel, read from Nsight Compute's raw CSV with the csv module (not
    tracekit's reader)."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header = rows[0]
    row = [r for r in rows[2:] if r[header.index("Kernel Name")].startswith(kernel + "(")][nth]
    return float(row[header.index(metric)])


def cli(*args: str, db: Path) -> str:
    done = run_cli(*args, "--db", str(db), env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def views(store: Store, launch_id: int) -> dict[str, str]:
    """The launch through Markdown, HTML, the dashboard's answer panel and the notebook, each as plain text."""
    from dashboards import panels
    from tracekit.notebook import launch_html
    from tracekit.reports.html import report_html
    from tracekit.reports.markdown import report_markdown

    [result] = analyze_stored(store, [launch_id])
    tries = {launch_id: what_to_try_for(store, result)}
    panel = panels.answer_panel(result, what_to_try_for(store, result))
    return {
        "markdown": report_markdown([result], tries=tries).replace("\\", ""),
        "html": html_text.unescape(report_html([result], {}, tries=tries)),
        "dashboard": " ".join(_texts(panel)),
        "notebook": html_text.unescape(launch_html(result)),
    }


def json_views(db: Path, launch_id: int) -> dict[str, dict]:
    """The launch's analysis object as each JSON view prints it: `analyze --json`, `report --format json` (a
    subprocess each), the dashboard's HTTP API and the Python API's `to_dicts()`."""
    import json

    from tracekit.api import open as open_store
    from tracekit.dashboards.app import create_app

    [analyzed] = json.loads(cli("analyze", f"launch:{launch_id}", "--json", db=db))
    [reported] = json.loads(cli("report", f"launch:{launch_id}", "--format", "json", db=db))
    client = create_app(f"sqlite:///{db}").server.test_client()
    served = client.get(f"/api/launches/{launch_id}/analysis").get_json()
    [python] = open_store(str(db)).analyze([launch_id]).to_dicts()
    return {"analyze --json": analyzed, "report json": reported, "http api": served, "to_dicts": python}


def _texts(node) -> list[str]:
    """The text of a Dash component tree, depth first."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list | tuple):
        return [text for child in node for text in _texts(child)]
    children = getattr(node, "children", None)
    return [] if children is None else _texts(children)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory) -> Path:
    """The H100 verdict cases imported into a scratch store."""
    db = tmp_path_factory.mktemp("present") / "s.sqlite"
    ingest(Store.open(str(db)), CASES)
    return db


def launch_ids(db: Path, kernel: str) -> list[int]:
    rows = Store.open(str(db)).launches().iter_rows(named=True)
    return sorted(int(row["id"]) for row in rows if row["kernel_name"].startswith(kernel + "("))


@pytest.fixture(scope="module")
def cases(store_path) -> tuple[Path, int]:
    """The store and the id of the bank-conflict launch."""
    [launch_id] = launch_ids(store_path, "bank_conflicts")
    return store_path, launch_id


def test_a_launch_at_its_ceiling_reads_the_same_in_every_view(cases):
    """bank_conflicts holds L1/shared at its peak: each view leads with "Throughput-bound: L1/shared at <the CSV's
    value> of its peak ... - at the hardware limit", and under What to try first says no modelled change gains
    2% because that unit is at its ceiling."""
    db, launch_id = cases
    l1 = fmt.percent(raw_metric(CASES, "bank_conflicts", L1))
    headline_start = f"Throughput-bound: L1/shared at {l1} of its peak"
    text = cli("analyze", f"launch:{launch_id}", db=db)
    lines = text.splitlines()
    assert lines[1].startswith("  " + headline_start) and lines[1].endswith("- at the hardware limit")
    headline = lines[1].strip()
    [try_line] = [line for line in lines if line.startswith("  What to try first")]
    note = try_line.removeprefix("  What to try first: ")
    assert note.startswith("No change the predictor models (block size, registers, shared memory, ILP, grid) is ")
    assert f"L1/shared at {l1} of its peak" in note and "at the hardware limit" in note
    for name, view in views(Store.open(str(db)), launch_id).items():
        assert headline in view, name
        assert "What to try first" in view and note in view, name
    # The JSON views: one object, its headline the text's, L1's utilization the CSV's, and no change to try.
    objects = json_views(db, launch_id)
    analyzed = objects["analyze --json"]
    for name, obj in objects.items():
        assert obj == analyzed, name
    assert analyzed["classification"]["headline"] == headline
    [l1_unit] = [u for u in analyzed["classification"]["utilization"] if u["metric"] == L1]
    assert l1_unit["pct"] == pytest.approx(raw_metric(CASES, "bank_conflicts", L1))
    assert analyzed["what_to_try"] == []


def _graph(node, graph_id: str):
    """The dcc.Graph of that id in a Dash component tree."""
    if getattr(node, "id", None) == graph_id:
        return node
    children = node if isinstance(node, list | tuple) else getattr(node, "children", None)
    for child in children if isinstance(children, list | tuple) else [children] if children is not None else []:
        if (found := _graph(child, graph_id)) is not None:
            return found
    return None


def test_the_answers_charts_are_one_plotly_dict_in_every_layout(cases):
    """The speed-of-light chart and the roofline of bank_conflicts: built once as plotly dicts
    (`present.launch.answer_figures`), the same traces in the HTML report's embedded JSON, the launch page's
    dcc.Graph and the notebook's Plotly.newPlot call; the L1 bar is the CSV's value."""
    import json
    import re

    from dashboards import panels
    from tracekit.notebook import launch_html
    from tracekit.present.launch import answer_figures
    from tracekit.reports.html import report_html

    db, launch_id = cases
    store = Store.open(str(db))
    [result] = analyze_stored(store, [launch_id])
    charts = answer_figures(result)
    assert [c.key for c in charts] == ["speed_of_light", "roofline"]
    sol = charts[0].spec
    [bars] = [t for t in sol["data"] if t["type"] == "bar"]
    l1 = next(u for u in result.classification.utilization if u.metric == L1)
    assert bars["x"][bars["y"].index(next(y for y in bars["y"] if y.startswith(l1.label)))] == pytest.approx(
        raw_metric(CASES, "bank_conflicts", L1)
    )
    expected = [json.loads(json.dumps(c.spec["data"])) for c in charts]
    page = report_html([result], {}, tries={launch_id: what_to_try_for(store, result)})
    embedded = [
        json.loads(
            re.search(
                rf'<h3>{re.escape(c.title)}</h3><div class="figure" id="([^"]+)"></div>'
                rf'<script type="application/json" id="\1-data">(.*?)</script>',
                page,
            ).group(2)
        )["data"]
        for c in charts
    ]
    assert embedded == expected
    panel = panels.answer_panel(result, None)
    assert [_graph(panel, f"{panels.PANEL_IDS[c.key]}-figure").figure for c in charts] == [c.spec for c in charts]
    notebook = [
        json.loads(call.group(1))
        for call in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\])\s*,\s*\{", launch_html(result), re.S)
    ]
    assert notebook == expected


def test_a_warp_trace_alone_is_undetermined_in_plain_words_in_every_view(tmp_path):
    """A trace without counters: the headline says what a trace cannot show, and What to try first says why
    nothing is predicted, in the CLI, the reports, the dashboard and the notebook."""
    db = tmp_path / "s.sqlite"
    store = Store.open(str(db))
    ingest(store, TRACE)
    launch_id = int(store.launches()["id"][0])
    expected = "Undetermined: a warp trace alone shows occupancy and latency, not which unit binds"
    lines = cli("analyze", f"launch:{launch_id}", db=db).splitlines()
    assert lines[1] == "  " + expected
    [try_line] = [line for line in lines if line.startswith("  What to try first")]
    assert try_line.startswith("  What to try first: Nothing predicted: no Nsight Compute counters")
    for name, view in views(store, launch_id).items():
        assert expected in view, name
        assert "What to try first" in view and "Nothing predicted:" in view, name


def best_change(db: Path):
    """The copy at 8 warps per SM in the store at `db`: (store, launch id, its analysis, its predicted changes,
    the best one's knob and value as `tracekit predict` takes them)."""
    from tracekit.analysis.predict import knob_of

    launch_id = launch_ids(db, "stream_copy")[0]
    store = Store.open(str(db))
    [result] = analyze_stored(store, [launch_id])
    found = what_to_try_for(store, result)
    assert isinstance(found, list) and found
    value = str(next(v for v in vars(found[0].change).values() if v is not None))
    return store, launch_id, result, found, knob_of(found[0].change), value


def test_a_prediction_reads_the_same_in_every_view(store_path):
    """The copy at 8 warps per SM: its best predicted change, worded once, in `tracekit predict`, under What to try
    first in `analyze`, the Markdown and HTML reports, the launch page and the notebook, and in the what-if panel
    and the notebook's display of the prediction; the numbers are predict --json's, written by tracekit.format."""
    import json

    from dashboards import panels
    from tracekit.notebook import prediction_html

    db = store_path
    store, launch_id, result, found, knob, value = best_change(db)
    best = found[0]
    [p] = json.loads(cli("predict", f"launch:{launch_id}", f"--{knob.replace('_', '-')}", value, "--json", db=db))
    got = p["predicted"]
    now_ms = raw_metric(CASES, "stream_copy", "gpu__time_duration.sum")  # the CSV's unit row: ms
    assert p["current_duration_ns"] == pytest.approx(now_ms * 1e6)
    words = (
        f"{best.change.describe()}: predicted {fmt.duration(got['duration_ns'])} (now {fmt.duration(now_ms * 1e6)}), "
        f"speed-up {fmt.times(got['speedup'])} (interval {fmt.times(got['low'])} to {fmt.times(got['high'])})"
    )
    predicted = cli("predict", f"launch:{launch_id}", f"--{knob.replace('_', '-')}", value, db=db).splitlines()
    assert predicted[1] == "  " + words
    analyzed = cli("analyze", f"launch:{launch_id}", db=db)
    assert f"    - {words}; " in analyzed
    shown = views(store, launch_id)
    for name in ("markdown", "html", "dashboard"):
        assert words in shown[name], name
    assert words in " ".join(_texts(panels.prediction_body(best)))
    # What to try first's line (the change and what binds after it) is joined once, in present, and each view
    # writes it whole.
    from tracekit.present.try_first import try_first

    item = try_first(result, found).items[0]
    assert item.line == f"{words}; {item.after} after" and item.after
    assert f"    - {item.line}; basis: " in analyzed
    for name in ("markdown", "html", "dashboard"):
        assert item.line in shown[name], name
    assert words in html_text.unescape(prediction_html(best, result))
    # The JSON views: predict --json's object is the first what_to_try entry of every analysis JSON, field for field
    # (one shape, one function), and its description is the change the words name.
    assert p["description"] == best.change.describe() and p["knob"] == knob
    for name, obj in json_views(db, launch_id).items():
        assert obj["what_to_try"][0] == p, name


def test_a_comparison_reads_the_same_in_every_view(store_path):
    """The copy at 8 against 64 warps per SM: the duration row (the CSV's durations, the relative change) in
    `tracekit compare`, the Markdown and HTML comparisons, the dashboard's compare table and the notebook."""
    from dashboards.analysis_cache import AnalysisCache
    from dashboards.pages_compare import difference_table
    from tracekit.analysis.comparison import compare_results
    from tracekit.notebook import comparison_html
    from tracekit.present.comparison import ComparedPair
    from tracekit.reports.html import compare_html
    from tracekit.reports.markdown import compare_markdown

    db = store_path
    a, b = launch_ids(db, "stream_copy")[0], launch_ids(db, "stream_copy")[3]
    a_ns = raw_metric(CASES, "stream_copy", "gpu__time_duration.sum", 0) * 1e6
    b_ns = raw_metric(CASES, "stream_copy", "gpu__time_duration.sum", 3) * 1e6
    row = ["duration", fmt.duration(a_ns), fmt.duration(b_ns), fmt.duration(b_ns - a_ns)]
    row.append(fmt.fraction(b_ns / a_ns - 1, signed=True))
    text = cli("compare", f"launch:{a}", f"launch:{b}", "--kernel-a", "stream_copy", db=db)
    [line] = [line for line in text.splitlines() if line.startswith("│ duration ")]
    assert [c.strip() for c in line.strip("│").split("│")][:5] == row
    store = Store.open(str(db))
    result_a, result_b = analyze_stored(store, [a, b])
    comparison = compare_results([result_a], [result_b])
    pair = ComparedPair(f"launch:{a}", f"launch:{b}", comparison, [result_a], [result_b])
    markdown = compare_markdown([pair], [])
    assert "| " + " | ".join(row) in markdown.replace("\\", "")
    cells = "".join(f"<td>{cell}</td>" for cell in row)
    assert cells in compare_html([pair], []).replace('<td class="num">', "<td>")
    cache = AnalysisCache(TraceAnalysis(store))
    dashboard = difference_table({"A": cache.get(a), "B": cache.get(b)})
    table_rows = [[c.children for c in tr.children] for tr in dashboard[0].children[1].children]
    assert row in [r[:5] for r in table_rows]
    assert cells in comparison_html(comparison)
    # The JSON view: compare --json's duration field holds the CSV's durations and their change, exact, and its
    # comparison object is the one the Python API builds.
    import json

    printed = json.loads(cli("compare", f"launch:{a}", f"launch:{b}", "--kernel-a", "stream_copy", "--json", db=db))
    [compared] = [pair["comparison"] for pair in printed["pairs"]]
    [duration] = [f for f in compared["fields"] if f["field"] == "duration_ns"]
    assert (duration["a"], duration["b"]) == (pytest.approx(a_ns), pytest.approx(b_ns))
    assert duration["absolute_change"] == pytest.approx(b_ns - a_ns)
    assert duration["relative_change"] == pytest.approx(b_ns / a_ns - 1)
    assert compared == comparison.to_dict()


def _embedded(page: str) -> list[dict]:
    """Every figure the HTML report embeds, as its JSON."""
    import json
    import re

    return [
        json.loads(spec)
        for spec in re.findall(r'<script type="application/json" id="fig-\d+-data">(.*?)</script>', page, re.S)
    ]


def test_the_launch_figures_are_one_plotly_dict_in_every_layout(tmp_path):
    """vector_add at 16 warps per SM (a warp trace of more warps than the launch page draws one by one), its
    kernel's sweep over 8 to 64 warps per SM and the profiled run's stalls: the warp timeline, occupancy over time,
    latency, stalls and sweep are built once (`present.launch.launch_figures`) and the HTML report embeds, the
    launch page's dcc.Graphs hold and the notebook's `figure(name, aggregates)` draws the same data. The numbers
    are the trace's, read with the csv module: every warp in the latency histogram, a heatmap row per SM."""
    import gzip
    import json

    from tracekit.api import MAX_WARP_BARS, report_aggregates
    from tracekit.dashboards import pages_launch
    from tracekit.dashboards.analysis_cache import AnalysisCache
    from tracekit.present.launch import launch_figures, trace_frames
    from tracekit.reports.html import report_html

    store = Store.open(str(tmp_path / "s.sqlite"))
    for warps in (8, 16, 32, 64):
        ingest(store, REPO / "sample_traces" / "h100" / f"vector_add_{warps:02d}warps.csv.gz")
    ingest(store, REPO / "sample_traces" / "h100" / "samples.ncu-rep.gz")
    launch_id = int(store.launches().filter(pl.col("kernel_name").str.starts_with("vector_add"))["id"][1])
    with gzip.open(REPO / "sample_traces" / "h100" / "vector_add_16warps.csv.gz", "rt") as handle:
        rows = list(csv.DictReader(line for line in handle if not line.startswith("#")))
    assert len(rows) > MAX_WARP_BARS  # the launch page's first timeline is the binned aggregate, as the report's
    [result] = analyze_stored(store, [launch_id])
    aggregates = report_aggregates(store, [result])  # what `tracekit report` embeds
    charts = launch_figures(result, trace_frames(aggregates[launch_id]))
    assert [c.key for c in charts] == ["warp_timeline", "occupancy_time", "latency", "stalls", "sweep"]
    spec = {c.key: json.loads(json.dumps(c.spec)) for c in charts}
    assert sum(spec["latency"]["data"][0]["y"]) == len(rows)
    assert spec["warp_timeline"]["data"][0]["y"] == sorted({int(row["sm_id"]) for row in rows})
    this_launch = spec["sweep"]["data"][-1]
    assert this_launch["name"] == "this launch" and this_launch["x"] == [pytest.approx(16, rel=0.1)]
    # The report: each dict embedded as it is.
    embedded = _embedded(report_html([result], aggregates))
    for key, figure in spec.items():
        assert figure in embedded, key
    # The launch page: the same dicts in its graphs (from the aggregates it keeps in the store).
    page = pages_launch.layout(TraceAnalysis(store), AnalysisCache(TraceAnalysis(store)), launch_id)
    graph_ids = {
        "warp_timeline": "warp-timeline",
        "occupancy_time": "occupancy-time-figure",
        "latency": "latency-figure",
        "stalls": "stall-figure",
        "sweep": "sweep-figure",
    }
    for key, graph_id in graph_ids.items():
        assert json.loads(json.dumps(_graph(page, graph_id).figure)) == spec[key], key
    # The notebook: result.figure(name, aggregates) draws the dict.
    handed = open_store_results(tmp_path / "s.sqlite", launch_id)
    for key, figure in spec.items():
        drawn = json.loads(handed.figure(key, aggregates[launch_id]).to_json())
        drawn["layout"].pop("template")  # plotly's default theme, added by go.Figure
        assert drawn == figure, key


def open_store_results(db: Path, launch_id: int):
    """The launch as a notebook gets it (`tracekit.open(...).analyze(...)`)."""
    from tracekit.api import open as open_store

    [result] = open_store(str(db)).analyze([launch_id])
    return result


@pytest.fixture(scope="module")
def vector_add_store(tmp_path_factory) -> tuple[Path, list[int]]:
    """vector_add's warp traces at 8, 16, 32 and 64 warps per SM (a sweep of four occupancies) in a scratch store,
    and their launch ids in that order."""
    db = tmp_path_factory.mktemp("compare") / "s.sqlite"
    store = Store.open(str(db))
    for warps in (8, 16, 32, 64):
        ingest(store, REPO / "sample_traces" / "h100" / f"vector_add_{warps:02d}warps.csv.gz")
    return db, sorted(int(i) for i in store.launches()["id"].to_list())


def _warps_in(warps: int) -> int:
    """The warps of a vector_add trace, counted with the csv module."""
    import gzip

    with gzip.open(REPO / "sample_traces" / "h100" / f"vector_add_{warps:02d}warps.csv.gz", "rt") as handle:
        return sum(1 for _ in csv.DictReader(line for line in handle if not line.startswith("#")))


def _trace_header(warps: int) -> dict[str, str]:
    """The header of a vector_add trace ("# grid: 2048,1,1" as {"grid": "2048,1,1"}), read line by line."""
    import gzip

    with gzip.open(REPO / "sample_traces" / "h100" / f"vector_add_{warps:02d}warps.csv.gz", "rt") as handle:
        return dict(line[2:].strip().split(": ", 1) for line in handle if line.startswith("# ") and ": " in line)


def test_the_comparison_charts_are_one_plotly_dict_in_every_layout(vector_add_store):
    """vector_add at 8 against 64 warps per SM: occupancy over time on linked rows, the latency histograms as shares
    and the sweeps are built once (`present.comparison.comparison_charts`); the HTML comparison embeds and the
    dashboard's compare page holds the same dicts, under the same titles. The numbers are the traces': each
    histogram holds every warp of its CSV, and each side's row is its own occupancy curve."""
    import json

    from tracekit.api import launch_aggregates
    from tracekit.dashboards import pages_compare
    from tracekit.dashboards.analysis_cache import AnalysisCache
    from tracekit.present.comparison import ComparedPair, comparison_charts
    from tracekit.present.launch import trace_frames
    from tracekit.reports.html import compare_html

    db, ids = vector_add_store
    a, b = ids[0], ids[3]
    store = Store.open(str(db))
    result_a, result_b = analyze_stored(store, [a, b])
    views_a, views_b = launch_aggregates(store, a), launch_aggregates(store, b)
    charts = comparison_charts({"A": result_a, "B": result_b}, {"A": trace_frames(views_a), "B": trace_frames(views_b)})
    assert charts.note is None
    assert [c.key for c in charts.figures] == ["occupancy", "latency", "sweep"]
    spec = {c.key: json.loads(json.dumps(c.spec)) for c in charts.figures}
    occupancy = spec["occupancy"]
    assert [t["name"] for t in occupancy["data"]] == ["A", "B"]
    assert occupancy["layout"]["xaxis2"]["matches"] == "x"  # zooming one side zooms the other
    for trace, views in zip(occupancy["data"], (views_a, views_b), strict=True):
        curve = views["occupancy_over_time"]
        assert trace["y"] == curve["mean_active_warps_per_sm"].to_list()
        assert trace["x"] == pytest.approx([ns / 1000 for ns in curve["bin_start_ns"].to_list()])
    shares = {t["name"]: t["y"] for t in spec["latency"]["data"]}
    assert {side: round(sum(y), 9) for side, y in shares.items()} == {"A": 1.0, "B": 1.0}
    for side, warps in (("A", 8), ("B", 64)):  # each bar a whole number of the CSV's warps, all of them in all
        total = _warps_in(warps)
        counts = [share * total for share in shares[side]]
        assert counts == pytest.approx([round(c) for c in counts]) and round(sum(counts)) == total, side
    measured = [t for t in spec["sweep"]["data"] if t["name"].endswith("measured")]
    assert [t["name"] for t in measured] == ["A measured", "B measured"]
    assert len(measured[0]["x"]) == 4 and measured[0]["x"] == measured[1]["x"]  # one kernel: one sweep, 4 runs
    # The HTML comparison: each dict embedded as it is, under its title, with its note.
    comparison = compare_results_of([result_a], [result_b])
    pair = ComparedPair(f"launch:{a}", f"launch:{b}", comparison, [result_a], [result_b], views_a, views_b)
    page = compare_html([pair], [])
    assert _embedded(page) == list(spec.values())
    for chart in charts.figures:
        assert f"<h3>{html_text.escape(chart.title)}</h3>" in page
        assert chart.note is None or html_text.escape(chart.note) in page
    # The dashboard's compare page: the same dicts in its graphs, under the same titles.
    layout = pages_compare.layout(TraceAnalysis(store), AnalysisCache(TraceAnalysis(store)), str(a), str(b))
    for chart in charts.figures:
        assert json.loads(json.dumps(_graph(layout, f"compare-{chart.key}-figure").figure)) == spec[chart.key]
        assert chart.title in _texts(layout)
    # A side without per-warp timings: the other drawn alone, and the views say why.
    alone = comparison_charts({"A": result_a, "B": None}, {"A": trace_frames(views_a), "B": None})
    assert alone.note == "B has no per-warp timings: only A is drawn."
    assert [t["name"] for t in alone.figures[0].spec["data"]] == ["A"]
    neither = comparison_charts({"A": None, "B": None}, {"A": None, "B": None})
    assert neither.figures == [] and neither.note is not None and neither.note.startswith("Neither side")


def compare_results_of(results_a, results_b):
    from tracekit.analysis.comparison import compare_results

    return compare_results(results_a, results_b)


def test_the_region_charts_are_one_plotly_dict_in_every_layout(tmp_path):
    """The warp-specialized sample's regions: the timeline by region (binned: 528 x 5 warps) and each region's
    occupancy are built once (`present.regions.region_charts`); the HTML report embeds and the launch page holds
    the same dicts under the same titles. Every region the file names is in the legend."""
    import json

    from tracekit.api import report_aggregates
    from tracekit.dashboards import pages_launch
    from tracekit.dashboards.analysis_cache import AnalysisCache
    from tracekit.present.regions import region_charts
    from tracekit.reports.html import report_html

    store = Store.open(str(tmp_path / "s.sqlite"))
    ingest(store, REPO / "sample_traces" / "regions" / "ws_pipeline.v2.gz")
    launch_id = int(store.launches()["id"][0])
    [result] = analyze_stored(store, [launch_id])
    aggregates = report_aggregates(store, [result])
    views = aggregates[launch_id]
    charts = region_charts(
        views["region_timeline"], views["region_occupancy"], views["region_names"], views["region_time_unit"]
    )
    spec = {c.key: json.loads(json.dumps(c.spec)) for c in charts}
    names = {"setup", "mainloop", "wait_empty", "load_tile", "wait_full", "compute", "epilogue"}
    assert {t["name"] for t in spec["region_timeline"]["data"] if t.get("name")} == names
    assert {t["name"] for t in spec["region_occupancy"]["data"]} == names
    page = report_html([result], aggregates)
    embedded = _embedded(page)
    for chart in charts:
        assert spec[chart.key] in embedded, chart.key
        assert f"<h3>{chart.title}</h3>" in page
    launch_page = pages_launch.layout(TraceAnalysis(store), AnalysisCache(TraceAnalysis(store)), launch_id)
    texts = _texts(launch_page)
    for chart, graph_id in zip(charts, ("region-timeline", "region-occupancy"), strict=True):
        assert json.loads(json.dumps(_graph(launch_page, graph_id).figure)) == spec[chart.key], graph_id
        assert chart.title in texts


def test_the_trace_analyses_charts_are_one_plotly_dict_in_every_layout(tmp_path):
    """The DDP rank's launch queue and copy bandwidth over time (`present.trace_features.feature_figures`): the
    HTML report embeds and the steps page holds the same dicts under the same titles; the default stream's line
    reaches the full queue the table states."""
    import json

    from tracekit.analysis.trace_features import trace_features
    from tracekit.dashboards import pages_steps
    from tracekit.importers.kineto import read_host_events
    from tracekit.present.trace_features import feature_figures
    from tracekit.reports.html import report_html

    path = REPO / "sample_traces/steps/h200/ddp_rank0.pt.trace.json.gz"
    store = Store.open(str(tmp_path / "s.sqlite"))
    result, _ = ingest(store, path)
    found = trace_features(read_host_events(path))
    charts = feature_figures(found)
    spec = {c.key: json.loads(json.dumps(c.spec)) for c in charts}
    assert set(spec) == {"queue_length", "copy_bandwidth"}
    lines = {t["name"]: max(t["y"]) for t in spec["queue_length"]["data"]}
    assert lines == {f"stream {s.stream_id}": s.max_length for s in found.queues.streams}
    assert {t["name"] for t in spec["copy_bandwidth"]["data"]} == {k.kind for k in found.bandwidth.kinds}
    page = report_html([], {}, features=[(result.import_id, found)])
    embedded = _embedded(page)
    for chart in charts:
        assert spec[chart.key] in embedded, chart.key
        assert f"<h3>{chart.title}</h3>" in page
    steps_page = pages_steps.layout(TraceAnalysis(store), str(result.import_id))
    texts = _texts(steps_page)
    for chart in charts:
        assert json.loads(json.dumps(_graph(steps_page, f"steps-hta-{chart.key}").figure)) == spec[chart.key]
        assert chart.title in texts


# ---- whole tables: every view lays out the tables `tracekit.present` decided, cell for cell ---------------------


class _HtmlTables(html_parser.HTMLParser):
    """The tables of an HTML page, each as its rows of cell texts (header row first), entities decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def html_tables(page: str) -> list[list[list[str]]]:
    parser = _HtmlTables()
    parser.feed(page)
    return parser.tables


def markdown_tables(text: str) -> list[list[list[str]]]:
    """Each run of `| ... |` lines as a table (the `---` line left out), cells unescaped."""
    tables: list[list[list[str]]] = []
    previous = False
    for line in text.splitlines():
        is_row = line.startswith("|")
        if is_row and not set(line) <= set("|-: "):
            cells = [c.strip().replace("\\", "") for c in line.strip().strip("|").split(" | ")]
            if not previous:
                tables.append([])
            tables[-1].append(cells)
        previous = is_row
    return tables


def terminal_tables(text: str) -> list[list[list[str]]]:
    """The tables rich printed (at their natural width: the output is piped), each as header and rows."""
    tables: list[list[list[str]]] = []
    for line in text.splitlines():
        if line.startswith("┏"):
            tables.append([])
        elif line.startswith(("┃", "│")):
            tables[-1].append([c.strip() for c in line.strip()[1:-1].split(line.strip()[0])])
    return tables


def dash_tables(node) -> list[list[list[str]]]:
    """The `html.Table`s of a Dash tree, each as its rows of cell texts."""
    from dash import html as dash_html

    found: list[list[list[str]]] = []

    def rows(table) -> list[list[str]]:
        out: list[list[str]] = []

        def walk(child):
            if isinstance(child, dash_html.Tr):
                out.append([" ".join(_texts(cell)).strip() for cell in child.children])
            elif isinstance(child, list | tuple):
                for c in child:
                    walk(c)
            elif getattr(child, "children", None) is not None:
                walk(child.children)

        walk(table.children)
        return out

    def visit(child):
        if isinstance(child, dash_html.Table):
            found.append(rows(child))
        elif isinstance(child, list | tuple):
            for c in child:
                visit(c)
        elif getattr(child, "children", None) is not None:
            visit(child.children)

    visit(node)
    return found


def whole(table) -> list[list[str]]:
    return [list(table.columns), *[list(row) for row in table.rows]]


def printed_json(*args: str, db: Path):
    """What a CLI command prints with `--json`, parsed."""
    import json

    return json.loads(cli(*args, "--json", db=db))


def launch_from_json(obj: dict):
    """A launch's analysis read back from its JSON object (`analyze --json`): the JSON view's data, for the tables
    `tracekit.present` lays out of it."""
    from tracekit.analysis.types import LaunchAnalysis, from_json_dict

    return from_json_dict(LaunchAnalysis, {k: v for k, v in obj.items() if k != "what_to_try"})


def comparison_from_json(obj: dict):
    """A comparison read back from `compare --json`'s object (each field's change, each text field's two sides)."""
    from tracekit.analysis.comparison import Comparison, FieldChange
    from tracekit.analysis.types import from_json_dict

    return Comparison(
        obj["kernel_a"],
        obj["kernel_b"],
        obj["launches_a"],
        obj["launches_b"],
        [from_json_dict(FieldChange, f) for f in obj["fields"]],
        [(f["field"], f["a"], f["b"]) for f in obj["text_fields"]],
    )


def test_a_launch_shows_the_same_whole_tables_in_every_view(vector_add_store):
    """vector_add at 8 warps per SM (a trace of a four-occupancy sweep): each table `present.launch.launch_tables`
    decides (launch, occupancy, warps, Little's law, tail, sweep) is in `tracekit analyze --tables`, the Markdown
    and HTML reports, the launch page and the notebook whole, cell for cell, and every JSON view (`analyze --json`,
    `report --format json`, the HTTP API, the Python API's `to_dicts()`) holds every cell of every table. (The
    launch page as Chromium draws it: tests/dashboards/test_browser.py.)"""
    from tracekit.dashboards import pages_launch
    from tracekit.dashboards.analysis_cache import AnalysisCache
    from tracekit.notebook import launch_html
    from tracekit.present.launch import launch_tables
    from tracekit.reports.html import report_html
    from tracekit.reports.markdown import report_markdown

    db, ids = vector_add_store
    launch_id = ids[0]
    store = Store.open(str(db))
    [result] = analyze_stored(store, [launch_id])
    expected = {table.title: whole(table) for table in launch_tables(result)}
    assert set(expected) == {
        "Launch",
        "Occupancy",
        "Warps (trace)",
        "Little's law: occupancy = latency x throughput",
        "Tail",
        "Occupancy sweep: throughput = min(n / L, B)",
    }
    tries = {launch_id: what_to_try_for(store, result)}
    shown = {
        "cli": terminal_tables(cli("analyze", f"launch:{launch_id}", "--tables", db=db)),
        "markdown": markdown_tables(report_markdown([result], tries=tries)),
        "html": html_tables(report_html([result], {}, tries=tries)),
        "notebook": html_tables(launch_html(result)),
    }
    for view, tables in shown.items():
        for title, rows in expected.items():
            assert rows in tables, (view, title)
    page = pages_launch.layout(TraceAnalysis(store), AnalysisCache(TraceAnalysis(store)), launch_id)
    on_page = dash_tables(page)
    for title, rows in expected.items():
        assert rows in on_page, title
    # The JSON views: each object holds every cell of every table.
    for name, obj in json_views(db, launch_id).items():
        assert {table.title: whole(table) for table in launch_tables(launch_from_json(obj))} == expected, name
    # The numbers are the trace's: its warp count, read with the csv module; the grid and block of its header.
    warps = dict(row for row in expected["Warps (trace)"][1:])
    assert warps["warps"] == fmt.number(_warps_in(8))
    launch, header = dict(row for row in expected["Launch"][1:]), _trace_header(8)
    assert (launch["grid"], launch["block"]) == (
        header["grid"].replace(",", " x "),
        header["block"].replace(",", " x "),
    )
    static, dynamic = (fmt.size(int(header[f"{part}_smem_bytes"])) for part in ("static", "dynamic"))
    assert launch["shared memory per block"].endswith(f" ({static} static, {dynamic} dynamic)")


def test_a_comparison_shows_the_same_whole_table_in_every_view(vector_add_store, tmp_path):
    """vector_add at 8 against 64 warps per SM: the whole of `present.comparison.comparison_table` in `tracekit
    compare` (text, `--format md`, `--format html`), the compare page and the notebook, cell for cell, and from the
    Python API's comparison (`api.compare_launches`) and `compare --json`'s. The compare page shows each side's
    launch table as every view of the launch does (`present.launch.launch_table`)."""
    from tracekit.api import compare_launches
    from tracekit.api import open as open_store
    from tracekit.dashboards import pages_compare
    from tracekit.dashboards.analysis_cache import AnalysisCache
    from tracekit.notebook import comparison_html
    from tracekit.present.comparison import comparison_table
    from tracekit.present.launch import launch_table

    db, ids = vector_add_store
    a, b = ids[0], ids[3]
    store = Store.open(str(db))
    result_a, result_b = analyze_stored(store, [a, b])
    comparison = compare_results_of([result_a], [result_b])
    expected = whole(comparison_table(comparison))
    assert expected[1][0] == "duration" and len(expected) > 10
    page = pages_compare.layout(TraceAnalysis(store), AnalysisCache(TraceAnalysis(store)), str(a), str(b))
    sides = (f"launch:{a}", f"launch:{b}", "--kernel-a", "vector_add")
    written = tmp_path / "compare.html"
    cli("compare", *sides, "--format", "html", "-o", str(written), db=db)
    shown = {
        "cli": terminal_tables(cli("compare", *sides, db=db)),
        "markdown": markdown_tables(cli("compare", *sides, "--format", "md", db=db)),
        "html": html_tables(written.read_text(encoding="utf-8")),
        "dashboard": dash_tables(page),
        "notebook": html_tables(comparison_html(comparison)),
    }
    for view, tables in shown.items():
        assert expected in tables, view
    for result in (result_a, result_b):
        assert whole(launch_table(result)) in shown["dashboard"], result.launch_id
    # The APIs: the Python API's comparison, and `compare --json`'s, give every cell of the table.
    results = open_store(str(db)).analyze([a, b])
    assert whole(comparison_table(compare_launches([results.by_launch(a)], [results.by_launch(b)]))) == expected
    printed = printed_json("compare", *sides, db=db)
    [compared] = [pair["comparison"] for pair in printed["pairs"]]
    assert whole(comparison_table(comparison_from_json(compared))) == expected
    # The numbers are the traces': A's and B's durations as their headers state them.
    durations = [int(_trace_header(warps)["launch_duration_ns"]) for warps in (8, 64)]
    assert expected[1][1:3] == [fmt.duration(ns) for ns in durations]


def test_a_prediction_shows_the_same_whole_table_in_every_view(store_path, tmp_path):
    """The copy at 8 warps per SM, its best change: `present.prediction.prediction_table` (what binds, occupancy
    after, basis, Nsight Compute's estimate, what would narrow it) whole, under the same title, in `tracekit
    predict`, the Markdown and HTML reports (`tracekit report`: under What to try first), the launch page (under its
    What to try first, and in the what-if) and the notebook; every JSON view of the launch (`predict --json`,
    `analyze --json`, `report --format json`, the HTTP API, the Python API) holds every cell of it."""
    from tracekit.analysis.predict import Prediction
    from tracekit.analysis.types import from_json_dict
    from tracekit.api import open as open_store
    from tracekit.dashboards import pages_launch, panels
    from tracekit.dashboards.analysis_cache import AnalysisCache
    from tracekit.notebook import prediction_html
    from tracekit.present.prediction import prediction_table, prediction_text

    db = store_path
    store, launch_id, result, found, knob, value = best_change(db)
    best = found[0]
    table = prediction_table(prediction_text(best, result, fmt.kernel_name(result.kernel.name or "")))
    expected = whole(table)
    assert [row[0] for row in expected[1:4]] == ["binds", "basis", "occupancy after the change"]
    change = (f"--{knob.replace('_', '-')}", value)
    printed = cli("predict", f"launch:{launch_id}", *change, db=db).splitlines()
    assert printed[0] == table.title
    rows = [line.strip().split(": ", 1) for line in printed[2:] if line.startswith("  ") and ": " in line]
    assert [list(table.columns), *rows] == expected
    # The reports, as `tracekit report` writes them: the table under its title, below What to try first.
    markdown = cli("report", f"launch:{launch_id}", "--format", "md", db=db)
    assert expected in markdown_tables(markdown)
    plain = markdown.replace("\\", "")
    assert plain.index("**What to try first**") < plain.index(f"**{table.title}**")
    page = tmp_path / "report.html"
    cli("report", f"launch:{launch_id}", "--format", "html", "-o", str(page), db=db)
    written = page.read_text(encoding="utf-8")
    assert expected in html_tables(written)
    assert f"<h3>{html_text.escape(table.title)}</h3>" in written
    # The launch page: under What to try first, and in the what-if for the same change; the notebook.
    launch_page = pages_launch.layout(TraceAnalysis(store), AnalysisCache(TraceAnalysis(store)), launch_id)
    assert expected in dash_tables(_by_id(launch_page, "what-to-try-predictions"))
    assert table.title in _texts(_by_id(launch_page, "what-to-try-predictions"))
    assert expected in dash_tables(panels.prediction_body(best, result))
    assert expected in html_tables(prediction_html(best, result))
    # The JSON views: `predict --json`'s object is the first `what_to_try` entry of every analysis JSON, and with
    # the analysis (what binds the launch now) it gives the table again; so does the Python API's prediction.
    [p] = printed_json("predict", f"launch:{launch_id}", *change, db=db)
    for name, obj in json_views(db, launch_id).items():
        assert obj["what_to_try"][0] == p, name
        read = prediction_text(from_json_dict(Prediction, p), launch_from_json(obj))
        assert whole(prediction_table(read)) == expected, name
    results = open_store(str(db)).analyze([launch_id])
    predicted = results.predict(launch_id, **{knob: float(value) if knob == "ilp" else int(value)})
    assert whole(prediction_table(prediction_text(predicted, results.by_launch(launch_id)))) == expected


def test_a_step_shows_the_same_whole_tables_in_every_view(tmp_path):
    """A ResNet step with a `.item()` sync (batch 512 on an H200): the steps table (`present.steps.step_rows`) and
    the idle causes (`present.steps.cause_table`) whole in the Markdown and HTML reports and on the steps page; the
    causes whole in `tracekit step` too, which prints the steps table's cells at fixed widths (a long label cut at
    24 characters). The Python API and a notebook get the `ProgramSteps` itself (`TraceAnalysis.program_steps`, the
    tables' source here), `step --json` every cell of both. Every view shows the step as the program runs it (the
    replay without the profiler), and the same headline above the tables."""
    from tracekit.dashboards import pages_steps
    from tracekit.present import steps as present_steps
    from tracekit.reports import steps_section
    from tracekit.reports.html import report_html
    from tracekit.reports.markdown import report_markdown

    db = tmp_path / "s.sqlite"
    store = Store.open(str(db))
    trace = REPO / "sample_traces" / "steps" / "h200_b512" / "resnet_item_sync.pt.trace.json.gz"
    import_id = int(ingest(store, trace)[0].import_id)
    traces = TraceAnalysis(store)
    program = traces.program_steps(str(import_id))
    result = program.unprofiled
    step = result.steps[result.representative_step or 0]
    causes = present_steps.cause_table(step)

    def as_table(rows: list[dict[str, str]]) -> list[list[str]]:
        return [list(rows[0]), *[list(row.values()) for row in rows]]

    expected = {"steps": as_table(present_steps.step_rows(result)), "causes": whole(causes)}
    assert len(expected["steps"]) > 2 and len(expected["causes"]) > 1
    assert sum(c.idle_ns for c in step.causes) == step.idle_ns > 0  # the trace's idle time, all of it named
    shown = {
        "markdown": markdown_tables(report_markdown([], steps=[program])),
        "html": html_tables(report_html([], {}, steps=steps_section.gather(store, [import_id]))),
    }
    for view, tables in shown.items():
        for name, rows in expected.items():
            assert rows in tables, (view, name)
    page = pages_steps.layout(traces, str(import_id))
    for table_id, rows in (("steps-table", expected["steps"]), ("steps-causes", expected["causes"])):
        shown_table = _by_id(page, table_id)
        assert [[c["name"] for c in shown_table.columns], *[list(r.values()) for r in shown_table.data]] == rows
    assert causes.title in _texts(page)
    text = cli("step", f"import:{import_id}", db=db)
    printed = text.splitlines()
    # The causes: the same table, whole, under its title.
    assert expected["causes"] in terminal_tables(text) and causes.title in printed
    headline = present_steps.program_headline(program)
    assert printed[0] == headline and _by_id(page, "steps-program").children == headline
    assert headline in report_markdown([], steps=[program])
    # The CLI's steps table, whole: its header and every row, each cell at its column's fixed width.
    start = printed.index("  " + " ".join(k.rjust(w) if w > 0 else k.ljust(-w) for k, w in step_widths().items()))
    assert fixed_width_rows(printed[start : start + len(expected["steps"])]) == expected["steps"]
    # The JSON view: `step --json`'s replay without the profiler holds every cell of both tables.
    from tracekit.analysis.steps import StepsResult
    from tracekit.analysis.types import from_json_dict

    read = from_json_dict(StepsResult, printed_json("step", f"import:{import_id}", db=db)["unprofiled"])
    assert as_table(present_steps.step_rows(read)) == expected["steps"]
    assert whole(present_steps.cause_table(read.steps[read.representative_step or 0])) == expected["causes"]


def step_widths() -> dict[str, int]:
    """The CLI's steps table columns and widths (negative: left-aligned; 0: the rest of the line)."""
    from tracekit.cli.step_command import WIDTHS

    return WIDTHS


def fixed_width_rows(lines: list[str]) -> list[list[str]]:
    """The cells of the CLI's fixed-width rows ("  " then each column at its width, one space between)."""
    rows = []
    for line in lines:
        cells, at = [], 2
        for width in step_widths().values():
            cells.append((line[at:] if width == 0 else line[at : at + abs(width)]).strip())
            at += abs(width) + 1
        rows.append(cells)
    return rows


def _by_id(node, component_id: str):
    if getattr(node, "id", None) == component_id:
        return node
    children = getattr(node, "children", None) if not isinstance(node, list | tuple) else node
    for child in children if isinstance(children, list | tuple) else [children] if children is not None else []:
        found = _by_id(child, component_id)
        if found is not None:
            return found
    return None
