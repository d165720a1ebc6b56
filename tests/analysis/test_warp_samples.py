"""Per-warp analyses on the real H100 warp traces under sample_traces/h100/ (made by make_samples.sh).

Each check compares the module with a computation done here from the file's own columns (numpy), with the
figures sample_traces/README.md gives (computed there with polars when the samples were made), or with what the
sample's configuration implies (vector_add_NNwarps lets at most NN warps reside on an SM).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tracekit.analysis import latency, littles_law, tail, throughput, warp_occupancy
from tracekit.importers import read_file

pytestmark = pytest.mark.gpu_samples

SAMPLES = ["vector_add_08warps", "vector_add_64warps", "imbalanced_blocks"]


def load(sample_trace, name: str) -> tuple[pl.DataFrame, int]:
    """The first launch's warps, as Store.warps gives them, and the device's SM count from the trace header."""
    parsed = read_file(sample_trace(f"h100/{name}.csv.gz"))
    first = parsed.warps["launch_key"].min()
    warps = parsed.warps.filter(pl.col("launch_key") == first).drop("launch_key")
    sm_count = parsed.device.sm_count if parsed.device and parsed.device.sm_count else warps["sm_id"].n_unique()
    return warps, sm_count


def active_at(warps: pl.DataFrame, times: np.ndarray) -> np.ndarray:
    origin = warps["start_ns"].min()
    starts = np.sort((warps["start_ns"] - origin).to_numpy())
    ends = np.sort((warps["end_ns"] - origin).to_numpy())
    return np.searchsorted(starts, times, side="right") - np.searchsorted(ends, times, side="right")


@pytest.mark.parametrize("name", SAMPLES)
def test_littles_law_closes_over_the_launch(sample_trace, name):
    warps, sm_count = load(sample_trace, name)
    law = littles_law.check_littles_law(warps, "launch", sm_count=sm_count)
    assert abs(law.relative_error) < 1e-3
    assert law.warps_started == warps.height
    steady = littles_law.check_littles_law(warps, sm_count=sm_count)
    assert abs(steady.clipped_relative_error) < 1e-9


@pytest.mark.parametrize("name", SAMPLES)
def test_occupancy_latency_throughput_agree_with_numpy(sample_trace, name):
    warps, sm_count = load(sample_trace, name)
    latencies = (warps["end_ns"] - warps["start_ns"]).to_numpy()
    span = int(warps["end_ns"].max() - warps["start_ns"].min())
    times = (np.arange(400_000) + 0.5) * span / 400_000
    occupancy = warp_occupancy.mean_occupancy(warps, sm_count=sm_count)
    assert occupancy.mean_occupancy_warps_per_sm == pytest.approx(active_at(warps, times).mean() / sm_count, rel=1e-2)
    stats = latency.latency_stats(warps)
    assert stats.mean_latency_ns == pytest.approx(latencies.mean(), rel=1e-12)
    assert stats.p99_latency_ns == pytest.approx(np.percentile(latencies, 99), rel=1e-12)
    rate = throughput.warp_throughput(warps, sm_count=sm_count)
    assert rate.warps_completed == warps.height
    assert rate.throughput_warps_per_ns_per_sm == pytest.approx(warps.height / (span * sm_count))


# README table: span us, mean warp latency us, warps/SM (sum of warp durations / (span x 132)).
README_FIGURES = {
    "vector_add_08warps": (261.1, 15.59, 7.4),
    "vector_add_64warps": (74.5, 34.07, 56.8),
    "imbalanced_blocks": (86.9, 10.31, 14.7),
}


@pytest.mark.parametrize("name", SAMPLES)
def test_figures_match_the_samples_readme(sample_trace, name):
    warps, sm_count = load(sample_trace, name)
    span_us, latency_us, warps_per_sm = README_FIGURES[name]
    assert tail.measure_tail(warps, sm_count).span_ns / 1e3 == pytest.approx(span_us, abs=0.05)
    assert latency.latency_stats(warps).mean_latency_ns / 1e3 == pytest.approx(latency_us, abs=0.005)
    occupancy = warp_occupancy.mean_occupancy(warps, sm_count=sm_count)
    assert occupancy.mean_occupancy_warps_per_sm == pytest.approx(warps_per_sm, abs=0.05)


@pytest.mark.parametrize("warps_per_sm", [8, 64])
def test_vector_add_fills_every_sm_to_its_configured_occupancy(sample_trace, warps_per_sm):
    # The padding of shared memory lets exactly warps_per_sm warps reside; every SM reaches that, none exceeds it.
    warps, sm_count = load(sample_trace, f"vector_add_{warps_per_sm:02d}warps")
    occupancy = warp_occupancy.mean_occupancy(warps, sm_count=sm_count)
    assert occupancy.per_sm.height == sm_count == 132
    assert occupancy.per_sm["max_active_warps"].to_list() == [warps_per_sm] * sm_count
    assert occupancy.mean_occupancy_warps_per_sm < occupancy.mean_warps_per_active_sm <= warps_per_sm


def test_imbalanced_blocks_have_a_longer_tail_than_vector_add(sample_trace):
    balanced = tail.measure_tail(*load(sample_trace, "vector_add_64warps"))
    imbalanced = tail.measure_tail(*load(sample_trace, "imbalanced_blocks"))
    assert imbalanced.after_last_block_start_fraction > balanced.after_last_block_start_fraction
    # README: all but the 8 heavy blocks (on 7 SMs) have finished 30 us into the 86.9 us span, so some SM was
    # idle for good by then and the heavy blocks ran on alone for at least 56.9 us.
    assert imbalanced.first_sm_idle_ns < 30_000
    assert imbalanced.tail_fraction > 56.9 / 86.9
    assert imbalanced.sm_finish_std_ns / imbalanced.span_ns > balanced.sm_finish_std_ns / balanced.span_ns
