"""`tracekit report` in its three forms, on a hand-made warp trace and real Nsight Compute exports.

Expected numbers come from the inputs: the tiny trace's values are worked out by hand (see `make_tiny_warps`),
the Nsight values are read from the CSV's own columns here, the sweep's from the model it was built on.
"""

from __future__ import annotations

import csv
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tracekit.reports.markdown import md

HOSTILE_NAME = "<img src=x onerror=alert(1)>"
NCU_RAW = "ncu_raw_B200_sdpa_flash_RooflineAnalysis.csv"
PLOTLY_BUNDLE = re.compile(r"<script>/\*\*\n\* plotly\.js v.*?</script>", re.S)


def ncu_raw_rows(path: Path) -> list[dict[str, str]]:
    """The launches of an `ncu --page raw` CSV: the header row after the ==PROF== lines, a units row, then data."""
    lines = [line for line in path.read_text().splitlines() if not line.startswith("==")]
    rows = list(csv.DictReader(lines))
    return rows[1:]  # rows[0] holds the units


def analyze_json(cli, db: str, *sources: str) -> list[dict]:
    result = cli("analyze", "--db", db, "--json", *sources)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


class ResourceTags(HTMLParser):
    """Every address a tag would load: script src, link href, img/iframe/embed/source src."""

    def __init__(self) -> None:
        super().__init__()
        self.addresses: list[tuple[str, str]] = []
        self.figure_divs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        for name in ("src", "href", "data"):
            if attributes.get(name) and not (tag == "a" and attributes[name].startswith("#")):
                self.addresses.append((tag, attributes[name]))
        if tag == "div" and "figure" in (attributes.get("class") or "").split():
            self.figure_divs += 1


SWEEP_WARPS_TOTAL = 48  # the problem size every launch of the sweep shares


def sweep_traces(trace_file) -> list[Path]:
    """One SM, one trace per occupancy n in (1, 2, 8, 16): 48 warps in blocks of n warps, run one block after
    another. Warp latency is 1,000 ns up to 4 warps and 250 n ns above (a unit saturates at 4 warps per 1,000 ns),
    so the throughput is min(n / 1000, 0.004) warps per ns: L = 1,000 ns, B = 0.004, needed occupancy L x B = 4."""
    paths = []
    for n in (1, 2, 8, 16):
        latency = 1000 if n <= 4 else 250 * n
        blocks = SWEEP_WARPS_TOTAL // n
        warps = [(0, 0, block, w, block * latency, (block + 1) * latency) for block in range(blocks) for w in range(n)]
        paths.append(
            trace_file(f"sweep_{n}.csv", "sweep_kernel", warps, sm_count=1, grid=f"{blocks},1,1", block=f"{32 * n},1,1")
        )
    return paths


@pytest.fixture
def tiny_and_ncu(trace_file, tiny_warps, real_export) -> tuple[Path, Path]:
    return trace_file("tiny.csv", HOSTILE_NAME, tiny_warps()), real_export(NCU_RAW)


