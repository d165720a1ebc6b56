"""Figure-ready aggregates: the occupancy curve integrates to the warp-ns, the histogram counts every warp."""

from __future__ import annotations

import polars as pl
import pytest

from tracekit.analysis.aggregates import latency_histogram, occupancy_over_time


def warps() -> pl.DataFrame:
    # SM 0: warps [0, 100) and [0, 50); SM 1: [50, 100). Total 200 warp-ns over 100 ns on 4 SMs.
    return pl.DataFrame(
        {
            "sm_id": [0, 0, 1],
            "block_id": [0, 0, 1],
            "warp_in_block": [0, 1, 0],
            "start_ns": [1000, 1000, 1050],
            "end_ns": [1100, 1050, 1100],
        }
    )


def test_occupancy_over_time_counts_idle_sms() -> None:
    curve = occupancy_over_time(warps(), sm_count=4, bins=2)
    assert curve["bin_start_ns"].to_list() == [0, 50]
    # First half: 2 warps on SM 0 over 4 SMs = 0.5; second half: one on SM 0, one on SM 1 = 0.5.
    assert curve["mean_active_warps_per_sm"].to_list() == pytest.approx([0.5, 0.5])
    warp_ns = ((curve["bin_end_ns"] - curve["bin_start_ns"]) * curve["mean_active_warps_per_sm"]).sum() * 4
    assert warp_ns == pytest.approx(200)


def test_latency_histogram() -> None:
    histogram = latency_histogram(warps(), bins=2)
    # Latencies 100, 50, 50: bins [50, 75) and [75, 100], the longest warp in the last bin.
    assert histogram["latency_lo_ns"].to_list() == [50.0, 75.0]
    assert histogram["warps"].to_list() == [2, 1]
    assert latency_histogram(warps().head(1), bins=3)["warps"].sum() == 1
