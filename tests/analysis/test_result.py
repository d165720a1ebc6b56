"""The per-launch analysis object over the real H100 samples: its fields, the trace/counter pairing, the sweep,
and the verdicts the latency-hiding literature predicts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from tracekit.analysis.result import SCHEMA, analyze_launches, launch_signature
from tracekit.explain import analyze_stored
from tracekit.ingest import ingest
from tracekit.store import Store

VECTOR_ADD = ["vector_add_08warps", "vector_add_16warps", "vector_add_32warps", "vector_add_64warps"]


@pytest.fixture(scope="module")
def samples_store(tmp_path_factory) -> Store:
    return Store.open(f"sqlite:///{tmp_path_factory.mktemp('result') / 'samples.sqlite'}")


def analyze_files(store: Store, paths: list[Path]) -> list[dict]:
    import_ids = [ingest(store, path)[0].import_id for path in paths]
    launches = pl.concat([store.launches(import_id=i) for i in import_ids], how="diagonal_relaxed")
    return analyze_stored(store, launches)


def trace_header(path: Path) -> dict[str, str]:
    with gzip.open(path, "rt") as handle:
        lines = [line[2:].strip() for line in handle if line.startswith("# ")]
    return dict(line.split(": ", 1) for line in lines if ": " in line)


def test_vector_add_sweep_and_verdicts(samples_store: Store, sample_trace) -> None:
    traces = [sample_trace(f"h100/{name}.csv.gz") for name in VECTOR_ADD]
    report = sample_trace("h100/samples.ncu-rep")
    results = analyze_files(samples_store, [*traces, report])
    traced = [r for r in results if r["warps"] is not None]
    assert [r["kernel"]["name"] for r in traced] == ["vector_add"] * 4
    for result, path in zip(traced, traces, strict=True):
        header = trace_header(path)
        assert result["schema"] == SCHEMA
        assert result["kernel"]["dynamic_shared_mem_per_block_bytes"] == int(header["dynamic_smem_bytes"])
        assert result["duration_ns"] == float(header["launch_duration_ns"])
        # Paired with the profiled launch of the same configuration in the .ncu-rep: its counters are used.
        assert result["counters_from"]["kernel_name"].startswith("vector_add(")
        assert result["occupancy"]["achieved_pct"] is not None
        # Little's law over the whole launch is an identity of the trace: it must close.
        assert abs(result["littles_law"]["whole_launch"]["relative_error"]) < 1e-3
    theoretical = [r["occupancy"]["theoretical_warps_per_sm"] for r in traced]
    assert theoretical == [8, 16, 32, 64]
    # The trace's own mean occupancy sits below the theoretical limit, and rises with it.
    measured = [r["warps"]["mean_occupancy_warps_per_sm"] for r in traced]
    assert all(m <= t for m, t in zip(measured, theoretical, strict=True))
    assert measured == sorted(measured)
    # Throughput grows with occupancy, then saturates: a sweep fit with its knee between the low and full runs.
    sweep = traced[0]["sweep"]
    assert sweep is not None and len(sweep["points"]) == 4
    assert 8 < sweep["needed_occupancy_warps_per_sm"] < 64
    # Volkov: latency-bound with too few warps, throughput-bound (memory) at full occupancy.
    assert traced[0]["classification"]["mode"] == "latency-bound"
    assert traced[-1]["classification"]["mode"] == "throughput-bound"
    assert traced[-1]["classification"]["limiter"] == "dram"
    assert all(r["classification"]["evidence"] for r in traced)


def test_imbalanced_blocks_flagged_for_tail(samples_store: Store, sample_trace) -> None:
    names = ["imbalanced_blocks", "memcpy_1load"]
    results = analyze_files(samples_store, [sample_trace(f"h100/{name}.csv.gz") for name in names])
    imbalanced, balanced = results
    assert "tail-effect" in imbalanced["classification"]["flags"]
    assert imbalanced["tail"]["tail_fraction"] > 2 * balanced["tail"]["tail_fraction"]


def test_random_permutation_bound_by_memory(samples_store: Store, sample_trace) -> None:
    results = analyze_files(samples_store, [sample_trace("h100/samples.ncu-rep")])
    permutes = [r for r in results if r["kernel"]["name"].startswith("permute(")]
    assert len(permutes) == 2
    identity, random = sorted(permutes, key=lambda r: r["duration_ns"])
    assert random["classification"]["mode"] == "throughput-bound"
    assert random["classification"]["limiter"] in {"dram", "l2", "l1/shared"}
    assert random["duration_ns"] > 3 * identity["duration_ns"]


def test_fields_a_source_cannot_give_are_null(samples_store: Store, sample_trace) -> None:
    [result] = [r for r in analyze_files(samples_store, [sample_trace("h100/samples.sqlite")])[:1]]
    assert result["kernel"]["device"]["name"] == "NVIDIA H100 80GB HBM3"
    assert result["warps"] is None and result["littles_law"] is None and result["tail"] is None
    assert result["occupancy"]["achieved_pct"] is None
    json.dumps(result, allow_nan=False)  # the object is valid JSON as it stands


def test_launch_signature_matches_trace_and_report_names() -> None:
    trace = {
        "kernel_name": "vector_add",
        "grid_x": 2,
        "grid_y": 1,
        "grid_z": 1,
        "block_x": 256,
        "block_y": 1,
        "block_z": 1,
        "dynamic_smem_bytes": 0,
    }
    report = {**trace, "kernel_name": "void vector_add(const float *, float *, int)", "dynamic_smem_bytes": None}
    assert launch_signature(trace) == launch_signature(report)
    assert launch_signature(trace) != launch_signature({**trace, "grid_x": 3})
    assert analyze_launches([]) == []


def test_nsys_timings_borrow_the_profiled_counters(samples_store: Store, sample_trace) -> None:
    results = analyze_files(samples_store, [sample_trace("h100/samples.sqlite"), sample_trace("h100/samples.ncu-rep")])
    timed = [r for r in results if r["source"]["format"] == "nsys-sqlite"]
    profiled = {r["launch_id"]: r for r in results if r["source"]["format"] == "ncu-rep"}
    # Every sample kernel but abs_values (left out of the .ncu-rep) has a profiled twin of the same configuration.
    paired = [r for r in timed if r["counters_from"] is not None]
    assert {r["kernel"]["name"].split("(")[0] for r in timed if r["counters_from"] is None} == {"abs_values"}
    for result in paired:
        twin = profiled[result["counters_from"]["launch_id"]]
        assert launch_signature_of(result) == launch_signature_of(twin)
        assert result["occupancy"]["achieved_pct"] == twin["occupancy"]["achieved_pct"]
        assert result["classification"]["mode"] != "undetermined"
        assert result["duration_ns"] != twin["duration_ns"]  # the timing stays the launch's own


def launch_signature_of(result: dict) -> tuple:
    kernel = result["kernel"]
    return (
        kernel["name"].split("(")[0],
        *kernel["grid"],
        *kernel["block"],
        kernel["dynamic_shared_mem_per_block_bytes"] or 0,
    )
