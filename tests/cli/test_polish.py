"""What a CUDA developer sees in the first minute, through the real CLI: `--version`, output with real numbers
in engineering units (snapshots of the H100 samples), kernel names (base by default, `--names full`, mangled
names demangled), `compare --json` and its exit codes, and `tracekit summary` against an independent SQL query
of a real Nsight Systems export."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tracekit import format as fmt
from tracekit.format import kernel_name

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces" / "h100"
T4 = "nsys_2025.3.1_T4_nsightful_power_iteration_baseline.sqlite"
SCIENTIFIC = re.compile(r"\d\.?\d*e[+-]\d")


def tracekit(*args: str, db: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return run_cli(*args, *(["--db", str(db)] if db else []), env=env)


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"[│┃]", line) if cell.strip()]


def test_version():
    done = tracekit("--version")
    assert done.returncode == 0
    from importlib.metadata import version

    assert done.stdout == f"tracekit {version('tracekit')}\n"


def test_analyze_snapshot_h100_vector_add(tmp_path):
    """The 8-warps-per-SM vector add: its trace and the raw page of its profiled launch. The header of each
    launch's summary, exactly; the numbers checked against the inputs beside it."""
    trace, raw = SAMPLES / "vector_add_08warps.csv.gz", SAMPLES / "samples.raw.csv"
    with gzip.open(trace, "rt") as handle:
        header = dict(line[2:].strip().split(": ", 1) for line in handle if line.startswith("# ") and ": " in line)
    assert (header["launch_duration_ns"], header["dynamic_smem_bytes"]) == ("269216", "232448")  # 269.2 µs, 227 KiB
    done = tracekit("analyze", str(trace), str(raw), db=tmp_path / "s.sqlite")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    exact = json.loads(tracekit("analyze", "launch:1", "--json", db=tmp_path / "s.sqlite").stdout)[0]
    reach = fmt.fraction(exact["ceilings"]["judged_by"]["of_achievable"])  # against the shipped DRAM ceiling
    traced = lines[: lines.index("  sweep: " + lines[8].removeprefix("  sweep: "))]
    assert traced == [
        "launch 1: vector_add",
        # the headline: the verdict in plain words (samples.raw.csv: dram__throughput 22.3% of peak)
        f"  Latency-bound: no unit near its limit (busiest: DRAM at 22.3% of its peak, {reach} of what this GPU "
        "reaches) - warps wait on latency",
        "  grid 2048 x 1 x 1, block 256 x 1 x 1, 22 registers/thread, 227 KiB shared memory/block, duration 269.2 µs",
        "  occupancy: theoretical 12.5% (limited by shared memory), achieved 12.1%, 15.52 waves per SM",
        "  counters: same kernel key, and the durations agree: 261,056 ns here vs 256,800 ns profiled (1.02x, "
        "within 3x)",
        "  warps: 16,384 warps on 132 SMs; latency mean 15.59 µs, p99 16.77 µs; 7.412 warps/SM in flight; "
        "throughput 0.4755 warps/µs per SM",
        "  Little's law (steady state): occupancy 7.64 warps/SM vs latency x throughput 7.443 (-2.58%)",
        "  tail: 15.39 µs (5.9% of the launch)",
    ]
    profiled = lines.index("launch 2: vector_add")
    # samples.raw.csv: gpu__time_duration.sum 256.8 us, sm__warps_active 12.114995 %, 15.52 waves
    assert lines[profiled + 2 : profiled + 5] == [
        "  grid 2048 x 1 x 1, block 256 x 1 x 1, 22 registers/thread, 227 KiB shared memory/block, duration 256.8 µs",
        "  occupancy: theoretical 12.5% (limited by shared memory), achieved 12.1%, 15.52 waves per SM",
        "  counters: the launch's own counters",
    ]
    assert not SCIENTIFIC.search(done.stdout), "no scientific notation for a user"
    assert exact["duration_ns"] == 269216  # exact values stay in --json


