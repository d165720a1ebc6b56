"""The analysis JSON: every v1 field keeps its name, and docs/analysis-schema.md names exactly the fields emitted."""

from __future__ import annotations

import re
from pathlib import Path

from tracekit.api import analyze_stored
from tracekit.ingest import ingest
from tracekit.store import Store

DOC = Path(__file__).resolve().parents[2] / "docs" / "analysis-schema.md"
# Leaves whose values are objects keyed by data (reason names, every term of a check): documented as a whole.
OPAQUE = {
    "regions",
    "littles_law.detail",
    "stalls.by_reason",
    "occupancy.nsight_tail_estimate",
    "warps.trace_vs_counter",
    "littles_law.whole_launch",
    "occupancy.reported_by_nsight.limits_blocks_per_sm",
}
# Every field of tracekit.analysis/1, as the v1 engine emitted it (scripts and CI gates read these paths).
V1_FIELDS = [
    "schema",
    "launch_id",
    "source",
    "source.path",
    "source.format",
    "source.sha256",
    "source.import_id",
    "source.import_name",
    "kernel",
    "kernel.name",
    "kernel.mangled_name",
    "kernel.grid",
    "kernel.block",
    "kernel.registers_per_thread",
    "kernel.shared_mem_per_block_bytes",
    "kernel.static_shared_mem_per_block_bytes",
    "kernel.dynamic_shared_mem_per_block_bytes",
    "kernel.nvtx_path",
    "kernel.device",
    "kernel.device.name",
    "kernel.device.cc",
    "kernel.device.sm_count",
    "kernel.device.sm_clock_hz",
    "kernel.device.max_warps_per_sm",
    "counters_from",
    "counters_from.launch_id",
    "counters_from.import_id",
    "counters_from.import_name",
    "counters_from.kernel_name",
    "duration_ns",
    "occupancy",
    "occupancy.theoretical_warps_per_sm",
    "occupancy.theoretical_pct",
    "occupancy.limiter",
    "occupancy.limits_blocks_per_sm",
    "occupancy.active_blocks_per_sm",
    "occupancy.max_warps_per_sm",
    "occupancy.achieved_pct",
    "occupancy.achieved_warps_per_sm",
    "occupancy.waves_per_sm",
    "occupancy.nsight_tail_estimate",
    "occupancy.reported_by_nsight",
    "occupancy.reported_by_nsight.theoretical_pct",
    "occupancy.reported_by_nsight.limits_blocks_per_sm",
    "warps",
    "warps.count",
    "warps.sm_count",
    "warps.span_ns",
    "warps.mean_latency_ns",
    "warps.p50_latency_ns",
    "warps.p90_latency_ns",
    "warps.p99_latency_ns",
    "warps.max_latency_ns",
    "warps.mean_occupancy_warps_per_sm",
    "warps.mean_occupancy_per_active_sm_warps",
    "warps.occupancy_variance_over_time",
    "warps.occupancy_variance_across_sms",
    "warps.throughput_warps_per_ns_per_sm",
    "warps.throughput_warps_per_cycle_per_sm",
    "warps.trace_vs_counter",
    "littles_law",
    "littles_law.window_ns",
    "littles_law.window_kind",
    "littles_law.mean_occupancy",
    "littles_law.latency_x_throughput",
    "littles_law.relative_error",
    "littles_law.clipped_latency_x_throughput",
    "littles_law.clipped_relative_error",
    "littles_law.explanation",
    "littles_law.whole_launch",
    "littles_law.detail",
    "tail",
    "tail.tail_ns",
    "tail.tail_fraction",
    "tail.after_last_block_start_ns",
    "tail.after_last_block_start_fraction",
    "tail.span_ns",
    "tail.last_block_start_ns",
    "tail.first_sm_idle_ns",
    "tail.mean_occupancy_in_tail_warps_per_sm",
    "tail.mean_occupancy_before_tail_warps_per_sm",
    "tail.sm_count",
    "tail.sms_with_warps",
    "tail.idle_sms",
    "tail.sm_finish_min_ns",
    "tail.sm_finish_max_ns",
    "tail.sm_finish_mean_ns",
    "tail.sm_finish_std_ns",
    "blocks",
    "blocks.blocks",
    "blocks.replacements",
    "blocks.gap_mean_ns",
    "blocks.gap_p50_ns",
    "blocks.gap_p90_ns",
    "blocks.gap_p99_ns",
    "blocks.gap_max_ns",
    "blocks.end_spread_mean_ns",
    "blocks.end_spread_p50_ns",
    "blocks.end_spread_p90_ns",
    "blocks.end_spread_p99_ns",
    "blocks.end_spread_max_ns",
    "blocks.lost_to_gaps_warps_per_sm",
    "blocks.lost_to_end_spread_warps_per_sm",
    "blocks.duration_relative_spread",
    "stalls",
    "stalls.latency_cycles_per_issue",
    "stalls.bandwidth_cycles_per_issue",
    "stalls.other_cycles_per_issue",
    "stalls.total_cycles_per_issue",
    "stalls.by_reason",
    "stalls.source",
    "classification",
    "classification.mode",
    "classification.limiter",
    "classification.flags",
    "classification.evidence",
    "classification.advice",
    "classification.needed_occupancy_warps_per_sm",
    "classification.reason",
    "classification.utilization",
    "sweep",
    "sweep.latency_ns",
    "sweep.throughput_bound_warps_per_ns_per_sm",
    "sweep.needed_occupancy_warps_per_sm",
    "sweep.knee_gap_fraction",
    "sweep.residual_rms",
    "sweep.points",
]


def paths(value: dict, prefix: str = "") -> set[str]:
    found = set()
    for key, child in value.items():
        path = prefix + key
        found.add(path)
        if isinstance(child, dict) and path not in OPAQUE:
            found |= paths(child, path + ".")
    return found


def documented() -> set[str]:
    return set(re.findall(r"^\| `([a-z_.0-9]+)` \|", DOC.read_text(), re.M))


def test_v2_keeps_every_v1_field_and_documents_every_field(tmp_path, sample_trace) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite'}")
    for name in ("vector_add_08warps", "vector_add_16warps", "vector_add_32warps", "vector_add_64warps"):
        ingest(store, sample_trace(f"h100/{name}.csv.gz"))
    ingest(store, sample_trace("h100/samples.ncu-rep"))
    traced = store.launches().filter(store.launches()["format"] == "warp-trace")["id"].to_list()
    # A traced launch paired with counters and fitted in a sweep: every section is present.
    result = analyze_stored(store, traced[-1:]).to_dicts()[0]
    assert all(result[section] is not None for section in ("warps", "tail", "sweep", "counters_from"))
    emitted = paths(result)
    assert set(V1_FIELDS) <= emitted, sorted(set(V1_FIELDS) - emitted)
    assert emitted == documented(), (sorted(emitted - documented()), sorted(documented() - emitted))
    assert result["schema"] == "tracekit.analysis/2"
