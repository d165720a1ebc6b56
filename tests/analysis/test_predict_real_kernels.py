"""The predictor on the real-kernel tuning set (sample_traces/real_kernels: Liger-Kernel's Triton kernels and Triton's
tutorial kernels at the num_warps and BLOCK_SIZE their users try, CUDA-event timings recorded before tracekit ran on
them): each
configuration predicted from its kernel's first with what the compiler made of the other, as
`benchmarks/bench_predict.py` reports it. Values, not snapshots: the measured speed-ups are the labels."""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


@cache
def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_predict", REPO / "benchmarks" / "bench_predict.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_predict"] = module
    spec.loader.exec_module(module)
    return module


@cache
def _cases() -> tuple:
    return tuple(_bench().real_kernel_cases())


def _case(kernel: str, config: str):  # noqa: ANN202
    return next(c for c in _cases() if c.kernel == kernel and c.config == config)


def test_the_set_is_what_its_readme_says() -> None:
    # Liger: 9 kernels, 8 of 6 num_warps and KL divergence at 7 (BLOCK_SIZE, num_warps): 47 configurations, 46
    # predicted. Triton's tutorials: vector add at 8, fused softmax at 6, layer norm at 7: 21, 18 predicted.
    # TorchInductor's kernels: gather, polynomial and transpose at 8 each: 24, 21 predicted. CUB's block reduce, scan
    # and radix sort at 6 each: 18, 10 predicted (the radix sort's 5 changes refused: its blocks' collective work).
    cases = _cases()
    assert len(cases) == 46 + 18 + 21 + 10
    assert len({c.kernel for c in cases}) == 9 + 3 + 3 + 2


def test_targets_on_the_real_kernel_set() -> None:
    bench = _bench()
    every = bench.figures(list(_cases()))
    assert every.within_15 >= 0.8
    assert every.median_error <= every.trivial_median_error
    assert every.coverage >= 0.8
    assert every.direction_errors_missing_one == 0


def test_configurations_that_change_the_time() -> None:
    # The configurations measured outside 0.9-1.1x (34: spilling one-warp Liger launches, 1.5-2.4x faster with more
    # warps; rows split over 16-32 warps; the tutorial layer norm's rows outgrowing L1; Inductor's polynomial at 128
    # elements a block; CUB's reduce and scan from 1,024 threads x 1 item to fewer threads with more items, 1.9-3.4x):
    # "no change" is wrong on nearly every one; the interval holds the measured speed-up on >= 80%, no direction
    # error, and >= 80% are within 15% (28 of 34; the misses: the 512- and 1,024-thread blocks of row reductions,
    # whose barrier cost the model widens for but does not predict).
    bench = _bench()
    moved = bench.figures(bench.changed(list(_cases())))
    assert moved.count == 34
    assert moved.trivial_within_15 < 0.1
    assert moved.coverage >= 0.8
    assert moved.within_15 >= 0.8
    assert moved.direction_errors == 0


@pytest.mark.parametrize("kernel", ["cub_block_reduce", "cub_block_scan"])
def test_cub_tiles_of_fewer_threads_with_more_items_reach_the_dram_ceiling(kernel: str) -> None:
    # From CUB's examples' first configuration (1,024 threads x 1 item: one block of 32 warps an SM after the
    # reduction's barriers, DRAM at 29-40%) to 512 x 2 ... 32 x 32: each within 15% of the measured 1.9-3.4x, inside
    # its interval; from 256 x 4 on the gain stops at the DRAM ceiling.
    for config in ("t0512_i02", "t0256_i04", "t0128_i08", "t0064_i16", "t0032_i32"):
        case = _case(kernel, config)
        assert case.measured > 1.8 and case.error <= 0.15 and case.covered, (config, case.predicted, case.measured)


def test_cub_radix_sort_block_shapes_are_refused() -> None:
    # Shared memory binds the block radix sort (memory at 3%) and its instructions per item change with the block's
    # shape (847 M instructions at 1,024 x 1, 93 M at 32 x 32; measured 2.7-8.4x faster): no prediction, a refusal.
    assert not [c for c in _cases() if c.kernel == "cub_block_radix_sort"]


