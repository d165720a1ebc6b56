"""`tracekit compare`: matching, side-by-side values, run-to-run spread, gates and their exit codes, and the
differences the literature predicts on the H100 sample pairs (when sample_traces/ holds them).

Hand-made sides use the tiny launch of conftest (`make_tiny_warps`): its span is 3,000 ns, and `stretch` scales
every time, so a stretch of 1.2 is a launch 20% slower in every time field.
"""

from __future__ import annotations

import html
import json
import re

import polars as pl
import pytest

from tracekit.matching import match_launches

HOSTILE_NAME = "<img src=x onerror=alert(1)>"


def table_row(output: str, label: str) -> list[str]:
    """The cells of the rich table row whose first cell is `label`."""
    for line in output.splitlines():
        cells = [cell.strip() for cell in re.split(r"[│┃]", line) if cell.strip()]
        if cells and cells[0] == label:
            return cells
    raise AssertionError(f"no row {label!r} in:\n{output}")


def field(payload: dict, name: str, pair: int = 0) -> dict:
    return next(f for f in payload["pairs"][pair]["comparison"]["fields"] if f["field"] == name)


@pytest.fixture
def slower_pair(trace_file, tiny_warps):
    a = trace_file("a.csv", "vector_add", tiny_warps())
    b = trace_file("b.csv", "vector_add", tiny_warps(stretch=1.2))
    return a, b


def test_text_table_and_gates(cli, db_path, slower_pair):
    a, b = slower_pair
    result = cli(
        "compare", "--db", db_path, str(a), str(b), "--fail-if", "duration_ns>+5%", "--fail-if", "mean_latency_ns>+50%"
    )
    assert result.returncode == 1, result.stderr
    out = result.stdout
    # 3,000 -> 3,600 ns; mean latency 1,250 -> 1,500 ns; both +20%, lower is better. Times in engineering units.
    assert table_row(out, "duration")[:6] == ["duration", "3 µs", "3.6 µs", "+600 ns", "+20%", "n/a"]
    assert table_row(out, "warp latency, mean")[1:5] == ["1.25 µs", "1.5 µs", "+250 ns", "+20%"]
    assert table_row(out, "duration")[-1] == "worse"
    # 8 warps on 2 SMs over 3,000 ns: 8 / 3,000 / 2 = 0.001333 warps/ns/SM, 1.333 per µs
    assert table_row(out, "throughput per SM")[1:3] == ["1.333 warps/µs", "1.111 warps/µs"]
    assert table_row(out, "verdict")[1:3] == ["undetermined", "undetermined"]
    assert "duration_ns>+5%: FAILED: duration changed by +20% (3 µs -> 3.6 µs)" in out
    assert "mean_latency_ns>+50%: passed" in out

    passing = cli("compare", "--db", db_path, str(a), str(b), "--fail-if", "duration_ns>+25%")
    assert passing.returncode == 0, passing.stderr
    assert "duration_ns>+25%: passed" in passing.stdout
    # B against A: faster, so a gate on a rise passes and a gate on a fall of more than 10% fails.
    assert cli("compare", "--db", db_path, str(b), str(a), "--fail-if", "duration_ns>+5%").returncode == 0
    assert cli("compare", "--db", db_path, str(b), str(a), "--fail-if", "duration_ns<-10%").returncode == 1


def test_bad_gate_is_one_line_and_exit_2(cli, db_path, slower_pair):
    a, b = slower_pair
    result = cli("compare", "--db", db_path, str(a), str(b), "--fail-if", "duration_ns>>5%")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "--fail-if 'duration_ns>>5%': expected FIELD>+N%" in result.stderr
    unknown = cli("compare", "--db", db_path, str(a), str(b), "--fail-if", "speed>+5%")
    assert unknown.returncode == 2 and "unknown field 'speed'" in unknown.stderr


