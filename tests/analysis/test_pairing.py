"""The pairing rule on hand-made candidates (key, duration agreement, order, ambiguity), and on a real PyTorch
pass that the PyTorch profiler and Nsight Compute both recorded."""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from tracekit.analysis.pairing import DURATION_TOLERANCE, PairingCandidate, pair_launch
from tracekit.analysis.types import Pairing, PairingReason
from tracekit.api import analyze_stored
from tracekit.ingest import ingest
from tracekit.kernel_key import KernelKey, same_smem_bytes
from tracekit.present.rules.notes import pairing_evidence
from tracekit.store import Store

KEY = KernelKey("k<4>", (64, 1, 1), (256, 1, 1), 32, 0, 0, "NVIDIA H100 80GB HBM3", "9.0")
OTHER_INSTANTIATION = KernelKey("k<1>", (64, 1, 1), (256, 1, 1), 32, 0, 0, "NVIDIA H100 80GB HBM3", "9.0")


def evidence(pairing: Pairing) -> str:
    """The pairing in words, as every view says it (of launch 1 of the kernel k<4>)."""
    return pairing_evidence(pairing, 1, KEY.name)


def trace(launch_id: int, span: float, order: int = 0) -> PairingCandidate:
    return PairingCandidate(launch_id, KEY, False, span, import_id=1, order=order)


def profiled(launch_id: int, duration: float, order: int = 0, key: KernelKey = KEY) -> PairingCandidate:
    return PairingCandidate(launch_id, key, True, duration, import_id=2, order=order)


def test_pairs_with_the_one_profiled_launch_whose_duration_agrees() -> None:
    pairing = pair_launch(trace(1, 100_000), [profiled(10, 95_000), profiled(11, 460_000)], [trace(1, 100_000)])
    assert (pairing.status, pairing.counters_launch_id) == ("paired", 10)
    assert pairing.candidate_launch_ids == (10, 11)
    assert pairing.reason == PairingReason.DURATION and pairing.candidate_durations_ns == (95_000, 460_000)
    assert (pairing.duration_ns, pairing.counters_duration_ns, pairing.agreeing_count) == (100_000, 95_000, 1)
    assert evidence(pairing) == (
        "same kernel key, and the durations agree: 100,000 ns here vs 95,000 ns profiled (1.05x, within 3x)"
    )


def test_another_instantiation_or_a_disagreeing_duration_is_not_a_twin() -> None:
    alone = pair_launch(trace(1, 100_000), [profiled(10, 100_000, key=OTHER_INSTANTIATION)], [])
    assert (alone.status, alone.counters_launch_id, alone.candidate_launch_ids) == ("unpaired", None, ())
    assert alone.reason == PairingReason.NO_TWIN and evidence(alone).startswith("no profiled launch of k<4> with")
    far = pair_launch(trace(1, 100_000), [profiled(10, 100_000 * (DURATION_TOLERANCE + 1))], [])
    assert far.status == "unpaired" and far.reason == PairingReason.DURATION_MISMATCH
    assert evidence(far).startswith("1 profiled launch of the same kernel key (launch 10 (400,000 ns)), but none")
    assert "another input or workload" in evidence(far)


def test_order_within_the_run_decides_between_repeated_launches_of_one_key() -> None:
    traces = [trace(1, 100_000, order=0), trace(2, 150_000, order=1)]
    twins = [profiled(10, 97_000, order=0), profiled(11, 140_000, order=1)]
    assert pair_launch(traces[0], twins, traces).counters_launch_id == 10
    second = pair_launch(traces[1], twins, traces)
    assert second.counters_launch_id == 11 and (second.order_position, second.order_count) == (2, 2)
    assert "launch 2 of 2 of it in both files" in evidence(second)


def test_agreeing_candidates_that_differ_from_one_another_are_ambiguous() -> None:
    pairing = pair_launch(trace(1, 100_000), [profiled(10, 60_000), profiled(11, 160_000)], [trace(1, 100_000)])
    assert (pairing.status, pairing.counters_launch_id) == ("unpaired", None)
    assert pairing.reason == PairingReason.AMBIGUOUS and evidence(pairing).startswith("ambiguous: 2 profiled")
    repeats = pair_launch(trace(1, 100_000), [profiled(10, 96_000), profiled(11, 104_000)], [trace(1, 100_000)])
    assert repeats.status == "paired" and "closest of 2 repeats" in evidence(repeats)


