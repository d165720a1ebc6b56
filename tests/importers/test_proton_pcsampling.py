"""Proton's PC sampling on the real profile recorded on an H200 (sample_traces/source_lines/proton_h200, issue 45):
every source-line node below a kernel read back with the json module and compared with the import; the source
lines' ranking judged against the kernels' own `[case: limiter]` / `[case: fixed]` comments and the CUDA-event
timings recorded before the profile (timings.csv), never against the tool."""

from __future__ import annotations

import csv
import gzip
import json
import re
from pathlib import Path

import polars as pl
import pytest

from tracekit.analysis.source_lines import KIND_ATOMICS, analyze_source_lines
from tracekit.errors import InputError
from tracekit.format import demangle
from tracekit.importers import detect_format, read_file

ROOT = Path(__file__).resolve().parents[2] / "sample_traces" / "source_lines"
PROFILE = ROOT / "proton_h200" / "proton_pcsampling.hatchet.gz"
SOURCE = ROOT / "proton_src" / "proton_cases.py"
LINE_NODE = re.compile(r"^(.*):(\d+)@(.*)$")


def document() -> list:
    return json.loads(gzip.decompress(PROFILE.read_bytes()))


def kernels(node: dict) -> list[dict]:
    if "device_id" in node["metrics"]:
        return [node]
    return [found for child in node.get("children", []) for found in kernels(child)]


def kernel_node(name: str) -> dict:
    [found] = [k for k in kernels(document()[0]) if k["frame"]["name"] == name]
    return found


def marker(case: str, role: str) -> int:
    """The line of proton_cases.py that carries `[case: role]`."""
    lines = SOURCE.read_text().splitlines()
    [number] = [n for n, text in enumerate(lines, start=1) if f"[{case}: {role}]" in text]
    return number


def measured_gain(case: str) -> float:
    rows = {
        r["variant"]: float(r["median_ns"])
        for r in csv.DictReader((ROOT / "proton_h200" / "timings.csv").read_text().splitlines())
        if r["case"] == case
    }
    return (rows["before"] - rows["after"]) / rows["before"]


def lines_of(parsed, kernel: str):
    [key] = parsed.launches.filter(pl.col("kernel_name") == kernel)["launch_key"].to_list()
    duration = parsed.launches.filter(pl.col("launch_key") == key)["duration_ns"][0]
    result = analyze_source_lines(parsed.source_samples.filter(pl.col("launch_key") == key), duration)
    assert result is not None
    return result


def test_every_line_node_is_one_row_with_its_samples_and_stalls() -> None:
    assert detect_format(PROFILE) == "proton-hatchet"
    parsed = read_file(PROFILE)
    nodes = kernels(document()[0])
    assert parsed.launches["kernel_name"].to_list() == [demangle(k["frame"]["name"]) for k in nodes]
    for key, node in enumerate(nodes):
        launch = parsed.launches.filter(pl.col("launch_key") == key).row(0, named=True)
        metrics = node["metrics"]
        assert launch["duration_ns"] == metrics["time (ns)"] / metrics["count"]
        rows = parsed.source_samples.filter(pl.col("launch_key") == key).to_dicts()
        lines = [c for c in node.get("children", []) if "num_samples" in c["metrics"]]
        expected = ([metrics] if metrics.get("num_samples") else []) + [c["metrics"] for c in lines]
        assert len(rows) == len(expected)
        for row, values in zip(rows, expected, strict=True):
            # Proton counts a not-issued sample twice in num_samples, once in num_stalled_samples (its module says why)
            assert row["samples"] == values["num_stalled_samples"]
            stalled = {k.removeprefix("stalled_").lower(): v for k, v in values.items() if k.startswith("stalled_")}
            assert sum(stalled.values()) == values["num_stalled_samples"] <= values["num_samples"]
            stalls = json.loads(row["stall_samples"])
            assert sum(stalls.values()) == row["samples"]
            renamed = {"no_instruction": "no_instructions"}
            assert stalls == {renamed.get(k, k): v for k, v in stalled.items() if v}
        for row, child in zip(rows[-len(lines) :] if lines else [], lines, strict=True):
            file, line, _ = LINE_NODE.match(child["frame"]["name"]).groups()
            assert (row["file"], row["line"]) == (file, int(line))  # the path as recorded on the device
            assert row["pc_offset"] is None and row["sass"] is None and row["operation"] is None
    assert parsed.source_files.height == 0  # Proton embeds no source text