def test_run_to_run_spread(cli, db_path, trace_file, tiny_warps):
    # A: two launches, 3,000 and 3,300 ns (mean 3,150, spread 300); B: one at 3,240 ns: +90 ns, within A's spread.
    a = trace_file("a.csv", "k", tiny_warps(0) + tiny_warps(1, stretch=1.1))
    b = trace_file("b.csv", "k", tiny_warps(stretch=1.08))
    result = cli("compare", "--db", db_path, str(a), str(b), "--format", "json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    duration = field(payload, "duration_ns")
    assert duration["a"] == pytest.approx(3150) and duration["b"] == pytest.approx(3240)
    assert duration["spread_a"] == pytest.approx(300) and duration["spread_b"] is None
    assert duration["within_noise"] is True and duration["improved"] is None
    assert payload["pairs"][0]["launch_ids_a"] == [1, 2] and payload["pairs"][0]["launch_ids_b"] == [3]
    text = cli("compare", "--db", db_path, str(a), str(b))
    assert table_row(text.stdout, "duration")[-1] == "within run-to-run spread"
    written = a.parent / "compare.txt"
    assert cli("compare", "--db", db_path, str(a), str(b), "-o", str(written)).stdout == ""
    assert table_row(written.read_text(), "duration")[1:3] == ["3.15 µs", "3.24 µs"]


def test_differently_named_kernels(cli, db_path, trace_file, tiny_warps):
    a = trace_file("a.csv", "reduceNeighbored", tiny_warps(stretch=1.5))
    b = trace_file("b.csv", "reduceInterleaved", tiny_warps())
    unmatched = cli("compare", "--db", db_path, str(a), str(b))
    assert unmatched.returncode == 2
    assert "no launch of A matches one of B" in unmatched.stderr and "--kernel-a" in unmatched.stderr
    result = cli(
        "compare",
        "--db",
        db_path,
        str(a),
        str(b),
        "--kernel-a",
        "reduceNeighbored",
        "--kernel-b",
        "reduceInterleaved",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    comparison = payload["pairs"][0]["comparison"]
    assert (comparison["kernel_a"], comparison["kernel_b"]) == ("reduceNeighbored", "reduceInterleaved")
    assert field(payload, "duration_ns")["relative_change"] == pytest.approx(3000 / 4500 - 1)
    assert field(payload, "duration_ns")["improved"] is True


def test_html_and_markdown_forms(cli, db_path, tmp_path, trace_file, tiny_warps):
    a = trace_file("a.csv", HOSTILE_NAME, tiny_warps())
    b = trace_file("b.csv", HOSTILE_NAME, tiny_warps(stretch=1.2))
    out = tmp_path / "compare.html"
    result = cli(
        "compare", "--db", db_path, str(a), str(b), "--format", "html", "-o", str(out), "--fail-if", "duration_ns>+5%"
    )
    assert result.returncode == 1
    assert "duration_ns>+5%: FAILED" in result.stderr
    text = out.read_text()
    assert "<img" not in text and html.escape(HOSTILE_NAME) in text
    assert '<td>duration</td><td class="num">3 µs</td><td class="num">3.6 µs</td>' in text
    assert "Gates: FAILED" in text
    # Overlaid latency histograms and occupancy curves of A and B.
    assert len(re.findall(r'<div class="figure" id="fig-\d+">', text)) == 2
    markdown = cli("compare", "--db", db_path, str(a), str(b), "--format", "md")
    assert markdown.returncode == 0
    assert "&lt;img src=x onerror=alert(1)&gt;" in markdown.stdout and "<img" not in markdown.stdout
    assert "| duration | 3 µs | 3.6 µs | +600 ns | +20% | n/a | n/a | worse |" in markdown.stdout


def test_pairing_by_name_and_configuration():
    def launches(rows):
        return pl.DataFrame(
            [
                {
                    "id": i,
                    "kernel_name": n,
                    "grid_x": g,
                    "grid_y": 1,
                    "grid_z": 1,
                    "block_x": 256,
                    "block_y": 1,
                    "block_z": 1,
                }
                for i, n, g in rows
            ]
        )

    a = launches([(1, "k", 64), (2, "k", 128), (3, "k", 64), (4, "other", 64)])
    b = launches([(5, "k", 64), (6, "k", 128), (7, "k", 256)])
    pairs = match_launches(a, b)
    assert [(p[0]["id"].to_list(), p[1]["id"].to_list()) for p in pairs] == [([1, 3], [5]), ([2], [6])]
    named = match_launches(a, b, kernel_a="other", kernel_b="k")
    assert named[0][0]["id"].to_list() == [4] and named[0][1]["id"].to_list() == [5, 6, 7]


# ---- the H100 sample pairs --------------------------------------------------------------------------------------


def sample_comparison(cli, db_path, sample_trace, a: str, b: str, *options: str) -> dict:
    paths = [str(sample_trace(f"h100/{name}.csv.gz")) for name in (a, b)]
    result = cli("compare", "--db", db_path, *paths, "--format", "json", *options)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.gpu_samples
def test_fast_math_black_scholes_is_shorter(cli, db_path, sample_trace):
    payload = sample_comparison(
        cli,
        db_path,
        sample_trace,
        "black_scholes",
        "black_scholes_fast_math",
        "--kernel-a",
        "black_scholes",
        "--kernel-b",
        "black_scholes_fast_math",
    )
    assert field(payload, "duration_ns")["relative_change"] < 0
    # Fast math needs fewer registers (29 against 35 on the H100), so more warps fit an SM; each warp then waits
    # longer on the memory system, but more of them finish per ns: Little's law, not a shorter warp latency.
    assert field(payload, "trace_occupancy_warps_per_sm")["relative_change"] > 0
    assert field(payload, "throughput_warps_per_ns_per_sm")["relative_change"] > 0


@pytest.mark.gpu_samples
def test_interleaved_reduction_beats_divergent(cli, db_path, sample_trace):
    payload = sample_comparison(
        cli,
        db_path,
        sample_trace,
        "reduce_neighbored",
        "reduce_interleaved",
        "--kernel-a",
        "reduceNeighbored",
        "--kernel-b",
        "reduceInterleaved",
    )
    assert field(payload, "duration_ns")["relative_change"] < 0


@pytest.mark.gpu_samples
def test_four_loads_per_thread_raise_warp_throughput(cli, db_path, sample_trace):
    # Same grid and block: with 4 independent loads in flight per thread each warp finishes sooner, so the same
    # warps complete at a higher rate at the same occupancy (fewer warps needed for the same bandwidth).
    payload = sample_comparison(
        cli,
        db_path,
        sample_trace,
        "memcpy_1load",
        "memcpy_4loads",
        "--kernel-a",
        "memcpy_1load",
        "--kernel-b",
        "memcpy_4loads",
    )
    assert field(payload, "throughput_warps_per_ns_per_sm")["relative_change"] > 0
    assert field(payload, "duration_ns")["relative_change"] < 0


@pytest.mark.parametrize("rows", [1, 2, 3])
def test_the_occupancy_rows_are_laid_out_as_plotly_subplots(rows):
    """`figures.compare_occupancy_spec` writes plotly's JSON itself (no validation): its rows' axes, domains and
    titles are the ones plotly's make_subplots lays out (shared time axes), every row's time axis linked to the
    first, the time title under the last row."""
    from plotly.subplots import make_subplots

    from tracekit import figures

    curve = pl.DataFrame({"bin_start_ns": [0, 1000, 2000], "mean_active_warps_per_sm": [4.0, 8.0, 2.0]})
    sides = ["A", "B", "C"][:rows]
    spec = figures.compare_occupancy_spec(dict.fromkeys(sides, curve), {})
    reference = make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=[f"{side}: mean resident warps per SM" for side in sides],
    )
    for row in range(2, rows + 1):
        reference.update_xaxes(matches="x", row=row, col=1)
    expected = json.loads(reference.to_json())["layout"]
    layout = json.loads(json.dumps(spec["layout"]))
    for n in range(1, rows + 1):
        axis = "" if n == 1 else str(n)
        got_x = {k: v for k, v in layout[f"xaxis{axis}"].items() if k != "title"}
        got_y = {k: v for k, v in layout[f"yaxis{axis}"].items() if k not in ("title", "rangemode")}
        assert got_x == expected[f"xaxis{axis}"] and got_y == expected[f"yaxis{axis}"], n
        assert spec["data"][n - 1]["xaxis"] == f"x{axis}" and spec["data"][n - 1]["yaxis"] == f"y{axis}"
    assert layout["annotations"] == expected["annotations"]
    assert layout[f"xaxis{rows if rows > 1 else ''}"]["title"] == {"text": figures.TIME_AXIS_TITLE}
    assert [t["y"] for t in spec["data"]] == [[4.0, 8.0, 2.0]] * rows