def test_one_run_stored_twice_lends_the_export_with_more_counters() -> None:
    """A report and its details page are one run: the trace borrows the fuller one, whichever was imported first."""
    details = PairingCandidate(10, KEY, True, 100_000, import_id=2, order=0, counter_count=120)
    report = PairingCandidate(20, KEY, True, 100_000, import_id=3, order=0, counter_count=2_238)
    alone = pair_launch(trace(1, 101_000), [details, report], [])
    assert alone.counters_launch_id == 20
    in_order = [trace(1, 101_000, order=0), trace(2, 99_000, order=1)]
    pages = [details, PairingCandidate(11, KEY, True, 99_000, import_id=2, order=1, counter_count=120)]
    reports = [report, PairingCandidate(21, KEY, True, 99_000, import_id=3, order=1, counter_count=2_238)]
    assert [pair_launch(t, pages + reports, in_order).counters_launch_id for t in in_order] == [20, 21]


# ---- a real PyTorch pass recorded by both tools (sample_traces/pairing, H100) ---------------------------------

PAIRING = "pairing/h100"


@pytest.mark.parametrize("page", ["raw", "details"])
def test_every_kineto_launch_of_a_pytorch_pass_pairs_with_its_nsight_compute_result(
    sample_trace, tmp_path, page
) -> None:
    """106 launches (CUB scans, sorts and selects, lambda-named ATen kernels, ...) timed by the PyTorch profiler
    and profiled by ncu in the same order: each Kineto launch takes the counters of the ncu result at its place,
    though the two tools spell many of the names differently (and the details page rounds shared memory)."""
    trace = sample_trace(f"{PAIRING}/pairing.pt.trace.json.gz")
    report = sample_trace(f"{PAIRING}/pairing.{page}.csv.gz")
    with gzip.open(trace, "rt", encoding="utf-8") as handle:
        kernels = [e for e in json.load(handle)["traceEvents"] if e.get("cat") == "kernel"]
    with gzip.open(report, "rt", encoding="utf-8") as handle:
        rows = list({row["ID"]: row for row in csv.DictReader(handle) if (row.get("ID") or "").isdigit()}.values())
    assert len(kernels) == len(rows) == 106  # independent counts: the trace's events, the raw page's rows
    spelled_apart = sum(k["name"] != r["Kernel Name"] for k, r in zip(kernels, rows, strict=True))
    assert spelled_apart > 50  # CUPTI's libstdc++ and ncu's EDG demangler
    store = Store.open(f"sqlite:///{tmp_path / 'pairing.sqlite'}")
    traced = store.launches(import_id=ingest(store, trace)[0].import_id)
    profiled = store.launches(import_id=ingest(store, report)[0].import_id)
    results = {r["launch_id"]: r for r in analyze_stored(store, traced).to_dicts()}
    unpaired = [
        (row["kernel_name"][:120], results[row["id"]]["pairing"]["evidence"][:200])
        for row in traced.iter_rows(named=True)
        if results[row["id"]]["pairing"]["status"] != "paired"
    ]
    assert unpaired == []
    counters_from = [results[i]["counters_from"]["launch_id"] for i in traced["id"].to_list()]
    assert counters_from == profiled["id"].to_list()  # each with the result at its own place in the pass
    for name in ("DeviceScanKernel", "elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast"):
        assert any(name in n for n in traced["kernel_name"].to_list()), name


def test_shared_memory_agrees_within_the_details_pages_rounding() -> None:
    """ncu's details page writes 7,696 bytes as 7.70 Kbyte (7,700): one allocation; 32 bytes apart are two."""
    assert same_smem_bytes(7696, 7700) and same_smem_bytes(45056, 45060) and same_smem_bytes(None, 12)
    assert same_smem_bytes(2064, 2050, 16)  # Kineto's static + dynamic against ncu's rounded dynamic and static
    assert not same_smem_bytes(2064, 2048, 48) and not same_smem_bytes(2080, 2048, 16)
    assert not same_smem_bytes(7696, 7702)  # neither a multiple of 10: both exact, and they differ