def test_a_row_read_three_times_that_outgrows_the_caches_reads_it_again_from_dram() -> None:
    # Triton's layer norm tutorial reads each 32 KB row three times (mean, variance, normalize); at its default
    # (BLOCK_SIZE 16384, 8 warps, 2 blocks an SM) L1 serves the re-reads. Blocks of 4 warps put 16 rows on an SM:
    # they outgrow L1 and L2, DRAM reads triple (Nsight: 134 -> 402 MB) and the launch takes 1.85x as long; 8 rows
    # (BLOCK_SIZE 4096, 8 warps) outgrow L1, L2 keeps a third of the re-reads: 1.52x. The footprint step predicts
    # both within 15%; 4 rows an SM fit and nothing moves.
    for config in ("b01024_w04", "b02048_w04", "b04096_w08"):
        case = _case("triton_layer_norm", config)
        assert case.covered and case.measured < 0.7 and case.error <= 0.15, (config, case.predicted, case.measured)
        assert "cache-footprint" in case.unseen
    fits = _case("triton_layer_norm", "b08192_w08")
    assert fits.predicted == pytest.approx(1.0, abs=0.01) and fits.error <= 0.15


@pytest.mark.parametrize("config", ["w02", "w04", "w08", "w16"])
def test_fewer_elements_per_thread_at_the_dram_ceiling_keep_the_throughput(config: str) -> None:
    # RELU squared and SwiGLU from one warp per row (128 elements per thread, DRAM at its ceiling with a queue) to
    # 2-16 warps (ILP 1/2-1/16): measured 1.00-1.10x. Little's law at the unloaded latency: the launch has far more
    # in flight than the ceiling needs, so the throughput holds (issue 26: such changes were predicted 2-8x slower).
    for kernel in ("liger_relu_squared", "liger_swiglu"):
        case = _case(kernel, config)
        assert case.error <= 0.15, (kernel, config, case.predicted, case.measured)
        assert case.predicted >= 0.9


def test_a_spilling_launch_gains_what_the_spill_traffic_cost() -> None:
    # Layer norm over 8,192 fp16 with one warp per row spills (255 registers, local-memory traffic); two warps per row
    # halve the elements per thread and the spills go: measured 1.99x, predicted from the launch's own counters (its
    # global accesses need 45% of its DRAM bytes) within 15%, and the interval says the spills may stay.
    case = _case("liger_layer_norm", "w02")
    assert case.error <= 0.15
    assert case.low < 1.0 < case.predicted
    assert _case("liger_geglu", "w04").error <= 0.15


def test_the_layer_norm_from_four_warps_is_covered() -> None:
    # Issue 26's miss: layer norm num_warps 4 -> 8 and 16. On this set they measure 1.01x and 0.93x (the held-out
    # 1.37x and 1.73x came with a launch whose four warps still spilled); whichever, the interval holds them and
    # says why (per-row parallelism, the L1 footprint).
    bench = _bench()
    from_four = [
        c for c in bench.real_kernel_cases(bases={"liger_layer_norm": "w04"}) if c.kernel == "liger_layer_norm"
    ]
    by_config = {c.config: c for c in from_four}
    for config in ("w08", "w16"):
        case = by_config[config]
        assert case.covered, (config, case.low, case.high, case.measured)
        assert {"per-row-parallelism", "cache-footprint"} <= set(case.unseen)
    # Back to one warp (4x the elements per thread at 167 registers): the spills that come are an unseen effect.
    assert by_config["w01"].covered and "register-spills" in by_config["w01"].unseen


# ---- the sweep set's misses of issue 26 (sample_traces/sweeps) ---------------------------------------------------


@cache
def _sweep() -> tuple[dict, dict]:
    import tempfile

    from tracekit.analysis.predict import inputs_from_result

    bench = _bench()
    with tempfile.TemporaryDirectory() as tmp:
        results, metrics = bench._load(Path(tmp))
    device = next(iter(results.values())).kernel.device
    ceilings = bench._ceilings(device, None, False)
    inputs = {n: inputs_from_result(r, metrics.get(n), sweep=[], ceilings=ceilings) for n, r in results.items()}
    return inputs, bench._timings()


