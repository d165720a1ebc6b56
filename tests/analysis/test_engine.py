"""The per-launch analysis object over the real H100 samples: its fields, the trace/counter pairing, the sweep,
and the verdicts the latency-hiding literature predicts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from tracekit.analysis.types import SCHEMA, LaunchAnalysis, from_json_dict, to_json_dict
from tracekit.api import analyze_stored
from tracekit.ingest import ingest
from tracekit.kernel_key import kernel_key, normalize_kernel_name
from tracekit.store import Store

VECTOR_ADD = ["vector_add_08warps", "vector_add_16warps", "vector_add_32warps", "vector_add_64warps"]


@pytest.fixture(scope="module")
def samples_store(tmp_path_factory) -> Store:
    return Store.open(f"sqlite:///{tmp_path_factory.mktemp('result') / 'samples.sqlite'}")


def analyze_files(store: Store, paths: list[Path]) -> list[dict]:
    import_ids = [ingest(store, path)[0].import_id for path in paths]
    launches = pl.concat([store.launches(import_id=i) for i in import_ids], how="diagonal_relaxed")
    return analyze_stored(store, launches).to_dicts()


def trace_header(path: Path) -> dict[str, str]:
    with gzip.open(path, "rt") as handle:
        lines = [line[2:].strip() for line in handle if line.startswith("# ")]
    return dict(line.split(": ", 1) for line in lines if ": " in line)


def test_vector_add_sweep_and_verdicts(samples_store: Store, sample_trace) -> None:
    traces = [sample_trace(f"h100/{name}.csv.gz") for name in VECTOR_ADD]
    report = sample_trace("h100/samples.ncu-rep.gz")
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
    # At 32 warps per SM the sweep measured over 10% more throughput at 64: warps, not DRAM, still limit it, and
    # the verdict must not call it memory-bound next to that evidence.
    levels = sorted((p["occupancy_warps_per_sm"], p["throughput"]) for p in sweep["points"])
    assert levels[-1][1] > 1.1 * levels[-2][1]
    assert traced[2]["classification"]["mode"] == "latency-bound"
    assert not any(
        "memory-bound rather than short of warps" in line for line in traced[2]["classification"]["evidence"]
    )
    assert all(r["classification"]["evidence"] for r in traced)


def test_imbalanced_blocks_flagged_for_tail(samples_store: Store, sample_trace) -> None:
    names = ["imbalanced_blocks", "memcpy_1load"]
    results = analyze_files(samples_store, [sample_trace(f"h100/{name}.csv.gz") for name in names])
    imbalanced, balanced = results
    assert "tail-effect" in imbalanced["classification"]["flags"]
    assert imbalanced["tail"]["tail_fraction"] > 2 * balanced["tail"]["tail_fraction"]


def test_random_permutation_bound_by_memory(samples_store: Store, sample_trace) -> None:
    results = analyze_files(samples_store, [sample_trace("h100/samples.ncu-rep.gz")])
    permutes = [r for r in results if r["kernel"]["name"].startswith("permute(")]
    assert len(permutes) == 2
    identity, random = sorted(permutes, key=lambda r: r["duration_ns"])
    assert random["classification"]["mode"] == "throughput-bound"
    # Random indices: L2 misses most reads (17% hit rate in the H100 report), so DRAM serves the traffic
    assert random["classification"]["limiter"] == "dram"
    assert random["duration_ns"] > 3 * identity["duration_ns"]


def test_fields_a_source_cannot_give_are_null(tmp_path, sample_trace) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'nsys.sqlite'}")  # no profiled launch to borrow counters from
    [result] = [r for r in analyze_files(store, [sample_trace("h100/samples.sqlite")])[:1]]
    assert result["kernel"]["device"]["name"] == "NVIDIA H100 80GB HBM3"
    assert result["warps"] is None and result["littles_law"] is None and result["tail"] is None
    assert result["occupancy"]["achieved_pct"] is None
    json.dumps(result, allow_nan=False)  # the object is valid JSON as it stands


def test_kernel_key_joins_spellings_of_one_kernel_and_keeps_instantiations_apart() -> None:
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
    assert kernel_key(trace).matches(kernel_key(report))
    assert not kernel_key(trace).matches(kernel_key({**trace, "grid_x": 3}))
    # Nsight spells template arguments with casts; a trace names the instantiation plainly.
    assert normalize_kernel_name("void fma_chain<(int)4>(float *, int)") == "fma_chain<4>"
    assert normalize_kernel_name("fma_chain<4>") == "fma_chain<4>"
    assert normalize_kernel_name("void fma_chain<(int)1>(float *, int)") == "fma_chain<1>"
    assert normalize_kernel_name("ns::k<(unsigned int)8u, true>(float*)") == "ns::k<8,1>"
    four = {**trace, "kernel_name": "void fma_chain<(int)4>(float *, int)"}
    one = {**trace, "kernel_name": "void fma_chain<(int)1>(float *, int)"}
    assert kernel_key({**trace, "kernel_name": "fma_chain<4>"}).matches(kernel_key(four))
    assert not kernel_key({**trace, "kernel_name": "fma_chain<4>"}).matches(kernel_key(one))


def test_nsys_timings_borrow_the_profiled_counters(samples_store: Store, sample_trace) -> None:
    results = analyze_files(
        samples_store, [sample_trace("h100/samples.sqlite"), sample_trace("h100/samples.ncu-rep.gz")]
    )
    timed = [r for r in results if r["source"]["format"] == "nsys-sqlite"]
    profiled = {r["launch_id"]: r for r in results if r["source"]["format"] == "ncu-rep"}
    # Every sample kernel but abs_values (left out of the .ncu-rep) has a profiled twin of the same configuration.
    paired = [r for r in timed if r["counters_from"] is not None]
    assert {r["kernel"]["name"].split("(")[0] for r in timed if r["counters_from"] is None} == {"abs_values"}
    for result in paired:
        twin = profiled[result["counters_from"]["launch_id"]]
        assert result["kernel"]["key"] == twin["kernel"]["key"]
        assert (result["kernel"]["grid"], result["kernel"]["block"]) == (
            twin["kernel"]["grid"],
            twin["kernel"]["block"],
        )
        assert result["pairing"]["status"] == "paired" and "durations agree" in result["pairing"]["evidence"]
        assert result["occupancy"]["achieved_pct"] == twin["occupancy"]["achieved_pct"]
        assert result["classification"]["mode"] != "undetermined"
        assert result["duration_ns"] != twin["duration_ns"]  # the timing stays the launch's own


def test_permutation_traces_pair_with_their_own_counters(samples_store: Store, sample_trace) -> None:
    """identity and random permutation share name, grid and block; only the duration tells their runs apart."""
    results = analyze_files(
        samples_store,
        [
            sample_trace("h100/permute_identity.csv.gz"),
            sample_trace("h100/permute_random.csv.gz"),
            sample_trace("h100/samples.ncu-rep.gz"),
        ],
    )
    identity, random = results[0], results[1]
    profiled = {r["launch_id"]: r for r in results if r["source"]["format"] == "ncu-rep"}
    twin_identity = profiled[identity["counters_from"]["launch_id"]]
    twin_random = profiled[random["counters_from"]["launch_id"]]
    assert twin_identity["launch_id"] != twin_random["launch_id"]
    # Each trace's span agrees with its own twin's duration (within the rule's tolerance), not the other's.
    assert 0.5 < identity["warps"]["span_ns"] / twin_identity["duration_ns"] < 2
    assert 0.5 < random["warps"]["span_ns"] / twin_random["duration_ns"] < 2
    assert twin_random["duration_ns"] > 3 * twin_identity["duration_ns"]
    assert random["classification"]["mode"] == twin_random["classification"]["mode"]
    assert random["classification"]["limiter"] == twin_random["classification"]["limiter"]


def test_a_trace_without_a_profiled_twin_is_unpaired_not_given_a_lookalike(tmp_path, sample_trace) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite'}")
    # abs_values was not profiled; the other kernels of the report have the same grid and block.
    results = analyze_files(store, [sample_trace("h100/abs_positive.csv.gz"), sample_trace("h100/samples.ncu-rep.gz")])
    traced = results[0]
    assert traced["counters_from"] is None
    assert traced["pairing"]["status"] == "unpaired"
    assert "no profiled launch of abs_values" in traced["pairing"]["evidence"]
    assert traced["occupancy"]["achieved_pct"] is None


def test_one_verdict_alone_or_within_the_file_and_the_override(tmp_path, sample_trace) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite'}")
    for name in ("h100/permute_identity.csv.gz", "h100/permute_random.csv.gz", "h100/samples.ncu-rep.gz"):
        ingest(store, sample_trace(name))
    everything = analyze_stored(store, store.launches()).to_dicts()
    by_id = {r["launch_id"]: r for r in everything}
    for result in everything:
        alone = analyze_stored(store, [result["launch_id"]], use_cache=False).to_dicts()[0]
        assert alone == result
    # The user's override wins over the rule, and says so.
    random_trace = store.launches(import_id=2)["id"][0]
    identity_profiled = by_id[everything[0]["counters_from"]["launch_id"]]["launch_id"]
    forced = analyze_stored(store, [random_trace], pairs={random_trace: identity_profiled}).to_dicts()[0]
    assert forced["pairing"]["status"] == "override"
    assert forced["counters_from"]["launch_id"] == identity_profiled


def test_results_round_trip_through_json_and_the_store_cache(tmp_path, sample_trace) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite'}")
    ingest(store, sample_trace("h100/vector_add_64warps.csv.gz"))
    ingest(store, sample_trace("h100/samples.ncu-rep.gz"))
    fresh = analyze_stored(store, store.launches(), use_cache=False)
    cached_first = analyze_stored(store, store.launches())  # computes and stores
    cached = analyze_stored(store, store.launches())  # reads the store
    assert cached.to_dicts() == fresh.to_dicts() == cached_first.to_dicts()
    for result in fresh:
        back = from_json_dict(LaunchAnalysis, json.loads(json.dumps(to_json_dict(result))))
        assert to_json_dict(back) == to_json_dict(result)
        assert back.kernel == result.kernel and back.occupancy == result.occupancy and back.tail == result.tail
    frame = fresh.to_polars()
    assert frame.height == len(fresh) and frame["mode"].to_list() == [r.classification.mode for r in fresh]


def test_an_incomplete_trace_says_so_first_and_is_flagged(tmp_path, sample_trace) -> None:
    """A trace missing warps (imported with --allow-incomplete) is analyzed, but the result says it is incomplete
    before anything else; the complete trace of the same run is not flagged."""
    with gzip.open(sample_trace("h100/vector_add_64warps.csv.gz"), "rt") as handle:
        lines = handle.read().splitlines()
    data_start = next(i for i, line in enumerate(lines) if not line.startswith("#")) + 1
    truncated = tmp_path / "truncated.csv"
    truncated.write_text("\n".join(lines[: data_start + 100]) + "\n")  # the header and the first 100 warps
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite'}")
    ingest(store, truncated, allow_incomplete=True)
    ingest(store, sample_trace("h100/vector_add_64warps.csv.gz"))
    short, whole = analyze_stored(store, store.launches()).to_dicts()
    assert short["warps"]["count"] == 100
    assert short["source"]["incomplete"] and short["classification"]["flags"][0] == "incomplete-trace"
    assert short["classification"]["evidence"][0].startswith("The trace is incomplete (")
    assert whole["source"]["incomplete"] is None and "incomplete-trace" not in whole["classification"]["flags"]