def test_the_atomic_add_line_holds_its_samples() -> None:
    parsed = read_file(PROFILE)
    line = marker("atomic_histogram", "limiter")
    [node] = [
        c
        for c in kernel_node("atomic_histogram")["children"]
        if c["frame"]["name"].endswith(f":{line}@atomic_histogram")
    ]
    [key] = parsed.launches.filter(pl.col("kernel_name") == "atomic_histogram")["launch_key"].to_list()
    row = parsed.source_samples.filter((pl.col("launch_key") == key) & (pl.col("line") == line)).row(0, named=True)
    assert row["samples"] == node["metrics"]["num_stalled_samples"]
    stalls = json.loads(row["stall_samples"])
    assert stalls["long_scoreboard"] == node["metrics"]["stalled_long_scoreboard"]  # ncu's name for the reason
    assert stalls["membar"] == node["metrics"]["stalled_membar"]


def test_the_limiter_line_ranks_first_as_atomics_contention_with_the_measured_gain() -> None:
    parsed = read_file(PROFILE)
    result = lines_of(parsed, "atomic_histogram")
    top = result.lines[0]
    node = next(
        c
        for c in kernel_node("atomic_histogram")["children"]
        if c["frame"]["name"].split("@")[0].endswith(f":{top.line}")
    )
    assert top.line == marker("atomic_histogram", "limiter")
    assert top.kind == KIND_ATOMICS
    total = sum(c["metrics"]["num_stalled_samples"] for c in kernel_node("atomic_histogram")["children"])
    assert top.samples == node["metrics"]["num_stalled_samples"]
    assert top.samples_share == pytest.approx(top.samples / total)
    shares = {s.reason: s.samples / top.samples for s in top.stalls}
    assert shares["membar"] == pytest.approx(node["metrics"]["stalled_membar"] / top.samples)
    assert shares["long_scoreboard"] == pytest.approx(node["metrics"]["stalled_long_scoreboard"] / top.samples)
    gain = measured_gain("atomic_histogram")
    assert result.fix is not None and result.fix.line == top.line
    assert abs(result.fix.saved_share - gain) <= 0.25 * gain
    assert result.fix.saved_share_low <= gain <= result.fix.saved_share_high


def test_once_fixed_the_line_no_longer_ranks_first() -> None:
    result = lines_of(read_file(PROFILE), "block_histogram")
    assert result.lines[0].line != marker("atomic_histogram", "fixed")


def test_the_strided_load_ranks_first_without_a_dependency_chain_claimed() -> None:
    """No sectors in PC sampling: the strided load ranks first by its samples, as memory latency, while the index
    arithmetic above it, stalled on short_scoreboard, is not called a dependency chain it cannot be shown to be."""
    result = lines_of(read_file(PROFILE), "strided_gather")
    assert result.lines[0].line == marker("strided_gather", "limiter")
    assert all(line.kind != "dependency chain" for line in result.lines)


def test_plain_proton_profiles_import_as_before_without_source_samples(real_export) -> None:
    for name, launches in (("proton_hatchet_tritonbench_kernels.hatchet", 18), ("hatchet_htyu_matmul.hatchet", 6)):
        parsed = read_file(real_export(name))
        assert parsed.launches.height == launches  # the manifests' kernel nodes
        assert parsed.source_samples.height == 0


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ({"num_samples": 3, "num_stalled_samples": "3"}, "num_stalled_samples is '3', not a sample count"),
        ({"num_samples": 3, "stalled_membar": -1}, "stalled_membar is '-1', not a sample count"),
        ({"num_samples": 3, "stalled_wait": 1.5}, "stalled_wait is '1.5', not a sample count"),
    ],
)
def test_a_bad_sample_count_is_refused_with_where_it_is(tmp_path: Path, metrics: dict, message: str) -> None:
    line = {"frame": {"name": "k.py:3@k", "type": "function"}, "metrics": metrics, "children": []}
    kernel = {"frame": {"name": "k"}, "metrics": {"count": 1, "time (ns)": 10, "device_id": "0"}, "children": [line]}
    root = {"frame": {"name": "ROOT"}, "metrics": {}, "children": [kernel]}
    path = tmp_path / "bad.hatchet"
    path.write_text(json.dumps([root, {"CUDA": {"0": {"arch": "90"}}}]))
    with pytest.raises(InputError) as raised:
        read_file(path)
    assert message in str(raised.value) and "ROOT > k" in str(raised.value)
