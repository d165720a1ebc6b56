"""Region readers against an independent reading of each file (json + plain Python), and the writers' traps.

The two real B200 traces of gau-nernst's profiler live in ../shared/region_examples/ (see its README): NUM_WARPS
is 4 in v5 and 6 in v6, and tid = sm + blockIdx * NUM_WARPS + warp with ns in the µs fields.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import REGION_EXAMPLES as EXAMPLES
from tests.helpers import skip_or_fail
from tracekit.errors import InputError
from tracekit.importers import detect_format, read_file

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces" / "regions"
WARPS_PER_BLOCK = {5: 4, 6: 6}


def example(version: int) -> Path:
    path = EXAMPLES / f"gaunernst_matmul_sm100_trace_v{version}.json.gz"
    if not path.exists():
        skip_or_fail(f"{path} is absent (the shared region examples live beside the checkout)")
    return path


def plain_events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as handle:
        return json.load(handle)["traceEvents"]


@pytest.mark.parametrize("version", [5, 6])
def test_gaunernst_regions_match_a_plain_reading(version):
    path = example(version)
    events = plain_events(path)
    per_block = WARPS_PER_BLOCK[version]
    parsed = read_file(path, column_map={"warps_per_block": str(per_block)})
    assert detect_format(path) == "chrome-regions"
    regions = parsed.regions
    assert regions.height == len(events)
    assert Counter(regions["region"].to_list()) == Counter(e["name"] for e in events)
    expected = sorted(
        (
            e["pid"],
            (e["tid"] - e["pid"]) // per_block,
            (e["tid"] - e["pid"]) % per_block,
            e["name"],
            e["ts"],
            e["ts"] + e["dur"],
        )
        for e in events
    )
    got = sorted(regions.select("sm_id", "block_id", "warp_in_block", "region", "start_ns", "end_ns").iter_rows())
    assert got == expected
    assert regions["start_cycles"].null_count() == regions.height  # ns only: nothing invented
    # Duration per region name, summed, as the file says.
    totals = Counter()
    for e in events:
        totals[e["name"]] += e["dur"]
    by_region = regions.group_by("region").agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("d"))
    assert dict(by_region.iter_rows()) == dict(totals)


@pytest.mark.parametrize("version", [5, 6])
def test_gaunernst_warps_per_block_inferred_and_warps_derived(version):
    path = example(version)
    events = plain_events(path)
    parsed = read_file(path)
    per_block = WARPS_PER_BLOCK[version]
    assert any(f"inferred {per_block}" in w for w in parsed.warnings)
    assert any("read as ns" in w for w in parsed.warnings)
    # One derived warp record per (block, warp), spanning its first start and last end.
    spans: dict[tuple[int, int], list[int]] = {}
    for e in events:
        row = e["tid"] - e["pid"]
        key = (row // per_block, row % per_block)
        lo, hi = spans.get(key, [e["ts"], e["ts"] + e["dur"]])
        spans[key] = [min(lo, e["ts"]), max(hi, e["ts"] + e["dur"])]
    warps = parsed.warps
    assert warps.height == len(spans)
    got = {(b, w): [s, t] for b, w, s, t in warps.select("block_id", "warp_in_block", "start_ns", "end_ns").iter_rows()}
    assert got == spans
    launch = parsed.launches.row(0, named=True)
    assert launch["duration_ns"] == max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events)


def test_gaunernst_time_unit_can_be_forced(tmp_path):
    path = example(6)
    parsed = read_file(path, column_map={"warps_per_block": "6", "time_unit": "us"})
    first = plain_events(path)[0]
    row = parsed.regions.filter((pl.col("sm_id") == first["pid"]) & (pl.col("start_ns") == first["ts"] * 1000))
    assert row.height >= 1 and int(row["end_ns"][0] - row["start_ns"][0]) == first["dur"] * 1000


def _proton_event(name, kernel, sm, cta, warp, line, ts_cycles, dur_cycles, suffix=""):
    """An event as StreamChromeTraceWriter writes it: float32 cycles / 1000 in ts and dur."""
    import struct

    def f32(x):
        return struct.unpack("f", struct.pack("f", float(x)))[0]

    return {
        "cname": "good",
        "name": name,
        "cat": kernel,
        "ph": "X",
        "pid": f"{kernel} Core{sm} CTA{cta}{suffix}",
        "tid": f"warp {warp} (line {line})",
        "ts": f32(f32(ts_cycles) / 1000.0),
        "dur": f32(f32(dur_cycles) / 1000.0),
        "args": {"Finalization Time (ns)": 1234, "Frequency (MHz)": 1000.0, "call_stack": []},
    }


def test_proton_writer_layout(tmp_path):
    events = [
        _proton_event("outer", "matmul_kernel", 7, 3, 2, 0, 1000, 5000),
        _proton_event("inner", "matmul_kernel", 7, 3, 2, 1, 1500, 1234),
        _proton_event("inner", "matmul_kernel", 7, 3, 2, 1, 3001, 999),
        _proton_event("outer", "matmul_kernel", 9, 4, 0, 0, 777, 4321),
        {
            "name": "async",
            "cat": "flow",
            "ph": "X",
            "ts": 1.0,
            "dur": 0,
            "pid": "matmul_kernel Core7 CTA3",
            "tid": "warp 2 (line 0)",
            "bind_id": 1,
            "flow_out": True,
        },
    ]
    path = tmp_path / "trace.chrome_trace"
    path.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}))
    assert detect_format(path) == "proton-chrome"
    parsed = read_file(path)
    regions = parsed.regions.sort(["sm_id", "start_cycles"])
    assert regions.height == 4  # the flow endpoint is not a region
    assert regions["start_cycles"].to_list() == [1000, 1500, 3001, 777]
    assert (regions["end_cycles"] - regions["start_cycles"]).to_list() == [5000, 1234, 999, 4321]
    assert regions["depth"].to_list() == [0, 1, 1, 0]  # the writer's "line" is not the depth
    assert regions["warp_in_block"].to_list() == [2, 2, 2, 0]
    assert regions["block_id"].to_list() == [3, 3, 3, 4]
    assert regions["start_ns"].null_count() == 4  # cycles stay cycles without a clock
    assert parsed.warps.height == 0 and any("--clock-hz" in w for w in parsed.warnings)
    assert parsed.launches["kernel_name"].to_list() == ["matmul_kernel"]
    clocked = read_file(path, clock_hz=2e9)
    first = clocked.regions.sort(["sm_id", "start_cycles"]).row(0, named=True)
    assert (first["start_ns"], first["end_ns"]) == (500, 3000)
    assert clocked.warps.height == 2 and clocked.device.sm_clock_hz == 2e9


def test_proton_old_suffix_is_read(tmp_path):
    event = _proton_event("load", "k", 1, 0, 0, 0, 2048, 4096, suffix=" [measure in clock cycle (assume 1GHz)]")
    del event["args"]
    path = tmp_path / "old.chrome_trace"
    path.write_text(json.dumps({"traceEvents": [event]}))
    regions = read_file(path).regions
    assert regions.select("sm_id", "block_id", "start_cycles", "end_cycles").row(0) == (1, 0, 2048, 6144)


def test_real_proton_sample_matches_plain_reading():
    path = SAMPLES / "proton_matmul.chrome_trace.gz"
    with gzip.open(path, "rt") as handle:
        events = json.load(handle)["traceEvents"]
    scopes = [e for e in events if e.get("ph") == "X" and "bind_id" not in e and e.get("cat") != "flow"]
    parsed = read_file(path)
    assert detect_format(path) == "proton-chrome" and parsed.format == "proton-chrome"
    regions = parsed.regions
    assert Counter(regions["region"].to_list()) == Counter(e["name"] for e in scopes)
    assert Counter(regions["region"].to_list()) == {"load": 4096, "dot": 4096, "mainloop": 256, "store": 256}
    expected = sorted(
        (
            int(e["pid"].split(" Core")[1].split(" CTA")[0]),
            int(e["pid"].split(" CTA")[1]),
            int(e["tid"].split()[1]),
            e["name"],
            round(e["ts"] * 1000),
            round(e["ts"] * 1000) + round(e["dur"] * 1000),
        )
        for e in scopes
    )
    got = sorted(
        regions.select("sm_id", "block_id", "warp_in_block", "region", "start_cycles", "end_cycles").iter_rows()
    )
    assert got == expected
    # load and dot nest inside mainloop in every warp; store follows it.
    depth = dict(regions.group_by("region").agg(pl.col("depth").max()).iter_rows())
    assert depth == {"mainloop": 0, "load": 1, "dot": 1, "store": 0}
    assert parsed.launches["kernel_name"].to_list() == ["matmul_kernel"]


def test_real_proton_repeated_launches_are_split():
    """Four launches of one kernel in one Proton session (src/proton_repeat.py): one file, the same pid names.
    Each launch's shape, as the recording printed it, gives its CTAs and each warp's scope count."""
    import re

    log = (SAMPLES / "run_repeat.txt").read_text()
    shapes = [
        (int(grid), int(steps), int(expected))
        for grid, steps, expected in re.findall(r"grid \((\d+),\), 4 warps, (\d+) K steps, expected scopes (\d+)", log)
    ]
    assert len(shapes) == 4
    path = SAMPLES / "proton_repeat.chrome_trace.gz"
    with gzip.open(path, "rt") as handle:
        events = json.load(handle)["traceEvents"]
    assert {e["pid"].split(" Core")[0] for e in events} == {"matmul_kernel"}  # nothing in the names tells them apart
    parsed = read_file(path)
    assert parsed.launches["kernel_name"].to_list() == ["matmul_kernel"] * 4
    keys = parsed.launches["launch_key"].to_list()
    regions = parsed.regions
    assert regions.height == len(events) == sum(expected for _, _, expected in shapes)
    for key, (grid, steps, expected) in zip(keys, shapes, strict=True):
        mine = regions.filter(pl.col("launch_key") == key)
        assert mine.height == expected
        assert sorted(mine["block_id"].unique().to_list()) == list(range(grid))
        per_warp = mine.group_by("block_id", "warp_in_block").agg(
            pl.len().alias("scopes"), (pl.col("region") == "load").sum().alias("loads")
        )
        assert per_warp.height == grid * 4
        assert set(per_warp["scopes"].to_list()) == {2 * steps + 2} and set(per_warp["loads"].to_list()) == {steps}
        # Every CTA ran on one SM within its launch.
        assert mine.group_by("block_id").agg(pl.col("sm_id").n_unique())["sm_id"].max() == 1
    # Each launch got its own whole-warp records once the clock is known.
    clocked = read_file(path, clock_hz=1.98e9)
    assert clocked.warps.group_by("launch_key").len().sort("launch_key")["len"].to_list() == [
        grid * 4 for grid, _, _ in shapes
    ]


def test_proton_launch_split_rules(tmp_path):
    """A launch restarts where the writer's (SM, CTA, warp) order goes down or a warp comes back; other kernels
    keep their own launches."""
    events = [
        _proton_event("s", "k", 3, 0, 0, 0, 10, 5),  # launch A of k: one CTA of one warp, on SM 3
        _proton_event("s", "k", 3, 0, 0, 0, 20, 5),
        _proton_event("s", "k", 5, 0, 0, 0, 10, 5),  # the same CTA/warp on a later SM: launch B of k
        _proton_event("s", "other", 0, 0, 0, 0, 10, 5),  # another kernel: its own launch
        _proton_event("s", "k", 6, 1, 0, 0, 10, 5),  # still B (order goes up, a new warp)
        _proton_event("s", "k", 6, 1, 1, 0, 10, 5),
        _proton_event("s", "k", 2, 0, 0, 0, 10, 5),  # order goes down: launch C of k
        _proton_event("s", "k", 2, 0, 1, 0, 10, 5),
        _proton_event("s", "k", 2, 0, 0, 0, 30, 5),  # warp 0 of CTA 0 comes back after warp 1: launch D
    ]
    path = tmp_path / "repeat.chrome_trace"
    path.write_text(json.dumps({"traceEvents": events}))
    parsed = read_file(path)
    names = dict(parsed.launches.select("launch_key", "kernel_name").iter_rows())
    assert sorted(names.values()) == ["k", "k", "k", "k", "other"]
    by_launch = parsed.regions.group_by("launch_key").agg(pl.len(), pl.col("sm_id").unique().sort())
    sizes = sorted((names[k], n, sms) for k, n, sms in by_launch.iter_rows())
    assert sizes == [("k", 1, [2]), ("k", 2, [2]), ("k", 2, [3]), ("k", 3, [5, 6]), ("other", 1, [0])]
    assert parsed.regions.height == len(events)


def test_real_v2_sample_matches_plain_reading():
    import csv

    path = SAMPLES / "ws_pipeline.v2.gz"
    with gzip.open(path, "rt") as handle:
        rows = list(csv.DictReader(line for line in handle if not line.startswith("#")))
    parsed = read_file(path)
    assert parsed.format == "region-trace"
    region_rows = [r for r in rows if r["region"]]
    warp_rows = [r for r in rows if not r["region"]]
    assert parsed.regions.height == len(region_rows) and parsed.warps.height == len(warp_rows) == 528 * 5
    assert Counter(parsed.regions["region"].to_list()) == Counter(r["region"] for r in region_rows)
    durations = Counter()
    for r in region_rows:
        durations[r["region"]] += int(r["end_ns"]) - int(r["start_ns"])
    by_region = parsed.regions.group_by("region").agg((pl.col("end_ns") - pl.col("start_ns")).sum())
    assert dict(by_region.iter_rows()) == dict(durations)
    # The producer (warp 0) runs load_tile and wait_empty, the consumers wait_full and compute, nested in mainloop.
    sets = parsed.regions.group_by("warp_in_block").agg(pl.col("region").unique().sort().str.join(","))
    assert dict(sets.iter_rows()) == {
        0: "load_tile,mainloop,setup,wait_empty",
        **{w: "compute,epilogue,mainloop,setup,wait_full" for w in range(1, 5)},
    }
    assert dict(parsed.regions.group_by("region").agg(pl.col("depth").max()).iter_rows())["compute"] == 1
    assert parsed.device.name == "NVIDIA H100 80GB HBM3" and parsed.device.sm_count == 132


def test_open_cuprof_array_form(tmp_path):
    events = [
        {
            "name": "load",
            "cat": "kernel",
            "ph": "X",
            "ts": 0.064,
            "dur": 1.5,
            "pid": 12,
            "tid": 1 * 32 + 5,
            "args": {"block": 1, "warp": 5, "smid": 12},
        },
        {
            "name": "mma",
            "cat": "kernel",
            "ph": "X",
            "ts": 1.6,
            "dur": 0.25,
            "pid": 12,
            "tid": 1 * 32 + 5,
            "args": {"block": 1, "warp": 5, "smid": 12},
        },
    ]
    path = tmp_path / "cuprof.json"
    path.write_text(json.dumps(events))
    parsed = read_file(path)
    rows = parsed.regions.select("sm_id", "block_id", "warp_in_block", "region", "start_ns", "end_ns").rows()
    assert rows == [(12, 1, 5, "load", 64, 1564), (12, 1, 5, "mma", 1600, 1850)]
    assert any("%warpid" in w for w in parsed.warnings)


def test_cuprof_begin_end_pairs_keep_one_lane(tmp_path):
    events = []
    for thread in (32, 33):  # two lanes of warp 1 recorded the same region
        for ph, ts in (("B", 1.0), ("E", 3.5)):
            events.append(
                {
                    "name": "compute",
                    "cat": "cuda",
                    "ph": ph,
                    "ts": ts + thread / 1000,
                    "pid": 4,
                    "tid": 2 * 1024 + thread,
                    "args": {"block": 2, "thread": thread, "warp": 7, "lane": thread % 32},
                }
            )
    path = tmp_path / "cuprof_be.json"
    path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}))
    parsed = read_file(path)
    assert parsed.regions.select("sm_id", "block_id", "warp_in_block", "start_ns", "end_ns").rows() == [
        (4, 2, 1, 1032, 3532)
    ]
    assert any("other lanes" in w for w in parsed.warnings)


def test_cute_dsl_exact_ns(tmp_path):
    events = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "GPU 0"}},
        {
            "name": "produce",
            "cat": "profile",
            "ph": "X",
            "ts": 0.0,
            "dur": 0.1,
            "pid": 0,
            "tid": 3,
            "args": {"tag_id": 0, "start_ns": 1_000_000_123, "dur_ns": 77, "unit_id": 3},
        },
    ]
    path = tmp_path / "cute.json"
    path.write_text(json.dumps({"traceEvents": events}))
    parsed = read_file(path)
    assert parsed.regions.select("block_id", "start_ns", "end_ns").row(0) == (3, 1_000_000_123, 1_000_000_200)
    assert parsed.regions["sm_id"].null_count() == 1
    assert parsed.warps.height == 0  # no SM: no warp record can be stored


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": "x", "tid": "y"}]}', "layout"),
        ('{"traceEvents": [{"ph": "X", "name": "a", "ts": "soon", "dur": 1, "pid": 1, "tid": 1}]}', "'ts' must be"),
        ('{"traceEvents": [{"ph": "M", "name": "a"}]}', "no complete"),
        ('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur', "not valid JSON"),
    ],
)
def test_bad_chrome_traces_say_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message) as info:
        read_file(path, fmt="chrome-regions")
    assert str(path) in str(info.value)


def test_v2_region_csv(tmp_path):
    text = """# tracekit-warp-trace v2
# kernel: ws
# sm_clock_hz: 1980000000
# grid: 2,1,1
# block: 64,1,1
launch,sm_id,block_id,warp_in_block,region,start_ns,end_ns,start_cycles,end_cycles
0,3,0,0,,1000,9000,10,90
0,3,0,0,mainloop,1100,8000,11,80
0,3,0,0,load,1200,2000,12,20
0,3,0,1,,1000,9500,10,95
0,3,0,1,compute,1300,3000,13,30
"""
    path = tmp_path / "ws.csv"
    path.write_text(text)
    assert detect_format(path) == "region-trace"
    parsed = read_file(path)
    assert parsed.regions.select("warp_in_block", "region", "depth", "start_ns").rows() == [
        (0, "mainloop", 0, 1100),
        (0, "load", 1, 1200),
        (1, "compute", 0, 1300),
    ]
    assert parsed.warps.select("warp_in_block", "start_ns", "end_ns").rows() == [(0, 1000, 9000), (1, 1000, 9500)]
    assert parsed.launches.select("kernel_name", "grid_x", "block_x").row(0) == ("ws", 2, 64)
