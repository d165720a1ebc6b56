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


def paths(value: dict, prefix: str = "", opaque: set[str] = OPAQUE) -> set[str]:
    found = set()
    for key, child in value.items():
        path = prefix + key
        found.add(path)
        if isinstance(child, dict) and path not in opaque:
            found |= paths(child, path + ".", opaque)
    return found


# The prediction's one shape (`tracekit.prediction/1`) is documented after the analysis's, from this anchor on.
PREDICTION_ANCHOR = '<a id="prediction"></a>'
# Prediction fields whose sub-fields its table names in the row's text (the configurations, the knobs, Nsight's).
PREDICTION_OPAQUE = {"change", "current", "new", "nsight"}


def documented() -> set[str]:
    analysis = DOC.read_text().split(PREDICTION_ANCHOR, 1)[0]
    return set(re.findall(r"^\| `([a-z_.0-9]+)` \|", analysis, re.M))


def prediction_documented() -> set[str]:
    """The fields the prediction's table names (a row may name several: `predicted.low`, `predicted.high`)."""
    section = DOC.read_text().split(PREDICTION_ANCHOR, 1)[1]
    cells = re.findall(r"^\| ([^|]+) \|", section, re.M)
    return {name for cell in cells for name in re.findall(r"`([a-z_.0-9]+)`", cell)}


def test_v2_keeps_every_v1_field_and_documents_every_field(tmp_path, sample_trace) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite'}")
    for name in ("vector_add_08warps", "vector_add_16warps", "vector_add_32warps", "vector_add_64warps"):
        ingest(store, sample_trace(f"h100/{name}.csv.gz"))
    ingest(store, sample_trace("h100/samples.ncu-rep.gz"))
    traced = store.launches().filter(store.launches()["format"] == "warp-trace")["id"].to_list()
    # A traced launch paired with counters and fitted in a sweep: every section is present.
    result = analyze_stored(store, traced[-1:]).to_dicts()[0]
    assert all(result[section] is not None for section in ("warps", "tail", "sweep", "counters_from"))
    emitted = paths(result)
    assert set(V1_FIELDS) <= emitted, sorted(set(V1_FIELDS) - emitted)
    assert emitted == documented(), (sorted(emitted - documented()), sorted(documented() - emitted))
    assert result["schema"] == "tracekit.analysis/2"


def test_the_prediction_table_names_exactly_the_fields_a_prediction_emits(tmp_path, sample_trace) -> None:
    """Issue 27: one JSON shape for a prediction, documented once. A launch of the ncu-rep, predicted at another
    block size through `predict --json`'s function, and the same launch's `what_to_try` entries: every field each
    emits is in the table, and the table names no other."""
    from tracekit.api import predict_stored
    from tracekit.present.prediction import prediction_dict

    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite'}")
    ingest(store, sample_trace("h100/samples.ncu-rep.gz"))
    results = analyze_stored(store, store.launches()["id"].to_list())
    result = next(r for r in results if r.classification.utilization)
    block = 256 if result.kernel.block and result.kernel.block[0] != 256 else 512
    predicted = prediction_dict(predict_stored(store, result, block=block))
    assert predicted["schema"] == "tracekit.prediction/1" and predicted["knob"] == "block"
    assert paths(predicted, opaque=PREDICTION_OPAQUE) == prediction_documented()
    entries = [e for r in analyze_stored(store, [result.launch_id]).to_dicts() for e in r["what_to_try"] or []]
    for entry in entries:
        assert paths(entry, opaque=PREDICTION_OPAQUE) <= prediction_documented()
