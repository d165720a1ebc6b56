"""Per-region analysis: a hand-computed example, and the real B200 traces against plain Python sums."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import REGION_EXAMPLES as EXAMPLES
from tests.helpers import skip_or_fail
from tracekit.analysis.regions import NO_REGION, analyze_regions, littles_law_in, region_intervals, region_occupancy
from tracekit.importers import read_file
from tracekit.parsed import REGION_SCHEMA, conform

# SM 0: block 0 warp 0 runs A [0,100) with B [10,40) and B [50,70) inside; block 0 warp 1 runs C [20,120).
# SM 1: block 1 warp 0 runs A [30,90) with B [40,60) inside.
HAND = [
    (0, 0, 0, "A", 0, 0, 100),
    (0, 0, 0, "B", 1, 10, 40),
    (0, 0, 0, "B", 1, 50, 70),
    (0, 0, 1, "C", 0, 20, 120),
    (1, 1, 0, "A", 0, 30, 90),
    (1, 1, 0, "B", 1, 40, 60),
]


def hand_regions(offset: int = 1_000_000) -> pl.DataFrame:
    frame = pl.DataFrame(
        [(0, sm, b, w, r, d, s + offset, e + offset) for sm, b, w, r, d, s, e in HAND],
        schema=["launch_key", "sm_id", "block_id", "warp_in_block", "region", "depth", "start_ns", "end_ns"],
        orient="row",
    )
    return conform(frame, REGION_SCHEMA)


def test_hand_example_statistics():
    result = analyze_regions(hand_regions(), sm_count=2)
    assert result.time_unit == "ns" and result.span == 120 and result.warp_count == 3
    a, b, c = result.region("A"), result.region("B"), result.region("C")
    assert (a.count, a.warps, a.inclusive_total, a.exclusive_total) == (2, 2, 160, 90)
    assert (b.count, b.warps, b.inclusive_total, b.exclusive_total) == (3, 2, 70, 70)
    assert (c.count, c.inclusive_total, c.exclusive_total) == (1, 100, 100)
    assert a.latency.mean == 80 and a.latency.min == 60 and a.latency.max == 100 and a.latency.std == 20
    assert b.latency.p50 == 20 and b.instances_per_warp == 1.5
    assert (a.min_depth, b.min_depth, b.max_depth) == (0, 1, 1)
    lifetimes = 100 + 100 + 60
    assert a.share_of_warp_time == pytest.approx(90 / lifetimes)
    assert b.share_of_warp_time == pytest.approx(70 / lifetimes)
    assert a.mean_share_in_own_warps == pytest.approx((50 / 100 + 40 / 60) / 2)
    assert a.throughput_per_sm == pytest.approx(2 / (120 * 2))
    assert a.peak_warps_in_region_per_sm == 1


def test_hand_example_littles_law_per_region():
    result = analyze_regions(hand_regions(), sm_count=2)
    for stats in result.regions:  # the whole launch: every instance whole, the law closes
        law = stats.littles_law
        assert law.mean_warps_in_region_per_sm == pytest.approx(stats.inclusive_total / (120 * 2))
        assert law.latency_x_throughput == pytest.approx(law.mean_warps_in_region_per_sm)
    intervals, _ = region_intervals(hand_regions())
    law = littles_law_in(intervals, "B", 2, 50, 100)
    # In [50,100): B [50,70) whole inside, B [40,60) carries 10 in -> 30 warp-ns over 50 ns x 2 SMs.
    assert law.mean_warps_in_region_per_sm == pytest.approx(0.3)
    assert (law.instances_started, law.mean_latency) == (1, 20)
    assert law.latency_x_throughput == pytest.approx(0.2)
    assert law.relative_error == pytest.approx(-1 / 3)


def test_hand_example_tail_and_roles():
    result = analyze_regions(hand_regions(), sm_count=2)
    tail = result.tail
    assert (tail.tail_start, tail.tail_end) == (90, 120)  # SM 1's last region ends at 90: idle for good
    # In [90, 120): warp 0 of block 0 is in A (no B there) for 10, warp 1 in C for 30; SM 1's warp has ended.
    assert tail.share_in_tail == pytest.approx({"A": 10 / 40, "B": 0.0, "C": 30 / 40, NO_REGION: 0.0})
    assert tail.dominant_region == "C" and tail.dominant_share == pytest.approx(0.75)
    assert tail.tail_fraction == pytest.approx(30 / 120)
    # Before it, [0, 90): A 90 - 50 (B inside) on SM 0 and 60 - 20 on SM 1, B 50 + 20, C 70; 220 warp-ns alive.
    assert tail.share_before_tail == pytest.approx({"A": 80 / 220, "B": 70 / 220, "C": 70 / 220, NO_REGION: 0.0})
    names = [role.name for role in result.roles]
    assert names == ["warp 0", "warp 1"]
    first = result.roles[0]
    assert first.warp_count == 2 and first.mean_warp_lifetime == 80
    by_region = {r.region: r for r in first.regions}
    assert by_region["A"].share_of_warp_time == pytest.approx(90 / 160)
    assert by_region["B"].instances_per_warp == 1.5 and by_region["B"].mean_latency == pytest.approx(70 / 3)


def test_hand_example_occupancy_over_time():
    occupancy = region_occupancy(hand_regions(), bins=4)
    a_sm0 = occupancy.filter((pl.col("region") == "A") & (pl.col("sm_id") == 0)).sort("bin")
    assert a_sm0["mean_warps"].to_list() == pytest.approx([1, 1, 1, 10 / 30])
    b_sm1 = occupancy.filter((pl.col("region") == "B") & (pl.col("sm_id") == 1)).sort("bin")
    assert b_sm1.select("bin", "mean_warps").rows() == [(1, pytest.approx(20 / 30))]


def test_cycles_stay_cycles():
    frame = hand_regions().with_columns(
        pl.col("start_ns").alias("start_cycles"),
        pl.col("end_ns").alias("end_cycles"),
        pl.lit(None, pl.Int64).alias("start_ns"),
        pl.lit(None, pl.Int64).alias("end_ns"),
    )
    result = analyze_regions(frame, sm_count=2)
    assert result.time_unit == "cycles" and "not converted" in result.time_note
    assert result.region("A").inclusive_total == 160


@pytest.fixture(scope="module")
def v6():
    path = EXAMPLES / "gaunernst_matmul_sm100_trace_v6.json.gz"
    if not path.exists():
        skip_or_fail(f"{path} is absent (the shared region examples live beside the checkout)")
    with gzip.open(path, "rt") as handle:
        events = json.load(handle)["traceEvents"]
    return events, read_file(path, column_map={"warps_per_block": "6"})


def test_real_trace_statistics_match_plain_python(v6):
    events, parsed = v6
    result = analyze_regions(parsed.regions, sm_count=148)
    durations = defaultdict(list)
    for e in events:
        durations[e["name"]].append(e["dur"])
    span = max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events)
    assert result.span == span
    for name, values in durations.items():
        stats = result.region(name)
        values.sort()
        assert stats.count == len(values)
        assert stats.inclusive_total == sum(values)
        assert stats.exclusive_total == sum(values)  # this writer never nests
        assert stats.latency.mean == pytest.approx(sum(values) / len(values))
        k = (len(values) - 1) * 0.9
        lo = int(k)
        p90 = values[lo] + (values[min(lo + 1, len(values) - 1)] - values[lo]) * (k - lo)
        assert stats.latency.p90 == pytest.approx(p90)
        assert stats.throughput_per_sm == pytest.approx(len(values) / (span * 148))
        assert stats.littles_law.relative_error == pytest.approx(0, abs=1e-9)
    # Warp roles of the warp-specialized kernel: TMA warp 0, MMA warp 1, epilogue warps 2-5.
    roles = {role.name: {r.region for r in role.regions} for role in result.roles}
    assert roles == {
        "warp 0": {"SETUP", "WAIT_MMA", "ISSUE_TMA"},
        "warp 1": {"SETUP", "WAIT_TMA", "ISSUE_MMA", "WAIT_EPILOGUE"},
        "warps 2-5": {"SETUP", "WAIT_MAINLOOP", "EPILOGUE"},
    }


def test_real_trace_littles_law_gap_in_a_sub_window(v6):
    """Over a sub-window the whole-instance check misses by exactly (spilled out - carried in) / (window x SMs)."""
    events, parsed = v6
    intervals, _ = region_intervals(parsed.regions)
    lo, hi = 20_000, 60_000
    for name in ("WAIT_MMA", "EPILOGUE", "WAIT_MAINLOOP"):
        law = littles_law_in(intervals, name, 148, lo, hi)
        carried = spilled = 0
        inside = 0
        for e in events:
            if e["name"] != name:
                continue
            s, t = e["ts"], e["ts"] + e["dur"]
            inside += max(0, min(t, hi) - max(s, lo))
            if s < lo < t:
                carried += min(t, hi) - lo
            if lo <= s < hi < t:
                spilled += t - hi
        window = (hi - lo) * 148
        assert law.mean_warps_in_region_per_sm == pytest.approx(inside / window)
        assert law.latency_x_throughput - law.mean_warps_in_region_per_sm == pytest.approx((spilled - carried) / window)


def test_real_warp_specialized_sample_exclusive_time_and_roles():
    """The H100 sample: mainloop's exclusive time by plain Python (minus the regions inside it, same warp)."""
    import csv

    path = Path(__file__).resolve().parents[2] / "sample_traces" / "regions" / "ws_pipeline.v2.gz"
    with gzip.open(path, "rt") as handle:
        rows = [r for r in csv.DictReader(x for x in handle if not x.startswith("#")) if r["region"]]
    by_warp = defaultdict(list)
    for r in rows:
        by_warp[(r["block_id"], r["warp_in_block"])].append((r["region"], int(r["start_ns"]), int(r["end_ns"])))
    exclusive = 0
    for regions in by_warp.values():
        for name, s, e in regions:
            if name == "mainloop":
                inside = sum(t - u for n, u, t in regions if n != "mainloop" and s <= u and t <= e)
                exclusive += e - s - inside
    result = analyze_regions(read_file(path).regions, sm_count=132)
    assert result.region("mainloop").exclusive_total == exclusive
    assert result.region("compute").exclusive_total == result.region("compute").inclusive_total
    for stats in result.regions:
        assert stats.littles_law.relative_error == pytest.approx(0, abs=1e-9)
    roles = {role.name: role for role in result.roles}
    assert set(roles) == {"warp 0", "warps 1-4"}
    producer = {r.region: r for r in roles["warp 0"].regions}
    consumer = {r.region: r for r in roles["warps 1-4"].regions}
    assert producer["load_tile"].instances_per_warp == 8 and consumer["compute"].instances_per_warp == 8
    assert producer["wait_empty"].instances_per_warp == 6  # no wait for the first two stages
    assert roles["warp 0"].warp_count == 528 and roles["warps 1-4"].warp_count == 528 * 4