@pytest.mark.parametrize("warps", [40, 48, 56, 64])
def test_a_three_point_sweep_extrapolates_to_the_ceiling(warps: int) -> None:
    # A copy fitted at 8, 16 and 32 warps per SM over-predicted 40-64 warps by 17-35%; beyond the measured range the
    # fit's growth is held to what the 32-warp launch's counters allow. Within 5% now, inside the interval.
    from tracekit.analysis.predict import Change, SweepSample, predict, with_sweep

    inputs, timings = _sweep()
    ns = {name: float(row["median_ns"]) for name, row in timings.items()}
    samples = [
        SweepSample(inputs[f"sweep_copy.occ_w{w:02d}"].achieved_warps_per_sm, ns[f"sweep_copy.occ_w{w:02d}"])
        for w in (8, 16, 32)
    ]
    target = f"sweep_copy.occ_w{warps:02d}"
    change = Change(dynamic_shared_mem_bytes=int(timings[target]["dyn_smem_bytes"]))
    p = predict(with_sweep(inputs["sweep_copy.occ_w32"], samples), change)
    measured = ns["sweep_copy.occ_w32"] / ns[target]
    assert p.predicted.speedup == pytest.approx(measured, rel=0.05)
    assert p.predicted.low <= measured <= p.predicted.high


def test_short_blocks_bound_by_the_launch_rate_do_not_carry_their_residency() -> None:
    # A copy of 64-thread blocks (524,288 of them) is bound by the block launch rate, and its low achieved occupancy
    # comes from it; 256-thread blocks start a quarter as many: measured 2.23x (issue 26: predicted 0.49x for the
    # same case on another copy, measured 2.84x).
    from tracekit.analysis.predict import Change, predict

    inputs, timings = _sweep()
    base = inputs["sweep_copy.block_0064"]
    p = predict(base, Change(threads_per_block=256))
    measured = float(timings["sweep_copy.block_0064"]["median_ns"]) / float(
        timings["sweep_copy.block_0256"]["median_ns"]
    )
    assert p.predicted.speedup == pytest.approx(measured, rel=0.15)
    assert p.predicted.low <= measured <= p.predicted.high
    assert any(
        f.template == "predict.achieved"
        and f.values
        and "arrival_scale" in {v.name for v in f.values if v.value is not None}
        for f in p.findings
    )


def test_a_configuration_compiled_at_the_register_cap_spills() -> None:
    # From the tuned default (8 warps a row) back to one warp: 8x the elements per thread. The compiler put PolyNorm,
    # GEGLU and LayerNorm (from 4 warps) at the 255-register cap, where each spills (local-memory traffic in its
    # counters); the point moves to the geometric middle of up to 8x (4x) slower, after the ceiling's cap. SwiGLU at
    # one warp fits in 101 registers: no spill, no move (measured 0.91x).
    bases = {"liger_poly_norm": "w08", "liger_geglu": "w08", "liger_layer_norm": "w04", "liger_swiglu": "w08"}
    cases = {(c.kernel, c.config): c for c in _bench().real_kernel_cases(bases=bases)}
    poly, geglu = cases[("liger_poly_norm", "w01")], cases[("liger_geglu", "w01")]
    layer_norm, swiglu = cases[("liger_layer_norm", "w01")], cases[("liger_swiglu", "w01")]
    for case in (poly, geglu, layer_norm):
        assert case.change.registers_per_thread == 255 and "register-spills" in case.unseen
        assert case.covered and case.predicted < 0.6 and case.measured < 0.6, (case.config, case.predicted)
    assert poly.error <= 0.25  # 0.33x for a measured 0.43x (was 1.13x)
    assert swiglu.predicted > 0.95 and swiglu.error <= 0.15


@pytest.mark.parametrize("config", ["b00128_w04", "b00256_w04", "b01024_w16"])
def test_a_gather_queued_at_the_lsu_keeps_its_throughput_with_fewer_elements_per_thread(config: str) -> None:
    # Inductor's random gather (XBLOCK 1024, 4 warps) runs at 92% of the scattered-sector ceiling; its warps wait
    # for memory 29% of their time on their loads' data (long scoreboard) and as long again for room in the queue of
    # load instructions (lg_throttle): both are memory's queue, so the launch holds 49x the bytes in flight its
    # ceiling needs, and 1/8 of the elements per thread keeps the throughput (measured 1.00-1.01x). With only the
    # long-scoreboard stalls counted as memory, the rest read as work per element: predicted 0.50x-0.71x.
    case = _case("inductor_gather", config)
    assert case.error <= 0.05 and case.covered, (case.predicted, case.measured)