def test_import_and_show_snapshot(tmp_path):
    db = tmp_path / "s.sqlite"
    trace = SAMPLES / "reduce_neighbored.csv.gz"
    done = tracekit("import", str(trace), db=db)
    assert done.stdout == f"imported {trace} as import 1: 1 launch, 16,384 warps\n"  # not "1 launches"
    raw = tracekit("import", str(SAMPLES / "samples.raw.csv"), db=db)
    assert raw.stdout.endswith("as import 2: 14 launches, 0 warps\n")
    shown = tracekit("show", "2", db=db)
    assert shown.returncode == 0, shown.stderr
    rows = [cells(line) for line in shown.stdout.splitlines() if line.startswith("│")]
    assert rows[0] == ["2", "vector_add", "2048x1x1", "256x1x1", "22", "256.8 µs", "0"]
    assert "SM clock: 1.98 GHz" in shown.stdout and "SMs: 132" in shown.stdout
    full = tracekit("show", "2", "--names", "full", db=db)
    assert cells(next(line for line in full.stdout.splitlines() if line.startswith("│")))[1] == (
        "vector_add(const float *, const float *, float *, int, WarpRecord *)"
    )


def test_mangled_names_are_demangled(tmp_path):
    """A trace whose kernel line is the mangled symbol: base name by default, the signature with --names full,
    as the system's c++filt (binutils) demangles it."""
    mangled = "_Z10vector_addPKfS0_PfiP10WarpRecord"
    with gzip.open(SAMPLES / "vector_add_08warps.csv.gz", "rt") as handle:
        text = handle.read().replace("# kernel: vector_add\n", f"# kernel: {mangled}\n", 1)
    path = tmp_path / "mangled.csv"
    path.write_text(text)
    db = tmp_path / "s.sqlite"
    base = tracekit("analyze", str(path), db=db)
    assert base.returncode == 0, base.stderr
    assert base.stdout.splitlines()[0] == "launch 1: vector_add"
    full = tracekit("analyze", str(path), "--names", "full", db=db)
    signature = "vector_add(float const*, float const*, float*, int, WarpRecord*)"
    assert full.stdout.splitlines()[0] == f"launch 1: {signature}"
    if shutil.which("c++filt"):
        assert subprocess.run(["c++filt", mangled], capture_output=True, text=True).stdout.strip() == signature
    assert json.loads(tracekit("analyze", "1", "--json", db=db).stdout)[0]["kernel"]["name"] == mangled


# ---- compare --------------------------------------------------------------------------------------------------------


@pytest.fixture
def h100_pair(tmp_path):
    """The 8- and 64-warps-per-SM vector add traces: same kernel key but dynamic shared memory (the occupancy
    knob), so matched only when named."""
    db = tmp_path / "s.sqlite"
    return db, str(SAMPLES / "vector_add_08warps.csv.gz"), str(SAMPLES / "vector_add_64warps.csv.gz")


def test_compare_json_alias_and_dynamic_shared_memory_key(h100_pair):
    db, a, b = h100_pair
    unmatched = tracekit("compare", a, b, "--json", db=db)
    assert unmatched.returncode == 2
    assert "dynamic shared memory" in unmatched.stderr and "--kernel-a" in unmatched.stderr
    as_json = tracekit("compare", a, b, "--kernel-a", "vector_add", "--json", db=db)
    as_format = tracekit("compare", a, b, "--kernel-a", "vector_add", "--format", "json", db=db)
    assert as_json.returncode == as_format.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == json.loads(as_format.stdout)
    fields = {f["field"]: f for f in json.loads(as_json.stdout)["pairs"][0]["comparison"]["fields"]}
    # the trace headers' launch_duration_ns: 269,216 and 82,688 ns
    assert (fields["duration_ns"]["a"], fields["duration_ns"]["b"]) == (269216, 82688)
    clash = tracekit("compare", a, b, "--json", "--format", "md", db=db)
    assert clash.returncode == 2 and "--json and --format md disagree" in clash.stderr


def test_compare_gate_on_a_missing_metric_fails(h100_pair, tmp_path):
    """Stall cycles come from Nsight counters, which the traces alone do not have: the gate cannot pass."""
    db, a, b = h100_pair
    done = tracekit(
        "compare", a, b, "--kernel-a", "vector_add", "--fail-if", "latency_stall_cycles_per_issue>+5%", db=db
    )
    assert done.returncode == 1
    assert (
        "latency_stall_cycles_per_issue>+5%: FAILED: cannot be evaluated, latency_stall_cycles_per_issue is "
        "missing on both sides" in done.stdout
    )
    as_json = tracekit(
        "compare", a, b, "--kernel-a", "vector_add", "--json", "--fail-if", "latency_stall_cycles_per_issue>+5%", db=db
    )
    assert as_json.returncode == 1
    gate = json.loads(as_json.stdout)["gates"][0]
    assert (gate["failed"], gate["evaluated"], gate["change"]) == (True, False, None)
    assert gate["message"] in done.stdout  # one wording: the JSON's message is the text's line
    passing = tracekit("compare", a, b, "--kernel-a", "vector_add", "--fail-if", "duration_ns>+5%", db=db)
    assert passing.returncode == 0, passing.stdout  # 64 warps per SM run much faster than 8
    # 82,688 / 269,216 - 1 = -69.29%
    assert "duration_ns>+5%: passed: duration changed by -69.3% (269.2 µs -> 82.69 µs)" in passing.stdout