def test_html_report_content_and_escaping(cli, db_path, tmp_path, tiny_and_ncu):
    tiny, ncu = tiny_and_ncu
    out = tmp_path / "report.html"
    result = cli("report", "--db", db_path, str(tiny), str(ncu), "-o", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()

    # The hostile kernel name shows as text, never as a tag; nowhere unescaped, figures included.
    assert html.escape(HOSTILE_NAME) in text
    assert "<img" not in text and "onerror=alert(1)>" not in text

    # Tiny trace, by hand: span 3,000 ns; mean latency (6 x 1,000 + 2 x 2,000) / 8 = 1,250 ns; whole-launch
    # occupancy 10,000 warp-ns / (3,000 ns x 2 SMs) = 1.667 warps per SM; SM 0 goes idle for good at 2,000 ns,
    # so the tail is 1,000 ns = 33.33% of the span; after the last block start (1,000 ns) 2,000 ns = 66.67%.
    # 64-thread blocks at 32 registers on CC 9.0: the 32-block limit gives 32 x 2 = 64 warps = 100% theoretical.
    for expected in (
        '<td>duration</td><td class="num">3 µs</td>',
        '<td>latency mean</td><td class="num">1.25 µs</td>',
        "1.667",
        "1 µs (33.3% of the span)",
        '<td>after the last block start</td><td class="num">2 µs (66.7%)</td>',
        '<td>first SM idle for good</td><td class="num">2 µs</td>',
        '<td>theoretical</td><td class="num">100% (64 of 64 warps per SM)</td>',
    ):
        assert expected in text, expected

    # Nsight Compute launches: every duration and the theoretical occupancy as the CSV's own columns give them,
    # the durations (in ns there) in engineering units: 4 significant digits of µs below 1 ms.
    rows = ncu_raw_rows(ncu)
    assert len(rows) == 16
    for row in rows:
        ns = float(row["gpu__time_duration.sum"])
        assert 1_000 <= ns < 1_000_000
        duration = f"{float(f'{ns / 1000:.4g}'):g} µs"
        assert f'<td class="num">{duration}</td>' in text, duration
    assert {row["sm__maximum_warps_per_active_cycle_pct"] for row in rows} == {"12.50"}
    assert text.count('<td class="num">12.5%</td>') >= 16  # the index's theoretical occupancy column

    # The verdict and its evidence, as the analysis objects give them, one section per launch.
    results = analyze_json(cli, db_path, str(tiny), str(ncu))
    assert len(results) == 17
    for result in results:
        assert f'id="launch-{result["launch_id"]}"' in text
        verdict = result["classification"]
        assert html.escape(f"Verdict: {verdict['mode']}") in text
        for line in verdict["evidence"] + verdict["advice"]:
            assert html.escape(line) in text, line

    # Self-contained: no address any tag would load, no CDN outside plotly's own bundle (which is inlined once).
    parser = ResourceTags()
    parser.feed(text)
    assert parser.addresses == []
    assert len(PLOTLY_BUNDLE.findall(text)) == 1
    outside_bundle = PLOTLY_BUNDLE.sub("", text)
    assert len(outside_bundle) < len(text) - 1_000_000, "plotly.js is inlined"
    # (plotly.js itself names a few addresses in strings, e.g. map tile styles it never loads here)
    assert 'src="http' not in outside_bundle and 'href="http' not in outside_bundle
    assert "cdn" not in outside_bundle.lower()
    # Figures: the traced launch's timeline heatmap, occupancy over time and latency histogram; each counted
    # launch's speed-of-light chart, and its roofline where FLOPs were counted (the launch page's figures).
    counted = [r for r in results if r["classification"]["utilization"]]
    rooflines = [
        r
        for r in counted
        if (roof := (r.get("ceilings") or {}).get("roofline"))
        and roof["achieved_flop_per_s"]
        and any(p["arithmetic_intensity_flop_per_byte"] for p in roof["points"])
    ]
    assert counted and parser.figure_divs == 3 + len(counted) + len(rooflines)
    assert len(re.findall(r'<script type="application/json" id="fig-\d+-data">', text)) == parser.figure_divs


def test_markdown_report(cli, db_path, tiny_and_ncu):
    tiny, ncu = tiny_and_ncu
    result = cli("report", "--db", db_path, str(tiny), str(ncu), "--format", "md")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "<img" not in text
    assert "| duration | 3 µs |" in text
    assert "| latency mean | 1.25 µs |" in text
    assert "| theoretical | 100% (64 of 64 warps per SM) |" in text
    assert "| block limit: block slots | 32 blocks per SM |" in text  # 32-block limit: 32 x 2 warps = 64
    for row in ncu_raw_rows(ncu):
        ns = float(row["gpu__time_duration.sum"])
        assert f"| {float(f'{ns / 1000:.4g}'):g} µs | 12.5% |" in text
    # Template parameters and the parenthesis survive escaping as text.
    assert "void flash\\_fwd\\_kernel&lt;Flash\\_fwd\\_kernel\\_traits&lt;128, 128, 64, 4" in text
    for result in analyze_json(cli, db_path, str(tiny), str(ncu)):
        for line in result["classification"]["evidence"]:
            assert f"- {md(line)}" in text
    # Every table row has as many cells as its header (no stray `|` from an input).
    for block in re.findall(r"(?:^\|.*\|\n)+", text, re.M):
        lines = block.splitlines()
        widths = {len(re.split(r"(?<!\\)\|", line)) for line in lines}
        assert len(widths) == 1, lines


def test_markdown_escaping_of_markup():
    name = "k|<b>`x`*y*_z_[l](http://e) ~~s~~ & \\"
    escaped = md(name)
    assert escaped == r"k\|&lt;b&gt;\`x\`\*y\*\_z\_\[l\](http://e) \~\~s\~\~ &amp; \\"
    assert md("two\nlines") == "two lines"


def test_json_report_is_what_analyze_prints(cli, db_path, tmp_path, tiny_and_ncu):
    tiny, ncu = tiny_and_ncu
    out = tmp_path / "report.json"
    result = cli("report", "--db", db_path, str(tiny), str(ncu), "--format", "json", "-o", str(out))
    assert result.returncode == 0, result.stderr
    analyzed = cli("analyze", "--db", db_path, "--json", str(tiny), str(ncu))
    assert out.read_text() == analyzed.stdout
    assert json.loads(analyzed.stdout)[0]["kernel"]["name"] == HOSTILE_NAME


def test_sweep_figure_and_fit(cli, db_path, tmp_path, trace_file):
    paths = sweep_traces(trace_file)
    out = tmp_path / "sweep.html"
    result = cli("report", "--db", db_path, *map(str, paths), "-o", str(out), "--format", "html")
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    # The fit the trace was built on (see sweep_warps).
    assert "L = 1 µs, B = 4 warps/µs per SM, needed occupancy L x B = 4 warps per SM" in text
    parser = ResourceTags()
    parser.feed(text)
    # Per launch three trace figures; the sweep drawn once, at the kernel's first launch, linked from the others.
    assert parser.figure_divs == 4 * 3 + 1
    assert text.count("The sweep figure is drawn at") == 3


def test_big_trace_figures_stay_small(cli, db_path, tmp_path, trace_file):
    # 60,000 warps on 132 SMs: the figures plot aggregated frames, so their JSON does not grow with the warps.
    warps = [
        (0, block % 132, block, w, (block // 132) * 900 + w * 7, (block // 132) * 900 + 800 + w * 7)
        for block in range(7500)
        for w in range(8)
    ]
    path = trace_file("big.csv", "big_kernel", warps, sm_count=132, grid="7500,1,1", block="256,1,1")
    out = tmp_path / "big.html"
    result = cli("report", "--db", db_path, str(path), "-o", str(out))
    assert result.returncode == 0, result.stderr
    figure_json = re.findall(r'<script type="application/json" id="fig-\d+-data">(.*?)</script>', out.read_text())
    assert len(figure_json) == 3
    assert sum(len(spec) for spec in figure_json) < 1_500_000
    heatmap = json.loads(figure_json[0])["data"][0]
    assert len(heatmap["z"]) == 132 and len(heatmap["z"][0]) <= 400


def test_missing_file_is_one_line(cli, db_path, tmp_path):
    out = tmp_path / "report.html"
    result = cli("report", "--db", db_path, str(tmp_path / "nope.csv"), "-o", str(out))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "nope.csv: no such file" in result.stderr
    assert not out.exists()


@pytest.mark.browser
def test_html_report_draws_in_chromium(browser, cli, db_path, tmp_path, trace_file, tiny_warps):
    tiny = trace_file("tiny.csv", HOSTILE_NAME, tiny_warps())
    sweep = sweep_traces(trace_file)
    out = tmp_path / "report.html"
    result = cli("report", "--db", db_path, str(tiny), *map(str, sweep), "-o", str(out))
    assert result.returncode == 0, result.stderr
    parser = ResourceTags()
    parser.feed(out.read_text())
    assert parser.figure_divs == 5 * 3 + 1

    browser.get(out.resolve().as_uri())  # an alert() from an injected tag would fail this call
    drawn = browser.execute_script("""
        return Array.from(document.querySelectorAll('div.figure.js-plotly-plot'))
            .filter(div => div.querySelector('.main-svg')).length;""")
    assert drawn == parser.figure_divs
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0
    names = browser.execute_script("return document.querySelector('#launch-1 .kernel').textContent")
    assert names == HOSTILE_NAME
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert [address for address in fetched if not address.startswith(("file:", "data:", "blob:"))] == []