def test_compare_exact_name_wins_over_a_part_of_a_name(tmp_path):
    """`--kernel-a reduceNeighbored` with reduceNeighboredLess stored beside it: the exact name is the kernel."""
    db = tmp_path / "s.sqlite"
    with gzip.open(SAMPLES / "reduce_neighbored.csv.gz", "rt") as handle:
        text = handle.read()
    less = tmp_path / "less.csv"
    less.write_text(text.replace("# kernel: reduceNeighbored\n", "# kernel: reduceNeighboredLess\n", 1))
    assert tracekit("import", str(SAMPLES / "reduce_neighbored.csv.gz"), str(less), db=db).returncode == 0
    done = tracekit("compare", "1", "2", "--kernel-a", "reduceNeighbored", "--kernel-b", "reduceNeighboredLess", db=db)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "A: reduceNeighbored (launch 1) against B: reduceNeighboredLess (launch 2)"


# ---- tracekit summary against SQL -----------------------------------------------------------------------------------


def _sql_summary(path: Path, name_column: str) -> dict[str, tuple[int, int, float, int, int, float]]:
    """name -> (count, total, mean, min, max, median) of kernel durations, grouped by a StringIds column."""
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True) as connection:
        rows = connection.execute(
            f"SELECT s.value, k.[end] - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
            f"JOIN StringIds AS s ON s.id = k.{name_column}"
        ).fetchall()
    groups: dict[str, list[int]] = {}
    for name, duration in rows:
        groups.setdefault(name, []).append(duration)
    return {name: (len(v), sum(v), sum(v) / len(v), min(v), max(v), statistics.median(v)) for name, v in groups.items()}


@pytest.mark.parametrize(("names", "column"), [("base", "shortName"), ("full", "demangledName")])
def test_summary_against_sql(real_export, tmp_path, names, column):
    """Kernels grouped by nsys's own shortName (the base name) or demangledName, and copies by kind, as SQL over
    the export's tables gives them."""
    path = real_export(T4)
    done = tracekit("summary", str(path), "--names", names, "--json", db=tmp_path / "s.sqlite")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)[0]
    expected = _sql_summary(path, column)
    got = {row["name"]: row for row in summary["kernels"]}
    assert set(got) == set(expected)
    total = sum(v[1] for v in expected.values())
    assert summary["kernel_ns"] == total
    for name, (count, sum_ns, mean, low, high, median) in expected.items():
        row = got[name]
        assert (row["count"], row["total_ns"], row["min_ns"], row["max_ns"]) == (count, sum_ns, low, high)
        assert row["mean_ns"] == pytest.approx(mean) and row["median_ns"] == pytest.approx(median)
        assert row["share"] == pytest.approx(sum_ns / total)
    assert [row["total_ns"] for row in summary["kernels"]] == sorted((v[1] for v in expected.values()), reverse=True)
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True) as connection:
        copies = connection.execute(
            "SELECT e.name, COUNT(*), SUM(m.[end] - m.start), SUM(m.bytes), MIN(m.[end] - m.start), "
            "MAX(m.[end] - m.start) FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m "
            "JOIN ENUM_CUDA_MEMCPY_OPER AS e ON e.id = m.copyKind GROUP BY e.name"
        ).fetchall()
    assert [c[:2] for c in copies] == [("CUDA_MEMCPY_KIND_DTOH", 89)]
    assert copies[0][2] == summary["memcpy_ns"]
    (row,) = summary["memcpys"]
    assert (row["name"], row["count"], row["total_ns"], row["total_bytes"], row["min_ns"], row["max_ns"]) == (
        "DtoH",
        *copies[0][1:],
    )


def test_summary_text(real_export, tmp_path):
    path = real_export(T4)
    done = tracekit("summary", str(path), db=tmp_path / "s.sqlite")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        f"import 1: {T4} (Tesla T4): kernels 1.132 s in 3,689 launches, memory copies 322 µs in 89 copies"
    )
    first = cells(next(line for line in lines if "gemv2T_kernel_val" in line))
    assert first == [
        "95%",
        "1.075 s",
        "432",
        "2.488 ms",
        "2.484 ms",
        "2.404 ms",
        "2.592 ms",
        "33.11 µs",
        "gemv2T_kernel_val",
    ]
    assert not SCIENTIFIC.search(done.stdout)
    refused = tracekit("summary", str(SAMPLES / "reduce_neighbored.csv.gz"), db=tmp_path / "s.sqlite")
    assert refused.returncode == 2
    assert "import 2 is warp-trace; the GPU time summary needs an Nsight Systems export" in refused.stderr


def test_every_kernel_base_name_is_nsys_short_name(real_export):
    """Our base name of each demangled name is the base name nsys itself stored (shortName), on every real export
    that has both."""
    checked = 0
    for name in sorted(os.listdir(real_export(T4).parent)):
        if not (name.startswith("nsys_") and name.endswith(".sqlite")):
            continue
        uri = f"{(real_export(T4).parent / name).resolve().as_uri()}?mode=ro&immutable=1"
        with sqlite3.connect(uri, uri=True) as connection:
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
            if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
                continue
            columns = {row[1] for row in connection.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
            if "shortName" not in columns:
                continue
            for full, short in connection.execute(
                "SELECT DISTINCT (SELECT value FROM StringIds WHERE id = k.demangledName), "
                "(SELECT value FROM StringIds WHERE id = k.shortName) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k"
            ):
                assert kernel_name(full) == short, (name, full)
                checked += 1
    assert checked >= 30


def test_no_doubled_pipe_in_unit_labels(real_export, tmp_path):
    """Turing's `shared` pipe (fp16 + tensor) was labelled "shared pipe pipe"; on the RTX 2080 Ti report every
    pipe's label names it once."""
    pytest.importorskip("ncu_report")
    path = real_export("ncu_rep_RTX2080Ti_sgemm_tanvisharma.ncu-rep")
    done = tracekit("analyze", str(path), "--json", db=tmp_path / "s.sqlite")
    assert done.returncode == 0, done.stderr
    labels = [unit["label"] for unit in json.loads(done.stdout)[0]["classification"]["utilization"]]
    assert "shared pipe" in labels and "fma pipe" in labels
    assert not [label for label in labels if "pipe pipe" in label]
    assert "pipe pipe" not in tracekit("analyze", "1", db=tmp_path / "s.sqlite").stdout


def _readme_block(after: str) -> list[str]:
    """The lines of the first ``` block after the README line that contains `after`."""
    text = (REPO / "README.md").read_text()
    start = text.index("```", text.index(after))
    body = text[text.index("\n", start) + 1 : text.index("```", start + 3)]
    return [line for line in body.splitlines() if line and line != "..." and not line.endswith("...")]


def test_readme_shows_real_output(tmp_path):
    """Every line of the README's analyze, summary and compare examples is a line the CLI prints for them."""
    pytest.importorskip("ncu_report")
    db = tmp_path / "s.sqlite"
    traces = sorted(str(p) for p in SAMPLES.glob("vector_add_*.csv.gz"))
    env = {**os.environ, "COLUMNS": "120"}
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "tracekit.cli.main", *args, "--db", str(db)], capture_output=True, text=True, env=env
    ).stdout.splitlines()
    analyzed = run("analyze", *traces, str(SAMPLES / "samples.ncu-rep.gz"))
    for line in _readme_block("pairs each trace with its own profiled launch"):
        assert line in analyzed, line
    summary = run("summary", str(SAMPLES / "samples.sqlite"))
    for line in _readme_block("tracekit summary sample_traces/h100/samples.sqlite"):
        assert line in summary, line
    env["COLUMNS"] = "140"
    compared = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "compare", traces[0], traces[3], "--kernel-a", "vector_add"]
        + ["--fail-if", "duration_ns>+5%", "--db", str(tmp_path / "c.sqlite")],
        capture_output=True,
        text=True,
        env=env,
    ).stdout.splitlines()
    for line in _readme_block("On the H100 samples (`tracekit compare"):
        assert line in compared, line
